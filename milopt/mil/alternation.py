r"""The MI-SVM alternating heuristic (Andrews, Tsochantaridis & Hofmann, NIPS 2002; Kent & Yu,
Algorithm 1), Pyomo-free.

**MI-SVM** (:func:`misvm_alternate`; one step: :func:`next_witnesses`).  For a witness selection :math:`s` (one instance per
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
solved in the dual by :class:`~milopt.qp.svm_dcd.GroupSVMDual` on a kernel matrix
computed once; a witness change moves α to the new witness (warm start), so nothing is rebuilt.
Several starts (the first from the rule ``init``, the others random, seeded) are run and the
lowest objective kept.

Below the models: ``misvm-bigm`` and ``misvm-hull`` start from it (their incumbent, which also
tightens their big-M and bounds, :func:`milopt.mil.bigm.incumbent`); the MI-SVM estimators and
the branch and bound can use the same function.  The subproblem solvers are the QP kernels
:mod:`milopt.qp.svm_dcd` and :mod:`milopt.qp.svm_ipm` (numpy only).
"""
from __future__ import annotations

import time

import numpy as np

from milopt.qp.svm_dcd import GroupSVMDual
from milopt.errors import InvalidParameterError
from milopt.numerics import intercept_eq4, objective_from_scores, slack_costs, slack_structure
from milopt.segments import segment_argmax

__all__ = ["misvm_alternate", "next_witnesses", "INITS", "SOLVERS"]

#: rules for the witnesses of the first start
INITS = ("centroid", "sil", "first", "random")
#: subproblem solvers
SOLVERS = ("auto", "smo", "ipm", "libsvm")


def next_witnesses(scores, ptr, pos_bags, current):
    """One alternation step: in every positive bag the instance of largest score, keeping the
    current witness on ties (so that the alternation stops at a fixed point).

    Parameters
    ----------
    scores : (n,) instance scores of the current classifier
    ptr : bag offsets (:attr:`milopt.data.Bags.bag_ptr`)
    pos_bags : indices of the positive bags
    current : (len(pos_bags),) current witness rows
    """
    new = segment_argmax(scores, ptr)[pos_bags]
    keep = scores[current] >= scores[new] - 1e-12
    return np.where(keep, current, new)


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
                from milopt.qp.svm_ipm import solve_group_dual_ipm

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
    C, class_weight, slack : see :func:`milopt.numerics.slack_structure`.
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
        Subproblem solver: warm-started SMO (:mod:`~milopt.qp.svm_dcd`), dense
        interior point (:mod:`~milopt.qp.svm_ipm`), or libsvm (instance slack only).
        ``auto``: IPM up to 2,500 effective instances, SMO above.

    Returns
    -------
    dict: alpha (n,), b, y (±1 per instance), witnesses (row per positive bag), objective,
    history (list of dicts per alternation over all starts), iterations, best_start, converged,
    termination (of the kept start): ``converged`` (the witnesses stopped changing: a fixed point
    of the alternation), ``early_stopped`` (an inexact subproblem raised the objective; the
    previous iterate is kept) or ``iteration_limit`` (``max_iter``).
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
            Phi = objective_from_scores(bags, f, 0.5 * norm2, C, class_weight, slack)
            if prev is not None and P > prev["objective"] + 1e-9 * max(1.0, abs(prev["objective"])):
                # an inexact subproblem made things worse: keep the previous iterate and stop
                history.append({"start": r, "iteration": t, "objective": P, "accepted": False,
                                "changed": 0, "solver_iterations": info["iterations"]})
                term = "early_stopped"
                break
            new = next_witnesses(f, ptr, pos_bags, wit)
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
            "converged": best["converged"], "termination": best["termination"], "iterations": len(history),
            "seconds": time.perf_counter() - t0,
            "pos_bags": pos_bags, "solver": solver}
