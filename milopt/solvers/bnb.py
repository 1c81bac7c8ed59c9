r"""``bnb``: a structure-aware branch and bound for MI-SVM (linear kernel), a driver backend.

MI-SVM (Andrews, Tsochantaridis & Hofmann 2002) in the big-M form of Kent & Yu (eq. 5,
``models/misvm_bigm.py``) minimises over (w, b)

.. math::

    \Phi(w, b) = \tfrac12\lVert w\rVert^2
        + \sum_{Y_I=+1} C_I\,\big[1 - \max_{i\in I}(w^\top z_i + b)\big]_+
        + \sum_{Y_I=-1} C_I\,\big[1 + \max_{i\in I}(w^\top z_i + b)\big]_+ ,

which is the big-M model's objective with its slacks and binaries at their best values.  For a
*witness selection* s (one instance per positive bag) the problem is the convex SVM
:math:`P(s)` over the effective set E(s) = negative instances + witnesses, and
:math:`\min \Phi = \min_s P(s)`.

**Search space.** A node fixes the witness of some positive bags (the *resolved* bags R);
the others are unresolved.  Branching on an unresolved bag I creates one child per instance
of I (its witness).  Leaves are witness selections, so the tree enumerates
:math:`\min_s P(s)` exactly.

**Node relaxation.** The convex QP :math:`P_R` of the node's effective set (negative
instances, fixed witnesses, one-instance positive bags); the unresolved bags are left out.
It is a relaxation: every selection of the node contains E(R), so :math:`P_R \le P(s)`.  It
is solved in the dual (Kent & Yu eq. 3, grouped slacks, one group per bag) by the project's
two-coordinate descent :class:`~milopt.algorithms.svm_dcd.GroupSVMDual`, warm started from
the parent's multipliers (a child adds one instance with α = 0).  **The bound is the dual
objective** :math:`D(\alpha) = \sum\alpha - \tfrac12\lVert\sum\alpha_i y_i z_i\rVert^2` of the
multipliers actually reached: any α with α ≥ 0, group sums ≤ C_I and Σ y α = 0 (kept
exactly by every pair step) satisfies :math:`D(\alpha) \le P_R` by weak duality, so the bound
is valid however early the coordinate descent stops.

**Look-ahead bound (one dual step per child).** For an unresolved bag I and each instance
i ∈ I, the child "witness of I is i" has the feasible dual point α + t(e_i ± e_j) for any
partner j of the working set (a negative instance whose bag has slack left, or a positive
instance with α_j > 0), so its relaxation is at least :math:`D(\alpha) + g_i` with the exact
gain of the best such pair step,
:math:`g_i = \max_j \max_{0\le t\le t_{\max}} t\,(F_i - F_j) - \tfrac12 t^2 a_{ij}`,
:math:`a_{ij} = K_{ii}+K_{jj}-2K_{ij}`, F the libsvm gradient vector.  The node's value is the
minimum over I's children, hence :math:`\max_I \min_{i\in I} (D + g_i)` is a valid bound of the
node, each child starts with bound :math:`D + g_i`, and the bag maximising
:math:`\min_i g_i` is the one branched on (a violated bag whose every witness costs).

**Fathoming.** Every node's (w, b) is scored by the true MI-SVM objective with the best
intercept (:math:`\Phi(w,\cdot)` is convex piecewise linear in b: its minimum is at a breakpoint),
which gives incumbents.  A node is closed when its bound reaches the incumbent (within the
gap) or when :math:`\Phi(w, b) \le` its bound (+ tolerance): the relaxed optimum is then feasible
for every selection of the node.  Best-bound search; the global lower bound is the smallest
open bound.  Incumbents also come from the MI-SVM alternating heuristic
(:func:`~milopt.algorithms.mi_heuristics.misvm_alternate`, several starts) before the search
and from local alternation started at promising node solutions.

See docs/exact_misvm.md for the proofs and measured figures.
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import replace

import numpy as np

from milopt.errors import InvalidParameterError, UnsupportedProblemError
from milopt.segments import segment_argmax, segment_max
from milopt.solvers.result import relative_gap

#: dense kernel matrix up to this many instances (else rows from the features on demand)
DENSE_MAX = 3000
#: node QPs by the interior-point method up to this many effective instances (else warm-started SMO)
IPM_MAX = 400


def mi_objective_best_b(raw, costs, ypos, ptr, w_norm2):
    """min over b of Φ(w, b) for scores raw = X w: (value, b).

    Φ(w, ·) is convex piecewise linear with breakpoints b = 1 - m_I (positive bags) and
    b = -1 - m_I (negative bags), m_I = max_{i∈I} raw_i; all breakpoints are evaluated.
    """
    m = segment_max(raw, ptr)
    cand = np.where(ypos, 1.0 - m, -1.0 - m)
    cand = np.unique(cand)
    # (n_cand, B) loss matrix
    S = m[None, :] + cand[:, None]
    loss = np.where(ypos[None, :], np.maximum(0.0, 1.0 - S), np.maximum(0.0, 1.0 + S))
    val = loss @ costs
    k = int(np.argmin(val))
    return float(0.5 * w_norm2 + val[k]), float(cand[k])


class _Node:
    __slots__ = ("add", "alpha", "bound", "depth", "wit")

    def __init__(self, bound, wit, alpha, depth, add):
        self.bound = bound      # valid lower bound of the node
        self.wit = wit          # witness row per positive bag (-1: unresolved)
        self.alpha = alpha      # parent's multipliers (shared by siblings; warm start)
        self.depth = depth
        self.add = add          # row added to the effective set (or -1)


class MISVMBranchAndBound:
    """Exact MI-SVM (linear kernel, bag slacks) by branch and bound over witness selections.

    Parameters
    ----------
    X : ndarray (n, d)
        Instances, grouped contiguously by bag.
    bag_ptr : ndarray (B + 1,)
        Bag boundaries.
    y_bag : ndarray (B,)
        Bag labels 0/1.
    costs : ndarray (B,)
        Per-bag slack cost C_I (as ``misvm_bigm.bag_costs``).
    tol : float
        KKT tolerance of the node QPs (tightened automatically when a node cannot be closed).
    """

    def __init__(self, X, bag_ptr, y_bag, costs, tol=1e-4, qp="auto"):
        from milopt.algorithms.svm_dcd import GroupSVMDual

        self.X = np.ascontiguousarray(X, dtype=float)
        self.ptr = np.asarray(bag_ptr, dtype=np.int64)
        self.ybag = np.asarray(y_bag).astype(int)
        self.costs = np.asarray(costs, dtype=float)
        n, d = self.X.shape
        B = self.ptr.size - 1
        if self.costs.shape != (B,) or self.ybag.shape != (B,):
            raise InvalidParameterError("bnb: one cost and one label per bag expected")
        if not np.all(self.costs >= 0):
            raise InvalidParameterError("bnb: bag costs must be non-negative")
        self.n, self.d, self.B = n, d, B
        sizes = np.diff(self.ptr)
        if np.any(sizes < 1):
            raise InvalidParameterError("bnb: every bag needs at least one instance")
        self.bag_of = np.repeat(np.arange(B), sizes)
        self.ypos = self.ybag == 1
        self.y = np.where(self.ypos[self.bag_of], 1.0, -1.0)
        self.pos_bags = np.flatnonzero(self.ypos)
        self.sizes = sizes
        self.dense = n <= DENSE_MAX
        self.K = self.X @ self.X.T if self.dense else None
        self.tol = float(tol)
        # a bag of cost 0 (e.g. kent-yu weights without positive bags) never constrains (w, b):
        # its instances stay out of every effective set
        self.live = self.costs > 0
        self.smo = GroupSVMDual(self.K, self.y, self.bag_of, np.where(self.live, self.costs, 1.0), tol=self.tol,
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
        self.qp = ("ipm" if n_eff <= IPM_MAX and self.dense else "smo") if qp == "auto" else qp
        self.wit0 = np.where((sizes[self.pos_bags] == 1) | dead, self.ptr[self.pos_bags], -1)

    # ------------------------------------------------------------- linear algebra
    def _Kv(self, v):
        if self.dense:
            return self.K @ v
        return self.X @ (self.X.T @ v)

    def _Krows(self, rows, cols):
        if self.dense:
            return self.K[np.ix_(rows, cols)]
        return self.X[rows] @ self.X[cols].T

    def dual_objective(self, alpha):
        """D(α) = Σα − ½‖Σ α_i y_i z_i‖² (a valid lower bound for any dual-feasible α)."""
        v = alpha * self.y
        w = self.X.T @ v
        return float(alpha.sum() - 0.5 * w @ w), w

    def phi(self, w):
        """(Φ(w, b*), b*) with the best intercept b*."""
        raw = self.X @ w
        return mi_objective_best_b(raw, self.costs, self.ypos, self.ptr, float(w @ w))

    def selection_of(self, w, b):
        return segment_argmax(self.X @ w + b, self.ptr)[self.pos_bags]

    # ------------------------------------------------------------------- node QP
    def _solve_node(self, alpha0, active, deadline, tol):
        smo = self.smo
        alpha0 = np.where(active, alpha0, 0.0)
        smo.alpha = alpha0.copy()
        smo.active = active.copy()
        smo.gsum = np.add.reduceat(smo.alpha, smo.gptr[:-1])
        smo.F = self.y - self._Kv(self.y * smo.alpha)
        smo.tol = tol
        its = 0
        while True:
            info = smo.solve()
            its += info["iterations"]
            if info["converged"] or time.perf_counter() > deadline or info["iterations"] < smo.max_iter:
                break
        return its, info["converged"]

    def _solve_node_ipm(self, active):
        """Node QP on the effective set by the interior-point method (no warm start; near exact),
        its multipliers projected onto the dual feasible set so that D(α) is a valid bound."""
        from milopt.algorithms.svm_ipm import _ipm

        idx = np.flatnonzero(active)
        alpha = np.zeros(self.n)
        if not ((self.y[idx] > 0).any() and (self.y[idx] < 0).any()):
            # one class only: Σ y α = 0 leaves α = 0 as the only dual feasible point (w = 0)
            self.smo.alpha = alpha
            self.smo.F = self.y.copy()
            return 0, True
        gi, ginv = np.unique(self.bag_of[idx], return_inverse=True)
        Ke = self._Krows(idx, idx)
        r = _ipm(Ke, self.y[idx], ginv, self.costs[gi], tol=1e-10, max_iter=200)
        alpha[idx] = self.project(r["alpha"], idx)
        self.smo.alpha = alpha
        self.smo.F = self.y - self._Kv(self.y * alpha)
        return int(r["iterations"]), bool(r["converged"])

    def project(self, a, idx):
        """Make multipliers exactly dual feasible: α ≥ 0, group sums ≤ C_I (scaled down), and
        Σ y α = 0 (the larger side scaled down)."""
        a = np.maximum(np.asarray(a, dtype=float), 0.0)
        g = self.bag_of[idx]
        gs = np.bincount(g, weights=a, minlength=self.B)
        scale = np.where(gs > self.costs, self.costs / np.maximum(gs, 1e-300), 1.0)
        a = a * scale[g]
        yy = self.y[idx]
        sp, sn = a[yy > 0].sum(), a[yy < 0].sum()
        if sp > sn:
            a = np.where(yy > 0, a * (sn / sp), a)
        elif sn > sp:
            a = np.where(yy < 0, a * (sp / sn), a)
        return a

    def _gains(self, cand, alpha, active):
        """Exact gain of the best feasible pair step that brings each candidate row into the
        effective set (α_cand = 0, its bag's group empty): vector over ``cand``."""
        smo = self.smo
        y, F, caps, g = self.y, smo.F, self.costs, self.bag_of
        gsum = np.add.reduceat(alpha, smo.gptr[:-1])
        slack = caps - gsum
        neg_open = active & (y < 0) & (slack[g] > 1e-12 * caps[g])
        pos_has = active & (y > 0) & (alpha > 0)
        low = np.flatnonzero(neg_open | pos_has)
        if low.size == 0 or cand.size == 0:
            return np.zeros(cand.size)
        tmax_j = np.where(y[low] < 0, slack[g[low]], alpha[low])
        tmax = np.minimum(tmax_j[None, :], caps[g[cand]][:, None])
        diff = F[cand][:, None] - F[low][None, :]
        a = np.maximum(self.diag[cand][:, None] + self.diag[low][None, :] - 2.0 * self._Krows(cand, low), 1e-12)
        t = np.clip(diff / a, 0.0, tmax)
        gain = t * diff - 0.5 * a * t * t
        return np.maximum(gain.max(axis=1), 0.0)

    # ---------------------------------------------------------------- the search
    def solve(self, time_limit=None, mip_gap=1e-4, abs_gap=1e-9, node_limit=None, incumbents=(),
              heuristic=None, verbose=False, history_every=0.5):
        """Run the branch and bound.

        Parameters
        ----------
        time_limit : float, optional
            Wall seconds for the whole search (the heuristics run by the backend come first).
        mip_gap : float
            Stop when (UB − LB) / max(|UB|, 1e-10) ≤ mip_gap.
        abs_gap : float
            ... or when UB − LB ≤ abs_gap.
        node_limit : int, optional
        incumbents : iterable of (w, b)
            Known points (their Φ is evaluated; the best is the first incumbent).
        heuristic : callable(scores) -> (w, b) or None, optional
            Local improvement started from a promising node's scores.

        Returns
        -------
        dict: w, b, objective, bound, nodes, iterations, termination ('optimal', 'time_limit',
        'iteration_limit', 'interrupted'), history (list of dicts), root_bound, open_nodes.
        """
        t0 = time.perf_counter()
        deadline = t0 + (float(time_limit) if time_limit is not None else math.inf)
        n = self.n
        best = {"value": math.inf, "w": None, "b": 0.0}

        def offer(w, val=None, source=""):
            if val is None:
                val, bb = self.phi(w)
            else:
                val, bb = val
            if val < best["value"] - 1e-12 * max(1.0, abs(val)):
                best.update(value=val, w=np.array(w, dtype=float), b=bb, source=source)
                return True
            return False

        for w, b in incumbents:
            offer(np.asarray(w, dtype=float), None, "start")
        history = []
        last_hist = [-math.inf]
        heap = []
        counter = 0
        # smallest bound of the nodes closed so far (pruned by bound, closed by a feasible relaxed
        # optimum, or, never in practice, a leaf whose QP could not be made accurate): part of the
        # global lower bound, so that the reported bound is a proof, not a tolerance
        closed = [math.inf]
        root = _Node(-math.inf, self.wit0.copy(), np.zeros(n), 0, -1)
        heap.append((root.bound, 0, counter, root))
        nodes = 0
        iters = 0
        root_bound = None
        termination = "optimal"
        heur_time = 0.0

        def lower():
            lb = heap[0][0] if heap else math.inf
            return min(lb, closed[0], best["value"])

        def record(force=False):
            now = time.perf_counter() - t0
            if force or now - last_hist[0] >= history_every:
                lb = lower()
                ub = best["value"]
                history.append({"time": now, "nodes": nodes, "lower": lb, "upper": ub,
                                "gap": relative_gap(ub, lb), "open": len(heap)})
                last_hist[0] = now
                if verbose:
                    print(f"bnb {now:8.2f}s nodes={nodes:7d} open={len(heap):7d} lb={lb:.6g} ub={ub:.6g} "
                          f"gap={relative_gap(ub, lb):.3%}", flush=True)

        def eps():
            return max(abs_gap, mip_gap * abs(best["value"]))

        def closes(bound):
            return bound >= best["value"] - eps()

        def close(bound):
            closed[0] = min(closed[0], bound)

        try:
            while heap:
                if closes(heap[0][0]):
                    break
                if time.perf_counter() > deadline:
                    termination = "time_limit"
                    break
                if node_limit is not None and nodes >= node_limit:
                    termination = "iteration_limit"
                    break
                node = heapq.heappop(heap)[3]
                nodes += 1
                wit = node.wit
                active = self.base_active.copy()
                fixed = wit[wit >= 0]
                active[fixed[self.live[self.bag_of[fixed]]]] = True
                tol = self.tol
                alpha0 = node.alpha
                while True:
                    if self.qp == "ipm":
                        it, _ = self._solve_node_ipm(active)
                    else:
                        it, _ = self._solve_node(alpha0, active, deadline, tol)
                    iters += it
                    alpha = self.smo.alpha.copy()
                    D, w = self.dual_objective(alpha)
                    nb = max(node.bound, D)
                    ph = self.phi(w)
                    improved = offer(w, ph, "node")
                    if improved and heuristic is not None and heur_time < 0.2 * (time.perf_counter() - t0) + 1.0:
                        th = time.perf_counter()
                        try:
                            r = heuristic(self.X @ w)
                        except Exception:  # a failed local search never stops the proof
                            r = None
                        if r is not None:
                            offer(r[0], None, "local")
                        heur_time += time.perf_counter() - th
                    if closes(nb) or ph[0] <= nb + 0.5 * eps():
                        action = "close"      # pruned, or the relaxed optimum is feasible for the node
                        break
                    if (wit < 0).any():
                        action = "branch"
                        break
                    # a leaf whose QP is not yet accurate enough to close it: tighten
                    if self.qp == "ipm" or tol <= 1e-11 or time.perf_counter() > deadline:
                        action = "close"
                        break
                    tol *= 0.01
                    alpha0 = alpha
                if action == "close":
                    close(nb)
                    if root_bound is None:
                        root_bound = nb
                    record()
                    continue
                # branch: look-ahead gains of every instance of every unresolved bag
                unres = np.flatnonzero(wit < 0)
                ub_bags = self.pos_bags[unres]
                cand = np.concatenate([np.arange(self.ptr[I], self.ptr[I + 1]) for I in ub_bags])
                owner = np.repeat(np.arange(unres.size), self.sizes[ub_bags])
                g = self._gains(cand, alpha, active)
                bag_min = np.full(unres.size, np.inf)
                np.minimum.at(bag_min, owner, g)
                # ties (no gain anywhere): the bag with the largest hinge loss under (w, b*)
                s = self.X[cand] @ w
                bmax = np.full(unres.size, -np.inf)
                np.maximum.at(bmax, owner, s)
                viol = self.costs[ub_bags] * np.maximum(0.0, 1.0 - bmax - ph[1])
                k = int(np.lexsort((-viol, -bag_min))[0])
                nb = max(nb, float(D + bag_min[k]))
                if root_bound is None:
                    root_bound = nb
                sel = owner == k
                for r_, gi in zip(cand[sel].tolist(), g[sel].tolist()):
                    cb = max(nb, D + gi)
                    if closes(cb):
                        close(cb)
                        continue
                    cw = wit.copy()
                    cw[unres[k]] = r_
                    counter += 1
                    heapq.heappush(heap, (cb, -(node.depth + 1), counter, _Node(cb, cw, alpha, node.depth + 1, r_)))
                record()
        except KeyboardInterrupt:
            termination = "interrupted"
        lb = lower()
        ub = best["value"]
        if termination == "optimal" and not closes(lb):
            termination = "time_limit"
        record(force=True)
        return {"w": best["w"], "b": best["b"], "objective": ub, "bound": lb, "nodes": nodes, "iterations": iters,
                "termination": termination, "history": history, "root_bound": root_bound,
                "open_nodes": len(heap), "seconds": time.perf_counter() - t0,
                "incumbent_source": best.get("source", "")}


# ------------------------------------------------------------------ heuristics
def heuristic_starts(bags, K, C, class_weight, restarts, seed, deadline, X):
    """(w, b) points from the MI-SVM alternating heuristic: centroid and SIL starts, then random
    starts (each its own seed) while time allows."""
    from milopt.algorithms.mi_heuristics import misvm_alternate

    out = []
    inits = ["centroid", "sil"] + ["random"] * max(0, int(restarts) - 2)
    for r, init in enumerate(inits[:max(1, int(restarts))]):
        if time.perf_counter() > deadline:
            break
        try:
            res = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", init=init, restarts=1,
                                  random_state=seed + r, X=X, solver="smo" if K is None else "auto")
        except Exception:
            continue
        w = X.T @ (res["alpha"] * res["y"])
        out.append((w, res["b"]))
    return out


def local_search(bags, K, C, class_weight, X):
    """Alternation started from given instance scores (MI-SVM Algorithm 1)."""
    from milopt.algorithms.mi_heuristics import misvm_alternate

    def run(scores):
        res = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", restarts=1, init_scores=scores,
                              X=X, max_iter=20, solver="smo" if K is None else "auto")
        return X.T @ (res["alpha"] * res["y"]), res["b"]

    return run


def solve_bags(bags, C=1.0, class_weight="kent-yu", costs=None, time_limit=None, mip_gap=1e-4, restarts=8, seed=0,
               starts=(), node_limit=None, tol=1e-4, qp="auto", verbose=False):
    """Solve MI-SVM on ``bags`` (linear kernel, bag slacks) exactly; returns the dict of
    :meth:`MISVMBranchAndBound.solve` plus ``heuristic_seconds`` and ``witnesses``.

    The heuristics (``restarts`` starts of the alternation) use at most 10 % of ``time_limit``.
    """
    from threadpoolctl import threadpool_limits

    from milopt.algorithms.mi_heuristics import slack_costs

    if costs is None:
        costs = slack_costs(bags, C, class_weight)[0]
    t0 = time.perf_counter()
    with threadpool_limits(1):
        eng = MISVMBranchAndBound(bags.X, bags.bag_ptr, bags.y, costs, tol=tol, qp=qp)
        K = eng.K
        budget = 0.1 * time_limit if time_limit is not None else math.inf
        pts = list(starts)
        if restarts and (bags.y == 1).any() and (bags.y == 0).any():
            pts += heuristic_starts(bags, K, C, class_weight, restarts, seed, t0 + budget, bags.X)
        heur_s = time.perf_counter() - t0
        left = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - t0))
        ls = local_search(bags, K, C, class_weight, bags.X) if restarts else None
        out = eng.solve(time_limit=left, mip_gap=mip_gap, node_limit=node_limit, incumbents=pts, heuristic=ls,
                        verbose=verbose)
    if out["w"] is None:   # no start and no node evaluated (time limit before the root)
        out["w"], out["b"] = np.zeros(bags.n_features), 0.0
        out["objective"], out["b"] = eng.phi(out["w"])
    out["heuristic_seconds"] = heur_s
    out["seconds"] = time.perf_counter() - t0
    out["witnesses"] = eng.selection_of(out["w"], out["b"])
    return out


# ---------------------------------------------------------------- the backend
def _version():
    import milopt

    return f"milopt {getattr(milopt, '__version__', '')}".strip()


def _refuse(msg):
    raise UnsupportedProblemError(msg)


def _run(model, opts):
    """Driver backend: solve a ``misvm-bigm`` model (norm=l2) by branch and bound."""
    import pyomo.environ as pe

    from milopt.models import misvm_bigm as mod
    from milopt.solvers.driver import finish
    from milopt.solvers.result import Termination

    meta = getattr(model, "_milopt_meta", None)
    bags = getattr(model, "_milopt_bags", None)
    if getattr(model, "name", "") != "misvm_bigm" or meta is None or bags is None:
        _refuse(f"bnb solves MI-SVM only (formulation misvm-bigm, linear kernel); model {model.name!r} is not "
                "one: use --solver scip")
    if meta.get("norm", "l2") != "l2":
        _refuse("bnb solves misvm-bigm with norm=l2 only (its node QPs are SVM duals); use --solver highs or scip "
                "for norm=l1")
    t_start = time.perf_counter()
    o = dict(opts.get("options") or {})
    restarts = int(o.pop("restarts", 8))
    seed = int(o.pop("seed", 0))
    node_limit = o.pop("node_limit", None)
    tol = float(o.pop("tol", 1e-4))
    qp = str(o.pop("qp", "auto"))
    if o:
        raise InvalidParameterError(f"bnb: unknown option(s) {sorted(o)}; accepted: restarts, seed, node_limit, tol, qp")
    starts = []
    if opts.get("warm_start"):
        d = meta["n_features"]
        wv = [pe.value(model.w[k], exception=False) for k in range(d)]
        if all(v is not None for v in wv):
            starts.append((np.array(wv, dtype=float), float(pe.value(model.b, exception=False) or 0.0)))
    gap = opts.get("mip_gap")
    tl = opts.get("time_limit")
    out = solve_bags(bags, C=meta["C"], class_weight=meta["class_weight"], costs=np.asarray(meta["costs"]),
                     time_limit=tl, mip_gap=1e-4 if gap is None else float(gap), restarts=restarts, seed=seed,
                     starts=starts, node_limit=None if node_limit is None else int(node_limit), tol=tol, qp=qp,
                     verbose=bool(opts.get("verbose")))
    mod.warm_start(model, out["w"], out["b"])        # load w, b, ξ, ζ (witness = best instance)
    obj_model = float(pe.value(model.obj))
    term = {"optimal": Termination.OPTIMAL, "time_limit": Termination.TIME_LIMIT,
            "iteration_limit": Termination.ITERATION_LIMIT,
            "interrupted": Termination.INTERRUPTED}[out["termination"]]
    extra = {"root_bound": out["root_bound"], "open_nodes": out["open_nodes"],
             "heuristic_seconds": out["heuristic_seconds"], "mi_objective": out["objective"],
             "incumbent_source": out["incumbent_source"], "restarts": restarts,
             "mip_gap": 1e-4 if gap is None else float(gap)}
    if abs(obj_model - out["objective"]) > 1e-6 * max(1.0, abs(obj_model)):
        extra["note"] = ("the model's objective at the loaded point differs from the MI-SVM objective "
                         "(a big-M smaller than valid restricts the model)")
    res = finish("bnb", _version(), opts.get("problem_class", "MIQP"), term, True, obj_model, out["bound"],
                 time.perf_counter() - t_start, iterations=out["iterations"], nodes=out["nodes"], extra=extra)
    return replace(res, history=tuple(out["history"]))


def _register():
    from milopt.solvers.driver import Backend, register_backend

    register_backend(Backend(
        name="bnb", classes=frozenset({"MIQP", "QP"}), module="numpy", generic=False, run=_run, version=_version,
        formulations=("misvm-bigm",),
        description="milopt's branch and bound over witness selections for MI-SVM (misvm-bigm, l2, linear)"))


_register()
