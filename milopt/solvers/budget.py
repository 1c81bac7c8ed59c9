"""Time budgets: a time limit covers everything a command does, not only the solver's own clock.

A command that loads data, builds a model, hands it to a solver and solves it is given one
limit T.  Each stage passes on what is left: the solver receives ``T - elapsed``; backends in
turn subtract their own hand-off (building the solver's model) before starting the solver's
clock.  When nothing is left before the solver starts, the result is ``termination=time_limit``
with no solution, without calling the solver.
"""
from __future__ import annotations

import time

from milopt.solvers.result import SolutionStatus, SolveResult, Termination

#: the least time handed to a solver (seconds): below this a solver cannot even start
MIN_SOLVER_SECONDS = 0.05


def remaining_or_expired(limit: float, t_start: float, solver: str = ""):
    """``(remaining seconds, None)`` or, when the budget is spent, ``(0.0, SolveResult)`` with
    termination ``time_limit`` and status none."""
    from milopt.errors import InvalidParameterError

    if not (limit > 0):
        raise InvalidParameterError(f"time_limit: expected seconds > 0, got {limit}")
    elapsed = time.perf_counter() - t_start
    left = float(limit) - elapsed
    if left >= MIN_SOLVER_SECONDS:
        return left, None
    return 0.0, SolveResult(solver=solver, termination=Termination.TIME_LIMIT, status=SolutionStatus.NONE,
                            wall_time=0.0, extra={"message": f"the time limit ({limit:g} s) was spent before the "
                                                             f"solver started ({elapsed:.1f} s loading and building)"})
