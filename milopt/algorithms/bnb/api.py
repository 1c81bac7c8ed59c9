"""Entry point of the MI-SVM branch and bound: heuristic starts, then the search."""
from __future__ import annotations

import math
import time

import numpy as np

from .options import PARAMS
from .search import MISVMBranchAndBound


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
        node_limit, tol, qp, swap, dive_every, heuristic_share, log_every, workers, batch).

    Returns
    -------
    dict of :meth:`MISVMBranchAndBound.solve` plus ``heuristic_seconds`` (the starts) and
    ``witnesses``.  The heuristic starts use at most 10 % of ``time_limit``.
    """
    from threadpoolctl import threadpool_limits

    from milopt.algorithms.mi_heuristics import slack_costs

    from .heuristics import alternation_from_scores, alternation_starts

    o = PARAMS.resolve(options, "bnb options")
    if costs is None:
        costs = slack_costs(bags, C, class_weight)[0]
    t0 = time.perf_counter()
    heur_s = 0.0
    with threadpool_limits(1):
        eng = MISVMBranchAndBound(None if kernel is not None else bags.X, bags.bag_ptr, bags.y, costs, tol=o["tol"],
                                  qp=o["qp"], K=kernel)
        K = eng.K
        X = None if kernel is not None else bags.X
        budget = 0.1 * time_limit if time_limit is not None else math.inf
        pts = []
        try:
            if o["restarts"] and (bags.y == 1).any() and (bags.y == 0).any():
                pts = alternation_starts(bags, K, C, class_weight, o["restarts"], o["seed"], t0 + budget, X)
        except KeyboardInterrupt:
            pass
        heur_s = time.perf_counter() - t0
        left = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - t0))
        ls = alternation_from_scores(bags, K, C, class_weight, X) if o["restarts"] else None
        out = eng.solve(time_limit=left, mip_gap=mip_gap, node_limit=o["node_limit"], incumbents=pts,
                        primal_incumbents=list(starts), heuristic=ls, swap=o["swap"], dive_every=o["dive_every"],
                        heuristic_share=o["heuristic_share"], verbose=verbose, log_every=o["log_every"],
                        workers=o["workers"], batch=o["batch"], log=log)
    if out["w"] is None and out["coef"] is None:   # no start and no node evaluated
        out["coef"] = np.zeros(bags.n_instances)
        out["objective"], out["b"] = eng.phi_raw(np.zeros(bags.n_instances), 0.0)
        if kernel is None:
            out["w"] = np.zeros(bags.n_features)
    out["heuristic_seconds"] = heur_s
    out["seconds"] = time.perf_counter() - t0
    raw = eng.Kv(out["coef"]) if kernel is not None else bags.X @ out["w"]
    out["witnesses"] = eng.selection_of_raw(raw, out["b"])
    out["options"] = o
    return out
