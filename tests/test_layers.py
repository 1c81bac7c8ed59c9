"""The recipes and the shared mathematics: adding a formulation is one new file; the model record
(ModelInfo) and its old attribute names are one value; the Pyomo-free MI-SVM mathematics agrees
with the algorithms that use it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

RECIPE = '''\
r"""Single-instance 1-norm SVM LP (recipe check): min e'v + C sum xi s.t. y_i (w x_i + b) + xi_i >= 1, v >= |w|."""
import numpy as np
import pyomo.environ as pe

from milopt.params import Float, ParamSet

PARAMS = ParamSet(C=Float(1.0, "slack cost", gt=0))
PROBLEM_CLASS = "LP"


def build(bags, C=1.0):
    X, y = bags.X, np.where(bags.instance_bag_y == 1, 1.0, -1.0)
    n, d = X.shape
    m = pe.ConcreteModel()
    m.w = pe.Var(range(d))
    m.v = pe.Var(range(d), domain=pe.NonNegativeReals)
    m.b = pe.Var()
    m.xi = pe.Var(range(n), domain=pe.NonNegativeReals)
    m.fit = pe.Constraint(range(n), rule=lambda mdl, i: float(y[i]) * (sum(float(X[i, k]) * mdl.w[k] for k in range(d))
                                                                       + mdl.b) + mdl.xi[i] >= 1)
    m.pos = pe.Constraint(range(d), rule=lambda mdl, k: mdl.v[k] >= mdl.w[k])
    m.neg = pe.Constraint(range(d), rule=lambda mdl, k: mdl.v[k] >= -mdl.w[k])
    m.obj = pe.Objective(expr=sum(m.v[k] for k in range(d)) + C * sum(m.xi[i] for i in range(n)))
    return m


def decode(model):
    d = len(model.w)
    return {"w": np.array([pe.value(model.w[k]) for k in range(d)]), "b": float(pe.value(model.b))}
'''


@pytest.fixture
def recipe_module():
    """Write one new formulation module into the package folder (and remove it afterwards)."""
    stem = f"zz_recipe_{os.getpid()}"
    path = ROOT / "milopt" / "models" / f"{stem}.py"
    path.write_text(RECIPE)
    try:
        yield stem.replace("_", "-")
    finally:
        path.unlink()


def _milopt(*args):
    r = subprocess.run([sys.executable, "-m", "milopt.cli", *args], capture_output=True, text=True, timeout=600,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.highs
def test_a_formulation_is_one_new_file(recipe_module, tmp_path):
    """No other edit: ``milopt list`` shows it with its keys, ``milopt solve`` solves it,
    ``milopt export`` writes it and ``milopt fit`` fits it."""
    listed = _milopt("list", "--json")
    forms = listed["formulations"]
    entry = forms[recipe_module] if isinstance(forms, dict) else next(f for f in forms if f.get("name") == recipe_module)
    assert "C" in json.dumps(entry)
    out = _milopt("solve", recipe_module, "--data", "gen:kent-yu?scenario=1&bags=10&seed=0", "--solver", "highs",
                  "--set", "C=2", "--json")
    assert out["termination"] == "optimal" and out["objective"] > 0
    f = tmp_path / "recipe.lp"
    exported = _milopt("export", recipe_module, "--data", "gen:kent-yu?scenario=1&bags=10&seed=0", "-o", str(f),
                       "--json")
    assert f.is_file() and all(exported["model_size"][k] == out["model_size"][k] for k in ("variables", "constraints"))
    fitted = _milopt("fit", recipe_module, "--data", "gen:kent-yu?scenario=1&bags=10&seed=0", "--cv", "2",
                     "--set", "solver=highs", "--json")
    assert all(r["termination"] == "optimal" for r in fitted["folds"])


def test_discovery_reads_without_importing(recipe_module):
    code = textwrap.dedent(f"""
        import sys
        from milopt import models
        assert {recipe_module!r} in models.names()
        assert "milopt.models.{recipe_module.replace('-', '_')}" not in sys.modules and "pyomo" not in sys.modules
        assert "info" not in models.names()        # helpers (no build/decode) are not formulations
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_model_info_and_old_names_are_one_value():
    import milopt
    from milopt.models import formulation
    from milopt.models.info import LEGACY_NAMES, MILModel, ModelInfo, info

    bags = milopt.load("gen:kent-yu?scenario=1&bags=8&seed=1")
    m = formulation("misvm-bigm").build(bags, disjunction="indicator", warm_start=True, branch_priority="bagsize")
    rec = info(m)
    assert isinstance(m, MILModel) and isinstance(rec, ModelInfo)
    assert rec.formulation == "misvm-bigm" and rec.problem_class == "MIQP" and rec.features == ("INDICATOR",)
    assert rec.start is True and rec.bags is bags and rec.indicators and rec.branch_priority
    for field, attr in LEGACY_NAMES.items():
        assert getattr(m, attr) is getattr(rec, field), attr
    m._milopt_start = False                     # a write through the old name reaches the record
    assert rec.start is False
    c = m.clone()
    assert info(c).problem_class == "MIQP" and info(c) is not rec


def test_info_of_a_plain_pyomo_model():
    import pyomo.environ as pe

    from milopt.models.info import info

    m = pe.ConcreteModel()
    m._milopt_class = "LP"
    m._milopt_features = ["SOS"]
    rec = info(m)
    assert rec.problem_class == "LP" and rec.features == ("SOS",) and rec.meta == {} and rec.start is False


@pytest.mark.parametrize("slack", ["bag", "instance"])
def test_the_alternation_below_the_models_is_the_heuristic(slack):
    """milopt.mil.alternation (used by the models' incumbent) gives what the MI-SVM heuristic gives."""
    import milopt
    from milopt.algorithms.mi_heuristics import misvm_alternate as heuristic
    from milopt.mil.alternation import misvm_alternate
    from milopt.numerics import standardize

    bags = standardize(milopt.load("gen:kent-yu?scenario=2&bags=16&seed=4"))
    K = bags.X @ bags.X.T
    kw = dict(C=1.0, slack=slack, init="sil", restarts=2, random_state=3)
    a, b = misvm_alternate(K, bags, **kw, X=bags.X), heuristic(K, bags, **kw, X=bags.X)
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-10)
    np.testing.assert_array_equal(a["witnesses"], b["witnesses"])
    assert [h["objective"] for h in a["history"]] == pytest.approx([h["objective"] for h in b["history"]])


def test_one_objective_for_both_slack_forms():
    """numerics.objective_from_scores is the heuristic's mi_objective and, for bag slacks, misvm_objective."""
    import milopt
    from milopt.algorithms.mi_heuristics import mi_objective
    from milopt.numerics import misvm_objective, objective_from_scores

    bags = milopt.load("gen:kent-yu?scenario=1&bags=12&seed=2")
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=bags.n_features), 0.3
    s = bags.X @ w + b
    for slack in ("bag", "instance"):
        for cw in ("kent-yu", "balanced", "none"):
            assert objective_from_scores(bags, s, 0.5 * w @ w, 2.0, cw, slack) == pytest.approx(
                mi_objective(bags, s, w @ w, 2.0, cw, slack), rel=1e-12)
    assert misvm_objective(bags, w, b, 2.0) == pytest.approx(objective_from_scores(bags, s, 0.5 * w @ w, 2.0))


def test_dcpca_bundle_for_the_direction_model_is_dcpca_s():
    import milopt
    from milopt.algorithms.dcmil import dcpca
    from milopt.mil.dcmil import bundle_after

    bags = milopt.load("gen:kent-yu?scenario=1&bags=12&seed=5")
    G1, A1, g2 = bundle_after(bags, 1.5, iterations=4)
    r = dcpca(bags, C=1.5, max_iter=4, theta=0.0, keep_bundle=True, history=False)
    for x, y in zip((G1, A1, g2), r.extra["bundle"]):
        np.testing.assert_array_equal(x, y)


def test_every_package_is_installed():
    """Each package folder (an ``__init__.py``) is in pyproject's package list, so that a
    non-editable install has it."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("milopt", *p.parent.relative_to(ROOT / "milopt").parts)).rstrip(".")
             for p in (ROOT / "milopt").rglob("__init__.py")}
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"
