"""Solver-agnostic driver: a registry of backends and ``solve(model, solver=...)``.

A backend declares the problem classes it solves (LP, QP, MILP, MIQP, QCQP, plus the
constraint features SOS and INDICATOR) and the Python module it needs.  ``solve`` classifies the model,
refuses a mismatch *before* handing anything to the solver ("HiGHS cannot solve MIQP;
installed solvers that can: scip"), runs it, and returns a frozen :class:`SolveResult`.

Hazards handled (see docs/solvers.md):

* SCIP's log goes through a pipe that Pyomo reads; a log over ~64 KiB blocks SCIP and its time
  limit never fires.  SCIP is kept quiet (``display/verblevel=0``) unless ``verbose=True``,
  and then its display frequency is reduced.
* HiGHS's global scheduler cannot change its thread count inside one process without
  ``Highs.resetGlobalScheduler(True)``: done whenever the requested thread count changes.
"""
from __future__ import annotations

import importlib
import importlib.util
import time
from dataclasses import dataclass, field
from typing import Callable

import pyomo.environ as pe

from milopt.errors import NoSolutionError, SolverUnavailableError, UnsupportedProblemError
from milopt.solvers.result import SolutionStatus, SolveResult, Termination, finish, relative_gap  # noqa: F401

PROBLEM_CLASSES = ("LP", "QP", "MILP", "MIQP", "QCQP", "MIQCQP")


@dataclass
class Backend:
    """A solver backend.

    Parameters
    ----------
    name : str
        milopt name (``highs``, ``scip``, ``ipopt``, ``gurobi``...).
    classes : set of str
        Problem classes it solves (subset of PROBLEM_CLASSES) and features (``SOS``, ``INDICATOR``).
    module : str
        Python module that must be importable.
    run : callable(model, options: dict) -> SolveResult
    version : callable() -> str
    description : str
    formulations : tuple of str
        When given, the only formulations (public names) the backend accepts, e.g. a method
        specific branch and bound; empty: any model of its classes.
    write : callable(model, path) -> dict, optional
        Writer for models only this backend can represent (e.g. indicator constraints).
    """

    name: str
    classes: frozenset
    module: str
    run: Callable[..., SolveResult]
    version: Callable[[], str]
    description: str = ""
    aliases: tuple = ()
    write: Callable | None = None
    formulations: tuple = ()
    #: False for a structure-aware backend that solves only some formulations of its classes
    #: (e.g. ``bnb``): it is used when named or for those formulations, never chosen for
    #: ``auto`` on other models nor listed as capable of a whole problem class
    generic: bool = True
    _available: bool | None = field(default=None, repr=False)

    def available(self) -> bool:
        if self._available is None:
            try:
                self._available = importlib.util.find_spec(self.module) is not None
            except (ImportError, ValueError):
                self._available = False
        return self._available

    def supports(self, cls: str, features=(), formulation: str | None = None) -> bool:
        if self.formulations and formulation not in self.formulations:
            return False
        return cls in self.classes and all(f in self.classes for f in features)


def model_formulation(model) -> str | None:
    """Public name of the formulation a model was built from (set by the builders' callers;
    else derived from the Pyomo model's name, ``misvm_bigm`` -> ``misvm-bigm``)."""
    name = getattr(model, "_milopt_formulation", None)
    if name:
        return name
    name = getattr(model, "name", None)
    return name.replace("_", "-") if isinstance(name, str) and name != "unknown" else None


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    _BACKENDS[backend.name] = backend
    for a in backend.aliases:
        _BACKENDS.setdefault(a, backend)
    return backend


#: modules whose import registers the built-in backends (a plugin calls register_backend itself)
BUILTIN_BACKENDS = ["milopt.solvers.builtin", "milopt.solvers.ipopt_backend", "milopt.solvers.scip_native",
                    "milopt.solvers.bnb"]


def backends() -> dict[str, Backend]:
    """Registered backends by name (installed or not)."""
    from milopt.plugins import import_all

    import_all(BUILTIN_BACKENDS)

    return {n: b for n, b in _BACKENDS.items() if n == b.name}


def installed(cls: str | None = None, features=(), formulation: str | None = None) -> list[str]:
    """Names of installed backends (that solve ``cls`` with ``features`` when given; a backend
    restricted to some formulations only when ``formulation`` is one of them)."""
    return [n for n, b in backends().items()
            if b.available() and (cls is None or (b.supports(cls, features, formulation)
                                                  and (b.generic or formulation in b.formulations)))]


def get_backend(name: str) -> Backend:
    backends()
    if name not in _BACKENDS:
        raise SolverUnavailableError(
            f"unknown solver {name!r}; known solvers: {', '.join(sorted(backends()))} "
            f"(installed: {', '.join(installed()) or 'none'})")
    b = _BACKENDS[name]
    if not b.available():
        raise SolverUnavailableError(
            f"solver {name!r} is not installed (needs the Python module {b.module!r}); "
            f"install it or use one of the installed solvers: {', '.join(installed()) or 'none'}")
    return b


def classify(model) -> tuple[str, tuple]:
    """Problem class of a Pyomo model and the special features it needs.

    Builders may annotate ``model._milopt_class`` (and ``model._milopt_features``) to skip
    the scan; otherwise variables, objective and constraints are inspected.
    """
    cls = getattr(model, "_milopt_class", None)
    feats = tuple(getattr(model, "_milopt_features", ()))
    if cls:
        if cls.startswith("MI") and not any(v.is_integer() for v in model.component_data_objects(pe.Var, active=True)
                                            if not v.fixed):
            cls = cls[2:]  # every integer variable is fixed: the model is continuous
        return cls, feats
    integer = any(v.is_integer() or v.is_binary()
                  for v in model.component_data_objects(pe.Var, active=True) if not v.fixed)
    objs = list(model.component_data_objects(pe.Objective, active=True))
    odeg = max((o.expr.polynomial_degree() or 0) if o.expr.polynomial_degree() is not None else 99
               for o in objs) if objs else 0
    cdeg = 0
    for c in model.component_data_objects(pe.Constraint, active=True):
        d = c.body.polynomial_degree()
        d = 99 if d is None else d
        cdeg = max(cdeg, d)
        if cdeg > 1:
            break
    if odeg > 2 or cdeg > 2:
        cls = "NLP"
    elif cdeg == 2:
        cls = "MIQCQP" if integer else "QCQP"
    elif odeg == 2:
        cls = "MIQP" if integer else "QP"
    else:
        cls = "MILP" if integer else "LP"
    feats = list(feats)
    if any(True for _ in model.component_data_objects(pe.SOSConstraint, active=True)):
        feats.append("SOS")
    return cls, tuple(dict.fromkeys(feats))


def check_supported(backend: Backend, cls: str, features=(), formulation: str | None = None) -> None:
    if not backend.supports(cls, features, formulation):
        need = cls + (" with " + "/".join(features) if features else "")
        able = installed(cls, features, formulation)
        if backend.formulations and formulation not in backend.formulations and backend.supports(
                cls, features, backend.formulations[0]):
            raise UnsupportedProblemError(
                f"{backend.name} solves only {', '.join(backend.formulations)} models, not "
                f"{formulation or 'this model'}; installed solvers that can: {', '.join(able) or 'none'}")
        raise UnsupportedProblemError(
            f"{backend.name} cannot solve {need} problems; installed solvers that can: "
            f"{', '.join(able) if able else 'none (install pyscipopt or a commercial solver)'}")


def solve(model, solver: str = "auto", *, time_limit: float | None = None, mip_gap: float | None = None,
          threads: int | None = None, warm_start: bool = False, verbose: bool = False,
          options: dict | None = None, raise_on_no_solution: bool = False) -> SolveResult:
    """Solve a Pyomo model with the named backend and return a :class:`SolveResult`.

    Parameters
    ----------
    model : pyomo ConcreteModel
    solver : str
        Backend name (``highs``, ``scip``, ``ipopt``, ...) or ``auto`` (first installed
        backend that handles the model's class, preferring HiGHS for LP/MILP, SCIP for MIQP,
        Ipopt for QP).
    time_limit : float, optional
        Seconds; hitting it returns the incumbent (status feasible) and its gap, or status none.
    mip_gap : float, optional
        Relative gap at which branch and bound stops.
    threads : int, optional
    warm_start : bool
        Use the current variable values as a starting point when the backend can.
    verbose : bool
        Stream the solver's log.
    options : dict
        Native solver options passed through unchanged.
    raise_on_no_solution : bool
        Raise :class:`NoSolutionError` instead of returning a result with status none.
    """
    if time_limit is not None and not (time_limit > 0):
        from milopt.errors import InvalidParameterError
        raise InvalidParameterError(f"time_limit: expected seconds > 0, got {time_limit}")
    if mip_gap is not None and not (0 <= mip_gap < 1):
        from milopt.errors import InvalidParameterError
        raise InvalidParameterError(f"mip_gap: expected a relative gap in [0, 1), got {mip_gap}")
    cls, feats = classify(model)
    form = model_formulation(model)
    if solver == "auto":
        pref = {"LP": ["highs", "scip"], "MILP": ["highs", "scip"], "QP": ["highs", "ipopt", "scip"],
                "MIQP": ["scip"], "QCQP": ["scip", "ipopt"], "MIQCQP": ["scip"]}.get(cls, [])
        able = installed(cls, feats, form)
        cands = [n for n in pref if n in able] + [n for n in able if not backends()[n].formulations] + able
        if not cands:
            raise UnsupportedProblemError(f"no installed solver handles {cls} problems; installed: {installed()}")
        solver = cands[0]
    backend = get_backend(solver)
    check_supported(backend, cls, feats, form)
    opts = dict(time_limit=time_limit, mip_gap=mip_gap, threads=threads, warm_start=warm_start,
                verbose=verbose, options=dict(options or {}), problem_class=cls)
    t0 = time.perf_counter()
    try:
        res = backend.run(model, opts)
    except (SolverUnavailableError, UnsupportedProblemError):
        raise
    except Exception as exc:  # a solver failure is a status, not a crash
        res = SolveResult(solver=backend.name, termination=Termination.ERROR, status=SolutionStatus.NONE,
                          wall_time=time.perf_counter() - t0, solver_version=_safe(backend.version),
                          problem_class=cls, log=f"{type(exc).__name__}: {exc}",
                          extra={"error": f"{type(exc).__name__}: {exc}"})
    if res.termination == Termination.INTERRUPTED:
        # the solver caught Ctrl-C (SCIP installs its own SIGINT handler, so Python never sees
        # it): stop the caller too rather than return a half-solved model as a result
        raise KeyboardInterrupt(f"{backend.name} was interrupted")
    if raise_on_no_solution and not res.ok:
        raise NoSolutionError(f"{backend.name} returned no solution (termination: {res.termination}); "
                              "raise the time limit or check the model")
    return res


def _safe(f):
    try:
        return f()
    except Exception:
        return ""
