"""The normalized result every solver backend and native algorithm returns."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum, IntEnum
from typing import Any, Mapping


class Termination(str, Enum):
    """Why a solve or a fit stopped: one vocabulary for every backend and native algorithm.

    ``optimal`` is reserved for a *proof*: a solver (or an exact method) certified that no
    better solution exists, within its gap tolerance.  A local method that met its own stopping
    test reports ``converged``; one stopped by a safeguard or a validation criterion before its
    convergence test reports ``early_stopped``.  The table of ``docs/statuses.md`` gives each
    word's meaning and which method reports it when.
    """

    OPTIMAL = "optimal"                  # proven optimal: gap within the tolerance
    CONVERGED = "converged"              # a local method met its stopping test (no proof of optimality)
    EARLY_STOPPED = "early_stopped"      # stopped before convergence by a validation or safeguard criterion
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"  # also node / function-evaluation budgets
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


#: what each termination word means for the model a fit returns (the CLI prints these notes;
#: ``docs/statuses.md`` has the full table)
TERMINATION_NOTES = {
    "optimal": "proven optimal: the solver's bound certifies the objective within the gap tolerance",
    "converged": "a local method met its stopping test (a stationary or fixed point); nothing is proven about "
                 "global optimality",
    "early_stopped": "stopped before its convergence test (validation score no longer improving, or no further "
                     "descent); the best iterate is kept",
    "iteration_limit": "stopped at its iteration (or evaluation, node) budget before its stopping test; the "
                       "model is the last (or best) iterate",
    "time_limit": "stopped at the time limit; the model is the best found in time, not proven optimal",
    "infeasible": "the problem has no feasible point",
    "unbounded": "the objective is unbounded",
    "infeasible_or_unbounded": "the problem is infeasible or unbounded (the solver did not say which)",
    "interrupted": "interrupted by the user; the model is the best found so far",
    "error": "the solver or method failed (e.g. numerical trouble); any model is the last finite iterate",
    "unknown": "the solver gave no reason",
}


class SolutionStatus(IntEnum):
    """Ordered quality of the solution returned: none < feasible < optimal."""

    NONE = 0
    FEASIBLE = 1
    OPTIMAL = 2

    def __str__(self) -> str:
        return self.name.lower()


#: a reported bound this close to zero (relative to max(1, |objective|)) is solver noise: 0
BOUND_ZERO_TOL = 1e-8


def relative_gap(objective: float | None, bound: float | None) -> float:
    """``|objective - bound| / max(|objective|, 1e-10)``; inf when either is missing.

    This is the convention of Gurobi and of HiGHS's ``mip_rel_gap`` (relative to the primal
    value). A proven optimum with equal values has gap 0.
    """
    if objective is None or bound is None or not (math.isfinite(objective) and math.isfinite(bound)):
        return math.inf
    return abs(objective - bound) / max(abs(objective), 1e-10)


@dataclass(frozen=True)
class SolveResult:
    """Outcome of one solve (a Pyomo model through a backend, or a native algorithm).

    Attributes
    ----------
    solver, solver_version : str
    termination : Termination
    status : SolutionStatus
        none < feasible < optimal.
    objective : float or None
        Objective of the returned solution (None when there is none).
    bound : float or None
        Best proven bound (minimisation: lower bound); None when the solver gives none.
    gap : float
        Relative gap ``|objective - bound| / max(|objective|, 1e-10)``; inf when unknown.  In
        [0, 1] whenever objective and bound have the same sign (zero counts as either), e.g.
        for every nonnegative SVM objective; larger only when they have opposite signs.
        Bounds within ``BOUND_ZERO_TOL · max(1, |objective|)`` of zero are reported as 0.
    wall_time : float
        Seconds.
    iterations, nodes : int or None
        Simplex/barrier/algorithm iterations and branch-and-bound nodes when reported.
    problem_class : str
        LP, QP, MILP, MIQP, QCQP, or "native".
    log : str
        Solver output captured (may be empty when the solver was kept quiet).
    history : tuple of dict
        Per-iteration records of native algorithms (objective, residuals, time...).
    extra : mapping
        Backend-specific details (model size, options used, messages).
    """

    solver: str
    termination: Termination
    status: SolutionStatus
    objective: float | None = None
    bound: float | None = None
    gap: float = math.inf
    wall_time: float = 0.0
    iterations: int | None = None
    nodes: int | None = None
    solver_version: str = ""
    problem_class: str = ""
    log: str = ""
    history: tuple = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        # Solvers report bounds with their numerical tolerances: a bound of -1e-9 on a
        # nonnegative objective, or a gap of 1.0000000000015, is noise.  A bound within
        # BOUND_ZERO_TOL · max(1, |objective|) of zero is 0; a gap between an objective and a
        # bound of the same sign (zero counts as either) lies in [0, 1] and is clipped to it.
        obj, bound, gap = self.objective, self.bound, self.gap
        if bound is not None and math.isfinite(bound):
            scale = max(1.0, abs(obj)) if obj is not None and math.isfinite(obj) else 1.0
            if abs(bound) <= BOUND_ZERO_TOL * scale:
                bound = 0.0
                object.__setattr__(self, "bound", 0.0)
        if gap is not None and math.isfinite(gap):
            if gap < 0:
                gap = 0.0
            if (obj is not None and bound is not None and math.isfinite(obj) and math.isfinite(bound)
                    and obj * bound >= 0):
                gap = min(gap, 1.0)
            object.__setattr__(self, "gap", float(gap))

    @property
    def ok(self) -> bool:
        """A solution is available (feasible or optimal)."""
        return self.status >= SolutionStatus.FEASIBLE

    def to_dict(self, *, log: bool = False, history: bool = True) -> dict:
        d = asdict(self)
        d["termination"] = str(self.termination)
        d["status"] = str(self.status)
        for k in ("objective", "bound", "gap"):
            v = d[k]
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
        if not log:
            d.pop("log")
        if not history:
            d.pop("history")
        else:
            d["history"] = [dict(h) for h in self.history]
        d["extra"] = dict(self.extra)
        return d


def finish(solver: str, version: str, cls: str, termination: Termination, has_solution: bool,
           objective, bound, wall: float, *, iterations=None, nodes=None, log="", extra=None,
           integer: bool = False, history=()) -> SolveResult:
    """A backend's :class:`SolveResult` with a consistent status and gap.

    No solution: status none, no objective.  Termination optimal: status optimal, and a
    missing bound is the objective itself (a continuous optimum).  Otherwise: feasible.  The gap
    is :func:`relative_gap` of objective and bound (infinite without either)."""
    if not has_solution:
        status = SolutionStatus.NONE
        objective = None
    elif termination == Termination.OPTIMAL:
        status = SolutionStatus.OPTIMAL
    else:
        status = SolutionStatus.FEASIBLE
    objective = None if objective is None else float(objective)
    if bound is not None:
        bound = float(bound)
        if not math.isfinite(bound):
            bound = None
    if status == SolutionStatus.OPTIMAL and bound is None:
        bound = objective  # continuous optimum: the objective is its own bound
    gap = relative_gap(objective, bound) if objective is not None else math.inf
    return SolveResult(solver=solver, termination=termination, status=status, objective=objective, bound=bound,
                       gap=gap, wall_time=float(wall), iterations=iterations, nodes=nodes, solver_version=version,
                       problem_class=cls, log=log or "", extra=dict(extra or {}), history=tuple(history))


def native(solver: str, termination: Termination, objective, wall: float, *, iterations=None, history=(),
           extra=None, version: str = "milopt") -> SolveResult:
    """The :class:`SolveResult` of a native iterative method (problem class ``native``).

    A native method proves nothing: its status is feasible whenever the objective is a finite
    number (none otherwise, or on ``error``), never optimal, and it has no bound, so the gap is
    infinite.  A method that met its own stopping test reports ``converged`` (a stationary or
    fixed point), not ``optimal``: ``termination=Termination.OPTIMAL`` is read as ``converged``
    here (a method that can prove optimality builds its result with :func:`finish` and a
    bound).  See ``docs/statuses.md``."""
    termination = Termination(termination)
    if termination == Termination.OPTIMAL:
        termination = Termination.CONVERGED
    ok = objective is not None and math.isfinite(float(objective)) and termination != Termination.ERROR
    status = SolutionStatus.FEASIBLE if ok else SolutionStatus.NONE
    return SolveResult(solver=solver, termination=termination, status=status,
                       objective=None if objective is None else float(objective), bound=None, gap=math.inf,
                       wall_time=float(wall), iterations=iterations, solver_version=version, problem_class="native",
                       history=tuple(history), extra=dict(extra or {}))

