"""benchmarks/bnb_generalisation.py: the paired statistics and one small cross-validation."""
import json

import numpy as np
import pytest
from benchmark_script import load_benchmark


@pytest.fixture(scope="module")
def study():
    return load_benchmark("bnb_generalisation")


def test_paired_counts_and_wilcoxon(study):
    from scipy.stats import wilcoxon

    x = np.array([0.9, 0.8, 0.7, 1.0, 0.6, 0.5, np.nan])
    y = np.array([0.8, 0.8, 0.9, 0.7, 0.5, 0.4, 0.3])
    p = study.paired(x, y)
    assert (p["wins"], p["ties"], p["losses"]) == (4, 1, 1)            # the NaN pair is skipped
    assert p["p"] == pytest.approx(wilcoxon([0.1, -0.2, 0.3, 0.1, 0.1]).pvalue)
    assert p["mean_difference"] == pytest.approx(np.mean([0.1, 0.0, -0.2, 0.3, 0.1, 0.1]))
    assert study.paired([0.5, 0.7], [0.5, 0.7])["p"] == 1.0             # all ties


def test_small_cross_validation(study, tmp_path, capsys):
    """Three folds of a small generated set: bnb proves every fold, its Φ is never above a
    heuristic's, the summary and the pooled comparison agree with the rows."""
    out = tmp_path / "run.json"
    study.main(["--data", "gen:digits?bags=15&seed=3", "--folds", "3", "--time-limit", "60", "--restarts", "3",
                "--anneal", "4", "--no-pdmisvm", "--json", "--out", str(out)])
    doc = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text())["summary"] == doc["summary"]
    rows = doc["rows"]
    assert {r["method"] for r in rows} == set(study.METHODS) and len(rows) == 3 * len(study.METHODS)
    for k in range(3):
        fr = {r["method"]: r for r in rows if r["fold"] == k}
        assert fr["optimum"]["termination"] == "optimal"
        for m in study.HEURISTICS:
            assert fr["optimum"]["phi"] <= fr[m]["phi"] + 1e-6 * max(1.0, fr[m]["phi"])
        assert 0.0 <= fr["optimum"]["accuracy"] <= 1.0
    s = doc["summary"]
    assert s["proved"] == 3 and s["folds"] == 3
    assert s["methods"]["optimum"]["phi"][0] == pytest.approx(np.mean([r["phi"] for r in rows
                                                                        if r["method"] == "optimum"]))
    assert study.pooled([doc])["paired"] == s["paired"]


def test_tuned_c_study(study, capsys):
    """C tuned per method by an inner CV: every tuned row is the method's grid row at a C of
    the grid, the grid holds every method at every C, the optimum's Φ at each C is never
    above a heuristic's at that C."""
    study.main(["--data", "gen:digits?bags=18&seed=3", "--folds", "3", "--inner", "2", "--Cs", "1,0.3",
                "--time-limit", "60", "--restarts", "2", "--anneal", "3", "--no-pdmisvm", "--only", "0", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["Cs"] == [0.3, 1.0]
    grid, rows = doc["grid"], doc["rows"]
    assert len(grid) == 2 * len(study.METHODS) and len(rows) == len(study.METHODS)
    for r in rows:
        g = next(x for x in grid if x["method"] == r["method"] and x["C"] == r["C"])
        assert r["auc"] == g["auc"] and set(r["inner_auc"]) == {"0.3", "1.0"}
        assert 0.0 <= r["balanced_accuracy"] <= 1.0
    for C in doc["Cs"]:
        at = {x["method"]: x for x in grid if x["C"] == C}
        assert at["optimum"]["termination"] == "optimal"
        for m in study.HEURISTICS:
            assert at["optimum"]["phi"] <= at[m]["phi"] + 1e-6 * max(1.0, at[m]["phi"])
    assert set(doc["at_C"]) == {"0.3", "1.0"}
