r"""Bounds and objective evaluations of the MI-SVM branch and bound.

* :func:`mi_objective_best_b`: the MI-SVM objective :math:`\Phi(w, b^*)` with the exact best
  intercept (an upper bound: every (w, b) is feasible);
* :func:`project_dual`: multipliers made exactly dual feasible, so that their dual objective
  is a lower bound by weak duality (Kent & Yu eq. 3);
* :func:`pair_step_gains`: the one-step dual look-ahead of every candidate witness;
* :func:`newton_step_dual`, :func:`free_set_newton`: the projected Newton-step look-ahead.

The proofs are in docs/exact_misvm.md.
"""
from __future__ import annotations

import numpy as np

from milopt.segments import segment_max


def mi_objective_best_b(raw, costs, ypos, ptr, w_norm2):
    r"""min over b of Φ(w, b) for scores ``raw`` = X w: ``(value, b)``.

    .. math::

        \Phi(w, b) = \tfrac12\lVert w\rVert^2 + \sum_{Y_I=+1} C_I [1 - m_I - b]_+
            + \sum_{Y_I=-1} C_I [1 + m_I + b]_+ ,\qquad m_I = \max_{i\in I} w^\top z_i

    is convex piecewise linear in b with breakpoints :math:`b = 1 - m_I` (positive bags) and
    :math:`b = -1 - m_I` (negative bags); its minimum is at a breakpoint.  The breakpoints are
    sorted and the objective is evaluated at all of them by cumulative sums (O(B log B)).
    """
    m = segment_max(raw, ptr)
    c = np.asarray(costs, dtype=float)
    ypos = np.asarray(ypos, dtype=bool)
    # positive bag I: C_I (1 - m_I - b) for b < 1 - m_I ; negative: C_I (1 + m_I + b) for b > -1 - m_I
    kp = (1.0 - m)[ypos]
    cp = c[ypos]
    kn = (-1.0 - m)[~ypos]
    cn = c[~ypos]
    cand = np.unique(np.concatenate([kp, kn]))
    if cand.size == 0:
        return float(0.5 * w_norm2), 0.0
    op = np.argsort(kp)
    kp_s, cp_s = kp[op], cp[op]
    on = np.argsort(kn)
    kn_s, cn_s = kn[on], cn[on]
    # positive part at b: Σ_{k_I > b} C_I (k_I - b)
    cpos_rev_c = np.concatenate([np.cumsum((cp_s)[::-1])[::-1], [0.0]])
    cpos_rev_ck = np.concatenate([np.cumsum((cp_s * kp_s)[::-1])[::-1], [0.0]])
    ip = np.searchsorted(kp_s, cand, side="right")
    pos_loss = cpos_rev_ck[ip] - cand * cpos_rev_c[ip]
    # negative part at b: Σ_{k_I < b} C_I (b - k_I)
    cneg_c = np.concatenate([[0.0], np.cumsum(cn_s)])
    cneg_ck = np.concatenate([[0.0], np.cumsum(cn_s * kn_s)])
    i_n = np.searchsorted(kn_s, cand, side="left")
    neg_loss = cand * cneg_c[i_n] - cneg_ck[i_n]
    val = pos_loss + neg_loss
    k = int(np.argmin(val))
    return float(0.5 * w_norm2 + max(val[k], 0.0)), float(cand[k])


def project_dual(a, y, groups, caps):
    """Make multipliers exactly dual feasible: α ≥ 0, group sums ≤ C_g (each group scaled down),
    and Σ y α = 0 (the larger side scaled down).  Every step keeps the previous constraints."""
    a = np.maximum(np.asarray(a, dtype=float), 0.0)
    gs = np.bincount(groups, weights=a, minlength=caps.size)
    scale = np.where(gs > caps, caps / np.maximum(gs, 1e-300), 1.0)
    a = a * scale[groups]
    sp, sn = a[y > 0].sum(), a[y < 0].sum()
    if sp > sn:
        a = np.where(y > 0, a * (sn / sp), a)
    elif sn > sp:
        a = np.where(y < 0, a * (sp / sn), a)
    return a


def pair_step_gains(cand, alpha, active, y, F, caps, groups, gptr, diag, krows):
    r"""Exact gain of the best feasible pair step that brings each candidate row into the
    effective set (α_cand = 0, its bag's group empty).

    For a partner j of the working set (a negative instance whose bag has slack left, or a
    positive instance with α_j > 0) and :math:`\alpha_i \leftarrow t`,

    .. math::

        D(\alpha + \text{step}) = D(\alpha) + t (F_i - F_j) - \tfrac12 t^2 a_{ij},\qquad
        a_{ij} = K_{ii} + K_{jj} - 2K_{ij},

    for :math:`0 \le t \le t_{\max}` (the partner's room and C_I); the gain is its maximum over
    t and j (closed form, vectorised).  ``krows(rows, cols)`` returns kernel blocks.
    """
    gsum = np.add.reduceat(alpha, gptr[:-1])
    slack = caps - gsum
    neg_open = active & (y < 0) & (slack[groups] > 1e-12 * caps[groups])
    pos_has = active & (y > 0) & (alpha > 0)
    low = np.flatnonzero(neg_open | pos_has)
    if low.size == 0 or cand.size == 0:
        return np.zeros(cand.size)
    tmax_j = np.where(y[low] < 0, slack[groups[low]], alpha[low])
    tmax = np.minimum(tmax_j[None, :], caps[groups[cand]][:, None])
    diff = F[cand][:, None] - F[low][None, :]
    a = np.maximum(diag[cand][:, None] + diag[low][None, :] - 2.0 * krows(cand, low), 1e-12)
    t = np.clip(diff / a, 0.0, tmax)
    gain = t * diff - 0.5 * a * t * t
    return np.maximum(gain.max(axis=1), 0.0)


#: step lengths tried by :func:`newton_step_dual`, as multiples of the unconstrained Newton step
#: (on MUSK1 nodes the best multiple is 0.25-0.75 for four candidates in five: clipping at zero
#: shortens the useful step)
NEWTON_STEPS = (0.25, 0.5, 0.75)


def newton_step_dual(cand, alpha, idx, y, F, caps, groups, krows, diag, msolve, X=None):
    r"""Dual objective reached by a projected Newton step that brings each candidate row into the
    effective set (an array, one value per candidate; −inf where no step was taken).

    ``alpha`` is dual feasible and ``idx`` (sorted) are the rows that may move; the multipliers
    outside ``idx`` are taken as zero (which keeps the point dual feasible).  ``msolve`` applies
    :math:`M^{-1}` on ``idx``: the interior-point method's last Newton matrix
    (:math:`M = Q + \mathrm{diag}(z/\alpha) + A^\top W A`: near the optimum it blocks the
    multipliers at zero and the sums of saturated groups, and acts as the reduced Hessian on the
    free multipliers), or the same matrix built on the free multipliers of a coordinate-descent
    solution (:func:`free_set_newton`).  For a candidate c (α_c = 0, its group otherwise empty) the direction
    raises α_c at unit rate and moves the effective multipliers by the curvature-minimising
    reply that keeps :math:`\sum y\alpha = 0` to second order,

    .. math::

        d_E = -M^{-1}(Q_{Ec} + y_E\mu),\qquad \mu = \frac{y_c - y_E^\top M^{-1}Q_{Ec}}{y_E^\top M^{-1}y_E},

    along which the dual rises at rate :math:`\ell = y_c F_c + (y_E\circ F_E)^\top d_E` with
    curvature :math:`\kappa = d^\top Q d`; the unconstrained step is :math:`t^* = \ell/\kappa`.
    Every trial point :math:`\alpha + t d` (t a multiple of t* in :data:`NEWTON_STEPS`, at most
    C of the candidate's bag) is made exactly dual feasible by the steps of :func:`project_dual`
    (clip at 0, scale groups to their caps, scale the larger side of Σ yα = 0), and its dual
    objective is evaluated exactly; the value is the best over the trial points.  ``krows(rows,
    cols)`` gives kernel blocks and ``diag`` the kernel's diagonal.  With the linear features ``X`` the quadratic terms are formed in the feature space
    (d × m products instead of n × m).

    The direction is only a guess; the bound is weak duality at the projected point, so it is
    valid whatever ``msolve`` is (:class:`NewtonLookahead` also takes steps along two
    candidates' directions at once).  It captures much more of the child's gain than a single
    pair step (:func:`pair_step_gains`), because the reply of all free multipliers is used.
    """
    look = NewtonLookahead(cand, alpha, idx, y, F, caps, groups, krows, diag, msolve, X)
    return look.single()


class NewtonLookahead:
    """The Newton directions of a node's candidate witnesses (see :func:`newton_step_dual`) and
    the exact dual objective of projected steps along one or two of them."""

    def __init__(self, cand, alpha, idx, y, F, caps, groups, krows, diag, msolve, X=None):
        cand = np.asarray(cand, dtype=np.int64)
        self.cand, self.m, self.idx = cand, cand.size, idx
        self.ok = False
        if self.m == 0 or idx.size == 0:
            return
        yE, yc = y[idx], y[cand]
        aE = alpha[idx]
        KEc = krows(idx, cand)
        QEc = KEc * yE[:, None] * yc[None, :]
        R = msolve(QEc)
        v = msolve(yE)
        yv = float(yE @ v)
        if not (np.isfinite(yv) and abs(yv) > 0 and np.all(np.isfinite(R))):
            return
        mu = (yc - yE @ R) / yv
        dE = -R - v[:, None] * mu[None, :]
        self.yE, self.yc, self.aE, self.dE, self.KEc = yE, yc, aE, dE, KEc
        if X is not None:
            self.XE, self.xc = X[idx], X[cand]
            self.yXt = (self.XE * yE[:, None]).T           # (y∘X)_Eᵀ, d × |E|
            self.KEE = None
            # features of every direction (E part and the candidate's unit step): κ and cross terms
            Zd = self.XE.T @ (yE[:, None] * dE) + (self.xc * yc[:, None]).T
            self.kappa = np.einsum("dm,dm->m", Zd, Zd)
            self.Zd = Zd
        else:
            self._kernel_init(krows, diag[cand])
        self.lin = yc * F[cand] + (yE * F[idx]) @ dE
        self.tstar = np.where((self.lin > 0) & (self.kappa > 1e-12), self.lin / np.maximum(self.kappa, 1e-12), 0.0)
        self.cap_c = caps[groups[cand]]
        gE = groups[idx]
        # idx sorted: groups contiguous
        self.starts = np.concatenate(([0], np.flatnonzero(gE[1:] != gE[:-1]) + 1))
        self.counts = np.diff(np.append(self.starts, gE.size))
        self.capE = caps[gE[self.starts]]
        self.pos = yE > 0
        if self.KEE is not None:
            self._kernel_groups()
        self.ok = True

    # ----------------------------------------------------------------- the Gram-matrix path
    def _kernel_init(self, krows, kdiag):
        r"""The kernel form's per-node products, formed once: :math:`K_{EE}`, the candidates'
        diagonal, :math:`W = K_{EE}(y_E\circ d_E)` (one product for all candidates) and from it
        the curvatures :math:`\kappa = v^\top W + 2 y_c K_{Ec}^\top v + K_{cc}`, v = y_E∘d_E."""
        self.krows, self.kdiag = krows, kdiag
        self.KEE = krows(self.idx, self.idx)
        V = self.yE[:, None] * self.dE
        self.V, self.W = V, self.KEE @ V
        self.kappa = (np.einsum("em,em->m", V, self.W) + 2.0 * self.yc * np.einsum("em,em->m", self.KEc, V)
                      + kdiag)
        self.Zd = None

    def _kernel_groups(self):
        """Group structure of the effective rows for :meth:`_dual_kernel`: each row's group, the
        0/1 group-membership matrix (group sums as one product) and each group's label (a bag's
        rows share it)."""
        nG = self.starts.size
        self.grow = np.repeat(np.arange(nG), self.counts)
        self.Gm = np.zeros((nG, self.grow.size))
        self.Gm[self.grow, np.arange(self.grow.size)] = 1.0
        self.gy = self.yE[self.starts]
        self.gpos = self.gy > 0
        self.gposf, self.gnegf = self.gpos.astype(float), (~self.gpos).astype(float)

    def _dual_kernel(self, I, TI, J=None, TJ=None, kIJ=None):
        r"""Exact D at the projected points α + TI d_I (+ TJ d_J) with the Gram matrix, one per
        column (the same projection as :meth:`_dual`, in group form).

        Clipping at zero gives :math:`A` (rows E); a bag's rows share its label, so with the
        group sums :math:`s_g` (one product with the membership matrix), the cap scales
        :math:`S_g` and the side factors :math:`f_g` (:math:`f_p` or :math:`f_n` by the bag's
        label), the balance sums are :math:`\sum_{g\,\pm} S_g s_g`, :math:`\sum\alpha =
        \sum_g f_g S_g s_g + T`, and the quadratic term is :math:`b^\top K_{EE} b + 2\beta_I
        K_{EI}^\top b + \beta_I^2 K_{II}` (+ the J terms) with :math:`b = A\circ(y f S)_{g(e)}`,
        β = y_c T: one product :math:`K_{EE}B` for all columns.  ``kIJ``: K between the two
        candidates of each column."""
        TI = np.minimum(TI, self.cap_c[I])
        A = self.dE.take(I, axis=1)
        A *= TI
        A += self.aE[:, None]
        pI = self.yc[I] > 0
        sp, sn = np.where(pI, TI, 0.0), np.where(pI, 0.0, TI)
        if J is not None:
            TJ = np.minimum(TJ, self.cap_c[J])
            A += self.dE.take(J, axis=1) * TJ
            pJ = self.yc[J] > 0
            sp += np.where(pJ, TJ, 0.0)
            sn += np.where(pJ, 0.0, TJ)
        np.maximum(A, 0.0, out=A)
        gs = self.Gm @ A
        cap = self.capE[:, None]
        S = np.where(gs > cap, cap / np.maximum(gs, 1e-300), 1.0)
        gS = gs * S
        sp += self.gposf @ gS
        sn += self.gnegf @ gS
        fp = np.where(sp > sn, sn / np.maximum(sp, 1e-300), 1.0)
        fn = np.where(sn > sp, sp / np.maximum(sn, 1e-300), 1.0)
        # y_g f_g S_g per group: the multipliers' signed scale
        fy = np.where(self.gpos[:, None], fp, -fn)
        fy *= S
        tI = TI * np.where(pI, fp, fn)
        bI = np.where(pI, tI, -tI)
        total = self.gy @ (gs * fy) + tI
        B = A
        B *= fy.take(self.grow, axis=0)
        cI = np.einsum("em,em->m", self.KEc.take(I, axis=1), B)
        q = np.einsum("em,em->m", B, self.KEE @ B) + bI * (2.0 * cI + bI * self.kdiag[I])
        if J is not None:
            tJ = TJ * np.where(pJ, fp, fn)
            bJ = np.where(pJ, tJ, -tJ)
            total += tJ
            cJ = np.einsum("em,em->m", self.KEc.take(J, axis=1), B)
            q += bJ * (2.0 * cJ + bJ * self.kdiag[J]) + 2.0 * bI * bJ * kIJ
        D = total - 0.5 * q
        return np.where(np.isfinite(D), D, -np.inf)

    def _best(self, I, steps_I, J=None, steps_J=None, kIJ=None):
        """Best exact D over the trial step lengths (rows of ``steps_I`` / ``steps_J``): with the
        Gram matrix all trial points in one evaluation (:meth:`_dual_kernel`; ``kIJ`` = K
        between the candidates I[p] and J[p]), else one :meth:`_dual` per step length."""
        best = np.full(I.size, -np.inf)
        if self.KEE is None:
            for k in range(len(steps_I)):
                best = np.maximum(best, self._dual(I, steps_I[k], J, None if J is None else steps_J[k]))
            return best
        n = len(steps_I)
        TI = np.concatenate(steps_I)
        if J is None:
            D = self._dual_kernel(np.tile(I, n), TI)
        else:
            D = self._dual_kernel(np.tile(I, n), TI, np.tile(J, n), np.concatenate(steps_J), np.tile(kIJ, n))
        return np.maximum(best, D.reshape(n, I.size).max(axis=0))

    def _dual(self, I, TI, J=None, TJ=None):
        """Exact D at the projected points α + TI d_I (+ TJ d_J), one per column (linear
        features; the Gram-matrix form is :meth:`_dual_kernel`)."""
        TI = np.minimum(TI, self.cap_c[I])
        A = self.aE[:, None] + self.dE[:, I] * TI[None, :]
        if J is not None:
            TJ = np.minimum(TJ, self.cap_c[J])
            A += self.dE[:, J] * TJ[None, :]
        A = np.maximum(A, 0.0)
        # group caps (a candidate's group holds only that candidate: T ≤ its cap)
        gs = np.add.reduceat(A, self.starts, axis=0)
        scale = np.where(gs > self.capE[:, None], self.capE[:, None] / np.maximum(gs, 1e-300), 1.0)
        A *= np.repeat(scale, self.counts, axis=0)
        yc, pos = self.yc, self.pos
        sp = A[pos].sum(axis=0) + np.where(yc[I] > 0, TI, 0.0)
        sn = A[~pos].sum(axis=0) + np.where(yc[I] < 0, TI, 0.0)
        if J is not None:
            sp += np.where(yc[J] > 0, TJ, 0.0)
            sn += np.where(yc[J] < 0, TJ, 0.0)
        fp = np.where(sp > sn, sn / np.maximum(sp, 1e-300), 1.0)
        fn = np.where(sn > sp, sp / np.maximum(sn, 1e-300), 1.0)
        A = np.where(pos[:, None], A * fp[None, :], A * fn[None, :])
        TI = TI * np.where(yc[I] > 0, fp, fn)
        total = A.sum(axis=0) + TI
        if J is not None:
            TJ = TJ * np.where(yc[J] > 0, fp, fn)
            total += TJ
        Z = self.yXt @ A + (self.xc[I] * (TI * yc[I])[:, None]).T
        if J is not None:
            Z += (self.xc[J] * (TJ * yc[J])[:, None]).T
        q = np.einsum("dm,dm->m", Z, Z)
        D = total - 0.5 * q
        return np.where(np.isfinite(D), D, -np.inf)

    def single(self):
        """Best exact D over the step lengths :data:`NEWTON_STEPS` along each candidate's direction."""
        if not self.ok:
            return np.full(self.m, -np.inf)
        return self._best(np.arange(self.m), [c * self.tstar for c in NEWTON_STEPS])

    def pairs(self, I, J):
        """Best exact D of joint steps along the directions of candidates I[p] and J[p] (two
        different bags): the step lengths maximise the quadratic model of D in (t_I, t_J)
        (one direction alone where the joint maximiser is not positive), scaled by
        :data:`NEWTON_STEPS`."""
        I = np.asarray(I, dtype=np.int64)
        J = np.asarray(J, dtype=np.int64)
        best = np.full(I.size, -np.inf)
        if not self.ok or I.size == 0:
            return best
        kIJ = None
        if self.Zd is not None:
            kij = np.einsum("dp,dp->p", self.Zd[:, I], self.Zd[:, J])
        else:
            # d_Iᵀ Q d_J from W = K_EE (y∘d_E), formed once per node
            V, KEc, yc = self.V, self.KEc, self.yc
            uI, iI = np.unique(I, return_inverse=True)
            uJ, iJ = np.unique(J, return_inverse=True)
            kIJ = self.krows(self.cand[uI], self.cand[uJ])[iI, iJ]
            kij = (np.einsum("ep,ep->p", V[:, I], self.W[:, J]) + yc[J] * np.einsum("ep,ep->p", V[:, I], KEc[:, J])
                   + yc[I] * np.einsum("ep,ep->p", KEc[:, I], V[:, J]) + yc[I] * yc[J] * kIJ)
        ki, kj, li, lj = self.kappa[I], self.kappa[J], self.lin[I], self.lin[J]
        det = ki * kj - kij * kij
        with np.errstate(all="ignore"):
            ti = (kj * li - kij * lj) / det
            tj = (ki * lj - kij * li) / det
        joint = (det > 1e-12 * np.maximum(ki * kj, 1e-300)) & (ti > 0) & (tj > 0)
        ti = np.where(joint, ti, self.tstar[I])
        tj = np.where(joint, tj, 0.0)
        return self._best(I, [c * ti for c in NEWTON_STEPS], J, [c * tj for c in NEWTON_STEPS], kIJ)


def free_set_newton(alpha, idx, y, groups, caps, krows, X=None, zero=1e-9, ridge=1e-2, block=1e4):
    r"""``(rows, msolve)`` for :func:`newton_step_dual` from a dual-feasible point without an
    interior-point factorisation (the coordinate-descent node QPs).

    ``rows``: the free multipliers of ``idx`` (α > ``zero``·C of their group).  On them
    :math:`M = Q_{ff} + \rho I + \sum_{g \text{ saturated}} W\,\mathbf 1_g\mathbf 1_g^\top`:
    the reduced Hessian (ρ = ``ridge`` times its mean diagonal: Q has rank at most the number of
    features, and a ridge of 1e-2 gave the largest steps on small random nodes, 1e-8 almost none),
    with the sums of bags at their cap blocked by a large W, as the interior-point method's own
    Newton matrix does near the optimum.  One Cholesky factorisation of the free set's size.
    """
    import scipy.linalg as sla

    a = alpha[idx]
    cap = caps[groups[idx]]
    f = idx[a > zero * cap]
    if f.size == 0:
        return f, None
    yf = y[f]
    if X is not None:
        Xf = X[f] * yf[:, None]
        M = Xf @ Xf.T
    else:
        M = krows(f, f) * np.outer(yf, yf)
    n = f.size
    scale = max(float(np.mean(np.diag(M))), 1e-12)
    gf = groups[f]
    gsum = np.bincount(groups[idx], weights=a, minlength=caps.size)
    sat = gsum >= caps * (1.0 - 1e-9)
    same = (gf[:, None] == gf[None, :]) & sat[gf][:, None]
    M += block * scale * same
    M[np.diag_indices(n)] += ridge * scale
    try:
        cf = sla.cho_factor(M, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return f, None
    # the inverse of the (small: the free set) matrix once, then products: the look-ahead
    # applies M⁻¹ to all candidates' columns and to y, and a product costs less than the two
    # triangular solves of each application (the direction is a guess either way: the bound is
    # weak duality at the projected point)
    Minv = sla.cho_solve(cf, np.eye(n), check_finite=False)
    return f, lambda r: Minv @ r
