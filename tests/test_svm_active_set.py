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
