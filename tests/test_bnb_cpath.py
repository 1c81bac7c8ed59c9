"""benchmarks/bnb_cpath.py: the warm-started C path certifies the same optima as independent
solves, and neighbouring optima obey v(C1) <= v(C2) <= (C2 / C1) v(C1)."""
import json

import pytest
from benchmark_script import load_benchmark


def test_path_and_independent_solves_agree(capsys):
    bench = load_benchmark("bnb_cpath")
    bench.main(["--data", "gen:digits?bags=14&seed=5", "--Cs", "1,0.3,3", "--set", "kick_seconds=0.2", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["Cs"] == [0.3, 1.0, 3.0]
    path = {r["C"]: r for r in doc["rows"] if r["mode"] == "path"}
    alone = {r["C"]: r for r in doc["rows"] if r["mode"] == "independent"}
    assert set(path) == set(alone) == {0.3, 1.0, 3.0}
    for C in path:
        assert path[C]["termination"] == alone[C]["termination"] == "optimal"
        assert path[C]["objective"] == pytest.approx(alone[C]["objective"], rel=1e-4, abs=1e-7)
        assert path[C]["cpu"] > 0 and path[C]["incumbent_cpu"] is not None
    assert len(doc["checks"]) == 2 and all(c["holds"] for c in doc["checks"])


def test_nested_cv_with_the_exact_solver_runs_the_c_path_and_decides_the_same(capsys):
    """``milopt fit misvm-bigm --set solver=bnb --cv K --tune C=...``: the grid of each inner
    training set is solved as a path (every C after the first started from the previous
    optimum), and the chosen C, the inner scores, the outer objectives and test metrics equal
    those of independent inner fits."""
    bench = load_benchmark("bnb_cpath")
    bench.main(["--tune", "--data", "gen:digits?bags=16&seed=5", "--cv", "2", "--inner", "2", "--Cs", "0.3,1,3",
                "--json"])
    doc = json.loads(capsys.readouterr().out)
    runs = doc["runs"]
    assert runs["independent"]["path_starts"] == 0
    assert runs["path"]["path_starts"] == 2 * 2 * 2      # outer folds x inner folds x (grid size - 1)
    assert doc["same"], (runs["independent"]["folds"], runs["path"]["folds"])
    for f in runs["path"]["folds"]:
        assert f["termination"] == "optimal" and f["tuned"]["C"] in (0.3, 1.0, 3.0)
        assert len(f["tune_scores"]) == 3


def test_the_path_context_starts_each_c_from_the_previous_optimum():
    """Inside ``c_path`` a second solve on the same bags gets the first one's point and the
    short start schedule; on other bags it starts a new path."""
    from milopt.data import load
    from milopt.metrics import standardize
    from milopt.solvers.bnb import c_path
    from milopt.solvers.pipeline import build_and_solve
    import milopt.models as models

    form = models.formulation("misvm-bigm")
    a, b = standardize(load("gen:digits?bags=12&seed=1")), standardize(load("gen:digits?bags=12&seed=2"))
    with c_path() as path:
        vals = []
        for bags, C in ((a, 0.5), (a, 2.0), (b, 2.0)):
            run = build_and_solve(form, bags, form.validate({"C": C}), "bnb", time_limit=30, warm_start=True)
            vals.append(run.result)
        assert path["solves"] == 3 and path["warm"] == 1
    assert all(r.termination == "optimal" for r in vals)
    assert vals[1].extra["options"]["anneal"] == 0 and vals[0].extra["options"]["anneal"] > 0
    assert vals[2].extra["options"]["anneal"] > 0
