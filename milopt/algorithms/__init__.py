"""Native MIL algorithms: iterative methods returning a ``SolveResult`` with a ``history``.

The numpy-only SVM dual and QP solvers these methods share live one layer lower, in
:mod:`milopt.qp`.  Their former paths ``milopt.algorithms.svm_dcd``, ``svm_ipm``,
``svm_active_set`` and ``qp_simplex`` still import (the same module objects, through
:data:`MOVED`) with a :class:`DeprecationWarning` naming the new path.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: deprecated module path -> the module that now holds it (imports of the old path still work)
MOVED = {f"milopt.algorithms.{m}": f"milopt.qp.{m}" for m in ("svm_dcd", "svm_ipm", "svm_active_set", "qp_simplex")}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import hook for :data:`MOVED`: the old path becomes the new module, with a warning."""

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        new = MOVED[module.__name__]
        warnings.warn(f"{module.__name__} is deprecated; import {new} instead", DeprecationWarning, stacklevel=2)
        sys.modules[module.__name__] = importlib.import_module(new)

if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())

__all__: list[str] = []
