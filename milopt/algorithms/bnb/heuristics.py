r"""Primal heuristics of the MI-SVM branch and bound: incumbents (upper bounds).

* :func:`alternation_starts`: the MI-SVM alternating heuristic (Andrews, Tsochantaridis &
  Hofmann 2002; Kent & Yu Algorithm 1) from the centroid and SIL starts and random starts;
* :func:`alternation_from_scores`: the same alternation started from given instance scores
  (a node relaxation's scores: "diving" from the relaxation to a selection and polishing it);
* :func:`swap_search`: 1-opt witness-swap local search on the MI-SVM objective;
* :func:`kick_search`: iterated local search (random multi-bag kicks, then the alternation);
* :func:`interleaved_kick`: a slice of it inside a serial search, alternating with nodes.

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



def _solve_witnesses(eng, wit, pos, deadline, warm=None):
    """The node QP of the witness selection ``wit`` (positive bags ``pos``): Φ, intercept, α,
    dual objective, coefficients and raw scores.

    ``warm = (alpha, old_wit)``: the multipliers of a solved selection; each changed bag's
    multiplier moves from its old witness to the new one, and the QP is solved by the
    active-set method from there (a selection that differs in a few witnesses needs a few
    iterations of a small system, against a cold interior-point solve), falling back to the
    cold solve when it fails.  Either way the point is exactly dual feasible and its Φ is the
    true objective."""
    act = eng.base_active.copy()
    live = eng.live[pos]
    act[wit[live]] = True
    alpha = None
    if warm is not None and eng.active_set:
        a0, old = warm
        a0 = np.array(a0, dtype=float)
        ch = np.flatnonzero(live & (old != wit))
        a0[wit[ch]] = a0[old[ch]]
        a0[old[ch]] = 0.0
        if a0.any():
            r = eng._solve_node_active_set(a0, act)
            if r is not None:
                alpha = r[0]
    if alpha is None:
        alpha = eng.solve_selection(act, deadline)
    D, coef, raw = eng.dual_objective(alpha)
    val, b = eng.phi_raw(raw, float(coef @ raw))
    return val, b, alpha, D, coef, raw

def alternation_starts(bags, K, C, class_weight, restarts, seed, deadline, X, eng=None):
    """Dual coefficients ``(coef = y ∘ α, b)`` from the alternating heuristic: centroid and SIL
    starts, then random starts (start r seeded ``seed + r``) while time allows.

    With ``eng`` whose node solver is the interior point (small effective sets), each start's
    alternation is :func:`alternate_selection` (every SVM by the node QP, warm-started by the
    active-set method: a few hundredths of a second on MUSK1 against seconds for the
    coordinate descent of :func:`~milopt.algorithms.mi_heuristics.misvm_alternate`, which is
    used otherwise); the first selections are the same."""
    from milopt.algorithms.mi_heuristics import misvm_alternate

    out = []
    inits = ["centroid", "sil"] + ["random"] * max(0, int(restarts) - 2)
    longest = 0.0
    fast = eng is not None and eng.qp == "ipm"
    for r, init in enumerate(inits[:max(1, int(restarts))]):
        t = time.perf_counter()
        if out and t + longest > deadline:      # the next start would not end in time
            break
        try:
            if fast:
                sel = eng.selection_of_raw(_start_scores(bags, K, C, class_weight, init, seed + r, X))
                a = alternate_selection(eng, sel, deadline)
                out.append((a[4], a[1]))
            else:
                res = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", init=init, restarts=1,
                                      random_state=seed + r, X=X, solver="smo" if K is None else "auto")
                out.append((res["alpha"] * res["y"], res["b"]))
        except Exception:  # noqa: BLE001 - a failed start is only a missing incumbent
            continue
        longest = max(longest, time.perf_counter() - t)
    return out


def _start_scores(bags, K, C, class_weight, init, seed, X):
    """Instance scores of the alternation's first selection (as ``misvm_alternate`` with
    ``init`` and ``random_state=seed``): the centroid SVM, the SIL SVM, or uniform random."""
    from milopt.mil.alternation import _centroid_scores, _sil_witnesses

    rng = np.random.default_rng(seed)
    if init == "centroid":
        return _centroid_scores(K, bags, C, class_weight, X=X)
    if init == "sil":
        return _sil_witnesses(K, bags, C, class_weight, rng, X=X)
    return rng.random(bags.n_instances)


def alternation_from_scores(bags, K, C, class_weight, X, max_iter=20):
    """``run(scores) -> (coef, b)``: the alternation started from the selection of ``scores``."""
    from milopt.algorithms.mi_heuristics import misvm_alternate

    def run(scores):
        res = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", restarts=1, init_scores=scores,
                              X=X, max_iter=max_iter, solver="smo" if K is None else "auto")
        return res["alpha"] * res["y"], res["b"]

    return run


def swap_search(eng, scores, deadline, max_passes=20):
    """1-opt witness-swap local search from the selection of ``scores``.

    Each selection's SVM is solved to high accuracy by the interior-point node QP of ``eng``;
    engines whose node solver is the coordinate descent (large effective sets, e.g. MUSK2)
    return None (one swap would cost a full solve).  Two exact screens skip candidates:

    * a bag whose multipliers are all zero (α_I = 0) cannot gain: α stays dual feasible for the
      swapped selection s', so P(s') ≥ D(α) = P(s);
    * moving α_I from the witness i to i' gives the dual-feasible point α' of P(s') with
      D(α') = D(α) − α_I (f_i' − f_i) − ½ α_I² ‖z_i' − z_i‖²  (f = K(y∘α)); when
      D(α') ≥ Φ(current) the swap cannot improve (P(s') ≥ D(α')) and is not solved.

    Parameters
    ----------
    eng : MISVMBranchAndBound
        Supplies the kernel, labels, costs, the node QP solver and Φ.
    scores : ndarray (n,)
        Instance scores; the start is the best-scoring instance of every positive bag.
    deadline : float
        ``time.perf_counter()`` value at which to stop.

    Returns
    -------
    (value, coef, b) of the best point found (coef = y ∘ α: f(x) = Σ coef_i K(z_i, x) + b),
    or None.
    """
    ptr, pos = eng.ptr, eng.pos_bags
    multi = eng.live[pos] & (eng.sizes[pos] > 1)
    if not multi.any() or not eng.base_active.any() or eng.qp != "ipm":
        return None
    wit = segment_argmax(np.asarray(scores, dtype=float), ptr)[pos]

    def solve(w_, warm=None):
        return _solve_witnesses(eng, w_, pos, deadline, warm)

    cur, b, alpha, D, coef, raw = solve(wit)
    best = (cur, coef, b)
    bag_ids = np.flatnonzero(multi)
    for _ in range(max_passes):
        improved = False
        aI = np.add.reduceat(alpha, eng.smo.gptr[:-1])[pos]
        for k in bag_ids[aI[bag_ids] > 0]:
            I = pos[k]
            a = aI[k]
            i = wit[k]
            cands = np.arange(ptr[I], ptr[I + 1])
            cands = cands[cands != i]
            dist = eng.diag[cands] + eng.diag[i] - 2.0 * eng.Krows(np.array([i]), cands)[0]
            dprime = D - a * (raw[cands] - raw[i]) - 0.5 * a * a * dist
            cands = cands[dprime < cur - 1e-9 * max(1.0, abs(cur))]
            for c in cands[np.argsort(-raw[cands], kind="stable")].tolist():
                if time.perf_counter() > deadline:
                    return best
                w2 = wit.copy()
                w2[k] = c
                r = solve(w2, (alpha, wit))
                if r[0] < cur - 1e-9 * max(1.0, abs(cur)):
                    # keep the swap, then re-align the selection with the new scores (alternation)
                    wit = w2
                    cur, b, alpha, D, coef, raw = r
                    for _ in range(20):
                        new = segment_argmax(raw, ptr)[pos]
                        if np.array_equal(new[multi], wit[multi]) or time.perf_counter() > deadline:
                            break
                        r = solve(np.where(multi, new, wit), (alpha, wit))
                        if not r[0] < cur:
                            break
                        wit = np.where(multi, new, wit)
                        cur, b, alpha, D, coef, raw = r
                    if cur < best[0]:
                        best = (cur, coef, b)
                    improved = True
                    aI = np.add.reduceat(alpha, eng.smo.gptr[:-1])[pos]
                    break
        if not improved:
            break
    return best


def alternate_selection(eng, wit, deadline, max_iter=30, warm=None):
    """The MI-SVM alternation on selections: returns (value, b, alpha, D, coef, raw, wit) of
    the last improving selection.  Each SVM is solved by the node QP of ``eng`` when the
    interior point is its node solver (small effective sets): the active-set method
    warm-started from the previous selection's multipliers (``warm = (alpha, wit)`` for the
    first one), the interior point cold where that fails; otherwise by the warm-started
    coordinate descent of :func:`~milopt.algorithms.mi_heuristics.misvm_alternate` (a witness
    change moves α, nothing is re-solved from scratch)."""
    ptr, pos = eng.ptr, eng.pos_bags
    multi = eng.live[pos] & (eng.sizes[pos] > 1)
    if eng.qp != "ipm":
        return _alternate_smo(eng, wit, max_iter)

    def solve(w_, warm=None):
        return _solve_witnesses(eng, w_, pos, deadline, warm)

    r = solve(wit, warm)
    for _ in range(max_iter):
        new = np.where(multi, segment_argmax(r[5], ptr)[pos], wit)
        if np.array_equal(new, wit) or time.perf_counter() > deadline:
            break
        r2 = solve(new, (r[2], wit))
        if not r2[0] < r[0]:
            break
        wit, r = new, r2
    return r + (wit,)


def _alternate_smo(eng, wit, max_iter):
    from milopt.qp.svm_dcd import GroupSVMDual

    ptr, pos = eng.ptr, eng.pos_bags
    smo = GroupSVMDual(eng.K if eng.dense else None, eng.y, eng.bag_of, eng.caps, tol=eng.tol,
                       X=None if eng.dense else eng.X, max_iter=200000)
    wit = np.where(eng.live[pos], wit, eng.ptr[pos])
    act = eng.base_active.copy()
    act[wit[eng.live[pos]]] = True
    smo.active = act
    smo.solve()
    best = None
    for _ in range(max_iter):
        alpha = smo.alpha.copy()
        D, coef, raw = eng.dual_objective(alpha)
        val, b = eng.phi_raw(raw, float(coef @ raw))
        if best is not None and not val < best[0]:
            break
        best = (val, b, alpha, D, coef, raw, wit.copy())
        new = np.where(eng.live[pos], segment_argmax(raw, ptr)[pos], wit)
        ch = np.flatnonzero(new != wit)
        if ch.size == 0:
            break
        smo.move(wit[ch], new[ch])
        wit = new
        smo.solve()
    return best


def kick_search(eng, scores, deadline, seed=0, kick=3, swap=True, found=None):
    r"""Iterated local search on witness selections (escapes the 1-opt optimum of
    :func:`swap_search`).

    From the best selection so far: *kick* k bags (k uniform in 1..``kick``), chosen among the
    positive bags with :math:`\alpha_I > 0` (the bags that shape the solution), to random other
    instances; re-run the alternation (:func:`alternate_selection`); keep the result when it is
    not worse (moving across plateaus of equal Φ), and polish a strict improvement by the swap
    search.  Repeats until ``deadline``, or until 20 kicks per multi-instance bag in a row
    found nothing better (the steps of :func:`kick_steps`).

    ``found(value, coef, b)``, if given, is called with every strict improvement when it is
    found (so that its time is known and an interruption keeps it).

    Returns (value, coef, b) of the best point found, or None.
    """
    steps = kick_steps(eng, scores, [deadline], seed=seed, kick=kick, swap=swap, found=found)
    best = None
    try:
        while True:
            best = next(steps)
            if time.perf_counter() >= deadline:
                return best
    except StopIteration as stop:
        return stop.value if stop.value is not None else best


def kick_steps(eng, scores, clock, seed=0, kick=3, swap=True, found=None):
    """The iterated local search of :func:`kick_search` as a generator that can be resumed:
    it yields the best (value, coef, b) after its start and after every kick, and returns it
    (``StopIteration.value``; None without multi-instance positive bags) when 20 kicks per
    multi-instance bag in a row found nothing better.  ``clock[0]`` is the deadline that the
    alternation and the swap search of the current step observe (the caller moves it between
    steps), so one search can run in slices (:func:`interleaved_kick`)."""
    ptr, pos = eng.ptr, eng.pos_bags
    multi = eng.live[pos] & (eng.sizes[pos] > 1)
    if not multi.any() or not eng.base_active.any() or not (eng.y > 0).any():
        return None
    rng = np.random.default_rng(seed)
    wit = segment_argmax(np.asarray(scores, dtype=float), ptr)[pos]
    cur = alternate_selection(eng, wit, clock[0])
    best = (cur[0], cur[4], cur[1])
    tol = 1e-9 * max(1.0, abs(cur[0]))
    patience, idle = 20 * int(multi.sum()), 0
    while idle < patience:
        yield best
        idle += 1
        aI = np.add.reduceat(cur[2], eng.smo.gptr[:-1])[pos]
        cand = np.flatnonzero(multi & (aI > 1e-7 * eng.caps[pos]))
        if cand.size == 0:
            cand = np.flatnonzero(multi)
        ks = rng.choice(cand, size=min(int(rng.integers(1, kick + 1)), cand.size), replace=False)
        w2 = cur[6].copy()
        for k in ks:
            I = pos[k]
            opts = np.arange(ptr[I], ptr[I + 1])
            w2[k] = rng.choice(opts[opts != w2[k]])
        r = alternate_selection(eng, w2, clock[0], warm=(cur[2], cur[6]))
        if r[0] <= cur[0] + tol:
            cur = r
            if r[0] < best[0] - tol:
                idle = 0
                best = (r[0], r[4], r[1])
                if found is not None:
                    found(*best)
                if swap and time.perf_counter() < clock[0]:   # (None without interior-point node QPs)
                    sw = swap_search(eng, r[5], clock[0])
                    if sw is not None and sw[0] < best[0] - tol:
                        best = sw
                        if found is not None:
                            found(*best)
                        cur = alternate_selection(eng, segment_argmax(eng.Kv(sw[1]), ptr)[pos], clock[0])
    return best


#: seconds of one slice of the starts' iterated local search run inside a serial search
#: (:func:`interleaved_kick`); each slice is followed by as much node time
KICK_SLICE = 1.0


def interleaved_kick(run):
    """One slice of the starts' iterated local search inside a serial search ``run`` (the
    ``Search`` of :meth:`~.search.MISVMBranchAndBound.solve`), then as much node time.

    The starts used to spend ``kick_seconds`` on :func:`kick_search` before the search began,
    cut at ``start_share`` of the time limit: under a short limit the search got a few tenths
    of it and the bound at the limit was weak.  Interleaved, the local search alternates with
    node evaluation in slices of :data:`KICK_SLICE` seconds until ``kick_seconds`` are used:
    the bound grows from the start, and the schedule (slice k begins after k slices of local
    search and k of nodes) is the same whatever the limit, so the incumbent at time t does not
    depend on it.  The slices resume one search (:func:`kick_steps`; a search restarted every
    slice would not get far on a loaded machine), restarted from the incumbent, seeded
    ``seed + j`` for its j-th start, when it ends or when the tree found a better incumbent.
    Every improvement is offered when it is found (source ``kick``).

    The local search ends early, the rest of its seconds unused, after ``kick_patience``
    kicks in a row (option of ``options.PARAMS``; a count, so the rule does not depend on the
    machine's load) without a better incumbent, whatever found it (the local search or the
    nodes between two slices): on all of MUSK1 the optimum comes 79 kicks after the search
    began, and the rest of the 10 s (about 800 kicks on an idle core) never improved it.

    ``run.s.early`` holds [seconds left, time of the next slice, starts so far, seconds used,
    the running search as [generator, its clock, its best value] or None]; ``run.s.kick_idle``
    the kicks since the incumbent last improved, ``run.s.kick_mark`` the incumbent then."""
    th = time.perf_counter()
    s = run.s
    left, _, k, used, state = s.early
    end = th + min(KICK_SLICE, left, max(0.0, run.deadline - th))
    patience = run.opts.kick_patience
    try:
        while time.perf_counter() < end:
            tol = 1e-9 * max(1.0, abs(s.incumbent.value))
            if state is None or s.incumbent.value < state[2] - tol:   # (re)start from the incumbent
                clock = [end]
                state = [kick_steps(run.eng, run.incumbent_raw(), clock, seed=run.opts.seed + k, kick=run.opts.kick_size,
                                    found=lambda v, c, b: run.offer(c, b, "kick")), clock, s.incumbent.value]
                k += 1
            state[1][0] = end
            try:
                state[2] = min(state[2], next(state[0])[0])
            except StopIteration:
                state = None
            if s.incumbent.value < s.kick_mark - tol:
                s.kick_idle, s.kick_mark = 0, s.incumbent.value
            else:
                s.kick_idle += 1
            if patience and s.kick_idle >= patience:
                left, state = 0.0, None      # no better incumbent for a while: the time goes to the nodes
                break
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - a failed local search never stops the proof
        state = None
    spent = time.perf_counter() - th
    if left > 0:
        left = max(left - max(spent, end - th), 0.0)
    s.kick_slices += 1
    s.early[:] = [left, time.perf_counter() + spent, k, used + spent, state]


def _smooth_objective(X, ptr, bag_of, ypos, costs, tau, delta):
    """f(θ) and ∇f for θ = (w, b): Φ with each bag's max replaced by τ·log Σ exp(s_i/τ) and the
    hinge by δ·log(1 + exp(x/δ)) (both ≥ the exact terms, → them as τ, δ → 0)."""
    d = X.shape[1]
    sgn = np.where(ypos, -1.0, 1.0)          # positive bag: 1 - M - b ; negative: 1 + M + b

    def f(theta):
        w, b = theta[:d], theta[d]
        s = X @ w
        z = s / tau
        zmax = np.maximum.reduceat(z, ptr[:-1])
        e = np.exp(z - zmax[bag_of])
        den = np.add.reduceat(e, ptr[:-1])
        M = tau * (np.log(den) + zmax)
        p = e / den[bag_of]                   # softmax weights within the bag
        x = 1.0 + sgn * (M + b)
        xd = x / delta
        loss = delta * np.logaddexp(0.0, xd)
        dl = costs * (1.0 / (1.0 + np.exp(-np.clip(xd, -500, 500))))   # d loss / dx, weighted
        val = 0.5 * w @ w + costs @ loss
        coefM = dl * sgn                       # d/dM
        gs = coefM[bag_of] * p                 # d/ds_i
        gw = w + X.T @ gs
        gb = float(np.sum(dl * sgn))
        return val, np.concatenate([gw, [gb]])

    return f


#: the annealing portfolio: (cost scale λ, hinge smoothing δ (None: δ = τ), first τ, random start)
PORTFOLIO = ((1.0, None, 4.0, False), (0.5, None, 4.0, False), (0.5, 0.3, 4.0, False), (2.0, None, 4.0, False),
             (0.25, 0.3, 4.0, False), (1.0, 0.3, 4.0, False), (0.5, 0.1, 1.0, False), (2.0, None, 0.3, True),
             (0.5, None, 0.3, True), (1.0, 0.1, 0.3, True), (0.25, None, 1.0, True), (4.0, 0.3, 1.0, True))


def annealing_starts(eng, deadline, seed=0, runs=len(PORTFOLIO), stages=8, tau_end=0.01):
    r"""Deterministic annealing on the primal MI-SVM objective (linear kernel), after Gehler &
    Chapelle, *Deterministic annealing for multiple-instance learning* (AISTATS 2007).

    Each run minimises a smoothed Φ by L-BFGS for a decreasing sequence of temperatures τ
    (``stages`` values from the run's first τ down to ``tau_end``, geometric), each stage warm
    started from the previous one:

    .. math::

        \Phi_{	au,\delta}(w, b) = 	frac12\lVert w
Vert^2
            + \sum_I \lambda C_I\, \delta \logig(1 + e^{(1 - Y_I(M_I + b))/\delta}ig),\qquad
        M_I = 	au \log 	extstyle\sum_{i\in I} e^{w^	op z_i/	au},

    a soft maximum over each bag's instances (near the bag's mean score for large τ, the max
    for small τ) and a smoothed hinge.  Runs differ by the cost scale λ, the hinge smoothing δ,
    the first τ and the start (w = 0 or random, seeded): a portfolio (:data:`PORTFOLIO`) that
    lands in different selections.  Yields the instance-score vector w·z_i of each run when it ends
    (its selection is polished by :func:`alternate_selection`): the first runs' points are
    incumbents before the last run ends."""
    from scipy.optimize import minimize

    if eng.kernel or not eng.ypos.any() or eng.ypos.all():
        return
    rng = np.random.default_rng(seed)
    costs = np.where(eng.live, eng.costs, 0.0)
    X, d = eng.X, eng.d
    longest = 0.0
    for r in range(runs):
        t = time.perf_counter()
        if t + longest > deadline:               # the next run would not end in time
            break
        lam, delta, tau0, rand = PORTFOLIO[r % len(PORTFOLIO)]
        theta = np.zeros(d + 1)
        if rand or r >= len(PORTFOLIO):
            theta[:d] = rng.normal(0, 1.0 / np.sqrt(d), d)
        for tau in np.geomspace(tau0, tau_end, stages):
            f = _smooth_objective(X, eng.ptr, eng.bag_of, eng.ypos, lam * costs, tau,
                                  delta if delta is not None else max(tau, tau_end))
            theta = minimize(f, theta, jac=True, method="L-BFGS-B", options={"maxiter": 200}).x
            if time.perf_counter() > deadline:
                break
        longest = max(longest, time.perf_counter() - t)
        yield X @ theta[:d]
