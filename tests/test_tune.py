"""Nested cross-validation: ``milopt fit METHOD --cv K --tune key=v1,v2,...`` and
``milopt.runner.run_fit(..., tune=..., inner_cv=...)``."""
import json

import numpy as np
import pytest

import milopt.runner as runner
from milopt.cli import main
from milopt.data.loading import load
from milopt.errors import InvalidParameterError
from milopt.estimators.registry import get_method
from milopt.metrics import bag_folds, evaluate
from milopt.numerics import standardize

DATA = "gen:digits?bags=30&seed=0"
METHOD = "misvm-heuristic"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_chosen_values_are_from_the_grid():
    grid = [0.1, 1, 10]
    res = runner.run_fit(METHOD, DATA, cv=3, seed=0, tune={"C": grid}, inner_cv=2)
    assert res["tune"] == {"grid": {"C": [0.1, 1.0, 10.0]}, "inner_cv": 2, "metric": "auc", "path_starts": 0}
    assert "C" not in res["params"] and res["params"]["max_iter"] == 50
    assert len(res["folds"]) == 3
    for row in res["folds"]:
        assert set(row["tuned"]) == {"C"} and row["tuned"]["C"] in grid
        assert [s["params"]["C"] for s in row["tune_scores"]] == [0.1, 1.0, 10.0]
        assert 0.0 <= row["bag_accuracy"] <= 1.0


def test_inner_cv_never_sees_the_outer_test_bags(monkeypatch):
    bags = load(DATA)
    names = np.asarray(bags.bag_names)
    calls = []
    real = runner._fit_eval

    def spy(spec, params, seed, Btr, Bte, scale):
        calls.append((set(np.asarray(Btr.bag_names).tolist()), set(np.asarray(Bte.bag_names).tolist()),
                      params["C"]))
        return real(spec, params, seed, Btr, Bte, scale)

    monkeypatch.setattr(runner, "_fit_eval", spy)
    grid, inner_cv = [0.5, 5.0], 2
    res = runner.run_fit(METHOD, DATA, cv=3, seed=1, tune={"C": grid}, inner_cv=inner_cv)
    per_fold = len(grid) * inner_cv + 1
    assert len(calls) == 3 * per_fold
    for f, (tr, te) in enumerate(bag_folds(bags, 3, 1)):
        train, test = set(names[tr].tolist()), set(names[te].tolist())
        block = calls[f * per_fold:(f + 1) * per_fold]
        for itr, ite, _ in block[:-1]:  # inner fits: outer training bags only, disjoint inner splits
            assert itr | ite <= train and not (itr | ite) & test and not itr & ite
            assert itr | ite == train
        otr, ote, c = block[-1]  # the refit on the whole outer training fold, scored on its test fold
        assert (otr, ote) == (train, test)
        assert c == res["folds"][f]["tuned"]["C"]


def _hand_select(bags, tr, grid, inner_cv, seed):
    """The inner CV of one outer fold, computed without the runner (on AUC the inner fits use
    ``threshold=zero``: the tie-break accuracy is the margin rule's)."""
    spec = get_method(METHOD)
    outer = bags.subset(tr)
    table = []
    for C in grid:
        auc, acc = [], []
        for itr, ite in bag_folds(outer, inner_cv, seed):
            Btr, Bte = standardize(outer.subset(itr), outer.subset(ite))
            est = spec.make({"C": C, "threshold": "zero"}, seed).fit(Btr)   # on AUC: the margin rule
            m = evaluate(est, Bte)
            auc.append(m["bag_auc"])
            acc.append(m["bag_accuracy"])
        table.append((C, float(np.mean(auc)), float(np.mean(acc))))
    best = table[0]
    for row in table[1:]:
        if (round(row[1], 12), round(row[2], 12)) > (round(best[1], 12), round(best[2], 12)):
            best = row
    return best[0], table


def test_selection_matches_a_hand_computation():
    grid, seed = [0.01, 1.0, 100.0], 0
    bags = load(DATA)
    tr, te = next(iter(bag_folds(bags, 3, seed)))
    chosen, table = _hand_select(bags, tr, grid, 3, seed)
    res = runner.run_fit(METHOD, DATA, cv=3, seed=seed, fold=0, tune={"C": grid}, inner_cv=3)
    row = res["folds"][0]
    assert row["tuned"] == {"C": chosen}
    for s, (C, auc, acc) in zip(row["tune_scores"], table):
        assert s["params"] == {"C": C}
        assert s["bag_auc"] == pytest.approx(auc) and s["bag_accuracy"] == pytest.approx(acc)
    # the refit: chosen C on the whole (standardised) outer training fold, scored on the test fold
    Btr, Bte = standardize(bags.subset(tr), bags.subset(te))
    est = get_method(METHOD).make({"C": chosen}, seed).fit(Btr)
    assert row["bag_accuracy"] == pytest.approx(evaluate(est, Bte)["bag_accuracy"])


@pytest.mark.parametrize("metric, expected", [("auc", 1.0), ("accuracy", 10.0)])
def test_criterion_and_tie_breaks(monkeypatch, metric, expected):
    # mean inner AUC ties between C=0.1 and C=1 (accuracy decides); accuracy is best at C=10
    fake = {0.1: (0.8, 0.6), 1.0: (0.8, 0.7), 10.0: (0.7, 0.9), 20.0: (0.7, 0.9)}
    monkeypatch.setattr(runner, "_fit_eval", lambda spec, params, seed, Btr, Bte, scale: {
        "bag_auc": fake[params["C"]][0], "bag_accuracy": fake[params["C"]][1]})
    bags = load(DATA)
    chosen, scores, warm = runner._select(get_method(METHOD), {}, 0, bags, {"C": [0.1, 1.0, 10.0, 20.0]}, 3, metric,
                                          True)
    assert warm == 0  # no exact solver: no path
    assert chosen == {"C": expected}  # C=20 ties C=10 on both metrics: the first in grid order wins
    assert [s["bag_auc"] for s in scores] == pytest.approx([0.8, 0.8, 0.7, 0.7])


def test_grid_is_the_cartesian_product_in_order():
    spec = get_method(METHOD)
    grid = runner.tune_grid(spec, {"C": ["1", "10"], "gamma": "0.5"})
    assert grid == {"C": [1.0, 10.0], "gamma": [0.5]}
    assert runner.grid_points({"C": [1, 10], "gamma": [0.1, 1]}) == [
        {"C": 1, "gamma": 0.1}, {"C": 1, "gamma": 1}, {"C": 10, "gamma": 0.1}, {"C": 10, "gamma": 1}]


def test_python_refusals():
    with pytest.raises(InvalidParameterError, match="--cv"):
        runner.run_fit(METHOD, DATA, tune={"C": [1, 10]})
    with pytest.raises(InvalidParameterError, match="C"):
        runner.run_fit(METHOD, DATA, cv=3, tune={"C": ["abc"]})
    with pytest.raises(InvalidParameterError, match="both given"):
        runner.run_fit(METHOD, DATA, cv=3, params={"C": 1}, tune={"C": [1, 10]})


def test_cli_json_and_table(capsys):
    code, out, err = run(capsys, "fit", METHOD, "--data", DATA, "--cv", "3", "--tune", "C=0.1,10",
                         "--inner-cv", "2", "--tune-metric", "accuracy", "--json", "--progress")
    assert code == 0, err
    assert "fold 1/3 (tuning: 2 grid points × 2 inner folds)" in err  # progress on stderr, JSON alone on stdout
    res = json.loads(out)
    assert res["tune"] == {"grid": {"C": [0.1, 10.0]}, "inner_cv": 2, "metric": "accuracy", "path_starts": 0}
    assert all(r["tuned"]["C"] in (0.1, 10.0) for r in res["folds"])
    assert "C" not in res["params"] and res["params"]["max_iter"] == 50  # tuned keys are per fold
    code, out, err = run(capsys, "fit", METHOD, "--data", DATA, "--cv", "3", "--tune", "C=0.1,10",
                         "--inner-cv", "2", "--quiet")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].rstrip().endswith("tuned")
    assert all("C=" in ln.split()[-1] for ln in lines[2:5])
    assert "nested CV" in lines[-1]


def test_cli_without_tune_is_unchanged(capsys):
    code, out, err = run(capsys, "fit", METHOD, "--data", DATA, "--cv", "3", "--json", "--quiet")
    assert code == 0, err
    res = json.loads(out)
    assert "tune" not in res and all("tuned" not in r and "tune_scores" not in r for r in res["folds"])
    assert res["params"]["C"] == 1.0


@pytest.mark.parametrize("argv, words", [
    (["--cv", "3", "--tune", "C=abc"], ["--tune C", "abc"]),
    (["--cv", "3", "--tune", "C=-1"], ["--tune C", "> 0"]),
    (["--tune", "C=1,10"], ["--tune needs --cv"]),
    (["--cv", "3", "--tune", "C=1,10", "--set", "C=2"], ["--tune C and --set C"]),
    (["--cv", "3", "--tune", "Cc=1"], ["unknown key", "Cc"]),
    (["--cv", "3", "--tune", "C"], ["key=v1,v2"]),
    (["--cv", "3", "--tune", "C=1,"], ["empty value"]),
    (["--cv", "3", "--tune", "C=1", "--tune", "C=2"], ["twice"]),
    (["--cv", "3", "--tune", "scale=true"], ["scale", "data"]),
    (["--cv", "3", "--tune", "C=1", "--inner-cv", "1"], ["--inner-cv 1"]),
    (["--cv", "3", "--tune", "C=1", "--tune-metric", "f1"], ["--tune-metric", "auc, accuracy"]),
    (["--cv", "3", "--inner-cv", "2"], ["only with --tune"]),
    (["--cv", "3", "--tune", "C=1", "--inner-cv", "15"], ["--inner-cv 15", "smallest class"]),
])
def test_cli_bad_input_one_line_exit_2(capsys, argv, words):
    code, out, err = run(capsys, "fit", METHOD, "--data", DATA, "--quiet", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err
