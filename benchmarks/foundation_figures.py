"""Foundation figures: misvm-bigm model sizes, SCIP on MUSK1 with the valid and
mildsvm big-M, 10-fold CV of misvm-miqp on MUSK1.

Usage: python benchmarks/foundation_figures.py [--time-limit 60] [--cv-time-limit 30] [--skip-cv]
Features are standardised (as `milopt solve` does by default); C = 1; Kent & Yu class weights.
"""
import argparse
import time


import milopt
from milopt.estimators.misvm import MISVMClassifier, sil_start
from milopt.metrics import cross_validate, standardize
from milopt.models import misvm_bigm
from milopt.solvers import model_size, solve


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--cv-time-limit", type=float, default=30.0)
    ap.add_argument("--skip-cv", action="store_true")
    a = ap.parse_args()

    print("== misvm-bigm model sizes (standardised features, C=1) ==")
    for name in ("musk1", "musk2"):
        bags = standardize(milopt.load(name))
        t0 = time.perf_counter()
        m = misvm_bigm.build(bags, C=1.0)
        tb = time.perf_counter() - t0
        print(f"{name}: {model_size(m)}  build {tb:.2f} s")

    print(f"\n== SCIP on MUSK1, {a.time_limit:.0f} s, C=1 ==")
    bags = standardize(milopt.load("musk1"))
    w0, b0 = sil_start(bags)
    ub = misvm_bigm.objective_value(bags, w0, b0)
    for label, kw in [("valid L (trivial bound)", {"big_m": "valid"}),
                      ("valid L (SIL incumbent bound)", {"big_m": "valid", "upper_bound": ub}),
                      ("mildsvm L", {"big_m": "mildsvm"})]:
        m = misvm_bigm.build(bags, C=1.0, **kw)
        L = m._milopt_meta["big_m"]
        r = solve(m, "scip", time_limit=a.time_limit)
        print(f"{label:32s} L range [{L.min():.1f}, {L.max():.1f}]  termination={r.termination} "
              f"objective={r.objective} bound={r.bound} gap={r.gap:.4f} nodes={r.nodes} wall={r.wall_time:.1f}s")
        m = misvm_bigm.build(bags, C=1.0, **kw)
        misvm_bigm.warm_start(m, w0, b0)
        r = solve(m, "scip", time_limit=a.time_limit, warm_start=True)
        print(f"{label + ' + warm start':32s} termination={r.termination} objective={r.objective} "
              f"bound={r.bound} gap={r.gap:.4f} nodes={r.nodes} wall={r.wall_time:.1f}s")

    if not a.skip_cv:
        print(f"\n== 10-fold CV of misvm-miqp on MUSK1 (SCIP, {a.cv_time_limit:.0f} s per fold, C=1) ==")
        res = cross_validate(MISVMClassifier(C=1.0, time_limit=a.cv_time_limit), milopt.load("musk1"), k=10, seed=0)
        for r in res["folds"]:
            print(f"fold {r['fold']}: acc={r['bag_accuracy']:.3f} auc={r['bag_auc']:.3f} gap={r.get('gap', float('nan')):.3f} "
                  f"fit={r['fit_seconds']:.1f}s")
        mu = res["mean"]
        print(f"mean: bag_accuracy={mu['bag_accuracy']:.3f} bag_auc={mu['bag_auc']:.3f} bag_f1={mu['bag_f1']:.3f} "
              f"balanced={mu['bag_balanced_accuracy']:.3f} fit_seconds={mu['fit_seconds']:.1f}")


if __name__ == "__main__":
    main()
