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
    (α_F, ν, λ_S as :func:`_kkt_solve` leaves them).  Returns 1 when solved; −1 when every
    free multiplier lies in a saturated group and their caps contradict yᵀα = 0 (Zᵀy = 0,
    e0 ≠ 0: α_F solves the system without the row yᵀα = 0, ν = 0: see :func:`_shift_nu`); 0
    (``x`` undefined) when the full system must decide: a saturated group without a free
    multiplier, a reduced matrix that is not numerically positive definite, or Zᵀy = 0 with
    e0 = 0 (ν undetermined)."""
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
    if ww > 0.0:
        nu, how = (wt - e0) / ww, 1
    else:
        # Zᵀy = 0: every free multiplier lies in a saturated group and yᵀα = −e0 whatever u.
        # e0 = 0: ν undetermined (the full system decides); e0 ≠ 0: the guesses contradict
        # yᵀα = 0 (the full system is singular): u solves the system without that row, ν = 0,
        # and the caller moves ν (:func:`_shift_nu`)
        tot = 0.0
        for k in range(s):
            tot += c[sg[k]]
        if not abs(e0) > 1e-12 * tot:
            return 0
        nu, how = 0.0, -1
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
    return how


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
def _cholesky_rows(A, L, n, scale):
    """The Cholesky factor of A's leading n × n block into L's lower triangle (L may be A itself:
    in place); False when a pivot is at most 1e-12 of ``scale`` of its row (not numerically
    positive definite)."""
    for j in range(n):
        for i in range(j + 1):
            acc = A[j, i]
            for k in range(i):
                acc -= L[j, k] * L[i, k]
            if i == j:
                if not acc > 1e-12 * scale[j]:
                    return False
                L[j, j] = np.sqrt(acc)
            else:
                L[j, i] = acc / L[i, i]
    return True


@njit(cache=True)
def _cholesky(H, Q, R, red, pv):
    """H = L Lᵀ in place (lower triangle); False when a pivot is at most 1e-12 of the diagonal
    entries of Q its row combines (not numerically positive definite)."""
    r = red.size
    scale = np.empty(r)
    for j in range(r):
        a, p = red[j], pv[j]
        scale[j] = Q[R[a], R[a]] + (Q[R[p], R[p]] if p >= 0 else 0.0)
    return _cholesky_rows(H, H, r, scale)


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
    scale = np.empty(f)
    for i in range(f):
        scale[i] = M[i, i]
    if not _cholesky_rows(M, L, f, scale):      # (numerically) not positive definite
        return _lu_solve(M, rhs, 0.0)
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


@njit(cache=True)
def _shift_nu(alpha, z, lam, y, g, zero_set, sat, G):
    """The multiplier ν of a guess whose caps contradict yᵀα = 0 (:func:`_eliminated_solve`
    returned −1; ``z`` and ``lam`` computed with ν = 0, changed in place).

    Every free multiplier is in a saturated group, so ν moves only λ_g = λ_g(0) − y_g ν on the
    saturated groups and z_i = z_i(0) + y_i ν on the rows of unsaturated ones.  yᵀα has the
    sign σ of the side that is too heavy; ν = σt with t ≥ 0 lowers that side's λ_g and the
    other side's z_i of Z (a heavy-side group released, or an other-side multiplier freed,
    restores the balance).  t is the first point where one of them reaches zero (the smallest
    change of the guesses, a ratio test); that one is returned (a row i, or G-row offset
    ``alpha.size + g``) for the caller to change, with ν.  (−1: no guess can restore the
    balance; the guesses are singular.)"""
    n = alpha.size
    ya = 0.0
    for i in range(n):
        ya += y[i] * alpha[i]
    sigma = 1.0 if ya > 0.0 else -1.0
    gy = np.zeros(G)
    for i in range(n):
        gy[g[i]] = y[i]
    best, forced = np.inf, -1
    for i in range(n):
        if zero_set[i] and not sat[g[i]] and y[i] * sigma < 0.0:
            t = max(z[i], 0.0)
            if t < best:
                best, forced = t, i
    for k in range(G):
        if sat[k] and gy[k] * sigma > 0.0:
            t = max(lam[k], 0.0)
            if t < best:
                best, forced = t, n + k
    if forced < 0:
        return 0.0, -1
    nu = sigma * best
    for i in range(n):
        if not sat[g[i]]:
            z[i] += y[i] * nu
    for k in range(G):
        if sat[k]:
            lam[k] -= gy[k] * nu
    return nu, forced
