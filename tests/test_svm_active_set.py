"""The primal-dual active-set method of the grouped-slack SVM dual, against the interior point."""
import numpy as np
import pytest

from milopt.qp.svm_active_set import solve_group_dual_active_set
from milopt.qp.svm_ipm import solve_group_dual_ipm

from test_svm_ipm import dual_value, problem


def kkt_violation(V, y, g, caps, out):
    """Largest violation of the KKT conditions at the method's (α, ν) (λ recovered per group)."""
    a, nu = out["alpha"], out["b"]
    grad = y * (V @ (V.T @ (y * a))) - 1.0 + y * nu          # Qα − 1 + yν
    G = caps.size
    gsum = np.bincount(g, weights=a, minlength=G)
    # λ_g = −grad_i on the free multipliers of group g (0 when the group is unsaturated)
    lam = np.zeros(G)
    free = a > 1e-12
    np.maximum.at(lam, g[free], -grad[free])
    z = grad + lam[g]
    return max(float(-a.min(initial=0.0)), float(np.max(gsum - caps, initial=0.0)), abs(float(y @ a)),
               float(np.abs(z[free]).max(initial=0.0)), float(-z.min(initial=0.0)),
               float(np.abs(lam * (caps - gsum)).max(initial=0.0)))


def node_problem(seed, n, d, bag=4):
    """A branch-and-bound node's QP: one-instance groups of positive witnesses, negative bags of
    ``bag`` instances, and its parent: the same without one witness."""
    rng = np.random.default_rng(seed)
    n_pos = n // 4
    V = rng.standard_normal((n, d))
    V[:n_pos] += 0.5
    y = np.r_[np.ones(n_pos), -np.ones(n - n_pos)]
    g = np.r_[np.arange(n_pos), n_pos + np.arange(n - n_pos) // bag]
    caps = rng.uniform(0.5, 2.0, g.max() + 1)
    keep = np.ones(n, dtype=bool)
    keep[rng.integers(0, n_pos)] = False
    gi, ginv = np.unique(g[keep], return_inverse=True)
    parent = np.zeros(n)
    parent[keep] = solve_group_dual_ipm(V[keep] @ V[keep].T, y[keep], ginv, caps[gi], tol=1e-10)["alpha"]
    return V, y, g, caps, parent


@pytest.mark.parametrize("n,d", [(60, 20), (200, 40), (300, 100)])
def test_warm_started_optimum_matches_the_interior_point(n, d):
    """Warm-started from the parent's optimum, the method converges on most nodes (it may fail:
    the caller falls back to the interior point); where it says it converged, the KKT conditions
    hold and D equals the interior point's; where it failed, it says so."""
    converged = np.zeros(2, dtype=int)
    for seed in range(10):
        V, y, g, caps, parent = node_problem(seed, n, d)
        ref = solve_group_dual_ipm(V @ V.T, y, g, caps, tol=1e-11, max_iter=200)
        d_ref = dual_value(V, y, g, caps, ref["alpha"])
        outs = [solve_group_dual_active_set(y, g, caps, parent, K=V @ V.T),
                solve_group_dual_active_set(y, g, caps, parent, V=V)]
        for out in outs:
            if out["converged"]:
                assert kkt_violation(V, y, g, caps, out) <= 1e-8
                assert dual_value(V, y, g, caps, out["alpha"]) == pytest.approx(d_ref, rel=1e-8, abs=1e-9)
            else:
                assert kkt_violation(V, y, g, caps, out) > 1e-8
        converged += [out["converged"] for out in outs]
    assert converged.min() >= 7


def test_both_forms_agree():
    V, y, g, caps, a0 = node_problem(1, 120, 40)
    k = solve_group_dual_active_set(y, g, caps, a0, K=V @ V.T)
    v = solve_group_dual_active_set(y, g, caps, a0, V=V)
    assert k["converged"] and v["converged"] and k["iterations"] == v["iterations"]
    np.testing.assert_allclose(k["alpha"], v["alpha"], atol=1e-9)
    # the signed kernel given instead of K: the same iterates, bit for bit
    q = solve_group_dual_active_set(y, g, caps, a0, Q=(V @ V.T) * np.outer(y, y))
    assert q["iterations"] == k["iterations"] and np.array_equal(q["alpha"], k["alpha"])


def test_failure_is_reported_not_hidden():
    """A guess with no free multiplier makes the system singular (only ν is left): the method says
    so instead of returning a point; an iteration limit also ends it unconverged."""
    V, y, g, caps = problem(8, 80, 4)
    out = solve_group_dual_active_set(y, g, caps, np.zeros(80), V=V)
    assert not out["converged"]
    a0 = solve_group_dual_ipm(V @ V.T, y, g, caps * 3.0, tol=1e-8)["alpha"]
    out = solve_group_dual_active_set(y, g, caps, a0, V=V, max_iter=1)
    assert out["iterations"] == 1
    if not out["converged"]:
        assert kkt_violation(V, y, g, caps, out) > 1e-8


def test_needs_exactly_one_matrix():
    V, y, g, caps = problem(9, 20, 3)
    with pytest.raises(ValueError):
        solve_group_dual_active_set(y, g, caps, np.ones(20))
    with pytest.raises(ValueError):
        solve_group_dual_active_set(y, g, caps, np.ones(20), K=V @ V.T, V=V)
    with pytest.raises(ValueError):
        solve_group_dual_active_set(y, g, caps, np.ones(20), K=V @ V.T, Q=V @ V.T)


# ---------------------------------------------------------------------------------------------
# The compiled method against the NumPy method it replaced (kept here as the reference): the same
# iterates where the systems are regular, the same optimum where rounding decides the path.

def reference_active_set(y, g, c, a0, V, max_iter=200, zero=1e-6, max_free=None, max_release=5):
    """The primal-dual active-set method as NumPy calls on the signed features (the package's
    implementation before it was compiled; LAPACK's symmetric indefinite solver)."""
    from scipy.linalg.lapack import dsysv

    n, G = y.size, c.size
    U = V * y[:, None]
    qdiag = np.einsum("ij,ij->i", U, U)
    zero_set = a0 <= zero * c[g]
    sat = np.bincount(g, weights=a0, minlength=G) >= c * (1.0 - zero)
    seen, single, last = set(), False, None
    alpha, nu = np.zeros(n), 0.0
    tol_z = 1e-10 * max(1.0, float(qdiag.max(initial=0.0)) * float(c.max(initial=1.0)))

    def one_change(zs, st, vz, vs):
        zs, st = zs.copy(), st.copy()
        if vz.max(initial=0.0) >= vs.max(initial=0.0):
            zs[np.argmax(vz)] ^= True
        else:
            st[np.argmax(vs)] ^= True
        return zs, st

    for it in range(1, max_iter + 1):
        F, Sg = np.flatnonzero(~zero_set), np.flatnonzero(sat)
        f, s = F.size, Sg.size
        if max_free is not None and f > max_free:
            return alpha, nu, it, False
        m = f + 1 + s
        M, rhs = np.zeros((m, m)), np.zeros(m)
        M[:f, :f] = U[F] @ U[F].T
        M[:f, f] = M[f, :f] = y[F]
        rhs[:f] = 1.0
        for k, grp in enumerate(Sg):
            rows = np.flatnonzero(g[F] == grp)
            M[rows, f + 1 + k] = M[f + 1 + k, rows] = 1.0
            rhs[f + 1 + k] = c[grp]
        _, _, sol, info = dsysv(M, rhs, lower=1)
        if info != 0 or not np.all(np.isfinite(sol)):
            if single or last is None:
                return alpha, nu, it, False
            single = True
            zero_set, sat = one_change(*last)
            continue
        alpha = np.zeros(n)
        alpha[F], nu = sol[:f], float(sol[f])
        lam = np.zeros(G)
        lam[Sg] = sol[f + 1:]
        z = U @ (U[F].T @ alpha[F]) - 1.0 + y * nu + lam[g]
        gsum = np.bincount(g, weights=alpha, minlength=G)
        vz = np.where(zero_set, np.where(z < -tol_z, -z, 0.0), np.where(alpha < 0.0, -alpha * qdiag, 0.0))
        vs = np.where(sat, np.where(lam < -tol_z, -lam, 0.0), np.where(gsum > c * (1.0 + 1e-12), gsum - c, 0.0))
        if not (vz.any() or vs.any()):
            return alpha, nu, it, True
        last = (zero_set, sat, vz, vs)
        if not single:
            flip = vz > 0
            if max_release is not None:
                freed = np.flatnonzero(flip & zero_set)
                if freed.size > max_release:
                    flip[freed[np.argsort(-vz[freed], kind="stable")[max_release:]]] = False
            new_zero, new_sat = zero_set ^ flip, sat ^ (vs > 0)
            key = new_zero.tobytes() + new_sat.tobytes()
            if key not in seen:
                seen.add(key)
                zero_set, sat = new_zero, new_sat
                continue
            single = True
        zero_set, sat = one_change(zero_set, sat, vz, vs)
    return alpha, nu, max_iter, False


@pytest.mark.parametrize("n,d", [(120, 40), (300, 100)])
def test_compiled_method_follows_the_reference(n, d):
    """Regular node QPs (more features than free multipliers): the same iterations, converged
    flags and multipliers as the NumPy method, in all three forms (K, V, Q)."""
    for seed in range(12):
        V, y, g, caps, parent = node_problem(seed, n, d)
        a, nu, it, ok = reference_active_set(y, g, caps, parent, V)
        for kw in (dict(V=V), dict(K=V @ V.T), dict(Q=(V @ V.T) * np.outer(y, y))):
            out = solve_group_dual_active_set(y, g, caps, parent, **kw)
            assert (out["iterations"], out["converged"]) == (it, ok)
            np.testing.assert_allclose(out["alpha"], a, atol=1e-9)
            assert out["b"] == pytest.approx(nu, abs=1e-8)


def test_compiled_method_leaves_a_cycle_as_the_reference():
    """A warm start whose guesses cycle (seed 107): both methods detect the repeated guess, go on
    one change per iteration, and converge in the same iterations to the same point."""
    V, y, g, caps, parent = node_problem(107, 60, 20)
    a, nu, it, ok = reference_active_set(y, g, caps, parent, V)
    out = solve_group_dual_active_set(y, g, caps, parent, V=V)
    assert ok and out["converged"] and out["iterations"] == it == 9
    np.testing.assert_allclose(out["alpha"], a, atol=1e-9)


@pytest.mark.parametrize("seed", [62, 66, 84, 126, 132, 155])
def test_singular_guesses_reach_the_reference_optimum(seed):
    """Guesses that free more multipliers than Q's rank (all releases at once): the systems are
    singular, each method goes back to its last solvable guess, and rounding decides the path
    from there.  Where a method converges its point satisfies the KKT conditions, and where both
    do they agree."""
    n, d = (120, 40) if seed in (84, 126, 155) else (60, 20)
    V, y, g, caps, parent = node_problem(seed, n, d)
    a, nu, it, ok = reference_active_set(y, g, caps, parent, V, max_release=None)
    out = solve_group_dual_active_set(y, g, caps, parent, V=V, max_release=None)
    assert ok or out["converged"]
    if out["converged"]:
        assert kkt_violation(V, y, g, caps, out) <= 1e-8
    if ok and out["converged"]:
        np.testing.assert_allclose(out["alpha"], a, atol=1e-8)
        assert out["b"] == pytest.approx(nu, abs=1e-7)


def test_singular_first_guess_starts_again_unsaturated():
    """Guesses whose saturated caps and yᵀα = 0 over-determine the free multipliers (a singular
    system at the first iteration): the method starts again with no group saturated and
    converges, where the reference gives up at once."""
    rng = np.random.default_rng(12)
    V = rng.integers(-2, 3, (12, 6)).astype(float)
    y = np.r_[np.ones(4), -np.ones(8)]
    g = np.r_[0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7]
    caps = np.full(8, 1.0)
    a0 = np.zeros(12)
    a0[[0, 1, 4, 6]] = 1.0      # four groups at their caps, four free rows, and Σ y α = 0 besides
    _, _, it, ok = reference_active_set(y, g, caps, a0, V)
    assert (it, ok) == (1, False)
    out = solve_group_dual_active_set(y, g, caps, a0, V=V)
    assert out["converged"] and kkt_violation(V, y, g, caps, out) <= 1e-8


@pytest.mark.parametrize("seed", range(6))
def test_eliminated_kkt_system_is_the_full_one(seed):
    """The KKT system of a guess solved with the saturated groups substituted out gives the
    point (α_F, ν, λ_S) of the full system (Cholesky and Schur complement).  A guess whose free
    multipliers all lie in saturated groups whose caps contradict yᵀα = 0 (the full system is
    singular) is reported (−1) with α_F the solution without that row: the caps hold and the
    stationarity rows with ν = 0."""
    from milopt.qp._svm_kkt import _eliminated_solve
    from milopt.qp.svm_active_set import _guess_system, _kkt_solve, _number_guesses

    rng = np.random.default_rng(seed)
    n, d = 40, 60
    V = rng.standard_normal((n, d))
    y = np.r_[np.ones(10), -np.ones(n - 10)]
    g = np.r_[np.arange(10), 10 + np.arange(n - 10) // 3].astype(np.int64)
    c = rng.uniform(0.5, 2.0, g.max() + 1)
    Q = (V @ V.T) * np.outer(y, y)
    rows = np.arange(n)
    zero_set = rng.random(n) < 0.4
    sat = rng.random(c.size) < 0.5
    sat[np.unique(g[~zero_set])[:2]] = True        # at least two saturated groups with free rows
    sat &= np.isin(np.arange(c.size), g[~zero_set])
    free, slot, sg = np.empty(n, np.int64), np.empty(c.size, np.int64), np.empty(c.size, np.int64)
    f, s = _number_guesses(zero_set, sat, free, slot, sg)
    x = np.empty(f + 1 + s)
    assert _eliminated_solve(Q, rows, free[:f], sg[:s], slot, y, g, c, x) == 1
    M, ref = _guess_system(Q, np.zeros((1, 1)), True, rows, free[:f], sg[:s], slot, y, g, c)
    assert _kkt_solve(M, ref, f)
    np.testing.assert_allclose(x, ref, rtol=1e-8, atol=1e-8)
    # every free row in a saturated group
    sat2 = np.isin(np.arange(c.size), g[~zero_set])
    f, s = _number_guesses(zero_set, sat2, free, slot, sg)
    F, S = free[:f], sg[:s]
    x = np.empty(f + 1 + s)
    ys = np.array([y[F][g[F] == k][0] for k in S])       # each saturated group's label
    assert abs(ys @ c[S]) > 1e-9                         # yᵀα = Σ y_g c_g ≠ 0 whatever α_F
    assert _eliminated_solve(Q, rows, F, S, slot, y, g, c, x) == -1
    a, nu, lam = x[:f], x[f], x[f + 1:]
    assert nu == 0.0
    np.testing.assert_allclose(np.bincount(slot[g[F]], weights=a, minlength=s), c[S], atol=1e-10)
    np.testing.assert_allclose(Q[np.ix_(F, F)] @ a + lam[slot[g[F]]], 1.0, atol=1e-8)


@pytest.mark.parametrize("seed", range(8))
def test_guesses_whose_caps_contradict_the_balance_move_nu(seed):
    """A warm start whose nonzero multipliers all sit at their groups' caps, with caps that
    contradict yᵀα = 0 (two positive groups of cap 0.6 against one negative of 1.0): the full
    KKT system is singular; the method solves it without the balance row, moves ν by the ratio
    test and changes one guess, and converges to the interior point's optimum (RBF kernel)."""
    rng = np.random.default_rng(seed)
    n, d, n_pos, bag = 60, 8, 15, 3
    X = rng.standard_normal((n, d))
    X[:n_pos] += 0.7
    sq = (X ** 2).sum(1)
    K = np.exp(-(sq[:, None] + sq[None, :] - 2 * X @ X.T) / d)
    y = np.r_[np.ones(n_pos), -np.ones(n - n_pos)]
    g = np.r_[np.arange(n_pos), n_pos + np.arange(n - n_pos) // bag]
    caps = np.where(np.arange(g.max() + 1) < n_pos, 0.6, 1.0)
    a0 = np.zeros(n)
    a0[[0, 1]] = 0.6
    a0[n_pos] = 1.0
    out = solve_group_dual_active_set(y, g, caps, a0, K=K)
    ref = solve_group_dual_ipm(K, y, g, caps, tol=1e-11, max_iter=200)
    assert out["converged"]
    a = out["alpha"]
    assert a.min() >= -1e-12 and abs(y @ a) <= 1e-9
    assert np.all(np.bincount(g, weights=a) <= caps + 1e-9)

    def dual(al):
        return al.sum() - 0.5 * (al * y) @ K @ (al * y)

    assert dual(a) == pytest.approx(dual(ref["alpha"]), rel=1e-8, abs=1e-9)
