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

from .bounds import NewtonLookahead, free_set_newton, pair_step_gains

#: stopping tolerances of the dense interior-point node QPs (complementarity, dual residual):
#: the dual objective of the projected multipliers is then within about 1e-6 of the node's
#: optimum on MUSK1 nodes (11 % fewer iterations than 1e-10 / 1e-7); it is a valid bound either way
NODE_IPM_TOL = 1e-8
NODE_IPM_RD_TOL = 1e-4
#: dense kernel matrix up to this many instances (else rows from the features on demand); kernel
#: blocks of effective sets larger than this are not gathered for the active-set method
DENSE_MAX = 3000
#: node QPs by the interior-point method up to this many effective instances (else warm-started
#: SMO); the active-set method works on the kernel block up to this size, beyond it (linear
#: kernel) on the features
IPM_MAX = 400


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
    def _solve_node_smo(self, alpha0, active, deadline, tol):
        smo = self.smo
        alpha0 = np.where(active, alpha0, 0.0)
        smo.alpha = alpha0.copy()
        smo.active = active.copy()
        smo.gsum = np.add.reduceat(smo.alpha, smo.gptr[:-1])
        smo.F = self.y - self.Kv(self.y * smo.alpha)
        smo.tol = tol
        its = 0
        while True:
            info = smo.solve()
            its += info["iterations"]
            if info["converged"] or time.perf_counter() > deadline or info["iterations"] < smo.max_iter:
                break
        return smo.alpha.copy(), smo.F.copy(), its, None

    def _solve_node_ipm(self, active, target=math.inf, tight=False):
        """Node QP on the effective set by the interior-point method (no warm start; near exact),
        its multipliers projected onto the dual feasible set so that D(α) is a valid bound.
        Dense Newton systems, or with ``lowrank`` the Woodbury form on the features.  The dense
        method stops early once the dual objective of its projected iterate reaches ``target``
        (the node is then closed by its bound; no Newton solver is returned).  ``tight``: the
        tolerances 1e-11 / 1e-9 instead of :data:`NODE_IPM_TOL` / :data:`NODE_IPM_RD_TOL` (a leaf
        that the default accuracy cannot close)."""
        from milopt.qp.svm_ipm import _ipm, _ipm_lowrank

        idx, gi, ginv = self._effective_groups(active)
        alpha = np.zeros(self.n)
        if gi is None:
            # one class only: Σ y α = 0 leaves α = 0 as the only dual feasible point (w = 0)
            return alpha, self.y.copy(), 0, None
        if self.lowrank:
            r = _ipm_lowrank(self.X[idx], self.y[idx], ginv, self.costs[gi], tol=1e-10, max_iter=200)
        else:
            KE = self.Krows(idx, idx)
            stop = self._reaches(target, idx, KE) if math.isfinite(target) else None
            r = _ipm(KE, self.y[idx], ginv, self.costs[gi], tol=1e-11 if tight else NODE_IPM_TOL, max_iter=200,
                     rd_tol=1e-9 if tight else NODE_IPM_RD_TOL, stop=stop)
        alpha[idx] = self.project(r["alpha"], idx)
        F = self.y - self.Kv(self.y * alpha)
        return alpha, F, int(r["iterations"]), (None if self.lowrank or not r["converged"] else r.get("newton"))

    def _effective_groups(self, active):
        """(rows, bags, group of each row) of the effective set ``active``, the bags' ids
        numbered 0..G-1 as the node QPs take them; bags and groups are None when the set holds
        one class only."""
        idx = np.flatnonzero(active)
        yE = self.y[idx]
        if not ((yE > 0).any() and (yE < 0).any()):
            return idx, None, None
        gi, ginv = np.unique(self.bag_of[idx], return_inverse=True)
        return idx, gi, ginv

    def _solve_node_active_set(self, alpha0, active):
        """Node QP on the effective set by the primal-dual active-set method warm-started from
        ``alpha0`` (the parent's multipliers), or None when it does not converge (the caller
        falls back to the interior point).  Exact up to rounding when it converges; no Newton
        solver is returned (the look-ahead builds its matrix on the free multipliers)."""
        from milopt.qp.svm_active_set import solve_group_dual_active_set

        idx, gi, ginv = self._effective_groups(active)
        if gi is None:
            return None
        yE = self.y[idx]
        try:
            with np.errstate(all="ignore"):
                if self.kernel or (self.dense and idx.size <= IPM_MAX):
                    if idx.size > DENSE_MAX:
                        return None   # a kernel block too large to gather at every node
                    r = solve_group_dual_active_set(yE, ginv, self.costs[gi], alpha0[idx], K=self.Krows(idx, idx),
                                                    max_free=IPM_MAX)
                else:
                    r = solve_group_dual_active_set(yE, ginv, self.costs[gi], alpha0[idx], V=self.X[idx],
                                                    max_free=IPM_MAX)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return None
        if not r["converged"]:
            return None
        alpha = np.zeros(self.n)
        alpha[idx] = self.project(r["alpha"], idx)
        F = self.y - self.Kv(self.y * alpha)
        return alpha, F, int(r["iterations"]), None

    def _reaches(self, target, idx, KE):
        """The interior-point method's early stop: whether the projected iterate's dual objective
        reaches ``target`` (D of the unprojected iterate, from Q a, is only a first screen: the
        projection can raise D, so a skipped check only delays the stop)."""
        yi = self.y[idx]

        def stop(a, Qa):
            if float(a.sum() - 0.5 * a @ Qa) < target:
                return False
            p = self.project(a, idx)
            v = p * yi
            return float(p.sum() - 0.5 * v @ (KE @ v)) >= target

        return stop

    def _node_qp(self, alpha0, active, deadline, tol, target=math.inf, tight=False):
        """(α, F, iterations, newton) of the node QP: the active-set method warm-started from
        ``alpha0`` (default ``qp``; not at the root, nor for the ``tight`` re-solve); where it
        fails, the interior-point method when it is the node solver (falling back to the
        coordinate descent if it fails numerically), else the warm-started coordinate descent.
        α is always exactly dual feasible; ``newton`` is the dense interior-point method's last
        Newton solver (None otherwise, and when the method stopped early because its bound
        reached ``target``)."""
        if self.active_set and not tight and alpha0.any():
            r = self._solve_node_active_set(alpha0, active)
            self.active_set_log[0 if r is not None else 1] += 1
            if r is not None:
                return r
        if self.qp == "ipm":
            try:
                with np.errstate(all="ignore"):
                    alpha, F, it, newton = self._solve_node_ipm(active, target, tight)
                if np.all(np.isfinite(alpha)) and np.all(np.isfinite(F)):
                    return alpha, F, it, newton
            except (ZeroDivisionError, FloatingPointError, ValueError, np.linalg.LinAlgError):
                pass
        return self._solve_node_smo(alpha0, active, deadline, tol)

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
        return self._branch(node, alpha, active, F, D, nb, ph, incumbent, eps, iters, raw, norm2, coef, newton)

    def _branch(self, node, alpha, active, F, D, nb, ph, incumbent, eps, iters, raw, norm2, coef, newton=None):
        """Look-ahead gains of the node's remaining witness candidates, reduced-cost fixing, and
        the bag to branch on (see :meth:`_evaluate`)."""
        wit = node.wit
        unres = np.flatnonzero(wit < 0)
        ub_bags = self.pos_bags[unres]
        cand = np.concatenate([np.arange(self.ptr[I], self.ptr[I + 1]) for I in ub_bags])
        owner = np.repeat(np.arange(unres.size), self.sizes[ub_bags])
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
        if self.branching == "product":
            # MIP-style product score: the weakest child's gain times the mean child gain
            bag_mean = np.bincount(owner, weights=g, minlength=unres.size) / np.maximum(left, 1)
            score = (bag_min + 1e-6) * (bag_mean + 1e-6)
        else:
            score = bag_min
        score = np.where(multi, score, -np.inf)
        k = int(np.lexsort((-viol, -score))[0])
        sel = owner == k
        gk = g[sel]
        if look is not None and self.pair_bags:
            gk = self._two_bag_gains(look, k, sel, owner, at, bag_min, gk, D)
            nb = max(nb, float(D + gk.min()))
            res["bound"] = nb
        res.update(bag=int(unres[k]), rows=cand[sel], child_bounds=np.maximum(nb, D + gk))
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
        ik = at[sel]
        I_parts, J_parts, seg = [], [], []
        for J in others:
            jj = at[owner == J]
            I_parts.append(np.repeat(ik, jj.size))
            J_parts.append(np.tile(jj, ik.size))
            seg.append(jj.size)
        with np.errstate(all="ignore"):
            Dp = look.pairs(np.concatenate(I_parts), np.concatenate(J_parts))
        best = gk.copy()
        off = 0
        for n_j in seg:
            block = Dp[off: off + ik.size * n_j].reshape(ik.size, n_j)
            off += ik.size * n_j
            best = np.maximum(best, block.min(axis=1) - D)
        return best
