"""Anytime behaviour of the MI-SVM branch and bound: the starts by value per second, the
iterated local search interleaved with the search in resumable slices, the CPU trajectory."""
import math
import time

import numpy as np
import pytest
from milopt.algorithms.bnb import solve_bags
from milopt.algorithms.bnb import heuristics as H
from milopt.algorithms.bnb.search import MISVMBranchAndBound
from milopt.numerics import bag_costs
from mil_helpers import musk_like



def engine(bags, C=1.0):
    return MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, bag_costs(bags, C, "kent-yu"))


def test_kick_steps_resumed_in_slices_is_the_uninterrupted_search():
    """The iterated local search driven in many short slices (``kick_steps``, as the serial
    search interleaves it with nodes) visits the same kicks and ends at the same point as one
    uninterrupted ``kick_search``: a slice resumes the search, it does not restart it."""
    bags = musk_like(30, seed=2)
    eng = engine(bags)
    start = bags.X @ np.linalg.lstsq(bags.X, np.where(bags.instance_bag_y == 1, 1.0, -1.0), rcond=None)[0]
    whole, sliced = [], []
    ref = H.kick_search(eng, start, math.inf, seed=3, found=lambda v, c, b: whole.append(v))
    steps = H.kick_steps(eng, start, [math.inf], seed=3, found=lambda v, c, b: sliced.append(v))
    n = 0
    try:
        while True:
            last = next(steps)
            n += 1
    except StopIteration as stop:
        last = stop.value if stop.value is not None else last
    assert n > 1 and whole == sliced
    assert last[0] == ref[0]


def test_the_local_search_is_interleaved_with_nodes(monkeypatch):
    """Serial: ``kick_seconds`` of local search run in slices after the root, each followed by
    node evaluation, so the search evaluates nodes (and its bound grows) while the local search
    still has time left; every slice after the first resumes the running search."""
    calls = []
    real = H.interleaved_kick

    def spy(run):
        calls.append((run.s.nodes, run.s.early[2]))
        return real(run)

    monkeypatch.setattr(H, "interleaved_kick", spy)
    monkeypatch.setattr(H, "KICK_SLICE", 0.1)
    out = solve_bags(musk_like(60), C=1.0, kick_seconds=1.0, kick_patience=0, mip_gap=1e-9, time_limit=6.0)
    assert len(calls) >= 3, (calls, out["termination"], out["nodes"])
    assert calls[0][0] == 1                               # after the root
    assert calls[-1][0] > calls[0][0]                     # nodes between the slices
    assert calls[-1][1] <= len(calls)
    assert out["nodes"] >= calls[-1][0]


def test_the_local_search_stops_when_it_stops_paying(monkeypatch):
    """``kick_patience``: the interleaved slices and the periodic rounds stop after that many in
    a row without a better incumbent, the slices' remaining seconds unused; without patience
    (0) the same search runs every slice of ``kick_seconds`` and a round every time one is due."""
    from milopt.algorithms.bnb.search import Search

    bags = musk_like(60)
    monkeypatch.setattr(H, "KICK_SLICE", 0.01)
    calls = []
    real_slice, real_round = H.interleaved_kick, Search.kick_round
    monkeypatch.setattr(H, "interleaved_kick", lambda r: (calls.append("slice"), real_slice(r))[1])
    monkeypatch.setattr(Search, "kick_round", lambda r, *a, **k: (calls.append("round"), real_round(r, *a, **k))[1])

    def run(patience):
        calls.clear()
        out = solve_bags(bags, C=1.0, kick_seconds=30.0, kick_every=5, kick_patience=patience, mip_gap=1e-9,
                         node_limit=40, restarts=2, anneal=2)
        return list(calls), out

    seen, out = run(2)
    # more than two only while the incumbent still improves (each improvement re-arms them)
    assert 1 <= len(seen) <= 2 + len(out["trajectory"]), (seen, out["trajectory"])
    seen0, out0 = run(0)
    assert seen0.count("slice") >= 6 and len(seen0) > len(seen) + 3, (seen0, seen)
    assert out["nodes"] > 5 and out0["nodes"] > 5


def test_engine_alternation_starts_match_the_coordinate_descent():
    """The alternation starts run by the engine's node QP reach the same fixed points as
    ``misvm_alternate``'s coordinate descent from the same first selections (centroid, SIL,
    random): Φ within the coordinate descent's tolerance."""
    bags = musk_like(40, seed=1)
    eng = engine(bags)
    fast = H.alternation_starts(bags, None, 1.0, "kent-yu", 4, 0, math.inf, bags.X, eng=eng)
    slow = H.alternation_starts(bags, None, 1.0, "kent-yu", 4, 0, math.inf, bags.X)
    assert len(fast) == len(slow) == 4

    def phi(cb):
        raw = eng.Kv(cb[0])
        return eng.phi_raw(raw, float(cb[0] @ raw))[0]

    for f, s in zip(fast, slow):
        assert phi(f) == pytest.approx(phi(s), rel=2e-2)
    assert min(map(phi, fast)) <= min(map(phi, slow)) * (1 + 2e-2)


def test_cpu_trajectory_matches_the_wall_trajectory():
    """Every improving incumbent carries its CPU second beside its wall second: the same values
    in the same order, CPU seconds non-decreasing and never above the call's CPU time; the
    first start (an annealing run) is an incumbent before the starts end."""
    bags = musk_like(40, seed=3)
    c0 = time.process_time()
    out = solve_bags(bags, C=1.0, node_limit=20, kick_seconds=0.5)
    cpu = time.process_time() - c0
    tw, tc = out["trajectory"], out["trajectory_cpu"]
    assert len(tw) == len(tc) >= 2
    assert [v for _, v in tw] == [v for _, v in tc]
    t = [c for c, _ in tc]
    assert all(a <= b + 1e-9 for a, b in zip(t, t[1:])) and 0 <= t[0] and t[-1] <= cpu + 1e-6
    assert tw[0][0] < out["heuristic_seconds"]
