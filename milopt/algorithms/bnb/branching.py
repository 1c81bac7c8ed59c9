r"""The branching rule of the MI-SVM branch and bound behind one protocol, :class:`BranchingRule`.

At a node that is not closed, every unresolved positive bag I with more than one remaining
witness candidate could be branched on (one child per candidate i ∈ I: "the witness of I is i").
The node evaluation has computed, for every remaining candidate i, a look-ahead gain g_i with
v(N_i) ≥ D(α) + g_i (:mod:`.bounds`), and hands the rule a :class:`BranchContext`; the rule
returns a :class:`BranchChoice`: the bag, and optionally better bounds of its children (with
their warm starts) and a better bound of the node.

*Validity.*  Whatever bag a rule picks, its children partition the node's selections, so the
proof never depends on the choice; a bound a rule returns must be a lower bound of the child
(or of the node) in its own right — for :class:`.strong.StrongBranching`, the dual objective of
a dual-feasible point of the child's relaxation.

**Writing a rule**: one class in one file of this package with a ``choose(eng, ctx)`` method
(subclass :class:`ScoreBranching` and write ``score`` when the rule only ranks bags), its name
added to :data:`RULES` and to the choices of option ``branching`` (``options.PARAMS``), and a
test that its proofs equal brute force (``tests/test_bnb.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass
class BranchContext:
    """What the node evaluation knows when it branches.

    ``node`` (the :class:`.nodes.Node`), ``alpha`` / ``F`` / ``active`` / ``D`` (its node QP:
    multipliers, gradient, effective set, dual objective), ``bound`` (the node's bound so far),
    ``threshold`` (a bound at or above it closes: incumbent − ε), ``deadline``; per remaining
    candidate: ``cand`` (rows), ``owner`` (its bag's position in ``unres``), ``gains`` (g_i);
    per unresolved bag (positions of ``unres``, indices into the positive bags): ``left``
    (remaining candidates), ``bag_min`` / ``bag_mean`` (smallest and mean gain), ``viol`` (hinge
    loss C_I[1 − max_i s_i − b*]_+ under the relaxed point: the tie-break), ``multi`` (more than
    one candidate left: branchable); ``forced`` (rows of the bags with one candidate left: they
    join every child's effective set).
    """

    node: object
    alpha: np.ndarray
    F: np.ndarray
    active: np.ndarray
    D: float
    bound: float
    threshold: float
    deadline: float
    cand: np.ndarray
    owner: np.ndarray
    gains: np.ndarray
    unres: np.ndarray
    left: np.ndarray
    bag_min: np.ndarray
    bag_mean: np.ndarray
    viol: np.ndarray
    multi: np.ndarray
    forced: np.ndarray


@dataclass
class BranchChoice:
    """A rule's answer: ``bag`` (position in ``ctx.unres``); optionally ``child_bounds``
    (absolute lower bounds of its children, in the order of ``ctx.cand[ctx.owner == bag]``),
    ``child_alpha`` (a warm start per child, else the node's multipliers), ``bound`` (a lower
    bound of the node itself) and ``qps`` (node QPs the rule solved)."""

    bag: int
    child_bounds: np.ndarray | None = None
    child_alpha: list | None = None
    bound: float = -np.inf
    qps: int = 0


class BranchingRule(Protocol):
    """Chooses the bag to branch on: ``choose(eng, ctx) -> BranchChoice``."""

    def choose(self, eng, ctx: BranchContext) -> BranchChoice:
        ...


class ScoreBranching:
    """A rule that ranks the branchable bags by ``score(ctx)`` (largest first; ties: the
    largest hinge loss ``ctx.viol``, then the first)."""

    def score(self, ctx):
        raise NotImplementedError

    def ranked(self, ctx):
        """Positions of the branchable bags, best first."""
        score = np.where(ctx.multi, self.score(ctx), -np.inf)
        order = np.lexsort((-ctx.viol, -score))
        return order[ctx.multi[order]]

    def choose(self, eng, ctx):
        return BranchChoice(int(self.ranked(ctx)[0]))


class LookaheadBranching(ScoreBranching):
    """``branching=lookahead``: the bag maximising min_{i∈I} g_i (every choice of its witness
    raises the bound most)."""

    def score(self, ctx):
        return ctx.bag_min


class ProductBranching(ScoreBranching):
    """``branching=product``: the bag maximising (min_{i∈I} g_i + 10⁻⁶)(mean_{i∈I} g_i + 10⁻⁶),
    the product score of MIP branching (Achterberg, *Constraint Integer Programming*, 2007,
    §5.1), which also rewards bags whose other children gain."""

    def score(self, ctx):
        return (ctx.bag_min + 1e-6) * (ctx.bag_mean + 1e-6)
