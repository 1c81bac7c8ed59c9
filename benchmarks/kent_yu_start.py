"""Algorithm 1 of Kent & Yu from the paper's random selector vs Andrews' centroid start.

Runs the study's MI methods on paper-variant data with one fixed (C, γ) (no grid search) for
each start and prints the mean test AUROC and the mean number of alternations per scenario.

Usage: python benchmarks/kent_yu_start.py [--replicates 3] [--test-bags 200] [--C 10] [--jobs 2]
"""
from __future__ import annotations

import argparse


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=3)
    ap.add_argument("--test-bags", type=int, default=200)
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="kent-yu-start")
    ap.add_argument("--methods", nargs="*", default=["mismm-heuristic", "misvm-univ1", "misvm-univ1-univ2",
                                                      "misvm-univ1-cor"])
    a = ap.parse_args(argv)
    import os

    import pandas as pd

    from milopt.study import kent_yu_study

    frames = []
    for init in ("random", "centroid"):
        out = os.path.join(a.out, init)
        res = kent_yu_study(out_dir=out, replicates=a.replicates, test_bags=a.test_bags, folds=2, Cs=(a.C,),
                            gamma_factors=(1.0,), methods=tuple(a.methods), init=init, misvm_init=init,
                            n_jobs=a.jobs, verbose=False)
        df = pd.read_csv(res["results_csv"])
        df["init"] = init
        frames.append(df)
    df = pd.concat(frames)
    auc = df.pivot_table(index=["method", "init"], columns="scenario", values="test_auc", aggfunc="mean")
    alt = df.pivot_table(index=["method", "init"], columns="scenario", values="alternations", aggfunc="mean")
    print(f"test AUROC (mean over {a.replicates} data sets of 50 x 3 x 50, C = {a.C:g}, gamma = 1/p), per scenario")
    print(auc.round(3).to_string())
    print("\nAlgorithm 1 alternations (final fit), per scenario")
    print(alt.round(2).to_string())


if __name__ == "__main__":
    main()
