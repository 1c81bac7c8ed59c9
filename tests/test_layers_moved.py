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
