r"""Strong branching for the MI-SVM branch and bound (option ``branching=strong``).

The look-ahead gains g_i of :mod:`.bounds` are one projected step from the node's multipliers;
the child's own relaxation can be much stronger.  Strong branching (Applegate, Bixby, Chvátal &
Cook 1995; Achterberg, Koch & Martin, *Branching rules revisited*, Oper. Res. Lett. 33, 2005)
solves the children's relaxations of a few candidate bags before choosing:

1. rank the branchable bags by the product score of :class:`.branching.ProductBranching` and
   keep the ``strong_bags`` best;
2. for each kept bag I and each remaining candidate i ∈ I whose look-ahead bound D(α) + g_i
   does not already reach the incumbent, solve the child's node QP on
   E(R) ∪ {forced witnesses} ∪ {i} (warm-started from the node's multipliers), giving a
   dual-feasible α⁽ⁱ⁾ and the child bound ℓ_i = max(D(α) + g_i, D(α⁽ⁱ⁾));
3. branch on the bag maximising (min_i ℓ_i − D + 10⁻⁶)(mean_i ℓ_i − D + 10⁻⁶); its children
   start with bounds ℓ_i and warm starts α⁽ⁱ⁾ (their own optimum: their node QP is then one
   active-set iteration).

*Validity.*  ℓ_i is weak duality at a dual-feasible point of the child's relaxation, whose
effective set every selection below the child contains, so v(N_i) ≥ ℓ_i; and each kept bag's
children partition the node, so v(N) ≥ max_I min_{i∈I} ℓ_i, the node's bound (which closes it
when it reaches the incumbent).  The QPs of the bags not chosen are the price; they are
counted (``strong_qps`` in the result of the search).
"""
from __future__ import annotations

import time

import numpy as np

from .branching import BranchChoice, ProductBranching


class StrongBranching(ProductBranching):
    """Strong branching over the ``bags`` best bags by product score (see the module), at
    nodes of depth below ``depth`` (deeper: the product rule; None: at every node)."""

    def __init__(self, bags=4, depth=None):
        self.bags = int(bags)
        self.depth = depth

    def choose(self, eng, ctx):
        ranked = self.ranked(ctx)
        if self.depth is not None and ctx.node.depth >= self.depth:
            return BranchChoice(int(ranked[0]))
        base = ctx.active.copy()
        base[ctx.forced] = True
        best, node_lb, qps = None, -np.inf, 0
        for k in ranked[: self.bags]:
            if time.perf_counter() > ctx.deadline:
                break
            sel = ctx.owner == k
            lb = ctx.D + ctx.gains[sel]
            alphas = [None] * lb.size
            for j, r in enumerate(ctx.cand[sel].tolist()):
                if lb[j] >= ctx.threshold:
                    continue            # closed by its look-ahead bound already
                act = base.copy()
                act[r] = True
                res = eng.node_qp.solve(eng, ctx.alpha, act, ctx.deadline, eng.tol, target=ctx.threshold)
                qps += 1
                if res is None:
                    continue
                lb[j] = max(lb[j], eng.dual_objective(res[0])[0])
                alphas[j] = res[0]
            node_lb = max(node_lb, float(lb.min()))
            gain = lb - ctx.D
            score = (gain.min() + 1e-6) * (gain.mean() + 1e-6)
            if best is None or score > best[0]:
                best = (score, int(k), lb, alphas)
            if node_lb >= ctx.threshold:
                break                   # every child of this bag is closed: so is the node
        if best is None:
            return BranchChoice(int(ranked[0]))
        alphas = [ctx.alpha if a is None else a for a in best[3]]
        return BranchChoice(best[1], child_bounds=best[2], child_alpha=alphas, bound=node_lb, qps=qps)
