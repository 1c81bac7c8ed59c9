"""bnb's node evaluation on a dask.distributed cluster (option ``scheduler``): the same proof."""
import numpy as np
import pytest
from test_bnb import brute_force, tiny

from milopt.algorithms.bnb import solve_bags
from milopt.algorithms.bnb.options import PARAMS
from milopt.errors import InvalidParameterError, SolverUnavailableError
from milopt.models import misvm_bigm

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded worker processes (one cluster for the module: starting one takes
    seconds), as ``scheduler=local`` starts them."""
    from milopt.algorithms.bnb.parallel import local_cluster

    with local_cluster(2) as c:
        yield c


@pytest.mark.parametrize("seed", [0, 2])
def test_dask_equals_brute_force_and_serial(cluster, seed):
    bags = tiny(seed + 20, n_pos=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    serial = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, workers=2, batch=3,
                     scheduler=cluster.scheduler_address)
    assert out["termination"] == serial["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert out["objective"] == pytest.approx(serial["objective"], rel=1e-6, abs=1e-8)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7
    assert out["options"]["scheduler"] == cluster.scheduler_address
    # the returned (w, b) has the reported objective
    raw = bags.X @ out["w"] + out["b"]
    m = np.maximum.reduceat(raw, bags.bag_ptr[:-1])
    phi = 0.5 * out["w"] @ out["w"] + costs @ np.where(bags.y == 1, np.maximum(0, 1 - m), np.maximum(0, 1 + m))
    assert phi == pytest.approx(out["objective"], rel=1e-7, abs=1e-9)


def test_dask_bound_valid_when_stopped_early(cluster):
    """Stopped after a few rounds: the bound never exceeds the optimum, the incumbent never
    falls below it."""
    bags = tiny(23, n_pos=4, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    for limit in (1, 3, 7):
        out = solve_bags(bags, costs=costs, restarts=1, anneal=0, node_limit=limit, workers=2, batch=2,
                         scheduler=cluster.scheduler_address)
        assert out["bound"] <= ref + 1e-7
        assert out["objective"] >= ref - 1e-7


def test_each_thread_has_its_own_solver_state():
    """Threads of one dask worker evaluate on their own copies of the engine (the node QP state
    is mutated), sharing the read-only kernel matrix; a new engine replaces the copy."""
    import threading

    from milopt.algorithms.bnb import MISVMBranchAndBound
    from milopt.algorithms.bnb.parallel import _thread_engine

    bags = tiny(21, n_pos=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    got = {}

    def grab(k):
        got[k] = (_thread_engine(eng), _thread_engine(eng))

    ts = [threading.Thread(target=grab, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    (a, a2), (b, _) = got[0], got[1]
    assert a is a2                                   # made once per thread
    assert a is not b and a is not eng and b is not eng
    assert a.smo is not eng.smo and a.smo is not b.smo
    assert a.K is eng.K and b.K is eng.K             # shared, not copied
    eng2 = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    c = _thread_engine(eng2)
    assert c is not _thread_engine(eng) and c.K is eng2.K


def test_dask_threads_share_no_solver_state():
    """One worker with four threads: node QPs run concurrently in one process; the
    coordinate-descent node QP (which keeps state) gives the brute-force optimum."""
    import logging

    bags = tiny(21, n_pos=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=4, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as c:
        out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, workers=4, batch=8, qp="smo",
                         scheduler=c.scheduler_address)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)


def test_dask_local_cluster_option():
    """``scheduler=local`` starts (and stops) its own LocalCluster of ``workers`` processes."""
    bags = tiny(22, n_pos=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, workers=2, scheduler="local")
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)


@pytest.mark.slow
def test_unreachable_scheduler_is_one_line():
    """(Waits for dask's connection timeout, 30 s.)"""
    bags = tiny(20, n_pos=4)
    with pytest.raises(SolverUnavailableError) as e:
        solve_bags(bags, restarts=0, anneal=0, scheduler="tcp://127.0.0.1:1", time_limit=60)
    msg = str(e.value)
    assert "\n" not in msg and "scheduler" in msg and "local" in msg


def test_scheduler_option_is_declared():
    assert PARAMS["scheduler"].default is None
    assert PARAMS.resolve({"scheduler": "local"}, "bnb options")["scheduler"] == "local"
    with pytest.raises(InvalidParameterError):
        PARAMS.resolve({"schedular": "local"}, "bnb options")


def test_a_worker_lost_in_the_middle_of_a_proof_loses_nothing(cluster, monkeypatch):
    """One of the two worker processes is killed (SIGKILL) while a round of nodes is in flight,
    with rounds still to come: dask re-runs its tasks on the other worker (the nanny restarts the
    killed one), the search books the same results in the same order, and the proof is the one
    of an undisturbed run (the same optimum, bound and node count) and of the serial search (the
    same optimum, brute force)."""
    import os
    import signal

    from milopt.algorithms.bnb import parallel

    bags = tiny(24, n_pos=6, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    opts = dict(costs=costs, mip_gap=1e-7, restarts=0, anneal=0, kick_seconds=0, kick_every=0, workers=2,
                batch=2, scheduler=cluster.scheduler_address)
    calm = solve_bags(bags, **opts)
    serial = solve_bags(bags, **{**opts, "workers": 1, "scheduler": None})
    real = parallel.DaskNodePool.evaluate
    killed, rounds = {}, []

    def evaluate(self, nodes, *args, **kw):
        rounds.append(len(nodes))
        if len(nodes) == 2 and not killed:
            killed["round"] = len(rounds)
            client = self.client
            real_gather = client.gather

            def gather(futures, *a, **k):
                # the round is submitted (one task per worker): kill a worker; its task, running
                # or finished with its result held there, is computed again on the other one
                pids = client.run(os.getpid)
                addr = sorted(pids)[0]
                killed["pid"] = pids[addr]
                os.kill(pids[addr], signal.SIGKILL)
                client.gather = real_gather
                return real_gather(futures, *a, **k)

            client.gather = gather
        return real(self, nodes, *args, **kw)

    monkeypatch.setattr(parallel.DaskNodePool, "evaluate", evaluate)
    out = solve_bags(bags, **opts)
    assert killed, "no round of two nodes was evaluated"
    assert len(rounds) > killed["round"], "the kill came in the last round: the proof did not go on after it"
    assert serial["termination"] == "optimal"
    assert out["objective"] == pytest.approx(serial["objective"], rel=1e-7, abs=1e-10)
    assert abs(out["bound"] - serial["bound"]) <= 1e-7 * max(1.0, abs(serial["objective"]))
    assert out["termination"] == calm["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert out["objective"] == pytest.approx(calm["objective"], rel=1e-9, abs=1e-12)
    assert out["bound"] == pytest.approx(calm["bound"], rel=1e-9, abs=1e-12)
    assert out["nodes"] == calm["nodes"]
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7
    # the killed process is gone (the nanny started a new one in its place)
    with distributed.Client(cluster.scheduler_address) as c:
        c.wait_for_workers(2, timeout=60)
        assert killed["pid"] not in c.run(os.getpid).values()


def test_local_cluster_leaves_nothing_in_the_temporary_directory(tmp_path):
    """``scheduler=local``: the workers' scratch space (dask's ``dask-scratch-space``) is in a
    directory of its own, removed when the search ends."""
    import os
    import subprocess
    import sys

    code = ("from test_bnb import tiny\nfrom milopt.algorithms.bnb import solve_bags\n"
            "out = solve_bags(tiny(22, n_pos=4), mip_gap=1e-7, restarts=0, anneal=0, workers=2, scheduler='local')\n"
            "assert out['termination'] == 'optimal'\n")
    env = {**os.environ, "TMPDIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == []


def test_round_costs_are_measured_on_the_cluster(cluster):
    """``benchmarks/bnb_replay.py --dask-measure``: the round costs of the dask pool, measured
    with real nodes of a run (no-op round, fitted latency and per-node cost, bytes shipped)."""
    import json

    from benchmark_script import load_benchmark

    from milopt.metrics import standardize

    bench = load_benchmark("bnb_replay")
    engine, nodes = bench.collect_nodes(standardize(tiny(25, n_pos=8, n_neg=4, max_size=6)), n=12, restarts=1, anneal=0)
    assert len(nodes) >= 4 and all(nd.depth > 0 for nd in nodes)
    m = bench.measure_dask(engine, nodes, sizes=(2, 4), repeats=2, scheduler=cluster.scheduler_address)
    assert m["noop_round"] > 0 and m["latency"] >= 0 and m["per_node"] >= 0
    assert m["node_bytes"] > 0 and m["result_bytes"] > 0
    assert sorted(m["overhead_by_nodes"]) == [2, 4] and len(m["rounds"]) == 4
    assert all(r["wall"] >= r["work"] > 0 for r in m["rounds"])
    json.dumps(m)
