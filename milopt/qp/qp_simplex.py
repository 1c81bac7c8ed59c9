r"""Convex QP over the unit simplex, solved exactly by a primal active-set method.

.. math::

    \min_{x \in \Delta}\ \tfrac12 x^\top Q x + c^\top x, \qquad
    \Delta = \{x \ge 0 : \textstyle\sum_i x_i = 1\},

with :math:`Q` symmetric positive semidefinite.  This is the dual of DCPCA's search-direction
problem QP(I) (Astorino, Fuduli, Giallombardo & Miglionico, *Algorithms* 12:249, 2019,
eqs. 11-12; :func:`milopt.mil.dcmil.solve_direction` forms :math:`Q = AA^\top` from the
bundle), and of any minimum-norm-point problem over a convex hull.  Pyomo-free and
solver-free (numpy only), beside the other QP solvers of this package,
:mod:`~milopt.qp.svm_dcd` and :mod:`~milopt.qp.svm_ipm`.

On a working set F (the support of x) the minimiser over :math:`\{x_F : \sum x_F = 1\}` is
taken in an orthonormal basis :math:`Z` of :math:`\{p : \sum p = 0\}` given by a Householder
reflector; a singular reduced Hessian :math:`Z^\top Q_{FF} Z` is handled by its
eigen-decomposition (a zero-curvature descent direction is followed to the boundary).  A
step that leaves the simplex drops its blocking index; at a face optimum the index with the
most negative reduced cost :math:`(Qx + c)_j - \mu` enters.  Termination is finite (no
tolerance-driven inner loop): the result is the optimum up to rounding.
"""
from __future__ import annotations

import math

import numpy as np

from milopt.errors import InvalidParameterError

__all__ = ["simplex_qp"]


def _face_direction(Q, g, idx, tol):
    """Step ``p`` (on the indices ``idx`` of the working set, summing to zero) towards the minimiser
    of the objective over the face, and whether it is a ray to follow to the boundary; ``p`` is
    None at the face's minimiser.  Z: an orthonormal basis of {sum p = 0} by a Householder
    reflector; the reduced Hessian Z'QZ by Cholesky, or by eigen-decomposition when singular."""
    p = None
    ray = False
    m_ = idx.size
    # orthonormal basis of {sum p = 0} by a Householder reflector R = I - 2uu' (first
    # column of R is the normalised ones vector): Z = R[:, 1:], Z'QZ in O(m^2)
    u = -np.full(m_, 1.0 / math.sqrt(m_))
    u[0] += 1.0
    u /= np.linalg.norm(u)
    Qf = Q[np.ix_(idx, idx)]
    Qu = Qf @ u
    uQu = float(u @ Qu)
    M = Qf - 2.0 * np.outer(u, Qu) - 2.0 * np.outer(Qu, u) + 4.0 * uQu * np.outer(u, u)
    H = 0.5 * (M[1:, 1:] + M[1:, 1:].T)
    gi = g[idx]
    r = (gi - 2.0 * u * float(u @ gi))[1:]

    def Zmul(y):
        yf = np.concatenate(([0.0], y))
        return yf - 2.0 * u * float(u @ yf)

    y = None
    hd = float(np.abs(np.diag(H)).max(initial=0.0))
    try:
        L = np.linalg.cholesky(H)
        if np.diag(L).min() ** 2 > 1e-9 * max(hd, 1e-300):
            y = -np.linalg.solve(L.T, np.linalg.solve(L, r))
    except np.linalg.LinAlgError:
        y = None
    if y is not None:
        p = Zmul(y)
        if np.abs(p).max() <= 1e-13:
            p = None
    else:
        lam, V = np.linalg.eigh(H)
        rv = V.T @ r
        zero = lam <= 1e-10 * max(float(lam.max()), 1e-300)
        gt = tol * max(1.0, float(np.abs(gi).max()))
        if np.any(zero & (np.abs(rv) > gt)):
            # zero curvature with negative slope: follow it to the boundary (the objective
            # decreases linearly); after an index was added to a face with nonsingular
            # reduced Hessian this direction has a positive component on the new index
            p = Zmul(-(V[:, zero] @ rv[zero]))
            ray = True
        else:
            p = Zmul(V[:, ~zero] @ (-rv[~zero] / lam[~zero]))
            if np.abs(p).max() <= 1e-13:
                p = None
                if zero.any():
                    # a face with singular reduced Hessian at its minimum: slide along a
                    # null direction (objective constant) until an index leaves, to keep
                    # the working set nondegenerate
                    p = Zmul(V[:, np.flatnonzero(zero)[0]])
                    if not np.any(p < -1e-15):
                        p = -p
                    ray = True
    return p, ray


def simplex_qp(Q, c, x0=None, tol: float = 1e-11, max_iter: int | None = None):
    r"""Minimise :math:`\tfrac12 x^\top Q x + c^\top x` over the unit simplex, exactly.

    A primal active-set method: on the current support F it takes the exact minimiser of the
    objective over :math:`\{x_F : \sum x_F = 1\}` (an eigen-decomposition of the reduced Hessian
    handles a singular Q: a zero-curvature descent direction is followed to the boundary), drops
    the blocking index when a step leaves the simplex, and adds the index with the most negative
    reduced cost :math:`(Qx + c)_j - \mu` until the KKT conditions hold.  Finite termination (no
    tolerance-driven inner iterations): the result is the optimum up to rounding.

    Parameters
    ----------
    Q : (k, k) symmetric positive semidefinite array
    c : (k,) array
    x0 : (k,) array on the simplex, optional
        Warm start (its support is the initial working set).
    tol : float
        Relative tolerance on reduced costs and curvature.

    Returns
    -------
    x : (k,) array
    info : dict
        ``iterations``, ``kkt`` (most negative reduced cost at exit, ≥ −tol·scale when optimal),
        ``converged``.
    """
    Q = np.asarray(Q, dtype=float)
    c = np.asarray(c, dtype=float)
    k = c.size
    if Q.shape != (k, k):
        raise InvalidParameterError(f"simplex_qp: Q must be {k}x{k}, got {Q.shape}")
    scale = max(float(np.abs(np.diag(Q)).max(initial=0.0)), float(np.abs(c).max(initial=0.0)), 1e-300)
    if x0 is not None and np.asarray(x0).shape == (k,) and np.all(np.asarray(x0) >= 0) and abs(np.sum(x0) - 1) < 1e-9:
        x = np.asarray(x0, dtype=float).copy()
        x /= x.sum()
    else:
        x = np.zeros(k)
        x[int(np.argmin(0.5 * np.diag(Q) + c))] = 1.0
    F = x > 0
    max_iter = max_iter or 50 * k + 100
    it = 0
    kkt = -np.inf
    converged = False
    while it < max_iter:
        it += 1
        g = Q @ x + c
        idx = np.flatnonzero(F)
        p = None
        ray = False
        if idx.size > 1:
            p, ray = _face_direction(Q, g, idx, tol)
        if p is not None:
            neg = p < -1e-15
            if not neg.any():
                if ray:
                    break  # cannot happen on the simplex (sum p = 0, p != 0)
                x[idx] += p
                continue
            steps = np.full(idx.size, np.inf)
            steps[neg] = -x[idx][neg] / p[neg]
            smax = float(steps.min())
            step = smax if ray else min(1.0, smax)
            x[idx] += step * p
            if ray or smax <= 1.0:
                block = idx[neg & (steps <= smax * (1 + 1e-12) + 1e-300)]
                x[block] = 0.0
                F[block] = False
            x[x < 0] = 0.0
            continue
        # face optimal: multiplier of sum(x) = 1 and reduced costs
        mu = float(g[idx].mean())
        red = g - mu
        red[F] = 0.0
        j = int(np.argmin(red))
        kkt = float(red[j])
        if kkt >= -tol * scale:
            converged = True
            break
        F[j] = True
    s = x.sum()
    if s > 0:
        x /= s
    return x, {"iterations": it, "kkt": kkt, "converged": converged}
