"""Replay a recorded node trace of the MI-SVM branch and bound on 8, 32, 128 simulated workers.

**Recording** (``record``): one real serial run of :func:`milopt.algorithms.bnb.solve_bags`
(features standardised, C = 1, kent-yu costs) with the node evaluation
(``MISVMBranchAndBound.evaluate``) and the open-node queue (``NodeQueue.push``) observed: for
every node its parent, its bound when it was created, the CPU seconds of its evaluation (the
node QP and look-ahead: the work a worker does), the master's CPU seconds after it (booking
the result, incumbents and their local search, children, queue: until the next evaluation
begins), and the incumbent the next evaluation saw (so when the incumbent improved).  The
starts' CPU seconds (until the root's evaluation) are kept too.  Every time is process CPU
time of one single-threaded process, so a trace recorded on a loaded machine predicts the
wall seconds of idle dedicated cores.  Nodes created but never evaluated (pruned by the
incumbent, or open when the run stopped) are in the trace without a time.

**Replay** (``replay``): the master/worker schedule of ``milopt.algorithms.bnb.parallel`` on
the recorded tree.  After the starts (serial), rounds: the master pops the ``batch`` best open
nodes (default 8 per worker), drops those the incumbent closes, cuts the rest into one
contiguous chunk per worker (as the dask pool does); a round lasts

    latency  +  max over workers of (Σ evaluation seconds of its chunk)
             +  Σ over the round's nodes of (master seconds + per_node),

``latency`` being the round's fixed cost (scheduling, the incumbent and bound sent to the
workers, the results gathered) and ``per_node`` the cost of shipping one node and its result.
Then the master books the nodes in order: the incumbent becomes the smaller of itself and the
one the serial run held after that node, the children enter the queue unless their bound is
closed by it.  A node the serial run never evaluated (a batch reaches nodes the serial search
pruned after a better incumbent) costs the mean evaluation time and is counted as a leaf (an
optimistic assumption; the count is printed).  The replay stops when the queue is closed or
every node the serial run evaluated is done (a time-limited trace: the time to do that work).
The serial reference is the same replay with one worker, one node per round, no latency.

Printed per worker count: predicted wall seconds, speed-up over serial, rounds, mean nodes per
round, the workers' busy share (Σ evaluation / (workers × Σ round makespans)), and the wall
split into starts / master / latency / workers: what limits the speed-up.

**Measured round costs** (``--dask-measure``; :func:`measure_dask`): instead of the given
``--latency`` and ``--per-node``, the replay uses the costs measured on a ``LocalCluster`` of two
single-threaded worker processes (``milopt.algorithms.bnb.parallel.local_cluster``) with the
recorded run's engine and real open nodes of it (collected during a second, node-limited serial
run): the wall seconds from submitting a round (one task per worker, as
``DaskNodePool.evaluate``) to its results gathered, for a no-op task and for batches of 2 to 32
nodes, less the slowest worker's own evaluation seconds (timed inside the task).  A least-squares
line through the batches gives the fixed cost of a round (``latency``, its intercept) and the
cost per node (``per_node``, its slope); the no-op round is printed beside it, with the master's
CPU seconds per round and per node (a line through the batches) and the pickled bytes of a node
and of its result (what is shipped per node).  The replay then charges the round its fixed cost
(``--latency``), the master its CPU seconds per node (``--per-node``, serial) and each worker the
rest of the measured per-node slope for each node of its chunk (``--worker-per-node``, parallel).  These are wall seconds of a shared machine (the load is printed): on a loaded machine
the processes wait for a core, so they are upper bounds of an idle one.

Usage::

    python benchmarks/bnb_replay.py --data musk1 --workers 1,2,8,32,128
    python benchmarks/bnb_replay.py --data musk1 --dask-measure
    python benchmarks/bnb_replay.py --data nested:musk1:40 --save trace.json
    python benchmarks/bnb_replay.py --trace trace.json --latency 0.02 --per-node 0.001 --json
"""
from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import sys
import time


def record(bags, C=1.0, time_limit=None, mip_gap=1e-4, **options):
    """One serial run observed node by node: the trace (a dict, JSON-ready)."""
    from milopt.algorithms.bnb import nodes as nodes_mod
    from milopt.algorithms.bnb import solve_bags
    from milopt.algorithms.bnb.search import MISVMBranchAndBound

    index, trace, clock = {}, [], {"last": None, "current": -1, "first": None}
    keep = []                                  # node objects stay alive: their ids stay unique
    real_push, real_eval = nodes_mod.NodeQueue.push, MISVMBranchAndBound.evaluate

    def push(self, node):
        if id(node) not in index:
            index[id(node)] = len(trace)
            keep.append(node)
            trace.append({"parent": clock["current"], "bound": float(node.bound), "depth": int(node.depth),
                          "eval": None, "master": 0.0, "incumbent": None, "seen": None})
        return real_push(self, node)

    def evaluate(self, node, incumbent, *a, **k):
        t = time.process_time()
        if clock["first"] is None:
            clock["first"] = t
        if clock["last"] is not None:          # the master's time after the previous node
            prev = trace[clock["current"]]
            prev["master"] = t - clock["last"]
            prev["incumbent"] = float(incumbent)
        i = index.get(id(node))
        res = real_eval(self, node, incumbent, *a, **k)
        clock["last"] = time.process_time()
        if i is not None:
            trace[i]["eval"] = clock["last"] - t
            trace[i]["seen"] = float(incumbent)
            clock["current"] = i
        return res

    nodes_mod.NodeQueue.push, MISVMBranchAndBound.evaluate = push, evaluate
    c0 = time.process_time()
    try:
        out = solve_bags(bags, C=C, time_limit=time_limit, mip_gap=mip_gap, **options)
    finally:
        nodes_mod.NodeQueue.push, MISVMBranchAndBound.evaluate = real_push, real_eval
    if clock["last"] is not None and trace[clock["current"]]["incumbent"] is None:
        trace[clock["current"]]["incumbent"] = float(out["objective"])   # (its master time: not observed)
    return {"nodes": trace, "starts_seconds": (clock["first"] or time.process_time()) - c0, "mip_gap": mip_gap,
            "objective": float(out["objective"]), "bound": float(out["bound"]), "termination": out["termination"],
            "serial_seconds": time.process_time() - c0, "serial_wall": float(out["seconds"]), "evaluated": sum(n["eval"] is not None for n in trace)}


def _noop():
    return None


def _timed_chunk(engine, chunk, incumbent, eps):
    """One task of a round, as ``parallel._evaluate_remote``, with its own wall seconds."""
    from milopt.algorithms.bnb import parallel

    t = time.perf_counter()
    out = parallel._evaluate_remote(engine, chunk, incumbent, eps, math.inf)
    return out, time.perf_counter() - t


def collect_nodes(bags, C=1.0, n=64, **options):
    """The engine of a serial run on ``bags`` and up to ``n`` open nodes it created (a node-limited
    run, ``kick_seconds=0``): real nodes to ship."""
    from milopt.algorithms.bnb import nodes as nodes_mod
    from milopt.algorithms.bnb import solve_bags
    from milopt.algorithms.bnb.search import MISVMBranchAndBound

    got, eng = [], {}
    real_push, real_eval = nodes_mod.NodeQueue.push, MISVMBranchAndBound.evaluate

    def push(self, node):
        if len(got) < n and node.depth > 0:
            got.append(node)
        return real_push(self, node)

    def evaluate(self, node, *a, **k):
        eng.setdefault("engine", self)
        return real_eval(self, node, *a, **k)

    nodes_mod.NodeQueue.push, MISVMBranchAndBound.evaluate = push, evaluate
    try:
        solve_bags(bags, C=C, node_limit=max(8, n // 4), **{"kick_seconds": 0, **options})
    finally:
        nodes_mod.NodeQueue.push, MISVMBranchAndBound.evaluate = real_push, real_eval
    return eng["engine"], got


def measure_dask(engine, nodes, workers=2, sizes=(2, 4, 8, 16, 32), repeats=5, scheduler=None):
    """Round costs of ``DaskNodePool`` on a LocalCluster of ``workers`` processes (or on the running
    cluster at ``scheduler``; see the module docstring): a dict of seconds and bytes."""
    import contextlib
    import pickle

    import numpy as np

    from milopt.algorithms.bnb.parallel import local_cluster
    from dask.distributed import Client

    node_bytes = [len(pickle.dumps(nd, protocol=5)) for nd in nodes]
    res_bytes = [len(pickle.dumps(engine.evaluate(nd, math.inf, 1e-9, math.inf), protocol=5)) for nd in nodes[:8]]
    with contextlib.ExitStack() as stack:
        cluster = scheduler or stack.enter_context(local_cluster(workers))
        client = stack.enter_context(Client(cluster))
        eng = client.scatter(engine, broadcast=True, hash=False)
        slots = max(1, sum(client.nthreads().values()))

        def round_of(chunks, fn):
            c0, t0 = time.process_time(), time.perf_counter()
            fut = [client.submit(fn, *args, pure=False) for args in chunks]
            out = client.gather(fut)
            return time.perf_counter() - t0, time.process_time() - c0, out

        for _ in range(2):       # warm-up: every worker thread copies the engine once
            round_of([(eng, [(nd, False)], math.inf, 1e-9) for nd in nodes[:slots]], _timed_chunk)
        noop = [round_of([() for _ in range(slots)], _noop)[:2] for _ in range(4 * repeats)]
        rows = []
        for k in sizes:
            k = min(k, len(nodes))
            for r in range(repeats):
                batch = [(nodes[(r * k + j) % len(nodes)], False) for j in range(k)]
                w = min(len(batch), slots)
                cuts = [len(batch) * j // w for j in range(w + 1)]
                wall, cpu, out = round_of([(eng, batch[cuts[j]:cuts[j + 1]], math.inf, 1e-9) for j in range(w)],
                                          _timed_chunk)
                rows.append({"nodes": k, "wall": wall, "master_cpu": cpu, "work": max(o[1] for o in out),
                             "overhead": wall - max(o[1] for o in out)})
    k = np.array([r["nodes"] for r in rows], dtype=float)
    ov = np.array([r["overhead"] for r in rows])
    slope, intercept = np.polyfit(k, ov, 1)
    cpu_slope, cpu_intercept = np.polyfit(k, [r["master_cpu"] for r in rows], 1)
    med = {int(n): float(np.median([r["overhead"] for r in rows if r["nodes"] == n])) for n in sorted(set(k.astype(int)))}
    return {"workers": workers, "noop_round": float(np.median([x[0] for x in noop])),
            "noop_master_cpu": float(np.median([x[1] for x in noop])),
            "latency": max(0.0, float(intercept)), "per_node": max(0.0, float(slope)), "overhead_by_nodes": med,
            "master_cpu_round": max(0.0, float(cpu_intercept)), "master_cpu_per_node": max(0.0, float(cpu_slope)),
            "node_bytes": float(np.mean(node_bytes)), "result_bytes": float(np.mean(res_bytes)), "rounds": rows}


def replay(trace, workers, batch=0, latency=0.0, per_node=0.0, abs_gap=1e-9, worker_per_node=0.0):
    """The predicted wall of the master/worker search on the recorded tree (see the module
    docstring): a dict of seconds and counts."""
    nodes = trace["nodes"]
    kids = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        if n["parent"] >= 0:
            kids[n["parent"]].append(i)
    evals = [n["eval"] for n in nodes if n["eval"] is not None]
    mean_eval = sum(evals) / len(evals) if evals else 0.0
    # the incumbent the root saw (the starts'); then what the serial run held after each node
    inc = next((n["seen"] for n in nodes if n["seen"] is not None), trace["objective"])
    todo = len(evals)
    k = batch or (1 if workers == 1 and latency == 0 else 8 * workers)
    roots = [i for i, n in enumerate(nodes) if n["parent"] < 0]
    heap = [(nodes[i]["bound"], -nodes[i]["depth"], i) for i in roots]
    heapq.heapify(heap)
    t = {"starts": trace["starts_seconds"], "master": 0.0, "latency": 0.0, "workers": 0.0}
    busy, rounds, done, extra, popped = 0.0, 0, 0, 0, 0

    def eps():
        return max(abs_gap, trace["mip_gap"] * abs(inc))

    while heap and done < todo:
        if heap[0][0] >= inc - eps():
            break
        batch_nodes = []
        while heap and len(batch_nodes) < k:
            b, _, i = heapq.heappop(heap)
            if b < inc - eps():
                batch_nodes.append(i)
        if not batch_nodes:
            break
        rounds += 1
        popped += len(batch_nodes)
        cost = [(nodes[i]["eval"] if nodes[i]["eval"] is not None else mean_eval) + worker_per_node
                for i in batch_nodes]
        w = min(workers, len(cost))
        cuts = [len(cost) * j // w for j in range(w + 1)]
        makespan = max(sum(cost[cuts[j]:cuts[j + 1]]) for j in range(w))
        busy += sum(cost)
        t["workers"] += makespan
        t["latency"] += latency if workers > 1 or batch else 0.0
        for i in batch_nodes:
            n = nodes[i]
            t["master"] += n["master"] + per_node
            if n["eval"] is None:
                extra += 1
                continue
            done += 1
            if n["incumbent"] is not None:
                inc = min(inc, n["incumbent"])
            for c in kids[i]:
                if nodes[c]["bound"] < inc - eps():
                    heapq.heappush(heap, (nodes[c]["bound"], -nodes[c]["depth"], c))
    wall = sum(t.values())
    return {"workers": workers, "batch": k, "wall": wall, "rounds": rounds, "evaluated": done, "extra": extra,
            "nodes_per_round": popped / rounds if rounds else 0.0,
            "busy": busy / (workers * t["workers"]) if t["workers"] > 0 else 0.0, "split": t}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="nested:musk1:40", help="a DATA spec or nested:NAME:N")
    ap.add_argument("--trace", default=None, help="replay this saved trace instead of recording one")
    ap.add_argument("--save", default=None, help="write the recorded trace to this file")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds of the recorded serial run")
    ap.add_argument("--workers", default="1,2,8,32,128")
    ap.add_argument("--latency", type=float, default=0.01, help="fixed seconds per round")
    ap.add_argument("--per-node", type=float, default=0.0005, help="master seconds per node shipped and booked")
    ap.add_argument("--worker-per-node", type=float, default=0.0,
                    help="a worker's seconds per node received and its result sent (added to its evaluation)")
    ap.add_argument("--set", nargs="*", default=["kick_seconds=0"], metavar="KEY=VALUE",
                    help="bnb options of the recorded run (default kick_seconds=0: no local search in the master)")
    ap.add_argument("--dask-measure", action="store_true",
                    help="measure --latency and --per-node on a LocalCluster of two workers (the recorded data)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    measured = None
    if a.dask_measure:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from exact_frontier import load_instance

        from milopt.metrics import standardize

        load0 = os.getloadavg()[0]
        engine, nodes = collect_nodes(standardize(load_instance(a.data, 0)))
        measured = measure_dask(engine, nodes)
        measured["load"] = [load0, os.getloadavg()[0]]
        # the round's fixed cost: the intercept; per node: the master's CPU (serial), and the rest of
        # the measured slope on the worker's side (in parallel)
        a.latency, a.per_node = measured["latency"], measured["master_cpu_per_node"]
        a.worker_per_node = max(0.0, measured["per_node"] - measured["master_cpu_per_node"])
        if not a.json:
            m = measured
            print(f"dask LocalCluster, 2 workers, {a.data} (load {m['load'][0]:.1f} → {m['load'][1]:.1f}): no-op round "
                  f"{1e3 * m['noop_round']:.1f} ms wall ({1e3 * m['noop_master_cpu']:.1f} ms master CPU); node rounds: "
                  f"overhead {', '.join(f'{n} nodes {1e3 * v:.1f} ms' for n, v in m['overhead_by_nodes'].items())}; "
                  f"fit: latency {1e3 * m['latency']:.1f} ms + {1e3 * m['per_node']:.2f} ms per node; master CPU "
                  f"{1e3 * m['master_cpu_round']:.1f} ms per round + {1e3 * m['master_cpu_per_node']:.2f} ms per node; pickled node {m['node_bytes'] / 1e3:.1f} kB, "
                  f"result {m['result_bytes'] / 1e3:.1f} kB")
    if a.trace:
        with open(a.trace) as fh:
            trace = json.load(fh)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from exact_frontier import load_instance

        from milopt.metrics import standardize
        from milopt.params import coerce

        opts = {kk: coerce(v) for kk, v in (kv.split("=", 1) for kv in a.set)}
        load0 = os.getloadavg()[0]
        c0 = time.process_time()
        trace = record(standardize(load_instance(a.data, 0)), time_limit=a.time_limit, **opts)
        trace.update(data=a.data, load=[load0, os.getloadavg()[0]], cpu_seconds=time.process_time() - c0)
    if a.save:
        with open(a.save, "w") as fh:
            json.dump(trace, fh)
    serial = replay(trace, 1)
    rows = [replay(trace, int(w), latency=a.latency, per_node=a.per_node, worker_per_node=a.worker_per_node)
            for w in a.workers.split(",") if w]
    for r in rows:
        r["speedup"] = serial["wall"] / r["wall"] if r["wall"] > 0 else math.nan
    if a.json:
        print(json.dumps({"trace": {kk: v for kk, v in trace.items() if kk != "nodes"}, "serial": serial,
                          "rows": rows, "latency": a.latency, "per_node": a.per_node,
                          "worker_per_node": a.worker_per_node, "dask_measured": measured}))
        return 0
    ev = [n["eval"] for n in trace["nodes"] if n["eval"] is not None]
    ms = [n["master"] for n in trace["nodes"] if n["eval"] is not None]
    print(f"trace {trace.get('data', a.trace)}: {trace['termination']}, {len(ev)} nodes evaluated of "
          f"{len(trace['nodes'])} created, serial run {trace['serial_seconds']:.1f} s CPU, "
          f"{trace.get('serial_wall', math.nan):.1f} s wall (starts {trace['starts_seconds']:.1f} s CPU), load {trace.get('load', ['?'])[0]}; node evaluation mean "
          f"{1e3 * sum(ev) / max(1, len(ev)):.1f} ms, master mean {1e3 * sum(ms) / max(1, len(ms)):.1f} ms per node")
    print(f"replay: latency {a.latency:g} s per round, {a.per_node:g} s per node in the master, "
          f"{a.worker_per_node:g} s per node in a worker; serial replay {serial['wall']:.1f} s")
    print(f"{'workers':>7} {'batch':>6} {'wall s':>8} {'speed-up':>8} {'rounds':>7} {'nodes/rd':>8} {'busy':>6} "
          f"{'extra':>6}  starts / master / latency / workers (s)")
    for r in rows:
        s = r["split"]
        print(f"{r['workers']:>7} {r['batch']:>6} {r['wall']:>8.2f} {r['speedup']:>8.2f} {r['rounds']:>7} "
              f"{r['nodes_per_round']:>8.1f} {r['busy']:>6.2f} {r['extra']:>6}  {s['starts']:.2f} / "
              f"{s['master']:.2f} / {s['latency']:.2f} / {s['workers']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
