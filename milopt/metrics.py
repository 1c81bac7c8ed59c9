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
    return bag_metrics(instance_y, y_pred, scores, prefix="instance_")


def evaluate(estimator, bags: Bags) -> dict:
    """Bag metrics of a fitted estimator on ``bags`` (plus instance metrics when labels exist)."""
    scores = estimator.decision_function(bags)
    pred = np.asarray(estimator.predict(bags))
    classes = getattr(estimator, "classes_", None)
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
    held-out bags; records fit_seconds.
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
        row = {"fold": f, **evaluate(est, Bte), "fit_seconds": fit_s,
               "train_bags": int(tr.size), "test_bags": int(te.size)}
        extra = getattr(est, "fit_info_", None)
        if extra:
            row.update({k2: v for k2, v in extra.items() if isinstance(v, (int, float, str))})
        folds.append(row)
    keys = [k2 for k2, v in folds[0].items() if isinstance(v, (int, float)) and k2 != "fold"]
    mean = {k2: float(np.nanmean([r[k2] for r in folds if isinstance(r.get(k2), (int, float))])) for k2 in keys}
    return {"folds": folds, "mean": mean}
