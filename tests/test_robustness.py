"""Right on bags it has never seen: the decision rule chosen on the training bags, the data-scaled
RBF default, the robustness regimes of ``benchmarks/robustness.py`` (a few small ones, seeded)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import milopt
from milopt.errors import InvalidParameterError
from milopt.estimators.base import MILClassifier
from milopt.features.kernels import check_kernel
from milopt.metrics import _auc, balanced_threshold, shrunk_threshold

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


def test_shrunk_threshold_stays_between_the_class_medians():
    """Heavy-tailed scores with a weak signal (t-distributed, 10 bags a class): every cut lies
    between the class medians; the best cut is kept when it does, clipped when it does not, and
    scores without a significant ranking get the midpoint."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    seen = set()
    for _ in range(200):
        s = rng.standard_t(2, size=20) + 1.2 * y
        t, how = shrunk_threshold(s, y)
        m0, m1 = np.median(s[y == 0]), np.median(s[y == 1])
        best = balanced_threshold(s, y)[0]
        seen.add(how)
        if how == "midpoint":
            assert t == pytest.approx(0.5 * (m0 + m1))
        else:
            assert m0 <= t <= m1 and (t == best) == (how == "best")
            assert how == "best" or t == (m0 if best < m0 else m1)
    assert seen == {"best", "clipped", "midpoint"}
    s = np.r_[np.linspace(-1.0, 1.0, 10), np.linspace(-1.1, 0.9, 10)]   # AUC < 1/2: no signal
    assert shrunk_threshold(s, y)[1] == "midpoint"
    assert shrunk_threshold(s, np.ones(20, int)) == (0.0, "best")       # one class: the natural cut


@pytest.mark.parametrize("method,fold", [("misvm-heuristic", 1), ("mi-svm-heuristic", 1)])
def test_no_signal_cut_is_the_midpoint_and_splits_the_new_bags(method, fold):
    """30 bags with 364 features (third split): the inner models, fitted on 13 bags each, score
    their held-out bags without signal (inner AUC at most 1/2), so the cut is the midpoint of the
    class medians, and it splits the new bags, which the final model ranks at AUC >= 0.75."""
    rb = load_benchmark("robustness")
    row = rb.run_fold(method, rb.REGIMES["few-bags-many-features"][0], 3, fold, do_tune=False, repeat=2)
    rec = row["scores"]
    inner, y = np.array(rec["inner"]), np.array(rec["y_train"])
    assert _auc(y, inner) <= 0.5 and row["auc"] >= 0.75
    assert row["how"] == "midpoint" and row["one_class"] == 0 and row["ba"] > 0.5


def test_inner_folds_standardise_again_what_was_standardised():
    """Bags standardised with their own statistics: every inner fold is standardised with its
    training part's statistics, which is the raw inner fold standardised on its own (up to the
    columns constant on the inner training part, whose scale is 1 by convention); bags not
    standardised are split as they are."""
    from milopt.numerics import is_standardized, standardize

    raw = milopt.load("gen:digits?bags=30&seed=0")
    est = milopt.estimator("sil", scale=False)
    folds = est._inner_folds(standardize(raw))
    assert len(folds) == MILClassifier.threshold_folds
    for te, Btr, Bte in folds:
        tr = np.setdiff1d(np.arange(raw.n_bags), te)
        Rtr, Rte = standardize(raw.subset(tr), raw.subset(te))
        varies = raw.subset(tr).X.std(axis=0) > 0
        assert is_standardized(Btr.X) and varies.sum() > 40
        np.testing.assert_allclose(Btr.X[:, varies], Rtr.X[:, varies], atol=1e-9)
        np.testing.assert_allclose(Bte.X[:, varies], Rte.X[:, varies], atol=1e-9)
    for te, Btr, Bte in est._inner_folds(raw):
        assert not is_standardized(Btr.X) and np.array_equal(Bte.X, raw.subset(te).X)


@pytest.mark.parametrize("repeat,fold", [(1, 1), (2, 0)])
def test_pdmisvm_inner_scores_on_the_offset_of_new_bags(repeat, fold):
    """30 bags with 364 features: pdMISVM separates its 20 training bags at ±1.  Inner models
    whose held-out bags had been inside the standardisation scored them 0.2-0.5 above the new
    bags, and the cut chosen there called every new bag negative at a fold AUC of 0.80-0.88;
    inner folds standardised on their own training part split the new bags."""
    rb = load_benchmark("robustness")
    row = rb.run_fold("pdmisvm", rb.REGIMES["few-bags-many-features"][0], 3, fold, do_tune=False, repeat=repeat)
    assert row["auc"] >= 0.75 and row["one_class"] == 0 and row["ba"] >= 0.6


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
#: (method, regime, values): cells where the margin rule called every held-out bag one class
#: while the bags were ranked well (fold AUC >= 0.75); the chosen rule must not (the SVMs at
#: C = 1, their default before ``C='auto'``)
CELLS = [("sil", "witness-50%", {"C": 1.0}), ("mi-svm-heuristic", "witness-50%", {"C": 1.0}),
         ("vgpmil", "imbalance-1:20", {})]


@pytest.mark.parametrize("method,regime,values", CELLS)
def test_no_one_class_fold_on_well_ranked_bags(method, regime, values):
    rb = load_benchmark("robustness")
    rows = [rb.run_fold(method, rb.REGIMES[regime][0], 3, f, do_tune=False, params=values) for f in range(3)]
    assert sum(r["one_class_zero"] for r in rows) >= 1        # the margin rule fails here ...
    assert sum(r["bad_one_class"] for r in rows) == 0         # ... the chosen rule does not
    assert np.mean([r["ba"] for r in rows]) >= np.mean([r["ba_zero"] for r in rows]) + 0.1


# ------------------------------------------------------- the inner models' scale and the fallback
class _Centroid(MILClassifier):
    """Instance score (x - m)·w with w the difference of the class centroids of the instances and
    m their midpoint, times n_bags²: a model whose scale depends on how many bags it was fitted on
    (as the margin of an SVM or DC-MIL does), so an inner model's cut means nothing unmapped."""

    def __init__(self, threshold="auto", random_state=0):
        self.threshold, self.random_state = threshold, random_state

    def _fit(self, bags):
        lab = bags.y[bags.bag_index]
        c1, c0 = bags.X[lab == 1].mean(axis=0), bags.X[lab == 0].mean(axis=0)
        self.w_, self.m_ = (c1 - c0) * bags.n_bags ** 2, 0.5 * (c1 + c0)

    def predict_instances(self, bags):
        return (self._check_input(bags).X - self.m_) @ self.w_


def test_inner_scores_are_put_in_the_final_models_scale():
    from milopt.estimators.base import _class_means, _onto

    y = np.array([0, 0, 1, 1])
    s = np.array([-4.0, -2.0, 2.0, 6.0])
    mapped = _onto(s, _class_means(s, y), (1.0, 3.0))
    np.testing.assert_allclose(_class_means(mapped, y), (1.0, 3.0))
    np.testing.assert_allclose(_onto(s, (1.0, 1.0), (0.0, 1.0)), s)     # no gap: unchanged
    bags = milopt.load("gen:digits?bags=60&min_size=20&max_size=30&seed=4")
    tr, te = np.arange(0, 60, 2), np.arange(1, 60, 2)
    m = _Centroid().fit(bags.subset(tr))
    assert m.decision_rule_ == "inner-cv"
    own = m.decision_function(bags.subset(tr))
    assert own.min() < m.threshold_ < own.max()                  # a cut among the final model's scores
    pred = m.predict(bags.subset(te))
    assert np.unique(pred).size == 2


class _Told(_Centroid):
    """_Centroid whose held-out scores are given by ``told(own scores, labels)``."""

    told = staticmethod(lambda own, y: own)

    def _out_of_fold_scores(self, bags, own, inner=None):
        return self.told(own, bags.y)


@pytest.mark.parametrize("told", [lambda own, y: -own,                       # anti-ranked (AUC < 1/2)
                                  lambda own, y: own - 2 * np.ptp(own) * (y == 1)])  # positives below
def test_no_evidence_on_held_out_bags_falls_back_to_the_training_rule(told):
    bags = milopt.load("gen:digits?bags=30&seed=1")
    m = type("T", (_Told,), {"told": staticmethod(told)})().fit(bags)
    own = m.decision_function(bags)
    assert m.decision_rule_ == "training" and m.fit_info_["decision_rule"] == "training"
    assert m.threshold_ == shrunk_threshold(own, bags.y)[0]
    np.testing.assert_array_equal(m.threshold_scores_, own)
    kept = type("T", (_Told,), {})().fit(bags)                 # held-out scores that do rank: kept
    assert kept.decision_rule_ == "inner-cv"


@pytest.mark.slow
def test_dcmil_few_bags_many_features_not_one_class():
    rb = load_benchmark("robustness")
    rows = [rb.run_fold("dcmil", rb.REGIMES["few-bags-many-features"][0], 3, f, do_tune=False) for f in range(3)]
    assert sum(r["one_class_zero"] for r in rows) >= 2           # the sign rule: every new bag negative
    assert sum(r["bad_one_class"] for r in rows) == 0
    assert np.mean([r["ba"] for r in rows]) >= 0.7


# ------------------------------------------------------------------------------- C='auto'
def test_auto_C_declared_once_chosen_on_the_inner_folds_and_reported(capsys):
    from milopt.cli import main
    from milopt.estimators.declaration import declaration
    from milopt.estimators.heuristics import MiSVMHeuristic, SILClassifier, SISMMClassifier
    from milopt.params import AUTO_C, AUTO_C_GRID

    for cls in (SILClassifier, MiSVMHeuristic):
        assert declaration(cls)["C"].default == "auto" and declaration(cls)["C"].choices == AUTO_C.choices
    assert declaration(SISMMClassifier)["C"].default == 1.0          # the SMM baseline keeps C = 1
    bags = milopt.load("gen:digits?bags=30&seed=1")
    est = milopt.estimator("mi-svm-heuristic", scale=False).fit(bags)
    assert est.C == "auto" and est.C_ == est.fit_info_["chosen_C"]   # the constructor value is kept
    assert sorted(est.C_grid_scores_) == sorted(AUTO_C_GRID)
    assert est.C_grid_scores_[est.C_] == max(est.C_grid_scores_.values())
    fixed = milopt.estimator("mi-svm-heuristic", scale=False, C=est.C_).fit(bags)  # the same model and rule
    np.testing.assert_allclose(fixed.decision_function(bags), est.decision_function(bags))
    assert fixed.threshold_ == pytest.approx(est.threshold_) and "chosen_C" not in fixed.fit_info_
    assert main(["fit", "sil", "--data", "gen:digits?bags=20&seed=2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["train"]["chosen_C"] in AUTO_C_GRID
    assert main(["fit", "sil", "--data", "gen:digits?bags=20&seed=2", "--set", "C=big"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "C" in err[0] and "auto" in err[0]


def test_auto_C_closes_the_mi_svm_gap_on_the_base_regime():
    rb = load_benchmark("robustness")
    data = rb.REGIMES["base"][0]
    auto = [rb.run_fold("mi-svm-heuristic", data, 3, f) for f in range(3)]
    one = [rb.run_fold("mi-svm-heuristic", data, 3, f, do_tune=False, params={"C": 1.0}) for f in range(3)]
    ba, tuned, ba_one = (np.mean([r[k] for r in rows]) for rows, k in ((auto, "ba"), (auto, "ba_tuned"), (one, "ba")))
    assert ba_one + 0.1 <= ba and 0.7 <= ba              # C = 1 overfits these bags; 'auto' does not
    assert ba >= tuned - 0.03                             # within 3 points of nested-CV tuning


def test_pdmisvm_auto_C_beats_its_former_C_1_on_large_bags():
    """Bags of 30-60 instances (the robustness suite's ``large-bags``, its third split, last
    fold): eq. 1's hinge term per bag at C = 1 under-fits, and ``C='auto'`` chooses C = 10 on the
    inner folds."""
    rb = load_benchmark("robustness")
    data = rb.REGIMES["large-bags"][0]
    auto = rb.run_fold("pdmisvm", data, 3, 2, do_tune=False, repeat=2)
    one = rb.run_fold("pdmisvm", data, 3, 2, do_tune=False, repeat=2, params={"C": 1.0})
    assert auto["chosen_C"] == 10.0 and "chosen_C" not in one
    assert auto["ba"] >= one["ba"] + 0.05
