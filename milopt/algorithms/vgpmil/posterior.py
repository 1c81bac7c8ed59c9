r"""Posterior of VGPMIL: the fitted whitened q(u) (:class:`VGPMILPosterior`, predictive eqs. 30–37) and the
q(y) = Bernoulli(π) updates of eq. 25 (damped Jacobi for ``emax='max'``, backtracking for ``emax='exact'``).

See :mod:`milopt.algorithms.vgpmil` for the model and the whitened parametrisation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import expit, log_expit, xlogy

from milopt.segments import segment_sum
from milopt.algorithms.vgpmil.elbo import rbf_kernel
from milopt.algorithms.vgpmil.link import _log1mexp, _sigmoid_moments, expected_max_others, max_others

# ---------------------------------------------------------------------------------------------
# posterior and predictions
# ---------------------------------------------------------------------------------------------
@dataclass
class VGPMILPosterior:
    """Fitted sparse GP: inducing points, kernel, whitened q(v) = N(m_white, (R Rᵀ)^{-1}).

    Attributes
    ----------
    Z : (M, d) inducing inputs
    variance, lengthscale : float
        RBF kernel v and l (squared length scale).
    L : (M, M) lower Cholesky factor of K_ZZ + jitter I
    R : (M, M) lower Cholesky factor of I + B Θ Bᵀ (precision of the whitened posterior)
    m_white : (M,) whitened posterior mean
    jitter : float
    """

    Z: np.ndarray
    variance: float
    lengthscale: float
    L: np.ndarray
    R: np.ndarray
    m_white: np.ndarray
    jitter: float = 0.0
    mean: float = 0.0

    @property
    def m(self) -> np.ndarray:
        """Posterior mean of u = f(Z)."""
        return self.L @ self.m_white

    @property
    def S(self) -> np.ndarray:
        """Posterior covariance of u (M×M), L R⁻ᵀ R⁻¹ Lᵀ."""
        W = solve_triangular(self.R, self.L.T, lower=True)
        return W.T @ W

    def latent(self, X, chunk=4096):
        """Predictive mean and variance of f* (eqs. 30–31) at the rows of X -> ((n,), (n,))."""
        X = np.asarray(X, dtype=float)
        mu = np.empty(X.shape[0])
        var = np.empty(X.shape[0])
        for s in range(0, X.shape[0], chunk):
            B = solve_triangular(self.L, rbf_kernel(self.Z, X[s:s + chunk], self.variance, self.lengthscale),
                                 lower=True, check_finite=False)
            RB = solve_triangular(self.R, B, lower=True, check_finite=False)
            mu[s:s + chunk] = self.mean + B.T @ self.m_white
            var[s:s + chunk] = self.variance - (B * B).sum(0) + (RB * RB).sum(0)
        return mu, np.maximum(var, 1e-12)

    def instance_proba(self, X, method="gh", n_samples=500, random_state=0):
        """p(y* = 1) = E[σ(f*)] and its standard deviation under f* ~ N(μ*, σ*²) (eqs. 32–33).

        ``method``: ``'gh'`` 32-point Gauss–Hermite, ``'probit'`` σ(μ/√(1 + πσ²/8)) (std by
        Gauss–Hermite), ``'mc'`` Monte Carlo with ``n_samples`` draws seeded by ``random_state``.
        """
        mu, var = self.latent(X)
        return _sigmoid_moments(mu, var, method, n_samples, random_state)[:2]

    def bag_proba(self, X, ptr, method="gh", n_samples=500, random_state=0):
        r"""Bag probability :math:`1 - \prod_n (1 - p_n)` and its standard deviation (eqs. 34–37).

        Returns ``(p_bag, sd_bag, logit_bag, p_inst, sd_inst)``. ``'gh'``/``'probit'``: instances
        independent given their predictive marginals, :math:`\mathrm{Var} = \prod E[(1-σ_n)^2]
        - \prod E[1-σ_n]^2`. ``'mc'``: joint samples v ~ q(v) (correlation through the inducing
        points) plus independent conditional noise, seeded.
        """
        ptr = np.asarray(ptr)
        mu, var = self.latent(X)
        if method == "mc":
            rng = np.random.default_rng(random_state)
            Xf = np.asarray(X, float)
            B = solve_triangular(self.L, rbf_kernel(self.Z, Xf, self.variance, self.lengthscale), lower=True)
            cond = np.maximum(self.variance - (B * B).sum(0), 0.0)
            eps = rng.standard_normal((n_samples, self.m_white.size))
            V = self.m_white[None, :] + solve_triangular(self.R, eps.T, lower=True, trans="T").T
            F = self.mean + V @ B + np.sqrt(cond)[None, :] * rng.standard_normal((n_samples, Xf.shape[0]))
            logq = log_expit(-F)                                   # log(1 - σ(f))
            ls = np.add.reduceat(logq, ptr[:-1], axis=1)           # (n_samples, n_bags) log survival
            pb = -np.expm1(ls)
            mx = ls.max(0)
            log_ms = mx + np.log(np.exp(ls - mx).mean(0))          # log E[Π(1 - σ)]
            P = expit(F)
            return -np.expm1(log_ms), pb.std(0), _log1mexp(log_ms) - log_ms, P.mean(0), P.std(0)
        p, sd, e_log_q, e_q2 = _sigmoid_moments(mu, var, method, n_samples, random_state, extra=True)
        log_mean_q = np.log1p(-np.minimum(p, 1.0 - 1e-300)) if method == "probit" else e_log_q
        ls = segment_sum(log_mean_q, ptr)                          # log Π E[1 - σ_n]
        ls2 = segment_sum(np.log(np.maximum(e_q2, 1e-300)), ptr)   # log Π E[(1 - σ_n)²]
        pb = -np.expm1(ls)
        vb = np.maximum(np.exp(ls2) - np.exp(2.0 * ls), 0.0)
        logit = _log1mexp(ls) - ls
        return pb, np.sqrt(vb), logit, p, sd


# ---------------------------------------------------------------------------------------------
# q(y) updates
# ---------------------------------------------------------------------------------------------
def _entropy(pi):
    return -(xlogy(pi, pi) + xlogy(1.0 - pi, 1.0 - pi))


def _scaled(logH, a):
    """logH · a with 0 where a == 0 (so that H = ∞ imposes the constraint exactly, never inf·0)."""
    if not math.isinf(logH):
        return logH * a
    with np.errstate(invalid="ignore"):
        return np.where(a != 0.0, logH * a, 0.0)


def _pi_block(pi, mu, T_inst, ptr, logH, T_bag):
    """π-dependent part of the ELBO: Σ π_n μ_n − log H Σ_b (1 − E[G_b]) + Σ H(π_n).

    (log H · E[G_b] − log(H + 1) = −log H (1 − E[G_b]) − log(1 + 1/H); the constant is added by the caller.)
    """
    q = 1.0 - pi
    zero = q <= 0.0
    with np.errstate(divide="ignore"):
        lq = np.log(np.where(zero, 1.0, q))
    Lb = segment_sum(lq, ptr)
    Zb = segment_sum(zero.astype(np.int64), ptr)
    Pb = np.where(Zb > 0, 0.0, np.exp(Lb))                  # Π (1 - π_j)
    miss = np.where(T_bag == 1, Pb, 1.0 - Pb)               # 1 − E[G_b]
    return float(pi @ mu - _scaled(logH, miss).sum() + _entropy(pi).sum())


def _pi_update(pi, mu, T_inst, ptr, logH, T_bag, max_halvings=30):
    """Jacobi proposal (eq. 28) taken with a backtracking step that never lowers the π-block."""
    P = 1.0 - expected_max_others(pi, ptr)                  # Π_{j≠n}(1 - π_j)
    with np.errstate(invalid="ignore"):
        prop = expit(mu + _scaled(logH, (2.0 * T_inst - 1.0) * P))
    f0 = _pi_block(pi, mu, T_inst, ptr, logH, T_bag)
    d = prop - pi
    step = 1.0
    for _ in range(max_halvings):
        new = pi + step * d
        f1 = _pi_block(new, mu, T_inst, ptr, logH, T_bag)
        if f1 >= f0 - 1e-12 * max(1.0, abs(f0)):
            return new, step
        step *= 0.5
    return pi, 0.0


def _pi_update_max(pi, mu, T_inst, ptr, logH, damping):
    """π update of eq. 25 with E[max y_{b∖n}] ≈ max_{j≠n} π_j, taken as a damped Jacobi step
    π ← π + ω(π' − π) (ω = ``damping``; ω = 1 is the public code's plain update)."""
    E = max_others(pi, ptr)
    with np.errstate(invalid="ignore"):
        prop = expit(mu + _scaled(logH, (2.0 * T_inst - 1.0) * (1.0 - E)))
    return pi + damping * (prop - pi), damping
