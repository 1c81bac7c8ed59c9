r"""BatchPSVM: the proximal batch SVM (Vural et al., JMLR 2009, eq. 6) and its learned-θ variant (eq. 7).

Vural, V., Fung, G., Krishnapuram, B., Dy, J. G. and Rao, B. "Using local dependencies within
batches to improve large margin classifiers." JMLR 10 (2009) 183--206; PSVM: Fung, G. and
Mangasarian, O. L. "Proximal support vector machine classifiers", KDD 2001.

**BatchPSVM (eq. 6).**  With :math:`E = [B, -e]` (instances with a column of -1),
:math:`z = (w, \gamma)`, labels :math:`d \in \{\pm 1\}^m` and the block-diagonal batch operator
:math:`P_\theta = \operatorname{blockdiag}(\theta R^j + I)`, the proximal SVM asks the batch-wise
outputs to be close to the labels:

.. math::

    J(z; \theta) = \frac{\nu}{2} \sum_j \bigl\lVert (\theta R^j + I)(B^j w - e\gamma) - d^j \bigr\rVert^2
                   + \frac12 \lVert z \rVert^2
                 = \frac{\nu}{2} \lVert P_\theta E z - d \rVert^2 + \frac12 \lVert z \rVert^2 .

It is strongly convex; the gradient :math:`\nu E^\top P_\theta (P_\theta E z - d) + z`
vanishes at the solution of the :math:`(n+1)\times(n+1)` system

.. math::

    \Bigl(\tfrac{1}{\nu} I + E^\top P_\theta^2 E\Bigr) z = E^\top P_\theta d .

With :math:`G = R E` (sparse times dense, :math:`m \times (n+1)`), :math:`P_\theta E = E + \theta G`,
so :math:`E^\top P_\theta^2 E = E^\top E + \theta (E^\top G + G^\top E) + \theta^2 G^\top G` and
:math:`E^\top P_\theta d = E^\top d + \theta G^\top d`: five small Gram blocks computed once
(no m×m dense matrix is ever formed); any θ then costs one Cholesky factorisation of an
(n+1)-square matrix.  θ = 0 is Fung & Mangasarian's PSVM.

**Learned θ (eq. 7, Section 3.3 / Appendix A.2).**  Eq. 7 adds θ to the regulariser,

.. math::

    J_7(z, \theta) = \frac{\nu}{2} \sum_j \bigl\lVert (\theta R^j + I)(B^j w - e\gamma) - d^j \bigr\rVert^2
                     + \frac12 \bigl(\lVert z \rVert^2 + \theta^2\bigr),

and is minimised by alternating exact minimisations (Section 3.3, steps 1-2): (i) z for fixed
θ (the system above -- eq. 6 at θ); (ii) θ for fixed z.  With :math:`u^j = B^j w - e\gamma`
(the paper's :math:`S^j`) and :math:`Y^j = R^j u^j`, :math:`J_7` is a quadratic in θ,

.. math::

    J_7 = \frac{\nu}{2}\Bigl(\theta^2 \sum_j Y^{j\top} Y^j + \theta \sum_j M^j\Bigr) + \frac{\theta^2}{2}
          + \text{const}, \qquad M^j = u^{j\top}(R^{j\top} + R^j) u^j - 2\, d^{j\top} R^j u^j,

minimised by

.. math::

    \theta = -\frac{\sum_j M^j}{2 \bigl(\sum_j Y^{j\top} Y^j + 1/\nu\bigr)} .

This is the update of Section 3.3 with :math:`N^j = Y^{j\top}Y^j + 1/\nu`, the :math:`1/\nu` (from
the :math:`\tfrac12\theta^2` of eq. 7) counted once.  Two printing slips of the paper are
corrected by the derivation: Section 3.3 prints :math:`+2e^\top D^j R^j S^j` in :math:`M^j`
where the expansion (and Appendix A.2) gives :math:`-2e^\top D^j R^j S^j`; and Appendix A.2
puts :math:`1/\nu` into every batch's :math:`N^j` (and :math:`I/\nu` into every batch's
:math:`P^j`), which summed over the k batches is the stationary point of eq. 7 with ν replaced
by ν/k, not of eq. 7 itself.  ``theta_penalty`` (λ, default 1: eq. 7) weights the
:math:`\tfrac{\lambda}{2}\theta^2` term; λ = 0 minimises eq. 6 over θ as well, which nothing keeps
bounded (kept only to measure that).

Each step cannot increase :math:`J_7`, so the sequence is monotone non-increasing (recorded
in the history); the iteration stops when θ changes by less than ``tol·(1 + |θ|)`` (the paper:
"until it converges").  Starting point: the given θ (default 0, the PSVM solution; the paper
starts from a random value).  Eq. 7 is convex in z for fixed θ and in θ for fixed z
(bi-convex, Appendix A.2), not jointly convex in general, although Section 3.3 calls it
strongly convex; the alternation reaches a stationary point (tested: the gradient of
:math:`J_7` in w, γ and θ vanishes there).  The paper reports nine iterations on average.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from milopt.errors import InvalidParameterError
from milopt.solvers.result import Termination, native

__all__ = ["BatchPSVMSystem", "fit_batchpsvm"]


class BatchPSVMSystem:
    """The Gram blocks of eq. 6 for one training set; solves for any θ cheaply.

    Parameters
    ----------
    X : ndarray (m, n)
        Instances (all batches stacked, batch-contiguous).
    d : ndarray (m,)
        ±1 labels.
    R : scipy.sparse matrix (m, m) or None
        Block-diagonal within-batch similarity (zero diagonal); None means no neighbours
        (only θ = 0 meaningful).
    nu : float
        Fit weight ν.
    weights : ndarray (m,), optional
        Per-instance weights c_i of the squared residuals (class weighting: the loss becomes
        ν/2 Σ c_i (residual_i)²); all ones by default (eq. 6 as printed).
    """

    def __init__(self, X, d, R=None, nu: float = 1.0, weights=None):
        if not (np.isfinite(nu) and nu > 0):
            raise InvalidParameterError(f"nu: expected a positive number, got {nu!r}")
        X = np.asarray(X, dtype=float)
        m, n = X.shape
        self.nu = float(nu)
        self.d = np.asarray(d, dtype=float)
        self.E = np.hstack([X, -np.ones((m, 1))])
        self.R = sp.csr_matrix((m, m)) if R is None else sp.csr_matrix(R)
        self.c = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
        if self.c.shape != (m,) or not np.all(self.c > 0):
            raise InvalidParameterError(f"weights: expected {m} positive weights")
        self.G = np.asarray(self.R @ self.E)
        sq = np.sqrt(self.c)
        E, G, d = self.E * sq[:, None], self.G * sq[:, None], self.d * sq
        self.EE = E.T @ E
        EG = E.T @ G
        self.EG_sym = EG + EG.T
        self.GG = G.T @ G
        self.Ed = E.T @ d
        self.Gd = G.T @ d
        self.dd = float(d @ d)

    @property
    def n_params(self) -> int:
        return self.E.shape[1]

    def solve(self, theta: float) -> np.ndarray:
        """z = (w, γ) minimising J(z; θ) (Cholesky of the (n+1)-square SPD system)."""
        A = self.EE + theta * self.EG_sym + theta * theta * self.GG
        A[np.diag_indices_from(A)] += 1.0 / self.nu
        rhs = self.Ed + theta * self.Gd
        c = sla.cho_factor(A, lower=True, check_finite=False)
        return sla.cho_solve(c, rhs, check_finite=False)

    def objective(self, z, theta: float, theta_penalty: float = 0.0) -> float:
        """J(z; θ) of eq. 6, plus ``theta_penalty``·θ²/2 (``theta_penalty=1``: J_7 of eq. 7)."""
        r = self.E @ z + theta * (self.G @ z) - self.d
        return float(0.5 * self.nu * r @ (self.c * r) + 0.5 * z @ z + 0.5 * theta_penalty * theta * theta)

    def gradient(self, z, theta: float) -> np.ndarray:
        """∇_z J = ν (P E)ᵀ (P E z − d) + z, with P E = E + θ G."""
        PE = self.E + theta * self.G
        return self.nu * PE.T @ (self.c * (PE @ z - self.d)) + z

    def theta_gradient(self, z, theta: float, theta_penalty: float = 1.0) -> float:
        """∂J_7/∂θ = ν (G z)ᵀ C (P E z − d) + λθ (λ = ``theta_penalty``)."""
        r = self.E @ z + theta * (self.G @ z) - self.d
        return float(self.nu * (self.G @ z) @ (self.c * r) + theta_penalty * theta)

    def theta_update(self, z, theta_penalty: float = 1.0) -> tuple[float, float, float]:
        """Closed-form θ minimising J_7 for fixed z: −ΣM/(2ΣN), ΣN = ΣYᵀY + λ/ν; returns (θ, ΣM, ΣN).

        ``theta_penalty`` λ = 1 is eq. 7 (Section 3.3's N^j = Y^jᵀY^j + 1/ν, the 1/ν counted once);
        λ = 0 minimises eq. 6 over θ (unbounded in general).
        """
        u = self.E @ z
        r = self.G @ z              # Y = R u
        N = float(r @ (self.c * r)) + float(theta_penalty) / self.nu
        M = float(2.0 * r @ (self.c * (u - self.d)))   # = u'(R'+R)u - 2 d'R u (weighted)
        if N <= 0.0:
            return 0.0, M, N
        return -M / (2.0 * N), M, N


def fit_batchpsvm(X, d, R=None, nu: float = 1.0, theta: float = 0.0, learn_theta: bool = False,
                  max_iter: int = 100, tol: float = 1e-6, system: BatchPSVMSystem | None = None, weights=None,
                  theta_penalty: float = 1.0):
    """Fit (Batch)PSVM; returns ``(w, gamma, theta, SolveResult)``.

    Parameters
    ----------
    X, d, R, nu : see :class:`BatchPSVMSystem`.
    theta : float
        Fixed θ (``learn_theta=False``), or the starting θ of the alternating algorithm.
    learn_theta : bool
        Alternate the (w, γ) solve and the θ update (eq. 7) until θ converges.
    max_iter : int
        Maximum number of alternations.
    tol : float
        Stop when ``|Δθ| <= tol (1 + |θ|)``.
    system : BatchPSVMSystem, optional
        Precomputed Gram blocks (reuse across θ values).
    weights : ndarray (m,), optional
        Per-instance residual weights (see :class:`BatchPSVMSystem`).
    theta_penalty : float
        λ of the λθ²/2 term (``learn_theta`` only): 1 is eq. 7 (default); 0 drops it (eq. 6
        minimised over θ too, unbounded in general -- for comparison only).

    The reported objective is J_7 (eq. 7, with λ) when θ is learned and J of eq. 6 otherwise.

    Termination (``docs/statuses.md``): ``converged`` for a fixed θ (the (w, γ) stationarity
    system solved exactly) and for a learned θ whose update met ``tol``; ``iteration_limit``
    when the θ loop reached ``max_iter`` first.  ``extra`` records ``theta_iterations`` (θ
    updates made), ``theta_converged`` (bool) and ``theta_step`` (the last ``|Δθ|``).
    """
    t0 = time.perf_counter()
    sysm = system if system is not None else BatchPSVMSystem(X, d, R, nu, weights)
    theta = float(theta)
    if not np.isfinite(theta):
        raise InvalidParameterError(f"theta: expected a finite number, got {theta!r}")
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise InvalidParameterError(f"max_iter: expected a positive integer, got {max_iter!r}")
    lam = float(theta_penalty) if learn_theta else 0.0
    if not (np.isfinite(lam) and lam >= 0):
        raise InvalidParameterError(f"theta_penalty: expected a non-negative number, got {theta_penalty!r}")
    z = sysm.solve(theta)
    history = [{"iteration": 0, "theta": theta, "objective": sysm.objective(z, theta, lam)}]
    term = Termination.CONVERGED
    iters = 0
    converged = not learn_theta
    step = 0.0
    if learn_theta:
        if sysm.R.nnz == 0:
            raise InvalidParameterError("learn_theta: the similarity R has no neighbour pairs "
                                        "(no coordinates or alpha too large); θ cannot be learned")
        term = Termination.ITERATION_LIMIT
        for it in range(1, max_iter + 1):
            new_theta, M, N = sysm.theta_update(z, lam)
            j_theta = sysm.objective(z, new_theta, lam)
            z = sysm.solve(new_theta)
            history.append({"iteration": it, "theta": new_theta, "sum_M": M, "sum_N": N,
                            "objective_after_theta": j_theta, "objective": sysm.objective(z, new_theta, lam)})
            iters = it
            step = abs(new_theta - theta)
            done = step <= tol * (1.0 + abs(theta))
            theta = new_theta
            if done:
                term = Termination.CONVERGED
                converged = True
                break
    obj = sysm.objective(z, theta, lam)
    res = native("batchpsvm" + ("-learned" if learn_theta else ""), term, obj, time.perf_counter() - t0,
                 iterations=iters, history=history,
                 extra={"theta": theta, "theta_penalty": lam, "theta_iterations": iters,
                        "theta_converged": bool(converged), "theta_step": float(step), "theta_tol": float(tol)})
    return z[:-1].copy(), float(z[-1]), theta, res
