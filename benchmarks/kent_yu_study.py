"""Run the Kent & Yu simulation study (reduced by default, the paper's with --full) and print its table.

Usage: python benchmarks/kent_yu_study.py [--out DIR] [--replicates N] [--full] [--quick] [--jobs J]
(same as ``milopt study kent-yu``).  --full: the paper's 12 settings (groups {20, 50} x
instances {3, 6} x samples {20, 50, 100}) x 100 replicates x 4 scenarios, 200 s MIQPs.
"""
from __future__ import annotations

import argparse
import json


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="kent-yu-study")
    ap.add_argument("--replicates", type=int, default=None, help="data sets per scenario and setting "
                    "(default 10; 100 with --full)")
    ap.add_argument("--full", action="store_true", help="the paper's grid of 12 settings and 100 replicates")
    ap.add_argument("--variant", default="paper", choices=["paper", "mildsvm"])
    ap.add_argument("--init", default="random", choices=["random", "centroid", "sil", "first"],
                    help="start of mi-smm (heuristic) (default: the paper's random selector)")
    ap.add_argument("--misvm-init", default="centroid", choices=["random", "centroid", "sil", "first"],
                    help="start of the mi-svm variants (default: Andrews' centroid start, as mildsvm::misvm)")
    ap.add_argument("--methods", nargs="*", default=None, help="subset of the seven methods")
    ap.add_argument("--test-bags", type=int, default=500)
    ap.add_argument("--miqp-time-limit", type=float, default=None, help="seconds per MIQP (default 20; 200 with --full)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    from milopt.study import kent_yu_study

    res = kent_yu_study(out_dir=args.out, replicates=args.replicates, test_bags=args.test_bags,
                        miqp_time_limit=args.miqp_time_limit, folds=args.folds, n_jobs=args.jobs, quick=args.quick,
                        full=args.full, variant=args.variant, init=args.init, misvm_init=args.misvm_init,
                        **({"methods": tuple(args.methods)} if args.methods else {}))
    import pandas as pd

    summ = pd.read_csv(res["summary_csv"])
    wide = summ[summ.scenario > 0].pivot(index="method", columns="scenario", values="auc_mean")
    sd = summ[summ.scenario > 0].pivot(index="method", columns="scenario", values="auc_sd")
    rank = summ[summ.scenario == 0].set_index("method")["rank_mean"]
    print("\nmean test AUROC (sd) per scenario; mean rank over all data sets (1 = best)")
    print(f"{'method':22s}" + "".join(f"{'scen ' + str(s):>16s}" for s in wide.columns) + f"{'rank':>7s}")
    for m in wide.sort_values(by=list(wide.columns)[0], ascending=False).index:
        print(f"{m:22s}" + "".join(f"{wide.loc[m, s]:9.3f} ({sd.loc[m, s]:.3f})" for s in wide.columns)
              + f"{rank.get(m, float('nan')):7.2f}")
    print(f"\nseconds: {res['seconds']:.0f}; files: {res['results_csv']}, {res['summary_csv']}, {res['plot']}")
    print(json.dumps(res["settings"]))
    return res


if __name__ == "__main__":
    main()
