"""The Python entry point that gives the CLI's numbers.

``milopt.estimator("misvm-heuristic", C=10)`` returns the estimator ``milopt fit
misvm-heuristic --set C=10`` uses: the same class, the same defaults, the same seed
(``random_state`` = ``seed``, 0 as ``--seed``) and the same scaling.  ``milopt fit``
standardises the features with the statistics of the training bags only (``--set
scale=false`` turns it off; methods on distributional instances do not scale); here that is a
:class:`BagScaler` step in a scikit-learn :class:`~sklearn.pipeline.Pipeline`, so that
``cross_val_score``, ``GridSearchCV`` and ``clone`` fit the scaler on each training split::

    import milopt
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

    bags = milopt.load("musk1")
    est = milopt.estimator("misvm-heuristic", C=10)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)     # = milopt fit --cv 5 --seed 0
    cross_val_score(est, bags, bags.y, cv=cv)                 # the CLI's per-fold accuracies
    GridSearchCV(est, {"model__C": [0.1, 1, 10]}, cv=cv).fit(bags, bags.y)

The pipeline's steps are ``scale`` and ``model``; ``scale=False`` returns the bare estimator.
"""
from __future__ import annotations

from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.pipeline import Pipeline

from milopt.estimators.base import as_bags
from milopt.numerics import standardize_stats

#: the name of the model step in the pipeline :func:`estimator` returns (``model__C`` in a grid)
STEP = "model"


class BagScaler(TransformerMixin, BaseEstimator):
    """Standardise instance features with the statistics of the training bags.

    A bag-aware ``StandardScaler``: ``fit`` takes :class:`~milopt.data.Bags` (or a list of
    per-bag arrays) and ``transform`` returns Bags, so it can precede any milopt estimator in a
    :class:`~sklearn.pipeline.Pipeline`.  The arithmetic is
    :func:`milopt.numerics.standardize`'s, the one ``milopt fit`` applies per training fold.
    """

    def fit(self, bags, y=None):
        bags = as_bags(bags, y)
        self.mean_, self.scale_ = standardize_stats(bags.X)
        self.n_features_in_ = bags.n_features
        return self

    def transform(self, bags):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        bags = as_bags(bags)
        if bags.n_features != self.n_features_in_:
            from milopt.errors import InvalidDataError

            raise InvalidDataError(f"bags: have {bags.n_features} features, the scaler was fitted on "
                                   f"{self.n_features_in_}")
        return bags.with_X((bags.X - self.mean_) / self.scale_)

    def fit_transform(self, bags, y=None, **fit_params):
        return self.fit(bags, y).transform(as_bags(bags, y))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


def estimator(name: str, *, scale: bool = True, seed: int = 0, **params):
    """The estimator of ``milopt fit NAME --set key=value [--set scale=false] [--seed S]``.

    Parameters
    ----------
    name : str
        A method name (``milopt list``) or a fittable formulation name.
    scale : bool
        Standardise features inside the estimator with training statistics (as the CLI, for
        the methods that scale); False returns the bare estimator.
    seed : int
        ``random_state`` when the method has one and ``params`` does not set it.
    **params
        The method's keys, validated (and typed from strings) as ``--set`` values.

    Returns
    -------
    estimator
        A :class:`~sklearn.pipeline.Pipeline` ``[("scale", BagScaler()), ("model", est)]``, or
        ``est`` itself when ``scale`` is False or the method does not scale its input.
    """
    from milopt.estimators.registry import get_method
    from milopt.params import parse_bool

    spec = get_method(name)
    est = spec.make(params, seed)
    if parse_bool("scale", scale) and spec.scale:
        return Pipeline([("scale", BagScaler()), (STEP, est)])
    return est


def final_estimator(est):
    """The milopt estimator inside a pipeline returned by :func:`estimator` (or ``est``)."""
    return est.steps[-1][1] if isinstance(est, Pipeline) else est


__all__ = ["BagScaler", "estimator", "final_estimator", "STEP"]
