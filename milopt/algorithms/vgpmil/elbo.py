r"""ELBO and kernel learning of VGPMIL: the RBF kernel, the tangent-bound kernel objective, the eq. 29
objective 𝒥(λ) (:func:`elbo_objective`, with the importance-sampled log Z for non-logistic ψ) and the
L-BFGS-B kernel step of Algorithm 1, line 8.

See :mod:`milopt.algorithms.vgpmil` for the model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from milopt.features.kernels import sq_distances
from milopt.errors import InvalidParameterError
from milopt.algorithms.vgpmil.link import _log_sech_half, theta_pg

# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------
def rbf_kernel(X, Y, variance=1.0, lengthscale=1.0):
    r""":math:`v\exp(-\lVert x-y\rVert^2/(2l))` between the rows of X (n, d) and Y (m, d) -> (n, m)."""
    from milopt.features.kernels import kernel_matrix

    K = kernel_matrix(X, Y, "rbf", 0.5 / lengthscale)
    K *= variance
    return K


def median_sq_distance(X, n_max=1000, random_state=0) -> float:
    """Median squared Euclidean distance between distinct rows (on a seeded subsample of ``n_max``)."""
    X = np.asarray(X, dtype=float)
    if X.shape[0] > n_max:
        X = X[np.random.default_rng(random_state).choice(X.shape[0], n_max, replace=False)]
    sq = (X * X).sum(1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * X @ X.T
    iu = np.triu_indices(X.shape[0], 1)
    med = float(np.median(np.maximum(d2[iu], 0.0))) if iu[0].size else 1.0
    return med if med > 0 else 1.0


# ---------------------------------------------------------------------------------------------
# kernel objectives and kernel learning
# ---------------------------------------------------------------------------------------------
def _kernel_parts(log_params, Dxz, Dzz, jitter):
    v, l = np.exp(log_params)
    Ex = np.exp(-Dxz / (2.0 * l))
    Ez = np.exp(-Dzz / (2.0 * l))
    Kxz = v * Ex
    M = Dzz.shape[0]
    K = v * Ez + jitter * v * np.eye(M)
    cf = cho_factor(K, lower=True, check_finite=False)
    Kinv = cho_solve(cf, np.eye(M), check_finite=False)
    A = Kxz @ Kinv
    return v, l, Ez, Kxz, K, cf, Kinv, A


def _kernel_chain(v, l, Dxz, Dzz, Ez, Kxz, K, Kinv, A, G_A, G_Kxz, G_K, dv):
    r"""(dF/dlog v, dF/dlog l) from the partial gradients of F in A = K_XZ K_ZZ⁻¹, K_XZ, K_ZZ and k(x, x) = v.

    dA = dK_XZ K⁻¹ − A dK_ZZ K⁻¹; K_ZZ carries the jitter ε v I, so dK_ZZ/dlog v = K_ZZ."""
    G_Kxz = G_Kxz + G_A @ Kinv
    G_K = G_K - (A.T @ G_A) @ Kinv
    dF_dlogv = float(np.sum(G_Kxz * Kxz) + np.sum(G_K * K)) + float(dv) * v
    dF_dlogl = float(np.sum(G_Kxz * (Kxz * Dxz)) + np.sum(G_K * (v * Ez * Dzz))) / (2.0 * l)
    return np.array([dF_dlogv, dF_dlogl])


def kernel_objective(log_params, Dxz, Dzz, m, S, theta_n, a, jitter=1e-6, mean=0.0):
    r"""The augmented bound at fixed q(ω) (tangent bound of log ψ at c_n) as a function of the kernel.

    .. math::

        F(v, l) = \sum_n \big[a_n\mu_n - \tfrac12\theta_n(\mu_n^2 + s_n^2)\big]
        - \mathrm{KL}(\mathcal N(m, S)\,\|\,\mathcal N(0, K_{ZZ})),

    μ = A m, A = K_XZ K_ZZ⁻¹, s² = v − diag(A K_ZX) + diag(A S Aᵀ), a = π − ½. This is the ELBO of
    the model augmented with ω (Appendix A, eq. 42) at the current q(ω), a lower bound of eq. 29
    *without* its −log Z term: exact for VGPMIL (ψ = φ, Z constant), not for G-VGPMIL, whose
    log Z depends on (v, l). Kept as ``kernel_bound='augmented'``; the paper's objective is
    :func:`elbo_objective`. Analytic gradient with respect to (log v, log l); O(N M²).

    Returns
    -------
    F : float, grad : (2,) array  (dF/dlog v, dF/dlog l)
    """
    v, l, Ez, Kxz, K, cf, Kinv, A = _kernel_parts(log_params, Dxz, Dzz, jitter)
    M = Dzz.shape[0]
    mu = mean + A @ m
    AS = A @ S
    s2 = v - np.einsum("nm,nm->n", A, Kxz) + np.einsum("nm,nm->n", AS, A)
    logdetK = 2.0 * np.log(np.diag(cf[0])).sum()
    Kim = Kinv @ m
    kl = 0.5 * (float(np.sum(Kinv * S)) + float(m @ Kim) - M + logdetK)
    F = float(a @ mu - 0.5 * theta_n @ (mu * mu + s2)) - kl
    gam, dlt = a - theta_n * mu, -0.5 * theta_n                  # dF/dμ, dF/ds²
    G_A = np.outer(gam, m) + 2.0 * dlt[:, None] * AS
    G_Kxz = -2.0 * dlt[:, None] * A
    G_K = (A.T * dlt) @ A + 0.5 * (Kinv @ S @ Kinv + np.outer(Kim, Kim) - Kinv)
    return F, _kernel_chain(v, l, Dxz, Dzz, Ez, Kxz, K, Kinv, A, G_A, G_Kxz, G_K, dlt.sum())


# Gauss–Hermite nodes for E[g(f)], f ~ N(μ, σ²): f_k = μ + √2 σ t_k, weights w_k/√π (sum 1)
_GHE_T, _GHE_W = np.polynomial.hermite.hermgauss(24)
_GHE_W = _GHE_W / math.sqrt(math.pi)
_GHE_LOGW = np.log(_GHE_W)


def _gh_expect(g, dg, mu, var):
    r"""E[g(f)], ∂/∂μ and ∂/∂σ² for f ~ N(μ, σ²) by 24-point Gauss–Hermite (exact derivatives of the rule)."""
    s = np.sqrt(2.0 * np.maximum(var, 1e-300))
    F = mu[..., None] + s[..., None] * _GHE_T
    d = dg(F)
    return g(F) @ _GHE_W, d @ _GHE_W, (d * _GHE_T) @ _GHE_W / s


def _gh_log_expect(logr, dlogr, mu, var):
    r"""log E[r(f)], ∂/∂μ and ∂/∂σ² for f ~ N(μ, σ²), by Gauss–Hermite in the log domain."""
    s = np.sqrt(2.0 * np.maximum(var, 1e-300))
    F = mu[..., None] + s[..., None] * _GHE_T
    L = logr(F) + _GHE_LOGW
    mx = L.max(-1, keepdims=True)
    W = np.exp(L - mx)
    tot = W.sum(-1, keepdims=True)
    W /= tot
    d = dlogr(F)
    return (mx + np.log(tot))[..., 0], (W * d).sum(-1), (W * d * _GHE_T).sum(-1) / s


def _log_ratio(gsm):
    """log r = log ψ − log sech(f/2) = log ψ(f)/(2π φ(f)) and its derivative f (θ_PG(f) − θ(f)); r(0) = 1."""
    def logr(f):
        return gsm.log_psi(f) - _log_sech_half(f)

    def dlogr(f):
        return f * (theta_pg(f) - gsm.theta(f))
    return logr, dlogr


@dataclass(frozen=True)
class LogZSamples:
    r"""Frozen importance samples for the Monte Carlo estimate of log Z (eq. 20).

    u_s = L C⁻ᵀ ε_s with ε_s ~ N(0, I), drawn at the kernel (v₀, l₀) where the proposal was built:
    q(u) = N(0, L (C Cᵀ)⁻¹ Lᵀ), C Cᵀ = I + B D Bᵀ (B = L⁻¹K_ZX, D_n the curvature of
    −log E[r(f_n)] at f = 0, floored at 0). ``U`` is (M, S) and ``log_q`` (S,) the proposal log density.
    """

    U: np.ndarray
    log_q: np.ndarray


def logz_proposal(Dxz, Dzz, variance, lengthscale, gsm, n_samples=64, jitter=1e-6, random_state=0):
    """Draw :class:`LogZSamples` for :func:`elbo_objective` at the kernel (variance, lengthscale)."""
    v, l = float(variance), float(lengthscale)
    M = Dzz.shape[0]
    Kzz = v * np.exp(-Dzz / (2.0 * l)) + jitter * v * np.eye(M)
    L = np.linalg.cholesky(Kzz)
    B = solve_triangular(L, (v * np.exp(-Dxz / (2.0 * l))).T, lower=True, check_finite=False)
    d = np.maximum(v - (B * B).sum(0), 1e-12 * v)
    logr, dlogr = _log_ratio(gsm)
    h = 1e-2
    g0 = _gh_log_expect(logr, dlogr, np.zeros_like(d), d)[0]
    g1 = _gh_log_expect(logr, dlogr, np.full_like(d, h), d)[0]
    D = np.maximum(-2.0 * (g1 - g0) / (h * h), 0.0)            # −g''(0) (g is even)
    C = np.linalg.cholesky(np.eye(M) + (B * D) @ B.T)
    eps = np.random.default_rng(random_state).standard_normal((M, int(n_samples)))
    V = solve_triangular(C, eps, lower=True, trans="T", check_finite=False)
    U = L @ V
    log_q = (-0.5 * (eps * eps).sum(0) + np.log(np.diag(C)).sum() - np.log(np.diag(L)).sum()
             - 0.5 * M * math.log(2.0 * math.pi))
    return LogZSamples(U, log_q)


def elbo_objective(log_params, Dxz, Dzz, m, S, a, gsm, samples=None, jitter=1e-6, return_parts=False, mean=0.0):
    r"""The kernel objective 𝒥(λ) of eq. 29 at fixed q(u) = N(m, S) and π, and its gradient.

    .. math::

        \mathcal J(v, l) = -\mathrm{KL}(q(u)\,\|\,p(u)) + (\pi - \tfrac12)^\top\mu
        + \sum_n \mathbb E_{q(f_n)}[\log\psi(f_n)] - \log Z,

    μ = A m, q(f_n) = N(μ_n, s_n²), s² = v − diag(A K_ZX) + diag(A S Aᵀ), A = K_XZ K_ZZ⁻¹.
    ψ is taken with ψ(0) = 1: its normalising constant cancels between the third and the fourth
    term. The third term is a 24-point Gauss–Hermite rule per instance (the paper uses Monte
    Carlo). The normaliser (eq. 20), Z = π^{-N} ∫ N(f) ψ(f)/φ(f) df, is written
    Z = 2^N E_{N(f)}[Π_n r(f_n)], r = ψ/(2πφ) = ψ(f) cosh(f/2). For VGPMIL (ψ = φ) r ≡ 1 and
    log Z = N log 2 exactly. Otherwise, with the sparse prior N(f) (u ~ N(0, K_ZZ),
    f_n | u ~ N(a_nᵀu, d_n) independent, d_n = v − Q_nn), the conditional expectation over f_n
    given u is a Gauss–Hermite integral h_n(a_nᵀu) = E[r(f_n) | u], and the M-dimensional
    integral over u is importance-sampled with the frozen ``samples`` (:func:`logz_proposal`):

    .. math::

        \log Z \approx N\log 2 + \log\frac1S\sum_s
        \exp\Big(\log\mathcal N(u_s\mid 0, K_{ZZ}) - \log q(u_s) + \sum_n \log h_n(a_n^\top u_s)\Big).

    With the samples held fixed the estimate is a smooth deterministic function of (v, l) and the
    returned gradient is its exact gradient (checked against finite differences in the tests).
    (The paper samples N(f) with random Fourier features; the sparse prior is sampled exactly here.)

    Returns
    -------
    J : float, grad : (2,) (dJ/dlog v, dJ/dlog l)[, parts : dict with kl, fit, e_log_psi, log_z, ess]
    """
    v, l, Ez, Kxz, K, cf, Kinv, A = _kernel_parts(log_params, Dxz, Dzz, jitter)
    N, M = Dxz.shape
    mu = mean + A @ m
    AS = A @ S
    Qnn = np.einsum("nm,nm->n", A, Kxz)
    s2 = np.maximum(v - Qnn + np.einsum("nm,nm->n", AS, A), 1e-300)
    logdetK = 2.0 * np.log(np.diag(cf[0])).sum()
    Kim = Kinv @ m
    sign, logdetS = np.linalg.slogdet(S)
    kl = 0.5 * (float(np.sum(Kinv * S)) + float(m @ Kim) - M + logdetK - logdetS)
    dlogpsi = lambda f: -f * gsm.theta(f)  # noqa: E731   (log ψ)' = ψ'/ψ = −f θ(f)
    elp, elp_mu, elp_s2 = _gh_expect(gsm.log_psi, dlogpsi, mu, s2)
    fit = float(a @ mu)
    J = fit + float(elp.sum()) - kl
    gam, dlt = a + elp_mu, elp_s2
    G_A = np.outer(gam, m) + 2.0 * dlt[:, None] * AS
    G_Kxz = -2.0 * dlt[:, None] * A
    G_K = (A.T * dlt) @ A + 0.5 * (Kinv @ S @ Kinv + np.outer(Kim, Kim) - Kinv)
    dv = float(dlt.sum())
    log_z = N * math.log(2.0)
    ess = float("nan")
    if gsm.name != "pg":
        if samples is None:
            raise InvalidParameterError("elbo_objective: a non-logistic ψ needs importance samples for log Z "
                                        "(see logz_proposal)")
        U = samples.U
        d = np.maximum(v - Qnn, 1e-12 * v)
        logr, dlogr = _log_ratio(gsm)
        KiU = Kinv @ U
        ell = (-0.5 * np.einsum("ms,ms->s", U, KiU) - 0.5 * logdetK - 0.5 * M * math.log(2.0 * math.pi)
               - samples.log_q)
        MU = mean + A @ U                                          # (N, S) conditional means
        Gv = np.empty_like(MU)
        Gmu = np.empty_like(MU)
        Gd = np.empty_like(MU)
        for j in range(0, MU.shape[1], 8):                         # chunks of 8 samples: N×8×24 nodes
            sl = slice(j, j + 8)
            Gv[:, sl], Gmu[:, sl], Gd[:, sl] = _gh_log_expect(logr, dlogr, MU[:, sl], d[:, None])
        ell = ell + Gv.sum(0)
        mx = float(ell.max())
        w = np.exp(ell - mx)
        tot = float(w.sum())
        w /= tot
        log_z += mx + math.log(tot / ell.size)
        ess = float(1.0 / np.sum(w * w))
        # −log Z: gradients of the weighted log integrand, subtracted
        G_A -= (Gmu * w) @ U.T
        dbar = Gd @ w
        G_Kxz -= -2.0 * dbar[:, None] * A
        G_K -= (A.T * dbar) @ A + 0.5 * ((KiU * w) @ KiU.T - Kinv)
        dv -= float(dbar.sum())
    J -= log_z
    grad = _kernel_chain(v, l, Dxz, Dzz, Ez, Kxz, K, Kinv, A, G_A, G_Kxz, G_K, dv)
    if return_parts:
        return J, grad, {"kl": kl, "fit": fit, "e_log_psi": float(elp.sum()), "log_z": log_z, "ess": ess}
    return J, grad


def _learn_kernel(X, Z, m, S, theta_n, a, variance, lengthscale, jitter, steps, bounds, gsm=None, bound="elbo",
                  n_samples=64, random_state=0, mean=0.0):
    """A few L-BFGS-B steps on (log v, log l) maximising the kernel objective (never lowers it).

    ``bound='elbo'``: :func:`elbo_objective` (eq. 29) with importance samples for log Z drawn at the
    current kernel and frozen during the steps; ``'augmented'``: :func:`kernel_objective`.
    Returns (variance, lengthscale, info) with info = {objective, ess}."""
    from scipy.optimize import minimize

    Dxz = sq_distances(X, Z)
    Dzz = sq_distances(Z, Z)
    x0 = np.log([variance, lengthscale])
    if bound == "elbo":
        samples = None if gsm.name == "pg" else logz_proposal(Dxz, Dzz, variance, lengthscale, gsm, n_samples,
                                                               jitter, random_state)

        def obj(x):
            return elbo_objective(x, Dxz, Dzz, m, S, a, gsm, samples, jitter, mean=mean)
    else:
        def obj(x):
            return kernel_objective(x, Dxz, Dzz, m, S, theta_n, a, jitter, mean=mean)
    f0, _ = obj(x0)

    def fun(x):
        try:
            F, g = obj(x)
        except np.linalg.LinAlgError:
            return np.inf, np.zeros(2)
        if not np.isfinite(F):
            return np.inf, np.zeros(2)
        return -F, -g

    r = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": int(steps)})
    info = {"kernel_objective": float(f0)}
    if bound == "elbo" and gsm.name != "pg":
        info["logz_ess"] = elbo_objective(r.x if np.isfinite(r.fun) else x0, Dxz, Dzz, m, S, a, gsm, samples,
                                          jitter, return_parts=True, mean=mean)[2]["ess"]
    if np.isfinite(r.fun) and -r.fun >= f0:
        v, l = np.exp(r.x)
        info["kernel_objective"] = float(-r.fun)
        return float(v), float(l), info
    return float(variance), float(lengthscale), info
