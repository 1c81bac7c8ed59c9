r"""The KKT systems of the active-set method (:mod:`milopt.qp.svm_active_set`), compiled.

One guess of the method (free multipliers F, saturated groups S) defines the system

.. math::

    \begin{pmatrix} Q_{FF} & y_F & A_{SF}^\top \\ y_F^\top & 0 & 0 \\ A_{SF} & 0 & 0\end{pmatrix}
    \begin{pmatrix}\alpha_F \\ \nu \\ \lambda_S\end{pmatrix} =
    \begin{pmatrix}\mathbf 1 \\ 0 \\ c_S\end{pmatrix}.

Two solvers.  :func:`_kkt_solve` factorises it as it stands: the Cholesky factor of
:math:`Q_{FF}` and the Schur complement of the 1 + |S| constraint columns (LU where either is
singular).  :func:`_eliminated_solve` first removes the group constraints by a null-space
substitution (Nocedal & Wright, *Numerical Optimization*, 2nd ed., §16.2): each saturated group's
first free multiplier p_g is :math:`c_g - \sum_{j \in F_g \setminus p_g} \alpha_j`, so with
:math:`\alpha_F = Z u + a_0` (Z: a column :math:`e_j - e_{p_g}` per remaining multiplier of a
saturated group, :math:`e_j` per multiplier of an unsaturated one; :math:`a_0` = c_g at the
pivots) the system becomes

.. math::

    Z^\top Q_{FF} Z\, u + (Z^\top y)\,\nu = Z^\top(\mathbf 1 - Q_{FF} a_0), \qquad
    (Z^\top y)^\top u = -y^\top a_0,

of |F| − |S| rows and one constraint, and
:math:`\lambda_g = 1 - y_{p_g}\nu - (Q_{FF}\alpha_F)_{p_g}` from the pivot's row.  At the nodes of
the MI-SVM branch and bound with an RBF kernel about 80 multipliers are free and 50 bags
saturated (most of them with one free instance, an instance at its bag's cap): the full system
has about 130 rows, the reduced one about 30, and the factorisation costs a twentieth.  The
solution is the same point (the substitution is exact); where the reduced matrix is not
numerically positive definite, or the constraint's Schur complement is zero, the full system
decides, as before.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _eliminated_solve(Q, rows, free, sg, slot, y, g, c, x):
    """The guess's KKT system (free rows ``free`` of ``rows``, saturated groups ``sg``, their
    places ``slot``) by the null-space substitution of the saturated groups, into ``x``
    (α_F, ν, λ_S as :func:`_kkt_solve` leaves them).  Returns 1 when solved, 0 (``x``
    undefined) when the full system must decide: a saturated group without a free multiplier,
    a reduced matrix that is not numerically positive definite, or Zᵀy = 0 (every free
    multiplier in a saturated group: ν is then undetermined)."""
    f, s = free.size, sg.size
    piv, red, pv = _pivots(free, s, slot, g)
    if piv.size == 0 and s > 0:
        return 0
    R = np.empty(f, dtype=np.int64)
    for a in range(f):
        R[a] = rows[free[a]]
    H, h, e, e0 = _reduced_system(Q, R, free, piv, red, pv, sg, y, c)
    r = red.size
    if not _cholesky(H, Q, R, red, pv):
        return 0
    # w = L⁻¹e, t = L⁻¹h; ν = (wᵀt − e0) / wᵀw; u = L⁻ᵀ(t − w ν)
    for j in range(r):
        ae, ah = e[j], h[j]
        for k in range(j):
            ae -= H[j, k] * e[k]
            ah -= H[j, k] * h[k]
        e[j], h[j] = ae / H[j, j], ah / H[j, j]
    ww = wt = 0.0
    for j in range(r):
        ww += e[j] * e[j]
        wt += e[j] * h[j]
    if not ww > 0.0:
        return 0
    nu = (wt - e0) / ww
    for j in range(r - 1, -1, -1):
        acc = h[j] - e[j] * nu
        for k in range(j + 1, r):
            acc -= H[k, j] * h[k]
        h[j] = acc / H[j, j]
    for k in range(s):
        x[piv[k]] = c[sg[k]]
    for j in range(r):
        x[red[j]] = h[j]
        if pv[j] >= 0:
            x[pv[j]] -= h[j]
    x[f] = nu
    # λ_g from the pivot's row: (Q_FF α_F)_p + y_p ν + λ_g = 1
    for k in range(s):
        a = piv[k]
        acc = 1.0 - y[free[a]] * nu
        for b in range(f):
            acc -= Q[R[a], R[b]] * x[b]
        x[f + 1 + k] = acc
    for i in range(f + 1 + s):
        if not np.isfinite(x[i]):
            return 0
    return 1


@njit(cache=True)
def _pivots(free, s, slot, g):
    """(piv, red, pv): the pivot of each saturated group (its first free row, a position in
    ``free``), the remaining free rows, and the pivot of each one's group (−1: unsaturated).
    ``piv`` is empty when a saturated group has no free row."""
    f = free.size
    piv = np.full(s, -1, dtype=np.int64)
    for a in range(f):
        k = slot[g[free[a]]]
        if k >= 0 and piv[k] < 0:
            piv[k] = a
    for k in range(s):
        if piv[k] < 0:
            return piv[:0], piv[:0], piv[:0]
    red = np.empty(f - s, dtype=np.int64)
    pv = np.empty(f - s, dtype=np.int64)
    m = 0
    for a in range(f):
        k = slot[g[free[a]]]
        if k >= 0 and piv[k] == a:
            continue
        red[m] = a
        pv[m] = piv[k] if k >= 0 else -1
        m += 1
    return piv, red, pv


@njit(cache=True)
def _reduced_system(Q, R, free, piv, red, pv, sg, y, c):
    """(H, h, e, e0): H = ZᵀQ_FF Z (lower triangle), h = Zᵀ(1 − Q_FF a₀), e = Zᵀy and
    e0 = −yᵀa₀ (``R``: the kernel rows of the free multipliers)."""
    f, s, r = free.size, piv.size, red.size
    qa0 = np.zeros(f)                          # Q_FF a₀
    for a in range(f):
        acc = 0.0
        for k in range(s):
            acc += c[sg[k]] * Q[R[a], R[piv[k]]]
        qa0[a] = acc
    e0 = 0.0
    for k in range(s):
        e0 -= y[free[piv[k]]] * c[sg[k]]
    H = np.empty((r, r))
    h, e = np.empty(r), np.empty(r)
    for j in range(r):
        a, p = red[j], pv[j]
        h[j] = -qa0[a] + (qa0[p] if p >= 0 else 1.0)
        e[j] = y[free[a]] - (y[free[p]] if p >= 0 else 0.0)
        for i in range(j + 1):
            b, q = red[i], pv[i]
            v = Q[R[a], R[b]]
            if q >= 0:
                v -= Q[R[a], R[q]]
            if p >= 0:
                v -= Q[R[p], R[b]]
                if q >= 0:
                    v += Q[R[p], R[q]]
            H[j, i] = v
    return H, h, e, e0


@njit(cache=True)
def _cholesky(H, Q, R, red, pv):
    """H = L Lᵀ in place (lower triangle); False when a pivot is at most 1e-12 of the diagonal
    entries of Q its row combines (not numerically positive definite)."""
    r = red.size
    for j in range(r):
        for i in range(j + 1):
            acc = H[j, i]
            for k in range(i):
                acc -= H[j, k] * H[i, k]
            if i == j:
                a, p = red[j], pv[j]
                scale = Q[R[a], R[a]] + (Q[R[p], R[p]] if p >= 0 else 0.0)
                if not acc > 1e-12 * scale:
                    return False
                H[j, j] = np.sqrt(acc)
            else:
                H[j, i] = acc / H[i, i]
    return True


@njit(cache=True)
def _kkt_solve(M, rhs, f):
    """Solve the KKT system M x = rhs in place (x in ``rhs``); its first ``f`` rows and columns
    are Q_FF.  When Q_FF is positive definite (every Cholesky pivot above 1e-12 of its diagonal
    entry), by its Cholesky factor L and the Schur complement S = CᵀQ_FF⁻¹C of the constraint
    columns C (f³/3 flops against 2m³/3 for LU), S singular (a pivot below 1e-12 of its largest
    diagonal entry) meaning the guess is; else by LU on M."""
    m = rhs.size
    p = m - f
    L = np.empty((f, f))
    for i in range(f):
        for j in range(i + 1):
            acc = M[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if not acc > 1e-12 * M[i, i]:      # (numerically) not positive definite
                    return _lu_solve(M, rhs, 0.0)
                L[i, i] = np.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    # W = L⁻¹C and t = L⁻¹r₁ (forward substitution, C and r₁ side by side)
    W = np.empty((f, p + 1))
    for i in range(f):
        for q in range(p + 1):
            acc = M[i, f + q] if q < p else rhs[i]
            for k in range(i):
                acc -= L[i, k] * W[k, q]
            W[i, q] = acc / L[i, i]
    # S μ = Wᵀt − r₂, S = WᵀW
    S = np.empty((p, p))
    b = np.empty(p)
    big = 0.0
    for q in range(p):
        for r in range(p):
            acc = 0.0
            for i in range(f):
                acc += W[i, q] * W[i, r]
            S[q, r] = acc
        acc = 0.0
        for i in range(f):
            acc += W[i, q] * W[i, p]
        b[q] = acc - rhs[f + q]
        big = max(big, S[q, q])
    if not _lu_solve(S, b, 1e-12 * big):
        # S singular (e.g. every free multiplier in a saturated group): LU on the whole system, singular
        # only at an exact zero pivot; its point is checked by the loop's KKT test like any other
        return _lu_solve(M, rhs, 0.0)
    # x = L⁻ᵀ(t − W μ)
    for i in range(f - 1, -1, -1):
        acc = W[i, p]
        for q in range(p):
            acc -= W[i, q] * b[q]
        for k in range(i + 1, f):
            acc -= L[k, i] * rhs[k]
        rhs[i] = acc / L[i, i]
        if not np.isfinite(rhs[i]):
            return False
    for q in range(p):
        rhs[f + q] = b[q]
    return True


@njit(cache=True)
def _lu_solve(M, rhs, tiny):
    """Solve M x = rhs in place (x in ``rhs``) by LU with partial pivoting; False when a pivot is
    at most ``tiny`` (singular) or the solution is not finite."""
    m = rhs.size
    for k in range(m):
        p, best = k, abs(M[k, k])
        for i in range(k + 1, m):
            if abs(M[i, k]) > best:
                p, best = i, abs(M[i, k])
        if not best > tiny:
            return False
        if p != k:
            for j in range(k, m):
                M[k, j], M[p, j] = M[p, j], M[k, j]
            rhs[k], rhs[p] = rhs[p], rhs[k]
        piv = M[k, k]
        for i in range(k + 1, m):
            li = M[i, k] / piv
            if li != 0.0:
                for j in range(k + 1, m):
                    M[i, j] -= li * M[k, j]
                rhs[i] -= li * rhs[k]
    for k in range(m - 1, -1, -1):
        acc = rhs[k]
        for j in range(k + 1, m):
            acc -= M[k, j] * rhs[j]
        rhs[k] = acc / M[k, k]
        if not np.isfinite(rhs[k]):
            return False
    return True
