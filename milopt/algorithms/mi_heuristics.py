r"""Alternating heuristics for MI-SVM and mi-SVM (Andrews et al. 2002; Kent & Yu Algorithm 1).

**MI-SVM** (:func:`misvm_alternate`).  For a witness selection :math:`s` (one instance per
positive bag) the problem is a convex SVM over the effective set
:math:`E(s)` = all negative-bag instances + the witnesses:

.. math::

    P(s) = \min_{w,b,\xi}\ \tfrac12\lVert w\rVert^2 + \sum_g C_g \xi_g \quad
    \text{s.t. } y_i(\langle w, \phi(x_i)\rangle + b) \ge 1 - \xi_{g(i)},\ i \in E(s),

with one slack per negative bag (``slack="bag"``, Kent & Yu) or per negative instance
(``slack="instance"``, Andrews).  Algorithm 1 alternates: solve :math:`P(s_t)`; set
:math:`s_{t+1}` = the instance of largest decision value in every positive bag; stop when the
selection no longer changes.  Writing :math:`\Phi(w, b)` for the MI-SVM objective with the best
selection for (w, b), :math:`P(s_{t+1}) \le \Phi(w_t, b_t) \le P(s_t)`: the objective never
increases, and there are finitely many selections, so the method stops.  The subproblem is
solved in the dual by :class:`~milopt.algorithms.svm_dcd.GroupSVMDual` on a kernel matrix
computed once; a witness change moves α to the new witness (warm start), so nothing is rebuilt.
Several starts (the first from the rule ``init``, the others random, seeded) are run and the
lowest objective kept.

**mi-SVM** (:func:`mi_svm_alternate`).  Instance labels of positive bags are unknowns:
alternate an instance-level SVM (libsvm through scikit-learn, precomputed kernel, per-instance
costs as sample weights) with the label imputation that minimises the weighted hinge loss
for the current (w, b), forcing the highest-scoring instance of a positive bag positive when
none is; stop when the labels stop changing.
"""
from __future__ import annotations

import time

import numpy as np

from milopt.algorithms.svm_dcd import GroupSVMDual
from milopt.errors import InvalidParameterError
from milopt.segments import segment_argmax, segment_max

SLACKS = ("bag", "instance")
INITS = ("centroid", "sil", "first", "random")


def slack_costs(bags, C: float, class_weight="kent-yu"):
    """(cost per positive bag, cost per negative bag, cost per negative instance) arrays.

    ``kent-yu``: positive bags C, negative slacks C · n⁺_bags / n⁻_instances (weights inversely
    proportional to the number of positive bags and of negative instances, as mildsvm and
    ``misvm_bigm``); ``balanced``: inverse frequencies of the two slack kinds; ``none``: C.
    """
    from milopt.numerics import bag_costs, instance_cost

    return bag_costs(bags, C, class_weight), instance_cost(bags, C, class_weight)


def slack_structure(bags, C=1.0, class_weight="kent-yu", slack="bag"):
    """Labels ±1, contiguous slack groups and group caps for the effective-set dual.

    Returns
    -------
    y : (n,) ±1 bag label of every instance
    groups : (n,) group id (bag form: the bag; instance form: each negative instance alone)
    caps : (n_groups,)
    """
    if slack not in SLACKS:
        raise InvalidParameterError(f"slack: expected 'bag' or 'instance', got {slack!r}")
    y = np.where(bags.instance_bag_y == 1, 1.0, -1.0)
    costs_bag, c_inst = slack_costs(bags, C, class_weight)
    if slack == "bag":
        return y, bags.bag_index.copy(), costs_bag
    ptr = bags.bag_ptr
    first = np.zeros(bags.n_instances, dtype=bool)
    first[ptr[:-1]] = True
    start = first | (y < 0)
    groups = np.cumsum(start) - 1
    caps_inst = np.where(y < 0, c_inst, costs_bag[bags.bag_index])
    caps = caps_inst[start]
    return y, groups, caps


def mi_objective(bags, scores, norm2, C=1.0, class_weight="kent-yu", slack="bag") -> float:
    """MI-SVM objective Φ(w, b) = ½‖w‖² + slack costs with the best witness per positive bag."""
    costs_bag, c_inst = slack_costs(bags, C, class_weight)
    mx = segment_max(scores, bags.bag_ptr)
    pos = bags.y == 1
    if slack == "bag":
        xi = np.where(pos, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + mx))
        return float(0.5 * norm2 + costs_bag @ xi)
    negi = bags.instance_bag_y == 0
    loss_pos = costs_bag[pos] @ np.maximum(0.0, 1.0 - mx[pos])
    loss_neg = c_inst * np.maximum(0.0, 1.0 + scores[negi]).sum()
    return float(0.5 * norm2 + loss_pos + loss_neg)


def _sil_witnesses(K, bags, C, class_weight, rng, X=None):
    """Instance scores of an instance-level SVM with bag labels copied (the ``sil`` start).

    With features ``X`` (linear kernel) liblinear is used (a start only needs to be cheap);
    otherwise libsvm on the precomputed kernel."""
    y = bags.instance_bag_y
    cw = "balanced" if class_weight in ("kent-yu", "balanced") else None
    if X is not None:
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.svm import LinearSVC

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LinearSVC(C=C, loss="hinge", dual=True, class_weight=cw, max_iter=2000, tol=1e-2,
                            random_state=int(rng.integers(2**31 - 1))).fit(X, y)
        return clf.decision_function(X)
    from sklearn.svm import SVC

    clf = SVC(C=C, kernel="precomputed", class_weight=cw, tol=1e-2).fit(K, y)
    return clf.decision_function(K)


def _centroid_scores(K, bags, C, class_weight, X=None, tol=1e-3):
    """Andrews' start: an SVM whose positive examples are the positive bags' centroids (in
    feature space: kernel rows averaged over the bag), negatives the negative instances
    (instance costs); returns the instance scores of that SVM."""
    import scipy.sparse as sp
    from sklearn.svm import SVC

    costs_bag, c_inst = slack_costs(bags, C, class_weight)
    pos = np.flatnonzero(bags.y == 1)
    negi = np.flatnonzero(bags.instance_bag_y == 0)
    ptr = bags.bag_ptr
    sizes = np.diff(ptr)[pos]
    rows = np.repeat(np.arange(pos.size), sizes)
    cols = np.concatenate([np.arange(ptr[I], ptr[I + 1]) for I in pos]) if pos.size else np.zeros(0, int)
    A = sp.csr_matrix((1.0 / np.repeat(sizes, sizes), (rows, cols)), shape=(pos.size, bags.n_instances))
    yl = np.r_[-np.ones(negi.size), np.ones(pos.size)]
    sw = np.r_[np.full(negi.size, c_inst), costs_bag[pos]]
    if X is not None:
        Xc = np.asarray(A @ X)
        Xe = np.vstack([X[negi], Xc])
        clf = SVC(C=1.0, kernel="linear", tol=tol, cache_size=1000).fit(Xe, yl, sample_weight=sw)
        return X @ clf.coef_.ravel() + clf.intercept_[0]
    KAt = np.asarray((A @ K).T)                        # (n, n_pos): K(x_i, centroid_I)
    Kcc = np.asarray(A @ KAt)
    Ke = np.block([[K[np.ix_(negi, negi)], KAt[negi]], [KAt[negi].T, Kcc]])
    clf = SVC(C=1.0, kernel="precomputed", tol=tol).fit(Ke, yl, sample_weight=sw)
    coef = np.zeros(Ke.shape[0])
    coef[clf.support_] = clf.dual_coef_[0]
    return np.hstack([K[:, negi], KAt]) @ coef + clf.intercept_[0]


SOLVERS = ("auto", "smo", "ipm", "libsvm")


def intercept_eq4(raw, y, alpha, groups, caps, active, fallback=0.0, rel=1e-6):
    """Kent & Yu eq. 4: b = y_i - Σ_j α_j y_j K_ij averaged over the free indices
    (0 < α_i and the group of i below its cap)."""
    gsum = np.bincount(groups, weights=np.where(active, alpha, 0.0), minlength=caps.size)
    open_ = (caps - gsum > rel * caps)[groups]
    free = active & (alpha > rel * caps[groups]) & open_
    if free.any():
        return float(np.mean(y[free] - raw[free]))
    if fallback is not None:
        return float(fallback)
    return best_intercept(raw, y, groups, caps, active)


def best_intercept(raw, y, groups, caps, active, chunk=256):
    """The b minimising Σ_g C_g max_{i∈g} [1 - y_i(raw_i + b)]_+ (a convex piecewise-linear
    function of b, minimised at one of its breakpoints b = y_i - raw_i): the intercept when no
    index is free."""
    idx = np.flatnonzero(active)
    cand = np.unique(y[idx] - raw[idx])
    gid = np.unique(groups[idx], return_inverse=True)[1]
    ng = gid.max() + 1
    best, best_b = np.inf, 0.0
    for s in range(0, cand.size, chunk):
        bb = cand[s:s + chunk]
        loss = np.maximum(0.0, 1.0 - y[idx][None, :] * (raw[idx][None, :] + bb[:, None]))
        xi = np.zeros((bb.size, ng))
        order = np.argsort(gid, kind="stable")
        ptr = np.concatenate(([0], np.cumsum(np.bincount(gid, minlength=ng))))
        xi = np.maximum.reduceat(loss[:, order], ptr[:-1], axis=1)
        val = xi @ caps[np.unique(groups[idx])]
        k = int(np.argmin(val))
        if val[k] < best:
            best, best_b = float(val[k]), float(bb[k])
    return best_b


class _Subproblem:
    """Effective-set SVM subproblem solved by SMO (warm started), IPM or libsvm."""

    def __init__(self, K, y, groups, caps, solver, tol, X=None):
        self.K, self.y, self.groups, self.caps, self.tol, self.X = K, y, groups, caps, tol, X
        self.solver = solver
        self.smo = GroupSVMDual(K, y, groups, caps, tol=tol, X=X if K is None else None) if solver == "smo" else None
        self.alpha = np.zeros(y.size)

    def start(self, act):
        self.act = act.copy()
        self.alpha[:] = 0.0
        if self.smo is not None:
            self.smo.alpha[:] = 0.0
            self.smo.F[:] = self.y
            self.smo.gsum[:] = 0.0
            self.smo.set_active(act)

    def move(self, old, new):
        if self.smo is not None:
            self.smo.move(old, new)
        self.act[old] = False
        self.act[new] = True

    def solve(self):
        y, K, act = self.y, self.K, self.act
        if self.smo is not None:
            info = self.smo.solve()
            alpha = self.smo.alpha.copy()
            raw = self.smo.raw_scores()
            b0 = self.smo.intercept()
            its, conv = info["iterations"], info["converged"]
        else:
            idx = np.flatnonzero(act)
            gi, ginv = np.unique(self.groups[idx], return_inverse=True)
            Ke = None if self.X is not None and self.solver == "libsvm" else K[np.ix_(idx, idx)]
            if self.solver == "ipm":
                from milopt.algorithms.svm_ipm import solve_group_dual_ipm

                r = solve_group_dual_ipm(Ke, y[idx], ginv, self.caps[gi], tol=min(self.tol, 1e-6) * 1e-2)
                ae, b0, its, conv = r["alpha"], r["b"], r["iterations"], r["converged"]
            else:  # libsvm: instance-slack form only (every group a single effective instance)
                from sklearn.svm import SVC

                if gi.size != idx.size:
                    raise InvalidParameterError("solver=libsvm handles slack=instance only; use smo or ipm")
                if Ke is None:   # linear kernel on features: libsvm evaluates kernel columns itself
                    clf = SVC(C=1.0, kernel="linear", tol=self.tol, cache_size=1000).fit(
                        self.X[idx], y[idx], sample_weight=self.caps[gi])
                else:
                    clf = SVC(C=1.0, kernel="precomputed", tol=self.tol).fit(Ke, y[idx], sample_weight=self.caps[gi])
                ae = np.zeros(idx.size)
                ae[clf.support_] = np.abs(clf.dual_coef_[0])
                b0, its, conv = float(clf.intercept_[0]), int(np.sum(clf.n_iter_)), True
            alpha = np.zeros(y.size)
            alpha[idx] = ae
            if K is None:
                raw = self.X @ (self.X[idx].T @ (ae * y[idx]))
            else:
                raw = K[:, idx] @ (ae * y[idx])
        b = intercept_eq4(raw, y, alpha, self.groups, self.caps, act, fallback=b0)
        norm2 = float(alpha @ (y * raw))
        f = raw + b
        loss = np.where(act, np.maximum(0.0, 1.0 - y * f), 0.0)
        xi = np.zeros(self.caps.size)
        np.maximum.at(xi, self.groups, loss)
        P = 0.5 * norm2 + float(self.caps @ xi)
        # weak duality: any feasible α gives D(α) = Σα − ½‖w‖² ≤ P(s)* ≤ P, so P − D bounds how far
        # the inexact subproblem solution is above the subproblem's optimum
        D = float(alpha[act].sum()) - 0.5 * norm2
        self.alpha = alpha
        return alpha, b, f, P, norm2, {"iterations": its, "converged": conv, "dual": D}


def misvm_alternate(K, bags, C=1.0, class_weight="kent-yu", slack="bag", init="centroid", restarts=1, max_iter=50,
                    tol=1e-3, random_state=0, init_scores=None, solver="auto", X=None):
    """MI-SVM alternating heuristic on a precomputed instance kernel matrix.

    Parameters
    ----------
    K : ndarray (n, n) or None
        Kernel of the training instances (linear, RBF or mean-embedding); may be None with
        ``X`` and ``solver='libsvm'`` (linear kernel evaluated by libsvm).
    bags : Bags
        Training bags (binary labels).
    X : ndarray (n, d), optional
        Instance features of a linear kernel (cheap SIL start; libsvm without a kernel matrix).
    C, class_weight, slack : see :func:`slack_structure`.
    init : {'centroid', 'sil', 'first', 'random'}
        Witnesses of the first start: argmax of the SVM trained with every positive bag
        represented by its centroid (Andrews et al.), of an instance-level SVM with copied bag
        labels, the first instance of every bag, or random.  Further starts are random.
    restarts : int
        Number of starts; the lowest final objective is kept.
    max_iter : int
        Alternation limit per start.
    tol : float
        KKT tolerance of the SMO / libsvm subproblem solvers (the IPM solves to 1e-2 · tol).
    init_scores : ndarray (n,), optional
        Instance scores defining the first selection (overrides ``init``).
    solver : {'auto', 'smo', 'ipm', 'libsvm'}
        Subproblem solver: warm-started SMO (:mod:`~milopt.algorithms.svm_dcd`), dense
        interior point (:mod:`~milopt.algorithms.svm_ipm`), or libsvm (instance slack only).
        ``auto``: IPM up to 2,500 effective instances, SMO above.

    Returns
    -------
    dict: alpha (n,), b, y (±1 per instance), witnesses (row per positive bag), objective,
    history (list of dicts per alternation over all starts), iterations, best_start, converged,
    termination (of the kept start, ``docs/statuses.md``): ``converged`` (the witnesses stopped
    changing: a fixed point of the alternation), ``early_stopped`` (an inexact subproblem
    raised the objective; the previous iterate is kept) or ``iteration_limit`` (``max_iter``).
    """
    from threadpoolctl import threadpool_limits

    # small BLAS calls (kernel rows, Cholesky of a few hundred rows) lose to thread start-up and
    # oversubscription on a shared machine: run the alternation single-threaded
    with threadpool_limits(1):
        return _misvm_alternate(K, bags, C, class_weight, slack, init, restarts, max_iter, tol, random_state,
                                init_scores, solver, X)


def _misvm_alternate(K, bags, C, class_weight, slack, init, restarts, max_iter, tol, random_state, init_scores,
                     solver, X):
    if init not in INITS:
        raise InvalidParameterError(f"init: expected one of {INITS}, got {init!r}")
    if solver not in SOLVERS:
        raise InvalidParameterError(f"solver: expected one of {SOLVERS}, got {solver!r}")
    if not (isinstance(restarts, (int, np.integer)) and restarts >= 1):
        raise InvalidParameterError(f"restarts: expected an integer >= 1, got {restarts!r}")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise InvalidParameterError(f"max_iter: expected an integer >= 1, got {max_iter!r}")
    rng = np.random.default_rng(random_state)
    y, groups, caps = slack_structure(bags, C, class_weight, slack)
    ptr = bags.bag_ptr
    pos_bags = np.flatnonzero(bags.y == 1)
    negi = y < 0
    n_eff = int(negi.sum()) + pos_bags.size
    if solver == "auto":
        solver = "ipm" if n_eff <= 2500 else ("libsvm" if slack == "instance" else "smo")
    if solver == "libsvm" and slack != "instance":
        raise InvalidParameterError("solver=libsvm solves the instance-slack form only; use slack=instance, "
                                    "or solver=smo|ipm for the bag-slack form")
    if K is None and (X is None or solver == "ipm"):
        if X is None:
            raise InvalidParameterError("misvm_alternate: pass a kernel matrix K or features X")
        K = X @ X.T            # the IPM needs the matrix; SMO and libsvm use X directly
    sub = _Subproblem(K, y, groups, caps, solver, tol, X=X)
    t0 = time.perf_counter()
    history = []
    best = None
    for r in range(restarts):
        if r == 0 and init_scores is not None:
            scores0 = np.asarray(init_scores, dtype=float)
        elif r == 0 and init == "centroid":
            scores0 = _centroid_scores(K, bags, C, class_weight, X=X)
        elif r == 0 and init == "sil":
            scores0 = _sil_witnesses(K, bags, C, class_weight, rng, X=X)
        elif r == 0 and init == "first":
            scores0 = -np.arange(bags.n_instances, dtype=float)
        else:
            scores0 = rng.random(bags.n_instances)
        wit = segment_argmax(scores0, ptr)[pos_bags]
        act = negi.copy()
        act[wit] = True
        sub.start(act)
        prev = None
        converged = False
        term = "iteration_limit"
        for t in range(max_iter):
            alpha, b, f, P, norm2, info = sub.solve()
            Phi = mi_objective(bags, f, norm2, C, class_weight, slack)
            if prev is not None and P > prev["objective"] + 1e-9 * max(1.0, abs(prev["objective"])):
                # an inexact subproblem made things worse: keep the previous iterate and stop
                history.append({"start": r, "iteration": t, "objective": P, "accepted": False,
                                "changed": 0, "solver_iterations": info["iterations"]})
                term = "early_stopped"
                break
            new = segment_argmax(f, ptr)[pos_bags]
            keep = f[wit] >= f[new] - 1e-12          # ties: keep the current witness
            new = np.where(keep, wit, new)
            changed = new != wit
            history.append({"start": r, "iteration": t, "objective": P, "mi_objective": Phi, "accepted": True,
                            "dual": info["dual"], "gap": max(0.0, P - info["dual"]),
                            "changed": int(changed.sum()), "solver_iterations": info["iterations"],
                            "seconds": time.perf_counter() - t0})
            prev = {"objective": P, "alpha": alpha.copy(), "b": b, "witnesses": wit.copy()}
            if not changed.any():
                converged = True
                term = "converged"
                break
            sub.move(wit[changed], new[changed])
            wit = new
        if best is None or prev["objective"] < best["objective"]:
            best = dict(prev, start=r, converged=converged, termination=term)
    return {"alpha": best["alpha"], "b": best["b"], "y": y, "witnesses": best["witnesses"],
            "objective": best["objective"], "history": history, "best_start": best["start"],
            "converged": best["converged"], "termination": best["termination"], "iterations": len(history), "seconds": time.perf_counter() - t0,
            "pos_bags": pos_bags, "solver": solver}


def mi_svm_alternate(K, bags, C=1.0, class_weight="balanced", max_iter=50, tol=1e-3):
    """Andrews' mi-SVM: alternate an instance SVM (libsvm) and the label imputation.

    The imputation minimises the weighted hinge loss with the current per-class weights, so
    with ``class_weight='none'`` the objective never increases; with ``'balanced'`` the
    weights are recomputed from the new label counts at the next step (as scikit-learn's
    ``class_weight='balanced'``), which can break exact monotonicity.

    Returns
    -------
    dict: coef (dual coefficients α_i y_i over all instances), b, labels, objective, history,
    iterations, converged, termination (``converged``: the imputed labels stopped changing;
    ``iteration_limit``: ``max_iter`` alternations).
    """
    from sklearn.svm import SVC

    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise InvalidParameterError(f"max_iter: expected an integer >= 1, got {max_iter!r}")
    ptr = bags.bag_ptr
    posi = bags.instance_bag_y == 1
    labels = np.where(posi, 1, -1)
    n = labels.size
    history = []
    t0 = time.perf_counter()

    def weights(lab):
        npos, nneg = max(int((lab > 0).sum()), 1), max(int((lab < 0).sum()), 1)
        if class_weight == "balanced":
            return np.where(lab > 0, n / (2.0 * npos), n / (2.0 * nneg))
        if class_weight in ("none", None):
            return np.ones(n)
        raise InvalidParameterError(f"class_weight: mi-svm accepts 'balanced' or 'none', got {class_weight!r}")

    best = None
    for t in range(max_iter):
        c = C * weights(labels)
        clf = SVC(C=1.0, kernel="precomputed", tol=tol).fit(K, labels, sample_weight=c)
        coef = np.zeros(n)
        coef[clf.support_] = clf.dual_coef_[0]
        b = float(clf.intercept_[0])
        f = K @ coef + b
        norm2 = float(coef @ (K @ coef))
        obj = 0.5 * norm2 + float(c @ np.maximum(0.0, 1.0 - labels * f))
        history.append({"iteration": t, "objective": obj, "seconds": time.perf_counter() - t0})
        best = {"coef": coef, "b": b, "labels": labels.copy(), "objective": obj}
        # imputation minimising the weighted hinge loss (weights of the current label counts)
        wp = c[labels > 0].max() if (labels > 0).any() else C
        wn = c[labels < 0].max() if (labels < 0).any() else C
        cost_pos = wp * np.maximum(0.0, 1.0 - f)
        cost_neg = wn * np.maximum(0.0, 1.0 + f)
        new = np.where(posi & (cost_pos <= cost_neg), 1, -1)
        # every positive bag keeps at least one positive instance: its highest score
        has = segment_max((new > 0).astype(float), ptr) > 0
        arg = segment_argmax(f, ptr)
        fix = (bags.y == 1) & ~has
        new[arg[fix]] = 1
        history[-1]["changed"] = int(np.sum(new != labels))
        if np.array_equal(new, labels):
            break
        labels = new
    return {**best, "history": history, "iterations": len(history), "seconds": time.perf_counter() - t0,
            "converged": history[-1]["changed"] == 0,
            "termination": "converged" if history[-1]["changed"] == 0 else "iteration_limit"}


__all__ = ["misvm_alternate", "mi_svm_alternate", "slack_structure", "slack_costs", "mi_objective",
           "intercept_eq4", "best_intercept"]
