"""The starting heuristics of the exact MI-SVM branch and bound: their incumbent trajectory and cost.

Runs :func:`milopt.algorithms.bnb.solve_bags` with ``node_limit=1`` (the starts, then the root),
features standardised, C = 1, kent-yu costs, and prints the starts' wall and CPU seconds and
every improving incumbent with the wall second (from the call's start) it was found at.  With
``--time-limit`` the starts follow the same schedule as without one and are cut at
``start_share`` of the limit, so the trajectory of a limited run is a prefix of the unlimited
one (up to the machine's load).  ``--set kick_seconds=0`` leaves out the time-bounded iterated
local search: the starts' work is then fixed, and their CPU seconds compare versions.

Usage::

    python benchmarks/bnb_starts.py --data musk1 --set kick_seconds=0
    python benchmarks/bnb_starts.py --data musk1 --time-limit 30
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
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options (as --set)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance

    from milopt.algorithms.bnb import PARAMS, solve_bags
    from milopt.metrics import standardize

    bags = standardize(load_instance(a.data, 0))
    opts = PARAMS.resolve(dict(kv.split("=", 1) for kv in a.set), "bnb options")
    opts["node_limit"] = 1
    c0, t0 = time.process_time(), time.perf_counter()
    out = solve_bags(bags, C=1.0, time_limit=a.time_limit, **opts)
    rec = {"data": a.data, "time_limit": a.time_limit, "starts_seconds": out["heuristic_seconds"],
           "cpu_seconds": time.process_time() - c0, "wall_seconds": time.perf_counter() - t0,
           "objective": out["objective"], "root_bound": out["bound"],
           "trajectory": [(float(t), float(v)) for t, v in out["trajectory"]]}
    if a.json:
        print(json.dumps(rec))
        return 0
    print(f"{a.data}: starts {rec['starts_seconds']:.2f} s wall, whole call {rec['wall_seconds']:.2f} s wall, "
          f"{rec['cpu_seconds']:.2f} s CPU; incumbent {rec['objective']:.7f}, root bound {rec['root_bound']:.7f}")
    for t, v in rec["trajectory"]:
        print(f"  {t:9.2f} s  {v:.7f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
