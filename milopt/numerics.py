r"""Pyomo-free numerics shared by the models, the algorithms and the estimators.

Only numpy at import time (scikit-learn is imported inside :func:`sil_start`), so that a
builder, a native algorithm and an estimator compute the same quantity with the same code.

* :func:`standardize_stats` / :func:`standardize`: feature standardisation with training
  statistics (the scaling ``milopt fit`` applies per training fold, ``milopt solve`` /
  ``export`` on the whole data, and :class:`milopt.estimators.api.BagScaler` inside a pipeline);
  :func:`is_standardized`: whether bags already are, by their own statistics.
* :func:`bag_costs`, :func:`instance_cost`, :func:`slack_costs`, :func:`slack_structure`: the
  MI-SVM slack costs of Kent & Yu (eq. 5) / Andrews et al. (2002) and the slack groups of the
  effective-set dual;
* :func:`bag_slacks`, :func:`misvm_objective`, :func:`objective_from_scores`: the MI-SVM
  objective (the one definition used by the models, the alternation and the estimators);
* :func:`intercept_eq4`, :func:`best_intercept`: the intercept of a dual solution (Kent & Yu
  eq. 4, or the minimiser of the primal loss over b).
* :func:`sil_start`: the single-instance linear SVM used as a cheap feasible start.
"""
from __future__ import annotations

import numpy as np

from milopt.errors import InvalidParameterError, positive_number
from milopt.segments import segment_max

__all__ = ["standardize", "standardize_stats", "is_standardized", "bag_costs", "instance_cost", "bag_slacks",
           "slack_costs", "slack_structure", "SLACKS", "objective_from_scores", "misvm_objective", "intercept_eq4",
           "best_intercept", "sil_start"]

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


def is_standardized(X, tol: float = 1e-6) -> bool:
    """Whether the columns of ``X`` have mean 0 and scale 1 to ``tol`` by :func:`standardize_stats`
    (a constant column counts: its scale is 1 by convention), i.e. whether ``X`` was standardised
    with its own statistics, as :func:`standardize` leaves its training set.

    The estimators' inner folds read it (``milopt.estimators.base.MILClassifier._inner_folds``):
    bags standardised with their own statistics have had every bag, the held-out ones of an inner
    fold included, in those statistics, and the inner fold then standardises its own training
    part again, as the final model's training bags were."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0:
        return False
    mean, scale = standardize_stats(X)
    return bool(np.all(np.abs(mean) <= tol) and np.all(np.abs(scale - 1.0) <= tol))


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


def slack_costs(bags, C: float, class_weight="kent-yu"):
    """(cost per bag :math:`C_I` (:func:`bag_costs`), cost of one negative-instance slack
    (:func:`instance_cost`))."""
    return bag_costs(bags, C, class_weight), instance_cost(bags, C, class_weight)


#: slack forms of MI-SVM: one slack per negative bag (Kent & Yu) or per negative instance (Andrews)
SLACKS = ("bag", "instance")


def slack_structure(bags, C=1.0, class_weight="kent-yu", slack="bag"):
    """Labels ±1, contiguous slack groups and group caps for the effective-set dual.

    A positive bag's group is the bag (its witness alone is in the effective set); a negative
    bag is one group (``slack="bag"``, Kent & Yu) or each of its instances is
    (``slack="instance"``, Andrews et al.), with caps :func:`bag_costs` / :func:`instance_cost`.

    Returns
    -------
    y : (n,) ±1 bag label of every instance
    groups : (n,) group id
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


def objective_from_scores(bags, scores, regulariser: float, C=1.0, class_weight="kent-yu", slack="bag") -> float:
    r"""MI-SVM objective for instance scores :math:`s_i = w^\top \phi(x_i) + b` and the value of the
    regulariser (:math:`\tfrac12\lVert w\rVert^2` or :math:`\lVert w\rVert_1`), the slacks at their
    optimum for those scores (the best witness of every positive bag):

    ``slack="bag"``: :math:`r + \sum_I C_I \xi_I` with :math:`\xi_I` of :func:`bag_slacks`;
    ``slack="instance"``: :math:`r + \sum_{Y_I=+1} C_I [1 - \max_{i\in I} s_i]_+
    + c \sum_{i:\,Y_{I(i)}=-1} [1 + s_i]_+` with :math:`c` of :func:`instance_cost`.
    """
    scores = np.asarray(scores, dtype=float)
    costs_bag, c_inst = slack_costs(bags, C, class_weight)
    if slack == "bag":
        return float(regulariser) + float(costs_bag @ bag_slacks(bags, scores))
    if slack != "instance":
        raise InvalidParameterError(f"slack: expected 'bag' or 'instance', got {slack!r}")
    pos = bags.y == 1
    mx = segment_max(scores, bags.bag_ptr)
    negi = bags.instance_bag_y == 0
    loss_pos = costs_bag[pos] @ np.maximum(0.0, 1.0 - mx[pos])
    loss_neg = c_inst * np.maximum(0.0, 1.0 + scores[negi]).sum()
    return float(regulariser + loss_pos + loss_neg)


def misvm_objective(bags, w, b, C=1.0, class_weight="kent-yu", norm: str = "l2") -> float:
    r"""MI-SVM objective of a linear :math:`(w, b)` with optimal bag slacks:
    :math:`\tfrac12\lVert w\rVert^2 + \sum_I C_I \xi_I` (``norm="l2"``) or
    :math:`\lVert w\rVert_1 + \sum_I C_I \xi_I` (``norm="l1"``) (:func:`objective_from_scores`)."""
    w = np.asarray(w, dtype=float)
    reg = float(np.abs(w).sum()) if str(norm).lower() == "l1" else float(0.5 * np.dot(w, w))
    return objective_from_scores(bags, bags.X @ w + b, reg, C, class_weight, "bag")


# ----------------------------------------------------------------- intercept of a dual solution
def intercept_eq4(raw, y, alpha, groups, caps, active, fallback=0.0, rel=1e-6):
    r"""Kent & Yu eq. 4: :math:`b = y_i - \sum_j \alpha_j y_j K_{ij}` (``raw`` holds the sums)
    averaged over the free indices (:math:`0 < \alpha_i` and the group of *i* below its cap);
    without a free index ``fallback``, or when that is None :func:`best_intercept`."""
    gsum = np.bincount(groups, weights=np.where(active, alpha, 0.0), minlength=caps.size)
    open_ = (caps - gsum > rel * caps)[groups]
    free = active & (alpha > rel * caps[groups]) & open_
    if free.any():
        return float(np.mean(y[free] - raw[free]))
    if fallback is not None:
        return float(fallback)
    return best_intercept(raw, y, groups, caps, active)


def best_intercept(raw, y, groups, caps, active, chunk=256):
    r"""The b minimising :math:`\sum_g C_g \max_{i\in g} [1 - y_i(raw_i + b)]_+` (a convex
    piecewise-linear function of b, minimised at one of its breakpoints :math:`b = y_i - raw_i`):
    the intercept when no index is free."""
    idx = np.flatnonzero(active)
    cand = np.unique(y[idx] - raw[idx])
    gid = np.unique(groups[idx], return_inverse=True)[1]
    ng = gid.max() + 1
    order = np.argsort(gid, kind="stable")
    ptr = np.concatenate(([0], np.cumsum(np.bincount(gid, minlength=ng))))
    gcaps = caps[np.unique(groups[idx])]
    best, best_b = np.inf, 0.0
    for s in range(0, cand.size, chunk):
        bb = cand[s:s + chunk]
        loss = np.maximum(0.0, 1.0 - y[idx][None, :] * (raw[idx][None, :] + bb[:, None]))
        xi = np.maximum.reduceat(loss[:, order], ptr[:-1], axis=1)
        val = xi @ gcaps
        k = int(np.argmin(val))
        if val[k] < best:
            best, best_b = float(val[k]), float(bb[k])
    return best_b


# ----------------------------------------------------------------- starts
def sil_start(bags, C: float = 1.0, random_state=0):
    """Cheap feasible point (w, b): a linear SVM on instances with bag labels copied
    (liblinear, class-balanced)."""
    from sklearn.svm import LinearSVC

    y = bags.instance_bag_y
    clf = LinearSVC(C=C, loss="squared_hinge", dual=False, max_iter=2000, random_state=random_state,
                    class_weight="balanced").fit(bags.X, y)
    return clf.coef_.ravel().copy(), float(clf.intercept_[0])
