r"""Link functions of VGPMIL: the Gaussian-scale-mixture likelihood factors ψ (logistic / Pólya-Gamma,
G-VGPMIL Gamma, custom), the noisy-OR bag link and its leave-one-out products, and the
logistic / probit predictive moments.

See :mod:`milopt.algorithms.vgpmil` for the model and the paper's equation numbers (eqs. 15, 28, 32–38).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from milopt.errors import InvalidParameterError
from milopt.segments import segment_argmax, segment_max, segment_sum

# ---------------------------------------------------------------------------------------------
# Gaussian scale mixtures: theta(c) = -psi'(c) / (c psi(c))
# ---------------------------------------------------------------------------------------------
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
# leave-one-out products over bags (noisy-OR bag link)
# ---------------------------------------------------------------------------------------------
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
# logistic / probit predictive moments, noisy-OR bag probabilities
# ---------------------------------------------------------------------------------------------
_GH_T, _GH_W = np.polynomial.hermite.hermgauss(32)
_GH_W = _GH_W / math.sqrt(math.pi)


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
