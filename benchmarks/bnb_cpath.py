"""Certified MI-SVM optima along a path of C: warm-started path against independent solves.

For the C grid (ascending), the steps of :func:`milopt.algorithms.bnb.solve_c_path` (each C
started from the previous C's optimum, each step timed) and, for comparison, :func:`milopt.algorithms.bnb.solve_bags` at every C
on its own; features standardised, kent-yu costs.  Printed per C and mode: termination,
objective, bound, nodes, CPU seconds (process time: comparable on a loaded machine) and wall
seconds, and the CPU seconds at which the incumbent first came within 0.01 % of the final
objective; then the check v(C1) <= v(C2) <= (C2 / C1) v(C1) on neighbouring certified optima.

Usage::

    python benchmarks/bnb_cpath.py --data nested:musk1:40 --Cs 0.1,0.3,1,3
    python benchmarks/bnb_cpath.py --data musk1 --Cs 0.3,1 --time-limit 120 --json
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="nested:musk1:40")
    ap.add_argument("--Cs", default="0.1,0.3,1,3")
    ap.add_argument("--time-limit", type=float, default=None, help="wall seconds per C")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options (as --set)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance

    from milopt.algorithms.bnb import solve_bags
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
        r = solve_bags(bags, C=C, time_limit=a.time_limit, starts=start, **opts)
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
