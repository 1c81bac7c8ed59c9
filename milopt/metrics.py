"""Evaluation: bag- and instance-level metrics, stratified K-fold over bags, fold-wise scaling."""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError

__all__ = ["bag_metrics", "instance_metrics", "degenerate", "evaluate", "bag_folds", "standardize",
           "cross_validate", "fold_warnings", "balanced_threshold", "shrunk_threshold"]


def _auc(y_true, scores) -> float:
    y_true = np.asarray(y_true)
    if np.unique(y_true).size < 2:
        return float("nan")
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 2:  # multi-class scores
        return float(roc_auc_score(y_true, _softmax(scores), multi_class="ovr"))
    return float(roc_auc_score(y_true, scores))


def _softmax(S):
    Z = S - S.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def bag_metrics(y_true, y_pred, scores=None, prefix="bag_") -> dict:
    """Accuracy, AUC (needs scores), F1 (binary; macro for K > 2), balanced accuracy."""
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    binary = np.unique(np.concatenate([y_true, y_pred])).size <= 2 and set(np.unique(y_true)) <= {0, 1}
    out = {
        f"{prefix}accuracy": float(accuracy_score(y_true, y_pred)),
        f"{prefix}auc": _auc(y_true, scores) if scores is not None else float("nan"),
        f"{prefix}f1": float(f1_score(y_true, y_pred, average="binary" if binary else "macro", zero_division=0)),
        f"{prefix}balanced_accuracy": float(balanced_accuracy_score(y_true, y_pred)),
    }
    return out


def instance_metrics(instance_y, y_pred, scores=None) -> dict:
    """:func:`bag_metrics` of instance labels and predictions, keys prefixed ``instance_``."""
    return bag_metrics(instance_y, y_pred, scores, prefix="instance_")


def degenerate(pred, scores=None, classes=None, unit: str = "bag") -> str | None:
    """Why a model's predictions on a set of bags carry no information, or None.

    ``"every bag predicted positive (19 bags)"`` when ``pred`` holds one class only (two bags
    or more), ``"all bag scores are equal (19 bags)"`` when ``scores`` (one per bag, or one
    row per bag) do not vary.  ``classes`` (the estimator's ``classes_``) names the class:
    the last of two classes is "positive", the first "negative".  ``unit`` names what is
    predicted ("bag"; "instance" for instance-level detectors)."""
    pred = np.asarray(pred)
    n = pred.shape[0]
    if n < 2:
        return None
    if scores is not None:
        S = np.asarray(scores, dtype=float).reshape(n, -1)
        if np.all(np.isfinite(S)) and np.all(np.ptp(S, axis=0) <= 1e-12 * max(1.0, float(np.abs(S).max()))):
            return f"all {unit} scores are equal ({n} {unit}s)"
    values = np.unique(pred)
    if values.size != 1:
        return None
    v = values[0]
    cl = np.asarray(classes) if classes is not None else np.array([0, 1])
    if cl.size == 2 and v == cl[-1]:
        name = "positive"
    elif cl.size == 2 and v == cl[0]:
        name = "negative"
    else:
        name = f"class {v}"
    return f"every {unit} predicted {name} ({n} {unit}s)"


def _scored(scores, y):
    """The finite ``scores`` with their labels ``y`` (0/1), and the numbers of positive and
    negative bags among them."""
    s = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(y).ravel().astype(int)
    ok = np.isfinite(s)
    s, y = s[ok], y[ok]
    return s, y, int(np.sum(y == 1)), int(np.sum(y == 0))


def _chance_margin(P: int, N: int) -> float:
    r""":math:`1.645\,\sigma_0`: how far the bag AUC of :math:`P` positive and :math:`N` negative
    bags must lie from ½ to differ from chance by the one-sided 5 % test of the Mann-Whitney
    statistic, whose standard deviation under "no ranking" is
    :math:`\sigma_0 = \sqrt{(P + N + 1)/(12 P N)}`."""
    return 1.645 * float(np.sqrt((P + N + 1) / (12.0 * P * N)))


def balanced_threshold(scores, y, natural: float = 0.0) -> tuple[float, float]:
    r"""The bag threshold :math:`t` that maximises the balanced accuracy of the rule
    "positive when score > t" on ``scores`` with labels ``y`` (0/1); returns ``(t, balanced accuracy)``.

    The candidates are ``natural`` and the midpoints between consecutive distinct scores (and
    one point below and one above all of them).  For the rule at :math:`t`, with :math:`P`
    positive and :math:`N` negative bags, the balanced accuracy is
    :math:`\tfrac12\,(\#\{i: y_i = 1,\ s_i > t\}/P + \#\{i: y_i = 0,\ s_i \le t\}/N)`,
    evaluated for all candidates at once from cumulative counts over the sorted scores.  Ties:
    ``natural`` is kept when it reaches the maximum (the model's own rule is changed only when
    another threshold does strictly better), else the maximiser nearest to ``natural``."""
    s, y, P, N = _scored(scores, y)
    if P == 0 or N == 0:
        return float(natural), float("nan")
    u = np.unique(s)
    cand = np.concatenate(([natural, u[0] - 1.0], 0.5 * (u[:-1] + u[1:]), [u[-1] + 1.0]))
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    # number of bags with score <= t, per candidate; then positives / negatives at or below t
    below = np.searchsorted(ss, cand, side="right")
    pos_below = np.concatenate(([0], np.cumsum(yy)))[below]
    neg_below = below - pos_below
    ba = 0.5 * ((P - pos_below) / P + neg_below / N)
    best = ba.max()
    if ba[0] >= best - 1e-12:
        return float(natural), float(ba[0])
    top = np.flatnonzero(ba >= best - 1e-12)
    i = top[np.argmin(np.abs(cand[top] - natural))]
    return float(cand[i]), float(ba[i])


def shrunk_threshold(scores, y, natural: float = 0.0) -> tuple[float, str]:
    r"""The bag threshold of the ``auto`` decision rule on ``scores`` with labels ``y`` (0/1):
    the threshold of best balanced accuracy (:func:`balanced_threshold`) shrunk toward the
    middle of the two classes; returns ``(t, how)``.

    With :math:`m_0` and :math:`m_1` the median scores of the negative and the positive bags:

    * ``how='midpoint'``, :math:`t = (m_0 + m_1)/2`, when the scores do not rank the positive
      bags above the negative ones beyond chance: bag AUC at most
      :math:`\tfrac12 + 1.645\,\sigma_0`, the one-sided 5 % test of the Mann-Whitney statistic
      (:math:`\sigma_0 = \sqrt{(P + N + 1)/(12 P N)}` for :math:`P` positive and :math:`N`
      negative bags), or :math:`m_1 \le m_0`.  On such scores every cut reaches about the same
      balanced accuracy, and its maximiser is the noise of a few bags: on 20 scores without
      signal it often lies beyond all but a few of them, and then calls every new bag one class.
      The middle of the classes is the cut that is wrong least often for either.
    * ``how='best'``, :math:`t` of :func:`balanced_threshold` (``natural`` kept when it reaches
      the maximum), when it lies in :math:`[m_0, m_1]`;
    * ``how='clipped'``, the nearer of :math:`m_0`, :math:`m_1` otherwise: the cut never lets
      more than half of one class's scores fall on the wrong side.  A maximiser beyond a class
      median trades that class's recall for a few bags of the other, a gain on these scores that
      new bags do not repeat.

    Shrinking a noisy maximiser toward a stable one is the reasoning of regularised
    estimators; the equal-variance normal model, whose balanced-accuracy optimum is the
    midpoint of the class centres, is the limit the clip moves toward."""
    s, y, P, N = _scored(scores, y)
    if P == 0 or N == 0:
        return float(natural), "best"
    m0, m1 = float(np.median(s[y == 0])), float(np.median(s[y == 1]))
    if not (m1 > m0 and _auc(y, s) > 0.5 + _chance_margin(P, N)):
        return 0.5 * (m0 + m1), "midpoint"
    t = balanced_threshold(s, y, natural)[0]
    if m0 <= t <= m1:
        return t, "best"
    return float(np.clip(t, m0, m1)), "clipped"


def evaluate(estimator, bags: Bags, warnings: list | None = None) -> dict:
    """Bag metrics of a fitted estimator on ``bags`` (plus instance metrics when labels exist).

    ``warnings``: a list to which the finding of :func:`degenerate` on these bags is appended
    (the model predicts one class for every bag, or gives every bag the same score)."""
    scores = estimator.decision_function(bags)
    pred = np.asarray(estimator.predict(bags))
    classes = getattr(estimator, "classes_", None)
    if warnings is not None:
        why = degenerate(pred, scores, classes)
        if why:
            warnings.append(why)
    if classes is not None and len(classes) and not np.array_equal(np.asarray(classes), np.arange(len(classes))):
        pred = np.searchsorted(np.asarray(classes), pred)  # the user's labels (e.g. -1/+1) -> 0..K-1 of bags.y
    out = bag_metrics(bags.y, pred, scores)
    if bags.instance_y is not None and hasattr(estimator, "predict_instances"):
        try:
            iscore = estimator.predict_instances(bags)
        except NotImplementedError:
            return out
        iscore = np.asarray(iscore)
        if iscore.ndim == 1:
            thr = getattr(estimator, "instance_threshold_", 0.0)
            out.update(instance_metrics(bags.instance_y, (iscore > thr).astype(int), iscore))
    return out


def bag_folds(bags: Bags, k: int = 10, seed: int = 0, shuffle: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Stratified K-fold over bags: yields (train_bag_ids, test_bag_ids)."""
    counts = np.bincount(bags.y)
    if k < 2:
        raise InvalidDataError(f"cv: need at least 2 folds, got {k}")
    if counts[counts > 0].min() < k:
        raise InvalidDataError(f"cv: {k} folds but the smallest class has only {counts[counts > 0].min()} bags; use fewer folds")
    skf = StratifiedKFold(n_splits=k, shuffle=shuffle, random_state=seed if shuffle else None)
    yield from skf.split(np.zeros(bags.n_bags), bags.y)


def standardize(train: Bags, *others: Bags):
    """Standardise with the training instances' statistics only and apply them to every set
    (:func:`milopt.numerics.standardize`; constant features get scale 1)."""
    from milopt.numerics import standardize as _standardize

    return _standardize(train, *others)


def cross_validate(estimator, bags: Bags, k: int = 10, seed: int = 0, scale: bool = True) -> dict:
    """K-fold CV over bags; returns {'folds': [per-fold dict], 'mean': {...}}.

    Each fold: clone, (optionally) standardise with training statistics, fit, evaluate on the
    held-out bags; records fit_seconds.  A fold whose model predicts one class for every
    held-out bag (or gives them all one score) has a ``warnings`` list saying so (and the
    result a ``warnings`` list naming the folds); see :func:`degenerate`.
    """
    folds = []
    for f, (tr, te) in enumerate(bag_folds(bags, k, seed)):
        Btr, Bte = bags.subset(tr), bags.subset(te)
        if scale:
            Btr, Bte = standardize(Btr, Bte)
        est = clone(estimator)
        t0 = time.perf_counter()
        est.fit(Btr)
        fit_s = time.perf_counter() - t0
        found = []
        row = {"fold": f, **evaluate(est, Bte, warnings=found), "fit_seconds": fit_s,
               "train_bags": int(tr.size), "test_bags": int(te.size)}
        if found:
            row["warnings"] = [f"held-out bags: {w}" for w in found]
        extra = getattr(est, "fit_info_", None)
        if extra:
            row.update({k2: v for k2, v in extra.items() if isinstance(v, (int, float, str))})
        folds.append(row)
    keys = [k2 for k2, v in folds[0].items() if isinstance(v, (int, float)) and k2 != "fold"]
    mean = {k2: float(np.nanmean([r[k2] for r in folds if isinstance(r.get(k2), (int, float))])) for k2 in keys}
    out = {"folds": folds, "mean": mean}
    warn = fold_warnings(folds)
    if warn:
        out["warnings"] = warn
    return out


def fold_warnings(folds) -> list[str]:
    """One line per distinct warning of the ``warnings`` lists of cross-validation rows, naming
    the folds it occurred in ("degenerate model in 5 of 5 folds (0, 1, 2, 3, 4): held-out bags:
    every bag predicted positive"); the counts of the individual folds are dropped."""
    import re

    seen: dict[str, list] = {}
    for r in folds:
        for w in r.get("warnings") or ():
            key = re.sub(r" \(\d+ \w+\)$", "", w)
            seen.setdefault(key, []).append(r.get("fold"))
    n = len(folds)
    return [f"degenerate model in {len(fs)} of {n} folds ({', '.join(str(f) for f in fs)}): {key}"
            for key, fs in seen.items()]
