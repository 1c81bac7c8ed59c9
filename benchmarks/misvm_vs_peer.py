"""MI-SVM heuristic vs the peer package misvm (Doran; cvxopt QPs).

Prints
1. the wall time of one linear ``misvm-heuristic`` fit on all of MUSK2 (standardised
   features; target <= 12 s, misvm measured 243 s), and
2. 10-fold CV bag accuracy / AUC on MUSK1 (features standardised on the training folds) at
   C = 1 and C = 10 for both slack forms, next to misvm's 0.758 / 0.841 (C=1) and
   0.804 / 0.868 (C=10).

Usage: python benchmarks/misvm_vs_peer.py [--quick] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

PEER = {1.0: (0.758, 0.841), 10.0: (0.804, 0.868)}
PEER_MUSK2_SECONDS = 243.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MUSK2 timing and one CV setting only")
    ap.add_argument("--musk2-only", action="store_true", help="only the MUSK2 timing (both slack forms)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)

    import milopt
    import milopt.models.misvm_bigm  # noqa: F401  (import cost of pyomo kept out of the timing)
    from milopt.estimators.heuristics import MISVMHeuristic
    from milopt.metrics import cross_validate, evaluate, standardize

    out = {"musk2": [], "musk1_cv": []}
    b2 = standardize(milopt.load("musk2"))
    configs = [("bag", "none", True), ("instance", "none", True), ("bag", "kent-yu", False), ("instance", "kent-yu", False)]
    for slack, cw, sc in (configs[:1] if args.quick else configs):
        # ("bag", "none", True) = the defaults = misvm's problem (no weights, C/n)
        est = MISVMHeuristic(C=1.0, kernel="linear", slack=slack, class_weight=cw, scale_C=sc)
        t0 = time.perf_counter()
        est.fit(b2)
        sec = time.perf_counter() - t0
        ev = evaluate(est, b2)
        row = {"slack": slack, "class_weight": cw, "scale_C": sc, "seconds": sec, "speedup_vs_misvm": PEER_MUSK2_SECONDS / sec,
               "alternations": est.fit_info_["alternations"], "objective": est.objective_,
               "solver": est.fit_info_["subproblem_solver"], "train_bag_accuracy": ev["bag_accuracy"]}
        out["musk2"].append(row)
        print(f"MUSK2 linear misvm-heuristic (slack={slack}, class_weight={cw}, scale_C={sc}, C=1, "
              f"solver={row['solver']}): {sec:.2f} s "
              f"({row['speedup_vs_misvm']:.1f}x faster than misvm's 243 s), {row['alternations']} alternations, "
              f"objective {row['objective']:.4f}, training bag accuracy {row['train_bag_accuracy']:.3f}", flush=True)

    if args.musk2_only:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(out, fh, indent=2)
        return out
    b1 = milopt.load("musk1")
    # (slack, class_weight, scale_C); ("bag", "none", True) is the peer's own problem: misvm's MISVM
    # has one slack per negative bag (sum of the bag's alphas <= C), no class weights and C / n.
    settings = [("bag", "none", True, 1), ("bag", "none", True, 5), ("instance", "none", True, 1),
                ("bag", "kent-yu", False, 1), ("instance", "kent-yu", False, 1)]
    if args.quick:
        settings = settings[:1]
    print("\nMUSK1 10-fold CV (standardised on training folds), linear MI-SVM heuristic")
    print(f"{'slack':9s} {'class_weight':12s} {'scale_C':7s} {'starts':>6s} {'C':>5s} {'bag_acc':>8s} {'bag_auc':>8s} {'misvm acc/auc':>14s} {'fit s':>6s}")
    for slack, cw, sc, rs in settings:
        for C in (1.0, 10.0):
            est = MISVMHeuristic(C=C, kernel="linear", slack=slack, class_weight=cw, scale_C=sc, restarts=rs)
            cv = cross_validate(est, b1, k=10, seed=0, scale=True)
            m = cv["mean"]
            acc_sd = float(np.std([f["bag_accuracy"] for f in cv["folds"]]))
            row = {"slack": slack, "class_weight": cw, "scale_C": sc, "restarts": rs, "C": C, "bag_accuracy": m["bag_accuracy"],
                   "bag_accuracy_sd": acc_sd, "bag_auc": m["bag_auc"], "fit_seconds": m["fit_seconds"],
                   "misvm_accuracy": PEER[C][0], "misvm_auc": PEER[C][1]}
            out["musk1_cv"].append(row)
            print(f"{slack:9s} {cw:12s} {str(sc):7s} {rs:6d} {C:5.0f} {m['bag_accuracy']:8.3f} {m['bag_auc']:8.3f} "
                  f"{PEER[C][0]:6.3f}/{PEER[C][1]:.3f} {m['fit_seconds']:6.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return out


if __name__ == "__main__":
    main()
