r"""The search of the MI-SVM branch and bound over witness selections.

MI-SVM (Andrews, Tsochantaridis & Hofmann 2002) in the big-M form of Kent & Yu (eq. 5,
``models/misvm_bigm.py``) minimises over (w, b)

.. math::

    \Phi(w, b) = \tfrac12\lVert w\rVert^2
        + \sum_{Y_I=+1} C_I\,\big[1 - \max_{i\in I}(w^\top z_i + b)\big]_+
        + \sum_{Y_I=-1} C_I\,\big[1 + \max_{i\in I}(w^\top z_i + b)\big]_+ ,

(w in the feature space of a kernel K in general).  For a *witness selection* s (one instance
per positive bag) the problem is the convex SVM :math:`P(s)` over the effective set
E(s) = negative instances + witnesses, and :math:`\min \Phi = \min_s P(s)`.

**Search space.** A node fixes the witness of some positive bags; branching on an unresolved
bag I creates one child per instance of I.  **Relaxation**: the SVM of the node's effective
set (unresolved bags left out), solved in the dual; **the bound is the dual objective**
:math:`D(\alpha)` of the multipliers actually reached (weak duality: valid however early the
QP solver stops), lifted by the one-step look-ahead of :func:`.bounds.pair_step_gains`.
**Incumbents**: every node's scores are scored by Φ with the exact best intercept; the
alternation is run from promising and periodic node relaxations, and the 1-opt witness-swap
search from every new incumbent (:mod:`.heuristics`).  Best-bound search; the global lower
bound is the smallest bound of the open nodes and of the nodes closed so far.

See docs/exact_misvm.md for the proofs and measured figures.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from milopt.errors import InvalidParameterError
from milopt.segments import segment_argmax

from .bounds import NewtonLookahead, free_set_newton, mi_objective_best_b, pair_step_gains, project_dual
from .nodes import Node, NodeQueue

#: dense kernel matrix up to this many instances (else rows from the features on demand)
DENSE_MAX = 3000
#: node QPs by the interior-point method up to this many effective instances (else warm-started SMO)
IPM_MAX = 400
#: stopping tolerances of the dense interior-point node QPs (complementarity, dual residual):
#: the dual objective of the projected multipliers is then within about 1e-6 of the node's
#: optimum on MUSK1 nodes (11 % fewer iterations than 1e-10 / 1e-7); it is a valid bound either way
NODE_IPM_TOL = 1e-8
NODE_IPM_RD_TOL = 1e-4
#: low-rank (Woodbury) interior-point Newton systems when features ≤ this share of the effective set
LOWRANK_RATIO = 0.5


def relative_gap(ub, lb):
    """(UB − LB) / max(|UB|, 1e-10), inf when a side is missing (as the driver reports it)."""
    if ub is None or lb is None or not (math.isfinite(ub) and math.isfinite(lb)):
        return math.inf
    return max(0.0, ub - lb) / max(abs(ub), 1e-10)


class MISVMBranchAndBound:
    """Exact MI-SVM (bag slacks) by branch and bound over witness selections.

    Parameters
    ----------
    X : ndarray (n, d) or None
        Instances, grouped contiguously by bag (linear kernel).  None with ``K``.
    bag_ptr : ndarray (B + 1,)
        Bag boundaries.
    y_bag : ndarray (B,)
        Bag labels 0/1.
    costs : ndarray (B,)
        Per-bag slack cost C_I (as ``misvm_bigm.bag_costs``).
    tol : float
        KKT tolerance of the coordinate-descent node QPs (tightened automatically when a leaf
        cannot be closed).
    qp : {'auto', 'ipm', 'smo'}
    K : ndarray (n, n), optional
        Kernel (Gram) matrix of the instances (RBF, polynomial, precomputed): the search then
        works on dual coefficients only and returns ``coef`` (f(x) = Σ coef_i K(z_i, x) + b).
    """

    def __init__(self, X, bag_ptr, y_bag, costs, tol=1e-4, qp="auto", K=None, branching="product",
                 newton_gains=True, pair_bags=3):
        from milopt.algorithms.svm_dcd import GroupSVMDual

        self.kernel = K is not None
        if self.kernel:
            K = np.ascontiguousarray(K, dtype=float)
            n = K.shape[0]
            if K.shape != (n, n):
                raise InvalidParameterError(f"bnb: expected a square kernel matrix, got shape {K.shape}")
            self.X, self.d = None, 0
        else:
            self.X = np.ascontiguousarray(X, dtype=float)
            n, self.d = self.X.shape
        self.ptr = np.asarray(bag_ptr, dtype=np.int64)
        self.ybag = np.asarray(y_bag).astype(int)
        self.costs = np.asarray(costs, dtype=float)
        B = self.ptr.size - 1
        if self.costs.shape != (B,) or self.ybag.shape != (B,) or self.ptr[-1] != n:
            raise InvalidParameterError("bnb: one cost and one label per bag, and bags covering all instances, "
                                        "expected")
        if not np.all(self.costs >= 0):
            raise InvalidParameterError("bnb: bag costs must be non-negative")
        self.n, self.B = n, B
        sizes = np.diff(self.ptr)
        if np.any(sizes < 1):
            raise InvalidParameterError("bnb: every bag needs at least one instance")
        self.bag_of = np.repeat(np.arange(B), sizes)
        self.ypos = self.ybag == 1
        self.y = np.where(self.ypos[self.bag_of], 1.0, -1.0)
        self.pos_bags = np.flatnonzero(self.ypos)
        self.sizes = sizes
        self.dense = self.kernel or n <= DENSE_MAX
        self.K = K if self.kernel else (self.X @ self.X.T if self.dense else None)
        self.tol = float(tol)
        if branching not in ("lookahead", "product"):
            raise InvalidParameterError(f"bnb: branching must be 'lookahead' or 'product', got {branching!r}")
        self.branching = branching
        self.newton_gains = bool(newton_gains)
        self.pair_bags = int(pair_bags)
        # a bag of cost 0 (e.g. kent-yu weights without positive bags) never constrains (w, b):
        # its instances stay out of every effective set
        self.live = self.costs > 0
        self.caps = np.where(self.live, self.costs, 1.0)
        self.smo = GroupSVMDual(self.K, self.y, self.bag_of, self.caps, tol=self.tol,
                                X=None if self.dense else self.X, max_iter=20000)
        self.diag = self.smo.diag
        # rows always in the effective set: negative instances and one-instance positive bags
        base = self.y < 0
        single = self.pos_bags[sizes[self.pos_bags] == 1]
        base[self.ptr[single]] = True
        base &= self.live[self.bag_of]
        dead = ~self.live[self.pos_bags]
        self.base_active = base
        if qp not in ("auto", "ipm", "smo"):
            raise InvalidParameterError(f"bnb: qp must be 'auto', 'ipm' or 'smo', got {qp!r}")
        n_eff = int(base.sum()) + int(np.sum(sizes[self.pos_bags] > 1))
        # qp='ipm' on effective sets too large for the dense method, linear kernel with fewer
        # features than effective instances: the interior-point Newton systems by the Woodbury
        # identity on the features (d × d), K never formed
        self.qp = ("ipm" if n_eff <= IPM_MAX and self.dense else "smo") if qp == "auto" else qp
        self.lowrank = (self.qp == "ipm" and not self.kernel and not (n_eff <= IPM_MAX and self.dense)
                        and self.d <= LOWRANK_RATIO * n_eff)
        self.wit0 = np.where((sizes[self.pos_bags] == 1) | dead, self.ptr[self.pos_bags], -1)

    # ------------------------------------------------------------- linear algebra
    def Kv(self, v):
        """K v (the scores of dual coefficients v)."""
        if self.dense:
            return self.K @ v
        return self.X @ (self.X.T @ v)

    def Krows(self, rows, cols):
        if self.dense:
            return self.K[np.ix_(rows, cols)]
        return self.X[rows] @ self.X[cols].T

    def phi_raw(self, raw, norm2):
        """(Φ, b*) for scores ``raw`` = K coef and ‖w‖² = ``norm2``."""
        return mi_objective_best_b(raw, self.costs, self.ypos, self.ptr, norm2)

    def phi(self, w):
        """(Φ(w, b*), b*) with the best intercept b* (linear kernel, primal w)."""
        return self.phi_raw(self.X @ w, float(w @ w))

    def selection_of_raw(self, raw, b=0.0):
        return segment_argmax(raw + b, self.ptr)[self.pos_bags]

    def selection_of(self, w, b):
        return self.selection_of_raw(self.X @ w, b)

    def dual_objective(self, alpha):
        """(D(α), coef, raw) with D(α) = Σα − ½ (yα)ᵀK(yα), a lower bound for any dual-feasible α."""
        v = alpha * self.y
        raw = self.Kv(v)
        return float(alpha.sum() - 0.5 * v @ raw), v, raw

    def project(self, a, idx):
        """Multipliers on rows ``idx`` made exactly dual feasible (:func:`.bounds.project_dual`)."""
        return project_dual(a, self.y[idx], self.bag_of[idx], self.costs)

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
        from milopt.algorithms.svm_ipm import _ipm, _ipm_lowrank

        idx = np.flatnonzero(active)
        alpha = np.zeros(self.n)
        if not ((self.y[idx] > 0).any() and (self.y[idx] < 0).any()):
            # one class only: Σ y α = 0 leaves α = 0 as the only dual feasible point (w = 0)
            return alpha, self.y.copy(), 0, None
        gi, ginv = np.unique(self.bag_of[idx], return_inverse=True)
        if self.lowrank:
            r = _ipm_lowrank(self.X[idx], self.y[idx], ginv, self.costs[gi], tol=1e-10, max_iter=200)
        else:
            stop = None
            if math.isfinite(target):
                yi = self.y[idx]

                def stop(a, Qa):
                    # D of the projected iterate (Q a is only a first screen: D(a) ≥ D(project(a))
                    # is not guaranteed, so the projected point is evaluated exactly)
                    if float(a.sum() - 0.5 * a @ Qa) < target:
                        return False
                    p = self.project(a, idx)
                    v = p * yi
                    return float(p.sum() - 0.5 * v @ (KE @ v)) >= target

            KE = self.Krows(idx, idx)
            r = _ipm(KE, self.y[idx], ginv, self.costs[gi], tol=1e-11 if tight else NODE_IPM_TOL, max_iter=200,
                     rd_tol=1e-9 if tight else NODE_IPM_RD_TOL, stop=stop)
        alpha[idx] = self.project(r["alpha"], idx)
        F = self.y - self.Kv(self.y * alpha)
        return alpha, F, int(r["iterations"]), (None if self.lowrank or not r["converged"] else r.get("newton"))

    def _node_qp(self, alpha0, active, deadline, tol, target=math.inf, tight=False):
        """(α, F, iterations, newton) of the node QP: the interior-point method when it is the
        node solver (falling back to the coordinate descent if it fails numerically), else the
        warm-started coordinate descent.  α is always exactly dual feasible; ``newton`` is the
        dense interior-point method's last Newton solver (None otherwise, and when the method
        stopped early because its bound reached ``target``)."""
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
        res = self._evaluate(node, incumbent, eps, deadline)
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

    # ---------------------------------------------------------------- the search
    def solve(self, time_limit=None, mip_gap=1e-4, abs_gap=1e-9, node_limit=None, incumbents=(), primal_incumbents=(),
              heuristic=None, swap=True, dive_every=0, heuristic_share=0.1, verbose=False, log_every=5.0,
              history_every=0.5, workers=1, batch=0, log=None, start_swap=False, kick_every=0, kick_size=3, seed=0,
              incumbent_times=None, scheduler=None):
        """Run the branch and bound.

        Parameters
        ----------
        time_limit : float, optional
            Wall seconds for the search.
        mip_gap : float
            Stop when (UB − LB) / max(|UB|, 1e-10) ≤ mip_gap.
        abs_gap : float
            ... or when UB − LB ≤ abs_gap.
        node_limit : int, optional
        incumbents : iterable of (coef, b)
            Known points as dual coefficients (f = K coef + b); their Φ is evaluated and the best
            is the first incumbent.
        incumbent_times : list of float, optional
            When each of ``incumbents`` was found, in seconds relative to the start of this call
            (negative: before it); the trajectory records them at these times.
        primal_incumbents : iterable of (w, b)
            Known points as primal weights (linear kernel).
        heuristic : callable(scores) -> (coef, b) or None, optional
            Local improvement (the alternation) started from a node's scores.
        swap : bool
            Run the 1-opt witness-swap search (:func:`.heuristics.swap_search`) from every new
            incumbent found by a dive (and from the best start with ``start_swap``).
        dive_every : int
            Also run ``heuristic`` from every k-th node's relaxation (0: only on improvement).
        heuristic_share : float
            Heuristics during the search stop while they have used more than this share of the
            elapsed time (+ 1 s).
        kick_every, kick_size, seed : int
            After ``kick_every`` nodes (0: never), one second of the iterated local search
            (:func:`.heuristics.kick_search`, at most ``kick_size`` bags kicked at once, seeded)
            from the incumbent; the interval doubles after every round that finds nothing and
            returns to ``kick_every`` after one that does.
        verbose : bool
            Progress lines (time, nodes, open, incumbent, bound, gap) on stderr every ``log_every`` s.
        workers, batch : int
            Processes evaluating open nodes in parallel (:mod:`.parallel`), nodes per round.
        scheduler : str, optional
            Evaluate the rounds on a dask.distributed cluster (``'local'`` or an address).

        Returns
        -------
        dict: w (linear) or coef (kernel), b, objective, bound, nodes, iterations, termination
        ('optimal', 'time_limit', 'iteration_limit', 'interrupted'), history, root_bound,
        open_nodes, seconds, incumbent_source, incumbent_time, heuristic_search_seconds,
        closed_nodes (evaluated nodes closed, by bound or by a feasible relaxed optimum).
        """
        from .heuristics import kick_search, swap_search

        t0 = time.perf_counter()
        deadline = t0 + (float(time_limit) if time_limit is not None else math.inf)
        out_log = log if log is not None else sys.stderr
        best = {"value": math.inf, "coef": None, "w": None, "b": 0.0, "source": "", "time": None}
        trajectory = []           # (seconds, Φ) of every improving incumbent, in the order found
        heur = {"time": 0.0}

        def offer(vec=None, b=None, source="", raw=None, norm2=None, ph=None, is_w=False):
            """Score a point (dual coefficients, or primal w with ``is_w``) by Φ; keep it when it
            improves the incumbent."""
            if ph is None:
                if is_w:
                    ph = self.phi(vec)
                else:
                    if raw is None:
                        raw = self.Kv(vec)
                        norm2 = float(vec @ raw)
                    ph = self.phi_raw(raw, norm2)
            val, bb = ph
            if val < best["value"] - 1e-12 * max(1.0, abs(val)):
                best.update(value=val, b=bb, source=source, time=time.perf_counter() - t0,
                            coef=None if is_w else np.array(vec, dtype=float), w=np.array(vec) if is_w else None)
                trajectory.append((best["time"], float(val)))
                return True
            return False

        def budget_ok():
            return heur["time"] < heuristic_share * (time.perf_counter() - t0) + 1.0

        def polish(raw, source):
            """Alternation from ``raw``, then the swap search from an improved incumbent."""
            th = time.perf_counter()
            improved = False
            try:
                if heuristic is not None and raw is not None:
                    r = heuristic(raw)
                    if r is not None:
                        improved |= offer(np.asarray(r[0], dtype=float), r[1], source)
                if swap and (improved or raw is None):
                    start_raw = self.Kv(best["coef"]) if best["coef"] is not None else self.X @ best["w"]
                    s = swap_search(self, start_raw, min(deadline, th + max(2.0, 0.1 * (th - t0))))
                    if s is not None:
                        improved |= offer(s[1], s[2], "swap")
            except KeyboardInterrupt:
                raise
            except Exception:  # noqa: BLE001 - a failed local search never stops the proof
                pass
            heur["time"] += time.perf_counter() - th
            return improved

        history = []
        last = {"hist": -math.inf, "log": -math.inf}
        queue = NodeQueue()
        closed = [math.inf]       # smallest bound of the nodes closed so far (part of the proof)
        queue.push(Node(-math.inf, self.wit0.copy(), np.zeros(self.n), 0, -1))
        stats = {"nodes": 0, "iters": 0, "root": None, "closed": 0, "kicks": 0, "next_kick": kick_every,
                 "kick_gap": kick_every}
        termination = "optimal"

        def lower():
            return min(queue.min_bound(), closed[0], best["value"])

        def record(force=False):
            now = time.perf_counter() - t0
            if force or now - last["hist"] >= history_every:
                lb, ub = lower(), best["value"]
                history.append({"time": now, "nodes": stats["nodes"], "lower": lb, "upper": ub,
                                "gap": relative_gap(ub, lb), "open": len(queue)})
                last["hist"] = now
            if verbose and (force or now - last["log"] >= log_every):
                lb, ub = lower(), best["value"]
                print(f"{now:9.1f}s {stats['nodes']:10d} {len(queue):9d} {ub:14.7g} {lb:14.7g} "
                      f"{100 * relative_gap(ub, lb):8.3f}%", file=out_log, flush=True)
                last["log"] = now

        def eps():
            return max(abs_gap, mip_gap * abs(best["value"])) if math.isfinite(best["value"]) else abs_gap

        def closes(bound):
            return bound >= best["value"] - eps()

        def apply(node, res):
            """Book a node's evaluation: incumbent, closing, children."""
            stats["nodes"] += 1
            stats["iters"] += res["iterations"]
            if stats["root"] is None:
                stats["root"] = res["bound"]
            improved = offer(res["coef"], None, "node", ph=res["phi"])
            if "dive" in res:
                heur["time"] += res.get("dive_seconds", 0.0)
                v, c, b = res["dive"]
                if offer(c, b, "dive", ph=(v, b)) and swap and budget_ok() and time.perf_counter() < deadline:
                    polish(None, "dive")
            if improved and budget_ok() and time.perf_counter() < deadline:
                polish(res["raw"], "node")
            if res["action"] == "close" or closes(res["bound"]):
                closed[0] = min(closed[0], res["bound"])
                stats["closed"] += 1
                return
            # candidates ruled out by reduced-cost fixing: their bounds reached the incumbent
            closed[0] = min(closed[0], res["out_bound"])
            base = node.wit.copy()
            base[res["forced_bags"]] = res["forced_rows"]
            for r_, cb in zip(res["rows"].tolist(), res["child_bounds"].tolist()):
                if closes(cb):
                    closed[0] = min(closed[0], cb)
                    continue
                cw = base.copy()
                if res["bag"] >= 0:
                    cw[res["bag"]] = r_
                queue.push(Node(cb, cw, res["alpha"], node.depth + 1, r_, res["out"]))

        def wants_dive(j):
            """Whether the j-th node of the next round runs a dive (every ``dive_every``-th node,
            within the heuristic time share)."""
            k = stats["nodes"] + j
            return bool(dive_every) and k % dive_every == 0 and budget_ok()

        pool = None
        if verbose:
            print(f"bnb: {self.B} bags, {self.n} instances, {int(self.ypos.sum())} positive bags "
                  f"({int(np.sum(self.sizes[self.pos_bags]))} witness candidates); node QP {self.qp}; "
                  f"workers {workers}", file=out_log)
            print(f"{'time':>10} {'nodes':>10} {'open':>9} {'incumbent':>14} {'bound':>14} {'gap':>9}",
                  file=out_log, flush=True)
        try:
            for k, (vec, b) in enumerate(incumbents):
                if offer(np.asarray(vec, dtype=float), b, "start") and incumbent_times is not None:
                    # a start found before the search: its own time (negative: before the search began)
                    best["time"] = float(incumbent_times[k])
                    trajectory[-1] = (best["time"], trajectory[-1][1])
            for w, b in primal_incumbents:
                offer(np.asarray(w, dtype=float), b, "start", is_w=True)
            if start_swap and swap and best["value"] < math.inf and time.perf_counter() < deadline:
                _swap_only(self, best, offer, deadline, heur, t0)
            if workers > 1 or scheduler:
                from .parallel import NodePool

                # connecting to a cluster counts against the time limit (dask waits 30 s at most)
                pool = NodePool(self, workers, scheduler, timeout=min(30.0, deadline - time.perf_counter()))
            while queue:
                if closes(queue.min_bound()):
                    break
                if time.perf_counter() > deadline:
                    termination = "time_limit"
                    break
                if node_limit is not None and stats["nodes"] >= node_limit:
                    termination = "iteration_limit"
                    break
                if pool is None:
                    node = queue.pop()
                    res = self.evaluate(node, best["value"], eps(), deadline, dive=wants_dive(0))
                    apply(node, res)
                else:
                    k = batch or 4 * workers
                    if node_limit is not None:
                        k = min(k, node_limit - stats["nodes"])
                    nodes = [queue.pop() for _ in range(min(k, len(queue)))]
                    nodes = [nd for nd in nodes if not closes(nd.bound) or closed.__setitem__(
                        0, min(closed[0], nd.bound))]
                    dives = [wants_dive(j) for j in range(len(nodes))]
                    for node, res in zip(nodes, pool.evaluate(nodes, best["value"], eps(), deadline, dives)):
                        apply(node, res)
                if (kick_every and stats["nodes"] >= stats["next_kick"] and best["value"] < math.inf
                        and budget_ok() and time.perf_counter() < deadline):
                    # a round of the iterated local search; the interval doubles after a round
                    # that finds nothing (and is reset by one that does)
                    stats["kicks"] += 1
                    th = time.perf_counter()
                    try:
                        start_raw = self.Kv(best["coef"]) if best["coef"] is not None else self.X @ best["w"]
                        r = kick_search(self, start_raw, min(deadline, th + 1.0), seed=seed + stats["kicks"],
                                        kick=kick_size)
                        found = r is not None and offer(r[1], r[2], "kick")
                        stats["kick_gap"] = kick_every if found else 2 * stats["kick_gap"]
                        stats["next_kick"] = stats["nodes"] + stats["kick_gap"]
                    except KeyboardInterrupt:
                        raise
                    except Exception:  # noqa: BLE001 - a failed local search never stops the proof
                        pass
                    heur["time"] += time.perf_counter() - th
                record()
        except KeyboardInterrupt:
            termination = "interrupted"
        finally:
            if pool is not None:
                pool.close()
        lb = lower()
        ub = best["value"]
        if termination == "optimal" and not closes(lb):
            termination = "time_limit"
        record(force=True)
        w, coef = best["w"], best["coef"]
        if not self.kernel and w is None and coef is not None:
            w = self.X.T @ coef
        return {"w": w, "coef": coef, "b": best["b"], "objective": ub, "bound": lb, "nodes": stats["nodes"],
                "iterations": stats["iters"], "termination": termination, "history": history,
                "root_bound": stats["root"], "open_nodes": len(queue), "seconds": time.perf_counter() - t0,
                "incumbent_source": best["source"], "incumbent_time": best["time"],
                "heuristic_search_seconds": heur["time"], "closed_nodes": stats["closed"],
                "trajectory": trajectory}


def _swap_only(eng, best, offer, deadline, heur, t0):
    """The swap search from the starting incumbent."""
    from .heuristics import swap_search

    th = time.perf_counter()
    try:
        raw = eng.Kv(best["coef"]) if best["coef"] is not None else eng.X @ best["w"]
        s = swap_search(eng, raw, min(deadline, th + max(2.0, 0.1 * (deadline - t0) if math.isfinite(deadline)
                                                         else 10.0)))
        if s is not None:
            offer(s[1], s[2], "swap")
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001
        pass
    heur["time"] += time.perf_counter() - th
