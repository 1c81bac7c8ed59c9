"""The search of the exact MI-SVM branch and bound alone: nodes, bound and CPU seconds from the root.

Builds :class:`milopt.algorithms.bnb.MISVMBranchAndBound` on the instance (features
standardised, C = 1, kent-yu costs) and runs its search from the root with no starting
heuristics, no local search and BLAS on one thread, so that the tree depends only on the node
evaluation: node counts compare bounds, CPU seconds compare the cost of a node (on a loaded
machine CPU seconds are steadier than wall seconds).  Instances as in
benchmarks/exact_frontier.py (``nested:musk1:N``, ``musk1``, generators).

Usage::

    python benchmarks/bnb_search.py --data nested:musk1:40
    python benchmarks/bnb_search.py --data musk2 --node-limit 200 --json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="nested:musk1:40")
    ap.add_argument("--node-limit", type=int, default=None)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance
    from threadpoolctl import threadpool_limits

    from milopt.algorithms.bnb import MISVMBranchAndBound
    from milopt.metrics import standardize
    from milopt.numerics import bag_costs

    bags = standardize(load_instance(a.data, 0))
    with threadpool_limits(1):
        eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, bag_costs(bags, 1.0))
        c0, t0 = time.process_time(), time.perf_counter()
        out = eng.solve(time_limit=a.time_limit, node_limit=a.node_limit, kick_every=0, swap=False)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    rec = {"data": a.data, "termination": out["termination"], "nodes": out["nodes"], "bound": out["bound"],
           "incumbent": out["objective"], "open_nodes": out["open_nodes"], "closed_nodes": out["closed_nodes"],
           "cpu_seconds": cpu, "wall_seconds": wall}
    if a.json:
        print(json.dumps(rec))
    else:
        print(f"{a.data}: {rec['termination']}, {rec['nodes']} nodes ({rec['open_nodes']} open), bound "
              f"{rec['bound']:.7f}, incumbent {rec['incumbent']:.7f}, {cpu:.2f} s CPU, {wall:.2f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
