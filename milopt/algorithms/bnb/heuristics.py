r"""Primal heuristics of the MI-SVM branch and bound: incumbents (upper bounds).

* :func:`alternation_starts`: the MI-SVM alternating heuristic (Andrews, Tsochantaridis &
  Hofmann 2002; Kent & Yu Algorithm 1) from the centroid and SIL starts and random starts;
* :func:`alternation_from_scores`: the same alternation started from given instance scores
  (a node relaxation's scores: "diving" from the relaxation to a selection and polishing it);
* :func:`swap_search`: 1-opt witness-swap local search on the MI-SVM objective.

Every point found is scored by the true MI-SVM objective Φ(w, b*) (exact best intercept), so
an incumbent is always the objective value of a feasible (w, b); nothing here affects the
lower bound.

**1-opt witness swaps.**  The alternation stops at a selection s whose SVM solution (w_s, b_s)
picks s again: no *first-order* change of witness helps, because Φ(w_s, ·) already uses the
best witness of every bag for w_s.  A swap that helps only after (w, b) is re-optimised is
invisible to it.  :func:`swap_search` tries, for every positive bag I and instance i' ≠ s_I,
the selection s' = s with s_I ← i': the SVM P(s') is re-solved by the coordinate descent warm
started from P(s)'s multipliers (α moves from s_I to i', :meth:`GroupSVMDual.move`), and the
swap is kept when Φ(w_{s'}, b*) < Φ(w_s, b*) (first improvement), after which the selection is
re-aligned with the new scores (one alternation step).  Passes repeat until none improves or
the time budget ends.  Candidates are tried in decreasing order of their current score (the
instances nearest to taking over their bag first).
"""
from __future__ import annotations

import time

import numpy as np

from milopt.segments import segment_argmax


def alternation_starts(bags, K, C, class_weight, restarts, seed, deadline, X):
    """Dual coefficients ``(coef = y ∘ α, b)`` from the alternating heuristic: centroid and SIL
    starts, then random starts (each its own seed) while time allows."""
    from milopt.algorithms.mi_heuristics import misvm_alternate

    out = []
    inits = ["centroid", "sil"] + ["random"] * max(0, int(restarts) - 2)
    for r, init in enumerate(inits[:max(1, int(restarts))]):
        if time.perf_counter() > deadline:
            break
        try:
            res = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", init=init, restarts=1,
                                  random_state=seed + r, X=X, solver="smo" if K is None else "auto")
        except Exception:  # noqa: BLE001 - a failed start is only a missing incumbent
            continue
        out.append((res["alpha"] * res["y"], res["b"]))
    return out


def alternation_from_scores(bags, K, C, class_weight, X, max_iter=20):
    """``run(scores) -> (coef, b)``: the alternation started from the selection of ``scores``."""
    from milopt.algorithms.mi_heuristics import misvm_alternate

    def run(scores):
        res = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", restarts=1, init_scores=scores,
                              X=X, max_iter=max_iter, solver="smo" if K is None else "auto")
        return res["alpha"] * res["y"], res["b"]

    return run


def swap_search(eng, scores, deadline, tol=1e-3, max_passes=5):
    """1-opt witness-swap local search from the selection of ``scores``.

    Parameters
    ----------
    eng : MISVMBranchAndBound
        Supplies the kernel, labels, costs and Φ.
    scores : ndarray (n,)
        Instance scores; the start is the best-scoring instance of every positive bag.
    deadline : float
        ``time.perf_counter()`` value at which to stop.

    Returns
    -------
    (value, coef, b) of the best point found (coef = y ∘ α: w = Σ coef_i z_i), or None.
    """
    from milopt.algorithms.svm_dcd import GroupSVMDual

    ptr, pos = eng.ptr, eng.pos_bags
    live_pos = eng.live[pos] & (eng.sizes[pos] > 1)
    if not live_pos.any() or not (eng.base_active.any()):
        return None
    smo = GroupSVMDual(eng.K if eng.dense else None, eng.y, eng.bag_of, eng.caps, tol=tol,
                       X=None if eng.dense else eng.X, max_iter=20000)
    wit = segment_argmax(np.asarray(scores, dtype=float), ptr)[pos]
    act = eng.base_active.copy()
    act[wit[eng.live[pos]]] = True
    smo.active = act
    smo.solve()

    def value():
        raw = smo.raw_scores()
        return eng.phi_raw(raw, float(smo.alpha @ (eng.y * raw))) + (raw,)

    cur, b, raw = value()
    best = (cur, eng.y * smo.alpha, b)
    bag_ids = np.flatnonzero(live_pos)
    for _ in range(max_passes):
        improved = False
        for k in bag_ids:
            I = pos[k]
            cands = np.arange(ptr[I], ptr[I + 1])
            cands = cands[cands != wit[k]]
            cands = cands[np.argsort(-raw[cands], kind="stable")]
            for c in cands.tolist():
                if time.perf_counter() > deadline:
                    return best
                saved = (smo.alpha.copy(), smo.F.copy(), smo.gsum.copy(), smo.active.copy())
                smo.move(wit[k], c)
                smo.solve()
                val, bb, r2 = value()
                if val < cur - 1e-9 * max(1.0, abs(cur)):
                    wit[k] = c
                    cur, b, raw = val, bb, r2
                    # re-align the selection with the new scores (one alternation step)
                    new = segment_argmax(raw, ptr)[pos]
                    ch = np.flatnonzero((new != wit) & eng.live[pos])
                    if ch.size:
                        saved2 = (smo.alpha.copy(), smo.F.copy(), smo.gsum.copy(), smo.active.copy())
                        smo.move(wit[ch], new[ch])
                        smo.solve()
                        v3, b3, r3 = value()
                        if v3 < cur:
                            wit[ch] = new[ch]
                            cur, b, raw = v3, b3, r3
                        else:
                            smo.alpha, smo.F, smo.gsum, smo.active = saved2
                    if cur < best[0]:
                        best = (cur, eng.y * smo.alpha, b)
                    improved = True
                    break
                smo.alpha, smo.F, smo.gsum, smo.active = saved
        if not improved:
            break
    return best
