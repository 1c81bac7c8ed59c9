"""Solver-agnostic driver: a registry of backends and ``solve(model, solver=...)``.

A backend (:class:`~milopt.solvers.backend.Backend`) declares the problem classes it solves (LP,
QP, MILP, MIQP, QCQP, MIQCQP, plus the constraint features SOS and INDICATOR) and the Python
module it needs.  ``solve`` extracts the model's matrix form once, reads its class from it
(:meth:`milopt.matrix.MatrixForm.problem_class`, the one computation), refuses a mismatch
*before* handing anything to the solver ("HiGHS cannot solve MIQP; installed solvers that can:
scip"), runs it within the command's one time budget, and returns a frozen :class:`SolveResult`.
"""
from __future__ import annotations

import importlib
import time

from milopt.errors import (InvalidParameterError, NoSolutionError, SolverUnavailableError, UnsupportedProblemError,
                           did_you_mean)
from milopt.solvers.backend import Backend, SolveOptions  # noqa: F401  (Backend: the registration type)
from milopt.solvers.budget import TimeBudget
from milopt.solvers.result import SolutionStatus, SolveResult, Termination, finish, relative_gap  # noqa: F401

from milopt.matrix import PROBLEM_CLASSES  # noqa: F401,E402  (the classes, declared with the matrix form)


def model_formulation(model) -> str | None:
    """Public name of the formulation a model was built from (``ModelInfo.formulation``, set by
    :meth:`Formulation.make_model`; else derived from the Pyomo model's name, ``misvm_bigm`` ->
    ``misvm-bigm``)."""
    from milopt.models.info import info

    name = info(model).formulation
    if name:
        return name
    name = getattr(model, "name", None)
    return name.replace("_", "-") if isinstance(name, str) and name != "unknown" else None


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    """Make ``backend`` (a :class:`~milopt.solvers.backend.Backend`) reachable as ``--solver NAME``
    and under each of its aliases (an alias never replaces another backend's name).  Returns it."""
    _BACKENDS[backend.name] = backend
    for a in backend.aliases:
        _BACKENDS.setdefault(a, backend)
    return backend


#: the built-in backend modules: each defines ``BACKEND`` (a :class:`Backend`), registered on
#: first use; a plugin calls :func:`register_backend` itself
BUILTIN_BACKENDS = ["milopt.solvers.highs_backend", "milopt.solvers.scip_backend", "milopt.solvers.ipopt_backend",
                    "milopt.solvers.bnb", "milopt.solvers.cplex_backend", "milopt.solvers.gurobi_backend",
                    "milopt.solvers.xpress_backend"]

_LOADED = [False]


def backends() -> dict[str, Backend]:
    """Registered backends by name (installed or not)."""
    if not _LOADED[0]:
        for name in BUILTIN_BACKENDS:
            try:
                mod = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name == name:  # a catalogue entry not shipped in this build
                    continue
                raise
            b = getattr(mod, "BACKEND", None)
            if b is not None and b.name not in _BACKENDS:
                register_backend(b)
        _LOADED[0] = True
    return {n: b for n, b in _BACKENDS.items() if n == b.name}


def installed(cls: str | None = None, features=(), formulation: str | None = None) -> list[str]:
    """Names of installed backends (that solve ``cls`` with ``features`` when given; a backend
    restricted to some formulations only when ``formulation`` is one of them)."""
    return [n for n, b in backends().items()
            if b.available() and (cls is None or (b.supports(cls, features, formulation)
                                                  and (b.caps.generic or formulation in b.caps.formulations)))]


def get_backend(name: str) -> Backend:
    """The backend registered as ``name`` (or alias); :class:`~milopt.errors.SolverUnavailableError`
    listing the known solvers otherwise."""
    backends()
    if name not in _BACKENDS:
        raise SolverUnavailableError(
            f"unknown solver {name!r}{did_you_mean(name, backends())}; known solvers: {', '.join(sorted(backends()))} "
            f"(installed: {', '.join(installed()) or 'none'})")
    b = _BACKENDS[name]
    if not b.available():
        raise SolverUnavailableError(
            f"solver {name!r} is not installed (needs the Python module {b.module!r}); "
            f"install it or use one of the installed solvers: {', '.join(installed()) or 'none'}")
    return b


def classify(model) -> tuple[str, tuple]:
    """Problem class of a Pyomo model as it is now, and the special features it needs: those of
    its matrix form (:meth:`~milopt.matrix.MatrixForm.problem_class`, ``features``).

    Rows added or replaced after building count; fixed variables are substituted (a model whose
    integer variables are all fixed is continuous); integer columns, SOS sets and indicator rows
    make a class mixed-integer."""
    from milopt.solvers.extract import extract

    mf = extract(model)
    return mf.problem_class(), mf.features()


def declared_class(model) -> tuple[str, tuple]:
    """The class a model's builder declared (``ModelInfo.problem_class`` / ``features``), for a
    backend that takes the model itself and never extracts it; else :func:`classify`."""
    from milopt.models.info import info

    rec = info(model)
    if rec.problem_class:
        return rec.problem_class, tuple(rec.features or ())
    return classify(model)


def check_supported(backend: Backend, cls: str, features=(), formulation: str | None = None) -> None:
    if not backend.supports(cls, features, formulation):
        need = cls + (" with " + "/".join(features) if features else "")
        able = installed(cls, features, formulation)
        only = backend.caps.formulations
        if only and formulation not in only and backend.supports(cls, features, only[0]):
            raise UnsupportedProblemError(
                f"{backend.name} solves only {', '.join(only)} models, not "
                f"{formulation or 'this model'}; installed solvers that can: {', '.join(able) or 'none'}")
        raise UnsupportedProblemError(
            f"{backend.name} cannot solve {need} problems; installed solvers that can: "
            f"{', '.join(able) if able else 'none (install pyscipopt or a commercial solver)'}")


#: what ``solver="auto"`` prefers per problem class (then any installed backend that can)
AUTO_PREFERENCE = {"LP": ["highs", "scip"], "MILP": ["highs", "scip"], "QP": ["highs", "ipopt", "scip"],
                   "MIQP": ["scip"], "QCQP": ["scip", "ipopt"], "MIQCQP": ["scip"]}


def choose(cls: str, feats=(), formulation: str | None = None, mf=None) -> str:
    """The backend ``solver="auto"`` uses for a model of class ``cls``."""
    able = installed(cls, feats, formulation)
    cands = [n for n in AUTO_PREFERENCE.get(cls, []) if n in able] + able
    for name in cands:
        b = backends()[name]
        if mf is None or not b.cannot_take(mf, SolveOptions(problem_class=cls))[0]:
            return name
    raise UnsupportedProblemError(f"no installed solver handles {cls} problems"
                                  f"{' with ' + '/'.join(feats) if feats else ''}; installed: {installed()}")


def solve(model, solver: str = "auto", *, time_limit: float | None = None, mip_gap: float | None = None,
          threads: int | None = None, warm_start: bool = False, verbose: bool = False,
          options: dict | None = None, raise_on_no_solution: bool = False, isolate: bool | None = None,
          budget: TimeBudget | None = None, mf=None) -> SolveResult:
    """Solve a Pyomo model with the named backend and return a :class:`SolveResult`.

    The model's matrix form (:class:`milopt.matrix.MatrixForm`) is extracted once; its problem
    class and features are read from it as the model is now (rows added after building count);
    the backend refuses what it cannot take *before* solving, with the reason (a licence
    limit, a missing feature); the solution is loaded back into the model's variables.

    Parameters
    ----------
    model : pyomo ConcreteModel
    solver : str
        Backend name (``highs``, ``scip``, ``ipopt``, ``cplex``, ...) or ``auto`` (first
        installed backend that handles the model's class, preferring HiGHS for LP/MILP, SCIP
        for MIQP, Ipopt for QP).
    time_limit : float, optional
        Seconds for the whole call (extraction and hand-off included); hitting it returns the
        incumbent (status feasible) and its gap, or status none.
    mip_gap : float, optional
        Relative gap at which branch and bound stops.
    threads : int, optional
    warm_start : bool
        Use the current variable values as a starting point when the backend can.
    verbose : bool
        Stream the solver's log (to stderr).
    options : dict
        Native solver options passed through unchanged.
    raise_on_no_solution : bool
        Raise :class:`NoSolutionError` instead of returning a result with status none.
    isolate : bool, optional
        Run the solver in a child process with a hard deadline (default: the backend's
        ``Capabilities.isolated``; SCIP and Ipopt are isolated).  A solver that hangs or aborts
        then gives ``time_limit`` or ``error`` with its last message, never a hung or dead process.
    budget : TimeBudget, optional
        The time budget of a larger command this solve is part of (started when the command
        started: loading and building counted); replaces ``time_limit``.
    mf : MatrixForm, optional
        The model's matrix form when the caller extracted it already (not extracted again).
    """
    budget = budget if budget is not None else TimeBudget(time_limit)
    if mip_gap is not None and not (0 <= mip_gap < 1):
        raise InvalidParameterError(f"mip_gap: expected a relative gap in [0, 1), got {mip_gap}")
    form = model_formulation(model)
    backend = None if solver == "auto" else get_backend(solver)
    opts = dict(mip_gap=mip_gap, threads=threads, warm_start=warm_start, verbose=verbose,
                options=dict(options or {}), budget=budget)
    if backend is not None and backend.takes_model:
        return _solve_model(model, backend, form, opts, raise_on_no_solution)
    if mf is None:
        from milopt.solvers.extract import extract

        mf = extract(model)
    cls, feats = mf.problem_class(), mf.features()
    if backend is None:
        backend = get_backend(choose(cls, feats, form, mf))
        if backend.takes_model:
            return _solve_model(model, backend, form, opts, raise_on_no_solution)
    check_supported(backend, cls, feats, form)
    opts = SolveOptions(**opts, time_limit=budget.remaining(), problem_class=cls)
    skip, reason = backend.cannot_take(mf, opts)
    if skip:
        from milopt.errors import LicenceLimitError

        if "licen" in reason.lower():
            raise LicenceLimitError(reason)
        raise UnsupportedProblemError(reason)
    if warm_start:
        from dataclasses import replace

        from milopt.solvers.extract import start_vector

        opts = replace(opts, x0=start_vector(mf))
    from milopt.solvers.isolation import run_backend

    raw = run_backend(backend, mf, opts, isolate=backend.caps.isolated if isolate is None else bool(isolate))
    if raw.x is not None:
        from milopt.solvers.extract import load_solution

        load_solution(mf, raw.x)
    extra = dict(raw.extra)
    extra.setdefault("status_text", raw.status_text)
    extra["model_size"] = mf.size()  # the size of what the solver received (callers need not extract again)
    if raw.trajectory:
        extra["trajectory"] = [(float(t), float(v)) for t, v in raw.trajectory]
    res = finish(backend.name, _safe(backend.version), cls, raw.termination, raw.x is not None, raw.objective,
                 raw.bound, budget.elapsed(), iterations=raw.iterations, nodes=raw.nodes, log=raw.log,
                 extra=extra, integer=cls.startswith("MI"), history=raw.history)
    return _after(res, backend, raise_on_no_solution)


def _solve_model(model, backend, form, opts: dict, raise_on_no_solution) -> SolveResult:
    """A backend that takes the Pyomo model itself (``takes_model``: ``bnb``), with the class
    its builder declared."""
    cls, feats = declared_class(model)
    check_supported(backend, cls, feats, form)
    opts = SolveOptions(**opts, time_limit=opts["budget"].remaining(), problem_class=cls)
    t0 = time.perf_counter()
    try:
        res = backend.solve_model(model, opts)
    except (SolverUnavailableError, UnsupportedProblemError, InvalidParameterError):
        raise
    except Exception as exc:  # a solver failure is a status, not a crash
        res = SolveResult(solver=backend.name, termination=Termination.ERROR, status=SolutionStatus.NONE,
                          wall_time=time.perf_counter() - t0, solver_version=_safe(backend.version),
                          problem_class=cls, log=f"{type(exc).__name__}: {exc}",
                          extra={"error": f"{type(exc).__name__}: {exc}"})
    return _after(res, backend, raise_on_no_solution)


def _after(res: SolveResult, backend, raise_on_no_solution: bool) -> SolveResult:
    if res.termination == Termination.INTERRUPTED and not res.ok:
        # the solver caught Ctrl-C (SCIP installs its own SIGINT handler, so Python never sees
        # it) and has nothing to return: stop the caller too
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
