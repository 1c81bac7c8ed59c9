r"""Pyomo-free numerics shared by the models, the algorithms and the estimators.

Only numpy at import time (scikit-learn is imported inside :func:`sil_start`), so that a
builder, a native algorithm and an estimator compute the same quantity with the same code.

* :func:`standardize_stats` / :func:`standardize`: feature standardisation with training
  statistics (the scaling ``milopt fit`` applies per training fold, ``milopt solve`` /
  ``export`` on the whole data, and :class:`milopt.estimators.BagScaler` inside a pipeline).
* :func:`bag_costs`, :func:`instance_cost`, :func:`misvm_objective`: the MI-SVM slack costs
  and objective of Kent & Yu (eq. 5) / Andrews et al. (2002).
* :func:`sil_start`: the single-instance linear SVM used as a cheap feasible start.
"""
from __future__ import annotations

import numpy as np

from milopt.errors import InvalidParameterError, positive_number
from milopt.segments import segment_max

CLASS_WEIGHTS = ("kent-yu", "balanced", "none")


# ----------------------------------------------------------------- scaling
def standardize_stats(X: np.ndarray):
    """(mean, scale) of the columns of ``X``; a constant column gets scale 1.

    The same convention as scikit-learn's ``StandardScaler`` (population standard deviation;
    a scale below ``10 * eps * max(1, |mean|)`` is replaced by 1)."""
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    scale = np.sqrt(((X - mean) ** 2).mean(axis=0))
    tiny = scale < 10 * np.finfo(float).eps * np.maximum(1.0, np.abs(mean))
    return mean, np.where(tiny, 1.0, scale)


def standardize(train, *others):
    """Standardise ``train`` (a :class:`~milopt.data.Bags`) with its own statistics and apply
    them to every set in ``others``; returns the standardised bags (a tuple when ``others``).

    Values so large that a column's variance or the scaled values are not finite floats raise
    :class:`~milopt.errors.InvalidDataError` naming the column."""
    from milopt.errors import InvalidDataError

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mean, scale = standardize_stats(train.X)
        bad = ~(np.isfinite(mean) & np.isfinite(scale))
        if bad.any():
            c = int(np.flatnonzero(bad)[0])
            big = float(np.max(np.abs(train.X[:, c])))
            raise InvalidDataError(
                f"feature column {c}: values up to {big:.3g} overflow while standardising (its variance is not a "
                "finite float); rescale that column (e.g. to units near 1) or turn scaling off (--set scale=false)")
        Xs = [(b.X - mean) / scale for b in (train, *others)]
    for k, Z in enumerate(Xs):
        if not np.all(np.isfinite(Z)):
            c = int(np.argwhere(~np.isfinite(Z))[0][1])
            raise InvalidDataError(
                f"feature column {c}: standardising with the training statistics overflows on the "
                f"{'training' if k == 0 else 'held-out'} bags (values far outside the training range); rescale "
                "that column or turn scaling off (--set scale=false)")
    res = [b.with_X(Z) for b, Z in zip((train, *others), Xs)]
    return res if others else res[0]


# ----------------------------------------------------------------- MI-SVM costs
def _check_class_weight(class_weight) -> str:
    if class_weight in (None, "none", "None", False):
        return "none"
    if class_weight in ("kent-yu", "balanced"):
        return class_weight
    raise InvalidParameterError(f"class_weight: expected 'kent-yu', 'balanced' or 'none', got {class_weight!r}")


def bag_costs(bags, C: float, class_weight="kent-yu") -> np.ndarray:
    r"""Per-bag slack cost :math:`C_I` of the MI-SVM (Kent & Yu, eq. 5; mildsvm's weights).

    ``kent-yu``: :math:`C_I = C` for positive bags, :math:`C\,n^+_{\text{bags}} / n^-_{\text{inst}}`
    for negative bags; ``balanced``: :math:`C\,B / (2 B_{Y_I})`; ``none``: :math:`C`.
    """
    C = positive_number("C", C)
    cw = _check_class_weight(class_weight)
    pos = bags.y == 1
    n_pos = int(pos.sum())
    if cw == "none":
        return np.full(bags.n_bags, C)
    if cw == "kent-yu":
        n_neg_inst = int(np.sum(~pos[bags.bag_index]))
        return np.where(pos, C, C * n_pos / max(n_neg_inst, 1))
    nb = bags.n_bags
    return np.where(pos, C * nb / (2 * max(n_pos, 1)), C * nb / (2 * max(nb - n_pos, 1)))


def instance_cost(bags, C: float, class_weight="kent-yu") -> float:
    """Cost of one negative-instance slack (the instance-slack form of Andrews et al.)."""
    C = positive_number("C", C)
    cw = _check_class_weight(class_weight)
    pos = bags.y == 1
    n_pos = int(pos.sum())
    n_neg_inst = int(np.sum(~pos[bags.bag_index]))
    if cw == "kent-yu":
        return C * n_pos / max(n_neg_inst, 1)
    if cw == "balanced":
        return C * (n_pos + n_neg_inst) / (2.0 * max(n_neg_inst, 1))
    return C


def bag_slacks(bags, scores: np.ndarray) -> np.ndarray:
    """Optimal bag slacks for instance scores: :math:`\\max(0, 1 - \\max_{i\\in I} s_i)` for a
    positive bag, :math:`\\max(0, 1 + \\max_{i\\in I} s_i)` for a negative bag."""
    mx = segment_max(np.asarray(scores, dtype=float), bags.bag_ptr)
    return np.where(bags.y == 1, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + mx))


def misvm_objective(bags, w, b, C=1.0, class_weight="kent-yu", norm: str = "l2") -> float:
    r"""MI-SVM objective of :math:`(w, b)` with optimal bag slacks:
    :math:`\tfrac12\lVert w\rVert^2 + \sum_I C_I \xi_I` (``norm="l2"``) or
    :math:`\lVert w\rVert_1 + \sum_I C_I \xi_I` (``norm="l1"``)."""
    w = np.asarray(w, dtype=float)
    xi = bag_slacks(bags, bags.X @ w + b)
    reg = float(np.abs(w).sum()) if str(norm).lower() == "l1" else float(0.5 * np.dot(w, w))
    return reg + float(np.dot(bag_costs(bags, C, class_weight), xi))


# ----------------------------------------------------------------- starts
def sil_start(bags, C: float = 1.0, random_state=0):
    """Cheap feasible point (w, b): a linear SVM on instances with bag labels copied
    (liblinear, class-balanced)."""
    from sklearn.svm import LinearSVC

    y = bags.instance_bag_y
    clf = LinearSVC(C=C, loss="squared_hinge", dual=False, max_iter=2000, random_state=random_state,
                    class_weight="balanced").fit(bags.X, y)
    return clf.coef_.ravel().copy(), float(clf.intercept_[0])
