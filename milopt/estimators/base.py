"""Shared estimator machinery following scikit-learn conventions.

* The constructor stores parameters only; ``fit(bags, y=None)`` validates and returns self.
  It first checks every constructor parameter against the method's one declaration
  (:func:`milopt.estimators.declaration`, the one ``milopt fit --set`` reads), so the
  Python API and the command line accept and refuse the same values with the same line.
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


def _class_means(scores, y):
    """(mean score of the negative bags, mean score of the positive bags)."""
    s = np.asarray(scores, dtype=float).ravel()
    return float(np.mean(s[y == 0])), float(np.mean(s[y == 1]))


def _onto(s, inner, final):
    r"""Scores ``s`` of an inner model in the final model's scale: the affine map that sends the
    inner model's training class means :math:`(m_0', m_1')` to the final model's
    :math:`(m_0, m_1)`, :math:`m_0 + (s - m_0')\,(m_1 - m_0)/(m_1' - m_0')`; ``s`` unchanged when
    either model does not score its positive training bags above its negative ones on average."""
    (a0, a1), (b0, b1) = inner, final
    if not (a1 - a0 > 1e-12 and b1 - b0 > 1e-12 and np.isfinite([a0, a1, b0, b1]).all()):
        return s
    return b0 + (s - a0) * ((b1 - b0) / (a1 - a0))


def _pooled(parts, target, n: int) -> np.ndarray:
    """The inner models' held-out bag scores (:meth:`MILClassifier._inner_scores`), each mapped
    by :func:`_onto` onto the class means ``target`` (the final model's, or (0, 1)), in bag order."""
    out = np.empty(n)
    for te, s, means in parts:
        out[te] = _onto(s, means, target)
    return out


def _ranks(scores, y) -> bool:
    r"""False when ``scores`` rank the positive bags below the negative ones beyond chance: bag
    AUC below :math:`\tfrac12 - 1.645\,\sigma_0`, the one-sided 5 % test of the Mann-Whitney
    statistic, whose standard deviation under "no ranking" is
    :math:`\sigma_0 = \sqrt{(P + N + 1)/(12 P N)}` for :math:`P` positive and :math:`N`
    negative bags."""
    from milopt.metrics import _auc, _chance_margin

    P, N = int(np.sum(y == 1)), int(np.sum(y == 0))
    return bool(_auc(y, scores) >= 0.5 - _chance_margin(P, N))


class MILClassifier(ClassifierMixin, BaseEstimator):
    """Base of binary max-rule MIL classifiers.

    Subclasses implement ``_fit(bags)`` and ``predict_instances(bags)`` (instance scores);
    a bag's score is the maximum of its instance scores (``decision_function``) and it is
    predicted positive when the score exceeds ``threshold_``.

    **Decision rule** (the constructor argument ``threshold``, declared once as
    :data:`milopt.params.THRESHOLD`): ``'zero'`` keeps the model's own rule, score > 0 (the
    margin of an SVM, log-odds 0 = probability ½ for VGPMIL); a number ``t`` predicts
    score > ``t``; ``'auto'`` (default) chooses ``threshold_`` on the training bags by the
    method's :attr:`threshold_rule`, with :func:`milopt.metrics.shrunk_threshold`: the
    threshold that maximises bag balanced accuracy (:func:`milopt.metrics.balanced_threshold`,
    0 kept when nothing does better) clipped into the interval between the median scores of the
    negative and the positive bags, and the midpoint of these medians when the scores do not
    rank the bags above chance beyond noise (one-sided 5 % test on their AUC).  The maximiser
    alone is the noise of a few bags when the scores carry little signal: with 20 training bags
    whose held-out scores rank at chance it can lie below all but a few of them and call every
    new bag positive (30 bags with 364 features, ``benchmarks/robustness.py``), where the middle
    of the classes does not (``threshold_how_``: ``'best'``, ``'clipped'`` or ``'midpoint'``):

    * ``'inner-cv'`` -- on out-of-fold bag scores: the training bags are split into
      :attr:`threshold_folds` stratified folds (seeded with ``random_state``), the method
      (with ``threshold='zero'``) is fitted on all but one fold and scores the held-out one,
      and the threshold is chosen on these scores; then the model fitted on all training bags
      uses it (bags standardised with their own statistics are standardised again in each
      inner fold, with its training part's: ``_inner_folds``).  Held-out scores, not training
      scores: a flexible model (an RBF SVM on instances, a Gaussian process) scores its own
      training bags far apart, so a threshold chosen there says nothing about new bags, which
      is where the max rule shifts every score
      (in a new bag the largest of many unseen instance scores is the bag score).  Each inner
      model's held-out scores are first put in the final model's scale: the affine map that
      sends the inner model's mean negative and mean positive training-bag scores onto the final
      model's (:func:`_onto`), so a cut is chosen where the final model's scores live.  An inner
      model fitted on two thirds of the bags has another margin, offset and norm than the
      final one (DC-MIL on 20 bags with 364 features: inner held-out scores from -21 to -6,
      new bags scored from -13 to -3 by the final model; the linear MI-SVM heuristic on bags
      of 30-60 instances: about ±1 against ±0.2), and an unmapped cut can then lie beyond
      every score of the final model, calling every new bag one class although the bags are
      ranked well.  When the held-out scores
      rank the bags worse than chance beyond noise (:func:`_ranks`: the inner models then
      behave unlike the final one, and their cut says nothing about it), the ``'training'``
      rule is used instead
      (``decision_rule_`` says ``'training'``).  The cost is
      :attr:`threshold_folds` extra fits on part of the bags; it is the rule of every native
      method.
    * ``'training'`` -- on the training bags' own scores: the rule of the methods solved
      through a solver (formulations, ``misvm-miqp``, ``mismm-miqp``, ``dcmil-dca``, the batch
      LPs), where refitting per fold would multiply the solver time, and of ``dcmil`` with
      ``inner_cv`` (already a grid search over C in inner folds).  For a linear model that
      separates the training bags the chosen threshold lies in the gap between the classes
      (0 when 0 does).

    ``decision_function`` does not depend on the rule (AUC is unchanged); ``decision_rule_``
    names the rule used (``'inner-cv'``, ``'training'``, ``'zero'``, ``'fixed'``, or ``'argmax'``
    for K > 2 classes), ``threshold_scores_`` holds the bag scores an ``auto`` rule chose on
    (``inner_scores_``: the pooled held-out scores of the ``'inner-cv'`` rule, also when it fell
    back to the training rule; None for the ``'training'`` rule),
    and ``fit_info_`` holds ``decision_rule`` and ``threshold`` (``milopt fit --json`` reports
    them per fit).  Tuning
    a threshold on held-out scores is the approach of scikit-learn's
    ``TunedThresholdClassifierCV``; balanced accuracy is the criterion because MIL data are
    often imbalanced and the bag score of the max rule is shifted upward on bags it has not
    seen, so the margin's 0 calls most such bags positive.
    """

    threshold_ = 0.0
    #: how ``threshold='auto'`` chooses ``threshold_``: ``'inner-cv'`` or ``'training'``
    threshold_rule = "inner-cv"
    #: folds of the ``'inner-cv'`` rule
    threshold_folds = 3

    def fit(self, bags, y=None):
        self._validate_params()
        bags = as_bags(bags, y, fitting=True)
        self.classes_ = user_classes(y, bags)
        self.n_features_in_ = bags.n_features
        inner = self._choose_C(bags)
        self._fit(bags)
        self._choose_threshold(bags, inner)
        self._check_degenerate(bags)
        return self

    # ------------------------------------------------------------------ parameters
    def _validate_params(self) -> None:
        """Check every constructor parameter against the method's declaration, before any work.

        The declaration is :func:`milopt.estimators.declaration` of the class, the one
        ``milopt fit NAME --set key=value`` validates against, so both refuse the same values
        with the same line (:class:`~milopt.errors.InvalidParameterError`: the key, what it
        accepts and the value given), as scikit-learn's ``_parameter_constraints`` checked in
        ``fit``.  A string the declaration reads as another value (``C='10'``, ``norm='L1'``,
        as ``--set`` gives them), and a number of another type than the declared one
        (``max_iter=10.0``, ``C=5``), is replaced by the value ``--set`` would give (10, 5.0), so
        that the fit and its messages are the command line's; a value already of the declared
        type, and a list, are left as given.  Then the rules between keys the class declares
        (``param_rules``, :func:`milopt.estimators.declaration.check_rules`)."""
        from milopt.estimators.declaration import check_rules, declaration

        decl = declaration(type(self))
        given = self.get_params(deep=False)
        typed = decl.validate(given, type(self).__name__)
        check_rules(type(self), typed)
        for k, v in typed.items():
            g = given[k]
            if not isinstance(g, (list, tuple)) and (type(v) is not type(g) or (isinstance(g, str) and v != g)):
                setattr(self, k, v)

    # ------------------------------------------------------------------ decision rule
    def _auto_rule(self) -> str:
        """The rule ``threshold='auto'`` applies (a subclass may choose it from its parameters)."""
        return self.threshold_rule

    def _choose_C(self, bags: Bags):
        r"""Set ``C_``, the cost the fit uses: ``C`` when it is a number; for ``C='auto'`` the value
        of :data:`milopt.params.AUTO_C_GRID` whose inner models score their held-out bags best.

        ``C='auto'`` uses the split of the ``'inner-cv'`` decision rule (:attr:`threshold_folds`
        stratified folds of the training bags, seeded with ``random_state``): at every grid value
        the method is fitted on all but one fold and scores the held-out one, each inner model's
        scores put on a common scale (its mean negative and mean positive training-bag scores
        sent to 0 and 1, :func:`_onto`), and the value whose pooled held-out scores reach the
        best balanced accuracy (:func:`milopt.metrics.balanced_threshold`; ties: the higher bag
        AUC, then the smaller C) is chosen.  The decision rule then cuts the chosen value's
        held-out scores, so C and the threshold come from the same out-of-fold bag scores, as
        scikit-learn's ``LogisticRegressionCV`` chooses its C; the cost is
        :attr:`threshold_folds` fits per grid value on two thirds of the bags, besides the final
        fit.  ``C=1`` when a class has fewer than 2 bags or no grid value's inner fits succeed.
        With K > 2 classes: :meth:`_choose_C_multiclass`.
        Returns the chosen value's inner scores (for :meth:`_choose_threshold`), else None;
        ``fit_info_['chosen_C']`` and ``C_grid_scores_`` (``{C: balanced accuracy}``) record the
        choice."""
        from sklearn.metrics import roc_auc_score

        from milopt.metrics import balanced_threshold
        from milopt.params import AUTO_C_GRID

        C = getattr(self, "C", None)
        if not (isinstance(C, str) and C == "auto"):
            if C is not None:
                self.C_ = C
            return None
        if np.unique(bags.y).size > 2:
            return self._choose_C_multiclass(bags)
        best, found, scores = None, None, {}
        for v in AUTO_C_GRID:
            parts = self._inner_scores(bags, C=float(v))
            if parts is None:
                continue
            s = _pooled(parts, (0.0, 1.0), bags.n_bags)
            ba = balanced_threshold(s, bags.y)[1]
            key = (round(ba, 12), round(float(roc_auc_score(bags.y, s)), 12))
            scores[float(v)] = float(ba)
            if best is None or key > best:
                best, found = key, (float(v), parts)
        self.C_, parts = found if found is not None else (1.0, None)
        self.C_grid_scores_ = scores
        self._pending_info = {"chosen_C": self.C_}
        return parts

    def _choose_C_multiclass(self, bags: Bags) -> None:
        """``C='auto'`` with K > 2 classes, whose rule is the argmax of the class responses (no
        threshold, no scale to map): the value of :data:`milopt.params.AUTO_C_GRID` whose inner
        models' predictions of their held-out bags reach the best balanced accuracy (ties: the
        smaller C); the same inner folds as the binary case."""
        import warnings

        from sklearn.base import clone
        from sklearn.metrics import balanced_accuracy_score

        from milopt.errors import MiloptError
        from milopt.params import AUTO_C_GRID

        self.C_, scores = 1.0, {}
        folds = self._inner_folds(bags)
        if folds:
            for v in AUTO_C_GRID:
                pred = np.empty(bags.n_bags, dtype=np.asarray(bags.y).dtype)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DegenerateModelWarning)
                        for te, Btr, Bte in folds:
                            inner = clone(self).set_params(C=float(v)).fit(Btr)
                            pred[te] = inner.predict(Bte)     # labels as in bags.y
                except MiloptError:
                    continue
                scores[float(v)] = float(balanced_accuracy_score(bags.y, pred))
            if scores:
                self.C_ = max(scores, key=lambda c: (scores[c], -c))
        self.C_grid_scores_ = scores
        self._pending_info = {"chosen_C": self.C_}
        return None

    def _choose_threshold(self, bags: Bags, inner=None) -> None:
        """Set ``threshold_`` and ``decision_rule_`` from ``threshold`` (see the class docstring);
        ``inner``: the inner models' scores already fitted by :meth:`_choose_C`."""
        from milopt.metrics import shrunk_threshold
        from milopt.params import THRESHOLD

        spec = THRESHOLD.parse(getattr(self, "threshold", "auto"), "threshold")
        if np.asarray(self.classes_).size != 2:
            rule, t = "argmax", float("nan")           # K > 2 classes: the method's own multi-class rule
        elif spec == "zero":
            rule, t = "zero", 0.0
        elif spec != "auto":
            rule, t = "fixed", float(spec)
        else:
            rule, own = self._auto_rule(), np.asarray(self.decision_function(bags), dtype=float).ravel()
            scores = self._out_of_fold_scores(bags, own, inner) if rule == "inner-cv" else None
            self.inner_scores_ = scores
            if scores is not None and not _ranks(scores, bags.y):
                scores = None                          # no evidence on held-out bags: the training rule
            if scores is None:
                rule, scores = "training", own
            t, self.threshold_how_ = shrunk_threshold(scores, bags.y)
            self.threshold_scores_ = np.asarray(scores, dtype=float)
        self.threshold_ = t
        self.decision_rule_ = rule
        info = dict(getattr(self, "fit_info_", None) or {})
        info.update(getattr(self, "_pending_info", {}))
        self._pending_info = {}
        info.update(decision_rule=rule, threshold=t)
        self.fit_info_ = info

    def _out_of_fold_scores(self, bags: Bags, own, inner=None):
        """Bag scores of the inner models (``inner``, else fitted by :meth:`_inner_scores`), each
        on the bags it was not fitted on, mapped onto the scale of ``own`` (the final model's
        training-bag scores) by :func:`_onto`; None when there are none."""
        inner = inner if inner is not None else self._inner_scores(bags)
        return None if inner is None else _pooled(inner, _class_means(own, bags.y), bags.n_bags)

    def _inner_scores(self, bags: Bags, **override):
        """The ``threshold_folds`` inner models of the ``'inner-cv'`` rule (constructor values
        ``override`` replaced): per fold ``(held-out bag indices, their scores, the inner model's
        class means on its training bags)``; None when a class has fewer than 2 bags or an inner
        fit fails.  :func:`_pooled` puts the scores on one scale."""
        import warnings

        from sklearn.base import clone

        from milopt.errors import MiloptError

        folds = self._inner_folds(bags)
        if not folds:
            return None
        parts = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateModelWarning)
                for te, Btr, Bte in folds:
                    inner = clone(self).set_params(**override)
                    inner.threshold = "zero"           # also for a plugin class without the argument
                    inner.fit(Btr)
                    s = np.asarray(inner.decision_function(Bte), dtype=float).ravel()
                    parts.append((te, s, _class_means(inner.decision_function(Btr), Btr.y)))
        except MiloptError:
            return None
        return parts

    def _inner_folds(self, bags: Bags) -> list:
        r"""The inner folds of the ``'inner-cv'`` rule and of ``C='auto'``: :attr:`threshold_folds`
        stratified folds of the training bags (fewer when a class has fewer bags; none below 2),
        shuffled with ``random_state``, as ``(held-out bag indices, inner training bags, held-out
        bags)``.

        When the bags are standardised with their own statistics
        (:func:`milopt.numerics.is_standardized`: what ``milopt fit`` and
        :func:`milopt.metrics.cross_validate` do per training fold, and
        :class:`~milopt.estimators.api.BagScaler` in a pipeline), each inner fold is standardised
        again with the statistics of its own training part, so that an inner model meets its
        held-out bags as the final model meets new ones: outside the statistics it was
        trained under.  Without it the held-out bags were inside those statistics, and a model
        that can memorise its training bags (30 bags with 364 features: every training bag at
        ±1) scores them on another offset than new bags: pdMISVM's inner models scored
        held-out negative bags 0.2--0.5 above the final model's new negative bags
        (``benchmarks/robustness.py``, few-bags-many-features), and a cut among those scores
        called every new bag negative."""
        from sklearn.model_selection import StratifiedKFold

        from milopt.numerics import is_standardized, standardize

        counts = np.unique(bags.y, return_counts=True)[1]
        k = int(min(self.threshold_folds, counts.min())) if counts.size >= 2 else 0
        if k < 2:
            return []
        seed = getattr(self, "random_state", 0)
        skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=0 if seed is None else int(seed))
        again = is_standardized(bags.X)
        out = []
        for tr, te in skf.split(np.zeros(bags.n_bags), bags.y):
            Btr, Bte = bags.subset(tr), bags.subset(te)
            out.append((te, *(standardize(Btr, Bte) if again else (Btr, Bte))))
        return out

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
