"""The Python API gives the CLI's numbers, and every registered method behaves as a
scikit-learn estimator on bags.

* ``milopt.estimator(NAME, **params)`` with scikit-learn's ``cross_validate`` and
  ``StratifiedKFold(K, shuffle=True, random_state=seed)`` reproduces, fold by fold and to the
  last digit, the bag accuracy and AUC of ``milopt fit NAME --set ... --cv K --seed seed``
  (:func:`milopt.runner.run_fit`): same class, defaults, seed and training-fold scaling.
* A bag-aware version of scikit-learn's common estimator checks, over every registered
  method: clone, get/set_params, no work in ``__init__``, ``NotFittedError``, ``classes_``,
  input validation (features, input type, one class), pickling, determinism, list input.
* ``GridSearchCV`` over a ``milopt.estimator`` pipeline with a bag splitter.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate

import milopt
from milopt.data import load
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.estimators.api import BagScaler, final_estimator
from milopt.estimators.registry import methods
from milopt.runner import run_fit

PLAIN = "gen:digits?bags=16&max_size=4&seed=0"
SMALL = "gen:multiclass?classes=2&bags=12&instances=3&features=4&seed=0"
COORDS = "gen:cad?images=16&seed=0"
SAMPLES = "gen:kent-yu?bags=16&instances=3&samples=8&seed=0"
SAMPLES_SMALL = "gen:kent-yu?bags=12&instances=3&samples=8&seed=0"

#: small budgets so that every method fits in about a second on these data (exact methods
#: still reach proven optima, so the comparison is deterministic)
FAST = {
    "misvm-miqp": ({"time_limit": 30}, SMALL),
    "mismm-miqp": ({"m": 8, "time_limit": 30}, SAMPLES_SMALL),
    "pdmisvm": ({"max_iter": 50}, PLAIN),
    "dcmil": ({"max_fev": 100}, PLAIN),
    "dcmil-dca": ({"max_iter": 5}, PLAIN),
    "vgpmil": ({"n_inducing": 8, "max_iter": 10}, PLAIN),
    "g-vgpmil": ({"n_inducing": 8, "max_iter": 10}, PLAIN),
}


def case(name):
    spec = methods()[name]
    params, data = FAST.get(name, ({}, COORDS if "coords" in spec.needs else
                                   SAMPLES if "samples" in spec.needs else PLAIN))
    return params, data


def method_names():
    return sorted(n for n in methods() if not n.startswith("test-"))


_DATA = {}


def data(d):
    if d not in _DATA:
        _DATA[d] = load(d)
    return _DATA[d]


@pytest.mark.parametrize("name", method_names())
def test_python_api_reproduces_the_cli(name):
    params, d = case(name)
    cli = run_fit(name, d, params=params, cv=3, seed=0)
    bags = data(d)
    est = milopt.estimator(name, **params)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    res = cross_validate(est, bags, bags.y, cv=cv, scoring=["accuracy", "roc_auc"])
    np.testing.assert_array_equal(res["test_accuracy"], [f["bag_accuracy"] for f in cli["folds"]])
    cli_auc = np.array([np.nan if f["bag_auc"] is None else f["bag_auc"] for f in cli["folds"]])
    np.testing.assert_array_equal(res["test_roc_auc"], cli_auc)
    # the values the CLI reports as used are the estimator's
    used = final_estimator(est).get_params()
    for k, v in cli["params"].items():
        assert used[k] == v, (k, used[k], v)


@pytest.mark.parametrize("name", method_names())
def test_bag_aware_common_checks(name):
    params, d = case(name)
    bags = data(d)
    spec = methods()[name]
    est = spec.make(params, 0)
    # __init__ stores the parameters and nothing else; clone / get_params / set_params agree
    p = est.get_params()
    assert set(vars(est)) == set(p), set(vars(est)) ^ set(p)
    c = clone(est)
    assert c.get_params() == p and c is not est
    key = next(k for k in ("C", "nu", "alpha", "max_iter") if k in p)
    c.set_params(**{key: p[key]})
    assert c.get_params()[key] == p[key]
    with pytest.raises(ValueError):
        c.set_params(no_such_parameter=1)
    # not fitted
    with pytest.raises(NotFittedError):
        est.predict(bags)
    # fit returns self; classes_, shapes, labels
    assert est.fit(bags) is est
    np.testing.assert_array_equal(est.classes_, [0, 1])
    assert est.n_features_in_ == bags.n_features
    s = est.decision_function(bags)
    pred = est.predict(bags)
    assert s.shape == (bags.n_bags,) and pred.shape == (bags.n_bags,) and set(pred) <= {0, 1}
    assert 0.0 <= est.score(bags) <= 1.0
    # a clone of a fitted estimator is not fitted
    with pytest.raises(NotFittedError):
        clone(est).predict(bags)
    # pickling keeps the fitted model
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(again.decision_function(bags), s)
    # determinism: the same seed gives the same model
    np.testing.assert_allclose(spec.make(params, 0).fit(bags).decision_function(bags), s, rtol=1e-7, atol=1e-9)
    # input validation: wrong number of features, wrong input type, a single class
    sub = bags.subset(np.arange(bags.n_bags))
    with pytest.raises(InvalidDataError, match="features"):
        est.predict(sub.with_X(np.hstack([sub.X, sub.X[:, :1]])))
    with pytest.raises(InvalidDataError, match="expected milopt.Bags"):
        est.predict(bags.X)
    one = bags.subset(np.flatnonzero(bags.y == 1))
    with pytest.raises(InvalidDataError):
        clone(est).fit(one)


def test_list_of_arrays_input_matches_bags():
    bags = data(PLAIN)
    arrays = [bags.X[bags.bag_ptr[i]:bags.bag_ptr[i + 1]] for i in range(bags.n_bags)]
    a = milopt.estimator("misvm-heuristic").fit(arrays, bags.y).decision_function(arrays)
    b = milopt.estimator("misvm-heuristic").fit(bags).decision_function(bags)
    np.testing.assert_allclose(a, b)


def test_grid_search_with_a_bag_splitter_matches_the_cli():
    bags = data(PLAIN)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    gs = GridSearchCV(milopt.estimator("misvm-heuristic"), {"model__C": [0.1, 10.0]}, cv=cv).fit(bags, bags.y)
    assert gs.best_params_["model__C"] in (0.1, 10.0)
    for C, score in zip(gs.cv_results_["param_model__C"], gs.cv_results_["mean_test_score"]):
        cli = run_fit("misvm-heuristic", PLAIN, params={"C": str(C)}, cv=3, seed=0)
        assert score == pytest.approx(cli["mean"]["bag_accuracy"], abs=1e-12)
    assert final_estimator(gs.best_estimator_).C == gs.best_params_["model__C"]


def test_estimator_validates_like_set():
    with pytest.raises(InvalidParameterError, match="max_iter: expected an integer >= 1, got 'abc'"):
        milopt.estimator("misvm-heuristic", max_iter="abc")
    with pytest.raises(InvalidParameterError, match="unknown key"):
        milopt.estimator("misvm-heuristic", bogus=1)
    est = milopt.estimator("misvm-heuristic", C="10")
    assert final_estimator(est).C == 10.0
    assert not hasattr(milopt.estimator("misvm-heuristic", scale=False), "steps")
    assert not hasattr(milopt.estimator("sismm"), "steps")  # distributional methods do not scale


def test_formulation_variants_are_fittable():
    """misvm-miqp exposes norm and disjunction; any fittable formulation fits under its own name."""
    bags = data(SMALL)
    l1 = milopt.estimator("misvm-miqp", norm="l1", solver="highs", scale=False).fit(bags)
    assert l1.result_.problem_class == "MILP" and l1.fit_info_["termination"] == "optimal"
    sos = milopt.estimator("misvm-miqp", disjunction="sos1", scale=False).fit(bags)
    big = milopt.estimator("misvm-miqp", scale=False).fit(bags)
    assert sos.fit_info_["objective"] == pytest.approx(big.fit_info_["objective"], rel=1e-5, abs=1e-6)
    gen = milopt.estimator("misvm-bigm", norm="l1", solver="highs", scale=False).fit(bags)
    np.testing.assert_allclose(gen.coef_, l1.coef_, atol=1e-6)
    with pytest.raises(InvalidParameterError, match="norm: expected one of l2, l1, got 'l3'"):
        milopt.estimator("misvm-miqp", norm="l3")


def test_bag_scaler_is_the_cli_scaling():
    from milopt.numerics import standardize

    bags = data(PLAIN)
    tr, te = bags.subset(np.arange(10)), bags.subset(np.arange(10, 16))
    a_tr, a_te = standardize(tr, te)
    sc = BagScaler().fit(tr)
    np.testing.assert_array_equal(sc.transform(te).X, a_te.X)
    np.testing.assert_array_equal(sc.fit_transform(tr).X, a_tr.X)


def test_formulation_build_is_the_model_milopt_solve_builds():
    """``formulation(name).build(standardize(bags), **params)`` = ``milopt solve``'s model (same matrices;
    the declared defaults, e.g. misvm-bigm's ``warm_start``, are applied as ``milopt solve`` applies them)."""
    from milopt.models import formulation
    from milopt.numerics import standardize
    from milopt.runner import build_formulation
    from milopt.solvers.extract import extract

    bags = data(SMALL)
    for name, params in (("misvm-bigm", {"C": "2"}), ("misvm-bigm", {"norm": "l1"}), ("batchsvm-lp", {"theta": "0"})):
        form = formulation(name)
        given = dict(params)
        if "warm_start" in form.params:  # milopt solve builds with the declared start (run_solve)
            given["warm_start"] = form.params["warm_start"].default
        cli, _, _, _ = build_formulation(name, SMALL, given)
        py = formulation(name).build(standardize(bags), **params)
        a, b = extract(cli), extract(py)
        assert a.col_names == b.col_names and a.row_names == b.row_names
        assert (a.A != b.A).nnz == 0
        np.testing.assert_array_equal(a.c, b.c)
        np.testing.assert_array_equal(a.row_lb, b.row_lb)
        np.testing.assert_array_equal(a.row_ub, b.row_ub)


def test_readme_example_figures():
    """The figures quoted in the README's Python section (MUSK1, misvm-heuristic with its defaults, 5 folds)."""
    bags = load("musk1")
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    res = cross_validate(milopt.estimator("misvm-heuristic"), bags, bags.y, cv=cv,
                         scoring=["accuracy", "roc_auc"])
    np.testing.assert_allclose(res["test_accuracy"], [1.0, 0.6842, 0.8333, 0.6667, 0.8889], atol=5e-5)
    np.testing.assert_allclose(res["test_roc_auc"], [1.0, 0.7, 0.8765, 0.716, 0.963], atol=5e-5)
    cli = run_fit("misvm-heuristic", "musk1", params={}, cv=5, seed=0)
    np.testing.assert_array_equal(res["test_accuracy"], [f["bag_accuracy"] for f in cli["folds"]])
