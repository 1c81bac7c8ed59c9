"""benchmarks/bnb_replay.py: the master/worker replay of a node trace, on tiny hand-made trees,
and one recorded trace."""
import pytest
from benchmark_script import load_benchmark


@pytest.fixture(scope="module")
def rp():
    return load_benchmark("bnb_replay")


def node(parent, bound, ev, master=0.0, incumbent=10.0, depth=0):
    return {"parent": parent, "bound": bound, "depth": depth, "eval": ev, "master": master,
            "incumbent": incumbent if ev is not None else None, "seen": 10.0 if ev is not None else None}


def tree(starts=0.5):
    # root (1 s) -> a (2 s), b (3 s); a -> c (4 s); b's child d never evaluated (closed)
    nodes = [node(-1, -1e9, 1.0), node(0, 1.0, 2.0, depth=1), node(0, 2.0, 3.0, depth=1),
             node(1, 3.0, 4.0, depth=2), node(2, 20.0, None, depth=2)]
    return {"nodes": nodes, "starts_seconds": starts, "mip_gap": 0.0, "objective": 10.0}


def test_serial_replay_is_the_sum_of_the_work(rp):
    r = rp.replay(tree(), 1)
    assert r["wall"] == pytest.approx(0.5 + 1 + 2 + 3 + 4)
    assert r["evaluated"] == 4 and r["extra"] == 0 and r["rounds"] == 4


def test_two_workers_follow_the_rounds(rp):
    """Rounds: {root}; {a, b} on two workers (3 s); {c} (4 s): 0.5 + 1 + 3 + 4, plus the
    latency of each of the three rounds and the master's seconds of every node popped."""
    tr = tree()
    for n in tr["nodes"]:
        n["master"] = 0.1
    r = rp.replay(tr, 2, latency=0.05, per_node=0.01)
    assert r["rounds"] == 3
    assert r["wall"] == pytest.approx(0.5 + 1 + 3 + 4 + 3 * 0.05 + 4 * 0.1 + 4 * 0.01)   # d: never queued
    assert r["split"]["workers"] == pytest.approx(8.0)
    assert r["busy"] == pytest.approx(10.0 / (2 * 8.0))


def test_contiguous_chunks_and_incumbent_pruning(rp):
    """One worker per contiguous chunk (as the dask pool cuts a round); a better incumbent
    after a node closes the queued nodes whose bound reaches it; a node the serial run never
    evaluated costs the mean evaluation time and counts as extra."""
    nodes = [node(-1, -1e9, 1.0, incumbent=10.0)] + [node(0, float(b), e, depth=1) for b, e in
                                                     [(1, 1.0), (2, 1.0), (3, 4.0), (4, None)]]
    tr = {"nodes": nodes, "starts_seconds": 0.0, "mip_gap": 0.0, "objective": 10.0}
    r = rp.replay(tr, 2)                    # round 2: [a, b] | [c, d]: max(2, 4 + mean 1.75)
    assert r["rounds"] == 2 and r["extra"] == 1
    assert r["wall"] == pytest.approx(1.0 + 4.0 + 1.75)
    nodes[0]["incumbent"] = 2.5             # the root's booking finds 2.5: c and d are closed
    r = rp.replay(tr, 2)
    assert r["rounds"] == 2 and r["extra"] == 0 and r["evaluated"] == 3
    assert r["wall"] == pytest.approx(1.0 + 1.0)


def test_recorded_trace_replays_to_the_serial_run(rp):
    """A recorded run: every evaluated node is in the tree under its parent, the serial replay
    does the recorded work, and more workers never make the worker time longer."""
    from milopt.data import load
    from milopt.metrics import standardize

    b = load("gen:digits?bags=14&seed=5")
    tr = rp.record(standardize(b), mip_gap=1e-6, kick_seconds=0)
    ev = [n for n in tr["nodes"] if n["eval"] is not None]
    assert tr["termination"] == "optimal" and len(ev) == tr["evaluated"] >= 2
    assert tr["nodes"][0]["parent"] == -1 and all(0 <= n["parent"] < len(tr["nodes"]) for n in tr["nodes"][1:])
    s = rp.replay(tr, 1)
    assert s["evaluated"] == len(ev)
    assert s["wall"] == pytest.approx(tr["starts_seconds"] + sum(n["eval"] + n["master"] for n in ev), rel=1e-9)
    w = [rp.replay(tr, k)["split"]["workers"] for k in (1, 2, 8)]
    assert w[0] >= w[1] - 1e-12 >= w[2] - 2e-12
