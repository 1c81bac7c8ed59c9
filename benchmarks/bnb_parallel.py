"""Parallel node evaluation of the MI-SVM branch and bound: the speed-up of ``workers``.

Solves one fixed instance to proven optimality once per worker count, one after the other in
this process (same data, same deterministic starting heuristics: no time limit, so the starts
do not depend on the machine's speed), and prints per run the search time (after the starts),
nodes, the CPU seconds of the master and of the workers (on a shared machine they show how
much of the cores the run actually got), the proven objective and bound, and the speed-up of
the search time over the first run.  Instances: ``nested:musk1:N`` (the nested MUSK1 subsets of benchmarks/exact_frontier.py)
or any DATA spec of ``milopt`` (features standardised, C = 1, kent-yu costs).

With ``--dask``, every worker count k > 1 is run a second time with the rounds evaluated on a
``dask.distributed`` LocalCluster of k single-threaded worker processes
(``milopt.algorithms.bnb.parallel.local_cluster``, as ``scheduler=local`` starts), started by this script
before the run (its start-up seconds are printed apart) and passed as the option
``scheduler=ADDRESS``; sending the engine to the workers counts in the search time.  The
workers' CPU seconds are those of the cluster's processes (children of this one), read after
the cluster is closed.  ``--scheduler ADDRESS`` uses a running cluster instead (no CPU
accounting of its workers).

Usage::

    python benchmarks/bnb_parallel.py --data nested:musk1:40 --workers 1,2
    python benchmarks/bnb_parallel.py --data musk1 --workers 1,2 --node-limit 1000
    python benchmarks/bnb_parallel.py --data nested:musk1:30 --workers 1 --set branching=lookahead
    python benchmarks/bnb_parallel.py --data 'gen:multiclass?classes=2&bags=30&seed=1' --workers 1,2 --json
    python benchmarks/bnb_parallel.py --data musk1 --workers 1,2 --node-limit 1500 --dask
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
    ap.add_argument("--dask", action="store_true",
                    help="also run every worker count > 1 on a dask.distributed LocalCluster (scheduler=local)")
    ap.add_argument("--scheduler", default=None, help="with --dask: the address of a running dask scheduler")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from milopt.algorithms.bnb import solve_bags
    from milopt.metrics import standardize
    from milopt.models import misvm_bigm

    bags = standardize(load_instance(a.data))
    costs = misvm_bigm.bag_costs(bags, 1.0)
    rows = []
    runs = []
    for w in [int(x) for x in a.workers.split(",") if x]:
        runs.append((w, None))
        if a.dask and w > 1:
            runs.append((w, a.scheduler or "local"))
    load0 = os.getloadavg()[0]
    for w, sched in runs:
        c0 = time.process_time()
        ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        opts = dict(kv.split("=", 1) for kv in a.set)
        cluster, startup = None, None
        if sched == "local":
            from milopt.algorithms.bnb.parallel import local_cluster

            ts = time.perf_counter()
            cluster = local_cluster(w)
            startup = time.perf_counter() - ts
            opts["scheduler"] = cluster.scheduler_address
        elif sched:
            opts["scheduler"] = sched
        out = solve_bags(bags, costs=costs, workers=w, batch=a.batch, node_limit=a.node_limit, **opts)
        if cluster is not None:
            cluster.close()
        search = out["seconds"] - out["heuristic_seconds"]
        ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
        rows.append({"workers": w, "scheduler": sched, "cluster_startup_seconds": startup, "search_seconds": search, "seconds": out["seconds"], "nodes": out["nodes"],
                     "closed_nodes": out["closed_nodes"],
                     "objective": out["objective"], "bound": out["bound"], "termination": out["termination"],
                     "master_cpu_seconds": time.process_time() - c0, "worker_cpu_seconds": child_cpu})
        r = rows[-1]
        r["speedup"] = rows[0]["search_seconds"] / search if search > 0 else None
        if not a.json:
            how = f"workers={w}" + (f" on dask ({sched}" + (f", cluster start {startup:.1f} s" if startup else "") + ")"
                                     if sched else "")
            print(f"{a.data} {how} search {search:.2f} s (total {out['seconds']:.2f} s) nodes={out['nodes']} "
                  f"(closed after evaluation {out['closed_nodes']}) "
                  f"objective={out['objective']:.7g} bound={out['bound']:.7g} {out['termination']} "
                  f"speed-up {r['speedup']:.2f}; CPU s: master {r['master_cpu_seconds']:.1f}, workers {child_cpu:.1f}",
                  flush=True)
    if a.json:
        print(json.dumps({"data": a.data, "rows": rows, "load_start": load0, "load_end": os.getloadavg()[0]},
                         indent=1))
    else:
        print(f"load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
