"""Certified MI-SVM optima along a path of C: warm-started path against independent solves.

For the C grid (ascending), the steps of :func:`milopt.algorithms.bnb.solve_c_path` (each C
started from the previous C's optimum, each step timed) and, for comparison, :func:`milopt.algorithms.bnb.solve_bags` at every C
on its own; features standardised, kent-yu costs.  Printed per C and mode: termination,
objective, bound, nodes, CPU seconds (process time: comparable on a loaded machine) and wall
seconds, and the CPU seconds at which the incumbent first came within 0.01 % of the final
objective; then the check v(C1) <= v(C2) <= (C2 / C1) v(C1) on neighbouring certified optima.  The path
runs the full start schedule at its first C and :data:`milopt.algorithms.bnb.PATH_STEP` after it.

``--tune``: nested cross-validation over the C grid with the exact solver
(``milopt.runner.run_fit("misvm-bigm", params={"solver": "bnb"}, cv=--cv, tune={"C": Cs},
inner_cv=--inner)``, what ``milopt fit misvm-bigm --set solver=bnb --cv K --tune C=...`` runs)
twice in one process: with every inner fit independent, then with the grid of each inner
training set solved as a path (``milopt.solvers.bnb.c_path``).  Printed: CPU seconds of each,
their ratio, the warm-started fits, and whether the chosen C, the inner scores and the outer
objectives and test metrics are the same.

Usage::

    python benchmarks/bnb_cpath.py --data nested:musk1:40 --Cs 0.1,0.3,1,3
    python benchmarks/bnb_cpath.py --data musk1 --Cs 0.3,1 --time-limit 120 --json
    nice python benchmarks/bnb_cpath.py --tune --data 'gen:subset?data=musk1&bags=40&seed=0' --cv 3 --Cs 0.1,0.3,1,3
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _row(mode, C, out, cpu, wall):
    v = float(out["objective"])
    near = next((t for t, x in out.get("trajectory_cpu", ()) if x <= v + 1e-4 * abs(v)), None)
    return {"mode": mode, "C": C, "termination": out["termination"], "objective": v, "bound": float(out["bound"]),
            "nodes": int(out["nodes"]), "cpu": cpu, "wall": wall, "incumbent_cpu": near}


def _tuned(res):
    """What a nested CV decides: per fold the chosen values, the inner scores, the objective and
    the test metrics."""
    keep = ("tuned", "tune_scores", "objective", "bound", "termination", "bag_auc", "bag_accuracy")
    return [{k: f.get(k) for k in keep} for f in res["folds"]]


def _same(a, b, rel=1e-6):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k], rel) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= rel * max(1.0, abs(a))
    return a == b


def main_tune(a, bags):
    """Nested CV over the C grid with the exact solver: independent inner fits, then the path."""
    import contextlib

    import milopt.solvers.bnb as bnb_backend
    from milopt.runner import run_fit

    load0 = os.getloadavg()[0]
    Cs = [float(c) for c in a.Cs.split(",") if c]
    params = {"solver": "bnb"}
    if a.time_limit is not None:
        params["time_limit"] = a.time_limit
    runs = {}
    real = bnb_backend.c_path
    for mode in ("independent", "path"):

        @contextlib.contextmanager
        def independent():     # a block that never starts a path: every inner fit on its own
            yield {"solves": 0, "warm": 0}

        bnb_backend.c_path = independent if mode == "independent" else real
        try:
            c0, w0 = time.process_time(), time.perf_counter()
            res = run_fit("misvm-bigm", a.data, params=params, cv=a.cv, seed=a.seed, bags=bags, tune={"C": Cs},
                          inner_cv=a.inner)
            runs[mode] = {"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0,
                          "path_starts": res["tune"]["path_starts"], "folds": _tuned(res)}
        finally:
            bnb_backend.c_path = real
    doc = {"data": a.data, "Cs": Cs, "cv": a.cv, "inner": a.inner, "load": [load0, os.getloadavg()[0]],
           "runs": runs, "cpu_ratio": runs["path"]["cpu"] / runs["independent"]["cpu"],
           "same": _same(runs["independent"]["folds"], runs["path"]["folds"])}
    if a.json:
        print(json.dumps(doc))
        return 0
    print(f"{a.data}: nested CV, {a.cv} outer x {a.inner} inner folds, C grid {Cs}, solver bnb; load "
          f"{load0:.1f} → {doc['load'][1]:.1f}")
    for mode, r in runs.items():
        print(f"{mode:<12} CPU {r['cpu']:8.2f} s  wall {r['wall']:8.1f} s  inner fits started from the previous C: "
              f"{r['path_starts']}  tuned C per fold: {[f['tuned']['C'] for f in r['folds']]}")
    print(f"path / independent CPU: {doc['cpu_ratio']:.3f}; chosen C, inner scores, objectives and test metrics "
          f"{'the same' if doc['same'] else 'DIFFER'}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="nested:musk1:40")
    ap.add_argument("--Cs", default="0.1,0.3,1,3")
    ap.add_argument("--time-limit", type=float, default=None, help="wall seconds per C")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options (as --set)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tune", action="store_true", help="nested CV over the C grid: independent fits against the path")
    ap.add_argument("--cv", type=int, default=3, help="outer folds of --tune")
    ap.add_argument("--inner", type=int, default=3, help="inner folds of --tune")
    ap.add_argument("--seed", type=int, default=0, help="seed of the folds of --tune")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance

    if a.tune:
        return main_tune(a, load_instance(a.data, 0))

    from milopt.algorithms.bnb import PATH_STEP, solve_bags
    from milopt.metrics import standardize
    from milopt.params import coerce

    opts = {k: coerce(v) for k, v in (kv.split("=", 1) for kv in a.set)}
    Cs = sorted(float(c) for c in a.Cs.split(",") if c)
    bags = standardize(load_instance(a.data, 0))
    load0 = os.getloadavg()[0]
    rows = []
    clock = {"cpu": time.process_time(), "wall": time.perf_counter()}

    def lap():
        c, w = time.process_time(), time.perf_counter()
        out = (c - clock["cpu"], w - clock["wall"])
        clock.update(cpu=c, wall=w)
        return out

    start = []
    for C in Cs:          # the steps of solve_c_path, each timed: the previous optimum is a start
        lap()
        r = solve_bags(bags, C=C, time_limit=a.time_limit, starts=start, **({**PATH_STEP, **opts} if start else opts))
        rows.append(_row("path", C, r, *lap()))
        start = [(r["w"], float(r["b"]))]
    for C in Cs:
        lap()
        rows.append(_row("independent", C, solve_bags(bags, C=C, time_limit=a.time_limit, **opts), *lap()))
    checks = []
    opt = [r for r in rows if r["mode"] == "path"]
    for r1, r2 in zip(opt, opt[1:]):
        checks.append({"C1": r1["C"], "C2": r2["C"], "holds": bool(r1["bound"] <= r2["objective"] + 1e-9 and
                                                                  r2["bound"] <= r2["C"] / r1["C"] * r1["objective"] + 1e-9)})
    doc = {"data": a.data, "Cs": Cs, "time_limit": a.time_limit, "load": [load0, os.getloadavg()[0]], "rows": rows,
           "checks": checks}
    if a.json:
        print(json.dumps(doc))
        return 0
    print(f"{a.data}: C path {Cs}, load {load0:.1f} → {doc['load'][1]:.1f}")
    print(f"{'mode':<12} {'C':>6} {'termination':<11} {'objective':>12} {'bound':>12} {'nodes':>7} {'CPU s':>7} "
          f"{'wall s':>7} {'CPU s to within 0.01 %':>22}")
    for r in rows:
        near = "—" if r["incumbent_cpu"] is None else f"{r['incumbent_cpu']:.2f}"
        print(f"{r['mode']:<12} {r['C']:>6g} {r['termination']:<11} {r['objective']:>12.7f} {r['bound']:>12.7f} "
              f"{r['nodes']:>7} {r['cpu']:>7.2f} {r['wall']:>7.1f} {near:>22}")
    for c in checks:
        print(f"v({c['C1']:g}) <= v({c['C2']:g}) <= ({c['C2']:g}/{c['C1']:g}) v({c['C1']:g}): "
              f"{'holds' if c['holds'] else 'VIOLATED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
