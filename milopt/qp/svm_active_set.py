r"""Primal-dual active-set method for the grouped-slack SVM dual, warm-started from a guess.

The problem of :mod:`milopt.qp.svm_ipm` (Kent & Yu eq. 3),

.. math::

    \min_\alpha \tfrac12 \alpha^\top Q \alpha - \mathbf 1^\top\alpha \quad
    \text{s.t. } y^\top\alpha = 0,\ A\alpha \le c,\ \alpha \ge 0,

with :math:`Q = yy^\top\circ K` and :math:`A` the group incidence matrix.  Its KKT conditions are
:math:`z = Q\alpha - \mathbf 1 + y\nu + A^\top\lambda`, :math:`0 \le \alpha \perp z \ge 0`,
:math:`0 \le c - A\alpha \perp \lambda \ge 0`, :math:`y^\top\alpha = 0`.  The method of
Hintermüller, Ito & Kunisch (SIAM J. Optim. 13(3), 2002, Algorithm 1; there for bounds, here with
the group sums as further inequalities) guesses which multipliers are zero (set Z) and which
groups are saturated (set S), solves the equality-constrained problem those guesses define,

.. math::

    \begin{pmatrix} Q_{FF} & y_F & A_{SF}^\top \\ y_F^\top & 0 & 0 \\ A_{SF} & 0 & 0\end{pmatrix}
    \begin{pmatrix}\alpha_F \\ \nu \\ \lambda_S\end{pmatrix} =
    \begin{pmatrix}\mathbf 1 \\ 0 \\ c_S\end{pmatrix},\qquad F = \complement Z,

and updates the guesses from the signs of the result: a multiplier of Z whose :math:`z_i` is
negative is freed, a free one that went negative joins Z, a group of S with a negative
:math:`\lambda_g` is released, a group whose sum exceeds its cap joins S.  When no guess changes,
the point satisfies every KKT condition: it is the optimum, exact up to rounding.

The linear system has the size of the free set plus the saturated groups, not of the problem:
at the nodes of the MI-SVM branch and bound (a few hundred multipliers, a few dozen free) one
iteration is a factorisation of a few dozen rows, and a child node, warm-started from its
parent's solution, needs few iterations.  The method is not globally convergent on every QP
(it may cycle, or meet a singular system when the guessed free set is larger than the rank of
Q allows): it then reports failure (``converged`` False) and the caller falls back to the
interior-point method.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dsysv as _sysv

__all__ = ["solve_group_dual_active_set"]


def solve_group_dual_active_set(y, groups, caps, alpha0, K=None, V=None, max_iter=200, zero=1e-6, max_free=None,
                                max_release=5, Q=None):
    """Solve the grouped-slack SVM dual by the primal-dual active-set method.

    Parameters
    ----------
    y : ndarray (n,) labels ±1
    groups : ndarray of int (n,) group ids 0..G-1
    caps : ndarray (G,) group caps
    alpha0 : ndarray (n,)
        Warm start: multipliers below ``zero`` times their group's cap start in Z, groups
        within ``zero`` (relative) of their cap start in S.
    K : ndarray (n, n), optional
        Kernel matrix.
    V : ndarray (n, d), optional
        Instead of K, its factor K = V Vᵀ (linear kernel): one iteration then costs O(n d) besides
        the factorisation, and K is never formed.
    Q : ndarray (n, n), optional
        Instead of K, the signed kernel Q = (y yᵀ)∘K itself (a caller that solves
        many problems on rows of one kernel forms it once and gathers its rows).
    max_iter : int
    max_free : int, optional
        Give up (``converged`` False) when a guess frees more multipliers than this: the
        factorisation grows with the cube of the free set, the interior point does not.

    Returns
    -------
    dict: alpha, b (the multiplier ν of yᵀα = 0), iterations, converged, free (indices of the
    free multipliers), saturated (boolean per group).
    """
    y = np.asarray(y, dtype=float)
    g = np.asarray(groups, dtype=np.int64)
    c = np.asarray(caps, dtype=float)
    n, G = y.size, c.size
    if (K is not None) + (V is not None) + (Q is not None) != 1:
        raise ValueError("give exactly one of K, V and Q")
    if K is not None:
        Q = np.asarray(K, dtype=float) * np.outer(y, y)
    if Q is not None:
        Q = np.asarray(Q, dtype=float)
        qdiag = np.diag(Q)
    else:
        U = np.asarray(V, dtype=float) * y[:, None]
        qdiag = np.einsum("ij,ij->i", U, U)
    a0 = np.asarray(alpha0, dtype=float)
    zero_set = a0 <= zero * c[g]
    sat = np.bincount(g, weights=a0, minlength=G) >= c * (1.0 - zero)
    seen = set()
    single = False
    last = None
    alpha = np.zeros(n)
    nu = 0.0
    tol_z = 1e-10 * max(1.0, float(qdiag.max(initial=0.0)) * float(c.max(initial=1.0)))
    for it in range(1, max_iter + 1):
        F = np.flatnonzero(~zero_set)
        Sg = np.flatnonzero(sat)
        f = F.size
        if max_free is not None and f > max_free:
            return _result(alpha, nu, it, False, F, sat)
        if Q is not None:
            QF = Q.take(F, 1)
            QFF = QF.take(F, 0)
        else:
            UF = U[F]
            QFF = UF @ UF.T
        sol = _solve_guess(QFF, F, Sg, y, g, c)
        if sol is None:
            if single or last is None:
                return _result(alpha, nu, it, False, F, sat)
            # the guesses freed more multipliers than the system can determine: back to the last
            # solvable guesses, and from there one change per iteration
            single = True
            zero_set, sat = _one_change(*last)
            continue
        alpha = np.zeros(n)
        alpha[F] = sol[:f]
        nu = float(sol[f])
        lam = np.zeros(G)
        lam[Sg] = sol[f + 1:]
        Qa = QF @ alpha[F] if Q is not None else U @ (UF.T @ alpha[F])
        z = Qa - 1.0 + y * nu + lam[g]
        gsum = np.bincount(g, weights=alpha, minlength=G)
        # violations of the guesses: z < 0 on Z, α < 0 off Z, λ < 0 on S, sums above the caps off S
        vz = np.where(zero_set, np.where(z < -tol_z, -z, 0.0), np.where(alpha < 0.0, -alpha * qdiag, 0.0))
        vs = np.where(sat, np.where(lam < -tol_z, -lam, 0.0), np.where(gsum > c * (1.0 + 1e-12), gsum - c, 0.0))
        if not (vz.any() or vs.any()):
            return _result(alpha, nu, it, True, F, sat)
        last = (zero_set, sat, vz, vs)
        if not single:
            flip = vz > 0
            if max_release is not None:
                freed = np.flatnonzero(flip & zero_set)
                if freed.size > max_release:
                    flip[freed[np.argsort(-vz[freed])[max_release:]]] = False
            new_zero = zero_set ^ flip
            new_sat = sat ^ (vs > 0)
            key = new_zero.tobytes() + new_sat.tobytes()
            if key not in seen:
                seen.add(key)
                zero_set, sat = new_zero, new_sat
                continue
            single = True
        # after a cycle: only the most violated guess changes (one change per iteration, slower,
        # but it leaves the cycle)
        zero_set, sat = _one_change(zero_set, sat, vz, vs)
    return _result(alpha, nu, max_iter, False, np.flatnonzero(~zero_set), sat)


def _solve_guess(QFF, F, Sg, y, g, c):
    """(α_F, ν, λ_S) of the KKT system of the guesses (free multipliers F, saturated groups Sg),
    by one symmetric indefinite factorisation; None when it is singular."""
    f, s = F.size, Sg.size
    m = f + 1 + s
    M = np.zeros((m, m))
    M[:f, :f] = QFF
    M[:f, f] = y[F]
    M[f, :f] = y[F]
    rhs = np.zeros(m)
    rhs[:f] = 1.0
    if s:
        slot = np.full(c.size, -1)
        slot[Sg] = np.arange(s)
        rows = np.flatnonzero(slot[g[F]] >= 0)
        cols = f + 1 + slot[g[F[rows]]]
        M[rows, cols] = 1.0
        M[cols, rows] = 1.0
        rhs[f + 1:] = c[Sg]
    _, _, sol, info = _sysv(M, rhs, lower=1)
    return sol if info == 0 and np.all(np.isfinite(sol)) else None


def _one_change(zero_set, sat, vz, vs):
    """The guesses with only the most violated one changed."""
    zero_set, sat = zero_set.copy(), sat.copy()
    if vz.max(initial=0.0) >= vs.max(initial=0.0):
        k = int(np.argmax(vz))
        zero_set[k] = not zero_set[k]
    else:
        k = int(np.argmax(vs))
        sat[k] = not sat[k]
    return zero_set, sat


def _result(alpha, nu, it, converged, free, sat):
    return {"alpha": alpha, "b": nu, "iterations": it, "converged": converged, "free": free, "saturated": sat}
