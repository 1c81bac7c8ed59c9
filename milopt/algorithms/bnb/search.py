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

from .bounds import mi_objective_best_b, project_dual
from .evaluate import DENSE_MAX, IPM_MAX, NodeEvaluation
from .nodes import Node, NodeQueue

#: low-rank (Woodbury) interior-point Newton systems when features ≤ this share of the effective set
LOWRANK_RATIO = 0.5


def relative_gap(ub, lb):
    """``(UB − LB) / max(|UB|, 1e-10)``, inf when a side is missing (as the driver reports it)."""
    if ub is None or lb is None or not (math.isfinite(ub) and math.isfinite(lb)):
        return math.inf
    return max(0.0, ub - lb) / max(abs(ub), 1e-10)


class MISVMBranchAndBound(NodeEvaluation):
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
        Node QP solver (option ``qp`` of ``milopt.algorithms.bnb.options``).
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
        small = n_eff <= IPM_MAX and self.dense
        # 'auto': node QPs by the active-set method warm-started from the parent's multipliers,
        # the interior point or the coordinate descent where it fails (and at the root)
        self.active_set = qp == "auto"
        self.active_set_log = [0, 0]      # node QPs of the last evaluation: active set solved, fell back
        self.qp = ("ipm" if small else "smo") if qp == "auto" else qp
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
        """Multipliers on rows ``idx`` made exactly dual feasible (``bounds.project_dual``)."""
        return project_dual(a, self.y[idx], self.bag_of[idx], self.costs)

    # ---------------------------------------------------------------- the search
    def solve(self, time_limit=None, mip_gap=1e-4, abs_gap=1e-9, node_limit=None, incumbents=(), primal_incumbents=(),
              heuristic=None, swap=True, dive_every=0, heuristic_share=0.1, verbose=False, log_every=5.0,
              history_every=0.5, workers=1, batch=0, log=None, start_swap=False, kick_every=0, kick_size=3, seed=0,
              incumbent_times=None, scheduler=None, first_kick=0.0):
        """Run the branch and bound.

        Parameters
        ----------
        time_limit : float, optional
            Wall seconds for the search.
        mip_gap : float
            Stop when ``(UB − LB) / max(|UB|, 1e-10) ≤ mip_gap``.
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
            Run the 1-opt witness-swap search (``heuristics.swap_search``) from every new
            incumbent found by a dive (and from the best start with ``start_swap``).
        dive_every : int
            Also run ``heuristic`` from every k-th node's relaxation (0: only on improvement).
        heuristic_share : float
            Heuristics during the search stop while they have used more than this share of the
            elapsed time (+ 1 s).
        kick_every, kick_size, seed : int
            After ``kick_every`` nodes (0: never), one second of the iterated local search
            (``heuristics.kick_search``, at most ``kick_size`` bags kicked at once, seeded)
            from the incumbent (with a pool, in a worker while the others evaluate nodes); the
            interval doubles after every round that finds nothing and returns to
            ``kick_every`` after one that does.
        verbose : bool
            Progress lines (time, nodes, open, incumbent, bound, gap) on stderr every ``log_every`` s.
        workers, batch : int
            Processes evaluating open nodes in parallel (``milopt.algorithms.bnb.parallel``), nodes per round.
        scheduler : str, optional
            Evaluate the rounds on a dask.distributed cluster (``'local'`` or an address).
        first_kick : float
            Seconds of iterated local search from the best start (the starts' last phase),
            overlapped with the search instead of run before it: with a pool, in a worker from
            the beginning of the search; serial, in slices interleaved with as much node time
            (:func:`.heuristics.interleaved_kick`), so the bound grows under a short limit too.

        Returns
        -------
        dict: w (linear) or coef (kernel), b, objective, bound, nodes, iterations, termination
        ('optimal', 'time_limit', 'iteration_limit', 'interrupted'), history, root_bound,
        open_nodes, seconds, incumbent_source, incumbent_time, heuristic_search_seconds,
        closed_nodes (evaluated nodes closed, by bound or by a feasible relaxed optimum),
        active_set_solves / active_set_fallbacks (node QPs solved by the warm-started active-set
        method / handed to the interior point or coordinate descent after it failed).
        """
        run = _Search(self, time_limit=time_limit, mip_gap=mip_gap, abs_gap=abs_gap, heuristic=heuristic, swap=swap,
                      dive_every=dive_every, heuristic_share=heuristic_share, verbose=verbose, log_every=log_every,
                      history_every=history_every, log=log, kick_every=kick_every, kick_size=kick_size, seed=seed)
        run.header(workers)
        termination = "optimal"
        try:
            run.offer_starts(incumbents, incumbent_times, primal_incumbents, start_swap)
            if workers > 1 or scheduler:
                run.open_pool(workers, scheduler, first_kick)
            elif first_kick > 0 and run.best["value"] < math.inf:
                run.early[0] = first_kick
            termination = run.loop(node_limit, workers, batch)
        except KeyboardInterrupt:
            termination = "interrupted"
        finally:
            run.close_pool()
        return run.result(termination)


class _Search:
    """The state of one run of :meth:`MISVMBranchAndBound.solve` and its steps.

    The incumbent (``best``: Φ, point, source, time) with its trajectory, the open nodes
    (``queue``) and the smallest bound of the nodes closed so far (``closed``: with the queue's
    smallest bound, the proof's lower bound), the counters (``stats``), the time spent in primal
    heuristics (``heur``) and the recorded history.  Parameters as in
    :meth:`MISVMBranchAndBound.solve`.
    """

    def __init__(self, eng, time_limit, mip_gap, abs_gap, heuristic, swap, dive_every, heuristic_share, verbose,
                 log_every, history_every, log, kick_every, kick_size, seed):
        self.eng = eng
        self.mip_gap, self.abs_gap = mip_gap, abs_gap
        self.heuristic, self.swap, self.dive_every, self.heuristic_share = heuristic, swap, dive_every, heuristic_share
        self.verbose, self.log_every, self.history_every = verbose, log_every, history_every
        self.kick_every, self.kick_size, self.seed = kick_every, kick_size, seed
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + (float(time_limit) if time_limit is not None else math.inf)
        self.out_log = log if log is not None else sys.stderr
        self.best = {"value": math.inf, "coef": None, "w": None, "b": 0.0, "source": "", "time": None}
        self.trajectory = []      # (seconds, Φ) of every improving incumbent, in the order found
        self.heur = {"time": 0.0}
        self.history = []
        self.last = {"hist": -math.inf, "log": -math.inf}
        self.queue = NodeQueue()
        self.closed = [math.inf]  # smallest bound of the nodes closed so far (part of the proof)
        self.queue.push(Node(-math.inf, eng.wit0.copy(), np.zeros(eng.n), 0, -1))
        self.stats = {"nodes": 0, "iters": 0, "root": None, "closed": 0, "kicks": 0, "next_kick": kick_every,
                      "kick_gap": kick_every, "active": 0, "fallback": 0}
        self.pool = None
        self.pending = [None]     # a round of the iterated local search running in a worker
        self.early = [0.0, 0.0, 0, 0.0, None]   # serial first_kick (heuristics.interleaved_kick)
        self.trajectory_cpu = []  # process CPU seconds (time.process_time) of each trajectory entry

    # ------------------------------------------------------------- incumbent
    def offer(self, vec=None, b=None, source="", raw=None, norm2=None, ph=None, is_w=False):
        """Score a point (dual coefficients, or primal w with ``is_w``) by Φ; keep it when it
        improves the incumbent."""
        eng, best = self.eng, self.best
        if ph is None:
            if is_w:
                ph = eng.phi(vec)
            else:
                if raw is None:
                    raw = eng.Kv(vec)
                    norm2 = float(vec @ raw)
                ph = eng.phi_raw(raw, norm2)
        val, bb = ph
        if val < best["value"] - 1e-12 * max(1.0, abs(val)):
            best.update(value=val, b=bb, source=source, time=time.perf_counter() - self.t0,
                        coef=None if is_w else np.array(vec, dtype=float), w=np.array(vec) if is_w else None)
            self.trajectory.append((best["time"], float(val)))
            self.trajectory_cpu.append(time.process_time())
            return True
        return False

    def incumbent_raw(self):
        """Scores K coef (or X w) of the incumbent."""
        best = self.best
        return self.eng.Kv(best["coef"]) if best["coef"] is not None else self.eng.X @ best["w"]

    def budget_ok(self):
        return self.heur["time"] < self.heuristic_share * (time.perf_counter() - self.t0) + 1.0

    def polish(self, raw, source):
        """Alternation from ``raw``, then the swap search from an improved incumbent."""
        from .heuristics import swap_search

        th = time.perf_counter()
        improved = False
        try:
            if self.heuristic is not None and raw is not None:
                r = self.heuristic(raw)
                if r is not None:
                    improved |= self.offer(np.asarray(r[0], dtype=float), r[1], source)
            if self.swap and (improved or raw is None):
                s = swap_search(self.eng, self.incumbent_raw(), min(self.deadline, th + max(2.0, 0.1 * (th - self.t0))))
                if s is not None:
                    improved |= self.offer(s[1], s[2], "swap")
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - a failed local search never stops the proof
            pass
        self.heur["time"] += time.perf_counter() - th
        return improved

    def offer_starts(self, incumbents, incumbent_times, primal_incumbents, start_swap):
        """The known points (dual, then primal), then the swap search from the best of them."""
        best = self.best
        for k, (vec, b) in enumerate(incumbents):
            if self.offer(np.asarray(vec, dtype=float), b, "start") and incumbent_times is not None:
                # a start found before the search: its own time (negative: before the search began)
                best["time"] = float(incumbent_times[k])
                self.trajectory[-1] = (best["time"], self.trajectory[-1][1])
        for w, b in primal_incumbents:
            self.offer(np.asarray(w, dtype=float), b, "start", is_w=True)
        if start_swap and self.swap and best["value"] < math.inf and time.perf_counter() < self.deadline:
            self.swap_only()

    def swap_only(self):
        """The swap search from the starting incumbent."""
        from .heuristics import swap_search

        th = time.perf_counter()
        try:
            # ten seconds whatever the time limit (the starts' schedule does not depend on it)
            s = swap_search(self.eng, self.incumbent_raw(), min(self.deadline, th + 10.0))
            if s is not None:
                self.offer(s[1], s[2], "swap")
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001
            pass
        self.heur["time"] += time.perf_counter() - th

    # ------------------------------------------------------------- the proof
    def lower(self):
        return min(self.queue.min_bound(), self.closed[0], self.best["value"])

    def eps(self):
        v = self.best["value"]
        return max(self.abs_gap, self.mip_gap * abs(v)) if math.isfinite(v) else self.abs_gap

    def closes(self, bound):
        return bound >= self.best["value"] - self.eps()

    def record(self, force=False):
        now = time.perf_counter() - self.t0
        if force or now - self.last["hist"] >= self.history_every:
            lb, ub = self.lower(), self.best["value"]
            self.history.append({"time": now, "nodes": self.stats["nodes"], "lower": lb, "upper": ub,
                                 "gap": relative_gap(ub, lb), "open": len(self.queue)})
            self.last["hist"] = now
        if self.verbose and (force or now - self.last["log"] >= self.log_every):
            lb, ub = self.lower(), self.best["value"]
            print(f"{now:9.1f}s {self.stats['nodes']:10d} {len(self.queue):9d} {ub:14.7g} {lb:14.7g} "
                  f"{100 * relative_gap(ub, lb):8.3f}%", file=self.out_log, flush=True)
            self.last["log"] = now

    def header(self, workers):
        """The verbose log's first lines."""
        if not self.verbose:
            return
        eng = self.eng
        node_qp = f"active set, {eng.qp} on failure" if eng.active_set else eng.qp
        print(f"bnb: {eng.B} bags, {eng.n} instances, {int(eng.ypos.sum())} positive bags "
              f"({int(np.sum(eng.sizes[eng.pos_bags]))} witness candidates); node QP {node_qp}; "
              f"workers {workers}", file=self.out_log)
        print(f"{'time':>10} {'nodes':>10} {'open':>9} {'incumbent':>14} {'bound':>14} {'gap':>9}",
              file=self.out_log, flush=True)

    # ------------------------------------------------------------- nodes
    def apply(self, node, res):
        """Book a node's evaluation: incumbent, closing, children."""
        stats, closed = self.stats, self.closed
        stats["nodes"] += 1
        stats["iters"] += res["iterations"]
        solved, failed = res.get("active_set", (0, 0))
        stats["active"] += solved
        stats["fallback"] += failed
        if stats["root"] is None:
            stats["root"] = res["bound"]
        improved = self.offer(res["coef"], None, "node", ph=res["phi"])
        if "dive" in res:
            self.heur["time"] += res.get("dive_seconds", 0.0)
            v, c, b = res["dive"]
            if (self.offer(c, b, "dive", ph=(v, b)) and self.swap and self.budget_ok()
                    and time.perf_counter() < self.deadline):
                self.polish(None, "dive")
        if improved and self.budget_ok() and time.perf_counter() < self.deadline:
            self.polish(res["raw"], "node")
        if res["action"] == "close" or self.closes(res["bound"]):
            closed[0] = min(closed[0], res["bound"])
            stats["closed"] += 1
            return
        # candidates ruled out by reduced-cost fixing: their bounds reached the incumbent
        closed[0] = min(closed[0], res["out_bound"])
        base = node.wit.copy()
        base[res["forced_bags"]] = res["forced_rows"]
        for r_, cb in zip(res["rows"].tolist(), res["child_bounds"].tolist()):
            if self.closes(cb):
                closed[0] = min(closed[0], cb)
                continue
            cw = base.copy()
            if res["bag"] >= 0:
                cw[res["bag"]] = r_
            self.queue.push(Node(cb, cw, res["alpha"], node.depth + 1, r_, res["out"]))

    def wants_dive(self, j):
        """Whether the j-th node of the next round runs a dive (every ``dive_every``-th node,
        within the heuristic time share)."""
        k = self.stats["nodes"] + j
        return bool(self.dive_every) and k % self.dive_every == 0 and self.budget_ok()

    def loop(self, node_limit, workers, batch):
        """Best-bound rounds until the proof closes or a limit is reached: the termination."""
        queue, stats, best = self.queue, self.stats, self.best
        while queue:
            if self.closes(queue.min_bound()):
                break
            if time.perf_counter() > self.deadline and stats["nodes"]:
                # (the root is evaluated whatever the time left: its QP stops at the
                # deadline, and its bound is the proof's starting point)
                return "time_limit"
            if node_limit is not None and stats["nodes"] >= node_limit:
                return "iteration_limit"
            if self.pool is None and self.early[0] > 0 and stats["nodes"] and time.perf_counter() >= self.early[1]:
                from .heuristics import interleaved_kick

                interleaved_kick(self)    # a slice of the starts' local search, then as much node time
            if self.pool is None:
                node = queue.pop()
                res = self.eng.evaluate(node, best["value"], self.eps(), self.deadline, dive=self.wants_dive(0))
                self.apply(node, res)
            else:
                self.parallel_round(node_limit, workers, batch)
            if self.pending[0] is not None and self.pending[0].ready():
                self.kick_done(self.pending[0].get())
                self.pending[0] = None
            if (self.kick_every and self.pending[0] is None and stats["nodes"] >= stats["next_kick"]
                    and best["value"] < math.inf and self.budget_ok() and time.perf_counter() < self.deadline):
                self.kick_round()
            self.record()
        return "optimal"

    def parallel_round(self, node_limit, workers, batch):
        """The best open nodes (``batch``, default 8 per worker) evaluated by the pool."""
        closed = self.closed
        k = batch or 8 * workers
        if node_limit is not None:
            k = min(k, node_limit - self.stats["nodes"])
        nodes = [self.queue.pop() for _ in range(min(k, len(self.queue)))]
        nodes = [nd for nd in nodes if not self.closes(nd.bound) or closed.__setitem__(
            0, min(closed[0], nd.bound))]
        dives = [self.wants_dive(j) for j in range(len(nodes))]
        for node, res in zip(nodes, self.pool.evaluate(nodes, self.best["value"], self.eps(), self.deadline, dives)):
            self.apply(node, res)

    # ------------------------------------------------------------- iterated local search
    def kick_done(self, r):
        """Offer a round's result; the interval doubles after a round that finds nothing
        (and is reset by one that does)."""
        stats = self.stats
        found = r is not None and self.offer(r[1], r[2], "kick")
        stats["kick_gap"] = self.kick_every if found else 2 * stats["kick_gap"]
        stats["next_kick"] = stats["nodes"] + stats["kick_gap"]

    def kick_round(self, length=1.0, first=False):
        """``length`` seconds of the iterated local search from the incumbent: in a worker
        while the others evaluate nodes (parallel search), else here.  ``first``: the
        starts' own round, seeded as it is in a serial run."""
        from .heuristics import kick_search

        self.stats["kicks"] += 1
        th = time.perf_counter()
        seconds = min(length, self.deadline - th)
        round_seed = self.seed if first else self.seed + self.stats["kicks"]
        try:
            start_raw = self.incumbent_raw()
            if self.pool is not None:
                self.pending[0] = self.pool.kick(start_raw, seconds, round_seed, self.kick_size)
                self.heur["time"] += seconds
                return
            self.kick_done(kick_search(self.eng, start_raw, th + seconds, seed=round_seed, kick=self.kick_size))
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - a failed local search never stops the proof
            pass
        self.heur["time"] += time.perf_counter() - th

    # ------------------------------------------------------------- worker pool
    def open_pool(self, workers, scheduler, first_kick):
        """Processes (or a dask cluster) evaluating rounds of open nodes; ``first_kick`` seconds of
        the iterated local search from the best start in one of them."""
        from .parallel import NodePool

        # connecting to a cluster counts against the time limit (dask waits 30 s at most)
        self.pool = NodePool(self.eng, workers, scheduler, timeout=min(30.0, self.deadline - time.perf_counter()))
        if first_kick > 0 and self.best["value"] < math.inf:
            self.kick_round(first_kick, first=True)

    def close_pool(self):
        """Collect a finished round of the local search, then stop the pool."""
        if self.pool is not None:
            if self.pending[0] is not None and self.pending[0].ready():
                self.kick_done(self.pending[0].get())
            self.pool.close()

    # ------------------------------------------------------------- the record
    def result(self, termination):
        """The record :meth:`MISVMBranchAndBound.solve` returns."""
        eng, best, stats = self.eng, self.best, self.stats
        lb = self.lower()
        ub = best["value"]
        if termination == "optimal" and not self.closes(lb):
            termination = "time_limit"
        self.record(force=True)
        w, coef = best["w"], best["coef"]
        if not eng.kernel and w is None and coef is not None:
            w = eng.X.T @ coef
        return {"w": w, "coef": coef, "b": best["b"], "objective": ub, "bound": lb, "nodes": stats["nodes"],
                "iterations": stats["iters"], "termination": termination, "history": self.history,
                "root_bound": stats["root"], "open_nodes": len(self.queue), "seconds": time.perf_counter() - self.t0,
                "incumbent_source": best["source"], "incumbent_time": best["time"],
                "heuristic_search_seconds": self.heur["time"] + self.early[3], "closed_nodes": stats["closed"],
                "active_set_solves": stats["active"], "active_set_fallbacks": stats["fallback"],
                "trajectory": self.trajectory, "trajectory_cpu": self.trajectory_cpu}
