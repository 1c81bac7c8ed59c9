"""Time budgets: a time limit covers everything a command does, not only the solver's own clock.

A command that loads data, builds a model, hands it to a solver and solves it is given one
limit :math:`T`, started once as a :class:`TimeBudget`.  Every stage reads what is left from
that one object: the pipeline before the solver starts, the driver after extracting the matrix
form, a backend after building its native model, right before it starts the solver's clock.
No stage is ever handed :math:`T` again.  ``milopt solve`` starts its budget at its process's
start less :data:`FINISH_SECONDS` (``milopt.processes.command_start``), so that the limit
bounds the command's whole wall time: interpreter start-up, imports, printing and exit.  When less than :data:`MIN_SOLVER_SECONDS` is left
before the solver starts, the result is ``termination=time_limit`` with no solution, without
calling the solver.

:func:`parse_time_limit` (declared in :mod:`milopt.params`, the lowest layer, and re-exported here) is the one reading of a time limit (``--time-limit``, ``--set
time_limit``, ``time_limit=`` in Python): seconds > 0, finite, and no more than the platform can
wait for (:data:`MAX_SECONDS`, the largest timeout Python's ``threading`` accepts; a larger
value would overflow a C ``time_t`` or a timeout somewhere below).
"""
from __future__ import annotations

import contextlib
import threading
import time

from milopt.params import MAX_SECONDS, parse_time_limit  # noqa: F401  (the one reading, re-exported)
from milopt.solvers.result import SolutionStatus, SolveResult, Termination

#: the least time handed to a solver (seconds): below this a solver cannot even start
MIN_SOLVER_SECONDS = 0.05

#: seconds a command keeps, out of its time limit, to write its result and exit: ``milopt solve``
#: starts its budget this much before its process started
FINISH_SECONDS = 0.25


class TimeBudget:
    """One time limit for a whole command, started once (``limit=None``: no limit).

    Parameters
    ----------
    limit : float or None
        Seconds (checked by :func:`parse_time_limit`).
    t0 : float, optional
        ``time.perf_counter()`` at the start of the command (default: now).  The clock is the
        system's monotonic one, so a budget handed to a forked child keeps counting there.
    """

    __slots__ = ("limit", "t0")

    def __init__(self, limit: float | None = None, t0: float | None = None):
        self.limit = parse_time_limit(limit)
        self.t0 = time.perf_counter() if t0 is None else float(t0)

    def __repr__(self):
        return f"TimeBudget(limit={self.limit!r}, elapsed={self.elapsed():.3f})"

    def __reduce__(self):
        return (TimeBudget, (self.limit, self.t0))

    @property
    def deadline(self) -> float | None:
        """``time.perf_counter()`` value at which the limit passes (None without a limit)."""
        return None if self.limit is None else self.t0 + self.limit

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float | None:
        """Seconds left, possibly negative (None without a limit)."""
        return None if self.limit is None else self.limit - self.elapsed()

    def remaining(self) -> float | None:
        """Seconds to hand a solver now: what is left, at least :data:`MIN_SOLVER_SECONDS` (so a
        solver still starts and stops at once with what it has); None without a limit."""
        left = self.left()
        return None if left is None else max(MIN_SOLVER_SECONDS, left)

    def spent(self) -> bool:
        """Less than :data:`MIN_SOLVER_SECONDS` is left: a solver should not be started."""
        left = self.left()
        return left is not None and left < MIN_SOLVER_SECONDS

    def expired_result(self, solver: str = "", *, stage: str = "before the solver started") -> SolveResult:
        """The result of a command whose limit passed ``stage``: ``time_limit``, no solution."""
        return SolveResult(solver=solver, termination=Termination.TIME_LIMIT, status=SolutionStatus.NONE,
                           wall_time=0.0, extra={"message": f"the time limit ({self.limit:g} s) passed {stage} "
                                                            f"({self.elapsed():.1f} s); the solver was not started"})


def as_budget(time_limit=None, budget: TimeBudget | None = None) -> TimeBudget:
    """``budget`` when given, else a budget of ``time_limit`` seconds started now."""
    return budget if budget is not None else TimeBudget(time_limit)


class TimeLimitReached(Exception):
    """Raised inside the guarded stages (loading, building) when the time limit passes."""


@contextlib.contextmanager
def alarm_at(deadline: float | None):
    """Raise :class:`TimeLimitReached` in the guarded block once ``time.perf_counter()`` passes
    ``deadline`` (a no-op for None, outside the main thread, or when SIGALRM is already in use).

    Python runs the handler between bytecodes, so a long numpy call finishes first; code in C
    that never returns (a solver) is not interrupted -- solvers get their own limit instead."""
    import signal

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
