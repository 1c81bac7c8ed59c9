"""Time budgets: a time limit covers everything a command does, not only the solver's own clock.

A command that loads data, builds a model, hands it to a solver and solves it is given one
limit T.  Each stage passes on what is left: the solver receives ``T - elapsed``; backends in
turn subtract their own hand-off (building the solver's model) before starting the solver's
clock.  When nothing is left before the solver starts, the result is ``termination=time_limit``
with no solution, without calling the solver.
"""
from __future__ import annotations

import contextlib
import time

from milopt.solvers.result import SolutionStatus, SolveResult, Termination

#: the least time handed to a solver (seconds): below this a solver cannot even start
MIN_SOLVER_SECONDS = 0.05


def remaining_or_expired(limit: float, t_start: float, solver: str = ""):
    """``(remaining seconds, None)`` or, when the budget is spent, ``(0.0, SolveResult)`` with
    termination ``time_limit`` and status none."""
    from milopt.params import parse_seconds

    parse_seconds("time_limit", limit)
    elapsed = time.perf_counter() - t_start
    left = float(limit) - elapsed
    if left >= MIN_SOLVER_SECONDS:
        return left, None
    return 0.0, SolveResult(solver=solver, termination=Termination.TIME_LIMIT, status=SolutionStatus.NONE,
                            wall_time=0.0, extra={"message": f"the time limit ({limit:g} s) was spent before the "
                                                             f"solver started ({elapsed:.1f} s loading and building)"})


class TimeLimitReached(Exception):
    """Raised inside the guarded stages (loading, building) when the time limit passes."""


@contextlib.contextmanager
def alarm_at(deadline: float | None):
    """Raise :class:`TimeLimitReached` in the guarded block once ``time.perf_counter()`` passes
    ``deadline`` (a no-op for None, outside the main thread, or when SIGALRM is already in use).

    Python runs the handler between bytecodes, so a long numpy call finishes first; code in C
    that never returns (a solver) is not interrupted -- solvers get their own limit instead."""
    import signal
    import threading

    usable = (deadline is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
              and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None))
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise TimeLimitReached()

    left = deadline - time.perf_counter()
    if left <= 0:
        raise TimeLimitReached()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def expired_result(limit: float, t_start: float, solver: str = "") -> SolveResult:
    """The result of a command whose time limit passed before its solver started."""
    elapsed = time.perf_counter() - t_start
    return SolveResult(solver=solver, termination=Termination.TIME_LIMIT, status=SolutionStatus.NONE, wall_time=0.0,
                       extra={"message": f"the time limit ({limit:g} s) passed while loading and building "
                                         f"({elapsed:.1f} s); the solver was not started"})
