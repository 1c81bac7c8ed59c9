"""pdMISVM ADMM scaling: time of a fixed number of iterations against bags and features.

Prints, for the exact and inexact W updates:

* time of ``--iters`` iterations (default 100; tol set to 1e-300 so none stops early) on
  ``gen:multiclass`` data with 10 instances per bag and 162 features, for 10^3, 10^4 and
  10^5 bags (``--max-bags`` drops the larger sizes), with the log-log slope of time vs bags;
* the same at 10^3 bags for 162 ... 1,620 features, with the slope vs features;
* the reference cost of one pass ``X @ W`` plus one pass ``X.T @ G`` (W: d x K, G: n x K) on
  the same data (best of 3) and the ratio per-iteration time / reference (target <= 3).

"setup" is the one-off work before the first iteration (for ``exact``: the per-class Gram
matrices and their eigendecompositions); "iter" is the mean time of one iteration.  The
machine these figures come from is shared, so besides wall time the script reports the CPU
time of this process (BLAS limited to ``--threads`` = 1 thread by default), and the ratio
is computed on CPU times (wall-time ratio printed too).

Usage::

    python benchmarks/admm_scaling.py                 # full (10^5 bags: ~1.3 GB for X)
    python benchmarks/admm_scaling.py --max-bags 10000 --iters 50
"""
from __future__ import annotations

import argparse
import gc
import json
import time

import numpy as np

from milopt.algorithms.pdmisvm import pdmisvm_admm
from milopt.data.gen_multiclass import multiclass


def reference_pass(X, K, repeats=5):
    """Best (wall, CPU) time of one X @ W plus one X.T @ G pass."""
    rng = np.random.default_rng(0)
    W = rng.standard_normal((X.shape[1], K))
    G = rng.standard_normal((X.shape[0], K))
    best, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        P = X @ W
        R = X.T @ G
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, time.process_time() - c)
        del P, R
    return best, best_cpu


def run(bags, features, variant, iters, classes, seed):
    B = multiclass(classes=classes, bags=bags, instances=10, min_instances=10, features=features, seed=seed)
    ref, ref_cpu = reference_pass(B.X, classes)
    marks = []
    cb = lambda it, W, b, rec: marks.append(time.process_time())  # noqa: E731
    t, c = time.perf_counter(), time.process_time()
    W, b, res = pdmisvm_admm(B.X, B.bag_ptr, B.y, classes, variant=variant, max_iter=iters, tol=1e-300, callback=cb)
    total, total_cpu = time.perf_counter() - t, time.process_time() - c
    setup = res.extra["setup_seconds"]
    h = res.history
    per_iter = (h[-1]["time"] - h[0]["time"]) / (len(h) - 1)          # wall, iterations 2..n
    per_iter_cpu = (marks[-1] - marks[0]) / (len(marks) - 1)        # CPU of this process
    out = {"bags": bags, "instances": B.n_instances, "features": features, "variant": variant,
           "iterations": len(h), "total_s": total, "total_cpu_s": total_cpu, "setup_s": setup,
           "iter_s": per_iter, "iter_cpu_s": per_iter_cpu, "ref_pass_s": ref, "ref_pass_cpu_s": ref_cpu,
           "ratio": per_iter_cpu / ref_cpu, "ratio_wall": per_iter / ref, "objective": res.objective}
    del B, W, res
    gc.collect()
    return out


def slope(xs, ys):
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def table(rows, key):
    print(f"{key:>9} {'variant':>8} {'instances':>10} {'total s':>9} {'CPU s':>8} {'setup s':>8} {'iter ms':>9} "
          f"{'iter CPU ms':>11} {'XW+XtG CPU ms':>13} {'ratio CPU':>9} {'ratio wall':>10}")
    for r in rows:
        print(f"{r[key]:>9} {r['variant']:>8} {r['instances']:>10} {r['total_s']:>9.2f} {r['total_cpu_s']:>8.2f} "
              f"{r['setup_s']:>8.2f} {1e3 * r['iter_s']:>9.2f} {1e3 * r['iter_cpu_s']:>11.2f} "
              f"{1e3 * r['ref_pass_cpu_s']:>13.2f} {r['ratio']:>9.2f} {r['ratio_wall']:>10.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--max-bags", type=int, default=100000)
    ap.add_argument("--classes", type=int, default=2)
    ap.add_argument("--features", type=int, nargs="*", default=[162, 405, 810, 1215, 1620])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--skip-features", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1: CPU times comparable)")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    variants = ("exact", "inexact")
    rows_b = []
    for n in [b for b in (1000, 10000, 100000) if b <= args.max_bags]:
        for v in variants:
            rows_b.append(run(n, 162, v, args.iters, args.classes, args.seed))
            print(json.dumps(rows_b[-1]), flush=True)
    rows_f = []
    if not args.skip_features:
        for d in args.features:
            for v in variants:
                rows_f.append(run(1000, d, v, args.iters, args.classes, args.seed))
                print(json.dumps(rows_f[-1]), flush=True)
    print(f"\n== {args.iters} iterations vs bags (10 instances/bag, 162 features, K={args.classes}) ==")
    table(rows_b, "bags")
    for v in variants:
        rs = [r for r in rows_b if r["variant"] == v]
        if len(rs) > 1:
            xs = [r["bags"] for r in rs]
            print(f"slope log(time)/log(bags), {v}: total wall {slope(xs, [r['total_s'] for r in rs]):.2f}, "
                  f"total CPU {slope(xs, [r['total_cpu_s'] for r in rs]):.2f}, "
                  f"per-iteration CPU {slope(xs, [r['iter_cpu_s'] for r in rs]):.2f}")
    if rows_f:
        print(f"\n== {args.iters} iterations vs features (1000 bags x 10 instances, K={args.classes}) ==")
        table(rows_f, "features")
        for v in variants:
            rs = [r for r in rows_f if r["variant"] == v]
            xs = [r["features"] for r in rs]
            print(f"slope log(time)/log(features), {v}: total wall {slope(xs, [r['total_s'] for r in rs]):.2f}, "
                  f"total CPU {slope(xs, [r['total_cpu_s'] for r in rs]):.2f}, "
                  f"per-iteration CPU {slope(xs, [r['iter_cpu_s'] for r in rs]):.2f}")
    allr = rows_b + rows_f
    print("\nper-iteration CPU time / CPU time of (one X@W + one X.T@G pass): "
          + ", ".join(f"{r['variant']}@{r['bags']}x{r['features']}={r['ratio']:.2f}" for r in allr))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"bags": rows_b, "features": rows_f}, fh, indent=1)


if __name__ == "__main__":
    main()
