"""Parallel node evaluation of the MI-SVM branch and bound: the speed-up of ``workers``.

Solves one fixed instance to proven optimality once per worker count, one after the other in
this process (same data, same deterministic starting heuristics: no time limit, so the starts
do not depend on the machine's speed), and prints per run the search time (after the starts),
nodes, the CPU seconds of the master and of the workers (on a shared machine they show how
much of the cores the run actually got), the proven objective and bound, and the speed-up of
the search time over the first run.  Instances: ``nested:musk1:N`` (the nested MUSK1 subsets of benchmarks/exact_frontier.py)
or any DATA spec of ``milopt`` (features standardised, C = 1, kent-yu costs).

Usage::

    python benchmarks/bnb_parallel.py --data nested:musk1:40 --workers 1,2
    python benchmarks/bnb_parallel.py --data musk1 --workers 1,2 --node-limit 1000
    python benchmarks/bnb_parallel.py --data nested:musk1:30 --workers 1 --set branching=lookahead
    python benchmarks/bnb_parallel.py --data 'gen:multiclass?classes=2&bags=30&seed=1' --workers 1,2 --json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time


def load_instance(spec):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance as li

    return li(spec, 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="nested:musk1:40")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--node-limit", type=int, default=None,
                    help="stop every run after this many nodes (the speed-up is then the time for the same count)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options (as milopt --set)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from milopt.algorithms.bnb import solve_bags
    from milopt.metrics import standardize
    from milopt.models import misvm_bigm

    bags = standardize(load_instance(a.data))
    costs = misvm_bigm.bag_costs(bags, 1.0)
    rows = []
    for w in [int(x) for x in a.workers.split(",") if x]:
        c0 = time.process_time()
        ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        opts = dict(kv.split("=", 1) for kv in a.set)
        out = solve_bags(bags, costs=costs, workers=w, batch=a.batch, node_limit=a.node_limit, **opts)
        search = out["seconds"] - out["heuristic_seconds"]
        ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
        rows.append({"workers": w, "search_seconds": search, "seconds": out["seconds"], "nodes": out["nodes"],
                     "closed_nodes": out["closed_nodes"],
                     "objective": out["objective"], "bound": out["bound"], "termination": out["termination"],
                     "master_cpu_seconds": time.process_time() - c0, "worker_cpu_seconds": child_cpu})
        r = rows[-1]
        r["speedup"] = rows[0]["search_seconds"] / search if search > 0 else None
        if not a.json:
            print(f"{a.data} workers={w} search {search:.2f} s (total {out['seconds']:.2f} s) nodes={out['nodes']} "
                  f"(closed after evaluation {out['closed_nodes']}) "
                  f"objective={out['objective']:.7g} bound={out['bound']:.7g} {out['termination']} "
                  f"speed-up {r['speedup']:.2f}; CPU s: master {r['master_cpu_seconds']:.1f}, workers {child_cpu:.1f}",
                  flush=True)
    if a.json:
        print(json.dumps({"data": a.data, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
