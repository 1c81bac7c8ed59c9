"""The search of the exact MI-SVM branch and bound alone: nodes, bound and CPU seconds from the root.

Builds :class:`milopt.algorithms.bnb.MISVMBranchAndBound` on the instance (features
standardised, C = 1, kent-yu costs) and runs its search from the root with no starting
heuristics, no local search and BLAS on one thread, so that the tree depends only on the node
evaluation: node counts compare bounds, CPU seconds compare the cost of a node (on a loaded
machine CPU seconds are steadier than wall seconds).  ``--set`` takes the engine's options
(``branching``, ``strong_bags``, ``qp``, ``newton``, ``pair_bags``, ``tol``) and the search's
(``node_limit`` ...).  Prints the evaluated nodes and the node QPs solved by strong branching
beside them, and the node QPs' iterations, solves by the warm-started active-set method and
fallbacks to the interior point.  Instances as in benchmarks/exact_frontier.py (``nested:musk1:N``, ``musk1``,
generators).

Usage::

    python benchmarks/bnb_search.py --data nested:musk1:40
    python benchmarks/bnb_search.py --data nested:musk1:40 --set branching=strong
    python benchmarks/bnb_search.py --data musk2 --node-limit 200 --json
"""
from __future__ import annotations

import json
import sys
import time

from _bnb_args import load_bags, parser, set_options


def main(argv=None):
    ap = parser(__doc__, "nested:musk1:40")
    ap.add_argument("--node-limit", type=int, default=None)
    a = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from milopt.algorithms.bnb import MISVMBranchAndBound
    from milopt.algorithms.bnb.options import PARAMS, SearchOptions, engine_options
    from milopt.numerics import bag_costs

    bags = load_bags(a)
    o = PARAMS.validate(set_options(a), "bnb options")
    with threadpool_limits(1):
        eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, bag_costs(bags, 1.0), **engine_options(o))
        opts = SearchOptions.from_options(o, time_limit=a.time_limit, kick_every=0, swap=False)
        if a.node_limit is not None:
            opts = opts.replace(node_limit=a.node_limit)
        c0, t0 = time.process_time(), time.perf_counter()
        out = eng.solve(opts)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    rec = {"data": a.data, "branching": eng.branching, "termination": out["termination"], "nodes": out["nodes"],
           "strong_qps": out["strong_qps"], "bound": out["bound"], "incumbent": out["objective"],
           "open_nodes": out["open_nodes"], "closed_nodes": out["closed_nodes"], "iterations": out["iterations"],
           "active_set_solves": out["active_set_solves"], "active_set_fallbacks": out["active_set_fallbacks"],
           "cpu_seconds": cpu,
           "wall_seconds": wall}
    if a.json:
        print(json.dumps(rec))
    else:
        print(f"{a.data} ({eng.branching}): {rec['termination']}, {rec['nodes']} nodes ({rec['open_nodes']} open, "
              f"{rec['strong_qps']} strong-branching QPs), bound {rec['bound']:.7f}, incumbent "
              f"{rec['incumbent']:.7f}, {cpu:.2f} s CPU, {wall:.2f} s wall; node QPs: {rec['iterations']} "
              f"iterations, {rec['active_set_solves']} by the active-set method, {rec['active_set_fallbacks']} "
              "fell back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
