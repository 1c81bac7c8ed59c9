"""Algebraic Pyomo formulations (installed as ``milopt.models``).

Each module reads like an AMPL ``.mod`` file: a docstring with the mathematics and citation,
``build(bags, **params)`` returning a Pyomo ``ConcreteModel`` whose components carry the
paper's names, ``decode(model)`` returning the learned classifier, and ``PARAMS`` -- the keys
accepted from the command line (``--set key=value``) with their types and defaults.

The catalogue :data:`FORMULATIONS` maps the public (CLI) names to modules.
"""
from __future__ import annotations

import importlib

from milopt.errors import InvalidParameterError

#: public name -> module (relative to milopt.models)
FORMULATIONS = {
    "misvm-bigm": "misvm_bigm",
    "misvm-hull": "misvm_hull",
    "batchsvm-lp": "batchsvm_lp",
    "batchprob-lp": "batchprob_lp",
    "misvm-dual-qp": "misvm_dual_qp",
    "dcmil-dca": "dcmil_dca",
    "dcmil-direction": "dcmil_direction",
}


def available() -> dict:
    """Formulations whose module exists: name -> module."""
    out = {}
    for name, mod in FORMULATIONS.items():
        try:
            out[name] = importlib.import_module(f"milopt.models.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"milopt.models.{mod}":
                raise
    return out


def get(name: str):
    """The module of formulation ``name`` (CLI name or module name)."""
    mods = available()
    if name in mods:
        return mods[name]
    for n, m in mods.items():
        if m.__name__.rsplit(".", 1)[-1] == name:
            return m
    raise InvalidParameterError(f"unknown formulation {name!r}; available: {', '.join(sorted(mods))}")
