r"""A bound over all unresolved bags at once (option ``branching=multibag``).

The look-ahead of :mod:`.bounds` raises the node's bound by what *one* unresolved bag must add
(and, for the children of the branching bag, a second one); every other unresolved bag will
also add a witness below the node.  This rule bounds what all of them add together, by weak
duality at one dual-feasible point per selection, and branches as
:class:`.branching.ProductBranching` does.

**The step.**  Let α be the node's dual-feasible multipliers on E(R), u = Σ α_k y_k z_k and
F_k = y_k − u·z_k.  Take one instance per negative bag with room r_g = C_g − Σ_{j∈g} α_j > 0
(its instance of smallest F), weights δ_j = r_g / Σ r (Σ δ = 1), F̄ = Σ δ_j F_j,
z̄ = Σ δ_j z_j and T = Σ r.  For step lengths t_I ≥ 0 per unresolved bag with t_I ≤ C_I and
Σ_I t_I ≤ T, and any selection s (one remaining candidate s_I per bag), the point

    α_{s_I} ← t_I,    α_j ← α_j + δ_j Σ_I t_I   (the negative instances above)

is dual feasible for the relaxation of the selection's leaf (each bag's sum within its cap,
Σ y α unchanged: +Σ t on the positive side, −Σ t on the negative side), and with
v_i = z_i − z̄, a_i = F_i − F̄ its dual objective is exactly

    D(α) + Σ_I (t_I a_{s_I} − ½ t_I² ‖v_{s_I}‖²) − Σ_{I<J} t_I t_J v_{s_I}·v_{s_J}.

**The bound.**  With h_I(t) = min_{i∈I} (t a_i − ½ t² ‖v_i‖²) over the bag's remaining
candidates and M_IJ = max_{i∈I, j∈J} v_i·v_j, every selection below the node has

    v(s) ≥ D(α) + Σ_I h_I(t_I) − Σ_{I<J} t_I t_J M_IJ        (t ≥ 0),

so the right-hand side is a lower bound of the node for *any* admissible t (weak duality for
each selection, then the minimum over the selections).  The t used is found by coordinate
ascent on a grid (each h_I tabulated on 48 step lengths up to min(C_I, T, max_i a_i/‖v_i‖²)),
and the bound is then evaluated exactly at it.  For the children of the branching bag k (child
i: s_k = i) the same holds with h_k replaced by the candidate's own term and M_kJ by
max_{j∈J} v_i·v_j, and t_k re-optimised per child in closed form; the node's bound is the
smallest of its children's.  Candidates ruled out by reduced-cost fixing are left out of the
minima: their selections are bounded by the fixing's own bound.

The kernel enters only through inner products (K rows of the positive bags' instances, cached
once when there are at most ``GRAM_MAX`` of them), so the rule works with every kernel.
Cost per node: one K-product for the scores, the candidates' Gram block and its block maxima.
"""
from __future__ import annotations

import numpy as np

from .branching import BranchChoice, ProductBranching

#: positive-bag instances up to which their Gram matrix is formed once and cached
GRAM_MAX = 4000
#: step lengths per bag on which the coordinate ascent tabulates h_I
GRID = 48
#: coordinate-ascent sweeps over the bags
SWEEPS = 6


def _block_max(G, starts, axis):
    return np.maximum.reduceat(G, starts, axis=axis)


def multibag_gains(eng, ctx, k=None, gram=None):
    """``(bound, child_bounds)``: the node's lower bound from all unresolved bags (−inf when
    no step exists), and with ``k`` (a position in ``ctx.unres``) the lower bounds of the
    children of bag k, in the order of ``ctx.cand[ctx.owner == k]`` (None without ``k``).
    ``gram(rows)`` returns the kernel block of the rows (default ``eng.Krows(rows, rows)``)."""
    alpha = ctx.alpha
    D, _, raw = eng.dual_objective(alpha)          # F recomputed from α itself: the step is exact
    y = eng.y
    F = y - raw
    gsum = np.add.reduceat(alpha, eng.smo.gptr[:-1])
    room = eng.caps - gsum
    neg = np.flatnonzero(ctx.active & (y < 0) & (room[eng.bag_of] > 1e-9 * eng.caps[eng.bag_of]))
    m = ctx.unres.size
    if neg.size == 0 or ctx.cand.size == 0 or np.unique(ctx.owner).size != m:
        return -np.inf, None
    order = np.lexsort((F[neg], eng.bag_of[neg]))
    neg = neg[order]
    first = np.concatenate([[True], eng.bag_of[neg[1:]] != eng.bag_of[neg[:-1]]])
    rows = neg[first]
    r = room[eng.bag_of[rows]]
    T = float(r.sum())
    delta = r / T
    Fbar = float(delta @ F[rows])
    cand, owner = ctx.cand, ctx.owner
    Kcr = eng.Krows(cand, rows)
    p = Kcr @ delta
    c = float(delta @ (eng.Krows(rows, rows) @ delta))
    G = (gram(cand) if gram is not None else eng.Krows(cand, cand)) - p[:, None] - p[None, :] + c
    a = F[cand] - Fbar
    q = np.maximum(np.diag(G).copy(), 1e-12)
    starts = np.flatnonzero(np.concatenate([[True], owner[1:] != owner[:-1]]))
    M = _block_max(_block_max(G, starts, 0), starts, 1)
    np.fill_diagonal(M, 0.0)
    ub = eng.pos_bags[ctx.unres]
    cap = np.where(eng.live[ub], eng.caps[ub], 0.0)      # a bag of cost 0 adds nothing
    # h_I on a grid of step lengths up to the bag's largest useful step
    with np.errstate(divide="ignore", invalid="ignore"):
        tstar = np.maximum(a, 0.0) / q
    U = np.minimum(np.minimum(cap, T), np.maximum.reduceat(tstar, starts))
    grid = U[:, None] * np.linspace(0.0, 1.0, GRID)[None, :]            # m x GRID
    gi = grid[owner]
    H = np.minimum.reduceat(gi * a[:, None] - 0.5 * gi * gi * q[:, None], starts, axis=0)
    t = np.zeros(m)
    for _ in range(SWEEPS):
        changed = False
        for I in np.argsort(-H.max(axis=1)):
            if U[I] <= 0:
                continue
            s = M[I] @ t
            val = H[I] - grid[I] * s
            val[grid[I] > T - (t.sum() - t[I]) + 1e-15] = -np.inf
            new = grid[I, int(np.argmax(val))]
            changed |= new != t[I]
            t[I] = new
        if not changed:
            break
    if not t.any():
        return -np.inf, None

    def exact(t_):
        per = t_[owner] * a - 0.5 * t_[owner] ** 2 * q
        return np.minimum.reduceat(per, starts), 0.5 * t_ @ M @ t_

    h, cross = exact(t)
    gain = float(h.sum() - cross)
    if k is None:
        return D + gain, None
    sel = np.flatnonzero(owner == k)
    t0 = t.copy()
    t0[k] = 0.0
    h0, cross0 = exact(t0)
    rest = float(h0.sum() - h0[k] - cross0)
    Mi = _block_max(G[sel], starts, 1)          # |I_k| x m: max_{j∈J} v_i·v_j
    Mi[:, k] = 0.0
    s_i = Mi @ t0
    lim = min(cap[k], T - t0.sum())
    tk = np.clip((a[sel] - s_i) / q[sel], 0.0, max(lim, 0.0))
    child = rest + tk * a[sel] - 0.5 * tk * tk * q[sel] - tk * s_i
    return D + gain, D + child


class MultibagBranching(ProductBranching):
    """Product branching with the node and child bounds of :func:`multibag_gains` (see the
    module).  The Gram matrix of the positive bags' instances is cached on first use."""

    def __init__(self):
        self._gram = None

    def gram(self, eng):
        """``rows -> K[rows, rows]``, from a cached Gram matrix of the positive bags' instances
        when there are at most :data:`GRAM_MAX` of them."""
        if self._gram is None:
            prow = np.flatnonzero(eng.y > 0)
            if prow.size <= GRAM_MAX:
                where = np.full(eng.n, -1)
                where[prow] = np.arange(prow.size)
                Gp = eng.Krows(prow, prow)
                self._gram = lambda rows: Gp[np.ix_(where[rows], where[rows])]
            else:
                self._gram = lambda rows: eng.Krows(rows, rows)
        return self._gram

    def choose(self, eng, ctx):
        k = int(self.ranked(ctx)[0])
        with np.errstate(all="ignore"):
            node, child = multibag_gains(eng, ctx, k, self.gram(eng))
        if child is None or not np.all(np.isfinite(child)):
            return BranchChoice(k)
        return BranchChoice(k, child_bounds=child, bound=max(node, float(child.min())))
