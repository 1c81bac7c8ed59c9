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

**Learned θ (eq. 7, Section 3.3 / Appendix A.2).**  Minimise :math:`J(z; \theta)` jointly over z
and θ by alternating exact minimisations: (i) z for fixed θ (the system above); (ii) θ for
fixed z.  With :math:`u^j = B^j w - e\gamma` and :math:`r^j = R^j u^j`,
:math:`J` is a quadratic in θ, :math:`\frac{\nu}{2}\sum_j(\theta^2 N^j + \theta M^j) + \text{const}`
with :math:`N^j = \lVert r^j\rVert^2` and :math:`M^j = 2\, r^{j\top}(u^j - d^j)`, minimised by

.. math::

    \theta = -\frac{\sum_j M^j}{2 \sum_j N^j}.

Each step cannot increase J, so the sequence :math:`J_t` is monotone non-increasing
(recorded in the history); the iteration stops when θ changes by less than
``tol·(1 + |θ|)``.  Starting point: θ = 0 (the PSVM solution).  The paper reports nine
iterations on average.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from milopt.errors import InvalidParameterError
from milopt.solvers.result import SolutionStatus, SolveResult, Termination


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

    def objective(self, z, theta: float) -> float:
        """J(z; θ) of eq. 6/7 (computed from the m-vector residual)."""
        r = self.E @ z + theta * (self.G @ z) - self.d
        return float(0.5 * self.nu * r @ (self.c * r) + 0.5 * z @ z)

    def gradient(self, z, theta: float) -> np.ndarray:
        """∇_z J = ν (P E)ᵀ (P E z − d) + z, with P E = E + θ G."""
        PE = self.E + theta * self.G
        return self.nu * PE.T @ (self.c * (PE @ z - self.d)) + z

    def theta_update(self, z) -> tuple[float, float, float]:
        """Closed-form θ for fixed z: −ΣM/(2ΣN); returns (θ, ΣM, ΣN)."""
        u = self.E @ z
        r = self.G @ z              # = R u
        N = float(r @ (self.c * r))
        M = float(2.0 * r @ (self.c * (u - self.d)))
        if N <= 0.0:
            return 0.0, M, N
        return -M / (2.0 * N), M, N


def fit_batchpsvm(X, d, R=None, nu: float = 1.0, theta: float = 0.0, learn_theta: bool = False,
                  max_iter: int = 100, tol: float = 1e-6, system: BatchPSVMSystem | None = None, weights=None):
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
        Stop when |Δθ| <= tol (1 + |θ|).
    system : BatchPSVMSystem, optional
        Precomputed Gram blocks (reuse across θ values).
    weights : ndarray (m,), optional
        Per-instance residual weights (see :class:`BatchPSVMSystem`).
    """
    t0 = time.perf_counter()
    sysm = system if system is not None else BatchPSVMSystem(X, d, R, nu, weights)
    theta = float(theta)
    if not np.isfinite(theta):
        raise InvalidParameterError(f"theta: expected a finite number, got {theta!r}")
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise InvalidParameterError(f"max_iter: expected a positive integer, got {max_iter!r}")
    z = sysm.solve(theta)
    history = [{"iteration": 0, "theta": theta, "objective": sysm.objective(z, theta)}]
    term = Termination.OPTIMAL
    iters = 0
    if learn_theta:
        if sysm.R.nnz == 0:
            raise InvalidParameterError("learn_theta: the similarity R has no neighbour pairs "
                                        "(no coordinates or alpha too large); θ cannot be learned")
        term = Termination.ITERATION_LIMIT
        for it in range(1, max_iter + 1):
            new_theta, M, N = sysm.theta_update(z)
            j_theta = sysm.objective(z, new_theta)
            z = sysm.solve(new_theta)
            history.append({"iteration": it, "theta": new_theta, "sum_M": M, "sum_N": N,
                            "objective_after_theta": j_theta, "objective": sysm.objective(z, new_theta)})
            iters = it
            done = abs(new_theta - theta) <= tol * (1.0 + abs(theta))
            theta = new_theta
            if done:
                term = Termination.OPTIMAL
                break
    obj = sysm.objective(z, theta)
    res = SolveResult(solver="batchpsvm" + ("-learned" if learn_theta else ""), termination=term,
                      status=SolutionStatus.OPTIMAL if term == Termination.OPTIMAL else SolutionStatus.FEASIBLE,
                      objective=obj, bound=None, wall_time=time.perf_counter() - t0,
                      iterations=iters, nodes=None, solver_version="milopt", problem_class="native", log="",
                      history=tuple(history), extra={"theta": theta})
    return z[:-1].copy(), float(z[-1]), theta, res
