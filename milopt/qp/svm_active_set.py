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

**Compiled.**  At a node the work of one iteration is small (a system of a few dozen rows, a
product with a few dozen columns of Q), so written as NumPy calls on small arrays its cost is
the interpreter's, not the arithmetic's.  The iteration loop is therefore compiled by numba,
with its own solve of the KKT system (in the private module ``milopt.qp._svm_kkt``): on the kernel rows, first with
the saturated groups' constraints removed by a null-space substitution (each saturated group's
first free multiplier expressed by the others: a system of :math:`|F| - |S|` rows and one constraint),
else, and on the features, the Cholesky factor of :math:`Q_{FF}` and the Schur
complement of the constraint columns, or where :math:`Q_{FF}` is not numerically positive
definite an LU factorisation with partial pivoting (Golub & Van Loan, *Matrix Computations*,
4th ed., Algorithms 4.2.1 and 3.4.1).  A Schur complement pivot below 1e-12 of its largest
diagonal entry sends the system to LU; an exactly zero LU pivot or a non-finite solution marks
the guess singular.  One singular case has a remedy of its own: when every free multiplier lies
in a saturated group and those groups' caps contradict :math:`y^\top\alpha = 0` (on RBF MUSK1
nodes of depth 8 one iteration in ten: the positive witnesses at their caps), α_F is the
solution without that row and ν, which then moves only the saturated groups' λ and the
unsaturated rows' z, is set by a ratio test: the smallest move along the side that restores the
balance at which one guess becomes violated, and that guess changes (a factorisation of the
full system instead returned rounding noise, ν ≈ 1e14, and the guesses it led to cycled: 4.6 %
of those nodes failed after 200 iterations).  A singular first guess is tried once more with no group saturated (the caps of the
saturated groups and :math:`y^\top\alpha = 0` can over-determine the free multipliers).  It reads the
kernel block of the rows it is given from the full signed kernel (no block is gathered), or
works on the signed features :math:`U = \operatorname{diag}(y) V`.  The first call compiles it
(about ten seconds, cached on disk; loading it from the cache takes about half a second per
process).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._svm_kkt import _eliminated_solve, _kkt_solve, _shift_nu

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
    y = np.ascontiguousarray(y, dtype=float)
    g = np.ascontiguousarray(groups, dtype=np.int64)
    c = np.ascontiguousarray(caps, dtype=float)
    n = y.size
    if (K is not None) + (V is not None) + (Q is not None) != 1:
        raise ValueError("give exactly one of K, V and Q")
    if K is not None:
        Q = np.asarray(K, dtype=float) * np.outer(y, y)
    use_q = Q is not None
    if use_q:
        Q, U = np.ascontiguousarray(Q, dtype=float), np.zeros((1, 1))
    else:
        Q, U = np.zeros((1, 1)), np.ascontiguousarray(np.asarray(V, dtype=float) * y[:, None])
    if g.shape != (n,) or (n and (g.min() < 0 or g.max() >= c.size)):
        raise ValueError("groups: one group id in 0..G-1 per multiplier expected")
    a0 = np.ascontiguousarray(alpha0, dtype=float)
    alpha, nu, it, ok, zero_set, sat = _active_set_kernel(
        Q, U, use_q, np.arange(n), y, g, c, a0, int(max_iter), float(zero),
        -1 if max_free is None else int(max_free), -1 if max_release is None else int(max_release))
    return {"alpha": alpha, "b": nu, "iterations": it, "converged": ok, "free": np.flatnonzero(~zero_set),
            "saturated": sat}


@njit(cache=True)
def _active_set_kernel(Q, U, use_q, rows, y, g, c, a0, max_iter, zero, max_free, max_release):
    """The method's loop, compiled: the problem on rows ``rows`` of the signed kernel ``Q``
    (``use_q``) or the signed features ``U`` (Q = U Uᵀ; U then holds exactly the problem's rows
    and ``rows`` is 0..n−1: its products are BLAS calls); ``y``, groups ``g`` (0..G-1),
    caps ``c`` and the warm start ``a0`` are given on those rows.  ``max_free`` and
    ``max_release`` −1: no limit.  Returns ``(alpha, nu, iterations, converged, zero_set, sat)``
    (the guesses last made: Z per row, S per group)."""
    n, G = y.size, c.size
    qdiag, zero_set, sat = _first_guesses(Q, U, use_q, rows, g, c, a0, zero)
    tol_z = 1e-10 * max(1.0, _largest(qdiag, 0.0) * _largest(c, 1.0))
    alpha, lam, nu = np.zeros(n), np.zeros(G), 0.0
    z, vz, vs = np.empty(n), np.zeros(n), np.zeros(G)
    last_zero, last_sat, last_vz, last_vs = zero_set.copy(), sat.copy(), vz.copy(), vs.copy()
    have_last = single = restarted = False
    seen_z = np.empty((max_iter, n), dtype=np.bool_)
    seen_s = np.empty((max_iter, G), dtype=np.bool_)
    seen_h = np.empty(max_iter, dtype=np.uint64)
    n_seen = 0
    free, slot, sg = np.empty(n, dtype=np.int64), np.empty(G, dtype=np.int64), np.empty(G, dtype=np.int64)
    for it in range(1, max_iter + 1):
        f, s = _number_guesses(zero_set, sat, free, slot, sg)
        if 0 <= max_free < f:
            return alpha, nu, it, False, zero_set, sat
        x, how = _solve_guess(Q, U, use_q, rows, free[:f], sg[:s], slot, y, g, c)
        if how == 0:
            if not have_last and not restarted and s > 0:
                # the first guesses are singular (the caps of the saturated groups and yᵀα = 0
                # over-determine the free multipliers): start again with no group saturated
                sat[:] = False
                restarted = True
                continue
            if single or not have_last:
                return alpha, nu, it, False, zero_set, sat
            # the guesses freed more multipliers than the system can determine: back to the last
            # solvable guesses, and from there one change per iteration
            single = True
            _copy(last_zero, zero_set)
            _copy(last_sat, sat)
            _one_change(zero_set, sat, last_vz, last_vs)
            continue
        alpha[:] = 0.0
        lam[:] = 0.0
        for k in range(f):
            alpha[free[k]] = x[k]
        nu = x[f]
        for k in range(s):
            lam[sg[k]] = x[f + 1 + k]
        _q_times(Q, U, use_q, rows, free[:f], x[:f], z)
        for i in range(n):
            z[i] = z[i] - 1.0 + y[i] * nu + lam[g[i]]
        forced = -1
        if how < 0:     # the caps contradict yᵀα = 0: ν by the ratio test, one guess forced to change
            nu, forced = _shift_nu(alpha, z, lam, y, g, zero_set, sat, G)
            if forced < 0:
                return alpha, nu, it, False, zero_set, sat
        if not _violations(alpha, z, lam, g, c, qdiag, zero_set, sat, tol_z, vz, vs) and forced < 0:
            return alpha, nu, it, True, zero_set, sat
        if forced >= 0:     # the ratio test's guess changes (its violation counted, at least tol_z)
            if forced < n:
                vz[forced] = max(vz[forced], tol_z)
            else:
                vs[forced - n] = max(vs[forced - n], tol_z)
        _copy(zero_set, last_zero)
        _copy(sat, last_sat)
        _copy(vz, last_vz)
        _copy(vs, last_vs)
        have_last = True
        if not single:
            new_zero, new_sat = _next_guess(zero_set, sat, vz, vs, max_release)
            h = _hash(new_zero, new_sat)
            if not _seen(seen_z, seen_s, seen_h, n_seen, new_zero, new_sat, h):
                seen_h[n_seen] = h
                _copy(new_zero, seen_z[n_seen])
                _copy(new_sat, seen_s[n_seen])
                n_seen += 1
                _copy(new_zero, zero_set)
                _copy(new_sat, sat)
                continue
            single = True
        # after a cycle: only the most violated guess changes (one change per iteration, slower,
        # but it leaves the cycle)
        _one_change(zero_set, sat, vz, vs)
    return alpha, nu, max_iter, False, zero_set, sat


@njit(cache=True)
def _solve_guess(Q, U, use_q, rows, free, sg, slot, y, g, c):
    """(x, how): the KKT system of the guesses (free rows ``free``, saturated groups ``sg``)
    solved, x = (α_F, ν, λ_S); ``how`` 1 solved, −1 solved without the row yᵀα = 0 which the
    saturated caps contradict (ν = 0; :func:`milopt.qp._svm_kkt._shift_nu` moves it), 0
    singular.  On the kernel rows by the null-space substitution of the saturated groups
    (:func:`milopt.qp._svm_kkt._eliminated_solve`), where that cannot decide (and on the
    features) by the full system."""
    f, s = free.size, sg.size
    x = np.empty(f + 1 + s)
    how = _eliminated_solve(Q, rows, free, sg, slot, y, g, c, x) if use_q else 0
    if how != 0:
        return x, how
    M, x = _guess_system(Q, U, use_q, rows, free, sg, slot, y, g, c)
    return x, 1 if _kkt_solve(M, x, f) else 0


@njit(cache=True)
def _first_guesses(Q, U, use_q, rows, g, c, a0, zero):
    """Q's diagonal on ``rows``, and the guesses of the warm start: Z the multipliers below
    ``zero`` times their cap, S the groups within ``zero`` (relative) of their cap."""
    n = rows.size
    qdiag = np.empty(n)
    zero_set = np.empty(n, dtype=np.bool_)
    gsum = np.zeros(c.size)
    for i in range(n):
        r = rows[i]
        qdiag[i] = Q[r, r] if use_q else _dot(U, r, r)
        zero_set[i] = a0[i] <= zero * c[g[i]]
        gsum[g[i]] += a0[i]
    sat = np.empty(c.size, dtype=np.bool_)
    for j in range(c.size):
        sat[j] = gsum[j] >= c[j] * (1.0 - zero)
    return qdiag, zero_set, sat


@njit(cache=True)
def _number_guesses(zero_set, sat, free, slot, sg):
    """The free rows (into ``free``), the saturated groups (into ``sg``) and each group's place
    among them (``slot``, −1 when unsaturated); returns their counts."""
    f = s = 0
    for i in range(zero_set.size):
        if not zero_set[i]:
            free[f] = i
            f += 1
    for j in range(sat.size):
        slot[j] = -1
        if sat[j]:
            slot[j], sg[s] = s, j
            s += 1
    return f, s


@njit(cache=True)
def _violations(alpha, z, lam, g, c, qdiag, zero_set, sat, tol_z, vz, vs):
    """Violations of the guesses (into ``vz`` per row, ``vs`` per group): z < 0 on Z, α < 0 off
    Z, λ < 0 on S, sums above the caps off S; whether there is any."""
    gsum = np.zeros(c.size)
    for i in range(alpha.size):
        gsum[g[i]] += alpha[i]
    viol = False
    for i in range(alpha.size):
        if zero_set[i]:
            vz[i] = -z[i] if z[i] < -tol_z else 0.0
        else:
            vz[i] = -alpha[i] * qdiag[i] if alpha[i] < 0.0 else 0.0
        viol |= vz[i] != 0.0
    for j in range(c.size):
        if sat[j]:
            vs[j] = -lam[j] if lam[j] < -tol_z else 0.0
        else:
            vs[j] = gsum[j] - c[j] if gsum[j] > c[j] * (1.0 + 1e-12) else 0.0
        viol |= vs[j] != 0.0
    return viol


@njit(cache=True)
def _next_guess(zero_set, sat, vz, vs, max_release):
    """Every violated guess changed, except that at most ``max_release`` multipliers (the most
    violated) leave Z at once."""
    n, G = zero_set.size, sat.size
    new_zero, new_sat = np.empty(n, dtype=np.bool_), np.empty(G, dtype=np.bool_)
    n_freed = 0
    for i in range(n):
        n_freed += vz[i] > 0.0 and zero_set[i]
    limit = 0 <= max_release < n_freed
    keep = np.zeros(n, dtype=np.bool_)
    if limit:
        # only the max_release largest violations of Z (the first of equal ones) are released
        for _ in range(max_release):
            best, k = 0.0, -1
            for i in range(n):
                if zero_set[i] and not keep[i] and vz[i] > best:
                    best, k = vz[i], i
            keep[k] = True
    for i in range(n):
        flip = vz[i] > 0.0 and not (limit and zero_set[i] and not keep[i])
        new_zero[i] = zero_set[i] != flip
    for j in range(G):
        new_sat[j] = sat[j] != (vs[j] > 0.0)
    return new_zero, new_sat


@njit(cache=True)
def _guess_system(Q, U, use_q, rows, free, sg, slot, y, g, c):
    """The KKT system of the guesses (free multipliers ``free``, saturated groups ``sg``):
    (matrix, right-hand side)."""
    f, s = free.size, sg.size
    m = f + 1 + s
    M = np.zeros((m, m))
    rhs = np.zeros(m)
    if use_q:
        for a in range(f):
            ra = rows[free[a]]
            for b in range(a + 1):
                M[a, b] = M[b, a] = Q[ra, rows[free[b]]]
    elif f:
        UF = np.empty((f, U.shape[1]))
        for a in range(f):
            UF[a] = U[rows[free[a]]]
        M[:f, :f] = np.dot(UF, UF.T)
    for a in range(f):
        i = free[a]
        M[a, f] = M[f, a] = y[i]
        rhs[a] = 1.0
        k = slot[g[i]]
        if k >= 0:
            M[a, f + 1 + k] = M[f + 1 + k, a] = 1.0
    for k in range(s):
        rhs[f + 1 + k] = c[sg[k]]
    return M, rhs


@njit(cache=True)
def _q_times(Q, U, use_q, rows, free, xf, out):
    """``out`` = Q[rows, free] xf (the free multipliers' contribution to Qα)."""
    for i in range(out.size):
        out[i] = 0.0
    if use_q:
        # row by row of Q (symmetric): f rows read, not n (they stay in cache)
        for k in range(free.size):
            rk, xk = rows[free[k]], xf[k]
            for i in range(rows.size):
                out[i] += Q[rk, rows[i]] * xk
    else:
        w = np.zeros(U.shape[1])
        for k in range(free.size):
            rk, xk = rows[free[k]], xf[k]
            for j in range(w.size):
                w[j] += U[rk, j] * xk
        out[:] = np.dot(U, w)      # the V path's U holds exactly the problem's rows


@njit(cache=True)
def _copy(src, dst):
    """dst[:] = src (a loop: cheaper to compile than the array expression)."""
    for i in range(src.size):
        dst[i] = src[i]


@njit(cache=True)
def _dot(U, a, b):
    """Row a of U times row b."""
    acc = 0.0
    for j in range(U.shape[1]):
        acc += U[a, j] * U[b, j]
    return acc


@njit(cache=True)
def _largest(v, floor):
    """max(floor, max v)."""
    out = floor
    for x in v:
        out = max(out, x)
    return out


@njit(cache=True)
def _seen(seen_z, seen_s, seen_h, n_seen, zero_set, sat, h):
    """Whether the guesses (``zero_set``, ``sat``; hash ``h``) are among the first ``n_seen``
    recorded (compared in full only where the hashes agree)."""
    for k in range(n_seen):
        if seen_h[k] != h:
            continue
        same = True
        for i in range(zero_set.size):
            if seen_z[k, i] != zero_set[i]:
                same = False
                break
        if same:
            for j in range(sat.size):
                if seen_s[k, j] != sat[j]:
                    same = False
                    break
        if same:
            return True
    return False


@njit(cache=True)
def _hash(zero_set, sat):
    """FNV-1a hash of the guesses."""
    h = np.uint64(14695981039346656037)
    p = np.uint64(1099511628211)
    for i in range(zero_set.size):
        h = (h ^ np.uint64(zero_set[i])) * p
    for j in range(sat.size):
        h = (h ^ np.uint64(sat[j])) * p
    return h


@njit(cache=True)
def _one_change(zero_set, sat, vz, vs):
    """Change (in place) only the most violated guess (the first of equal ones)."""
    kz = ks = 0
    for i in range(vz.size):
        if vz[i] > vz[kz]:
            kz = i
    for j in range(vs.size):
        if vs[j] > vs[ks]:
            ks = j
    if _largest(vz, 0.0) >= _largest(vs, 0.0):
        zero_set[kz] = not zero_set[kz]
    else:
        sat[ks] = not sat[ks]


@njit(cache=True)
def _active_set_rows(Q, U, use_q, y, groups, caps, alpha0, active, max_iter, zero, max_free, max_release):
    """The method on the rows ``active`` of a larger problem (a node of the MI-SVM branch and
    bound), its multipliers made exactly dual feasible.

    ``Q`` the full signed kernel (``use_q``) or ``U`` the full signed features; ``y``,
    ``groups`` (any ids, e.g. bags) and ``alpha0`` on all rows, ``caps`` per group id.  The
    groups met on ``active`` are numbered in increasing order as the method takes them.
    Returns ``(status, alpha, F, iterations)``: status 0 solved, 1 one class only on ``active``,
    2 not converged; α on all rows (zero off ``active``; projected as
    ``milopt.algorithms.bnb.bounds.project_dual``: clipped at zero, each group scaled to its cap,
    the larger side of yᵀα = 0 scaled down) and F = y − K(y∘α) = y∘(1 − Qα)."""
    N = y.size
    n = 0
    for i in range(N):
        n += active[i]
    rows = np.empty(n, dtype=np.int64)
    n = 0
    for i in range(N):
        if active[i]:
            rows[n] = i
            n += 1
    alpha = np.zeros(N)
    F = y.copy()
    pos = neg = False
    for i in range(n):
        if y[rows[i]] > 0:
            pos = True
        else:
            neg = True
    if not (pos and neg):
        return 1, alpha, F, 0
    gid = np.empty(caps.size, dtype=np.int64)
    gid[:] = -1
    for i in range(n):
        gid[groups[rows[i]]] = 0
    G = 0
    for j in range(caps.size):
        if gid[j] == 0:
            gid[j] = G
            G += 1
    c = np.empty(G)
    for j in range(caps.size):
        if gid[j] >= 0:
            c[gid[j]] = caps[j]
    g = np.empty(n, dtype=np.int64)
    yE, a0 = np.empty(n), np.empty(n)
    for i in range(n):
        g[i], yE[i], a0[i] = gid[groups[rows[i]]], y[rows[i]], alpha0[rows[i]]
    if use_q:
        a, _, it, ok, _, _ = _active_set_kernel(Q, U, use_q, rows, yE, g, c, a0, max_iter, zero, max_free,
                                                max_release)
    else:   # the features of the effective rows, gathered once
        UE = np.empty((n, U.shape[1]))
        for i in range(n):
            UE[i] = U[rows[i]]
        a, _, it, ok, _, _ = _active_set_kernel(Q, UE, use_q, np.arange(n), yE, g, c, a0, max_iter, zero,
                                                max_free, max_release)
    if not ok:
        return 2, alpha, F, it
    _project_scores(Q, U, use_q, y, rows, yE, g, c, a, alpha, F)
    return 0, alpha, F, it


@njit(cache=True)
def _project_scores(Q, U, use_q, y, rows, yE, g, c, a, alpha, F):
    """The multipliers ``a`` of rows ``rows`` made exactly dual feasible into ``alpha`` (all
    rows), and F = y∘(1 − Qα) into ``F``."""
    n, N, G = rows.size, y.size, c.size
    # exactly dual feasible: α ≥ 0, group sums ≤ caps, Σ y α = 0
    gs = np.zeros(G)
    for i in range(n):
        a[i] = max(a[i], 0.0)
        gs[g[i]] += a[i]
    sp = sn = 0.0
    for i in range(n):
        if gs[g[i]] > c[g[i]]:
            a[i] *= c[g[i]] / max(gs[g[i]], 1e-300)
        if yE[i] > 0:
            sp += a[i]
        elif yE[i] < 0:
            sn += a[i]
    for i in range(n):
        if sp > sn and yE[i] > 0:
            a[i] *= sn / sp
        elif sn > sp and yE[i] < 0:
            a[i] *= sp / sn
        alpha[rows[i]] = a[i]
    # F = y ∘ (1 − Q α) over the support of α (Q symmetric: its rows are its columns)
    if use_q:
        qa = np.zeros(N)
        for i in range(n):
            ai = a[i]
            if ai != 0.0:
                r = rows[i]
                for j in range(N):
                    qa[j] += ai * Q[r, j]
    else:
        w = np.zeros(U.shape[1])
        for i in range(n):
            if a[i] != 0.0:
                w += a[i] * U[rows[i]]
        qa = np.dot(U, w)
    for i in range(N):
        F[i] = y[i] * (1.0 - qa[i])

