"""Solver-agnostic driver, normalized results, export.

The names below are imported on first use, so that ``from milopt.solvers.result import
SolveResult`` (native algorithms) does not import Pyomo.  ``milopt.solvers.extract`` is always
the function :func:`milopt.solvers.extract`, also after its module has been imported
(``from milopt.solvers.extract import extract, start_vector`` imports from the module).
"""
from __future__ import annotations

import importlib
import sys
import types

_WHERE = {
    "solve": "driver", "backends": "driver", "installed": "driver", "get_backend": "driver",
    "register_backend": "driver", "Backend": "backend", "SolveOptions": "backend", "classify": "driver",
    "SolveResult": "result", "SolutionStatus": "result", "Termination": "result", "relative_gap": "result",
    "export": "exporter", "model_size": "extract", "extract": "extract",
    "TimeBudget": "budget", "parse_time_limit": "budget", "Capabilities": "backend", "RawResult": "backend",
}

__all__ = list(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"milopt.solvers.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'milopt.solvers' has no attribute {name!r}")


class _Package(types.ModuleType):
    """Importing a submodule binds it as an attribute of its package; where the submodule has
    the name of the function it defines (``extract``), the package keeps the function."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _WHERE.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
