"""bnb's bounds over several bags (``branching=multibag``) and pseudo-cost branching
(``branching=pseudocost``) checked against brute force over the selections below each node."""
import itertools
import math

import numpy as np
import pytest
from test_bnb import brute_force, selection_qp, tiny

from milopt.algorithms.bnb import MISVMBranchAndBound, solve_bags
from milopt.algorithms.bnb.multibag import MultibagBranching, multibag_gains
from milopt.algorithms.bnb.pseudocost import PseudocostBranching
from milopt.models import misvm_bigm


class Below:
    """Brute force over the selections that pick their witnesses among ``allowed``
    ({positive bag: rows}), every selection's certified optimum computed once."""

    def __init__(self, bags, costs):
        self.bags, self.costs, self.memo = bags, costs, {}

    def __call__(self, allowed):
        best = math.inf
        for s in itertools.product(*[allowed[I] for I in sorted(allowed)]):
            if s not in self.memo:
                self.memo[s] = selection_qp(self.bags, s, self.costs)
            best = min(best, self.memo[s])
        return best


def allowed_rows(eng, ctx):
    """{positive bag: rows} of the selections below the node that the rule bounds: fixed and
    forced witnesses, and the remaining candidates of the unresolved bags."""
    allowed = {int(eng.pos_bags[k]): [int(r)] for k, r in enumerate(ctx.node.wit) if r >= 0}
    for k, I in enumerate(ctx.unres.tolist()):
        allowed[int(eng.pos_bags[I])] = ctx.cand[ctx.owner == k].tolist()
    return allowed


def test_multibag_bounds_never_exceed_brute_force(monkeypatch):
    """The node bound and every child bound of the multi-bag step stay below the brute-force
    optimum over the selections below that node (child), on instances that branch."""
    real = MultibagBranching.choose
    seen = {"nodes": 0, "children": 0, "lifted": 0}
    for seed in range(4):
        bags = tiny(seed + 310, n_pos=5, n_neg=4, d=3, max_size=4)
        _check_multibag(monkeypatch, real, seen, bags, misvm_bigm.bag_costs(bags, 1.0))
    assert seen["nodes"] > 0 and seen["children"] > 0
    # a positive bag of cost 0 constrains nothing: the step must not count it
    bags = tiny(312, n_pos=5, n_neg=4, d=3, max_size=4)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    costs[np.flatnonzero(bags.y == 1)[np.argmax(np.diff(bags.bag_ptr)[bags.y == 1])]] = 0.0
    _check_multibag(monkeypatch, real, seen, bags, costs)


def _check_multibag(monkeypatch, real, seen, bags, costs):
    below = Below(bags, costs)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, branching="multibag")

    def spy(self, eng_, ctx):
        assert not ctx.alpha[~ctx.active].any()       # the step's rows start at zero
        ch = real(self, eng_, ctx)
        allowed = allowed_rows(eng_, ctx)
        k = ch.bag
        node, child = multibag_gains(eng_, ctx, k, self.gram(eng_))
        if math.isfinite(node):
            assert node <= below(allowed) + 1e-7
            seen["nodes"] += 1
            seen["lifted"] += node > ctx.bound + 1e-9
        if child is not None:
            I = int(eng_.pos_bags[ctx.unres[k]])
            for r, lb in zip(ctx.cand[ctx.owner == k].tolist(), child.tolist()):
                assert lb <= below({**allowed, I: [r]}) + 1e-7
                seen["children"] += 1
        return ch

    monkeypatch.setattr(MultibagBranching, "choose", spy)
    out = eng.solve(mip_gap=1e-7, kick_every=0)
    ref = brute_force(bags, costs)
    assert out["termination"] == "optimal"
    assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


def test_multibag_lifts_the_lookahead_somewhere():
    """On a larger random instance the multi-bag bound exceeds the node's look-ahead bound at
    some nodes (the test of validity above would pass for a bound that never does)."""
    bags = tiny(8, n_pos=16, n_neg=6, d=4, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, branching="multibag")
    real = MultibagBranching.choose
    lifted = []

    def spy(self, eng_, ctx):
        ch = real(self, eng_, ctx)
        lifted.append(ch.bound > ctx.bound + 1e-9)
        return ch

    MultibagBranching.choose = spy
    try:
        eng.solve(node_limit=30, kick_every=0)
    finally:
        MultibagBranching.choose = real
    assert any(lifted)


@pytest.mark.parametrize("seed", range(3))
def test_multibag_and_pseudocost_equal_brute_force(seed):
    bags = tiny(seed + 320, n_pos=5, n_neg=4, d=3, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    ref = brute_force(bags, costs)
    for rule in ("multibag", "pseudocost"):
        out = solve_bags(bags, costs=costs, mip_gap=1e-7, restarts=0, anneal=0, branching=rule)
        assert out["termination"] == "optimal"
        assert out["objective"] == pytest.approx(ref, rel=1e-5, abs=1e-7)
        assert ref - 1e-5 * max(1.0, ref) <= out["bound"] <= ref + 1e-7


def test_pseudocost_learns_realised_gains():
    """The rule records the realised gain of evaluated children (each child found by its
    witness vector) and uses them in its estimates."""
    bags = tiny(341, n_pos=6, n_neg=4, d=3, max_size=5)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, branching="pseudocost")
    assert isinstance(eng.rule, PseudocostBranching)
    out = eng.solve(mip_gap=1e-7, kick_every=0)
    assert out["termination"] == "optimal"
    assert eng.rule.psi_cnt.sum() > 0 and eng.rule.ratio[1] > 0
    assert np.all(eng.rule.psi_sum >= 0)
