"""Build, start, budget, solve: the one sequence behind ``milopt solve``, the bench, the
formulation estimators and every other method that solves a formulation through a solver
(BatchSVM, BatchProb, mi-SMM's MIQP, DC-MIL's DCA).

A formulation is solved in four stages, under one time limit T counted from ``t_start`` (one
:class:`~milopt.solvers.budget.TimeBudget`, handed down to the driver and the backend):

1. **build** -- the bags (given, or loaded by a callable inside the budget) and
   ``form.make_model(bags, **params)``; with ``interrupt=True`` loading and building are
   stopped when T passes (:func:`milopt.solvers.budget.alarm_at`) and the solver never starts;
2. **start** -- a starting point: an explicit ``point`` (``form.warm_start(model, *point)``),
   else the one the builder computed (``ModelInfo.start``; formulations with a ``warm_start``
   parameter), else, on request, the formulation's ``default_start(model)``;
3. **budget** -- the solver receives what is left of T; when less than
   :data:`~milopt.solvers.budget.MIN_SOLVER_SECONDS` is left the result is
   ``termination=time_limit`` with no solution and the solver is not called;
4. **solve** -- :func:`milopt.solvers.driver.solve`, with the matrix form extracted once here
   when the class was needed early (a named solver refused before the start is computed).

:func:`build_and_solve` runs the four stages; :func:`solve_built` runs stages 2 to 4 on a model
built already, so that an iterative method re-solves its model after changing a parameter in
place (same refusal, same budget) without rebuilding it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from milopt.solvers.result import SolveResult


@dataclass
class Staged:
    """What :func:`build_and_solve` did.

    Attributes
    ----------
    model, bags
        The built model and the bags it was built on (None when T passed while building).
    result : SolveResult
        The solver's result, or the time-limit result of a budget spent before the solver.
    build_seconds : float
        ``make_model`` alone; when T passed while loading or building, the time from ``t_start``.
    start_seconds : float
        Time spent in ``default_start`` / ``warm_start``.
    warm_start : bool
        The variables held a starting point handed to the solver.
    solver_time_limit : float or None
        The seconds the solver was given.
    stage : str
        ``"solved"`` (the solver ran), ``"budget"`` (T was spent before the solver started) or
        ``"build"`` (T passed while loading or building).
    solve_seconds : float
        The driver's call alone (extraction and solver); ``result.wall_time`` counts from the
        start of the budget.
    """

    model: Any
    bags: Any
    result: SolveResult
    build_seconds: float
    start_seconds: float = 0.0
    warm_start: bool = False
    solver_time_limit: float | None = None
    stage: str = "solved"
    solve_seconds: float = 0.0

    def model_size(self):
        """The size of what the solver received (the driver's extraction, in
        ``result.extra``), else measured on the model; None without a model."""
        size = (self.result.extra or {}).get("model_size")
        if size is None and self.model is not None:
            from milopt.solvers.extract import model_size

            size = model_size(self.model)
        return size


def apply_start(form, model, warm_start: bool | None, point=None) -> tuple[bool, float]:
    """Stage 2: put a starting point in ``model``'s variables; (one is there, seconds spent).

    ``point`` (a tuple for ``form.warm_start``) wins; a formulation with a ``warm_start``
    parameter (or ``warm_start=None``) keeps what its builder computed (``ModelInfo.start``);
    ``warm_start=True`` calls ``form.default_start`` when the formulation has one."""
    from milopt.models.info import info

    t0 = time.perf_counter()
    if point is not None:
        form.warm_start(model, *point)
    elif warm_start is None or "warm_start" in form.params:
        return bool(info(model).start), 0.0
    elif warm_start and form.default_start is not None:
        form.default_start(model)
    else:
        return False, 0.0
    return True, time.perf_counter() - t0


def build_and_solve(form, bags, params: dict, solver: str = "auto", *, time_limit: float | None = None,
                    t_start: float | None = None, warm_start: bool | None = None, point=None,
                    build_kw: dict | None = None, interrupt: bool = False, mip_gap: float | None = None,
                    threads: int | None = None, verbose: bool = False, options: dict | None = None,
                    before_solve: Callable | None = None, refuse_early: bool = True, budget=None) -> Staged:
    """Build ``form`` on ``bags``, start, budget and solve it (see the module docstring).

    Parameters
    ----------
    form : Formulation or str
        The formulation (or its name).
    bags : Bags or callable
        The bags, or a function of no arguments returning them (called inside the budget).
    params : dict
        The formulation's typed parameters (:meth:`Formulation.validate`).
    solver : str
        Backend name or ``auto``; with ``refuse_early``, a named backend that cannot take the
        built model is refused before the start is computed (the driver refuses it anyway,
        from the matrix form, before solving).
    time_limit : float, optional
        T in seconds, counted from ``t_start`` (default: now).
    warm_start, point
        Stage 2 (:func:`apply_start`).
    build_kw : dict, optional
        Further keywords for ``make_model`` (e.g. an ``upper_bound`` from the start).
    interrupt : bool
        Stop loading and building when T passes.
    mip_gap, threads, verbose, options
        As :func:`milopt.solvers.driver.solve`.
    budget : TimeBudget, optional
        The command's budget, when it started before this call (replaces ``time_limit`` and
        ``t_start``).
    before_solve : callable, optional
        ``before_solve(model, problem_class) -> dict`` of :func:`~milopt.solvers.driver.solve`
        keywords that replace the ones above (the bench asks SCIP for its display lines on
        integer problems).
    """
    from milopt.solvers.budget import TimeBudget, TimeLimitReached, alarm_at

    if isinstance(form, str):
        from milopt.models import formulation

        form = formulation(form)
    budget = budget if budget is not None else TimeBudget(time_limit, t_start)
    try:
        with alarm_at(budget.deadline if interrupt else None):
            if callable(bags):
                bags = bags()
            t0 = time.perf_counter()
            model = form.make_model(bags, **params, **(build_kw or {}))
            build_s = time.perf_counter() - t0
    except TimeLimitReached:
        return Staged(None, None, budget.expired_result(solver, stage="while loading and building"), budget.elapsed(),
                      stage="build")
    return solve_built(form, model, solver, budget=budget, bags=bags, build_seconds=build_s, warm_start=warm_start,
                       point=point, mip_gap=mip_gap, threads=threads, verbose=verbose, options=options,
                       before_solve=before_solve, refuse_early=refuse_early)


def solve_built(form, model, solver: str = "auto", *, budget=None, time_limit: float | None = None,
                bags=None, build_seconds: float = 0.0, warm_start: bool | None = False, point=None,
                mip_gap: float | None = None, threads: int | None = None, verbose: bool = False,
                options: dict | None = None, before_solve: Callable | None = None,
                refuse_early: bool = True) -> Staged:
    """Stages 2 to 4 (start, budget, solve) on a model that is built already.

    :func:`build_and_solve` ends here after building; an iterative method calls it again on
    the same model after changing its parameters in place, without rebuilding (DC-MIL's DCA
    updates the linearisation of its objective, :func:`milopt.algorithms.dcmil.dca`).  Each call
    refuses a named solver that cannot take the model as it is now, and hands the solver what is
    left of ``budget``.

    Parameters
    ----------
    form : Formulation
        The formulation ``model`` was built from.
    model : pyomo ConcreteModel
        The built model (its variables receive the solution).
    budget : TimeBudget, optional
        The budget the model was built under (default: a budget of ``time_limit`` seconds
        started now).
    bags, build_seconds
        Reported in the returned :class:`Staged`.
    solver, warm_start, point, mip_gap, threads, verbose, options, before_solve, refuse_early
        As :func:`build_and_solve` (``warm_start=False``: the variables' values are not handed
        to the solver as a start).
    """
    from milopt.solvers.budget import as_budget
    from milopt.solvers.driver import check_supported, declared_class, get_backend, solve

    budget = as_budget(time_limit, budget)
    backend = None if solver == "auto" else get_backend(solver)
    mf = None
    cls = None
    if backend is not None and refuse_early:
        if backend.takes_model:
            cls, feats = declared_class(model)
        else:
            from milopt.solvers.extract import extract

            mf = extract(model)
            cls, feats = mf.problem_class(), mf.features()
        check_supported(backend, cls, feats, form.name)
    started, start_s = apply_start(form, model, warm_start, point)
    kw = dict(mip_gap=mip_gap, threads=threads, verbose=verbose, options=options, warm_start=started)
    if before_solve is not None:
        if cls is None:
            from milopt.solvers.extract import extract

            mf = extract(model)
            cls = mf.problem_class()
        kw.update(before_solve(model, cls))
    if budget.spent():
        expired = budget.expired_result(solver)
        if mf is not None:  # the size of what was built, known without extracting again
            expired = replace(expired, extra={**expired.extra, "model_size": mf.size()})
        return Staged(model, bags, expired, build_seconds, start_s, started, 0.0, "budget")
    limit = budget.remaining()
    t0 = time.perf_counter()
    result = solve(model, solver, budget=budget, mf=mf, **kw)
    return Staged(model, bags, result, build_seconds, start_s, started, limit, "solved", time.perf_counter() - t0)
