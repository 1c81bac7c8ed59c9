"""Tests of the sparse variational GP MIL (VGPMIL / G-VGPMIL) algorithm and estimator."""
from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone

import milopt
import milopt.metrics
import milopt.solvers
from milopt.algorithms.vgpmil import (expected_max_others, fit_vgpmil, make_gsm, rbf_kernel, theta_from_psi,
                                      theta_gamma, theta_pg)
from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.estimators.registry import get_method
from milopt.estimators.vgpmil import VGPMILClassifier


# ----------------------------------------------------------------------------- θ(c)
def _fd_theta(log_psi, c, h=1e-5):
    """-ψ'(c)/(cψ(c)) = -(d/dc log ψ)(c) / c by central differences."""
    return -(log_psi(c + h) - log_psi(c - h)) / (2 * h) / c


@pytest.mark.parametrize("c", [1e-3, 0.1, 0.7, 1.0, 2.5, 5.0, 12.0, 40.0])
def test_theta_pg_matches_finite_differences(c):
    log_psi = lambda t: np.log(1.0 / np.cosh(t / 2.0))  # noqa: E731  ψ(c) = sech(c/2)
    assert theta_pg(c) == pytest.approx(_fd_theta(log_psi, c), rel=1e-6, abs=1e-10)
    # the GSM object agrees with its own log ψ
    g = make_gsm("pg")
    assert g.theta(c) == pytest.approx(_fd_theta(g.log_psi, c), rel=1e-6, abs=1e-10)


def test_theta_pg_limit_at_zero():
    assert theta_pg(0.0) == pytest.approx(0.25)
    assert np.isfinite(theta_pg(np.array([0.0, 1e-12, 1e-5]))).all()
    assert theta_pg(1e-5) == pytest.approx(0.25, abs=1e-10)


@pytest.mark.parametrize("alpha,beta", [(1.0, 2.5), (1.0, 1.0), (0.5, 0.1), (3.0, 7.0)])
@pytest.mark.parametrize("c", [1e-3, 0.5, 3.0, 10.0, 50.0])
def test_theta_gamma_matches_finite_differences_and_is_not_clipped(alpha, beta, c):
    log_psi = lambda t: -alpha * np.log1p(t * t / (2 * beta))  # noqa: E731
    assert theta_gamma(c, alpha, beta) == pytest.approx(_fd_theta(log_psi, c), rel=1e-6)
    # the real function beyond |c| = 3 (the public code clipped c to 3)
    assert theta_gamma(c, alpha, beta) == pytest.approx(alpha / (beta + c * c / 2))


def test_theta_from_custom_psi():
    psi = lambda t: 1.0 / np.cosh(t / 2.0)  # noqa: E731
    dpsi = lambda t: -0.5 * np.tanh(t / 2.0) / np.cosh(t / 2.0)  # noqa: E731
    c = np.array([0.3, 1.0, 4.0])
    np.testing.assert_allclose(theta_from_psi(psi, dpsi, c), theta_pg(c), rtol=1e-12)
    g = make_gsm((psi, dpsi))
    np.testing.assert_allclose(g.theta(c), theta_pg(c), rtol=1e-12)


def test_bad_gsm_parameters():
    with pytest.raises(InvalidParameterError, match="alpha"):
        make_gsm("gamma", alpha=-1.0)
    with pytest.raises(InvalidParameterError, match="theta"):
        make_gsm("student")


# ----------------------------------------------------------------------------- E[max y_{b∖n}]
def _brute_force_emax(pi, sizes):
    out = []
    start = 0
    for s in sizes:
        p = pi[start:start + s]
        for n in range(s):
            others = [p[j] for j in range(s) if j != n]
            e = 0.0
            for ys in itertools.product([0, 1], repeat=len(others)):
                pr = np.prod([q if y else 1 - q for q, y in zip(others, ys)]) if others else 1.0
                e += pr * (max(ys) if ys else 0)
            out.append(e)
        start += s
    return np.array(out)


@pytest.mark.parametrize("seed", range(6))
def test_expected_max_others_brute_force_with_exact_zeros_and_ones(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=6)
    pi = rng.random(sizes.sum())
    # exact 0 and 1 values, including bags with two exact ones and a bag of ones only
    k = rng.choice(pi.size, size=min(pi.size, 5), replace=False)
    pi[k[:3]] = 1.0
    pi[k[3:]] = 0.0
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    np.testing.assert_allclose(expected_max_others(pi, ptr), _brute_force_emax(pi, sizes), atol=1e-12)


def test_expected_max_others_edge_cases():
    ptr = np.array([0, 1, 3, 6, 8])
    pi = np.array([1.0, 1.0, 0.3, 1.0, 1.0, 0.5, 0.0, 0.0])
    got = expected_max_others(pi, ptr)
    np.testing.assert_allclose(got, [0.0, 0.3, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0], atol=0)
    # π_n -> 1 does not blow up (no division by 1 - π_n)
    pi2 = np.array([0.5, 1 - 1e-17, 0.25, 0.2, 0.1, 0.3, 0.4, 0.9])
    assert np.isfinite(expected_max_others(pi2, ptr)).all()


# ----------------------------------------------------------------------------- reductions and monotonicity
def _sparse_gp_direct(X, y, Z, v, l, jitter, theta, n_iter):
    """Sparse GP classification by the textbook formulas with explicit inverses (eqs. 25–27)."""
    Kzz = rbf_kernel(Z, Z, v, l) + jitter * v * np.eye(len(Z))
    Kzx = rbf_kernel(Z, X, v, l)
    Ki = np.linalg.inv(Kzz)
    A = Kzx.T @ Ki                                    # N×M
    cond = v - np.einsum("nm,mn->n", A, Kzx)
    c = np.full(len(X), math.sqrt(v))
    for _ in range(n_iter):
        Th = np.diag(theta(c))
        S = np.linalg.inv(Ki @ Kzx @ Th @ Kzx.T @ Ki + Ki)
        m = S @ Ki @ Kzx @ (y - 0.5)
        mu = A @ m
        var = cond + np.einsum("nm,mk,nk->n", A, S, A)
        c = np.sqrt(mu * mu + var)
    return m, S, mu, var


@pytest.mark.parametrize("theta", ["pg", "gamma"])
def test_single_instance_bags_with_infinite_H_is_sparse_gp_classification(theta):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(14, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=14) > 0).astype(int)
    Z = X[::2].copy()                                  # M = 7 < N = 14
    ptr = np.arange(15)
    v, l, jit = 1.3, 0.8, 1e-6
    post, pi, res = fit_vgpmil(X, ptr, y, Z=Z, variance=v, lengthscale=l, H=np.inf, theta=theta, alpha=1.0,
                               beta=1.0, max_iter=60, tol=0.0, jitter=jit)
    np.testing.assert_array_equal(pi, y)               # y is observed: π_n = T_b exactly
    gsm = make_gsm(theta, 1.0, 1.0)
    m, S, mu, var = _sparse_gp_direct(X, y, Z, v, l, jit, gsm.theta, 60)
    np.testing.assert_allclose(post.m, m, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(post.S, S, rtol=1e-6, atol=1e-8)
    mu2, var2 = post.latent(X)
    np.testing.assert_allclose(mu2, mu, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(var2, var, rtol=1e-6, atol=1e-8)
    # and at new points: μ* = K*Z Kzz⁻¹ m, σ*² = k** − Q** + K*Z Kzz⁻¹ S Kzz⁻¹ KZ*
    Xs = rng.normal(size=(5, 2))
    Ki = np.linalg.inv(rbf_kernel(Z, Z, v, l) + jit * v * np.eye(len(Z)))
    As = rbf_kernel(Xs, Z, v, l) @ Ki
    mus, vs = post.latent(Xs)
    np.testing.assert_allclose(mus, As @ m, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(vs, v - np.einsum("nm,mn->n", As, rbf_kernel(Z, Xs, v, l))
                               + np.einsum("nm,mk,nk->n", As, S, As), rtol=1e-6, atol=1e-8)


@pytest.fixture(scope="module")
def digits():
    tr = milopt.load("gen:digits?bags=60&seed=3")
    te = milopt.load("gen:digits?bags=40&seed=4")
    return milopt.metrics.standardize(tr, te)


@pytest.mark.parametrize("theta,H", [("pg", 100.0), ("pg", 1e12), ("gamma", 1e12)])
def test_elbo_never_decreases(digits, theta, H):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, theta=theta, beta=1.0, H=H,
                               max_iter=40, tol=0.0, emax="exact", random_state=0)
    elbo = np.array([h["elbo"] for h in res.history])
    assert elbo.size == 40
    assert np.all(np.diff(elbo) >= -1e-8 * np.abs(elbo[1:]).max()), np.diff(elbo).min()
    assert res.solver == "vgpmil" and res.problem_class == "native"
    if theta == "pg":  # a lower bound on log p(T) <= 0 (every likelihood factor is <= 1)
        assert elbo.max() < 0


def test_damped_updates_converge_without_period_two_oscillation(digits):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, theta="pg", H=1e12, max_iter=300, tol=1e-7,
                               emax="exact")
    assert res.termination == milopt.solvers.Termination.CONVERGED
    # one more run with one epoch more gives the same π (no odd/even dependence)
    post2, pi2, res2 = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, theta="pg", H=1e12,
                                  max_iter=res.iterations + 1, tol=0.0, emax="exact")
    assert np.max(np.abs(pi2 - pi)) < 1e-2


# ----------------------------------------------------------------------------- predictions
def _permute_within_bags(bags, seed):
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(bags.n_instances), bags.bag_index))
    return bags.with_X(bags.X[order]), order


@pytest.fixture(scope="module")
def fitted(digits):
    tr, _ = digits
    return VGPMILClassifier(n_inducing=100, validation_fraction=0.0, random_state=0).fit(tr)


@pytest.mark.parametrize("rule", ["max", "noisy-or"])
def test_predictions_permutation_invariant_within_bags(digits, fitted, rule):
    _, te = digits
    est = clone(fitted).set_params(bag_rule=rule).fit(digits[0])
    perm, order = _permute_within_bags(te, 1)
    np.testing.assert_allclose(est.predict_proba(perm), est.predict_proba(te), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba_std(perm), est.predict_proba_std(te), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(est.predict_instances(perm), est.predict_instances(te)[order], rtol=1e-10)


def test_estimator_api_and_uncertainty(digits, fitted):
    tr, te = digits
    P = fitted.predict_proba(te)
    assert P.shape == (te.n_bags, 2)
    np.testing.assert_allclose(P.sum(1), 1.0)
    d = fitted.decision_function(te)
    assert np.array_equal(np.argsort(d, kind="stable"), np.argsort(P[:, 1], kind="stable"))
    assert set(fitted.predict(te)) <= {0, 1}
    u = fitted.predict_uncertainty(te)
    assert (u["instance_std"] >= 0).all() and (u["bag_std"] >= 0).all()
    assert ((u["instance_proba"] > 0) & (u["instance_proba"] < 1)).all()
    ev = milopt.metrics.evaluate(fitted, te)
    assert ev["bag_auc"] > 0.9 and ev["instance_auc"] > 0.95
    clone(fitted)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(again.predict_proba(te), P)
    assert fitted.result_.history and "elbo" in fitted.result_.history[0]


def test_gauss_hermite_probit_and_monte_carlo_agree(fitted, digits):
    _, te = digits
    post = fitted.posterior_
    p_gh, s_gh = post.instance_proba(te.X, "gh")
    p_pr, _ = post.instance_proba(te.X, "probit")
    p_mc, s_mc = post.instance_proba(te.X, "mc", n_samples=4000, random_state=0)
    assert np.max(np.abs(p_gh - p_pr)) < 0.03
    assert np.max(np.abs(p_gh - p_mc)) < 0.03
    assert np.max(np.abs(s_gh - s_mc)) < 0.03
    a = post.bag_proba(te.X, te.bag_ptr, "mc", n_samples=200, random_state=5)
    b = post.bag_proba(te.X, te.bag_ptr, "mc", n_samples=200, random_state=5)
    np.testing.assert_array_equal(a[0], b[0])   # seeded


def test_registry_and_errors():
    spec = get_method("g-vgpmil")
    assert spec.make().theta == "gamma"
    assert get_method("vgpmil").make({"n_inducing": 10}).theta == "pg"
    bags = milopt.load("gen:digits?bags=12&seed=0")
    with pytest.raises(InvalidParameterError, match="bag_rule"):
        VGPMILClassifier(bag_rule="mean").fit(bags)
    with pytest.raises(InvalidParameterError, match="H"):
        fit_vgpmil(bags.X, bags.bag_ptr, bags.y, H=1.0)
    with pytest.raises(InvalidDataError, match="NaN"):
        X = bags.X.copy()
        X[0, 0] = np.nan
        fit_vgpmil(X, bags.bag_ptr, bags.y)
    with pytest.raises(InvalidDataError, match="features"):
        VGPMILClassifier(n_inducing=5).fit(bags).predict(Bags.from_arrays([np.zeros((2, 3))], [0]))


def test_early_stopping_returns_best_validation_epoch(digits):
    tr, te = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, max_iter=60, tol=0.0,
                               validation=(te.X, te.bag_ptr, te.y), patience=3)
    aucs = [h["val_auc"] for h in res.history]
    best = res.extra["best_iteration"]
    assert aucs[best - 1] == max(aucs) and res.extra["val_auc"] == max(aucs)
    assert len(aucs) <= best + 3                       # stopped after `patience` epochs without improvement
    assert res.objective == res.history[best - 1]["elbo"]


def test_time_limit_returns_a_status_not_an_error(digits):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, max_iter=10_000, tol=0.0, time_limit=0.0)
    assert res.termination == milopt.solvers.Termination.TIME_LIMIT and res.ok and res.iterations == 1


def test_kernel_objective_gradient_matches_finite_differences():
    from milopt.algorithms.vgpmil import kernel_objective
    from milopt.features.kernels import sq_distances as _sqdist

    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(30, 3)), rng.normal(size=(6, 3))
    m = rng.normal(size=6)
    Q = rng.normal(size=(6, 6))
    S = Q @ Q.T / 6 + 0.1 * np.eye(6)
    th, a = rng.random(30), rng.random(30) - 0.5
    Dxz, Dzz = _sqdist(X, Z), _sqdist(Z, Z)
    x = np.log([1.7, 2.3])
    F, g = kernel_objective(x, Dxz, Dzz, m, S, th, a)
    h = 1e-6
    fd = [(kernel_objective(x + h * e, Dxz, Dzz, m, S, th, a)[0] - kernel_objective(x - h * e, Dxz, Dzz, m, S, th, a)[0])
          / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_augmented_kernel_learning_is_monotone(digits):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=20, theta="pg", max_iter=12, tol=0.0,
                               emax="exact", learn_kernel=True, kernel_steps=3, kernel_bound="augmented")
    elbo = np.array([h["elbo"] for h in res.history])
    assert np.all(np.diff(elbo) >= -1e-8 * np.abs(elbo).max())
    assert (res.history[-1]["variance"], res.history[-1]["lengthscale"]) != (1.0, res.history[0]["lengthscale"])


# ----------------------------------------------------------------------------- the kernel objective of eq. 29
def _eq29_problem(N=40, M=6, seed=0):
    from milopt.features.kernels import sq_distances as _sqdist

    rng = np.random.default_rng(seed)
    X, Z = rng.normal(size=(N, 3)), rng.normal(size=(M, 3))
    m = rng.normal(size=M)
    Q = rng.normal(size=(M, M))
    S = Q @ Q.T / M + 0.1 * np.eye(M)
    a = rng.random(N) - 0.5
    return _sqdist(X, Z), _sqdist(Z, Z), m, S, a


@pytest.mark.parametrize("theta,alpha,beta", [("pg", 1.0, 1.0), ("gamma", 1.0, 1.0), ("gamma", 0.5, 2.5),
                                              ("gamma", 1.0, 4.0)])
@pytest.mark.parametrize("v,l", [(1.7, 2.3), (0.4, 0.7)])
def test_eq29_gradient_matches_finite_differences(theta, alpha, beta, v, l):
    from milopt.algorithms.vgpmil import elbo_objective, logz_proposal

    Dxz, Dzz, m, S, a = _eq29_problem()
    gsm = make_gsm(theta, alpha, beta)
    smp = None if theta == "pg" else logz_proposal(Dxz, Dzz, v, l, gsm, 32, random_state=1)
    x = np.log([v, l])
    J, g = elbo_objective(x, Dxz, Dzz, m, S, a, gsm, smp)
    h = 1e-5
    fd = [(elbo_objective(x + h * e, Dxz, Dzz, m, S, a, gsm, smp)[0]
           - elbo_objective(x - h * e, Dxz, Dzz, m, S, a, gsm, smp)[0]) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_eq29_log_z_is_exact_for_the_logistic_and_matches_brute_force_for_gamma():
    from milopt.algorithms.vgpmil import _log_ratio, elbo_objective, logz_proposal
    from milopt.features.kernels import sq_distances as _sqdist

    Dxz, Dzz, m, S, a = _eq29_problem()
    J, g, parts = elbo_objective(np.log([1.0, 1.0]), Dxz, Dzz, m, S, a, make_gsm("pg"), return_parts=True)
    assert parts["log_z"] == pytest.approx(40 * math.log(2.0))       # ψ = φ: Z = 2^N
    # Gamma ψ: importance-sampled log Z against plain Monte Carlo from the sparse prior N(f)
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(5, 2)), rng.normal(size=(3, 2))
    v, l = 1.5, 1.2
    gsm = make_gsm("gamma", 1.0, 1.0)
    Dxz, Dzz = _sqdist(X, Z), _sqdist(Z, Z)
    smp = logz_proposal(Dxz, Dzz, v, l, gsm, 4000, random_state=2)
    parts = elbo_objective(np.log([v, l]), Dxz, Dzz, np.zeros(3), np.eye(3), np.zeros(5), gsm, smp,
                           return_parts=True)[2]
    K = rbf_kernel(Z, Z, v, l) + 1e-6 * v * np.eye(3)
    Kxz = rbf_kernel(X, Z, v, l)
    Q = Kxz @ np.linalg.solve(K, Kxz.T)
    F = rng.multivariate_normal(np.zeros(5), Q + np.diag(v - np.diag(Q)), size=400_000)
    lr = _log_ratio(gsm)[0](F).sum(1)
    brute = 5 * math.log(2.0) + lr.max() + math.log(np.mean(np.exp(lr - lr.max())))
    assert parts["log_z"] == pytest.approx(brute, abs=0.02)
    assert parts["ess"] > 1000


@pytest.mark.parametrize("theta", ["pg", "gamma"])
def test_eq29_expected_log_psi_is_above_the_tangent_bound(theta):
    """E_q[log ψ(f)] ≥ log ψ(c) − ½θ(c)(E f² − c²) for every c (log ψ(√t) is convex in t)."""
    from milopt.algorithms.vgpmil import _gh_expect

    rng = np.random.default_rng(3)
    mu, var = rng.normal(size=50) * 3, rng.random(50) * 4 + 0.01
    gsm = make_gsm(theta, 1.0, 1.0)
    e = _gh_expect(gsm.log_psi, lambda f: -f * gsm.theta(f), mu, var)[0]
    for c in [np.sqrt(mu * mu + var), np.full(50, 0.5), np.full(50, 5.0)]:
        tangent = gsm.log_psi(c) - 0.5 * gsm.theta(c) * (mu * mu + var - c * c)
        assert np.all(e >= tangent - 1e-10)
    # and E[log ψ] by the rule agrees with Monte Carlo
    f = mu[:5, None] + np.sqrt(var[:5, None]) * rng.standard_normal((5, 200_000))
    np.testing.assert_allclose(e[:5], gsm.log_psi(f).mean(1), atol=0.02)


def test_eq29_kernel_learning_raises_the_paper_objective(digits):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=20, theta="gamma", max_iter=4, tol=0.0,
                               learn_kernel=True, kernel_steps=3, logz_samples=32)
    rec = [h for h in res.history if "kernel_objective" in h]
    assert rec and all(np.isfinite(h["kernel_objective"]) and h["logz_ess"] >= 1.0 for h in rec)
    assert (res.history[-1]["variance"], res.history[-1]["lengthscale"]) != (1.0, res.history[0]["lengthscale"])


# ----------------------------------------------------------------------------- the π update rule and the start
def test_max_others_brute_force():
    from milopt.algorithms.vgpmil import max_others

    rng = np.random.default_rng(0)
    sizes = np.array([1, 2, 5, 3, 1, 4])
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    pi = rng.random(ptr[-1])
    pi[7] = pi[6]                                   # ties
    want = [max([pi[j] for j in range(ptr[b], ptr[b + 1]) if j != n], default=0.0)
            for b in range(sizes.size) for n in range(ptr[b], ptr[b + 1])]
    np.testing.assert_array_equal(max_others(pi, ptr), want)


@pytest.mark.parametrize("emax", ["max", "exact"])
def test_run_to_convergence_reaches_a_fixed_point(digits, emax):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, theta="pg", emax=emax, max_iter=400)
    assert res.termination == milopt.solvers.Termination.CONVERGED
    assert res.history[-1]["max_dpi"] < 1e-3


def test_random_start_of_algorithm_1_is_seeded(digits):
    tr, _ = digits
    a = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=20, pi_init="random", max_iter=3, tol=0.0, random_state=4)
    b = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=20, pi_init="random", max_iter=3, tol=0.0, random_state=4)
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(InvalidParameterError, match="pi_init"):
        fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=5, pi_init="zeros")
    with pytest.raises(InvalidParameterError, match="emax"):
        fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=5, emax="mean")


def test_early_stopping_switch(digits):
    tr, _ = digits
    on = VGPMILClassifier(n_inducing=20, random_state=0).fit(tr)
    off = VGPMILClassifier(n_inducing=20, random_state=0, early_stopping="false").fit(tr)
    assert on.selection_ and not off.selection_
    assert off.result_.termination == milopt.solvers.Termination.CONVERGED
    with pytest.raises(InvalidParameterError, match="early_stopping"):
        VGPMILClassifier(n_inducing=5, early_stopping="maybe").fit(tr)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.25, 0.9, 1e-9, 1 - 1e-9]), min_size=1, max_size=5),
                min_size=1, max_size=5))
def test_expected_max_others_property(bags):
    sizes = np.array([len(b) for b in bags])
    pi = np.array([p for b in bags for p in b])
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    np.testing.assert_allclose(expected_max_others(pi, ptr), _brute_force_emax(pi, sizes), atol=1e-12)


# ----------------------------------------------------------------------------- learned constant prior mean
@pytest.mark.parametrize("H", [100.0, 1e12])
def test_constant_mean_step_never_lowers_the_elbo_and_is_stationary(digits, H):
    tr, _ = digits
    gsm = make_gsm("pg")
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=30, theta="pg", H=H, max_iter=400,
                               tol=1e-10, emax="exact", mean="constant", random_state=0)
    elbo = np.array([h["elbo"] for h in res.history])
    assert np.all(np.diff(elbo) >= -1e-8 * np.abs(elbo).max()), np.diff(elbo).min()
    m0 = res.extra["mean"]
    assert m0 == post.mean and m0 < 0            # most training instances are negative: the prior level drops
    # stationarity of the augmented bound in m0: Σ_n (π_n − ½ − θ(c_n) μ_n) = 0 at the tangent point
    mu, var = post.latent(tr.X)
    th = gsm.theta(np.sqrt(mu * mu + var))
    grad = float(np.sum(pi - 0.5 - th * mu))
    assert abs(grad) < 1e-3 * float(np.sum(np.abs(pi - 0.5) + th * np.abs(mu)))


def test_constant_mean_is_the_prediction_far_from_the_data(digits):
    tr, _ = digits
    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=20, theta="pg", max_iter=50, mean="constant")
    far = np.full((1, tr.X.shape[1]), 1e3)
    mu, var = post.latent(far)
    np.testing.assert_allclose(mu, [post.mean], atol=1e-9)
    np.testing.assert_allclose(var, [post.variance], rtol=1e-9)
    zero = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=20, theta="pg", max_iter=50, mean="zero")[0]
    assert zero.mean == 0.0 and abs(zero.latent(far)[0][0]) < 1e-9
    with pytest.raises(InvalidParameterError, match="mean"):
        fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=5, mean="linear")
    with pytest.raises(InvalidParameterError, match="mean"):
        VGPMILClassifier(n_inducing=5, mean="linear").fit(tr)
    # G-VGPMIL: without log Z the bound is unbounded in m0, so a learned constant mean is refused
    with pytest.raises(InvalidParameterError, match="theta='pg'"):
        fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=5, theta="gamma", mean="constant")
    assert VGPMILClassifier(theta="gamma")._mean() == "zero" and VGPMILClassifier(theta="pg")._mean() == "constant"
    est = milopt.estimator("vgpmil", n_inducing=10, validation_fraction=0.0)
    est.fit(tr)
    assert est.steps[-1][1].posterior_.mean < 0       # the CLI's vgpmil learns the mean by default


@pytest.mark.parametrize("theta", ["pg", "gamma"])
def test_eq29_gradient_with_a_prior_mean_matches_finite_differences(theta):
    from milopt.algorithms.vgpmil import elbo_objective, kernel_objective, logz_proposal

    Dxz, Dzz, m, S, a = _eq29_problem()
    gsm = make_gsm(theta, 1.0, 1.0)
    smp = None if theta == "pg" else logz_proposal(Dxz, Dzz, 1.7, 2.3, gsm, 32, random_state=1)
    x = np.log([1.7, 2.3])
    h = 1e-5
    J, g = elbo_objective(x, Dxz, Dzz, m, S, a, gsm, smp, mean=-1.3)
    assert J != elbo_objective(x, Dxz, Dzz, m, S, a, gsm, smp)[0]
    fd = [(elbo_objective(x + h * e, Dxz, Dzz, m, S, a, gsm, smp, mean=-1.3)[0]
           - elbo_objective(x - h * e, Dxz, Dzz, m, S, a, gsm, smp, mean=-1.3)[0]) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    th = np.random.default_rng(2).random(a.size)
    F, g = kernel_objective(x, Dxz, Dzz, m, S, th, a, mean=-1.3)
    fd = [(kernel_objective(x + h * e, Dxz, Dzz, m, S, th, a, mean=-1.3)[0]
           - kernel_objective(x - h * e, Dxz, Dzz, m, S, th, a, mean=-1.3)[0]) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_a_diverging_likelihood_returns_an_error_status_with_the_last_finite_posterior(digits):
    tr, _ = digits
    calls = {"n": 0}

    def psi(t):
        return 1.0 / np.cosh(t / 2.0)

    def dpsi(t):  # the logistic's ψ' for the first epochs, then NaN: a GSM whose θ breaks down
        calls["n"] += 1
        out = -0.5 * np.tanh(t / 2.0) / np.cosh(t / 2.0)
        return out if calls["n"] <= 3 else np.full_like(out, np.nan)

    post, pi, res = fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=10, theta=(psi, dpsi), max_iter=20, tol=0.0)
    assert res.termination == milopt.solvers.Termination.ERROR and res.iterations > 1
    assert np.all(np.isfinite(post.latent(tr.X)[0])) and np.isfinite(res.objective)
    calls["n"] = 10
    with pytest.raises(InvalidParameterError, match="not finite"):
        fit_vgpmil(tr.X, tr.bag_ptr, tr.y, n_inducing=10, theta=(psi, dpsi), max_iter=20)


def test_declared_parameters_type_and_check_cli_values():
    spec = get_method("vgpmil")
    ps = spec.params
    assert ps["mean"].choices == ("auto", "constant", "zero") and ps["mean"].default == "auto"
    assert ps["variance"].default == 4.0 and "theta" not in ps           # theta is fixed by the method name
    typed = spec.validate({"mean": "zero", "variance": "2", "early_stopping": "false", "H": "inf"})
    assert typed == {"mean": "zero", "variance": 2.0, "early_stopping": False, "H": math.inf}
    for bad, key in [({"mean": "foo"}, "mean"), ({"damping": "1.5"}, "damping"), ({"H": "1"}, "H"),
                     ({"n_inducing": "0"}, "n_inducing"), ({"bag_rule": "mean"}, "bag_rule")]:
        with pytest.raises(InvalidParameterError, match=key):
            spec.validate(bad)
    # every declared key is a constructor parameter with the same default
    est = VGPMILClassifier()
    for k, p in VGPMILClassifier.param_spec.items():
        assert getattr(est, k) == p.default, k
