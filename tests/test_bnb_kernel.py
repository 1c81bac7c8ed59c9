"""The Gram-matrix path of the branch and bound's look-ahead (``bounds.NewtonLookahead`` with a
kernel): the same values as a direct evaluation of each projected trial point, as the
feature-space form for the linear kernel, and never above the optimum of the child (or of the
node with both candidates) for an RBF kernel."""
import math

import numpy as np
import pytest

from milopt.algorithms.bnb import MISVMBranchAndBound
from milopt.algorithms.bnb.bounds import (JOINT_DET, NEWTON_STEPS, NewtonLookahead, free_set_newton,
                                          pair_step_gains, project_dual)
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
                if not (det > JOINT_DET * max(ki * kj, 1e-300) and ti > 0 and tj > 0):
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


# ---------------------------------------------------------------- the compiled look-ahead
# NumPy references of the compiled loops (bounds._bounds_jit): the pair steps, the projected
# trial points in the Gram and the feature form, the joint steps' lengths.  Each compiled value
# must equal its reference to 1e-12 relative.

def ref_pair_gains(cand, alpha, active, y, F, caps, groups, gptr, diag, krows):
    slack = caps - np.add.reduceat(alpha, gptr[:-1])
    low = np.flatnonzero(active & (((y < 0) & (slack[groups] > 1e-12 * caps[groups])) | ((y > 0) & (alpha > 0))))
    if low.size == 0 or cand.size == 0:
        return np.zeros(cand.size)
    tmax = np.minimum(np.where(y[low] < 0, slack[groups[low]], alpha[low])[None, :], caps[groups[cand]][:, None])
    diff = F[cand][:, None] - F[low][None, :]
    a = np.maximum(diag[cand][:, None] + diag[low][None, :] - 2.0 * krows(cand, low), 1e-12)
    t = np.clip(diff / a, 0.0, tmax)
    return np.maximum((t * diff - 0.5 * a * t * t).max(axis=1), 0.0)


def ref_duals(look, K, X, I, TI, J=None, TJ=None):
    """D at the projected points α_E + T_I d_I (+ T_J d_J), one per column: clip, groups scaled
    to their caps, the larger side scaled, then Σα − ½‖·‖² by K (rows E and the candidates) or X."""
    I = np.asarray(I)
    TI = np.minimum(TI, look.cap_c[I])
    A = look.aE[:, None] + look.dE[:, I] * TI
    if J is not None:
        TJ = np.minimum(TJ, look.cap_c[J])
        A = A + look.dE[:, J] * TJ
    A = np.maximum(A, 0.0)
    starts, ends = look.gstart[:-1], look.gstart[1:]
    gs = np.add.reduceat(A, starts, axis=0)
    cap = look.capg[:, None]
    A = A * np.repeat(np.where(gs > cap, cap / np.maximum(gs, 1e-300), 1.0), ends - starts, axis=0)
    pos = look.yE > 0
    side = [(look.yc[I] > 0, TI)] + ([] if J is None else [(look.yc[J] > 0, TJ)])
    sp = A[pos].sum(axis=0) + sum(np.where(p, t, 0.0) for p, t in side)
    sn = A[~pos].sum(axis=0) + sum(np.where(p, 0.0, t) for p, t in side)
    fp = np.where(sp > sn, sn / np.maximum(sp, 1e-300), 1.0)
    fn = np.where(sn > sp, sp / np.maximum(sn, 1e-300), 1.0)
    A = np.where(pos[:, None], A * fp, A * fn)
    total = A.sum(axis=0)
    rows = [look.idx[:, None].repeat(I.size, axis=1)]
    vals = [A * look.yE[:, None]]
    for cols, (p, t) in zip([I] + ([] if J is None else [J]), side):
        t = t * np.where(p, fp, fn)
        total = total + t
        rows.append(look.cand[cols][None, :])
        vals.append((t * look.yc[cols])[None, :])
    R, Vv = np.concatenate(rows), np.concatenate(vals)
    if X is None:
        q = np.array([Vv[:, p] @ K[np.ix_(R[:, p], R[:, p])] @ Vv[:, p] for p in range(I.size)])
    else:
        Z = np.einsum("rp,rpd->dp", Vv, X[R])
        q = np.einsum("dp,dp->p", Z, Z)
    D = total - 0.5 * q
    return np.where(np.isfinite(D), D, -np.inf)


def ref_joint_steps(look, kij, I, J):
    ki, kj, li, lj = look.kappa[I], look.kappa[J], look.lin[I], look.lin[J]
    det = ki * kj - kij * kij
    with np.errstate(all="ignore"):
        ti, tj = (kj * li - kij * lj) / det, (ki * lj - kij * li) / det
    joint = (det > JOINT_DET * np.maximum(ki * kj, 1e-300)) & (ti > 0) & (tj > 0)
    return np.where(joint, ti, look.tstar[I]), np.where(joint, tj, 0.0)


def musk_engines():
    from mil_helpers import musk_like

    bags = musk_like(16, seed=3)
    costs = misvm_bigm.bag_costs(bags, 1.0)
    K = kb.gram_matrix(bags.X, None, "rbf", "auto", 2, 1.0)
    return [(MISVMBranchAndBound(None, bags.bag_ptr, bags.y, costs, K=K, qp="ipm"), None),
            (MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, qp="ipm"), bags.X)]


@pytest.mark.parametrize("case", range(4))
def test_compiled_lookahead_equals_the_numpy_reference(case):
    """Pair steps, curvatures, single and joint Newton steps (Gram and feature forms, both Newton
    matrices) on random nodes of RBF / linear engines (small random bags and a MUSK1 subset):
    every compiled value equals the NumPy evaluation to 1e-12 relative, and the free-set matrix's
    inverse is the inverse."""
    if case < 2:
        bags = bags_of(case + 60, n_pos=7, n_neg=5, d=5, max_size=7)
        costs = misvm_bigm.bag_costs(bags, 1.0)
        K = kb.gram_matrix(bags.X, None, "rbf", 0.3, 2, 1.0)
        engines = [(MISVMBranchAndBound(None, bags.bag_ptr, bags.y, costs, K=K, qp="ipm"), None),
                   (MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, qp="ipm"), bags.X)]
    else:
        engines = musk_engines()
    rng = np.random.default_rng(case)
    close = dict(rtol=1e-12, atol=1e-12)
    checked = 0
    for eng, X in engines:
        K = eng.K
        for active, cand, alpha, F, D, newton in random_nodes(eng, rng, count=3):
            args = (cand, alpha, active, eng.y, F, eng.caps, eng.bag_of, eng.smo.gptr, eng.diag, eng.Krows)
            np.testing.assert_allclose(pair_step_gains(*args), ref_pair_gains(*args), **close)
            idx = np.flatnonzero(active)
            f, fsolve = free_set_newton(alpha, idx, eng.y, eng.bag_of, eng.caps, eng.Krows, X=X)
            if fsolve is not None:
                # the matrix of the docstring, built directly: M⁻¹M = I
                yf, gf = eng.y[f], eng.bag_of[f]
                M = K[np.ix_(f, f)] * np.outer(yf, yf)
                scale = max(float(np.mean(np.diag(M))), 1e-12)
                gsum = np.bincount(eng.bag_of[idx], weights=alpha[idx], minlength=eng.caps.size)
                sat = gsum >= eng.caps * (1.0 - 1e-9)
                M += 1e4 * scale * ((gf[:, None] == gf[None, :]) & sat[gf][:, None]) + 1e-2 * scale * np.eye(f.size)
                np.testing.assert_allclose(fsolve(M), np.eye(f.size), atol=1e-7)
            for rows, Mi in ((idx, newton), (f, fsolve)):
                if Mi is None:
                    continue
                look = NewtonLookahead(cand, alpha, rows, eng.y, F, eng.caps, eng.bag_of, eng.Krows, eng.diag, Mi, X=X)
                if not look.ok:
                    continue
                Xf = None if look.gram else X
                # the directions (M⁻¹ applied to Q_Ec and to y separately) and their curvatures dᵀQd
                KEc = K[np.ix_(look.idx, look.cand)]
                R, v = Mi(KEc * np.outer(look.yE, look.yc)), Mi(look.yE)
                dE = -R - np.outer(v, (look.yc - look.yE @ R) / (look.yE @ v))
                np.testing.assert_allclose(look.dE, dE, rtol=0, atol=1e-9 * np.abs(dE).max())
                U = look.dE * look.yE[:, None]
                kappa = (np.einsum("em,em->m", U, K[np.ix_(look.idx, look.idx)] @ U)
                         + 2 * look.yc * np.einsum("em,em->m", KEc, U) + np.diag(K)[look.cand])
                np.testing.assert_allclose(look.kappa, kappa, rtol=1e-9, atol=1e-12)
                steps = np.asarray(NEWTON_STEPS)
                ref = np.max([ref_duals(look, K, Xf, np.arange(look.m), c * look.tstar) for c in steps], axis=0)
                np.testing.assert_allclose(look.single(), ref, **close)
                bag = eng.bag_of[cand]
                I, J = np.nonzero(bag[:, None] < bag[None, :])
                if X is None or look.gram:
                    kij = np.einsum("ep,ep->p", U[:, I], K[np.ix_(look.idx, look.idx)] @ U[:, J])
                    kij += look.yc[J] * np.einsum("ep,ep->p", U[:, I], K[np.ix_(look.idx, look.cand[J])])
                    kij += look.yc[I] * np.einsum("ep,ep->p", K[np.ix_(look.idx, look.cand[I])], U[:, J])
                    kij += look.yc[I] * look.yc[J] * K[look.cand[I], look.cand[J]]
                else:
                    Zd = X[look.idx].T @ U + (X[look.cand] * look.yc[:, None]).T
                    kij = np.einsum("dp,dp->p", Zd[:, I], Zd[:, J])
                ti, tj = ref_joint_steps(look, kij, I, J)
                ref = np.max([ref_duals(look, K, Xf, I, c * ti, J, c * tj) for c in steps], axis=0)
                np.testing.assert_allclose(look.pairs(I, J), ref, **close)
                checked += 1
    assert checked >= 4
