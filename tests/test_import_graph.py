"""The package's imports follow the documented layers, have no cycle, and light commands import
only what they need.

Edges are the ``import`` / ``from ... import`` statements of every module of ``milopt`` (the
folder ``milopt/``, the formulations in ``milopt/models/``), at module level *and*
inside functions (a lazy import is still a dependency); ``from pkg import name`` counts as an
edge to ``pkg.name`` when that is a module, to the module a package resolves the name from
lazily (``milopt.solvers.solve`` -> ``milopt.solvers.driver``), else to ``pkg``.  **Registry
lookups are edges too**: ``formulation("dcmil-dca")`` / ``models.get("dcmil-dca")`` is an edge to
the module the name is catalogued under (``milopt.models.dcmil_dca``), and calling the driver
(``solve(...)``, ``get_backend(...)``) an edge to ``milopt.solvers.driver``.  The catalogues
themselves (``FORMULATIONS``, ``METHOD_MODULES``, ``GENERATOR_MODULES``, ``BUILTIN_BACKENDS``)
are not edges: the registering module depends on its registry, never the reverse.

:data:`LAYERS` is the table of docs/architecture.md ("Layers"), lowest first; a module may
import its own layer and the layers below, never one above (:data:`ALLOWED_UP` lists the single
exception).  A module that is in no layer fails the test: add it to the table here and in
docs/architecture.md.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ((ROOT / "milopt", "milopt"),)

#: (layer, module prefixes), lowest first; the longest matching prefix places a module
LAYERS = (
    ("foundation", ("milopt.errors", "milopt.jsonutil", "milopt._startup", "milopt._version", "milopt.processes")),
    ("declarations and results", ("milopt.params", "milopt.plugins", "milopt.matrix", "milopt.solvers.result")),
    ("data and QP solvers", ("milopt.segments", "milopt.data", "milopt.features", "milopt.io", "milopt.qp")),
    ("MIL mathematics", ("milopt.numerics", "milopt.mil")),
    ("models", ("milopt.models",)),
    ("solvers", ("milopt.solvers",)),
    ("algorithms", ("milopt.algorithms",)),
    ("estimators", ("milopt.estimators", "milopt.metrics", "milopt.froc")),
    ("runner", ("milopt.runner", "milopt.study")),
    ("commands", ("milopt.cli", "milopt.cli_parser", "milopt.bench", "milopt")),
)
#: the one edge that goes up: the ``bnb`` backend is a thin adapter over the algorithm package
ALLOWED_UP = {("milopt.solvers.bnb", "milopt.algorithms.bnb")}
#: calls that reach the solver driver without importing it by name
DRIVER_CALLS = {"solve", "get_backend"}


def modules() -> dict[str, Path]:
    out = {}
    for base, pkg in PACKAGES:
        for f in sorted(base.rglob("*.py")):
            parts = [pkg, *f.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


def _resolve(name: str, mods) -> str | None:
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def _literal(path: Path, name: str) -> dict:
    """The dict literal assigned to ``name`` at module level in ``path`` ({} when absent)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def _lazy_names(mods) -> dict:
    """Package -> {name: submodule} for packages that resolve names lazily (``_WHERE``)."""
    out = {}
    for m, f in mods.items():
        if f.name == "__init__.py":
            where = _literal(f, "_WHERE")
            if where:
                out[m] = {k: f"{m}.{v}" for k, v in where.items()}
    return out


def _registry_targets(tree, imported: dict, formulations: dict) -> set:
    """Modules reached by registry lookups and driver calls in ``tree``."""
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else (fn.attr if isinstance(fn, ast.Attribute) else None)
        owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) else None
        arg = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        from_models = (owner == "models") or imported.get(name) == "milopt.models"
        if name in ("formulation", "get") and from_models and isinstance(arg, str):
            mod = formulations.get(arg) or (arg if arg in formulations.values() else None)
            if mod:
                out.add(f"milopt.models.{mod}")
        if name in DRIVER_CALLS and (owner in ("solvers", "driver")
                                     or imported.get(name, "").startswith("milopt.solvers")):
            out.add("milopt.solvers.driver")
    return out


def graph() -> dict[str, set]:
    mods = modules()
    lazy = _lazy_names(mods)
    formulations = _literal(ROOT / "milopt" / "models" / "__init__.py", "FORMULATIONS")
    g = {m: set() for m in mods}
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        tree = ast.parse(f.read_text(), str(f))
        imported = {}   # local name -> module it was imported from (for registry calls)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = m if is_pkg else m.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    mod = f"{base}.{node.module}" if node.module else base
                else:
                    mod = node.module or ""
                for a in node.names:
                    full = f"{mod}.{a.name}"
                    imported[a.asname or a.name] = full if full in mods else mod
                    targets.append(full if full in mods else lazy.get(mod, {}).get(a.name, mod))
            for t in targets:
                r = _resolve(t, mods)
                if r and r != m:
                    g[m].add(r)
        for r in _registry_targets(tree, imported, formulations):
            if r in mods and r != m:
                g[m].add(r)
    return g


def layer_of(module: str) -> int | None:
    best, best_len = None, -1
    for k, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = k, len(p)
    return best


def violations(g) -> list[str]:
    """Edges that go up the layer table (the root package ``milopt``, imported first by every
    module anyway, is not counted as a target)."""
    out = []
    for m, deps in sorted(g.items()):
        lm = layer_of(m)
        for d in sorted(deps):
            if d == "milopt" or (m, d) in ALLOWED_UP or any(m == a and d.startswith(b + ".") for a, b in ALLOWED_UP):
                continue
            ld = layer_of(d)
            if lm is not None and ld is not None and ld > lm:
                out.append(f"{m} ({LAYERS[lm][0]}) imports {d} ({LAYERS[ld][0]})")
    return out


def cycles(g) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    g = graph()
    assert "milopt.models.misvm_bigm" in g and "milopt.models._linear" in g["milopt.models.misvm_bigm"]
    assert "milopt.data.bags" in g["milopt.estimators.base"]
    assert "milopt.mil.bigm" in g["milopt.models.misvm_bigm"]


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _cycles_text(found) -> str:
    return "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_import_cycle():
    """No cycle anywhere in the package (imports inside functions included)."""
    found = cycles(graph())
    assert not found, _cycles_text(found)


def test_every_module_has_a_layer():
    missing = [m for m in graph() if layer_of(m) is None]
    assert not missing, f"modules in no layer (add them to LAYERS and docs/architecture.md): {missing}"


def test_imports_go_down_the_documented_layers():
    bad = violations(graph())
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_models_never_import_algorithms():
    """Nor the QP solvers that sit low (``milopt.qp``): a model reaches them through milopt.mil only."""
    g = graph()
    for m, deps in g.items():
        if m.startswith("milopt.models"):
            bad = [d for d in deps if d.startswith(("milopt.algorithms", "milopt.qp", "milopt.solvers",
                                                    "milopt.estimators", "milopt.cli", "milopt.runner",
                                                    "milopt.bench"))]
            assert not bad, f"{m} imports {bad}"


def test_results_are_a_low_layer():
    """SolveResult / Termination sit below everything that returns them: milopt.errors at most."""
    g = graph()
    assert g["milopt.solvers.result"] <= {"milopt.errors"}, g["milopt.solvers.result"]
    assert layer_of("milopt.solvers.result") < layer_of("milopt.models") < layer_of("milopt.solvers.driver")


def test_qp_solvers_import_only_the_errors():
    """``milopt.qp`` is numpy / LAPACK only: below the MIL mathematics that calls it."""
    g = graph()
    qp = [m for m in g if m == "milopt.qp" or m.startswith("milopt.qp.")]
    assert len(qp) >= 5, qp
    for m in qp:
        assert g[m] <= {"milopt.errors"} | set(qp), (m, g[m])
    assert layer_of("milopt.qp.svm_dcd") < layer_of("milopt.mil.alternation")
    assert "milopt.qp.svm_dcd" in g["milopt.mil.alternation"]


def test_registry_lookups_are_edges():
    g = graph()
    assert "milopt.models.dcmil_dca" in g["milopt.algorithms.dcmil"]      # models.get("dcmil-dca")
    assert "milopt.solvers.pipeline" in g["milopt.algorithms.dcmil"]      # build_and_solve(form, ...)
    # and the synthetic case: a lookup that closes a cycle is seen as one
    tree = ast.parse("from milopt import models\nfrom milopt.solvers import solve\n"
                     "def f(b):\n    m = models.get('dcmil-dca').build(b)\n    return solve(m, 'highs')\n")
    found = _registry_targets(tree, {"models": "milopt.models", "solve": "milopt.solvers"},
                              {"dcmil-dca": "dcmil_dca"})
    assert found == {"milopt.models.dcmil_dca", "milopt.solvers.driver"}


def test_a_violation_is_reported():
    assert violations({"milopt.models.x": {"milopt.algorithms.dcmil"}, "milopt.algorithms.dcmil": set()})
    assert not violations({"milopt.solvers.bnb": {"milopt.algorithms.bnb.search"}})


def test_the_documented_table_is_the_tested_table():
    """docs/architecture.md lists the same layers, in the same order, with the same modules."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \| ([^|]+) \|", text, flags=re.M)
    doc = [(name.strip(), tuple(re.findall(r"`([\w.]+)`", mods))) for _, name, mods in rows]
    assert doc == [(name, tuple(prefixes)) for name, prefixes in LAYERS]


def _imported_by(code: str) -> set:
    r = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import json

    return set(json.loads(r.stdout.strip().splitlines()[-1]))


def test_export_imports_neither_sklearn_nor_scipy_stats_nor_pandas(tmp_path):
    f = tmp_path / "m.mps"
    mods = _imported_by(f"from milopt.cli import main\nassert main(['export', 'misvm-bigm', '--data', "
                        f"'musk1', '-o', {str(f)!r}]) == 0")
    assert "sklearn" not in mods
    assert "scipy.stats" not in mods
    assert "pandas" not in mods
    assert "milopt.estimators" not in mods and "milopt.bench.harness" not in mods


@pytest.mark.parametrize("code", ["import milopt", "import milopt.models", "import milopt.params",
                                  "import milopt.numerics"])
def test_light_imports_do_not_import_pyomo(code):
    mods = _imported_by(code)
    assert "pyomo" not in mods and "sklearn" not in mods


@pytest.mark.parametrize("name", ["musk1", "musk2"])
def test_shipped_data_read_without_pandas_equals_the_csv_reader(name):
    import numpy as np

    from milopt.data.loading import _read_shipped, instances_dir, read_mil_csv

    path = instances_dir() / f"{name}.csv.gz"
    for coords in (0, 2):
        a = _read_shipped(path, name=name, coords=coords)
        b = read_mil_csv(path, name=name, header=False, coords=coords)
        for attr in ("X", "bag_index", "y", "bag_names", "coords"):
            va, vb = getattr(a, attr), getattr(b, attr)
            assert (va is None and vb is None) or np.array_equal(va, vb), attr
