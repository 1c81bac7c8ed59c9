"""Shared estimator machinery following scikit-learn conventions.

* The constructor stores parameters only; ``fit(bags, y=None)`` validates and returns self.
* ``bags`` is a :class:`milopt.data.Bags` (labels taken from it when ``y`` is None) or a list
  of per-bag instance arrays with ``y``.  A ``Bags`` object is indexable by bag, so
  ``GridSearchCV(est, grid).fit(bags, bags.y)`` splits by bag.
* ``decision_function`` returns bag scores (max instance score for max-rule models);
  ``predict`` returns bag labels; ``predict_instances`` returns instance scores.
* Fitted attributes end in ``_``; ``random_state`` everywhere randomness is used.
* A fit whose model predicts one class for every training bag, or gives every training bag the
  same score, warns with :class:`milopt.errors.DegenerateModelWarning` and records the finding
  in ``degenerate_`` (None otherwise).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from milopt.data.bags import Bags, normalise_labels
from milopt.data.loading import check_both_classes
from milopt.errors import DegenerateModelWarning, InvalidDataError, InvalidParameterError
from milopt.segments import segment_max


def as_bags(X, y=None, *, fitting: bool = False) -> Bags:
    """Coerce estimator input to :class:`Bags`.

    Parameters
    ----------
    X : Bags or list of (n_j, d) arrays
    y : array-like of bag labels, optional
        Required for a list of arrays when fitting; for a Bags object it must agree with it
        (it replaces its labels when given).
    """
    if isinstance(X, Bags):
        if y is not None:
            y = normalise_labels(y)
            if y.shape[0] != X.n_bags:
                raise InvalidDataError(f"y: expected {X.n_bags} bag labels, got {y.shape[0]}")
            if not np.array_equal(y, X.y):
                X = X.with_labels(y)
        bags = X
    elif isinstance(X, (list, tuple)):
        if y is None:
            if fitting:
                raise InvalidDataError("y: bag labels are required to fit on a list of arrays")
            y = np.zeros(len(X), dtype=int)
        bags = Bags.from_arrays(X, y)
    else:
        raise InvalidDataError(
            f"bags: expected milopt.Bags or a list of per-bag (n_j, d) arrays, got {type(X).__name__}; "
            "build one with milopt.Bags.from_arrays(list_of_arrays, y)")
    if fitting:
        check_both_classes(bags, "training bags")
    return bags


def user_classes(y, bags: Bags) -> np.ndarray:
    """``classes_`` in the caller's labels: fitted on -1/+1 labels, predictions are -1/+1
    (scikit-learn's convention), although :class:`Bags` stores them as 0/1 internally."""
    internal = np.unique(bags.y)
    if y is None:
        return internal
    raw = np.unique(np.asarray(y).ravel())
    return raw if raw.size == internal.size else internal


def class_weights(y, class_weight) -> np.ndarray | None:
    r"""Per-bag weights of ``class_weight`` over bag labels ``y`` (None for ``'none'``).

    ``'balanced'`` is scikit-learn's ``class_weight='balanced'`` with bags as the samples:
    bag :math:`i` of class :math:`k` weighs :math:`n / (K\,n_k)` (:math:`n` bags, :math:`K`
    classes, :math:`n_k` bags of class :math:`k`), so that each class carries the same total
    weight; on a balanced set every weight is 1."""
    if class_weight in ("none", None):
        return None
    if class_weight != "balanced":
        raise InvalidParameterError(f"class_weight: expected 'balanced' or 'none', got {class_weight!r}")
    y = np.asarray(y)
    classes, inv, counts = np.unique(y, return_inverse=True, return_counts=True)
    return y.size / (classes.size * counts[inv].astype(float))


class MILClassifier(ClassifierMixin, BaseEstimator):
    """Base of binary max-rule MIL classifiers.

    Subclasses implement ``_fit(bags)`` and ``predict_instances(bags)`` (instance scores);
    a bag's score is the maximum of its instance scores and it is predicted positive when the
    score exceeds ``threshold_`` (0 for margin classifiers).
    """

    threshold_ = 0.0

    def fit(self, bags, y=None):
        bags = as_bags(bags, y, fitting=True)
        self.classes_ = user_classes(y, bags)
        self.n_features_in_ = bags.n_features
        self._fit(bags)
        self._check_degenerate(bags)
        return self

    def _check_degenerate(self, bags: Bags) -> None:
        """Warn (:class:`~milopt.errors.DegenerateModelWarning`) when the fitted model predicts
        one class for every training bag or gives them all one score; sets ``degenerate_``."""
        import warnings

        from milopt.metrics import degenerate

        why = degenerate(self.predict(bags), self.decision_function(bags), getattr(self, "classes_", None))
        self.degenerate_ = why
        if why:
            warnings.warn(f"{type(self).__name__}: degenerate model: {why} on the training bags; its predictions "
                          "carry no information about the bags (try class_weight='balanced' where the method has "
                          "it, another C, or tune C by nested CV)", DegenerateModelWarning, stacklevel=3)

    def _fit(self, bags: Bags):  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_input(self, bags) -> Bags:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        bags = as_bags(bags)
        if bags.n_features != self.n_features_in_:
            raise InvalidDataError(f"bags: have {bags.n_features} features, the model was fitted on {self.n_features_in_}")
        return bags

    def predict_instances(self, bags) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def decision_function(self, bags) -> np.ndarray:
        bags = self._check_input(bags)
        return segment_max(np.asarray(self.predict_instances(bags), dtype=float), bags.bag_ptr)

    def predict(self, bags) -> np.ndarray:
        s = self.decision_function(bags)
        return np.where(s > self.threshold_, self.classes_[-1], self.classes_[0])

    def score(self, bags, y=None):
        """Bag accuracy of ``predict(bags)`` against ``y`` (default: the labels of ``bags``)."""
        bags = as_bags(bags, y)
        pred = self.predict(bags)
        if y is not None:
            return float(np.mean(pred == np.asarray(y).ravel()))
        return float(np.mean(np.searchsorted(self.classes_, pred) == bags.y))
