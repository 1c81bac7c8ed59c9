r"""Compiled loops of the look-ahead bounds (:mod:`.bounds`); private helpers.

A node's look-ahead evaluates a few hundred candidates, pairs and trial step lengths, each a
handful of operations on vectors of a few dozen entries: in NumPy that is thousands of calls
on small arrays per node, and the interpreter's overhead is most of the cost.  These kernels
(numba, ``cache=True``) do the loops over candidates, partners, groups and trial points; the
dense products (a Gram block times all trial points, the features times all trial points)
stay one BLAS call each in :mod:`.bounds`.  Every value is the exact dual objective of an
exactly dual-feasible point, as in :mod:`.bounds` (the mathematics and the proofs are there
and in docs/exact_misvm.md); only the order of some floating-point sums differs from a NumPy
evaluation.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: compiled once and cached on disk; IEEE division (x/0 gives ±inf or nan, as in NumPy)
_jit = njit(cache=True, error_model="numpy")


@_jit
def pair_partners(alpha, active, y, caps, groups, gptr):
    """``(low, tmax)``: the partners of a pair step (a negative row of the working set whose bag
    has slack left, or a positive row with α > 0) and how far each may move (the slack, or α)."""
    G = caps.size
    slack = np.empty(G)
    for g in range(G):
        s = 0.0
        for k in range(gptr[g], gptr[g + 1]):
            s += alpha[k]
        slack[g] = caps[g] - s
    n = alpha.size
    low = np.empty(n, np.int64)
    tmax = np.empty(n)
    L = 0
    for k in range(n):
        if not active[k]:
            continue
        g = groups[k]
        if y[k] < 0 and slack[g] > 1e-12 * caps[g]:
            low[L] = k
            tmax[L] = slack[g]
            L += 1
        elif y[k] > 0 and alpha[k] > 0:
            low[L] = k
            tmax[L] = alpha[k]
            L += 1
    return low[:L], tmax[:L]


@_jit
def pair_gains(Fc, dc, capc, Fl, dl, tmax_l, Kcl):
    r"""max over partners j and 0 ≤ t ≤ min(t_max j, C) of t (F_i − F_j) − ½ t² a_ij (and 0), with
    a_ij = K_ii + K_jj − 2K_ij (at least 1e-12), for every candidate row i of ``Kcl``."""
    m, L = Kcl.shape
    out = np.zeros(m)
    for i in range(m):
        best = 0.0
        for j in range(L):
            diff = Fc[i] - Fl[j]
            a = max(dc[i] + dl[j] - 2.0 * Kcl[i, j], 1e-12)
            t = min(max(diff / a, 0.0), min(tmax_l[j], capc[i]))
            gain = t * diff - 0.5 * a * t * t
            if gain > best:
                best = gain
        out[i] = best
    return out


@_jit
def newton_matrix(Kff, yf, gf, sat, block, ridge):
    r"""The free-set Newton matrix :math:`Q_{ff} + \rho I + W \sum_{g\,\text{saturated}}
    \mathbf 1_g\mathbf 1_g^\top` (ρ, W: ``ridge`` and ``block`` times the mean diagonal of
    :math:`Q_{ff}`, at least 1e-12), in place of ``Kff``."""
    n = yf.size
    tr = 0.0
    for i in range(n):
        tr += Kff[i, i]
    scale = max(tr / n, 1e-12)
    for i in range(n):
        for j in range(n):
            v = Kff[i, j] * (yf[i] * yf[j])
            if gf[i] == gf[j] and sat[gf[i]]:
                v += block * scale
            Kff[i, j] = v
        Kff[i, i] += ridge * scale
    return Kff


@_jit
def saturated(alpha, idx, groups, caps):
    """Groups whose multipliers on ``idx`` sum to their cap (within 1e-9 relative)."""
    gs = np.zeros(caps.size)
    for k in idx:
        gs[groups[k]] += alpha[k]
    return gs >= caps * (1.0 - 1e-9)


@_jit
def symmetrise_lower(A):
    """Copy the lower triangle of ``A`` onto its upper one (in place)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            A[i, j] = A[j, i]
    return A


@_jit
def directions(RV, yE, yc, FE, Fc):
    r"""``(dT, lin, ok)``: the Newton directions :math:`d_E = -R - v\mu` of every candidate
    (rows of ``dT``), :math:`\mu = (y_c - y_E^\top R)/(y_E^\top v)`, with ``RV`` = [R | v] =
    :math:`M^{-1}[Q_{Ec} \mid y_E]`, and their rates :math:`\ell = y_cF_c + (y_E\circ F_E)^\top d_E`;
    ``ok`` False when :math:`y_E^\top v` or R is not finite or zero."""
    E, m1 = RV.shape
    m = m1 - 1
    yv = 0.0
    for e in range(E):
        yv += yE[e] * RV[e, m]
    dT = np.empty((m, E))
    lin = np.empty(m)
    if not (np.isfinite(yv) and abs(yv) > 0):
        return dT, lin, False
    for c in range(m):
        s = 0.0
        for e in range(E):
            r = RV[e, c]
            if not np.isfinite(r):
                return dT, lin, False
            s += yE[e] * r
        mu = (yc[c] - s) / yv
        ell = yc[c] * Fc[c]
        for e in range(E):
            d = -RV[e, c] - RV[e, m] * mu
            dT[c, e] = d
            ell += yE[e] * FE[e] * d
        lin[c] = ell
    return dT, lin, True


@_jit
def step_lengths(lin, kappa):
    """t* = ℓ/κ where ℓ > 0 and κ > 1e-12, else 0."""
    t = np.zeros(lin.size)
    for c in range(lin.size):
        if lin[c] > 0 and kappa[c] > 1e-12:
            t[c] = lin[c] / kappa[c]
    return t


@_jit
def gram_curvatures(VT, WT, KEcT, yc, kdiag):
    r"""κ_c = v_cᵀW_c + 2y_c K_Ecᵀv_c + K_cc for every candidate (rows v_c = y_E∘d_c, W_c = K_EE v_c)."""
    m, E = VT.shape
    kappa = np.empty(m)
    for c in range(m):
        a = 0.0
        b = 0.0
        for e in range(E):
            a += VT[c, e] * WT[c, e]
            b += KEcT[c, e] * VT[c, e]
        kappa[c] = a + 2.0 * yc[c] * b + kdiag[c]
    return kappa


@_jit
def row_norms2(ZT):
    """Squared norms of the rows of ``ZT``."""
    m, d = ZT.shape
    out = np.empty(m)
    for c in range(m):
        s = 0.0
        for k in range(d):
            s += ZT[c, k] * ZT[c, k]
        out[c] = s
    return out


@_jit
def group_starts(gE, capsv):
    """``(gstart, capg, grow)`` of the contiguous groups of the sorted rows' groups ``gE``: the
    first row of each group and an end sentinel, each group's cap (``capsv``: the caps of all
    groups) and each row's group (0, 1, ...)."""
    E = gE.size
    gstart = np.empty(E + 1, np.int64)
    nG = 0
    for e in range(E):
        if e == 0 or gE[e] != gE[e - 1]:
            gstart[nG] = e
            nG += 1
    gstart[nG] = E
    capg = np.empty(nG)
    grow = np.empty(E, np.int64)
    for g in range(nG):
        capg[g] = capsv[gE[gstart[g]]]
        for e in range(gstart[g], gstart[g + 1]):
            grow[e] = g
    return gstart[: nG + 1], capg, grow


@_jit
def project_columns(aE, dT, yE, grow, capg, gpos, yc, capc, I, TI, J, TJ, BT):
    r"""The trial points α_E + T_I d_I (+ T_J d_J) made exactly dual feasible, one per column p
    (I[p], T_I[p], and J[p], T_J[p] when J is not empty), by the steps of
    :func:`.bounds.project_dual`: T at most the candidate's cap; clip at 0; each group scaled
    down to its cap; the larger side of Σ yα = 0 scaled down.  ``grow``: each row's group.
    Writes the signed multipliers y∘α of the rows E into row p of ``BT`` and returns
    ``(bI, bJ, total)``: the candidates' signed multipliers and Σα of each point."""
    ncol = I.size
    E = aE.size
    nG = capg.size
    hasJ = J.size > 0
    bI = np.empty(ncol)
    bJ = np.zeros(ncol)
    total = np.empty(ncol)
    gs = np.empty(nG)
    sc = np.empty(nG)
    for p in range(ncol):
        i = I[p]
        ti = min(TI[p], capc[i])
        j = 0
        tj = 0.0
        if hasJ:
            j = J[p]
            tj = min(TJ[p], capc[j])
        row = BT[p]
        di = dT[i]
        dj = dT[j]
        gs[:] = 0.0
        # one pass over the rows: the clipped point and each bag's sum
        if hasJ:
            for e in range(E):
                a = max(di[e] * ti + aE[e] + dj[e] * tj, 0.0)
                row[e] = a
                gs[grow[e]] += a
        else:
            for e in range(E):
                a = max(di[e] * ti + aE[e], 0.0)
                row[e] = a
                gs[grow[e]] += a
        sp = ti if yc[i] > 0 else 0.0
        sn = 0.0 if yc[i] > 0 else ti
        if hasJ:
            if yc[j] > 0:
                sp += tj
            else:
                sn += tj
        for g in range(nG):
            s = gs[g]
            S = capg[g] / max(s, 1e-300) if s > capg[g] else 1.0
            sc[g] = S
            gs[g] = s * S
            if gpos[g]:
                sp += s * S
            else:
                sn += s * S
        fp = sn / max(sp, 1e-300) if sp > sn else 1.0
        fn = sp / max(sn, 1e-300) if sn > sp else 1.0
        tot = 0.0
        for g in range(nG):
            if gpos[g]:
                tot += gs[g] * fp
                sc[g] = fp * sc[g]
            else:
                tot += gs[g] * fn
                sc[g] = -(fn * sc[g])
        for e in range(E):
            row[e] *= sc[grow[e]]
        t = ti * (fp if yc[i] > 0 else fn)
        tot += t
        bI[p] = t * yc[i]
        if hasJ:
            t = tj * (fp if yc[j] > 0 else fn)
            tot += t
            bJ[p] = t * yc[j]
        total[p] = tot
    return bI, bJ, total


@_jit
def _keep_best(best, r, D):
    """``best[r] = max(best[r], D)`` for a finite D: the best bound of output slot r."""
    if np.isfinite(D) and D > best[r]:
        best[r] = D


@_jit
def finish_gram(BT, KB, KEcT, kdiag, I, J, bI, bJ, kIJ, total, nout):
    r"""Best D over the trial points of each output slot (column p belongs to slot p mod
    ``nout``): D = Σα − ½ q with q = bᵀK_EE b + 2b_I K_EIᵀb + b_I²K_II (+ the J terms and
    2b_Ib_JK_IJ), ``KB`` = ``BT`` K_EE; −inf where D is not finite."""
    ncol, E = BT.shape
    hasJ = J.size > 0
    best = np.full(nout, -np.inf)
    for p in range(ncol):
        i = I[p]
        q = 0.0
        cI = 0.0
        for e in range(E):
            q += BT[p, e] * KB[p, e]
            cI += KEcT[i, e] * BT[p, e]
        q += bI[p] * (2.0 * cI + bI[p] * kdiag[i])
        if hasJ:
            j = J[p]
            cJ = 0.0
            for e in range(E):
                cJ += KEcT[j, e] * BT[p, e]
            q += bJ[p] * (2.0 * cJ + bJ[p] * kdiag[j]) + 2.0 * bI[p] * bJ[p] * kIJ[p % nout]
        _keep_best(best, p % nout, total[p] - 0.5 * q)
    return best


@_jit
def finish_features(ZT, xc, I, J, bI, bJ, total, nout):
    r"""Best D over the trial points of each output slot (as :func:`finish_gram`) in the feature
    space: q = ‖Z_p + b_I x_I + b_J x_J‖², ``ZT`` = ``BT`` X_E."""
    ncol, d = ZT.shape
    hasJ = J.size > 0
    best = np.full(nout, -np.inf)
    for p in range(ncol):
        i = I[p]
        q = 0.0
        if hasJ:
            j = J[p]
            for k in range(d):
                z = ZT[p, k] + bI[p] * xc[i, k] + bJ[p] * xc[j, k]
                q += z * z
        else:
            for k in range(d):
                z = ZT[p, k] + bI[p] * xc[i, k]
                q += z * z
        _keep_best(best, p % nout, total[p] - 0.5 * q)
    return best


@_jit
def joint_steps(I, J, kappa, lin, tstar, kij, steps, det_tol):
    r"""Trial step lengths of the joint steps along the directions of I[p] and J[p]: the
    maximiser of the quadratic model ℓ_I t_I + ℓ_J t_J − ½(κ_I t_I² + 2k_IJ t_I t_J + κ_J t_J²)
    where it is positive in both and κ_Iκ_J − k_IJ² > ``det_tol``·κ_Iκ_J, else (t*_I, 0); each
    scaled by the multiples ``steps`` (columns ordered step-major)."""
    npair = I.size
    ns = steps.size
    TI = np.empty(ns * npair)
    TJ = np.empty(ns * npair)
    for p in range(npair):
        ki = kappa[I[p]]
        kj = kappa[J[p]]
        li = lin[I[p]]
        lj = lin[J[p]]
        c = kij[p]
        det = ki * kj - c * c
        ti = (kj * li - c * lj) / det
        tj = (ki * lj - c * li) / det
        if not (det > det_tol * max(ki * kj, 1e-300) and ti > 0 and tj > 0):
            ti = tstar[I[p]]
            tj = 0.0
        for s in range(ns):
            TI[s * npair + p] = steps[s] * ti
            TJ[s * npair + p] = steps[s] * tj
    return TI, TJ


@_jit
def gram_cross(VT, WT, KEcT, yc, kIJ, I, J):
    r"""d_Iᵀ Q d_J = v_IᵀW_J + y_J v_IᵀK_EJ + y_I K_EIᵀv_J + y_Iy_J K_IJ for every pair."""
    npair = I.size
    E = VT.shape[1]
    out = np.empty(npair)
    for p in range(npair):
        i = I[p]
        j = J[p]
        a = 0.0
        b = 0.0
        c = 0.0
        for e in range(E):
            a += VT[i, e] * WT[j, e]
            b += VT[i, e] * KEcT[j, e]
            c += KEcT[i, e] * VT[j, e]
        out[p] = a + yc[j] * b + yc[i] * c + yc[i] * yc[j] * kIJ[p]
    return out


@_jit
def feature_cross(ZdT, I, J):
    """Z_Iᵀ Z_J for every pair (rows of ``ZdT``: the directions' features)."""
    npair = I.size
    d = ZdT.shape[1]
    out = np.empty(npair)
    for p in range(npair):
        s = 0.0
        for k in range(d):
            s += ZdT[I[p], k] * ZdT[J[p], k]
        out[p] = s
    return out


@_jit
def bag_pairs(ik, owner, at, others):
    """``(I, J, seg)``: every (i, j) with i in ``ik`` and j a remaining candidate of bag
    ``others[q]`` (its position ``at``), bag by bag, i-major; ``seg[q]``: bag q's candidates."""
    nq = others.size
    seg = np.zeros(nq, np.int64)
    for q in range(nq):
        for k in range(owner.size):
            if owner[k] == others[q]:
                seg[q] += 1
    total = ik.size * seg.sum()
    I = np.empty(total, np.int64)
    J = np.empty(total, np.int64)
    jj = np.empty(owner.size, np.int64)
    off = 0
    for q in range(nq):
        n = 0
        for k in range(owner.size):
            if owner[k] == others[q]:
                jj[n] = at[k]
                n += 1
        for a in range(ik.size):
            for b in range(n):
                I[off] = ik[a]
                J[off] = jj[b]
                off += 1
    return I, J, seg


@_jit
def two_bag_best(Dp, seg, gk, D):
    """max(g_i, max over the bags q of min over j of D_ij − D) for every i (``Dp``: the joint
    values in the order of :func:`bag_pairs`)."""
    ni = gk.size
    best = gk.copy()
    off = 0
    for q in range(seg.size):
        n = seg[q]
        for a in range(ni):
            lo = np.inf
            for b in range(n):
                lo = min(lo, Dp[off + a * n + b])
            best[a] = max(best[a], lo - D)
        off += ni * n
    return best
