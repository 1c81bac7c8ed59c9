"""The incumbent trajectory of a solve: every improving solution, as the solver reports it."""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

#: what a solver library may report as an infinite objective (CPLEX, Xpress: 1e20)
BIG = 1e20


@dataclass
class Incumbents:
    """The incumbent trajectory: ``(seconds since t0, objective)`` of each improving solution.

    Callbacks may run in several solver threads at once (a lock guards the list) and may report
    solutions no better than the incumbent (CPLEX's candidate context, Xpress's heuristics):
    only values that improve by more than a relative 1e-12 in the model's sense are kept, so
    the list is monotone — non-increasing for minimisation, non-decreasing for maximisation.
    ``notify`` (the driver's ``SolveOptions.on_incumbent``) receives ``(seconds, objective, x)``
    of each kept solution; ``x`` is read from the solver only then."""

    sense: int
    t0: float
    notify: Callable | None = None
    points: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, objective, get_x: Callable | None = None) -> None:
        try:
            v = float(objective)
        except (TypeError, ValueError):
            return
        if not math.isfinite(v) or abs(v) >= BIG:
            return
        t = time.perf_counter() - self.t0
        with self._lock:
            if self.points:
                best = self.points[-1][1]
                if self.sense * (best - v) <= 1e-12 * max(1.0, abs(best)):
                    return
            self.points.append((t, v))
            if self.notify is not None and get_x is not None:
                try:
                    x = np.asarray(get_x(), dtype=float)
                except Exception:
                    return
                self.notify(t, v, x)

    def finish(self, objective, has_solution: bool, x=None) -> list:
        """The trajectory, with the final solution appended when no callback reported it (a
        continuous model, or a solution found after the last callback)."""
        if has_solution and objective is not None:
            self.add(objective, None if x is None else (lambda: x))
        return list(self.points)
