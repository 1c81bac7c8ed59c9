import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from milopt.data import Bags, load
from milopt.errors import InvalidDataError
from milopt.estimators.misvm import MISVMClassifier
from milopt.metrics import cross_validate, standardize
from milopt.segments import segment_max


@pytest.fixture(scope="module")
def bags():
    return standardize(load("gen:digits?bags=12&max_size=5&seed=5"))


@pytest.fixture(scope="module")
def fitted(bags):
    return MISVMClassifier(C=1.0, time_limit=4).fit(bags)


def test_constructor_stores_parameters_only():
    est = MISVMClassifier(C=3.0, solver="scip", time_limit=5)
    assert est.get_params()["C"] == 3.0
    assert not hasattr(est, "coef_")
    c = clone(est)
    assert c.get_params() == est.get_params()
    est.set_params(C=7.0)
    assert est.C == 7.0


def test_fit_predict_shapes(fitted, bags):
    s = fitted.decision_function(bags)
    assert s.shape == (bags.n_bags,)
    inst = fitted.predict_instances(bags)
    np.testing.assert_allclose(s, segment_max(inst, bags.bag_ptr))
    p = fitted.predict(bags)
    assert set(np.unique(p)) <= {0, 1}
    assert fitted.score(bags) >= 0.75
    assert fitted.result_.ok and "objective" in fitted.fit_info_


def test_pickle_round_trip(fitted, bags):
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(again.decision_function(bags), fitted.decision_function(bags))


def test_list_of_arrays_input(bags):
    arrs = [bags.X[bags.bag_ptr[j]:bags.bag_ptr[j + 1]] for j in range(bags.n_bags)]
    est = MISVMClassifier(time_limit=2).fit(arrs, bags.y)
    assert est.predict(arrs).shape == (bags.n_bags,)
    with pytest.raises(InvalidDataError, match="labels are required"):
        MISVMClassifier().fit(arrs)


def test_one_class_refused(bags):
    one = bags.subset(np.flatnonzero(bags.y == 1))
    with pytest.raises(InvalidDataError, match="two classes"):
        MISVMClassifier().fit(one)


def test_wrong_feature_count(fitted):
    with pytest.raises(InvalidDataError, match="features"):
        fitted.predict(Bags.from_arrays([np.ones((2, 3)), np.zeros((1, 3))], [1, 0]))


def test_grid_search_over_bags(bags):
    gs = GridSearchCV(MISVMClassifier(time_limit=1), {"C": [0.5, 2.0]},
                      cv=StratifiedKFold(2, shuffle=True, random_state=0))
    gs.fit(bags, bags.y)
    assert gs.best_params_["C"] in (0.5, 2.0)
    assert gs.predict(bags).shape == (bags.n_bags,)


def test_cross_validate_reports_fold_metrics(bags):
    res = cross_validate(MISVMClassifier(time_limit=1), bags, k=3, seed=0, scale=False)
    assert len(res["folds"]) == 3
    for key in ("bag_accuracy", "bag_auc", "bag_f1", "bag_balanced_accuracy", "fit_seconds"):
        assert key in res["mean"]
    assert "instance_auc" in res["folds"][0]
