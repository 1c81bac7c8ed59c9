"""The package's import graph has no cycle, and light commands import only what they need.

Edges are the ``import`` / ``from ... import`` statements of every module of ``milopt`` (the
folder ``milopt/`` and ``models/``, installed as ``milopt.models``), at module level *and*
inside functions (a lazy import is still a dependency); ``from pkg import name`` counts as an
edge to ``pkg.name`` when that is a module, else to ``pkg``.  Registries that load modules by
name (``METHOD_MODULES``, ``FORMULATIONS``, ``GENERATOR_MODULES``, ``BUILTIN_BACKENDS``) are
catalogues, not imports: the registering module depends on the registry, never the reverse.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ((ROOT / "milopt", "milopt"), (ROOT / "models", "milopt.models"))


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


def graph() -> dict[str, set]:
    mods = modules()
    g = {m: set() for m in mods}
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        tree = ast.parse(f.read_text(), str(f))
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
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in targets:
                r = _resolve(t, mods)
                if r and r != m:
                    g[m].add(r)
    return g


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


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _cycles_text(found) -> str:
    return "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_import_cycle():
    """No cycle anywhere in the package (imports inside functions included)."""
    found = cycles(graph())
    assert not found, _cycles_text(found)


def test_model_layer_does_not_import_estimators_or_cli():
    g = graph()
    for m, deps in g.items():
        if m.startswith("milopt.models"):
            bad = [d for d in deps if d.startswith(("milopt.estimators", "milopt.cli", "milopt.runner", "milopt.bench"))]
            assert not bad, f"{m} imports {bad}"


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
