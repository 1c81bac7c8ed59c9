"""bnb's search as objects: options from the one declaration, node QPs, branching rules and
primal heuristics behind their protocols, and strong branching (``branching=strong``) checked
against brute force."""
import itertools
import math

import numpy as np
import pytest
from test_bnb import brute_force, node_optimum, selection_qp, tiny

from milopt.algorithms.bnb import MISVMBranchAndBound, solve_bags
from milopt.algorithms.bnb.branching import ScoreBranching
from milopt.algorithms.bnb.rules import RULES
from milopt.algorithms.bnb.options import PARAMS, SEARCH_KEYS, SearchOptions
from milopt.algorithms.bnb.qp import ActiveSetQP, CoordinateDescentQP, FallbackQP, InteriorPointQP
from milopt.algorithms.bnb.strong import StrongBranching
from milopt.errors import InvalidParameterError
from milopt.models import misvm_bigm


def below(bags, costs, fixed):
    """Brute force over the selections that pick every row of ``fixed`` ({positive bag: row})."""
    ptr = bags.bag_ptr
    pos = np.flatnonzero(bags.y == 1)
    choices = [[fixed[I]] if I in fixed else range(ptr[I], ptr[I + 1]) for I in pos]
    return min(selection_qp(bags, s, costs) for s in itertools.product(*choices))


@pytest.mark.parametrize("seed", range(4))
def test_strong_branching_equals_brute_force(seed):
    bags = tiny(seed + 110, n_pos=5, n_neg=4, d=3, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, branching="strong", strong_bags=2)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


def test_strong_bounds_never_exceed_brute_force(monkeypatch):
    """Every child bound and node bound strong branching returns stays below the brute-force
    optimum over the selections below that child (node), and the rule really solves QPs."""
    bags = tiny(121, n_pos=5, n_neg=4, d=3, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, branching="strong", strong_bags=3)
    real = StrongBranching.choose
    checked = {"children": 0, "nodes": 0}

    def spy(self, eng_, ctx):
        ch = real(self, eng_, ctx)
        fixed = {int(eng_.pos_bags[k]): int(r) for k, r in enumerate(ctx.node.wit) if r >= 0}
        fixed.update({int(eng_.bag_of[r]): int(r) for r in ctx.forced})
        if math.isfinite(ch.bound):
            assert ch.bound <= below(bags, costs, fixed) + 1e-7
            checked["nodes"] += 1
        if ch.child_bounds is not None:
            rows = ctx.cand[ctx.owner == ch.bag]
            for r, lb in zip(rows.tolist(), ch.child_bounds.tolist()):
                assert lb <= below(bags, costs, {**fixed, int(eng_.bag_of[r]): r}) + 1e-7
                checked["children"] += 1
        return ch

    monkeypatch.setattr(StrongBranching, "choose", spy)
    out = eng.solve(mip_gap=1e-7, kick_every=0)
    assert out["termination"] == "optimal" and out["strong_qps"] > 0
    assert checked["children"] > 0 and checked["nodes"] > 0
    assert out["objective"] == pytest.approx(brute_force(bags, costs), rel=1e-5, abs=1e-7)


def test_a_branching_rule_is_one_class():
    """A rule written as one class (here: the first branchable bag) plugs into the engine and
    gives the brute-force proof; every rule registered by name does too."""
    class FirstBag(ScoreBranching):
        calls = 0

        def score(self, ctx):
            FirstBag.calls += 1
            return -np.arange(ctx.unres.size, dtype=float)

    bags = tiny(131, n_pos=4, d=3)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs)
    eng.rule = FirstBag()
    out = eng.solve(mip_gap=1e-7, kick_every=0)
    assert FirstBag.calls > 0
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7
    assert set(RULES) == set(PARAMS["branching"].choices)
    for name in RULES:
        out = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, branching=name).solve(mip_gap=1e-7)
        assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)


def test_search_options_come_from_the_declaration():
    o = SearchOptions()
    assert {k: getattr(o, k) for k in SEARCH_KEYS} == {k: PARAMS[k].default for k in SEARCH_KEYS}
    with pytest.raises(InvalidParameterError, match="node_limit"):
        SearchOptions(node_limit=0)
    with pytest.raises(InvalidParameterError, match="unknown key"):
        SearchOptions(node_limt=3)
    with pytest.raises(AttributeError):
        o.node_limit = 3
    assert o.replace(mip_gap=1e-7).mip_gap == 1e-7 and o.mip_gap == 1e-4
    bags = tiny(5, n_pos=4, max_size=4)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, misvm_bigm.bag_costs(bags, 1.0))
    a = eng.solve(SearchOptions(node_limit=2, kick_every=0))
    b = eng.solve(node_limit=2, kick_every=0)
    assert a["nodes"] == b["nodes"] <= 2 and a["bound"] == b["bound"]
    with pytest.raises(InvalidParameterError, match="mip_gap"):
        eng.solve(mip_gap=-1)


def test_node_qps_behind_the_protocol():
    """Each node QP returns exactly dual-feasible multipliers whose D is the node's optimum
    (within its tolerance); the chain falls back when a solver fails."""
    bags = tiny(141, n_pos=5, n_neg=4, d=3, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, qp="ipm")
    active = eng.base_active.copy()
    active[eng.ptr[eng.pos_bags]] = True            # the first instance of every positive bag
    parent = active.copy()
    parent[eng.ptr[eng.pos_bags[0]]] = False        # the warm start: a parent without one witness
    a0 = eng._node_qp(np.zeros(eng.n), parent, math.inf, 1e-9)[0]
    assert a0.any()
    opt = node_optimum(eng, active)

    class Fails:
        def solve(self, *a, **k):
            return None

    for qp in (ActiveSetQP(), InteriorPointQP(), CoordinateDescentQP(), FallbackQP(Fails(), InteriorPointQP())):
        alpha = qp.solve(eng, a0, active, math.inf, 1e-9)[0]
        assert np.all(alpha >= 0) and np.all(alpha[~active] == 0)
        assert abs(alpha @ eng.y) <= 1e-12 * max(1.0, alpha.sum())
        assert np.all(np.bincount(eng.bag_of, weights=alpha, minlength=eng.B) <= eng.caps * (1 + 1e-12))
        D = eng.dual_objective(alpha)[0]
        assert D <= opt + 1e-9 and D >= opt - 1e-5 * max(1.0, opt)
    assert FallbackQP(Fails()).solve(eng, a0, active, math.inf, 1e-9) is None
