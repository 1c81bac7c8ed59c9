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

import threading

import numpy as np
from scipy.linalg import get_lapack_funcs

from milopt.segments import segment_max

from . import _bounds_jit as _jit


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
    t and j (closed form; the loops over candidates and partners compiled, the kernel block
    ``krows(rows, cols)`` one call).
    """
    cand = np.asarray(cand, dtype=np.int64)
    low, tmax_l = _jit.pair_partners(alpha, active, y, caps, groups, gptr)
    if low.size == 0 or cand.size == 0:
        return np.zeros(cand.size)
    return _jit.pair_gains(F[cand], diag[cand], caps[groups[cand]], F[low], diag[low], tmax_l,
                           np.ascontiguousarray(krows(cand, low), dtype=float))


#: step lengths tried by :func:`newton_step_dual` and the joint steps, as multiples of the
#: unconstrained Newton step (clipping at zero shortens the useful step; with the compiled
#: look-ahead five multiples cost little more than three, and the whole step and an eighth of it
#: close more: the proof of nested:musk1:30 with the RBF kernel takes 7,120 nodes against 8,691
#: with ¼, ½, ¾)
NEWTON_STEPS = (0.125, 0.25, 0.5, 0.75, 1.0)

#: the joint steps of :meth:`NewtonLookahead.pairs` solve their 2 × 2 model only where
#: κ_Iκ_J − k_IJ² exceeds this fraction of κ_Iκ_J (else the step along I alone): a nearly singular
#: model determines no step length (rounding of 1e-16 in the curvatures moved its maximiser by 1e-6)
JOINT_DET = 1e-6


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
    cols)`` gives kernel blocks and ``diag`` the kernel's diagonal.  With the linear features ``X``
    and more rows in ``idx`` than features the quadratic terms are formed in the feature space
    (d × m products instead of |E| × m).

    The direction is only a guess; the bound is weak duality at the projected point, so it is
    valid whatever ``msolve`` is (:class:`NewtonLookahead` also takes steps along two
    candidates' directions at once).  It captures much more of the child's gain than a single
    pair step (:func:`pair_step_gains`), because the reply of all free multipliers is used.
    """
    look = NewtonLookahead(cand, alpha, idx, y, F, caps, groups, krows, diag, msolve, X)
    return look.single()


class NewtonLookahead:
    """The Newton directions of a node's candidate witnesses (see :func:`newton_step_dual`) and
    the exact dual objective of projected steps along one or two of them.

    The quadratic terms are formed with the Gram block of the Newton rows E (:math:`K_{EE}`,
    from ``krows``) or, with the linear features ``X`` and more rows than features, in the
    feature space; either way all trial points of a call are projected in one compiled pass
    (:mod:`._bounds_jit`) and their quadratic terms need one dense product."""

    def __init__(self, cand, alpha, idx, y, F, caps, groups, krows, diag, msolve, X=None):
        cand = np.asarray(cand, dtype=np.int64)
        self.cand, self.m, self.idx = cand, cand.size, idx
        self.ok = False
        if self.m == 0 or idx.size == 0:
            return
        yE, yc = y[idx], y[cand]
        KEc = np.asarray(krows(idx, cand), dtype=float)
        # [Q_Ec | y_E]: the candidates' columns and y in one application of M⁻¹
        rhs = np.empty((idx.size, self.m + 1))
        np.multiply(KEc, yE[:, None] * yc[None, :], out=rhs[:, :-1])
        rhs[:, -1] = yE
        dT, lin, ok = _jit.directions(np.ascontiguousarray(msolve(rhs), dtype=float), yE, yc, F[idx], F[cand])
        if not ok:
            return
        self.yE, self.yc, self.aE, self.dT, self.lin = yE, yc, alpha[idx], dT, lin
        self.KEcT = np.ascontiguousarray(KEc.T)
        self.VT = dT * yE                                   # rows: v_c = y_E∘d_c
        self.gram = X is None or idx.size <= X.shape[1]
        if self.gram:
            self._kernel_init(krows, diag[cand])
        else:
            self.XE, self.xc = np.ascontiguousarray(X[idx]), np.ascontiguousarray(X[cand])
            # features of every direction (E part and the candidate's unit step): κ and cross terms
            self.ZdT = self.VT @ self.XE + self.xc * yc[:, None]
            self.kappa = _jit.row_norms2(self.ZdT)
        self.tstar = _jit.step_lengths(lin, self.kappa)
        self.cap_c = caps[groups[cand]]
        # idx sorted: groups contiguous
        self.gstart, self.capg, self.grow = _jit.group_starts(groups[idx], caps)
        self.gpos = yE[self.gstart[:-1]] > 0
        self.ok = True

    @property
    def dE(self):
        """The directions on the rows E, one column per candidate (|E| × m)."""
        return self.dT.T

    def _kernel_init(self, krows, kdiag):
        r"""The Gram form's per-node products, formed once: :math:`K_{EE}`, the candidates'
        diagonal, :math:`W = K_{EE}(y_E\circ d_E)` (one product for all candidates) and from it
        the curvatures :math:`\kappa = v^\top W + 2 y_c K_{Ec}^\top v + K_{cc}`, v = y_E∘d_E."""
        self.krows, self.kdiag = krows, np.asarray(kdiag, dtype=float)
        self.KEE = np.ascontiguousarray(krows(self.idx, self.idx), dtype=float)
        self.WT = self.VT @ self.KEE                         # rows: (K_EE v_c)ᵀ, K_EE symmetric
        self.kappa = _jit.gram_curvatures(self.VT, self.WT, self.KEcT, self.yc, self.kdiag)

    def _duals(self, I, TI, J, TJ, kIJ, nout):
        r"""Best exact D over the trial points α + T_I d_I (+ T_J d_J) of each output slot
        (column p of the trial points belongs to slot p mod ``nout``).

        Each point is made exactly dual feasible in one compiled pass
        (:func:`._bounds_jit.project_columns`: T at most C of the candidate's bag, clip at 0, each
        bag scaled to its cap, the larger side of Σ yα = 0 scaled down, per bag: a bag's rows
        share its label); with b = y∘α on E and the candidates' signed multipliers b_I, b_J the
        quadratic term is :math:`b^\top K_{EE} b + 2b_I K_{EI}^\top b + b_I^2 K_{II}` (+ the J
        terms and :math:`2b_Ib_JK_{IJ}`; ``kIJ``: K between the candidates of each slot), one
        product :math:`K_{EE}B` for all points, or :math:`\lVert X_E^\top b + b_I x_I + b_J
        x_J\rVert^2` in the feature space."""
        BT = _workspace(0, (I.size, self.aE.size))
        bI, bJ, total = _jit.project_columns(self.aE, self.dT, self.yE, self.grow, self.capg, self.gpos, self.yc,
                                             self.cap_c, I, TI, J, TJ, BT)
        if self.gram:
            KB = np.matmul(BT, self.KEE, out=_workspace(1, BT.shape))
            return _jit.finish_gram(BT, KB, self.KEcT, self.kdiag, I, J, bI, bJ, kIJ, total, nout)
        ZT = np.matmul(BT, self.XE, out=_workspace(1, (I.size, self.XE.shape[1])))
        return _jit.finish_features(ZT, self.xc, I, J, bI, bJ, total, nout)

    def single(self):
        """Best exact D over the step lengths :data:`NEWTON_STEPS` along each candidate's direction."""
        if not self.ok:
            return np.full(self.m, -np.inf)
        steps = np.asarray(NEWTON_STEPS)
        I = np.tile(np.arange(self.m, dtype=np.int64), steps.size)
        TI = (steps[:, None] * self.tstar[None, :]).ravel()
        return self._duals(I, TI, _NO_ROWS, _NO_VALUES, _NO_VALUES, self.m)

    def pairs(self, I, J):
        """Best exact D of joint steps along the directions of candidates I[p] and J[p] (two
        different bags): the step lengths maximise the quadratic model of D in (t_I, t_J)
        (one direction alone where the joint maximiser is not positive or the model is nearly
        singular, :data:`JOINT_DET`), scaled by :data:`NEWTON_STEPS`."""
        I = np.asarray(I, dtype=np.int64)
        J = np.asarray(J, dtype=np.int64)
        if not self.ok or I.size == 0:
            return np.full(I.size, -np.inf)
        if self.gram:
            # d_Iᵀ Q d_J from W = K_EE (y∘d_E), formed once per node; K_IJ gathered for the pairs only
            uI, iI = np.unique(I, return_inverse=True)
            uJ, iJ = np.unique(J, return_inverse=True)
            kIJ = np.asarray(self.krows(self.cand[uI], self.cand[uJ]), dtype=float)[iI, iJ]
            kij = _jit.gram_cross(self.VT, self.WT, self.KEcT, self.yc, kIJ, I, J)
        else:
            kIJ = _NO_VALUES
            kij = _jit.feature_cross(self.ZdT, I, J)
        steps = np.asarray(NEWTON_STEPS)
        TI, TJ = _jit.joint_steps(I, J, self.kappa, self.lin, self.tstar, kij, steps, JOINT_DET)
        return self._duals(np.tile(I, steps.size), TI, np.tile(J, steps.size), TJ, kIJ, I.size)


_WORK = threading.local()


def _workspace(k, shape):
    """Scratch array ``k`` of this thread, reshaped to ``shape`` (grown when too small): the
    trial points and their products are large, short-lived and formed at every node, and
    fresh memory of that size costs page faults on every node."""
    size = shape[0] * shape[1]
    try:
        bufs = _WORK.bufs
    except AttributeError:
        bufs = _WORK.bufs = [np.empty(0), np.empty(0)]
    if bufs[k].size < size:
        bufs[k] = np.empty(max(size, 2 * bufs[k].size))
    return bufs[k][:size].reshape(shape)


#: no second candidate (the single steps of :meth:`NewtonLookahead.single`)
_NO_ROWS = np.empty(0, dtype=np.int64)
_NO_VALUES = np.empty(0)


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
    a = alpha[idx]
    cap = caps[groups[idx]]
    f = idx[a > zero * cap]
    if f.size == 0:
        return f, None
    Kff = X[f] @ X[f].T if X is not None else np.array(krows(f, f), dtype=float)
    M = _jit.newton_matrix(Kff, y[f], groups[f], _jit.saturated(alpha, idx, groups, caps), block, ridge)
    # the inverse of the (small: the free set) matrix once (LAPACK potrf and potri), then
    # products: the look-ahead applies M⁻¹ to all candidates' columns and to y in one product,
    # which costs less than triangular solves (the direction is a guess either way: the bound is
    # weak duality at the projected point)
    L, info = _POTRF(M, lower=1, clean=0, overwrite_a=1)
    if info != 0:
        return f, None
    Minv, info = _POTRI(L, lower=1, overwrite_c=1)
    if info != 0:
        return f, None
    Minv = _jit.symmetrise_lower(Minv)
    return f, lambda r: Minv @ r


_POTRF, _POTRI = get_lapack_funcs(("potrf", "potri"), dtype=np.float64)
