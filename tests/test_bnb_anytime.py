"""Anytime behaviour of the MI-SVM branch and bound: the starts by value per second, the
iterated local search interleaved with the search in resumable slices, the CPU trajectory."""
import math
import sys
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
    """``kick_patience``: the interleaved local search ends after that many kicks in a row
    without a better incumbent (the rest of ``kick_seconds`` unused) and the periodic rounds
    after ``ROUND_PATIENCE`` fruitless ones; without patience (0) the same search kicks on."""
    from milopt.algorithms.bnb import search as S

    bags = musk_like(60)
    monkeypatch.setattr(H, "KICK_SLICE", 0.01)
    kicks, rounds = [], []
    real_steps, real_round = H.kick_steps, S.Search.kick_round

    def steps(*a, **k):
        inside = sys._getframe(1).f_code.co_name == "interleaved_kick"   # not a periodic round

        def gen():
            for v in real_steps(*a, **k):
                if inside:
                    kicks.append(v[0])
                yield v
        return gen()

    monkeypatch.setattr(H, "kick_steps", steps)
    monkeypatch.setattr(S.Search, "kick_round", lambda r, *a, **k: (rounds.append(r.s.nodes), real_round(r, *a, **k))[1])

    def run(patience):
        kicks.clear()
        rounds.clear()
        out = solve_bags(bags, C=1.0, kick_seconds=30.0, kick_every=4, kick_patience=patience, mip_gap=1e-9,
                         node_limit=40, restarts=2, anneal=2, heuristic_share=1.0)
        return len(kicks), len(rounds), out

    k5, r5, out = run(5)
    better = len(out["trajectory"])       # each better incumbent may restart the count
    assert 1 <= k5 <= 5 * (better + 1), (k5, out["trajectory"])
    assert r5 <= S.ROUND_PATIENCE + better, r5
    k0, r0, out0 = run(0)
    assert k0 > k5 + 10 and r0 > r5, (k0, k5, r0, r5)


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
