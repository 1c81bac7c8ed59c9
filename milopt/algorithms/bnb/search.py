r"""The search of the MI-SVM branch and bound over witness selections.

MI-SVM (Andrews, Tsochantaridis & Hofmann 2002) in the big-M form of Kent & Yu (eq. 5,
``milopt/models/misvm_bigm.py``) minimises over (w, b)

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
from .rules import RULES
from .evaluate import DENSE_MAX, IPM_MAX, NodeEvaluation
from . import heuristics
from .nodes import Node
from .options import SearchOptions
from .primal import Alternation, KickSearch, Starts, SwapSearch
from .state import SearchState

#: low-rank (Woodbury) interior-point Newton systems when features ≤ this share of the effective set
LOWRANK_RATIO = 0.5
#: rounds of the periodic local search (option ``kick_every``) in a row without a better incumbent
#: after which no further round is scheduled until the tree improves the incumbent (with
#: ``kick_patience`` 0: never stopped)
ROUND_PATIENCE = 2


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
    branching, newton_gains, pair_bags, strong_bags, strong_depth
        Options ``branching`` (the rule, :data:`.rules.RULES`), ``newton``, ``pair_bags``,
        ``strong_bags`` and ``strong_depth`` of ``milopt.algorithms.bnb.options``.
    """

    def __init__(self, X, bag_ptr, y_bag, costs, tol=1e-4, qp="auto", K=None, branching="product",
                 newton_gains=True, pair_bags=3, strong_bags=4, strong_depth=None):
        from milopt.qp.svm_dcd import GroupSVMDual

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
        if branching not in RULES:
            raise InvalidParameterError(f"bnb: branching must be one of {', '.join(RULES)}, got {branching!r}")
        self.branching = branching
        self.rule = RULES[branching](strong_bags=int(strong_bags), strong_depth=strong_depth)
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
        """The block K[rows, cols] (index arrays; two takes cost a fraction of ``np.ix_``)."""
        if self.dense:
            return self.K.take(rows, axis=0).take(cols, axis=1)
        return self.X[rows] @ self.X[cols].T

    def Qrows(self, rows):
        """The signed kernel block (yyᵀ∘K) on ``rows`` × ``rows``."""
        if not self.dense:
            return self.Krows(rows, rows) * np.outer(self.y[rows], self.y[rows])
        return self.signed(True)[np.ix_(rows, rows)]

    def signed(self, kernel):
        """The signed kernel yyᵀ∘K (``kernel``; dense K only) or the signed features diag(y) X,
        formed on first use (the active-set node QP reads its rows)."""
        if kernel:
            if getattr(self, "_Q", None) is None:
                self._Q = np.ascontiguousarray(self.K * np.outer(self.y, self.y))
            return self._Q
        if getattr(self, "_U", None) is None:
            self._U = np.ascontiguousarray(self.X * self.y[:, None])
        return self._U

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
    def solve(self, options=None, starts=None, heuristic=None, log=None, **overrides):
        """Run the branch and bound.

        Parameters
        ----------
        options : SearchOptions, optional
            The search's options (``milopt.algorithms.bnb.options``: node and time limits, gaps,
            local search, workers, log); default the declared defaults.
        starts : Starts, optional
            Known points offered before the search (:class:`.primal.Starts`).
        heuristic : callable(scores) -> (coef, b) or None, optional
            Local improvement (the alternation) started from a node's scores
            (:class:`.primal.Alternation`).
        log : text stream, optional
            Where ``verbose`` writes (default stderr).
        **overrides
            Fields of :class:`SearchOptions` replacing those of ``options`` (validated by their
            declaration: ``solve(node_limit=5, mip_gap=1e-7)``), and the earlier keywords of the
            starts (``incumbents``, ``incumbent_times``, ``primal_incumbents``, ``start_swap``,
            ``first_kick``: the fields of :class:`.primal.Starts`).

        Returns
        -------
        dict: w (linear) or coef (kernel), b, objective, bound, nodes, iterations, termination
        ('optimal', 'time_limit', 'iteration_limit', 'interrupted'), history, root_bound,
        open_nodes, seconds, incumbent_source, incumbent_time, heuristic_search_seconds,
        closed_nodes (evaluated nodes closed, by bound or by a feasible relaxed optimum),
        active_set_solves / active_set_fallbacks (node QPs solved by the warm-started active-set
        method / handed to the interior point or coordinate descent after it failed),
        strong_qps (node QPs solved by strong branching), trajectory.
        """
        legacy = {Starts.KEYWORDS[k]: overrides.pop(k) for k in list(overrides) if k in Starts.KEYWORDS}
        if starts is None:
            starts = Starts(**legacy)
        opts = options if options is not None else SearchOptions()
        if overrides:
            opts = opts.replace(**overrides)
        run = Search(self, opts, heuristic, log)
        run.header()
        termination = "optimal"
        try:
            run.offer_starts(starts)
            if opts.workers > 1 or opts.scheduler:
                run.open_pool(starts.first_kick)
            elif starts.first_kick > 0 and run.s.incumbent.value < math.inf:
                run.s.early[0] = starts.first_kick    # serial: interleaved with the nodes
            termination = run.loop()
        except KeyboardInterrupt:
            termination = "interrupted"
        finally:
            run.close_pool()
        return run.result(termination)


class Search:
    """One run of :meth:`MISVMBranchAndBound.solve`: its steps over one :class:`.state.SearchState`.

    The engine evaluates nodes (node QP, look-ahead, branching rule); this object books the
    results (incumbent, closing, children), keeps the proof's lower bound, and runs the primal
    heuristics (:mod:`.primal`) within their time share.  ``opts``: :class:`SearchOptions`.
    """

    def __init__(self, eng, opts, heuristic=None, log=None):
        self.eng, self.opts = eng, opts
        self.local = Alternation(heuristic) if heuristic is not None else None
        self.swapper = SwapSearch() if opts.swap else None
        self.kicker = KickSearch(opts.kick_size)
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + (float(opts.time_limit) if opts.time_limit is not None else math.inf)
        self.out_log = log if log is not None else sys.stderr
        self.s = SearchState(next_kick=opts.kick_every, kick_gap=opts.kick_every)
        self.s.queue.push(Node(-math.inf, eng.wit0.copy(), np.zeros(eng.n), 0, -1))
        self.pool = None

    # ------------------------------------------------------------- incumbent
    def offer(self, vec=None, b=None, source="", raw=None, norm2=None, ph=None, is_w=False):
        """Score a point (dual coefficients, or primal w with ``is_w``) by Φ; keep it when it
        improves the incumbent."""
        eng, best = self.eng, self.s.incumbent
        if ph is None:
            if is_w:
                ph = eng.phi(vec)
            else:
                if raw is None:
                    raw = eng.Kv(vec)
                    norm2 = float(vec @ raw)
                ph = eng.phi_raw(raw, norm2)
        val, bb = ph
        if val < best.value - 1e-12 * max(1.0, abs(val)):
            best.value, best.b, best.source, best.time = val, bb, source, time.perf_counter() - self.t0
            best.coef = None if is_w else np.array(vec, dtype=float)
            best.w = np.array(vec) if is_w else None
            self.s.trajectory.append((best.time, float(val)))
            self.s.trajectory_cpu.append(time.process_time())
            return True
        return False

    def incumbent_raw(self):
        """Scores K coef (or X w) of the incumbent."""
        best = self.s.incumbent
        return self.eng.Kv(best.coef) if best.coef is not None else self.eng.X @ best.w

    def budget_ok(self):
        return self.s.heuristic_seconds < self.opts.heuristic_share * (time.perf_counter() - self.t0) + 1.0

    def _run(self, heuristic, scores, deadline, source, **kw):
        """Offer the point of ``heuristic`` from ``scores``; a failed local search never stops the proof."""
        try:
            r = heuristic.run(self.eng, scores, deadline, **kw)
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - a failed local search is only a missing incumbent
            return False
        return r is not None and self.offer(np.asarray(r[0], dtype=float), r[1], source)

    def polish(self, raw, source):
        """Alternation from ``raw``, then the swap search from an improved incumbent."""
        th = time.perf_counter()
        improved = False
        if self.local is not None and raw is not None:
            improved |= self._run(self.local, raw, math.inf, source)
        if self.swapper is not None and (improved or raw is None):
            improved |= self._run(self.swapper, self.incumbent_raw(),
                                  min(self.deadline, th + max(2.0, 0.1 * (th - self.t0))), "swap")
        self.s.heuristic_seconds += time.perf_counter() - th
        return improved

    def offer_starts(self, starts):
        """The known points (dual, then primal), then the swap search from the best of them."""
        best = self.s.incumbent
        for k, (vec, b) in enumerate(starts.dual):
            if self.offer(np.asarray(vec, dtype=float), b, "start") and starts.times is not None:
                # a start found before the search: its own time (negative: before the search began)
                best.time = float(starts.times[k])
                self.s.trajectory[-1] = (best.time, self.s.trajectory[-1][1])
        for w, b in starts.primal:
            self.offer(np.asarray(w, dtype=float), b, "start", is_w=True)
        if (starts.swap and self.swapper is not None and best.value < math.inf
                and time.perf_counter() < self.deadline):
            # ten seconds whatever the time limit (the starts' schedule does not depend on it)
            th = time.perf_counter()
            self._run(self.swapper, self.incumbent_raw(), min(self.deadline, th + 10.0), "swap")
            self.s.heuristic_seconds += time.perf_counter() - th

    # ------------------------------------------------------------- the proof
    def lower(self):
        return min(self.s.queue.min_bound(), self.s.closed_bound, self.s.incumbent.value)

    def eps(self):
        v = self.s.incumbent.value
        return max(self.opts.abs_gap, self.opts.mip_gap * abs(v)) if math.isfinite(v) else self.opts.abs_gap

    def closes(self, bound):
        return bound >= self.s.incumbent.value - self.eps()

    def record(self, force=False):
        s, now = self.s, time.perf_counter() - self.t0
        if force or now - s.last_history >= self.opts.history_every:
            lb, ub = self.lower(), s.incumbent.value
            s.history.append({"time": now, "nodes": s.nodes, "lower": lb, "upper": ub,
                              "gap": relative_gap(ub, lb), "open": len(s.queue)})
            s.last_history = now
        if self.opts.verbose and (force or now - s.last_log >= self.opts.log_every):
            lb, ub = self.lower(), s.incumbent.value
            print(f"{now:9.1f}s {s.nodes:10d} {len(s.queue):9d} {ub:14.7g} {lb:14.7g} "
                  f"{100 * relative_gap(ub, lb):8.3f}%", file=self.out_log, flush=True)
            s.last_log = now

    def header(self):
        """The verbose log's first lines."""
        if not self.opts.verbose:
            return
        eng = self.eng
        node_qp = f"active set, {eng.qp} on failure" if eng.active_set else eng.qp
        print(f"bnb: {eng.B} bags, {eng.n} instances, {int(eng.ypos.sum())} positive bags "
              f"({int(np.sum(eng.sizes[eng.pos_bags]))} witness candidates); node QP {node_qp}; "
              f"branching {eng.branching}; workers {self.opts.workers}", file=self.out_log)
        print(f"{'time':>10} {'nodes':>10} {'open':>9} {'incumbent':>14} {'bound':>14} {'gap':>9}",
              file=self.out_log, flush=True)

    # ------------------------------------------------------------- nodes
    def apply(self, node, res):
        """Book a node's evaluation: incumbent, closing, children."""
        s = self.s
        s.nodes += 1
        s.iterations += res["iterations"]
        solved, failed = res.get("active_set", (0, 0))
        s.active_set_solves += solved
        s.active_set_fallbacks += failed
        s.strong_qps += res.get("strong_qps", 0)
        if s.root_bound is None:
            s.root_bound = res["bound"]
        improved = self.offer(res["coef"], None, "node", ph=res["phi"])
        if "dive" in res:
            s.heuristic_seconds += res.get("dive_seconds", 0.0)
            v, c, b = res["dive"]
            if self.offer(c, b, "dive", ph=(v, b)):
                self.rearm()
                if self.swapper is not None and self.budget_ok() and time.perf_counter() < self.deadline:
                    self.polish(None, "dive")
        if improved:
            self.rearm()
        if improved and self.budget_ok() and time.perf_counter() < self.deadline:
            self.polish(res["raw"], "node")
        if res["action"] == "close" or self.closes(res["bound"]):
            s.close(res["bound"])
            s.closed += 1
            return
        # candidates ruled out by reduced-cost fixing: their bounds reached the incumbent
        s.close(res["out_bound"])
        base = node.wit.copy()
        base[res["forced_bags"]] = res["forced_rows"]
        alphas = res.get("child_alpha") or [res["alpha"]] * len(res["rows"])
        for r_, cb, a in zip(res["rows"].tolist(), res["child_bounds"].tolist(), alphas):
            if self.closes(cb):
                s.close(cb)
                continue
            cw = base.copy()
            if res["bag"] >= 0:
                cw[res["bag"]] = r_
            s.queue.push(Node(cb, cw, a, node.depth + 1, r_, res["out"]))

    def wants_dive(self, j):
        """Whether the j-th node of the next round runs a dive (every ``dive_every``-th node,
        within the heuristic time share)."""
        k, every = self.s.nodes + j, self.opts.dive_every
        return bool(every) and k % every == 0 and self.budget_ok()

    def loop(self):
        """Best-bound rounds until the proof closes or a limit is reached: the termination."""
        s, node_limit = self.s, self.opts.node_limit
        while s.queue:
            if self.closes(s.queue.min_bound()):
                break
            if time.perf_counter() > self.deadline and s.nodes:
                # (the root is evaluated whatever the time left: its QP stops at the
                # deadline, and its bound is the proof's starting point)
                return "time_limit"
            if node_limit is not None and s.nodes >= node_limit:
                return "iteration_limit"
            if self.pool is None and s.early[0] > 0 and s.nodes and time.perf_counter() >= s.early[1]:
                heuristics.interleaved_kick(self)    # a slice of the starts' local search, then as much node time
            if self.pool is None:
                node = s.queue.pop()
                res = self.eng.evaluate(node, s.incumbent.value, self.eps(), self.deadline, dive=self.wants_dive(0))
                self.apply(node, res)
            else:
                self.parallel_round()
            if s.pending is not None and s.pending.ready():
                self.kick_done(s.pending.get())
                s.pending = None
            if (self.opts.kick_every and s.pending is None and s.nodes >= s.next_kick
                    and s.incumbent.value < math.inf and self.budget_ok() and time.perf_counter() < self.deadline):
                self.kick_round()
            self.record()
        return "optimal"

    def parallel_round(self):
        """The best open nodes (``batch``, default 8 per worker) evaluated by the pool."""
        s, node_limit = self.s, self.opts.node_limit
        k = self.opts.batch or 8 * self.opts.workers
        if node_limit is not None:
            k = min(k, node_limit - s.nodes)
        nodes = []
        for _ in range(min(k, len(s.queue))):
            nd = s.queue.pop()
            if self.closes(nd.bound):
                s.close(nd.bound)
            else:
                nodes.append(nd)
        dives = [self.wants_dive(j) for j in range(len(nodes))]
        for node, res in zip(nodes, self.pool.evaluate(nodes, s.incumbent.value, self.eps(), self.deadline, dives)):
            self.apply(node, res)

    # ------------------------------------------------------------- iterated local search
    def kick_done(self, r):
        """Offer a round's result; the interval doubles after a round that finds nothing
        (and is reset by one that does)."""
        s = self.s
        found = r is not None and self.offer(r[1], r[2], "kick")
        s.kick_gap = self.opts.kick_every if found else 2 * s.kick_gap
        s.next_kick = s.nodes + s.kick_gap
        self.local_search_paid(found)

    def local_search_paid(self, improved):
        """Book a round (:meth:`kick_round`) of the iterated local search: after
        :data:`ROUND_PATIENCE` rounds in a row that did not improve the incumbent no further
        round is scheduled (the interval had doubled each time); :meth:`rearm` schedules them
        again."""
        s = self.s
        s.round_idle = 0 if improved else s.round_idle + 1
        if self.opts.kick_patience and s.round_idle >= ROUND_PATIENCE:
            s.next_kick = math.inf

    def rearm(self):
        """A better incumbent found by the tree (a node's relaxation or a dive): the periodic
        rounds of the local search start again from it (interval ``kick_every``)."""
        s = self.s
        s.round_idle = 0
        if self.opts.kick_every and s.next_kick == math.inf:
            s.kick_gap = self.opts.kick_every
            s.next_kick = s.nodes + s.kick_gap

    def kick_round(self, length=1.0, first=False):
        """``length`` seconds of the iterated local search from the incumbent: in a worker
        while the others evaluate nodes (parallel search), else here.  ``first``: the
        starts' own round, seeded as it is in a serial run."""
        s = self.s
        s.kicks += 1
        th = time.perf_counter()
        seconds = min(length, self.deadline - th)
        round_seed = self.opts.seed if first else self.opts.seed + s.kicks
        try:
            start_raw = self.incumbent_raw()
            if self.pool is not None:
                s.pending = self.pool.kick(start_raw, seconds, round_seed, self.kicker.kick)
                s.heuristic_seconds += seconds
                return
            r = self.kicker.run(self.eng, start_raw, th + seconds, seed=round_seed)
            self.kick_done(None if r is None else (None, r[0], r[1]))
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - a failed local search never stops the proof
            pass
        s.heuristic_seconds += time.perf_counter() - th

    # ------------------------------------------------------------- worker pool
    def open_pool(self, first_kick=0.0):
        """Processes (or a dask cluster) evaluating rounds of open nodes; ``first_kick`` seconds of
        the iterated local search from the best start in one of them."""
        from .parallel import NodePool

        # connecting to a cluster counts against the time limit (dask waits 30 s at most)
        self.pool = NodePool(self.eng, self.opts.workers, self.opts.scheduler,
                             timeout=min(30.0, self.deadline - time.perf_counter()))
        if first_kick > 0 and self.s.incumbent.value < math.inf:
            self.kick_round(first_kick, first=True)

    def close_pool(self):
        """Collect a finished round of the local search, then stop the pool."""
        if self.pool is not None:
            if self.s.pending is not None and self.s.pending.ready():
                self.kick_done(self.s.pending.get())
            self.pool.close()

    # ------------------------------------------------------------- the record
    def result(self, termination):
        """The record :meth:`MISVMBranchAndBound.solve` returns."""
        eng, s = self.eng, self.s
        best = s.incumbent
        lb = self.lower()
        if termination == "optimal" and not self.closes(lb):
            termination = "time_limit"
        self.record(force=True)
        w, coef = best.w, best.coef
        if not eng.kernel and w is None and coef is not None:
            w = eng.X.T @ coef
        return {"w": w, "coef": coef, "b": best.b, "objective": best.value, "bound": lb, "nodes": s.nodes,
                "iterations": s.iterations, "termination": termination, "history": s.history,
                "root_bound": s.root_bound, "open_nodes": len(s.queue), "seconds": time.perf_counter() - self.t0,
                "incumbent_source": best.source, "incumbent_time": best.time,
                "heuristic_search_seconds": s.heuristic_seconds + s.early[3], "closed_nodes": s.closed,
                "active_set_solves": s.active_set_solves, "active_set_fallbacks": s.active_set_fallbacks,
                "strong_qps": s.strong_qps, "trajectory": s.trajectory,
                "trajectory_cpu": s.trajectory_cpu}
