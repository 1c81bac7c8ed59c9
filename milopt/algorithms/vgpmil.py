r"""Sparse variational Gaussian-process MIL: VGPMIL and the ψ-VGPMIL family (G-VGPMIL).

Papers: M. Haußmann, F. A. Hamprecht, M. Kandemir, "Variational Bayesian multiple instance
learning with Gaussian processes", CVPR 2017 (VGPMIL, Jaakkola bound); F. M. Castro-Macías,
P. Morales-Álvarez, Y. Wu, R. Molina, A. K. Katsaggelos, "Hyperbolic secant representation of the
logistic function: application to probabilistic multiple instance learning for CT intracranial
hemorrhage detection" (PG-VGPMIL, ψ-VGPMIL, G-VGPMIL). Equation numbers are those of the second
paper. The Pólya-Gamma formulation of VGPMIL (PG-VGPMIL, §3) is Castro-Macías et al.'s; the
Pólya-Gamma augmentation itself is Polson, Scott & Windle (2013), used for GP classification by
Wenzel et al. (2019).

Model (eqs. 2–4, 18):

.. math::

    u \sim \mathcal N(0, K_{ZZ}),\quad f \mid u \sim \mathcal N(K_{XZ}K_{ZZ}^{-1}u,\;
    \operatorname{diag}(K_{XX} - Q_{XX})),\quad
    p(y_n \mid f_n) \propto e^{(y_n - 1/2) f_n}\,\psi(f_n),\quad
    p(T_b \mid y_b) = \frac{H^{G_b}}{H + 1},

with :math:`G_b = T_b \max_{n\in b} y_n + (1 - T_b)(1 - \max_{n\in b} y_n)` and ψ a Gaussian
scale mixture (GSM). ψ = φ, the hyperbolic secant density (eq. 15), gives the logistic likelihood
(VGPMIL / PG-VGPMIL); ψ(f) ∝ (β + f²/2)^{-α} (eq. 38) gives G-VGPMIL. The kernel is the RBF
:math:`k(x, x') = v\,\exp(-\lVert x - x'\rVert^2 / (2 l))`: the *squared* distance, so ``l`` is a
squared length scale. (§2.2 of the paper prints the unsquared norm ‖x − x'‖, which would be the
exponential kernel; the released ψ-VGPMIL code, like the VGPMIL code, uses the squared distance,
the RBF the paper names.) The diagonal conditional of f given u is the mean-field/FITC choice; eq. 3
writes the full K̃, which leaves every update below unchanged.

Every GSM satisfies the tangent bound
:math:`\log\psi(f) \ge \log\psi(c) - \tfrac12\theta(c)(f^2 - c^2)`,
:math:`\theta(c) = -\psi'(c) / (c\,\psi(c))` (eq. 28; Appendix A, eqs. 63–67), which is what the
augmented model with q(ω) optimises. With :math:`q(u)=\mathcal N(m, S)` and
:math:`q(y_n) = \mathrm{Bernoulli}(\pi_n)` the augmented bound tracked per epoch is

.. math::

    \mathcal L = \sum_n \Big[(\pi_n - \tfrac12)\mu_n - \tfrac12\theta(c_n)(\mu_n^2 + s_n^2)
    + \log\psi(c_n) + \tfrac12\theta(c_n)c_n^2\Big] - \mathrm{KL}(q(u)\,\|\,p(u))
    + \sum_b \big(\log H\,\mathbb E[G_b] - \log(H+1)\big) + \sum_n \mathcal H(\pi_n) - \log Z,

:math:`\mu_n = K_{nZ}K_{ZZ}^{-1}m`, :math:`s_n^2 = k_{nn} - Q_{nn} + K_{nZ}K_{ZZ}^{-1}SK_{ZZ}^{-1}K_{Zn}`
(log Z = N log 2 for the logistic; for other ψ it is constant while the kernel is fixed and is
left out of the tracked value). Coordinate ascent (Algorithm 1: eq. 28, 27, 26, 25 in that order):

.. math::

    c_n = \sqrt{\mu_n^2 + s_n^2},\quad
    S = (K_{ZZ}^{-1}K_{ZX}\Theta K_{XZ}K_{ZZ}^{-1} + K_{ZZ}^{-1})^{-1},\quad
    m = S K_{ZZ}^{-1}K_{ZX}(\pi - \tfrac12),

    \pi_n = \sigma\big(\mu_n + \log H\,(2T_b - 1)\,(1 - \mathbb E[\max y_{b\setminus n}])\big).

``emax='max'`` (default) takes :math:`\mathbb E[\max y_{b\setminus n}] \approx \max_{j\ne n}\pi_j`,
as the released VGPMIL and ψ-VGPMIL code do; ``emax='exact'`` takes the expectation under the
factorised q(y), :math:`1 - \prod_{j\in b, j\ne n}(1 - \pi_j)`. Kernel learning (Algorithm 1,
line 8) maximises 𝒥(λ) of eq. 29 (:func:`elbo_objective`).

Implementation notes
--------------------
* Whitened parametrisation: with :math:`K_{ZZ} + \epsilon I = LL^\top` and
  :math:`B = L^{-1}K_{ZX}` (M×N), :math:`u = Lv`, :math:`q(v) = \mathcal N(\tilde m, \tilde S)`,
  :math:`\tilde S^{-1} = I + B\Theta B^\top = RR^\top`, :math:`\tilde m = \tilde S B(\pi - \tfrac12)`.
  Only N×M and M×M arrays are formed; one iteration costs O(N M²); no explicit inverse.
  The prior variance term uses the actual :math:`k(x, x) = v`.
* π update, ``emax='max'``: the simultaneous (Jacobi) update of the released code oscillates with
  period 2 in positive bags when log H is large (every π_n of the bag is pushed up, then every
  one sees a positive neighbour and drops back). It is taken as a damped step
  π ← π + ω(π' − π), ω = ``damping`` (½), which has the same fixed points and converges.
* π update, ``emax='exact'``: the Jacobi proposal is an ascent direction of the π-block of the
  ELBO, so it is taken with a backtracking step (1, ½, ¼, ...) that never lowers the ELBO.
* Leave-one-out products :math:`\prod_{j\ne n}(1-\pi_j)` are computed from per-bag sums of
  :math:`\log(1-\pi_j)` and counts of exact zeros (no division by :math:`1-\pi_n`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.special import expit, log_expit, xlogy

from milopt.features.kernels import sq_distances
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.segments import segment_argmax, segment_max, segment_sum
from milopt.solvers.result import Termination, native

__all__ = ["GSM", "make_gsm", "theta_pg", "theta_gamma", "theta_from_psi", "rbf_kernel", "expected_max_others", "max_others",
           "loo_survival", "median_sq_distance", "inducing_points", "VGPMILPosterior", "fit_vgpmil", "bag_probabilities"]


# ---------------------------------------------------------------------------------------------
# Gaussian scale mixtures: theta(c) = -psi'(c) / (c psi(c))
# ---------------------------------------------------------------------------------------------
def theta_pg(c):
    r"""θ of the Pólya-Gamma / logistic GSM, ψ(c) = sech(c/2): :math:`\tanh(c/2)/(2c)`, θ(0) = 1/4."""
    c = np.abs(np.asarray(c, dtype=float))
    small = c < 1e-4
    cs = np.where(small, 1.0, c)
    # series tanh(c/2)/(2c) = 1/4 - c^2/48 + c^4/480 - ...
    return np.where(small, 0.25 - c * c / 48.0, np.tanh(cs / 2.0) / (2.0 * cs))


def theta_gamma(c, alpha=1.0, beta=2.5):
    r"""θ of the G-VGPMIL GSM, ψ(c) = (1 + c²/(2β))^{-α}: :math:`\alpha / (\beta + c^2/2)` (no clipping)."""
    c = np.asarray(c, dtype=float)
    return alpha / (beta + 0.5 * c * c)


def theta_from_psi(psi, dpsi, c, eps=1e-6):
    r"""General θ(c) = -ψ'(c)/(cψ(c)) of a differentiable GSM density ψ (c floored at ``eps``)."""
    c = np.maximum(np.abs(np.asarray(c, dtype=float)), eps)
    return -np.asarray(dpsi(c), dtype=float) / (c * np.asarray(psi(c), dtype=float))


@dataclass(frozen=True)
class GSM:
    """A Gaussian-scale-mixture factor ψ of the likelihood p(y|f) ∝ exp((y - ½)f) ψ(f).

    Attributes
    ----------
    name : str
    theta : callable c -> θ(c) (vectorised)
    log_psi : callable c -> log ψ(c), normalised so that ψ(0) = 1 (vectorised)
    const : float
        Per-instance constant of the log-likelihood (-log 2 for the logistic).
    """

    name: str
    theta: object
    log_psi: object
    const: float = 0.0


def _log_sech_half(c):
    a = np.abs(np.asarray(c, dtype=float)) / 2.0
    # log sech(a) = -log cosh(a) = -(a + log1p(exp(-2a)) - log 2)
    return -(a + np.log1p(np.exp(-2.0 * a)) - math.log(2.0))


def make_gsm(theta="pg", alpha=1.0, beta=2.5) -> GSM:
    """GSM by name: ``'pg'`` (VGPMIL, logistic) or ``'gamma'`` (G-VGPMIL, parameters α, β > 0).

    A :class:`GSM` instance is returned unchanged, and a pair ``(psi, dpsi)`` of callables
    (ψ and ψ', with ψ(0) = 1) defines a custom GSM through θ(c) = -ψ'(c)/(cψ(c)).
    """
    if isinstance(theta, GSM):
        return theta
    if isinstance(theta, tuple) and len(theta) == 2 and all(callable(t) for t in theta):
        psi, dpsi = theta
        return GSM("custom", lambda c: theta_from_psi(psi, dpsi, c), lambda c: np.log(psi(np.asarray(c, float))))
    if theta == "pg":
        return GSM("pg", theta_pg, _log_sech_half, -math.log(2.0))
    if theta == "gamma":
        if not (alpha > 0 and beta > 0):
            raise InvalidParameterError(f"alpha, beta: the Gamma GSM needs alpha > 0 and beta > 0, got {alpha}, {beta}")
        a, b = float(alpha), float(beta)
        return GSM("gamma", lambda c: theta_gamma(c, a, b),
                   lambda c: -a * np.log1p(np.asarray(c, float) ** 2 / (2.0 * b)))
    raise InvalidParameterError(f"theta: expected 'pg', 'gamma', a GSM or a (psi, dpsi) pair, got {theta!r}")


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
# leave-one-out products over bags
# ---------------------------------------------------------------------------------------------
def loo_survival(log_q, zero, ptr):
    r"""Leave-one-out products :math:`\prod_{j\in b, j\ne n} q_j` for every instance n.

    Parameters
    ----------
    log_q : (n,) array
        log q_j where q_j > 0 (any finite value where ``zero``).
    zero : (n,) bool array
        q_j == 0 exactly.
    ptr : (n_bags + 1,) bag offsets

    Notes
    -----
    Per-bag sums of logs and counts of zeros, then subtraction of the own term: exact for
    zeros, no division, O(n).
    """
    sizes = np.diff(ptr)
    log_q = np.where(zero, 0.0, log_q)
    Lb = np.repeat(segment_sum(log_q, ptr), sizes)
    Zb = np.repeat(segment_sum(zero.astype(np.int64), ptr), sizes)
    others_zero = (Zb - zero) > 0
    return np.where(others_zero, 0.0, np.exp(np.minimum(Lb - log_q, 0.0)))


def expected_max_others(pi, ptr):
    r""":math:`\mathbb E[\max y_{b\setminus n}] = 1 - \prod_{j\in b, j\ne n}(1 - \pi_j)` for every instance.

    Exact for π_j ∈ {0, 1}; 0 for an instance alone in its bag. Vectorised over bags.
    """
    pi = np.asarray(pi, dtype=float)
    q = 1.0 - pi
    zero = q <= 0.0
    with np.errstate(divide="ignore"):
        lq = np.log(np.where(zero, 1.0, q))
    return 1.0 - loo_survival(lq, zero, np.asarray(ptr))


def max_others(pi, ptr):
    r""":math:`\max_{j\in b, j\ne n}\pi_j` for every instance (0 for an instance alone in its bag).

    The max-of-expectations stand-in for :math:`\mathbb E[\max y_{b\setminus n}]` used by the public
    VGPMIL and ψ-VGPMIL code (``emax='max'``). Vectorised: per-bag largest and second largest."""
    pi = np.asarray(pi, dtype=float)
    ptr = np.asarray(ptr)
    sizes = np.diff(ptr)
    m1 = segment_max(pi, ptr)
    top = segment_argmax(pi, ptr)
    rest = pi.copy()
    rest[top] = -np.inf
    m2 = segment_max(rest, ptr)
    out = np.repeat(m1, sizes)
    out[top] = np.where(np.isfinite(m2), m2, 0.0)
    return out


def _log1mexp(a):
    """log(1 - exp(a)) for a <= 0, stable."""
    a = np.minimum(a, -1e-300)
    return np.where(a > -math.log(2.0), np.log(-np.expm1(a)), np.log1p(-np.exp(a)))


# ---------------------------------------------------------------------------------------------
# posterior and predictions
# ---------------------------------------------------------------------------------------------
_GH_T, _GH_W = np.polynomial.hermite.hermgauss(32)
_GH_W = _GH_W / math.sqrt(math.pi)


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


def _sigmoid_moments(mu, var, method="gh", n_samples=500, random_state=0, extra=False):
    sd = np.sqrt(var)
    if method == "mc":
        rng = np.random.default_rng(random_state)
        F = mu[:, None] + sd[:, None] * rng.standard_normal((mu.size, n_samples))
        P = expit(F)
        p, s = P.mean(1), P.std(1)
        if extra:
            return p, s, np.log(np.maximum(1.0 - p, 1e-300)), ((1.0 - P) ** 2).mean(1)
        return p, s
    if method not in ("gh", "probit"):
        raise InvalidParameterError(f"predict_method: expected 'gh', 'probit' or 'mc', got {method!r}")
    F = mu[:, None] + math.sqrt(2.0) * sd[:, None] * _GH_T[None, :]
    P = expit(F)
    p = P @ _GH_W
    p2 = (P * P) @ _GH_W
    if method == "probit":
        p = expit(mu / np.sqrt(1.0 + math.pi * var / 8.0))
    s = np.sqrt(np.maximum(p2 - p * p, 0.0))
    if extra:
        # E[1 - σ] in log form, accurate when p -> 1: log E[σ(-f)] via log-sum-exp of log σ(-F)
        lq = log_expit(-F)
        mx = lq.max(1, keepdims=True)
        e_log_q = mx[:, 0] + np.log(np.exp(lq - mx) @ _GH_W)
        e_q2 = (np.exp(2.0 * lq)) @ _GH_W
        return p, s, e_log_q, e_q2
    return p, s


def bag_probabilities(p_inst, ptr):
    """1 - Π_{n∈b}(1 - p_n) for every bag (log domain)."""
    p_inst = np.asarray(p_inst, dtype=float)
    return -np.expm1(segment_sum(np.log1p(-np.minimum(p_inst, 1.0)), np.asarray(ptr)))


# ---------------------------------------------------------------------------------------------
# fitting
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


def _diverged(post):
    """Termination of a fit whose θ(c) or latent moments stopped being finite: ``error`` with the last
    finite posterior kept, or one clear error when there is none yet (the first epoch)."""
    if post is None:
        raise InvalidParameterError("VGPMIL: θ(c) or the latent mean is not finite in the first epoch; check theta, "
                                    "alpha, beta and the kernel variance")
    return Termination.ERROR


def _check_inputs(X, ptr, y):
    X = np.asarray(X, dtype=float)
    ptr = np.asarray(ptr, dtype=np.int64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0:
        raise InvalidDataError(f"X: expected a non-empty (n_instances, n_features) array, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise InvalidDataError("X: contains NaN or infinite values; impute or drop them before fitting")
    if ptr.ndim != 1 or ptr[0] != 0 or ptr[-1] != X.shape[0] or np.any(np.diff(ptr) <= 0):
        raise InvalidDataError("ptr: expected increasing bag offsets from 0 to n_instances with non-empty bags")
    if y.shape != (ptr.size - 1,) or not set(np.unique(y)) <= {0, 1}:
        raise InvalidDataError(f"y: expected {ptr.size - 1} bag labels in {{0, 1}}, got shape {y.shape} "
                               f"with values {np.unique(y)[:5]}")
    return X, ptr, y.astype(np.int64)


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


def inducing_points(X, M, init="kmeans", random_state=0):
    """M inducing inputs: k-means centres (sklearn KMeans, seeded) or a seeded random subset.

    k-means (k-means++ start, at most 50 Lloyd iterations) runs on a seeded subsample of at most
    10·M instances: on MUSK2 the full 6,598-instance k-means took most of the fit time."""
    X = np.asarray(X, dtype=float)
    M = int(min(M, X.shape[0]))
    if M < 1:
        raise InvalidParameterError(f"n_inducing: must be >= 1, got {M}")
    if init == "kmeans":
        from sklearn.cluster import KMeans

        rng = np.random.default_rng(random_state)
        Xk = X if X.shape[0] <= 10 * M else X[rng.choice(X.shape[0], 10 * M, replace=False)]
        km = KMeans(n_clusters=M, n_init=1, max_iter=50, random_state=random_state).fit(Xk)
        return km.cluster_centers_.copy()
    if init == "random":
        rng = np.random.default_rng(random_state)
        return X[rng.choice(X.shape[0], M, replace=False)].copy()
    raise InvalidParameterError(f"inducing_init: expected 'kmeans' or 'random', got {init!r}")


def fit_vgpmil(X, ptr, y, *, Z=None, n_inducing=200, inducing_init="kmeans", variance=1.0, lengthscale=None,
               H=100.0, theta="gamma", alpha=1.0, beta=1.0, max_iter=200, tol=1e-5, pi_steps=3, pi_init="label", warmup=0,
               emax="max", damping=0.5, jitter=1e-6, validation=None, patience=10, bag_rule="max", learn_kernel=False,
               kernel_steps=5, kernel_bound="elbo", logz_samples=64, blas_threads=1, time_limit=None, random_state=0,
               verbose=False, mean="zero"):
    r"""Fit (Py-/G-)VGPMIL by coordinate ascent on the ELBO.

    Parameters
    ----------
    X : (n_instances, d) array
        Instances, grouped contiguously by bag.
    ptr : (n_bags + 1,) int array
        Bag offsets.
    y : (n_bags,) array of {0, 1}
        Bag labels T_b.
    Z : (M, d) array, optional
        Inducing inputs; by default ``n_inducing`` k-means centres of X.
    variance : float
        Kernel variance v.
    lengthscale : float, optional
        Squared length scale l of exp(-‖x - x'‖²/(2l)); default: the median squared distance.
    H : float
        Bag-likelihood strength (> 1, eq. 4; the paper's 100 by default); ``np.inf`` forces E[G_b] = 1.
    theta : {'pg', 'gamma'} or GSM or (psi, dpsi)
    alpha, beta : float
        Parameters of the Gamma GSM.
    max_iter : int
        Maximum number of epochs.
    tol : float
        Stop when the relative ELBO change is below ``tol``.
    pi_steps : int
        Monotone π block updates per epoch (each is a Jacobi proposal with backtracking).
    pi_init : {'label', 'half', 'random'}
        Initial π: the bag label (π_n = T_b), ½ in positive bags and 0 in negative ones, or
        U(0, 1) draws seeded by ``random_state`` (Algorithm 1, line 2). Algorithm 1 also draws m
        and S at random; here they are not needed: the first epoch starts from θ at the prior
        c_n = √v and computes q(u) from π (eqs. 27, 26).
    emax : {'max', 'exact'}
        E[max y_{b∖n}] in eq. 25: max_{j≠n} π_j (the released VGPMIL / ψ-VGPMIL code) or
        1 − Π_{j≠n}(1 − π_j) (the expectation under the factorised q(y); monotone backtracking
        steps on the ELBO, ``pi_steps`` per epoch).
    damping : float
        Step ω ∈ (0, 1] of the ``emax='max'`` update π ← π + ω(π' − π); ω = 1 (the released code)
        oscillates with period 2.
    jitter : float
        Relative jitter added to K_ZZ's diagonal (times v) before its Cholesky factorisation.
    validation : tuple (X_val, ptr_val, y_val), optional
        Early stopping on the validation bags' AUC with ``patience`` epochs; the best epoch is kept.
    bag_rule : {'max', 'noisy-or'}
        Bag score used for the validation AUC: the largest instance probability, or 1 - Π(1 - p_n).
    learn_kernel : bool
        Algorithm 1, line 8: after every epoch, ``kernel_steps`` L-BFGS-B steps on (log v, log l)
        with analytic gradients at fixed q(u) and π; bounds 10⁻²–10² times the initial values.
        A step is kept only when it raises the objective.
    kernel_bound : {'elbo', 'augmented'}
        The objective of that step: 𝒥(λ) of eq. 29 (:func:`elbo_objective`; −log Z by
        importance sampling with ``logz_samples`` draws for ψ ≠ φ, redrawn every epoch, seeded),
        or the augmented bound at fixed q(ω) (:func:`kernel_objective`, no log Z).
    time_limit : float, optional
        Seconds; the current posterior is returned with termination ``time_limit``.
    random_state : int
        Seeds k-means and the median subsample.
    blas_threads : int or None
        BLAS threads while fitting (threadpoolctl); None leaves BLAS alone. The arrays are
        N×M and M×M: one thread was ~10× faster than the default on a loaded 2-core machine.

    Returns
    -------
    posterior : VGPMILPosterior
    pi : (n_instances,) array
        Final q(y_n = 1).
    result : SolveResult
        solver="vgpmil", problem_class="native", objective = ELBO of the returned epoch (the best
        validation epoch when early stopping), history with per-epoch elbo, kl, max_dpi, pi_step,
        warmup, (val_auc) and seconds.
    """
    kw = dict(Z=Z, n_inducing=n_inducing, inducing_init=inducing_init, variance=variance, lengthscale=lengthscale, H=H,
              theta=theta, alpha=alpha, beta=beta, max_iter=max_iter, tol=tol, pi_steps=pi_steps, pi_init=pi_init,
              warmup=warmup, emax=emax, damping=damping, jitter=jitter, validation=validation, patience=patience,
              bag_rule=bag_rule, learn_kernel=learn_kernel, kernel_steps=kernel_steps, kernel_bound=kernel_bound,
              logz_samples=logz_samples, time_limit=time_limit, random_state=random_state, verbose=verbose, mean=mean)
    if blas_threads is None:
        return _fit_vgpmil(X, ptr, y, **kw)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(blas_threads), user_api="blas"):
        return _fit_vgpmil(X, ptr, y, **kw)


def _fit_vgpmil(X, ptr, y, *, Z, n_inducing, inducing_init, variance, lengthscale, H, theta, alpha, beta, max_iter, tol,
                pi_steps, pi_init, warmup, emax, damping, jitter, validation, patience, bag_rule, learn_kernel, kernel_steps,
                kernel_bound, logz_samples, time_limit, random_state, verbose, mean="zero"):
    t_start = time.perf_counter()
    X, ptr, y = _check_inputs(X, ptr, y)
    gsm = make_gsm(theta, alpha, beta)
    if not (H > 1):
        raise InvalidParameterError(f"H: the bag likelihood needs H > 1, got {H}")
    if not variance > 0:
        raise InvalidParameterError(f"variance: must be > 0, got {variance}")
    if lengthscale is None:
        lengthscale = median_sq_distance(X, random_state=random_state)
    if not lengthscale > 0:
        raise InvalidParameterError(f"lengthscale: must be > 0, got {lengthscale}")
    logH = math.log(H)                                      # inf when H = inf
    sizes = np.diff(ptr)
    T_inst = np.repeat(y, sizes).astype(float)
    if Z is None:
        Z = inducing_points(X, n_inducing, inducing_init, random_state)
    Z = np.asarray(Z, dtype=float)
    M = Z.shape[0]

    def kernel_factors(variance, lengthscale):
        Kzz = rbf_kernel(Z, Z, variance, lengthscale)
        Kzz[np.diag_indices(M)] += jitter * variance
        L = np.linalg.cholesky(Kzz)
        B = solve_triangular(L, rbf_kernel(Z, X, variance, lengthscale), lower=True, check_finite=False)  # M×N
        cond_var = np.maximum(variance - (B * B).sum(0), 0.0)    # k_nn - Q_nn with the actual k(x, x) = v
        return L, B, cond_var

    L, B, cond_var = kernel_factors(variance, lengthscale)
    bounds = [(math.log(variance) - 4.6, math.log(variance) + 4.6), (math.log(lengthscale) - 4.6,
                                                                   math.log(lengthscale) + 4.6)]

    if emax not in ("max", "exact"):
        raise InvalidParameterError(f"emax: expected 'max' or 'exact', got {emax!r}")
    if not (0.0 < damping <= 1.0):
        raise InvalidParameterError(f"damping: expected a value in (0, 1], got {damping}")
    if kernel_bound not in ("elbo", "augmented"):
        raise InvalidParameterError(f"kernel_bound: expected 'elbo' or 'augmented', got {kernel_bound!r}")
    if mean not in ("zero", "constant"):
        raise InvalidParameterError(f"mean: expected 'zero' or 'constant', got {mean!r}")
    if mean == "constant" and gsm.name != "pg":
        # without log Z the bound grows without limit as m₀ → −∞ when ψ ≠ φ (e^{−f/2}ψ(f) is unbounded)
        raise InvalidParameterError("mean: 'constant' needs the logistic likelihood (theta='pg'); for other ψ the "
                                    "bound is unbounded in m₀ without log Z: use mean='zero'")
    if pi_init == "label":
        pi = T_inst.copy()
    elif pi_init == "half":
        pi = 0.5 * T_inst
    elif pi_init == "random":                               # Algorithm 1, line 2: π_n ~ U(0, 1)
        pi = np.random.default_rng(random_state).uniform(0.0, 1.0, X.shape[0])
    else:
        raise InvalidParameterError(f"pi_init: expected 'label', 'half' or 'random', got {pi_init!r}")
    c = np.sqrt(np.full(X.shape[0], variance))              # prior E[f²] = v
    m0 = 0.0
    history = []
    best = None
    best_auc = -np.inf
    bad = 0
    prev = None
    termination = Termination.ITERATION_LIMIT
    eye = np.eye(M)
    it = 0
    post = None
    warmup_end = int(warmup)
    for it in range(1, max_iter + 1):
        # q(u): S̃⁻¹ = I + B Θ Bᵀ, m̃ = S̃ B (π − ½)
        th = gsm.theta(c)
        P = eye + (B * th) @ B.T
        try:
            R = np.linalg.cholesky(P) if np.all(np.isfinite(th)) else None
        except np.linalg.LinAlgError:
            R = None
        if R is None:                            # θ(c) not finite and positive: the fit diverged
            termination = _diverged(post)
            break
        a = pi - 0.5
        if mean == "constant":
            # (m̃, m₀) jointly maximise the bound's quadratic Σ[a_n f̄_n − ½θ_n f̄_n²] − ½‖m̃‖², f̄ = Bᵀm̃ + m₀:
            # Schur complement of [[I + BΘBᵀ, BΘ1], [1ᵀΘBᵀ, 1ᵀΘ1]] (positive: 1ᵀ(Θ⁻¹ + BᵀB)⁻¹1)
            g = B @ th
            Pa = cho_solve((R, True), B @ a, check_finite=False)
            Pg = cho_solve((R, True), g, check_finite=False)
            m0 = float((a.sum() - g @ Pa) / (th.sum() - g @ Pg))
            mw = Pa - m0 * Pg
        else:
            mw = cho_solve((R, True), B @ a, check_finite=False)
        # q(ω): c² = E[f²] = μ² + k_nn − Q_nn + b_nᵀ S̃ b_n  (S̃ = (R Rᵀ)⁻¹, a GEMM instead of a TRSM)
        St = cho_solve((R, True), eye, check_finite=False)
        mu = B.T @ mw + m0
        s2 = cond_var + np.einsum("mn,mn->n", B, St @ B)
        c = np.sqrt(mu * mu + s2)
        if not np.all(np.isfinite(c)):           # latent mean or variance not finite: the fit diverged
            termination = _diverged(post)
            break
        # q(y): monotone π block steps
        dpi = 0.0
        step = 1.0
        in_warmup = it <= warmup_end
        for _ in range(0 if in_warmup else (1 if emax == "max" else max(1, pi_steps))):
            if emax == "max":
                new, step = _pi_update_max(pi, mu, T_inst, ptr, logH, damping)
            else:
                new, step = _pi_update(pi, mu, T_inst, ptr, logH, y)
            dpi = max(dpi, float(np.max(np.abs(new - pi))))
            pi = new
        # ELBO (c tight: the θ terms cancel)
        kl = 0.5 * (float(np.trace(St)) + float(mw @ mw) - M + 2.0 * float(np.log(np.diag(R)).sum()))
        elbo = (-0.5 * float(mu.sum()) + float(gsm.log_psi(c).sum()) + gsm.const * X.shape[0] - kl
                + _pi_block(pi, mu, T_inst, ptr, logH, y) - (ptr.size - 1) * math.log1p(1.0 / H))
        rec = {"iteration": it, "elbo": elbo, "objective": elbo, "kl": kl, "max_dpi": dpi, "pi_step": step, "mean": m0,
               "warmup": in_warmup, "seconds": time.perf_counter() - t_start}
        post = VGPMILPosterior(Z, float(variance), float(lengthscale), L, R, mw, jitter, m0)
        if validation is not None:
            from sklearn.metrics import roc_auc_score

            Xv, pv, yv = validation
            pb, _, logit, p_inst, _ = post.bag_proba(Xv, pv)
            score = segment_max(p_inst, np.asarray(pv)) if bag_rule == "max" else logit
            auc = float(roc_auc_score(yv, score)) if np.unique(yv).size == 2 else float("nan")
            rec["val_auc"] = auc
            if auc > best_auc + 1e-12:
                best_auc, best, bad = auc, (post, pi.copy(), it), 0
            else:
                bad += 1
        history.append(rec)
        if verbose:
            print(" ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))
        if validation is not None and bad >= patience:
            termination = Termination.EARLY_STOPPED      # validation AUC stopped improving
            break
        converged = prev is not None and abs(elbo - prev) <= tol * max(1.0, abs(elbo)) and dpi < 1e-3
        if converged and in_warmup:
            warmup_end = it                 # the single-instance fit has converged: start the MIL updates
            prev = None
        elif converged:
            termination = Termination.CONVERGED          # ELBO and π stationary (a local optimum of the bound)
            break
        else:
            prev = elbo
        if time_limit is not None and time.perf_counter() - t_start > time_limit:
            termination = Termination.TIME_LIMIT
            break
        if learn_kernel and not in_warmup:
            m_u = L @ mw
            W = L @ St
            S_u = W @ L.T
            v_new, l_new, kinfo = _learn_kernel(X, Z, m_u, 0.5 * (S_u + S_u.T), gsm.theta(c), pi - 0.5, variance,
                                                lengthscale, jitter, kernel_steps, bounds, gsm, kernel_bound,
                                                logz_samples, random_state + it, mean=m0)
            rec.update(kinfo)
            if (v_new, l_new) != (variance, lengthscale):
                variance, lengthscale = v_new, l_new
                L, B, cond_var = kernel_factors(variance, lengthscale)
                prev = None                  # the bound moved: measure convergence afresh
        rec["variance"], rec["lengthscale"] = float(variance), float(lengthscale)
    extra = {"n_inducing": M, "mean": float(post.mean), "variance": float(post.variance), "lengthscale": float(post.lengthscale), "H": float(H),
             "theta": gsm.name, "alpha": float(alpha), "beta": float(beta)}
    objective = history[-1]["elbo"]
    if validation is not None and best is not None:
        post, pi, best_it = best
        objective = history[best_it - 1]["elbo"]
        extra.update({"best_iteration": best_it, "val_auc": best_auc, "last_iteration_elbo": history[-1]["elbo"]})
    res = native("vgpmil", termination, objective, time.perf_counter() - t_start, iterations=it, history=history,
                 extra=extra, version=f"milopt-vgpmil ({gsm.name})")
    return post, pi, res
