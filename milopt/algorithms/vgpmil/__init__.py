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
line 8) maximises 𝒥(λ) of eq. 29 (``elbo.elbo_objective``).

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

Package layout
--------------
* ``link``: GSM likelihood factors ψ (θ(c), log ψ), the noisy-OR bag
  link and its leave-one-out products, logistic / probit predictive moments.
* ``posterior``: :class:`VGPMILPosterior` (whitened q(u), predictions)
  and the q(y) = Bernoulli(π) updates.
* ``elbo``: RBF kernel, kernel objectives (tangent bound, eq. 29) and
  kernel learning.
* ``fit``: input checks, inducing points and the fit loop
  (:func:`fit_vgpmil`).
"""
from __future__ import annotations

# every name of the former single module, private helpers included, so that existing imports keep working
from milopt.algorithms.vgpmil.link import (GSM, _GH_T, _GH_W, _log1mexp, _log_sech_half,  # noqa: F401
                                           _sigmoid_moments, bag_probabilities, expected_max_others, loo_survival,
                                           make_gsm, max_others, theta_from_psi, theta_gamma, theta_pg)
from milopt.algorithms.vgpmil.elbo import (_GHE_LOGW, _GHE_T, _GHE_W, LogZSamples, _gh_expect,  # noqa: F401
                                           _gh_log_expect, _kernel_chain, _kernel_parts, _learn_kernel, _log_ratio,
                                           elbo_objective, kernel_objective, logz_proposal, median_sq_distance,
                                           rbf_kernel)
from milopt.algorithms.vgpmil.posterior import (VGPMILPosterior, _entropy, _pi_block, _pi_update,  # noqa: F401
                                                _pi_update_max, _scaled)
from milopt.algorithms.vgpmil.fit import (_check_inputs, _diverged, _fit_vgpmil, fit_vgpmil,  # noqa: F401
                                          inducing_points)

__all__ = ["GSM", "make_gsm", "theta_pg", "theta_gamma", "theta_from_psi", "rbf_kernel", "expected_max_others",
           "max_others", "loo_survival", "median_sq_distance", "inducing_points", "VGPMILPosterior", "fit_vgpmil",
           "bag_probabilities"]
