"""10-fold cross-validation of pdMISVM on MUSK1 and MUSK2 next to the other MI-SVM methods.

For each data set: stratified 10-fold CV over bags (``milopt.metrics.cross_validate``,
features standardised on the training folds, seed 0) of

* ``pdmisvm`` linear, exact W update, pdMISVM.jl's defaults (C=1, mu=1e-3, rho=1.2; milopt's
  default C is ``'auto'``, C=1 is set here);
* ``pdmisvm`` linear with the reference MUSK setting (C=1e3, mu=1e-5);
* ``pdmisvm`` inexact W update (C=1, the other keys default);
* ``pdmisvm`` RBF kernel (C=1, gamma = 1/n_features; exact Gram matrix on MUSK1, ``--nystroem``
  landmarks on MUSK2, whose training folds have ~5,900 instances);
* ``pdmisvm`` with the paper's settings (Seo et al. 2022, Section 4.1): ``preset=paper-rbf``
  (exact W update with the RBF kernel, C=1e-3, mu_0=1e-10, tol=1e-5; Nystroem on MUSK2 as
  above) and ``preset=paper-linear`` (inexact W update, linear, C=1e4, mu_0=1e-8, tol=1e-5), both
  with Algorithm 1's closed-form T/U updates (``max_prox=paper``);
* ``misvm-heuristic`` and ``misvm-miqp`` when they are registered (``milopt.estimators.registry``);
  the MIQP gets ``--miqp-time-limit`` seconds per fold (SCIP; incumbent used at the limit).

Prints mean and standard deviation of bag accuracy and bag AUC, and mean fit seconds.

Usage::

    python benchmarks/pdmisvm_cv.py                              # everything
    python benchmarks/pdmisvm_cv.py --datasets musk1 --skip miqp
    python benchmarks/pdmisvm_cv.py --only preset          # the paper's settings only
    python benchmarks/pdmisvm_cv.py --only "settings, max_prox=exact"   # same, exact T/U updates
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import milopt
from milopt.estimators.registry import methods
from milopt.metrics import cross_validate


def configs(dataset, args):
    out = [
        ("pdmisvm linear exact (C=1, mu=1e-3)", "pdmisvm", {"variant": "exact", "C": 1.0}),
        ("pdmisvm linear exact (C=1e3, mu=1e-5)", "pdmisvm", {"variant": "exact", "C": 1e3, "mu": 1e-5}),
        ("pdmisvm linear inexact (C=1, mu=1e-3)", "pdmisvm", {"variant": "inexact", "C": 1.0}),
    ]
    rbf = {"variant": "kernel", "kernel": "rbf", "gamma": "auto", "C": 1.0}
    if dataset == "musk2":
        rbf["n_components"] = args.nystroem
    out.append((f"pdmisvm rbf (gamma=1/d{', Nystroem %d' % args.nystroem if dataset == 'musk2' else ', exact Gram'})",
                "pdmisvm", rbf))
    prbf = {"preset": "paper-rbf"}
    if dataset == "musk2":
        prbf["n_components"] = args.nystroem
    gram = f", Nystroem {args.nystroem}" if dataset == "musk2" else ", exact Gram"
    out.append((f"pdmisvm preset=paper-rbf (C=1e-3, mu=1e-10, tol=1e-5{gram})", "pdmisvm", prbf))
    out.append(("pdmisvm preset=paper-linear (inexact, C=1e4, mu=1e-8, tol=1e-5)", "pdmisvm",
                {"preset": "paper-linear"}))
    # the same settings with the exact T/U block minimiser (milopt's default max_prox) instead of Algorithm 1's
    ex = {"variant": "kernel", "kernel": "rbf", "C": 1e-3, "mu": 1e-10, "tol": 1e-5}
    if dataset == "musk2":
        ex["n_components"] = args.nystroem
    out.append(("pdmisvm paper-rbf settings, max_prox=exact", "pdmisvm", ex))
    out.append(("pdmisvm paper-linear settings, max_prox=exact", "pdmisvm",
                {"variant": "inexact", "C": 1e4, "mu": 1e-8, "tol": 1e-5}))
    out.append(("misvm-heuristic (defaults)", "misvm-heuristic", {}))
    out.append((f"misvm-miqp (C=1, SCIP, {args.miqp_time_limit:g} s/fold)", "misvm-miqp",
                {"time_limit": args.miqp_time_limit}))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="*", default=["musk1", "musk2"])
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--miqp-time-limit", type=float, default=30.0)
    ap.add_argument("--nystroem", type=int, default=1000)
    ap.add_argument("--skip", nargs="*", default=[], help="substrings of configurations to skip (e.g. miqp rbf)")
    ap.add_argument("--only", nargs="*", default=[], help="run only configurations containing one of these substrings")
    ap.add_argument("--json", help="write all fold results here")
    args = ap.parse_args(argv)
    registry = methods()
    rows = []
    for ds in args.datasets:
        bags = milopt.load(ds)
        for label, name, params in configs(ds, args):
            if any(s in label for s in args.skip):
                continue
            if args.only and not any(s in label for s in args.only):
                continue
            if name not in registry:
                print(f"[{ds}] {label}: method {name!r} not registered -- skipped", flush=True)
                continue
            spec = registry[name]
            est = spec.make(params, seed=args.seed)
            t = time.perf_counter()
            cv = cross_validate(est, bags, k=args.folds, seed=args.seed, scale=spec.scale)
            wall = time.perf_counter() - t
            acc = [f["bag_accuracy"] for f in cv["folds"]]
            auc = [f["bag_auc"] for f in cv["folds"]]
            row = {"dataset": ds, "config": label, "method": name, "params": params,
                   "acc_mean": float(np.mean(acc)), "acc_std": float(np.std(acc)),
                   "auc_mean": float(np.nanmean(auc)), "auc_std": float(np.nanstd(auc)),
                   "fit_s_mean": cv["mean"]["fit_seconds"], "wall_s": wall,
                   "iterations_mean": cv["mean"].get("iterations"), "folds": cv["folds"]}
            rows.append(row)
            print(f"[{ds}] {label}: acc {row['acc_mean']:.3f} ± {row['acc_std']:.3f}, "
                  f"AUC {row['auc_mean']:.3f} ± {row['auc_std']:.3f}, fit {row['fit_s_mean']:.2f} s/fold", flush=True)
    print(f"\n{args.folds}-fold CV (seed {args.seed}; bag accuracy and AUC: mean ± std over folds)")
    print("| data | method | accuracy | AUC | fit s/fold |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['config']} | {r['acc_mean']:.3f} ± {r['acc_std']:.3f} | "
              f"{r['auc_mean']:.3f} ± {r['auc_std']:.3f} | {r['fit_s_mean']:.2f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
