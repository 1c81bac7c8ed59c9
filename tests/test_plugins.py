"""The extension recipe of docs/architecture.md, followed by a plugin loaded at run time.

``examples/toy_plugin.py`` adds a formulation (``sil-l1-lp``), a fit method
(``centroid-svm``) and a backend (``scipy-lp``) through the ordinary registration functions.
Copied to a temporary folder and loaded with ``--plugin FILE`` (CLI) or a bench
configuration's ``imports``, each appears in ``milopt list``, solves, exports, fits and
benches, with no edit anywhere else in milopt.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "toy_plugin.py"
DATA = "gen:digits?bags=12&max_size=4&seed=0"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugin")
    p = d / "my_plugin.py"
    shutil.copy(EXAMPLE, p)
    return p


def _cli(plugin, *args):
    """Run ``milopt --plugin PLUGIN ARGS --json`` in a fresh process (no registration leaks)."""
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "--plugin", str(plugin), *args, "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_plugin_appears_in_list(plugin):
    out = _cli(plugin, "list")
    assert "sil-l1-lp" in out["formulations"]
    assert out["formulations"]["sil-l1-lp"]["keys"] == {"C": "cost of an instance slack"}
    assert "centroid-svm" in out["methods"]
    assert out["solvers"]["scipy-lp"]["installed"] and out["solvers"]["scipy-lp"]["classes"] == ["LP"]


def test_plugin_formulation_solves_with_plugin_and_builtin_backends(plugin):
    a = _cli(plugin, "solve", "sil-l1-lp", "--data", DATA, "--solver", "scipy-lp", "--set", "C=2")
    b = _cli(plugin, "solve", "sil-l1-lp", "--data", DATA, "--solver", "highs", "--set", "C=2")
    assert a["status"] == b["status"] == "optimal"
    assert a["solver"] == "scipy-lp" and a["params"] == {"C": 2.0}
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-6)
    # the plugin backend refuses what it does not declare, before building
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "--plugin", str(plugin), "solve", "misvm-bigm",
                        "--data", DATA, "--solver", "scipy-lp"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "scipy-lp cannot solve MIQP" in r.stderr


def test_plugin_formulation_exports_and_rereads(plugin, tmp_path):
    import highspy

    f = tmp_path / "toy.mps"
    out = _cli(plugin, "export", "sil-l1-lp", "--data", DATA, "-o", str(f))
    assert f.is_file() and out["model_size"]["variables"] > 0
    solved = _cli(plugin, "solve", "sil-l1-lp", "--data", DATA, "--solver", "highs")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(f))
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(solved["objective"], rel=1e-6)


def test_plugin_formulation_and_method_fit(plugin):
    a = _cli(plugin, "fit", "sil-l1-lp", "--data", DATA, "--cv", "3", "--set", "solver=scipy-lp")
    assert len(a["folds"]) == 3 and 0 <= a["mean"]["bag_accuracy"] <= 1
    assert all(r["termination"] == "optimal" for r in a["folds"])
    b = _cli(plugin, "fit", "centroid-svm", "--data", DATA, "--cv", "3", "--set", "C=0.5")
    assert len(b["folds"]) == 3 and b["params"]["C"] == 0.5


def test_plugin_benches(plugin, tmp_path):
    """A configuration naming the plugin's formulation, backend and method, with the plugin in ``imports``."""
    import pandas as pd

    from milopt.bench.harness import run_bench

    cfg = {"name": "plugin", "time_limit": 30, "folds": 2, "data": [DATA], "imports": [str(plugin)],
           "solve": [{"formulation": "sil-l1-lp", "solvers": ["scipy-lp", "highs"]}],
           "fit": [{"method": "centroid-svm"}]}
    out = tmp_path / "out"
    run_bench(cfg, out=str(out), progress=False)

    runs = pd.read_csv(out / "runs.csv")
    assert set(runs["contender"]) >= {"scipy-lp", "highs", "centroid-svm"}
    assert (runs["outcome"] == "ok").all(), runs[["contender", "outcome"]]


def test_register_formulation_accepts_a_module_with_the_module_contract(tmp_path):
    """The former module-level contract (PARAMS tuples, build, decode, PROBLEM_CLASS) still registers."""
    from milopt import models
    from milopt.data import load
    from milopt.estimators.registry import get_method
    from milopt.plugins import load as load_plugin

    mod_file = tmp_path / "mod_contract.py"
    mod_file.write_text(f"""
import sys
from milopt.models import register_formulation
from milopt.plugins import load
_toy = load({str(EXAMPLE)!r})
PROBLEM_CLASS = "LP"
PARAMS = {{"C": (float, 1.0, "cost")}}
build, decode = _toy.build, _toy.decode
register_formulation(sys.modules[__name__], "sil-l1-lp-legacy")
""")
    load_plugin(str(mod_file))
    f = models.formulation("sil-l1-lp-legacy")
    assert f.problem_class(C=1) == ("LP", ())
    assert f.params["C"].parse("2") == 2.0
    est = get_method("sil-l1-lp-legacy").make({"C": "3", "solver": "highs"})
    bags = load(DATA)
    est.fit(bags)
    assert est.predict(bags).shape == (bags.n_bags,)
