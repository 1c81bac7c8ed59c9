"""What a formulation's model tells the rest of milopt: one typed record, :class:`ModelInfo`.

Every built-in builder returns a :class:`MILModel` (a Pyomo ``ConcreteModel``) whose attribute
``model._milopt`` is a :class:`ModelInfo`:

=====================  ===========================================  ================================
field                  meaning                                      read by
=====================  ===========================================  ================================
``formulation``        public name (set by ``Formulation``)         driver (backend restrictions)
``problem_class``      the builder's declared class (a hint)        driver, for ``bnb`` only
``features``           special structure: ``SOS``, ``INDICATOR``    driver, for ``bnb`` only
``bags``               the training :class:`~milopt.data.Bags`      decode, starts, ``bnb``
``meta``               builder facts (costs, big-M, bounds...)      decode, runner, bench, ``bnb``
``start``              the variables hold a feasible start          runner, bench (``--warm-start``)
``indicators``         indicator blocks (``scip-native``)           ``scip_native``, export, verify
``branch_priority``    (variable, priority) pairs (SCIP)            ``scip_native``
=====================  ===========================================  ================================

The same values stay readable (and writable) under the attribute names used before this record
existed -- ``_milopt_formulation``, ``_milopt_class``, ``_milopt_features``, ``_milopt_bags``,
``_milopt_meta``, ``_milopt_start``, ``_milopt_indicators``, ``_milopt_branch_priority`` -- as
properties of :class:`MILModel` backed by the record (one value, two names).  A model built
elsewhere (a plugin returning a plain ``ConcreteModel`` and setting those attributes) is read
by :func:`info`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyomo.environ as pe

__all__ = ["ModelInfo", "MILModel", "info", "LEGACY_NAMES"]

#: ModelInfo field -> the model attribute that carries the same value
LEGACY_NAMES = {
    "formulation": "_milopt_formulation",
    "problem_class": "_milopt_class",
    "features": "_milopt_features",
    "bags": "_milopt_bags",
    "meta": "_milopt_meta",
    "start": "_milopt_start",
    "indicators": "_milopt_indicators",
    "branch_priority": "_milopt_branch_priority",
}


@dataclass
class ModelInfo:
    """Facts about a built model that the driver, the exporters and the decoders need.

    Attributes
    ----------
    formulation : str or None
        Public formulation name.
    problem_class : str or None
        The class the builder declares (``LP``, ``QP``, ``MILP``, ``MIQP``, ``QCQP``,
        ``MIQCQP``): a hint, read only for a backend that takes the model itself (``bnb``); every
        other solve computes the class from the matrix form.  ``tests/test_problem_class.py``
        checks that the two agree.
    features : tuple of str
        ``("SOS",)``, ``("INDICATOR",)`` or ``()``.
    bags : Bags or None
        The data the model was built from.
    meta : dict
        Builder-specific facts (documented by each formulation).
    start : bool
        The variables hold a feasible starting point.
    indicators : list of dict
        ``{"rows": <deactivated rows>, "binaries": [...], "active_value": 0 | 1}`` blocks.
    branch_priority : list of (variable, int)
        Branching priorities (higher first), honoured by ``scip-native``.
    """

    formulation: str | None = None
    problem_class: str | None = None
    features: tuple = ()
    bags: Any = None
    meta: dict = field(default_factory=dict)
    start: bool = False
    indicators: list = field(default_factory=list)
    branch_priority: list = field(default_factory=list)


def _alias(name: str) -> property:
    def get(self):
        return getattr(self.__dict__["_milopt"], name)

    def put(self, value):
        setattr(self.__dict__["_milopt"], name, tuple(value) if name == "features" else value)

    return property(get, put, doc=f"``model._milopt.{name}`` (:class:`ModelInfo`)")


class MILModel(pe.ConcreteModel):
    """A Pyomo ``ConcreteModel`` with its :class:`ModelInfo` in ``model._milopt``."""

    def __init__(self, *args, info: ModelInfo | None = None, **kwds):
        self.__dict__["_milopt"] = info if info is not None else ModelInfo()
        super().__init__(*args, **kwds)


for _field, _attr in LEGACY_NAMES.items():
    setattr(MILModel, _attr, _alias(_field))


def info(model) -> ModelInfo:
    """The :class:`ModelInfo` of ``model``; for a model that is not a :class:`MILModel`, a record
    read from its ``_milopt_*`` attributes (missing ones get the defaults)."""
    rec = model.__dict__.get("_milopt") if hasattr(model, "__dict__") else None
    if isinstance(rec, ModelInfo):
        return rec
    out = ModelInfo()
    for name, attr in LEGACY_NAMES.items():
        value = getattr(model, attr, None)
        if value is not None:
            setattr(out, name, tuple(value) if name == "features" else value)
    return out
