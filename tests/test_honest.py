"""Results that never mislead: termination words that mean what they say, degenerate models
reported, help that answers (defaults and meanings), ``--plugin`` anywhere."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import milopt
from milopt.cli import main, plugins_first
from milopt.data.bags import Bags
from milopt.errors import DegenerateModelWarning
from milopt.metrics import cross_validate, degenerate
from milopt.solvers.result import TERMINATION_NOTES, SolutionStatus, Termination, finish, native

ROOT = Path(__file__).resolve().parents[1]
SMALL = "gen:digits?bags=12&max_size=4&seed=0"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def uninformative_bags(n=40, seed=0) -> Bags:
    """Pure-noise features; negative bags hold four times as many instances as positive ones.

    An instance SVM with the bag label copied (SIL) then scores some instance of every bag
    above zero, so the max rule calls every bag positive: the degenerate model of a new user."""
    rng = np.random.default_rng(seed)
    arrs, y = [], []
    for j in range(n):
        pos = j % 2 == 0
        arrs.append(rng.normal(size=(3 if pos else 12, 5)))
        y.append(int(pos))
    return Bags.from_arrays(arrs, np.array(y))


def write_csv(bags: Bags, path: Path) -> Path:
    rows = np.column_stack([bags.instance_bag_y, bags.bag_index, bags.X])
    np.savetxt(path, rows, delimiter=",", fmt=["%d", "%d"] + ["%.6f"] * bags.n_features)
    return path


# ------------------------------------------------------------------ vocabulary
def test_termination_vocabulary_and_docs_table():
    words = {t.value for t in Termination}
    assert {"optimal", "converged", "early_stopped", "iteration_limit", "time_limit", "infeasible", "error",
            "unbounded", "interrupted", "unknown"} <= words
    assert set(TERMINATION_NOTES) == words
    doc = (ROOT / "docs" / "statuses.md").read_text()
    table = {m.group(1) for m in re.finditer(r"^\| `([a-z_]+)` \|", doc, re.M)}
    assert table == words, words ^ table


@pytest.mark.parametrize("term", list(Termination))
def test_native_never_reports_optimal(term):
    r = native("x", term, 1.5, 0.1)
    assert r.termination != Termination.OPTIMAL and r.status != SolutionStatus.OPTIMAL
    assert r.bound is None and r.gap == float("inf")
    if term == Termination.OPTIMAL:  # a method's own stopping test is convergence, not a proof
        assert r.termination == Termination.CONVERGED and r.status == SolutionStatus.FEASIBLE
    # a proof goes through finish(): optimal with its bound and gap
    p = finish("x", "1", "QP", Termination.OPTIMAL, True, 2.0, 2.0, 0.1)
    assert p.status == SolutionStatus.OPTIMAL and p.gap == 0.0


def test_pdmisvm_reports_converged_not_optimal(capsys):
    code, out, err = run(capsys, "fit", "pdmisvm", "--data", SMALL, "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["train"]["termination"] == "converged"
    code, out, err = run(capsys, "fit", "pdmisvm", "--data", SMALL)
    assert "termination: converged" in out and "nothing is proven" in out
    assert not re.search(r"\boptimal\b", out)


def test_vgpmil_early_stopping_reports_early_stopped():
    b = milopt.load("gen:digits?bags=40&max_size=4&seed=3")
    model = milopt.estimator("vgpmil", n_inducing=10, patience=2, max_iter=200, scale=False).fit(b)
    assert model.fit_info_["stopping"] == "early_stopping"
    assert model.fit_info_["termination"] in ("early_stopped", "iteration_limit")
    if model.fit_info_["selected_epochs"] < 200:
        assert model.fit_info_["termination"] == "early_stopped"
    off = milopt.estimator("vgpmil", n_inducing=10, early_stopping=False, max_iter=400, scale=False).fit(b)
    assert off.fit_info_["termination"] == "converged"


def test_batchpsvm_theta_loop_reports_its_iterations_and_convergence():
    b = milopt.load("gen:cad?images=10&features=12&candidates=20&seed=5")
    est = milopt.estimator("batchpsvm-learned", scale=False).fit(b)
    info = est.fit_info_ if hasattr(est, "fit_info_") else est[-1].fit_info_
    assert info["theta_converged"] is True and info["termination"] == "converged"
    assert info["theta_iterations"] == info["iterations"] >= 1
    capped = milopt.estimator("batchpsvm-learned", max_iter=1, tol=1e-12, scale=False).fit(b)
    assert capped.fit_info_["theta_converged"] is False
    assert capped.fit_info_["termination"] == "iteration_limit" and capped.fit_info_["theta_iterations"] == 1
    fixed = milopt.estimator("batchpsvm", theta=0.5, scale=False).fit(b)
    assert fixed.fit_info_["termination"] == "converged" and "theta_converged" not in fixed.fit_info_


def test_heuristics_report_their_stop():
    b = milopt.load(SMALL)
    est = milopt.estimator("misvm-heuristic", scale=False).fit(b)
    assert est.fit_info_["termination"] == ("converged" if est.fit_info_["converged"] else "iteration_limit")
    one = milopt.estimator("misvm-heuristic", max_iter=1, init="first", scale=False).fit(b)
    assert one.fit_info_["termination"] in ("iteration_limit", "converged")
    mi = milopt.estimator("mi-svm-heuristic", scale=False).fit(b)
    assert mi.fit_info_["termination"] in ("converged", "iteration_limit")


def test_fit_table_explains_non_optimal_terminations(capsys):
    code, out, err = run(capsys, "fit", "misvm-heuristic", "--data", SMALL, "--cv", "2")
    assert code == 0, err
    assert "termination / gap" in out and "converged / no bound" in out
    assert "note: converged:" in out


# ------------------------------------------------------------- degenerate models
def test_degenerate_finder():
    assert degenerate([1, 1, 1], [0.2, 0.5, 0.1]) == "every bag predicted positive (3 bags)"
    assert degenerate([-1, -1], [-2.0, -1.0], classes=np.array([-1, 1])) == "every bag predicted negative (2 bags)"
    assert degenerate([0, 1, 1], [0.3, 0.3, 0.3]) == "all bag scores are equal (3 bags)"
    assert degenerate([0, 1], [0.1, 0.9]) is None
    assert degenerate([1], [0.5]) is None


def test_estimator_warns_on_a_degenerate_fit():
    bags = uninformative_bags()
    with pytest.warns(DegenerateModelWarning, match="every bag predicted positive"):
        # the margin rule (threshold=zero): the default rule, chosen on held-out scores, avoids this model
        est = milopt.estimator("sil", scale=False, class_weight="balanced-instances", kernel="linear",
                               threshold="zero").fit(bags)
    assert est.degenerate_ == "every bag predicted positive (40 bags)"
    good = milopt.load(SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        est = milopt.estimator("misvm-heuristic", scale=False).fit(good)
    assert est.degenerate_ is None


def test_cross_validate_lists_degenerate_folds():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateModelWarning)
        res = cross_validate(milopt.estimator("sil", scale=False, class_weight="balanced-instances", kernel="linear",
                                              threshold="zero"),
                             uninformative_bags(), k=4, seed=0, scale=False)
    flagged = [r["fold"] for r in res["folds"] if r.get("warnings")]
    assert flagged, "this noise data set gives degenerate folds"
    assert any(w.startswith(f"degenerate model in {len(flagged)} of 4 folds") and "every bag predicted positive" in w
               for w in res["warnings"])


def test_cli_fit_reports_degenerate_folds_on_stderr_and_in_json(capsys, tmp_path):
    csv = write_csv(uninformative_bags(), tmp_path / "noise.csv")
    code, out, err = run(capsys, "fit", "sil", "--data", str(csv), "--cv", "4", "--set", "class_weight=balanced-instances",
                         "kernel=linear", "threshold=zero", "--json")
    assert code == 0, err
    res = json.loads(out)  # stdout is one JSON document
    assert res["warnings"] and all(w.startswith("degenerate model in ") for w in res["warnings"])
    assert "held-out bags: every bag predicted positive" in " ".join(res["warnings"])
    flagged = [str(r["fold"]) for r in res["folds"] if r.get("warnings")]
    assert any(f"of 4 folds ({', '.join(flagged)})" in w for w in res["warnings"]) or len(res["warnings"]) > 1
    lines = [ln for ln in err.splitlines() if ln.startswith("milopt: warning:")]
    assert lines and len(lines) == len(res["warnings"])
    code, out, err = run(capsys, "fit", "sil", "--data", str(csv), "--set", "class_weight=balanced-instances", "kernel=linear",
                         "threshold=zero", "--json")
    res = json.loads(out)
    assert res["warnings"] == ["degenerate model: training bags: every bag predicted positive (40 bags)"]
    # an informative model: the field is there and empty, nothing on stderr
    code, out, err = run(capsys, "fit", "misvm-heuristic", "--data", SMALL, "--cv", "2", "--json")
    assert json.loads(out)["warnings"] == [] and "warning" not in err


# ------------------------------------------------------------------------- help
def test_list_shows_every_key_with_default_and_meaning(capsys):
    code, out, err = run(capsys, "list", "--json")
    assert code == 0, err
    res = json.loads(out)
    from milopt.estimators.registry import methods

    # the package's own methods (tests and plugins may have registered others in this process)
    own = {n for n, m in methods().items() if m.cls.__module__.startswith("milopt.")}
    for sec in ("methods", "formulations"):
        for name, v in res[sec].items():
            if sec == "methods" and name not in own:
                continue
            for k, p in v["params"].items():
                assert "default" in p and p["help"], f"{sec} {name}: key {k} has no help"
    code, out, err = run(capsys, "list", "misvm-heuristic")
    assert "C = 1.0" in out and "scale_C = true" in out and "formulations" not in out
    code, out, err = run(capsys, "list", "no-such-thing")
    assert code == 2 and "unknown name" in err


def test_help_states_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = capsys.readouterr().out
    out = " ".join(out.split())
    assert "(default: 0)" in out and "milopt list METHOD" in out


def test_plugin_accepted_anywhere(tmp_path):
    assert plugins_first(["fit", "m", "--plugin", "p.py", "--plugin=q.py"]) == ["--plugin", "p.py", "--plugin=q.py",
                                                                                 "fit", "m"]
    p = tmp_path / "my_plugin.py"
    p.write_text((ROOT / "examples" / "toy_plugin.py").read_text())
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "list", "centroid-svm", "--json", "--plugin", str(p)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "centroid-svm" in json.loads(r.stdout)["methods"]


# ---------------------------------------------------------------- class weights
def test_balanced_class_weights_are_scikit_learns_over_bags():
    from milopt.estimators.base import class_weights

    y = np.array([1, 1, 1, 0])
    w = class_weights(y, "balanced")
    np.testing.assert_allclose(w, [4 / 6, 4 / 6, 4 / 6, 2.0])   # n / (K n_k)
    np.testing.assert_allclose(w[y == 1].sum(), w[y == 0].sum())
    assert class_weights(y, "none") is None
    with pytest.raises(milopt.errors.InvalidParameterError, match="class_weight"):
        class_weights(y, "bogus")


@pytest.mark.parametrize("method", ["sil", "misvm-heuristic", "pdmisvm", "misvm-miqp", "mi-svm-heuristic",
                                    "batchpsvm", "mismm-heuristic"])
def test_balanced_is_accepted_everywhere(method):
    from milopt.estimators.registry import get_method

    spec = get_method(method)
    assert "class_weight" in spec.params
    spec.validate({"class_weight": "balanced"})


def test_pdmisvm_balanced_weights_equal_none_on_balanced_bags_and_change_the_fit_otherwise():
    from milopt.algorithms.pdmisvm import objective

    b = milopt.load(SMALL)
    sub = b.subset(np.flatnonzero((b.y == 0) | (np.cumsum(b.y == 1) <= 2)))   # 2 positive bags, the rest negative
    a = milopt.estimator("pdmisvm", scale=False, class_weight="none", C=1.0).fit(sub)
    w = milopt.estimator("pdmisvm", scale=False, class_weight="balanced", C=1.0).fit(sub)
    assert a.result_.objective == pytest.approx(objective(a.coef_.T, a.intercept_, sub.X, sub.bag_ptr, sub.y, 1.0))
    assert not np.allclose(a.coef_, w.coef_)
