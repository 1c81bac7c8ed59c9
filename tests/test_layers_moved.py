"""The QP solvers moved from ``milopt.algorithms`` to ``milopt.qp``: the old paths still import,
as the same module objects, with a DeprecationWarning naming the new path."""
import importlib
import subprocess
import sys

import pytest

from milopt.algorithms import MOVED

OLD = ["milopt.algorithms.svm_dcd", "milopt.algorithms.svm_ipm", "milopt.algorithms.svm_active_set",
       "milopt.algorithms.qp_simplex"]


def test_the_four_modules_are_declared_moved():
    assert sorted(MOVED) == sorted(OLD)
    assert all(new == old.replace("milopt.algorithms.", "milopt.qp.") for old, new in MOVED.items())


@pytest.mark.parametrize("old", OLD)
def test_old_path_warns_and_is_the_new_module(old):
    code = (f"import warnings, importlib\nwarnings.simplefilter('error')\nimport {MOVED[old]} as new\n"
            f"try:\n    import {old}\nexcept DeprecationWarning as e:\n    print(e)\nelse:\n    raise SystemExit(1)\n"
            f"warnings.simplefilter('ignore')\nimport {old} as old\nassert old is new, (old, new)\n"
            f"assert new.__spec__.name == {MOVED[old]!r}\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{old} is deprecated; import {MOVED[old]} instead"


def test_from_old_path_import_names():
    with pytest.warns(DeprecationWarning, match="milopt.qp.svm_ipm"):
        sys.modules.pop("milopt.algorithms.svm_ipm", None)
        from milopt.algorithms.svm_ipm import _ipm, solve_group_dual_ipm
    new = importlib.import_module("milopt.qp.svm_ipm")
    assert solve_group_dual_ipm is new.solve_group_dual_ipm and _ipm is new._ipm


def test_an_unknown_algorithms_module_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("milopt.algorithms.svm_nothing")


def test_nothing_in_the_repository_uses_the_old_paths():
    """The package, its tests, benchmarks, examples and docs name the new modules (the old paths
    stay for users' code only)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    old = re.compile(r"milopt[./]algorithms[./](svm_dcd|svm_ipm|svm_active_set|qp_simplex)\b")
    allowed = {"milopt/algorithms/__init__.py", "tests/test_layers_moved.py", "docs/history.md"}
    found = []
    for folder in ("milopt", "tests", "benchmarks", "examples", "docs"):
        for f in sorted((root / folder).rglob("*")):
            rel = f.relative_to(root).as_posix()
            if f.suffix not in (".py", ".md", ".rst", ".toml") or rel in allowed or "/_build/" in rel:
                continue
            found += [f"{rel}:{n}" for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
                      if old.search(line)]
    assert not found, "old module paths (use milopt.qp.*): " + ", ".join(found)
