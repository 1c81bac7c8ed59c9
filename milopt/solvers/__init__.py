"""Solver-agnostic driver, normalized results, export.

The names below are imported on first use, so that ``from milopt.solvers.result import
SolveResult`` (native algorithms) does not import Pyomo.
"""
from __future__ import annotations

import importlib
import sys
import types

_WHERE = {
    "solve": "driver", "backends": "driver", "installed": "driver", "get_backend": "driver",
    "register_backend": "driver", "Backend": "driver", "classify": "driver",
    "SolveResult": "result", "SolutionStatus": "result", "Termination": "result", "relative_gap": "result",
    "export": "export", "model_size": "export",
}

__all__ = list(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"milopt.solvers.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'milopt.solvers' has no attribute {name!r}")


class _Package(types.ModuleType):
    """``milopt.solvers.export`` is the function (as it always was), although a submodule of
    the same name exists: the import system's record of the submodule is not kept here."""

    @property
    def export(self):
        from milopt.solvers.export import export

        return export

    @export.setter
    def export(self, module):
        pass


sys.modules[__name__].__class__ = _Package


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
