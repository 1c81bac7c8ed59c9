r"""Alternating heuristics for MI-SVM and mi-SVM (Andrews et al. 2002; Kent & Yu Algorithm 1).

**MI-SVM** (:func:`misvm_alternate`): Andrews et al.'s alternation between the convex SVM of a
witness selection and the selection of the highest-scoring instance per positive bag; its
mathematics and code live, Pyomo-free, in :mod:`milopt.mil.alternation` (re-exported here).

**mi-SVM** (:func:`mi_svm_alternate`).  Instance labels of positive bags are unknowns:
alternate an instance-level SVM (libsvm through scikit-learn, precomputed kernel, per-instance
costs as sample weights) with the label imputation that minimises the weighted hinge loss
for the current (w, b), forcing the highest-scoring instance of a positive bag positive when
none is; stop when the labels stop changing.

The MI-SVM alternation itself, its starts and subproblem solvers live in
:mod:`milopt.mil.alternation`, and the slack structure and intercept rules in
:mod:`milopt.numerics`; this module re-exports them under their historical names.
"""
from __future__ import annotations

import time

import numpy as np

from milopt.errors import InvalidParameterError
from milopt.mil.alternation import INITS, SOLVERS, misvm_alternate
from milopt.numerics import SLACKS, best_intercept, intercept_eq4, objective_from_scores, slack_costs, slack_structure
from milopt.segments import segment_argmax, segment_max


def mi_objective(bags, scores, norm2, C=1.0, class_weight="kent-yu", slack="bag") -> float:
    r"""MI-SVM objective :math:`\Phi(w, b) = \tfrac12\lVert w\rVert^2` + slack costs with the best witness
    per positive bag, for instance scores ``scores`` and :math:`\lVert w\rVert^2` = ``norm2``:
    :func:`milopt.numerics.objective_from_scores` with the regulariser ½ ``norm2``."""
    return objective_from_scores(bags, scores, 0.5 * norm2, C, class_weight, slack)


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
           "intercept_eq4", "best_intercept", "INITS", "SOLVERS", "SLACKS"]
