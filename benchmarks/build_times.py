"""Build time of every built-in formulation on the shipped data (standardised), best of N.

    python benchmarks/build_times.py [--repeat 3] [--data musk1 musk2]

Prints one Markdown row per (data, formulation, parameters) with the best wall time of
``milopt.models.formulation(name).build(bags, **params)`` (cold: no warm start, so that the
MI-SVM alternation is not timed) and the number of variables and constraints.
"""
from __future__ import annotations

import argparse
import time

CASES = [
    ("misvm-bigm", {"warm_start": False}),
    ("misvm-bigm", {"warm_start": False, "disjunction": "sos1"}),
    ("misvm-bigm", {"warm_start": False, "norm": "l1"}),
    ("misvm-hull", {"warm_start": False, "perspective": False}),
    ("misvm-dual-qp", {"witness": "first"}),
    ("dcmil-dca", {}),
    ("batchsvm-lp", {"theta": 0.0}),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", nargs="+", default=["musk1"])
    args = ap.parse_args(argv)
    import pyomo.environ as pe

    import milopt
    from milopt.models import formulation
    from milopt.numerics import standardize

    print("| data | formulation | parameters | build (s, best) | variables | constraints |")
    print("|---|---|---|---|---|---|")
    for name in args.data:
        bags = standardize(milopt.load(name))
        for form, kw in CASES:
            if name == "musk2" and form == "misvm-hull":
                continue  # one copy of w per positive-bag instance: too large for a timing table
            best, m = float("inf"), None
            for _ in range(args.repeat):
                m = None
                t0 = time.perf_counter()
                m = formulation(form).build(bags, **kw)
                best = min(best, time.perf_counter() - t0)
            nv = sum(1 for _ in m.component_data_objects(pe.Var))
            nc = sum(1 for _ in m.component_data_objects(pe.Constraint, active=None))
            params = ", ".join(f"{k}={v}" for k, v in kw.items()) or "-"
            print(f"| {name} | {form} | {params} | {best:.2f} | {nv} | {nc} |", flush=True)


if __name__ == "__main__":
    main()
