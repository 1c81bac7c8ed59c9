"""The MI-SVM branch and bound (``--solver bnb``) against brute force, SCIP and the heuristics."""
import itertools
import json
import math
import subprocess
import sys
import time

import numpy as np
import pyomo.environ as pe
import pytest
from milopt.models import misvm_bigm

from milopt.algorithms.mi_heuristics import misvm_alternate
from milopt.data import Bags
from milopt.errors import UnsupportedProblemError
from milopt.solvers import SolutionStatus, Termination, installed, solve
from milopt.algorithms.bnb import MISVMBranchAndBound, mi_objective_best_b, solve_bags
from mil_helpers import musk_like, node_optimum


def tiny(seed, n_pos=3, n_neg=3, d=3, max_size=4):
    rng = np.random.default_rng(seed)
    arrs, y = [], []
    for _ in range(n_pos):
        arrs.append(rng.normal(size=(rng.integers(1, max_size), d)) + rng.normal(0, 1.5, size=d))
        y.append(1)
    for _ in range(n_neg):
        arrs.append(rng.normal(size=(rng.integers(1, max_size), d)) - 0.5)
        y.append(0)
    return Bags.from_arrays(arrs, y)


def selection_qp(bags, witnesses, costs, K=None):
    """Optimum of the convex MI-SVM QP for one witness per positive bag (linear kernel, or the
    Gram matrix ``K``), certified: the dual by the interior-point method, the primal value of its
    solution with the best intercept (scanned over all breakpoints), and their gap checked to be
    negligible.  (HiGHS's active-set QP was seen to cycle on some of these tiny degenerate QPs.)"""
    from milopt.qp.svm_ipm import solve_group_dual_ipm

    bi = bags.bag_index
    rows = np.array([i for i in range(bags.n_instances) if bags.y[bi[i]] == 0] + list(witnesses), dtype=int)
    rows = rows[costs[bi[rows]] > 0]        # a bag of cost 0 never constrains (w, b)
    if rows.size == 0 or np.unique(bags.y[bi[rows]]).size < 2:
        return 0.0                           # one class only: w = 0 and a large |b| cost nothing
    y = np.where(bags.y[bi[rows]] == 1, 1.0, -1.0)
    g, ginv = np.unique(bi[rows], return_inverse=True)
    Ke = bags.X[rows] @ bags.X[rows].T if K is None else K[np.ix_(rows, rows)]
    r = solve_group_dual_ipm(Ke, y, ginv, costs[g], tol=1e-12)
    v = r["alpha"] * y
    raw = Ke @ v
    best = np.inf
    for b in np.r_[y - raw, 0.0]:
        loss = np.maximum(0.0, 1.0 - y * (raw + b))
        xi = np.zeros(g.size)
        np.maximum.at(xi, ginv, loss)
        best = min(best, 0.5 * v @ raw + costs[g] @ xi)
    assert best - r["dual"] <= 1e-7 * max(1.0, best)
    return best


def brute_force(bags, costs, K=None):
    """Minimum over every witness selection of the certified SVM optimum (linear or Gram ``K``)."""
    ptr = bags.bag_ptr
    pos = np.flatnonzero(bags.y == 1)
    choices = [range(ptr[I], ptr[I + 1]) for I in pos]
    return min(selection_qp(bags, s, costs, K) for s in itertools.product(*choices))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("qp", ["auto", "ipm", "smo"])
def test_optimum_equals_brute_force(seed, qp):
    bags = tiny(seed)
    cw = ["kent-yu", "balanced", "none", "kent-yu"][seed]
    costs = misvm_bigm.bag_costs(bags, 1.0, cw)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, C=1.0, class_weight=cw, costs=costs, mip_gap=1e-7, restarts=0, qp=qp)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert out["bound"] <= ref + 1e-7
    assert out["bound"] >= ref - 1e-5 * max(1.0, ref)
    # the returned point really has the returned MI-SVM objective
    assert misvm_bigm.objective_value(bags, out["w"], out["b"], 1.0, cw) == pytest.approx(out["objective"], rel=1e-9)


@pytest.mark.parametrize("seed", [5, 6])
def test_bound_is_valid_at_every_stage(seed):
    """Stopped after 1, 2, 3, ... nodes, the bound never exceeds the true optimum."""
    bags = tiny(seed, n_pos=4, max_size=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    last = -math.inf
    for k in range(1, 12):
        out = eng.solve(node_limit=k, mip_gap=1e-8)
        assert out["bound"] <= ref + 1e-7
        assert out["objective"] >= ref - 1e-7
        assert out["bound"] >= last - 1e-9          # more nodes never weaken the bound
        last = out["bound"]
        if out["termination"] == "optimal":
            break
    assert out["termination"] == "optimal"


def test_best_intercept_is_exact():
    rng = np.random.default_rng(0)
    bags = tiny(1)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    w = rng.normal(size=bags.n_features)
    val, b = mi_objective_best_b(bags.X @ w, costs, bags.y == 1, bags.bag_ptr, float(w @ w))
    grid = np.linspace(b - 5, b + 5, 2001)
    vals = [misvm_bigm.objective_value(bags, w, bb) for bb in grid]
    assert val == pytest.approx(misvm_bigm.objective_value(bags, w, b), rel=1e-12)
    assert val <= min(vals) + 1e-12


@pytest.mark.skipif("scip" not in installed(), reason="needs pyscipopt")
@pytest.mark.parametrize("seed", [0, 3])
def test_against_scip_and_heuristics(seed):
    bags = tiny(seed + 10, n_pos=4, n_neg=4, d=3)
    m = misvm_bigm.build(bags, C=1.0)
    scip = solve(m, "scip", time_limit=120, mip_gap=1e-9)
    m2 = misvm_bigm.build(bags, C=1.0)
    res = solve(m2, "bnb", time_limit=120, mip_gap=1e-7)
    assert res.status == SolutionStatus.OPTIMAL
    assert res.objective <= scip.objective + 1e-6 * max(1.0, scip.objective)
    assert res.bound >= scip.bound - 1e-6 * max(1.0, abs(scip.bound))
    # SCIP's reported objective may sit below the optimum by its feasibility tolerance; the true
    # MI-SVM objective of its point may not
    sol = misvm_bigm.decode(m)
    assert res.bound <= misvm_bigm.objective_value(bags, sol["w"], sol["b"]) + 1e-9
    if scip.status == SolutionStatus.OPTIMAL:
        assert res.objective == pytest.approx(scip.objective, rel=1e-5, abs=1e-7)
    # the loaded point is the model's solution: the objective is the big-M model's objective
    assert pe.value(m2.obj) == pytest.approx(res.objective, rel=1e-9)
    for r in range(3):
        h = misvm_alternate(None, bags, C=1.0, X=bags.X, init="random" if r else "centroid", random_state=r)
        w = bags.X.T @ (h["alpha"] * h["y"])
        assert res.objective <= misvm_bigm.objective_value(bags, w, h["b"]) + 1e-7
    hist = res.history
    assert hist and hist[-1]["lower"] <= hist[-1]["upper"] + 1e-12
    assert all(h1["lower"] >= h0["lower"] - 1e-9 for h0, h1 in zip(hist, hist[1:]))


@pytest.mark.parametrize("case", ["one_positive_bag", "singletons", "duplicates", "no_negative_bags",
                                  "no_positive_bags"])
def test_degenerate_inputs(case):
    rng = np.random.default_rng(3)
    if case == "one_positive_bag":
        arrs = [rng.normal(size=(4, 2)) + 1] + [rng.normal(size=(3, 2)) - 1 for _ in range(3)]
        y = [1, 0, 0, 0]
    elif case == "singletons":
        arrs = [rng.normal(size=(1, 2)) + s for s in (1, 1, -1, -1, 0.5)]
        y = [1, 1, 0, 0, 0]
    elif case == "duplicates":
        p = rng.normal(size=(1, 2))
        arrs = [np.vstack([p, p, p]), np.vstack([p + 1, p + 1]), rng.normal(size=(2, 2)) - 1, np.vstack([p, p])]
        y = [1, 1, 0, 0]
    elif case == "no_negative_bags":
        arrs = [rng.normal(size=(3, 2)) for _ in range(3)]
        y = [1, 1, 1]
    else:
        arrs = [rng.normal(size=(3, 2)) for _ in range(3)]
        y = [0, 0, 0]
    bags = Bags.from_arrays(arrs, y)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    m = misvm_bigm.build(bags, C=1.0)
    res = solve(m, "bnb", time_limit=120, mip_gap=1e-7)
    assert res.status == SolutionStatus.OPTIMAL
    if (bags.y == 1).any():
        ref = brute_force(bags, costs)
    else:
        ref = selection_qp(bags, [], costs)
    assert res.objective == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert res.bound <= ref + 1e-7



def test_time_limit_returns_a_status():
    bags = musk_like(80)          # not proved in 2 s (musk_like(40) can be, on a fast machine)
    m = misvm_bigm.build(bags, C=1.0)
    res = solve(m, "bnb", time_limit=2.0)
    assert res.termination == Termination.TIME_LIMIT
    assert res.status == SolutionStatus.FEASIBLE
    assert res.wall_time < 2.0 + 1.5
    assert res.bound is not None and res.bound <= res.objective
    assert 0 < res.gap < 1


def test_interruption_returns_bounds():
    bags = tiny(7, n_pos=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)

    def stop(scores):
        raise KeyboardInterrupt

    out = eng.solve(heuristic=stop)
    assert out["termination"] == "interrupted"
    assert out["w"] is not None and out["bound"] <= out["objective"]


def test_refuses_other_formulations():
    bags = tiny(0)
    m = misvm_bigm.build(bags, C=1.0, norm="l1")
    with pytest.raises(UnsupportedProblemError, match="bnb"):
        solve(m, "bnb")
    from milopt.models import get

    other = get("misvm-dual-qp").build(bags)
    with pytest.raises(UnsupportedProblemError, match="misvm-bigm"):
        solve(other, "bnb")


def _cli(*args):
    p = subprocess.run([sys.executable, "-m", "milopt.cli", *args], capture_output=True, text=True, timeout=300,
                       check=False)
    return p.returncode, p.stdout, p.stderr


def test_cli_solve_and_fit():
    code, out, err = _cli("solve", "misvm-bigm", "--data", "gen:digits?bags=12&seed=1", "--solver", "bnb",
                          "--time-limit", "60", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["solver"] == "bnb" and r["status"] == "optimal" and r["termination"] == "optimal"
    assert r["bound"] <= r["objective"] + 1e-9 and r["nodes"] >= 1 and r["history"]
    assert 0 <= r["extra"]["closed_nodes"] <= r["nodes"]
    # node QPs warm-started from the parent by the active-set method (not the root, nor children
    # of a node whose effective set held one class only: their parent's multipliers are all zero)
    assert 1 <= r["extra"]["active_set_solves"] + r["extra"]["active_set_fallbacks"] <= r["nodes"]
    code, out, err = _cli("solve", "misvm-bigm", "--data", "gen:digits?bags=12&seed=1", "--solver", "bnb",
                          "--set", "norm=l1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "bnb" in err
    code, out, err = _cli("fit", "misvm-miqp", "--data", "gen:digits?bags=12&seed=1", "--set", "solver=bnb",
                          "--set", "time_limit=60", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["train"]["termination"] == "optimal"


def test_cli_options_verbose_and_bad_option():
    """Declared bnb options reach the backend through --set (typed), --verbose writes the MIP
    log to stderr while stdout stays one JSON document, a bad value is one line (exit 2)."""
    code, out, err = _cli("solve", "misvm-bigm", "--data", "gen:digits?bags=12&seed=1", "--solver", "bnb",
                          "--set", "node_limit=3", "restarts=0", "anneal=1", "log_every=0.01", "--verbose",
                          "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["nodes"] <= 3 and r["extra"]["options"]["node_limit"] == 3
    assert r["extra"]["options"]["restarts"] == 0 and r["extra"]["options"]["anneal"] == 1
    assert "incumbent" in err and "bound" in err and "gap" in err
    code, out, err = _cli("solve", "misvm-bigm", "--data", "gen:digits?bags=12&seed=1", "--solver", "bnb",
                          "--set", "node_limit=abc")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "node_limit" in err
    # an unknown key: one line that lists the backend's options beside the formulation's keys
    code, out, err = _cli("solve", "misvm-bigm", "--data", "gen:digits?bags=12&seed=1", "--solver", "bnb",
                          "--set", "mip_gap=1e-9")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out
    assert "mip_gap" in err and "bnb options:" in err and "node_limit" in err and "big_m" in err


@pytest.mark.parametrize("seed", [0, 2])
def test_parallel_equals_brute_force(seed):
    """Node relaxations evaluated in two worker processes: same optimum and a valid bound."""
    bags = tiny(seed + 20, n_pos=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, workers=2, batch=3)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


def test_parallel_with_the_starts_local_search_in_a_worker(monkeypatch):
    """With two workers the starts' iterated local search runs in a worker beside the search
    (``first_kick``): same optimum as brute force, a valid bound."""
    from milopt.algorithms.bnb.parallel import ForkNodePool

    real, lengths = ForkNodePool.kick, []

    def kick(self, scores, seconds, seed, kick):
        lengths.append(seconds)
        return real(self, scores, seconds, seed, kick)

    monkeypatch.setattr(ForkNodePool, "kick", kick)
    bags = tiny(45, n_pos=5, n_neg=4, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=2, anneal=0, kick_seconds=0.5, workers=2, batch=3)
    assert lengths and 0 < lengths[0] <= 0.5      # the first round: the starts' local search
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_kernel_equals_brute_force(kernel):
    """Kernel MI-SVM (Gram matrix given): the optimum is the minimum over all selections of the
    kernel SVM, and the returned coefficients have the returned MI-SVM objective."""
    bags = tiny(31, n_pos=3, n_neg=3, d=3)
    X = bags.X
    if kernel == "rbf":
        sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        K = np.exp(-0.5 * sq)
    else:
        K = (X @ X.T / 3 + 1.0) ** 2
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs, K)
    out = solve_bags(bags, costs=costs, kernel=K, mip_gap=1e-7)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert out["bound"] <= ref + 1e-7
    raw = K @ out["coef"]
    val, _ = mi_objective_best_b(raw, costs, bags.y == 1, bags.bag_ptr, float(out["coef"] @ raw))
    assert val == pytest.approx(out["objective"], rel=1e-9)


def test_primal_heuristics_give_true_objectives():
    """Annealing, alternation and swap starts are scored by the true MI-SVM objective: the
    returned point's objective (with its own intercept) is the reported one, and never below
    the proven optimum."""
    bags = tiny(41, n_pos=4, n_neg=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, node_limit=1, mip_gap=1e-7)
    assert out["objective"] >= ref - 1e-7
    assert misvm_bigm.objective_value(bags, out["w"], out["b"], 1.0) == pytest.approx(out["objective"], rel=1e-9)


def test_interruption_in_the_starts(monkeypatch):
    """Ctrl-C during the starting heuristics: the starts found so far, the root's bound, and
    termination interrupted (unless that already proves optimality)."""
    import milopt.algorithms.bnb.heuristics as H

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(H, "annealing_starts", stop)
    bags = tiny(8, n_pos=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7)
    assert out["nodes"] <= 1
    assert out["termination"] in ("interrupted", "optimal")
    assert out["bound"] <= ref + 1e-7 <= out["objective"] + 2e-7


def test_driver_returns_interrupted_result(monkeypatch):
    """Ctrl-C in the search: the driver returns bnb's incumbent and bound (status feasible,
    termination interrupted), loaded into the model."""
    from milopt.algorithms.bnb import search

    calls = {"n": 0}
    orig = search.MISVMBranchAndBound.evaluate

    def evaluate(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return orig(self, *a, **k)

    monkeypatch.setattr(search.MISVMBranchAndBound, "evaluate", evaluate)
    bags = tiny(9, n_pos=5, n_neg=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    m = misvm_bigm.build(bags, C=1.0)
    res = solve(m, "bnb", mip_gap=1e-9, options={"restarts": 0, "anneal": 0})
    assert res.termination == Termination.INTERRUPTED and res.status == SolutionStatus.FEASIBLE
    assert res.extra["interrupted_with_solution"] is True
    assert res.bound <= ref + 1e-7 <= res.objective + 2e-7
    assert pe.value(m.obj) == pytest.approx(res.objective, rel=1e-9)


@pytest.mark.parametrize("seed", [1, 4])
def test_product_branching_equals_brute_force(seed):
    bags = tiny(seed + 50, n_pos=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, branching="product")
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


def test_incumbent_trajectory_is_reported_in_the_order_found():
    """bnb records every improving incumbent (for the bench's primal integrals): times
    non-decreasing, values strictly decreasing, the last one the returned objective."""
    from milopt.data import load
    from milopt.models import formulation
    from milopt.numerics import standardize
    from milopt.solvers import solve

    bags = standardize(load("gen:subset?data=musk1&bags=12&seed=0"))
    m = formulation("misvm-bigm").build(bags)
    r = solve(m, "bnb", time_limit=60)
    tr = r.extra["trajectory"]
    assert tr, "no incumbent recorded"
    ts, vs = [t for t, _ in tr], [v for _, v in tr]
    assert all(a <= b for a, b in zip(ts, ts[1:])) and all(a > b for a, b in zip(vs, vs[1:]))
    assert vs[-1] == pytest.approx(r.extra["mi_objective"], rel=1e-12)
    assert ts[-1] <= r.wall_time


@pytest.mark.parametrize("seed", range(3))
def test_lowrank_node_qp_equals_brute_force(seed):
    """The interior-point node QPs in the low-rank (Woodbury) form give the same proof."""
    bags = tiny(seed + 20, n_pos=3, d=2)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, qp="ipm")
    eng.lowrank = True
    out = eng.solve(mip_gap=1e-7)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dense", [True, False])
def test_active_set_node_qp_equals_brute_force(seed, dense):
    """The node QPs by the warm-started active-set method (on the kernel block, or on the
    features when the kernel is not formed) give the same proof, and they are really used."""
    bags = tiny(seed + 30, n_pos=4, d=3)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    if not dense:
        eng.dense, eng.K = False, None
    out = eng.solve(mip_gap=1e-7)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7
    assert out["nodes"] == 1 or out["active_set_solves"] > 0


def test_active_set_failures_fall_back_to_the_interior_point(monkeypatch):
    """Node QPs on which the active-set method fails (here: every other one, by an iteration
    limit of 1) are solved by the interior point instead; the proof is unchanged."""
    import milopt.qp.svm_active_set as active

    real = active._active_set_rows
    calls = []

    def flaky(*args):
        calls.append(1)
        args = list(args)
        args[8] = 1 if len(calls) % 2 else 50          # max_iter
        return real(*args)

    monkeypatch.setattr(active, "_active_set_rows", flaky)
    bags = tiny(33, n_pos=4, d=3)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs).solve(mip_gap=1e-7)
    assert out["active_set_fallbacks"] > 0 and out["active_set_solves"] > 0
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


@pytest.mark.parametrize("seed", [42, 43, 44])
def test_kick_search_escapes_local_optima_with_true_objectives(seed):
    """The iterated local search returns a point whose reported objective is its true MI-SVM
    objective, never below the brute-force optimum and never above its start's alternation."""
    from milopt.algorithms.bnb.heuristics import alternate_selection, kick_search
    from milopt.segments import segment_argmax

    bags = tiny(seed, n_pos=5, n_neg=4, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    scores = np.random.default_rng(seed).normal(size=bags.n_instances)
    start = alternate_selection(eng, segment_argmax(scores, eng.ptr)[eng.pos_bags], math.inf)
    seen = []
    val, coef, b = kick_search(eng, scores, time.perf_counter() + 5.0, seed=seed,
                               found=lambda v, c, bb: seen.append(v))
    assert ref - 1e-7 <= val <= start[0] + 1e-9
    # every improvement was reported when found, the last one being the result
    assert all(a > b_ for a, b_ in zip(seen, seen[1:]))
    assert not seen or seen[-1] == val
    w = bags.X.T @ coef
    assert misvm_bigm.objective_value(bags, w, b, 1.0) == pytest.approx(val, rel=1e-9)


def test_kick_round_in_a_worker_returns_a_true_objective():
    """A round of the iterated local search started in a worker of the pool (the parallel
    search's rounds) comes back with a point whose reported objective is its true MI-SVM
    objective; the pool goes on evaluating nodes meanwhile."""
    from milopt.algorithms.bnb.nodes import Node
    from milopt.algorithms.bnb.parallel import NodePool

    bags = tiny(43, n_pos=5, n_neg=4, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    pool = NodePool(eng, 2)
    try:
        pending = pool.kick(np.random.default_rng(0).normal(size=bags.n_instances), 1.0, 0, 3)
        root = Node(-math.inf, eng.wit0.copy(), np.zeros(eng.n), 0, -1)
        assert pool.evaluate([root], math.inf, 1e-9, math.inf)[0]["bound"] <= ref + 1e-7
        val, coef, b = pending.get()
        assert pending.ready()
    finally:
        pool.close()
    assert val >= ref - 1e-7
    assert misvm_bigm.objective_value(bags, bags.X.T @ coef, b, 1.0) == pytest.approx(val, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_newton_gains_never_exceed_the_child_optimum(seed):
    """The look-ahead bound of every child (pair step and projected Newton step) stays below the
    child's certified optimum, and a joint step along two candidates below the optimum of the
    node with both; both steps gain somewhere."""
    from milopt.algorithms.bnb.bounds import free_set_newton, newton_step_dual, pair_step_gains

    rng = np.random.default_rng(seed)
    bags = tiny(seed + 70, n_pos=6, n_neg=4, d=4, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, qp="ipm")
    total_pair = total_newton = total_free = 0.0
    for _ in range(4):
        # a random node: some multi-instance positive bags resolved, the others not
        wit = eng.wit0.copy()
        for k, I in enumerate(eng.pos_bags):
            if wit[k] < 0 and rng.random() < 0.5:
                wit[k] = rng.integers(eng.ptr[I], eng.ptr[I + 1])
        active = eng.base_active.copy()
        active[wit[wit >= 0]] = True
        alpha, F, _, newton = eng._node_qp(np.zeros(eng.n), active, math.inf, 1e-9)
        D = eng.dual_objective(alpha)[0]
        unres = eng.pos_bags[wit < 0]
        if unres.size == 0 or newton is None:
            continue
        cand = np.concatenate([np.arange(eng.ptr[I], eng.ptr[I + 1]) for I in unres])
        gp = pair_step_gains(cand, alpha, active, eng.y, F, eng.caps, eng.bag_of, eng.smo.gptr, eng.diag,
                             eng.Krows)
        idx = np.flatnonzero(active)
        gn = newton_step_dual(cand, alpha, idx, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, newton) - D
        # the feature-space form of the linear kernel gives the same values
        gx = newton_step_dual(cand, alpha, idx, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, newton,
                              X=bags.X) - D
        assert gx == pytest.approx(gn, rel=1e-7, abs=1e-9)
        # the Newton matrix built on the free multipliers (coordinate-descent node QPs)
        f, fsolve = free_set_newton(alpha, idx, eng.y, eng.bag_of, eng.caps, eng.Krows, X=bags.X)
        gf = (newton_step_dual(cand, alpha, f, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, fsolve, X=bags.X)
              - D if fsolve is not None else np.zeros(cand.size))
        for i, a, b, c in zip(cand, gp, gn, gf):
            child = active.copy()
            child[i] = True
            opt = node_optimum(eng, child)
            assert D + max(a, b, c) <= opt + 1e-7 * max(1.0, opt)
        # joint steps along two candidates of different bags: below the grandchild's optimum
        from milopt.algorithms.bnb.bounds import NewtonLookahead

        look = NewtonLookahead(cand, alpha, idx, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, newton,
                               X=bags.X)
        bag = eng.bag_of[cand]
        I, J = np.nonzero(bag[:, None] < bag[None, :])
        Dp = look.pairs(I, J)
        for i, j, v in zip(cand[I], cand[J], Dp):
            both = active.copy()
            both[[i, j]] = True
            opt = node_optimum(eng, both)
            assert v <= opt + 1e-7 * max(1.0, opt)
        total_pair += gp.sum()
        total_newton += np.maximum(gn, 0).sum()
        total_free += np.maximum(gf, 0).sum()
    assert total_pair > 0
    assert total_newton > 0
    assert total_free > 0 or total_newton < 0.1   # where the IPM's step gains, so does the free-set one


@pytest.mark.parametrize("seed", range(3))
def test_reduced_cost_fixing_keeps_the_proof(seed):
    """With the optimum known from the start (so that candidates are ruled out early and bags
    with one candidate left are resolved in the children), the search still proves the
    brute-force optimum, and the fixing really happens."""
    from milopt.algorithms.bnb import search

    bags = tiny(seed + 90, n_pos=5, n_neg=4, d=3, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    seen = {"out": 0, "forced": 0}
    orig = search.MISVMBranchAndBound._branch

    def spy(self, *a, **k):
        r = orig(self, *a, **k)
        if r["action"] == "branch":
            seen["out"] += r["out"] is not None
            seen["forced"] += len(r["forced_bags"])
        return r

    search.MISVMBranchAndBound._branch = spy
    try:
        out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=4, anneal=0)
    finally:
        search.MISVMBranchAndBound._branch = orig
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7
    assert seen["out"] > 0


def test_the_starts_schedule_does_not_depend_on_the_time_limit(monkeypatch):
    """Anytime under any limit: the starting heuristics follow one schedule whatever the time
    limit, cut only at ``start_share`` (90 %) of it.  Every phase receives that cut as its
    deadline (a share of 15 % used to cut them), and a run limited to five times the starts'
    own duration (no iterated local search, so their work is fixed) finds the incumbents of
    an unlimited run, in the same order."""
    from milopt.algorithms.bnb import heuristics

    bags = musk_like(40, seed=1)
    opts = dict(C=1.0, node_limit=1, kick_seconds=0)
    solve_bags(musk_like(12), **opts)                    # imports and first calls out of the timing
    free = solve_bags(bags, **opts)
    h = free["heuristic_seconds"]
    deadlines = []
    real = heuristics.swap_search

    def spy(eng, scores, deadline, *a, **k):
        deadlines.append(deadline - t0[0])
        return real(eng, scores, deadline, *a, **k)

    monkeypatch.setattr(heuristics, "swap_search", spy)
    t0 = [time.perf_counter()]
    limit = max(2.0, 5.0 * h)
    limited = solve_bags(bags, time_limit=limit, **opts)

    def starts(out):
        return [v for t, v in out["trajectory"] if t <= out["heuristic_seconds"] + 1e-9]

    assert deadlines and deadlines[0] >= 0.9 * limit - 0.5     # the starts' swap phase
    assert len(starts(free)) >= 2
    assert starts(limited) == pytest.approx(starts(free), rel=1e-12)


def test_the_root_is_evaluated_when_the_starts_use_the_whole_limit():
    """A limit shorter than the starts: they are cut at ``start_share`` of it, and the search
    still evaluates the root, so the result carries a bound."""
    bags = musk_like(40)
    out = solve_bags(bags, C=1.0, time_limit=0.3, start_share=1.0)
    assert out["termination"] == "time_limit"
    assert out["nodes"] >= 1 and math.isfinite(out["bound"]) and out["bound"] <= out["objective"]


def test_c_path_is_certified_and_warm_started():
    """Along a path of C, each warm-started from the previous optimum, every optimum equals brute
    force at that C, and neighbouring optima obey v(C1) <= v(C2) <= (C2 / C1) v(C1)."""
    from milopt.algorithms.bnb import solve_c_path

    bags = tiny(130, n_pos=4, n_neg=3, max_size=4)
    Cs = [0.1, 1.0, 10.0]
    path = solve_c_path(bags, Cs, mip_gap=1e-7, restarts=1, anneal=0, kick_seconds=0)
    vals = []
    for C, r in zip(Cs, path):
        ref = brute_force(bags, misvm_bigm.bag_costs(bags, C))
        assert r["C"] == C and r["termination"] == "optimal"
        assert r["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
        vals.append(ref)
    for (c1, v1), (c2, v2) in zip(zip(Cs, vals), zip(Cs[1:], vals[1:])):
        assert v1 <= v2 + 1e-9 and v2 <= c2 / c1 * v1 + 1e-9


def test_verbose_progress_lines_are_kept_in_the_result_log(capsys):
    bags = tiny(3, n_pos=4, n_neg=4)
    m = misvm_bigm.build(bags, C=1.0)
    res = solve(m, "bnb", time_limit=60, verbose=True, options={"log_every": 0.01, "restarts": 0, "anneal": 1})
    err = capsys.readouterr().err
    assert "incumbent" in res.log and "bound" in res.log and "gap" in res.log
    assert res.log.strip() and res.log.strip() in err   # the same lines, also on stderr
    quiet = solve(misvm_bigm.build(bags, C=1.0), "bnb", time_limit=60)
    assert quiet.log == ""


def test_an_interrupt_during_the_starts_leaves_the_search_a_short_budget(monkeypatch):
    """Ctrl-C / SIGTERM while the starting heuristics run: what they found is kept, the search
    gets INTERRUPTED_SECONDS for the root (serial, no swap search, no pool), the result is
    ``interrupted`` -- so the command prints it well before the signal watchdog ends it."""
    from milopt.algorithms.bnb import api, heuristics

    bags = musk_like(40, seed=3)
    costs = misvm_bigm.bag_costs(bags, 1.0)

    def interrupted(*a, **k):
        raise KeyboardInterrupt
        yield  # pragma: no cover

    swaps, seen = [], {}
    real_swap, real_solve = heuristics.swap_search, MISVMBranchAndBound.solve

    def slow_swap(*a, **k):
        swaps.append(1)
        time.sleep(3.0)
        return real_swap(*a, **k)

    def spy(self, options, starts, **kw):
        seen.update(options.as_dict(), start_swap=starts.swap, heuristic=kw.get("heuristic"))
        return real_solve(self, options, starts, **kw)

    monkeypatch.setattr(heuristics, "annealing_starts", interrupted)
    monkeypatch.setattr(heuristics, "swap_search", slow_swap)
    monkeypatch.setattr(MISVMBranchAndBound, "solve", spy)
    w0 = np.zeros(bags.n_features)
    t = time.perf_counter()
    out = solve_bags(bags, costs=costs, time_limit=600, restarts=2, anneal=2, workers=2,
                     starts=[(w0, -1.0)])
    elapsed = time.perf_counter() - t
    assert out["termination"] == "interrupted" and out["w"] is not None
    assert out["bound"] <= out["objective"] + 1e-9 and out["nodes"] <= 1
    assert not swaps and seen["time_limit"] <= api.INTERRUPTED_SECONDS
    assert seen["workers"] == 1 and not seen["scheduler"] and not seen["start_swap"]
    assert elapsed < 60
