r"""Pseudo-cost branching for the MI-SVM branch and bound (option ``branching=pseudocost``).

The look-ahead gain g_i of :mod:`.bounds` is one projected step from the node's multipliers
and captures a part of what the child's relaxation gains; which part depends on the bag and
the candidate.  Pseudo-cost branching (Bénichou, Gauthier, Girodet, Hentges, Ribière &
Vincent, *Experiments in mixed-integer linear programming*, Math. Program. 1, 1971;
Achterberg, Koch & Martin, *Branching rules revisited*, Oper. Res. Lett. 33, 2005) learns the
realised gains from the children the search evaluates anyway and ranks the bags by them:

* when a child N_i ("the witness of I is i") of a node N is evaluated, its realised gain
  Δ = D(α⁽ᴺⁱ⁾) − D(α⁽ᴺ⁾) (the dual objectives of the two node QPs) and the look-ahead gain g_i
  it was created with are recorded for the row i: ψ_i is the mean realised gain of row i,
  ρ the mean ratio Δ / g over all records;
* at a node, every remaining candidate gets the estimate e_i = max(g_i, ψ_i) when row i has a
  record, else ρ·g_i (at least g_i); the bag maximising the product score
  (min_{i∈I} e_i + 10⁻⁶)(mean_{i∈I} e_i + 10⁻⁶) of :class:`.branching.ProductBranching` is
  branched on (ties: the largest hinge loss, as there).

*Validity.*  The estimates only choose the bag: the node and child bounds stay the look-ahead
bounds of the node evaluation, and every bag's children partition the node, so the proof does
not depend on them.  Only children that branch (are not closed by their own QP) are recorded.
"""
from __future__ import annotations

import numpy as np

from .branching import BranchChoice, ProductBranching


class PseudocostBranching(ProductBranching):
    """Product branching on look-ahead gains corrected by learned realised gains (see the
    module).  The records live in the rule object: one engine, one search."""

    def __init__(self):
        self.pending = {}            # hash of a child's witness vector -> (D of the parent, row, g)
        self.psi_sum = self.psi_cnt = None
        self.ratio = [0.0, 0]        # sum of Δ/g over records with g > 0, their number

    def _key(self, wit):
        return hash(wit.tobytes())

    def learn(self, eng, ctx):
        """Record the realised gain of ``ctx.node`` if its parent was branched by this rule."""
        if self.psi_sum is None:
            self.psi_sum, self.psi_cnt = np.zeros(eng.n), np.zeros(eng.n, dtype=np.int64)
        rec = self.pending.pop(self._key(ctx.node.wit), None)
        if rec is None:
            return
        d_parent, row, g = rec
        delta = max(ctx.D - d_parent, 0.0)
        self.psi_sum[row] += delta
        self.psi_cnt[row] += 1
        if g > 1e-12:
            self.ratio[0] += delta / g
            self.ratio[1] += 1

    def estimates(self, ctx):
        """e_i per remaining candidate of ``ctx`` (see the module)."""
        rows = ctx.cand
        cnt = self.psi_cnt[rows]
        rho = max(1.0, self.ratio[0] / self.ratio[1]) if self.ratio[1] else 1.0
        psi = self.psi_sum[rows] / np.maximum(cnt, 1)
        return np.where(cnt > 0, np.maximum(ctx.gains, psi), rho * ctx.gains)

    def score(self, ctx):
        e = self.estimates(ctx)
        m = ctx.unres.size
        e_min = np.full(m, np.inf)
        np.minimum.at(e_min, ctx.owner, e)
        e_mean = np.bincount(ctx.owner, weights=e, minlength=m) / np.maximum(ctx.left, 1)
        return (e_min + 1e-6) * (e_mean + 1e-6)

    def choose(self, eng, ctx):
        self.learn(eng, ctx)
        k = int(self.ranked(ctx)[0])
        # the children's witness vectors, as the search builds them: forced bags set, then bag k
        one = ctx.left == 1
        base = ctx.node.wit.copy()
        forced = one[ctx.owner]
        base[ctx.unres[ctx.owner[forced]]] = ctx.cand[forced]
        sel = ctx.owner == k
        pos = ctx.unres[k]
        for r, g in zip(ctx.cand[sel].tolist(), ctx.gains[sel].tolist()):
            base[pos] = r
            self.pending[self._key(base)] = (ctx.D, r, g)
        return BranchChoice(k)
