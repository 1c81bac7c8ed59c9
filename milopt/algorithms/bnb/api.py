"""Entry point of the MI-SVM branch and bound: heuristic starts, then the search."""
from __future__ import annotations

import math
import time

import numpy as np

from .options import PARAMS, SearchOptions, engine_options
from .primal import Starts
from .search import MISVMBranchAndBound

#: seconds the search has after a signal (Ctrl-C, SIGTERM) stopped the starting heuristics: the
#: root's bound within them, then the incumbent is returned (the command then ends, 128 + n)
INTERRUPTED_SECONDS = 1.0

#: bnb options of every step of a C path after the first (:func:`solve_c_path`; ``milopt fit
#: --tune C=...`` with the bnb solver): the previous C's certified optimum, polished at the new C
#: by the swap search, replaces the annealing runs, all alternation starts but one and the
#: starts' iterated local search (the search's own local-search rounds, ``kick_every``, stay).
#: The proof does not depend on the starts: the optimum certified is the same
PATH_STEP = {"anneal": 0, "restarts": 1, "kick_seconds": 0.0}


def solve_bags(bags, C=1.0, class_weight="kent-yu", costs=None, time_limit=None, mip_gap=1e-4, starts=(),
               kernel=None, verbose=False, log=None, **options):
    """Solve MI-SVM on ``bags`` (bag slacks) exactly.

    Parameters
    ----------
    bags : Bags
    C, class_weight : as ``misvm-bigm`` (costs per bag by ``misvm_bigm.bag_costs``), or
    costs : ndarray (B,), optional
        Per-bag costs given directly.
    time_limit : float, optional
        Wall seconds for heuristics and search together.
    mip_gap : float
    starts : iterable of (w, b)
        Known primal points (linear kernel).
    kernel : ndarray (n, n), optional
        Gram matrix of the instances (non-linear kernels); the result then has ``coef``.
    verbose : bool
        MIP-style progress lines on stderr.
    **options
        The options of :data:`milopt.algorithms.bnb.options.PARAMS` (restarts, seed,
        node_limit, tol, qp, swap, kick_seconds, kick_size, kick_every, dive_every,
        heuristic_share, log_every, workers, batch, scheduler).

    Returns
    -------
    dict of :meth:`MISVMBranchAndBound.solve` plus ``heuristic_seconds`` (the starts) and
    ``witnesses``.

    The starting heuristics follow one schedule whatever ``time_limit`` is, ordered by value
    per second: the annealing runs (a tenth of a second each on MUSK1, the best starts), the
    alternation starts, the swap search from the best starts; then ``kick_seconds`` of
    iterated local search interleaved with the search (one-second slices alternating with as
    much node time, :func:`.heuristics.interleaved_kick`; with workers, in a worker beside the
    search), so the bound grows under a short limit too.  The incumbent held at time t does
    not depend on the limit; the limit only cuts the schedule (the starts before the search at
    ``start_share`` of it, default 0.9; the search evaluates the root for a bound whatever the
    time left).  A ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM / SIGHUP in
    the ``milopt`` command) during the starts keeps what they found; the search then gets
    :data:`INTERRUPTED_SECONDS` for the root's bound (serial, no local search) and the result
    is returned as ``interrupted``.
    """
    from threadpoolctl import threadpool_limits

    from milopt.algorithms.mi_heuristics import slack_costs

    from .heuristics import alternate_selection, alternation_starts, annealing_starts, swap_search

    o = PARAMS.resolve(options, "bnb options")
    if costs is None:
        costs = slack_costs(bags, C, class_weight)[0]
    t0 = time.perf_counter()
    with threadpool_limits(1):
        eng = MISVMBranchAndBound(None if kernel is not None else bags.X, bags.bag_ptr, bags.y, costs, K=kernel,
                                  **engine_options(o))
        K = eng.K
        X = None if kernel is not None else bags.X
        limit = math.inf if time_limit is None else float(time_limit)
        start_deadline = t0 + o["start_share"] * limit
        pts = []
        interrupted = False
        both = bool((bags.y == 1).any() and (bags.y == 0).any())

        def polish(raw, deadline):
            wit = eng.selection_of_raw(np.asarray(raw, dtype=float))
            r = alternate_selection(eng, wit, deadline)
            return r[0], r[4], r[1]

        def ranked():
            """(Φ, order found, scores) of the starts so far, best first."""
            vals = []
            for c, _, _, _ in pts:
                raw = eng.Kv(c)
                vals.append((eng.phi_raw(raw, float(c @ raw))[0], len(vals), raw))
            return sorted(vals, key=lambda v: v[:2])

        def found(c, b):
            pts.append((c, b, time.perf_counter() - t0, time.process_time() - c0))

        c0 = time.process_time()
        try:
            # by value per second: annealing (~0.1 s a run on MUSK1, within 2 % of the optimum), then
            # the alternation starts (each polished selection a few hundredths of a second)
            if o["anneal"] and both:
                for raw in annealing_starts(eng, start_deadline, seed=o["seed"], runs=o["anneal"]):
                    if time.perf_counter() > start_deadline:
                        break
                    found(*polish(raw, start_deadline)[1:])
            if o["restarts"] and both:
                for c, b in alternation_starts(bags, K, C, class_weight, o["restarts"], o["seed"], start_deadline, X,
                                               eng=eng):
                    found(c, b)
            if o["swap"] and pts:
                seen = []
                for v, _, raw in ranked():
                    if len(seen) >= o["swap_starts"] or time.perf_counter() > start_deadline:
                        break
                    if any(abs(v - u) <= 1e-9 * max(1.0, abs(u)) for u in seen):
                        continue
                    seen.append(v)
                    r = swap_search(eng, raw, start_deadline)
                    if r is not None:
                        found(r[1], r[2])
            # the iterated local search runs inside the search (``first_kick`` of
            # :meth:`MISVMBranchAndBound.solve`): interleaved with the nodes, or in a worker
        except KeyboardInterrupt:   # Ctrl-C in the starts: keep what was found, evaluate the root, stop
            interrupted = True
        heur_s = time.perf_counter() - t0
        left = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - t0))
        ls = (lambda raw: polish(raw, math.inf)[1:]) if (o["restarts"] or o["anneal"]) else None
        first_kick = o["kick_seconds"] if not interrupted and pts else 0.0
        search = {}
        if interrupted:   # the command is ending: the root alone, within a short budget, serial, no local search
            left = INTERRUPTED_SECONDS if left is None else min(left, INTERRUPTED_SECONDS)
            search = dict(node_limit=1, swap=False, kick_every=0, workers=1, scheduler=None)
            ls = None
        opts = SearchOptions.from_options(o, time_limit=left, mip_gap=mip_gap, verbose=bool(verbose), **search)
        known = Starts(dual=[(c, b) for c, b, _, _ in pts], times=[f - heur_s for _, _, f, _ in pts],
                       primal=list(starts), swap=bool(starts) and not interrupted, first_kick=first_kick)
        out = eng.solve(opts, known, heuristic=ls, log=log)
    if out["w"] is None and out["coef"] is None:   # no start and no node evaluated
        out["coef"] = np.zeros(bags.n_instances)
        out["objective"], out["b"] = eng.phi_raw(np.zeros(bags.n_instances), 0.0)
        if kernel is None:
            out["w"] = np.zeros(bags.n_features)
    if interrupted and out["termination"] != "optimal":
        out["termination"] = "interrupted"
    out["heuristic_seconds"] = heur_s
    # incumbents on the clock of the whole call (the starts at the time each was found)
    # the same on the process's CPU clock (a start: when it was found; the search: when offered)
    cpu_of = {f - heur_s: u for _, _, f, u in pts}
    out["trajectory_cpu"] = [(cpu_of.get(t, u - c0) if t <= 0 else u - c0, v)
                             for (t, v), u in zip(out.get("trajectory", ()), out.get("trajectory_cpu", ()))]
    out["trajectory"] = [(heur_s + t, v) for t, v in out.get("trajectory", ())]
    if out.get("incumbent_time") is not None:   # on the same clock: seconds from the call's start
        out["incumbent_time"] = heur_s + out["incumbent_time"]
    out["seconds"] = time.perf_counter() - t0
    raw = eng.Kv(out["coef"]) if kernel is not None else bags.X @ out["w"]
    out["witnesses"] = eng.selection_of_raw(raw, out["b"])
    out["options"] = o
    return out


def solve_c_path(bags, Cs, class_weight="kent-yu", time_limit=None, mip_gap=1e-4, step=None, **options):
    r"""Certified MI-SVM optima along a path of C, each warm-started from the previous one.

    For every C of ``Cs`` (solved in the order given), :func:`solve_bags` with the previous
    optimum (w, b) as a start: its Φ under the new costs is a valid incumbent from the first
    node on, and near the previous C it is often the new optimum or close to it (the swap
    search polishes it first), so every step after the first runs the short start schedule
    ``step`` (default :data:`PATH_STEP`) instead of the full one.  Along the path the optimal
    values obey, for C₁ < C₂ (the cost of each bag proportional to C, as with kent-yu or
    balanced weights),

    .. math::

        v(C_1) \le v(C_2) \le \tfrac{C_2}{C_1}\, v(C_1),

    since Φ_C = ½‖w‖² + C·L(w, b) grows with C, and ½‖w‖² + C₂L ≤ (C₂/C₁)(½‖w‖² + C₁L); the
    certified bounds of neighbouring points must respect it (a check, not used in the search).

    Parameters
    ----------
    bags : Bags
    Cs : sequence of float
    class_weight : as ``misvm-bigm``
    time_limit : float, optional
        Wall seconds for each C.
    mip_gap : float
    step : dict, optional
        bnb options of every C after the first, over ``options`` (default :data:`PATH_STEP`;
        ``{}``: the full start schedule at every C).
    **options
        bnb options (:data:`milopt.algorithms.bnb.options.PARAMS`), the same for every C.

    Returns
    -------
    list of dict: the result of :func:`solve_bags` for each C, with ``C`` added.
    """
    step = PATH_STEP if step is None else dict(step)
    out, start = [], ()
    for C in Cs:
        o = {**options, **step} if start else options
        r = solve_bags(bags, C=float(C), class_weight=class_weight, time_limit=time_limit, mip_gap=mip_gap,
                       starts=start, **o)
        r["C"] = float(C)
        out.append(r)
        if r.get("w") is not None:
            start = [(np.asarray(r["w"], dtype=float), float(r["b"]))]
    return out
