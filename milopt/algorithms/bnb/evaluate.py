r"""Node evaluation of the MI-SVM branch and bound: the node QP, its bound and the branching.

A node's relaxation is the SVM of its effective set, solved in the dual (the active-set method
warm-started from the parent's multipliers; at the root and where it fails, the dense
interior-point method or the warm-started coordinate descent); its bound is the dual objective
of the multipliers reached (weak duality), lifted by the look-ahead of :mod:`.bounds` (pair
steps, projected Newton steps, and for the children of the branching bag the two-level joint
steps).  Candidates whose child bound reaches the incumbent are ruled out below the node
(reduced-cost fixing).  The proofs are in docs/exact_misvm.md.  :class:`NodeEvaluation` is the
half of :class:`.search.MISVMBranchAndBound` that evaluates one node; the search loop is the
other half.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ._bounds_jit import bag_pairs, two_bag_best
from .bounds import NewtonLookahead, free_set_newton, pair_step_gains
from .branching import BranchContext

from .qp import DENSE_MAX, IPM_MAX, NODE_IPM_RD_TOL, NODE_IPM_TOL, ActiveSetQP, effective_groups, node_qp

__all__ = ["DENSE_MAX", "IPM_MAX", "NODE_IPM_RD_TOL", "NODE_IPM_TOL", "NodeEvaluation"]


class NodeEvaluation:
    """Node QPs, look-ahead gains and branching (mixed into :class:`.search.MISVMBranchAndBound`,
    which holds the data: kernel rows, labels, bags, costs, the node-QP state)."""

    def gains(self, cand, alpha, active, F, D, newton=None):
        """``(g, look)``: look-ahead gains of the candidate rows ``cand`` over the node's bound
        D = D(α), the best pair step or (option ``newton``) the projected Newton step of
        :class:`.bounds.NewtonLookahead`, whichever is larger; ``look`` is that object (None
        without Newton steps).  The Newton matrix is the dense interior-point method's last one
        (``newton``), else it is built on the free multipliers (:func:`.bounds.free_set_newton`)."""
        g = pair_step_gains(cand, alpha, active, self.y, F, self.caps, self.bag_of, self.smo.gptr, self.diag,
                            self.Krows)
        if not self.newton_gains or cand.size == 0:
            return g, None
        idx = np.flatnonzero(active)
        with np.errstate(all="ignore"):
            if newton is None:
                idx, newton = free_set_newton(alpha, idx, self.y, self.bag_of, self.caps, self.Krows, X=self.X)
            if newton is None:
                return g, None
            look = NewtonLookahead(cand, alpha, idx, self.y, F, self.caps, self.bag_of, self.Krows, self.diag, newton,
                                   X=self.X)
            Dn = look.single()
        return np.maximum(g, Dn - D), (look if look.ok else None)

    # ------------------------------------------------------------------- node QP
    @property
    def node_qp(self):
        """The node QP chain (:func:`.qp.node_qp`) of the engine's ``qp`` and ``active_set``."""
        key = (self.qp, self.active_set)
        if getattr(self, "_node_qp_key", None) != key:
            self._node_qp_obj, self._node_qp_key = node_qp(*key), key
        return self._node_qp_obj

    def _solve_node_smo(self, alpha0, active, deadline, tol):
        from .qp import CoordinateDescentQP

        return CoordinateDescentQP().solve(self, alpha0, active, deadline, tol)

    def _effective_groups(self, active):
        return effective_groups(self, active)

    def _solve_node_active_set(self, alpha0, active):
        """The active-set method warm-started from ``alpha0`` (:meth:`.qp.ActiveSetQP.warm`), or None."""
        return ActiveSetQP.warm(self, alpha0, active)

    def _node_qp(self, alpha0, active, deadline, tol, target=math.inf, tight=False):
        """(α, F, iterations, newton) of the node QP by :attr:`node_qp` (:mod:`.qp`): the
        active-set method warm-started from ``alpha0`` (default ``qp``; not at the root, nor for
        the ``tight`` re-solve); where it fails, the interior-point method when it is the node
        solver, else (and when that fails) the coordinate descent.  α is always exactly dual
        feasible."""
        return self.node_qp.solve(self, alpha0, active, deadline, tol, target, tight)

    def solve_selection(self, active, deadline, tol=1e-6):
        """Dual-feasible multipliers of the SVM on the effective set ``active`` (high accuracy:
        the interior-point method when it is the node solver, else coordinate descent)."""
        return self._node_qp(np.zeros(self.n), active, deadline, tol)[0]

    def evaluate(self, node, incumbent, eps, deadline, dive=False):
        """:meth:`_evaluate`, plus with ``dive`` the alternation on selections started from the
        node's relaxed scores (``res["dive"] = (value, coef, b)``, ``res["dive_seconds"]``)."""
        self.active_set_log = [0, 0]
        res = self._evaluate(node, incumbent, eps, deadline)
        res["active_set"] = tuple(self.active_set_log)
        if dive and time.perf_counter() < deadline:
            from .heuristics import alternate_selection

            th = time.perf_counter()
            try:
                r = alternate_selection(self, self.selection_of_raw(res["raw"]), deadline)
                res["dive"] = (r[0], r[4], r[1])
            except Exception:  # noqa: BLE001 - a failed dive is only a missing incumbent
                pass
            res["dive_seconds"] = time.perf_counter() - th
        return res

    def _evaluate(self, node, incumbent, eps, deadline):
        """Solve a node's relaxation and decide it.

        Returns a dict: ``bound`` (valid lower bound of the node), ``iterations``, ``raw`` and
        ``norm2`` (its relaxed scores, for incumbents), ``action`` ('close' or 'branch'), and for
        'branch' the bag branched on (``bag``, an index into the positive bags) with the
        children's rows and look-ahead bounds (``rows``, ``child_bounds``) and ``alpha`` (the
        warm start of the children).  ``incumbent`` and ``eps`` only decide closing: a stale
        (larger) incumbent closes less, never wrongly.
        """
        wit = node.wit
        active = self.base_active.copy()
        fixed = wit[wit >= 0]
        active[fixed[self.live[self.bag_of[fixed]]]] = True
        tol = self.tol
        alpha0 = node.alpha
        iters = 0
        polish = tight = False
        while True:
            if polish:   # the coordinate descent from the low-rank interior point's multipliers
                alpha, F, it, newton = self._solve_node_smo(alpha0, active, deadline, tol)
            else:
                alpha, F, it, newton = self._node_qp(alpha0, active, deadline, tol, target=incumbent - eps,
                                                     tight=tight)
            iters += it
            D, coef, raw = self.dual_objective(alpha)
            nb = max(node.bound, D)
            norm2 = float(coef @ raw)
            ph = self.phi_raw(raw, norm2)
            if nb >= min(incumbent, ph[0]) - eps or ph[0] <= nb + 0.5 * eps:
                # pruned, or the relaxed optimum is feasible for every selection of the node
                return {"action": "close", "bound": nb, "iterations": iters, "raw": raw, "norm2": norm2,
                        "coef": coef, "phi": ph}
            if (wit < 0).any():
                break
            # a leaf whose QP is not yet accurate enough to close it: tighten (the dense interior
            # point once more with tight tolerances; the low-rank one may stop short of the
            # optimum: the coordinate descent finishes it)
            if self.qp == "ipm" and not self.lowrank and not tight and time.perf_counter() <= deadline:
                tight = True
                continue
            if (self.qp == "ipm" and not self.lowrank) or tol <= 1e-11 or time.perf_counter() > deadline:
                return {"action": "close", "bound": nb, "iterations": iters, "raw": raw, "norm2": norm2,
                        "coef": coef, "phi": ph}
            if polish:
                tol *= 0.01
            polish = True
            alpha0 = alpha
        return self._branch(node, alpha, active, F, D, nb, ph, incumbent, eps, iters, raw, norm2, coef, newton,
                            deadline)

    def _branch(self, node, alpha, active, F, D, nb, ph, incumbent, eps, iters, raw, norm2, coef, newton=None,
                deadline=math.inf):
        """Look-ahead gains of the node's remaining witness candidates, reduced-cost fixing, and
        the bag to branch on by the engine's rule (``self.rule``, :mod:`.branching`; see
        :meth:`_evaluate`)."""
        wit = node.wit
        unres = np.flatnonzero(wit < 0)
        ub_bags = self.pos_bags[unres]
        # the rows of the unresolved bags, in row order (bags are contiguous and sorted)
        slot = np.full(self.B, -1)
        slot[ub_bags] = np.arange(unres.size)
        owner = slot[self.bag_of]
        cand = np.flatnonzero(owner >= 0)
        owner = owner[cand]
        if node.out is not None:
            keep = ~node.out[cand]
            cand, owner = cand[keep], owner[keep]
        g, look = self.gains(cand, alpha, active, F, D, newton)
        at = np.arange(cand.size)          # positions of the candidates in ``look``
        # reduced-cost fixing: a candidate whose child bound D + g_i reaches the incumbent (or the
        # node's own relaxed point) is no witness of any better selection below this node
        thr = min(incumbent, ph[0]) - eps
        kill = D + g >= thr
        out, out_bound = node.out, math.inf
        if kill.any():
            left = np.bincount(owner[~kill], minlength=unres.size)
            if (left == 0).any():
                # a bag without a candidate left: every selection below the node is pruned
                bag_min = np.full(unres.size, np.inf)
                np.minimum.at(bag_min, owner, g)
                return {"action": "close", "bound": max(nb, float(D + bag_min.max())), "iterations": iters,
                        "raw": raw, "norm2": norm2, "coef": coef, "phi": ph}
            out_bound = float(D + g[kill].min())
            out = np.zeros(self.n, dtype=bool) if out is None else out.copy()
            out[cand[kill]] = True
            cand, owner, g, at = cand[~kill], owner[~kill], g[~kill], at[~kill]
        left = np.bincount(owner, minlength=unres.size)
        bag_min = np.full(unres.size, np.inf)
        np.minimum.at(bag_min, owner, g)
        nb = max(nb, float(D + bag_min.max()))
        # bags with one candidate left are resolved in every child
        one = left == 1
        forced_bags = unres[one]
        forced_rows = np.zeros(unres.size, dtype=np.int64)
        forced_rows[owner] = cand          # any candidate of each bag; for ``one`` bags, the one
        forced_rows = forced_rows[one]
        res = {"action": "branch", "bound": nb, "iterations": iters, "raw": raw, "norm2": norm2, "coef": coef,
               "phi": ph, "alpha": alpha, "out": out, "out_bound": out_bound, "forced_bags": forced_bags,
               "forced_rows": forced_rows}
        multi = ~one
        if not multi.any():
            # every unresolved bag has one candidate left: one child, the leaf
            res.update(bag=-1, rows=np.array([-1]), child_bounds=np.array([nb]))
            return res
        # ties (no gain anywhere): the bag with the largest hinge loss under (w, b*)
        bmax = np.full(unres.size, -np.inf)
        np.maximum.at(bmax, owner, raw[cand])
        viol = self.costs[ub_bags] * np.maximum(0.0, 1.0 - bmax - ph[1])
        bag_mean = np.bincount(owner, weights=g, minlength=unres.size) / np.maximum(left, 1)
        ctx = BranchContext(node=node, alpha=alpha, F=F, active=active, D=D, bound=nb, threshold=thr,
                            deadline=deadline, cand=cand, owner=owner, gains=g, unres=unres, left=left,
                            bag_min=bag_min, bag_mean=bag_mean, viol=viol, multi=multi, forced=cand[one[owner]])
        choice = self.rule.choose(self, ctx)
        res["strong_qps"] = choice.qps
        if choice.bound >= thr:
            # the rule's bound closes the node (every child of one bag reaches the incumbent)
            return {"action": "close", "bound": max(nb, choice.bound), "iterations": iters, "raw": raw,
                    "norm2": norm2, "coef": coef, "phi": ph, "strong_qps": choice.qps}
        nb = max(nb, choice.bound)
        res["bound"] = nb
        k = choice.bag
        sel = owner == k
        gk = g[sel]
        if look is not None and self.pair_bags:
            gk = self._two_bag_gains(look, k, sel, owner, at, bag_min, gk, D)
            nb = max(nb, float(D + gk.min()))
            res["bound"] = nb
        child = np.maximum(nb, D + gk)
        if choice.child_bounds is not None:
            child = np.maximum(child, choice.child_bounds)
        res.update(bag=int(unres[k]), rows=cand[sel], child_bounds=child, child_alpha=choice.child_alpha)
        return res

    def _two_bag_gains(self, look, k, sel, owner, at, bag_min, gk, D):
        """Two-level look-ahead of the children of bag k: every selection below child i also
        picks some remaining candidate j of any other unresolved bag J, so
        v(N_i) ≥ D + min_{j∈J} g_ij, with g_ij the gain of a joint projected Newton step along
        the directions of i and j (:meth:`.bounds.NewtonLookahead.pairs`); the best of the
        ``pair_bags`` bags with the largest single gains is kept when it beats g_i."""
        others = np.flatnonzero(np.isfinite(bag_min))
        others = others[others != k]
        if others.size == 0:
            return gk
        others = others[np.argsort(-bag_min[others], kind="stable")[: self.pair_bags]]
        # the pairs (i, j), bag by bag, and the minimum over each bag's j: compiled loops
        I, J, seg = bag_pairs(at[sel], owner, at, others)
        with np.errstate(all="ignore"):
            Dp = look.pairs(I, J)
        return two_bag_best(Dp, seg, np.ascontiguousarray(gk, dtype=float), float(D))
