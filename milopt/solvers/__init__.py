"""Solver-agnostic driver, normalized results, export.

The names below are imported on first use, so that ``from milopt.solvers.result import
SolveResult`` (native algorithms) does not import Pyomo.
"""
from __future__ import annotations

import importlib

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


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
