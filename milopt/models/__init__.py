"""Algebraic Pyomo formulations (installed as ``milopt.models``).

A formulation is one :class:`Formulation` object: its public name, its parameters (one typed
:class:`~milopt.params.ParamSet`), its problem class as a function of the parameters,
``build(bags, **params)`` returning a Pyomo ``ConcreteModel`` whose components carry the
paper's names, ``decode(model)`` returning the learned classifier, and optionally a cheap
feasible ``default_start(model)`` and ``predict(solution, bags)`` (instance scores; without it a
linear ``w``/``b`` or ``w``/``gamma`` solution is scored as ``X w + b`` / ``X w - gamma``).

Two ways to register one (docs/architecture.md):

* a module in this package that states the module-level contract (a docstring with the
  mathematics, ``PARAMS``, ``build``, ``decode``, ``PROBLEM_CLASS`` or ``problem_class(**params)``,
  optionally ``default_start``/``predict``, or a ready ``FORMULATION`` object).  Nothing else
  is edited: a module ``my_model.py`` whose source defines ``build`` and ``decode`` (read
  without importing it) is the formulation ``my-model``; :data:`FORMULATIONS` lists the
  built-in ones explicitly (and may give a module another public name).  A formulation module
  is imported only when its name is asked for;
* :func:`register_formulation` with a :class:`Formulation` (or a module) from anywhere, e.g. a
  plugin file loaded with ``milopt --plugin FILE`` or a bench configuration's ``imports``.

Importing this package does not import Pyomo.
"""
from __future__ import annotations

import ast
import importlib
from functools import lru_cache
from pathlib import Path
from typing import Callable

from milopt.errors import InvalidParameterError
from milopt.params import ParamSet

__all__ = ["FORMULATIONS", "Formulation", "formulation", "formulations", "register_formulation", "names",
           "available", "catalogue", "get"]

#: public name -> module (relative to milopt.models): the built-in catalogue
FORMULATIONS = {
    "misvm-bigm": "misvm_bigm",
    "misvm-kernel-bigm": "misvm_kernel_bigm",
    "misvm-hull": "misvm_hull",
    "batchsvm-lp": "batchsvm_lp",
    "batchprob-lp": "batchprob_lp",
    "misvm-dual-qp": "misvm_dual_qp",
    "dcmil-dca": "dcmil_dca",
    "dcmil-direction": "dcmil_direction",
}


@lru_cache(maxsize=1)
def _discovered() -> dict:
    """Formulation modules of this folder that :data:`FORMULATIONS` does not list: public name (the
    module name with ``-`` for ``_``) -> module.  A module qualifies when its source defines
    ``build`` and ``decode`` at module level (or assigns ``FORMULATION``); files starting with
    ``_`` are helpers.  Read with :mod:`ast`, nothing is imported."""
    listed = set(FORMULATIONS.values())
    out = {}
    for f in sorted(Path(__file__).parent.glob("*.py")):
        if f.stem.startswith("_") or f.stem in listed:
            continue
        try:
            body = ast.parse(f.read_text(encoding="utf-8")).body
        except (OSError, SyntaxError, ValueError):
            continue
        defs = {n.name for n in body if isinstance(n, ast.FunctionDef)}
        assigned = {t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        if {"build", "decode"} <= defs or "FORMULATION" in assigned:
            out[f.stem.replace("_", "-")] = f.stem
    return out


def catalogue() -> dict:
    """Every formulation module of this package: public name -> module (:data:`FORMULATIONS` and
    the modules found by reading the folder)."""
    return {**_discovered(), **FORMULATIONS}


class Formulation:
    """One formulation: everything the CLI, the estimators and the bench need to know about it.

    Parameters
    ----------
    name : str
        Public name (``milopt solve NAME``).
    build : callable
        ``build(bags, **params)`` returns the Pyomo ``ConcreteModel``.
    decode : callable
        ``decode(model)`` returns the solution as a dict.
    params : ParamSet or dict
        The declaration of the keys (a legacy ``{name: (type, default, help)}`` dict is accepted).
    problem_class : str, tuple or callable
        ``"MIQP"``, ``("MIQP", features)`` or ``problem_class(**params)`` returning either: the
        class of the model ``build`` returns (LP, QP, MILP, MIQP, ...) and its special
        features (SOS, INDICATOR), known before building so that a solver is refused early.  A
        hint: the class itself is computed from the model's matrix form
        (:meth:`milopt.matrix.MatrixForm.problem_class`); ``tests/test_problem_class.py`` checks
        that the two agree for every formulation.
    default_start : callable, optional
        ``default_start(model)`` sets a cheap feasible point (``--warm-start``).
    warm_start : callable, optional
        ``warm_start(model, *point)`` loads a given point (e.g. ``(w, b)``) into the model's
        variables.
    predict : callable, optional
        ``predict(solution, bags)`` returns instance scores.
    doc : str
        One line for ``milopt list``.
    module : module, optional
        Where it is defined (its other functions are reached with :meth:`helper`).
    """

    def __init__(self, name: str, build: Callable, decode: Callable, params=None, problem_class=None, *,
                 default_start: Callable | None = None, predict: Callable | None = None, doc: str = "",
                 module=None, warm_start: Callable | None = None):
        self.name = name
        self.build_model = build
        self.decode = decode
        self.params = ParamSet.coerce_spec(params)
        self._problem_class = problem_class
        self.default_start = default_start
        self.warm_start = warm_start
        self.predict_fn = predict
        self.module = module
        self.doc = doc or ((getattr(module, "__doc__", None) or "").strip().split("\n")[0])
        self.__doc__ = (getattr(module, "__doc__", None) or self.doc)
        self.__name__ = getattr(module, "__name__", f"milopt.models.{name.replace('-', '_')}")

    @classmethod
    def from_module(cls, name: str, mod) -> "Formulation":
        """The Formulation of a module stating the module-level contract (or its ``FORMULATION``)."""
        f = getattr(mod, "FORMULATION", None)
        if isinstance(f, Formulation):
            return f
        pc = getattr(mod, "problem_class", None)
        if not callable(pc):
            pc = getattr(mod, "PROBLEM_CLASS", None)
        return cls(name, mod.build, mod.decode, getattr(mod, "PARAMS", {}), pc,
                   default_start=getattr(mod, "default_start", None), predict=getattr(mod, "predict", None),
                   module=mod, warm_start=getattr(mod, "warm_start", None))

    # module-like view, so that code written against ``models.get(name)`` keeps working
    @property
    def PARAMS(self) -> ParamSet:
        return self.params

    def helper(self, name: str) -> Callable:
        """A function of the formulation's module beyond the contract, by name: e.g.
        ``formulation("dcmil-dca").helper("set_linearisation")``, with which DC-MIL's DCA updates
        the objective of the model it built before solving it again.  One
        :class:`~milopt.errors.InvalidParameterError` line when the formulation has no such function."""
        fn = getattr(self.module, name, None) if not name.startswith("_") else None
        if not callable(fn):
            raise InvalidParameterError(f"{self.name}: its module defines no function {name!r}; "
                                        "use a formulation that does")
        return fn

    def __repr__(self):
        return f"Formulation({self.name!r})"

    # ------------------------------------------------------------------ use
    def validate(self, params: dict | None) -> dict:
        """Typed copy of the given parameters (unknown keys and bad values raise)."""
        return self.params.validate(params, self.name)

    def resolve(self, params: dict | None) -> dict:
        """Defaults completed by the validated parameters: the values a build uses."""
        return self.params.resolve(params, self.name)

    def build(self, bags, **params):
        """Build the model with the declared defaults completed by ``params`` (validated); keys
        the declaration does not list are passed to the builder unchanged."""
        extra = {k: params.pop(k) for k in list(params) if k not in self.params}
        typed = self.resolve(params)
        return self.make_model(bags, **typed, **extra)

    def make_model(self, bags, **typed):
        """``build_model`` with already validated parameters; the model records its formulation
        (``ModelInfo.formulation``; the attribute ``_milopt_formulation`` on a plain Pyomo model)."""
        model = self.build_model(bags, **typed)
        rec = getattr(model, "__dict__", {}).get("_milopt")
        if rec is not None:           # a MILModel: its ModelInfo, the class from the declaration when unset
            rec.formulation = self.name
            if rec.problem_class is None:
                pc = self.problem_class(**typed)
                if pc is not None:
                    rec.problem_class, rec.features = pc[0], tuple(rec.features or pc[1])
            return model
        try:
            model._milopt_formulation = self.name
        except AttributeError:  # pragma: no cover - a builder returning something else
            pass
        return model

    def problem_class(self, **params):
        """(problem class, features) of the model for ``params``, or None when unknown."""
        pc = self._problem_class
        if callable(pc):
            try:
                pc = pc(**self.resolve(params))
            except (TypeError, InvalidParameterError):
                return None
        if pc is None:
            return None
        return (pc, ()) if isinstance(pc, str) else (pc[0], tuple(pc[1]))

    def predict(self, solution: dict, bags):
        """Instance scores of a decoded solution."""
        import numpy as np

        if self.predict_fn is not None:
            return np.asarray(self.predict_fn(solution, bags), dtype=float)
        if "w" in solution and ("b" in solution or "gamma" in solution):
            off = float(solution["b"]) if "b" in solution else -float(solution["gamma"])
            return bags.X @ np.asarray(solution["w"], dtype=float) + off
        raise InvalidParameterError(f"{self.name}: its solution is not a classifier (no predict and no linear w, b)")


_REGISTERED: dict[str, Formulation] = {}


def register_formulation(obj, name: str | None = None) -> Formulation:
    """Register a :class:`Formulation` (or a module stating the module-level contract, with ``name``)."""
    if not isinstance(obj, Formulation):
        if name is None:
            raise InvalidParameterError("register_formulation(module, name): a module needs its public name")
        obj = Formulation.from_module(name, obj)
    _REGISTERED[obj.name] = obj
    return obj


def names() -> list[str]:
    """Every formulation name, without importing any formulation module."""
    return sorted(set(catalogue()) | set(_REGISTERED))


def _load(name: str) -> Formulation | None:
    if name in _REGISTERED:
        return _REGISTERED[name]
    mod_name = catalogue().get(name)
    if mod_name is None:
        return None
    mod = importlib.import_module(f"milopt.models.{mod_name}")
    f = _REGISTERED.get(name) or Formulation.from_module(name, mod)
    _REGISTERED[name] = f
    return f


def formulation(name: str) -> Formulation:
    """The :class:`Formulation` called ``name`` (CLI name or module name); imports only its module."""
    f = _load(name)
    if f is None:
        for n, m in catalogue().items():
            if m == name:
                f = _load(n)
    if f is None:
        from milopt.errors import unknown_name

        raise unknown_name("formulation", name, names())
    return f


def formulations() -> dict[str, Formulation]:
    """Every formulation (imports all of them): name -> Formulation."""
    out = {}
    for n in names():
        f = _load(n)
        if f is not None:
            out[n] = f
    return out


def available() -> dict:
    """Every formulation: name -> its module (or its Formulation when registered without one)."""
    return {n: (f.module if f.module is not None else f) for n, f in formulations().items()}


def get(name: str):
    """The module of formulation ``name`` (or its Formulation when registered without a module)."""
    f = formulation(name)
    return f.module if f.module is not None else f
