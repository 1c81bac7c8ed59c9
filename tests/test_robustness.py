"""Right on bags it has never seen: the decision rule chosen on the training bags, the data-scaled
RBF default, the robustness regimes of ``benchmarks/robustness.py`` (a few small ones, seeded)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import milopt
from milopt.errors import InvalidParameterError
from milopt.features.kernels import check_kernel
from milopt.metrics import balanced_threshold

from benchmark_script import load_benchmark


# --------------------------------------------------------------------------- the threshold itself
def _ba(s, y, t):
    pred = s > t
    return 0.5 * (np.mean(pred[y == 1]) + np.mean(~pred[y == 0]))


def test_balanced_threshold_is_the_best_cut():
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = (rng.random(40) < 0.3).astype(int)
        y[:2] = [0, 1]
        s = rng.normal(size=40) + 1.5 * y + 2.0          # every score > 0: the margin rule calls all positive
        t, ba = balanced_threshold(s, y)
        brute = max(_ba(s, y, c) for c in np.concatenate([s, [s.min() - 1]]))
        assert ba == pytest.approx(brute) and _ba(s, y, t) == pytest.approx(ba)
        assert ba > _ba(s, y, 0.0)


def test_balanced_threshold_keeps_zero_when_nothing_does_better():
    y = np.array([0, 0, 0, 1, 1, 1])
    s = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
    assert balanced_threshold(s, y) == (0.0, 1.0)
    t, ba = balanced_threshold(s + 10, y)                  # separated but shifted: the gap's midpoint
    assert ba == 1.0 and t == pytest.approx(10.0)
    assert np.isnan(balanced_threshold(s, np.ones(6, int))[1])   # one class: the natural threshold


# ----------------------------------------------------------------------- the one declaration
def test_threshold_declared_once_and_reported():
    from milopt.params import THRESHOLD
    from milopt.runner import run_fit

    from milopt.estimators.registry import get_method

    spec = get_method("sil")
    assert spec.params["threshold"].help == THRESHOLD.help
    assert spec.validate({"threshold": "-0.25"}) == {"threshold": -0.25}
    assert spec.validate({"threshold": "ZERO"}) == {"threshold": "zero"}
    with pytest.raises(InvalidParameterError, match="threshold: expected auto, zero or a number"):
        spec.validate({"threshold": "high"})
    data = "gen:digits?bags=30&seed=0"
    out = run_fit("misvm-heuristic", data, cv=3, seed=0)
    assert {f["decision_rule"] for f in out["folds"]} == {"inner-cv"}
    out = run_fit("misvm-heuristic", data, params={"threshold": "zero"})
    assert out["train"]["decision_rule"] == "zero" and out["train"]["threshold"] == 0.0
    out = run_fit("misvm-heuristic", data, params={"threshold": "0.5"})
    assert out["train"]["decision_rule"] == "fixed" and out["train"]["threshold"] == 0.5
    assert run_fit("misvm-bigm", "gen:digits?bags=12&seed=0",
                   params={"solver": "highs", "norm": "l1"})["train"]["decision_rule"] == "training"


def test_cli_set_threshold_json(capsys):
    from milopt.cli import main

    argv = ["fit", "sil", "--data", "gen:digits?bags=24&seed=0", "--set", "threshold=zero", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["threshold"] == "zero" and out["train"]["decision_rule"] == "zero"
    code = main(argv[:-2] + ["threshold=high"])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1 and "threshold" in err


def test_predict_follows_threshold_and_decision_function_does_not_move():
    bags = milopt.load("gen:digits?bags=40&positive_fraction=0.2&seed=3")
    auto = milopt.estimator("sil").fit(bags)
    zero = milopt.estimator("sil", threshold="zero").fit(bags)
    np.testing.assert_allclose(auto.decision_function(bags), zero.decision_function(bags))
    m = auto.steps[-1][1]
    s = m.decision_function(auto[:-1].transform(bags))
    np.testing.assert_array_equal(auto.predict(bags), np.where(s > m.threshold_, 1, 0))
    assert m.decision_rule_ == "inner-cv" and m.fit_info_["threshold"] == m.threshold_


# ---------------------------------------------------------------------------- gamma='scale'
@pytest.mark.filterwarnings("ignore::milopt.errors.DegenerateModelWarning")
def test_rbf_default_scales_with_the_data():
    rng = np.random.default_rng(0)
    X = 3.0 * rng.normal(size=(50, 8))
    _, g = check_kernel("rbf", None, 8, X)
    assert g == pytest.approx(1.0 / (8 * X.var()))
    assert check_kernel("rbf", "scale", 8, X) == ("rbf", g)
    assert check_kernel("rbf", "auto", 8, X) == ("rbf", 1.0 / 8)
    bags = milopt.Bags.from_arrays([X[:25], X[25:]], [0, 1])
    est = milopt.estimator("sil", scale=False, threshold="zero").fit(bags)
    assert est.gamma_ == pytest.approx(g)


def test_digits_regime_parameters():
    b = milopt.load("gen:digits?bags=20&min_size=10&max_size=10&witness_rate=0.3&noise_features=5&seed=1")
    assert b.n_features == 69
    per_bag = np.bincount(b.bag_index, weights=b.instance_y)
    np.testing.assert_array_equal(per_bag[b.y == 1], 3)
    assert np.all(per_bag[b.y == 0] == 0)
    a, c = milopt.load("gen:digits?bags=20&seed=1"), milopt.load("gen:digits?bags=20&positive_fraction=0.5&seed=1")
    np.testing.assert_array_equal(a.X, c.X)
    with pytest.raises(InvalidParameterError, match="witness_rate"):
        milopt.load("gen:digits?bags=20&witness_rate=0")


# ------------------------------------------------------------------------ regimes (seeded, small)
#: (method, regime): cells where the margin rule called every held-out bag one class while the
#: bags were ranked well (fold AUC >= 0.75); the chosen rule must not
CELLS = [("sil", "witness-50%"), ("mi-svm-heuristic", "witness-50%"), ("vgpmil", "imbalance-1:20")]


@pytest.mark.parametrize("method,regime", CELLS)
def test_no_one_class_fold_on_well_ranked_bags(method, regime):
    rb = load_benchmark("robustness")
    rows = [rb.run_fold(method, rb.REGIMES[regime][0], 3, f, do_tune=False) for f in range(3)]
    assert sum(r["one_class_zero"] for r in rows) >= 1        # the margin rule fails here ...
    assert sum(r["bad_one_class"] for r in rows) == 0         # ... the chosen rule does not
    assert np.mean([r["ba"] for r in rows]) >= np.mean([r["ba_zero"] for r in rows]) + 0.1
