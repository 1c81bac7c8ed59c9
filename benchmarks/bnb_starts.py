"""The starting heuristics of the exact MI-SVM branch and bound: their incumbent trajectory and cost.

Runs :func:`milopt.algorithms.bnb.solve_bags` on the data (features standardised, C = 1,
kent-yu costs) and prints the starts' wall and CPU seconds, and every improving incumbent with
the wall second and the process CPU second (from the call's start) it was found at, its excess
over ``--optimum`` when given, and the load before and after.  The starts run by value per
second (annealing, alternation, swap search) before the search; the iterated local search
(``kick_seconds``) runs inside the search, in one-second slices alternating with as much node
time.  The schedule does not depend on the limit, so the trajectory of a limited run is a
prefix of an unlimited one (up to the machine's load: compare CPU seconds on a loaded machine).
``--node-limit 1`` stops after the root (the starts and the root only); ``--set
kick_seconds=0`` leaves out the iterated local search, so the starts' work is fixed and their
CPU seconds compare versions.

Usage::

    python benchmarks/bnb_starts.py --data musk1 --time-limit 30 --optimum 3.0067634
    python benchmarks/bnb_starts.py --data musk1 --node-limit 1 --set kick_seconds=0
    python benchmarks/bnb_starts.py --data nested:musk1:40 --time-limit 10 --json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="musk1", help="a data spec, or nested:NAME:N (benchmarks/exact_frontier.py)")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--node-limit", type=int, default=None, help="stop after this many nodes (1: the root)")
    ap.add_argument("--optimum", type=float, default=None, help="known optimum: print each incumbent's excess")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options (as --set)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance

    from milopt.algorithms.bnb import PARAMS, solve_bags
    from milopt.metrics import standardize

    bags = standardize(load_instance(a.data, 0))
    opts = PARAMS.resolve(dict(kv.split("=", 1) for kv in a.set), "bnb options")
    if a.node_limit is not None:
        opts["node_limit"] = a.node_limit
    load0 = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    out = solve_bags(bags, C=1.0, time_limit=a.time_limit, **opts)
    rec = {"data": a.data, "time_limit": a.time_limit, "starts_seconds": out["heuristic_seconds"],
           "cpu_seconds": time.process_time() - c0, "wall_seconds": time.perf_counter() - t0,
           "objective": out["objective"], "bound": out["bound"], "nodes": out["nodes"],
           "termination": out["termination"], "load": [load0, os.getloadavg()[0]],
           "trajectory": [(float(t), float(v)) for t, v in out["trajectory"]],
           "trajectory_cpu": [(float(t), float(v)) for t, v in out["trajectory_cpu"]]}
    if a.json:
        print(json.dumps(rec))
        return 0
    print(f"{a.data}: starts {rec['starts_seconds']:.2f} s wall, whole call {rec['wall_seconds']:.2f} s wall, "
          f"{rec['cpu_seconds']:.2f} s CPU (load {load0:.1f} → {rec['load'][1]:.1f}); {rec['termination']}, "
          f"{rec['nodes']} nodes, incumbent {rec['objective']:.7f}, bound {rec['bound']:.7f}")
    print(f"  {'wall s':>9} {'CPU s':>9}  incumbent" + ("   excess" if a.optimum else ""))
    for (t, v), (c, _) in zip(rec["trajectory"], rec["trajectory_cpu"]):
        ex = f"  {100 * (v - a.optimum) / abs(a.optimum):+.3f} %" if a.optimum else ""
        print(f"  {t:9.2f} {c:9.2f}  {v:.7f}{ex}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
