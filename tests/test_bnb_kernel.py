"""The Gram-matrix path of the branch and bound's look-ahead (``bounds.NewtonLookahead`` with a
kernel): the same values as a direct evaluation of each projected trial point, as the
feature-space form for the linear kernel, and never above the optimum of the child (or of the
node with both candidates) for an RBF kernel."""
import math

import numpy as np
import pytest

from milopt.algorithms.bnb import MISVMBranchAndBound
from milopt.algorithms.bnb.bounds import NEWTON_STEPS, NewtonLookahead, free_set_newton, project_dual
from milopt.data import Bags
from milopt.models import misvm_bigm
from milopt.models import misvm_kernel_bigm as kb
from mil_helpers import node_optimum


def bags_of(seed, n_pos=6, n_neg=4, d=4, max_size=5):
    rng = np.random.default_rng(seed)
    arrs, y = [], []
    for _ in range(n_pos):
        arrs.append(rng.normal(size=(rng.integers(2, max_size), d)) + rng.normal(0, 1.5, size=d))
        y.append(1)
    for _ in range(n_neg):
        arrs.append(rng.normal(size=(rng.integers(1, max_size), d)) - 0.5)
        y.append(0)
    return Bags.from_arrays(arrs, y)


def random_nodes(eng, rng, count=4):
    """(active, cand, alpha, F, D, newton) of random nodes: some positive bags resolved."""
    for _ in range(count):
        wit = eng.wit0.copy()
        for k, I in enumerate(eng.pos_bags):
            if wit[k] < 0 and rng.random() < 0.5:
                wit[k] = rng.integers(eng.ptr[I], eng.ptr[I + 1])
        active = eng.base_active.copy()
        active[wit[wit >= 0]] = True
        alpha, F, _, newton = eng._node_qp(np.zeros(eng.n), active, math.inf, 1e-9)
        unres = eng.pos_bags[wit < 0]
        if unres.size < 2 or newton is None:
            continue
        cand = np.concatenate([np.arange(eng.ptr[I], eng.ptr[I + 1]) for I in unres])
        yield active, cand, alpha, F, eng.dual_objective(alpha)[0], newton


def lookaheads(eng, cand, alpha, F, active, newton, X=None):
    """The look-ahead with the interior point's Newton matrix and with the free-set one."""
    idx = np.flatnonzero(active)
    out = [NewtonLookahead(cand, alpha, idx, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, newton, X=X)]
    f, fsolve = free_set_newton(alpha, idx, eng.y, eng.bag_of, eng.caps, eng.Krows, X=X)
    if fsolve is not None:
        out.append(NewtonLookahead(cand, alpha, f, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, fsolve,
                                   X=X))
    return [look for look in out if look.ok]


def direct_dual(eng, look, alpha, parts):
    """D at the projected point α_E + Σ T_p d_p (α outside the look-ahead's rows zero), formed as
    a full vector, projected by ``project_dual`` and evaluated with the whole Gram matrix."""
    a = np.zeros(eng.n)
    a[look.idx] = alpha[look.idx]
    for p, t in parts:
        t = min(t, look.cap_c[p])
        a[look.idx] += t * look.dE[:, p]
        a[look.cand[p]] = t
    a = project_dual(a, eng.y, eng.bag_of, eng.caps)
    v = eng.y * a
    return a.sum() - 0.5 * v @ (eng.K @ v)


def direction(eng, look, p):
    u = np.zeros(eng.n)
    u[look.idx] = look.dE[:, p]
    u[look.cand[p]] = 1.0
    return eng.y * u


def rbf_engine(seed, gamma=0.5):
    bags = bags_of(seed)
    K = kb.gram_matrix(bags.X, None, "rbf", gamma, 2, 1.0)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    return MISVMBranchAndBound(None, bags.bag_ptr, bags.y, costs, K=K, qp="ipm")


@pytest.mark.parametrize("seed", range(4))
def test_gram_lookahead_equals_the_direct_projected_duals(seed):
    """Single and joint steps on an RBF Gram matrix: every value is the dual objective of the
    projected trial point computed from scratch (full vector, ``project_dual``, (yα)ᵀK(yα)),
    best over the step lengths; the curvatures are dᵀQd."""
    eng = rbf_engine(seed)
    rng = np.random.default_rng(seed)
    checked = 0
    for active, cand, alpha, F, D, newton in random_nodes(eng, rng):
        for look in lookaheads(eng, cand, alpha, F, active, newton):
            U = np.array([direction(eng, look, p) for p in range(look.m)])
            np.testing.assert_allclose(look.kappa, np.einsum("pn,pn->p", U, U @ eng.K), rtol=1e-9, atol=1e-12)
            ref = [max(direct_dual(eng, look, alpha, [(p, c * look.tstar[p])]) for c in NEWTON_STEPS)
                   for p in range(look.m)]
            np.testing.assert_allclose(look.single(), ref, rtol=1e-9, atol=1e-10)
            bag = eng.bag_of[cand]
            I, J = np.nonzero(bag[:, None] < bag[None, :])
            Dp = look.pairs(I, J)
            for i, j, v in zip(I, J, Dp):
                kij = U[i] @ eng.K @ U[j]
                ki, kj, li, lj = look.kappa[i], look.kappa[j], look.lin[i], look.lin[j]
                det = ki * kj - kij * kij
                ti, tj = (kj * li - kij * lj) / det, (ki * lj - kij * li) / det
                if not (det > 1e-12 * max(ki * kj, 1e-300) and ti > 0 and tj > 0):
                    ti, tj = look.tstar[i], 0.0
                want = max(direct_dual(eng, look, alpha, [(i, c * ti), (j, c * tj)]) for c in NEWTON_STEPS)
                assert v == pytest.approx(want, rel=1e-9, abs=1e-10)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("seed", range(3))
def test_gram_and_feature_forms_agree(seed):
    """With the linear kernel's Gram matrix the kernel path gives the feature-space values
    (single and joint steps, both Newton matrices)."""
    bags = bags_of(seed + 20)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, qp="ipm")
    rng = np.random.default_rng(seed)
    checked = 0
    for active, cand, alpha, F, D, newton in random_nodes(eng, rng):
        gram = lookaheads(eng, cand, alpha, F, active, newton)
        feat = lookaheads(eng, cand, alpha, F, active, newton, X=bags.X)
        assert len(gram) == len(feat)
        bag = eng.bag_of[cand]
        I, J = np.nonzero(bag[:, None] < bag[None, :])
        for g, x in zip(gram, feat):
            np.testing.assert_allclose(g.single(), x.single(), rtol=1e-7, atol=1e-9)
            np.testing.assert_allclose(g.pairs(I, J), x.pairs(I, J), rtol=1e-7, atol=1e-9)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("seed", range(3))
def test_rbf_lookahead_never_exceeds_the_child_optimum(seed):
    """Weak duality on the RBF path: a single step stays below the optimum of the child with
    that candidate, a joint step below the optimum of the node with both; some step gains."""
    eng = rbf_engine(seed + 40)
    rng = np.random.default_rng(seed)
    gained = 0.0
    for active, cand, alpha, F, D, newton in random_nodes(eng, rng, count=3):
        for look in lookaheads(eng, cand, alpha, F, active, newton):
            for i, v in zip(cand, look.single()):
                child = active.copy()
                child[i] = True
                opt = node_optimum(eng, child)
                assert v <= opt + 1e-7 * max(1.0, opt)
                gained += max(v - D, 0.0)
            bag = eng.bag_of[cand]
            I, J = np.nonzero(bag[:, None] < bag[None, :])
            for i, j, v in zip(cand[I], cand[J], look.pairs(I, J)):
                both = active.copy()
                both[[i, j]] = True
                opt = node_optimum(eng, both)
                assert v <= opt + 1e-7 * max(1.0, opt)
    assert gained > 0
