"""What a solver backend is: one small typed object per solver.

A backend declares, in one place,

* the problem classes and constraint features it takes (``classes``),
* its status map (the solver's own status codes → :class:`~milopt.solvers.result.Termination`),
* ``skip(mf, opts) -> (bool, reason)``: why it cannot take this particular model (a licence
  size limit, a feature it lacks, a formulation it is specialised for), checked *before* the
  solve,
* ``solve_matrix(mf, opts) -> RawResult``: the solve, from the one matrix form
  (:class:`milopt.matrix.MatrixForm`), returning the solution vector in the form's column order,
* how it is installed and its limits (for ``milopt list`` and docs/backends.md).

The driver (:mod:`milopt.solvers.driver`) extracts the matrix form once, refuses what a backend
cannot take, runs ``solve_matrix`` (in a child process with a hard deadline when the backend is
``isolated``), loads the solution into the model and assembles the :class:`SolveResult`.

Older backends that take the Pyomo model itself keep ``run(model, opts)`` (plugins written
before the matrix form, the MI-SVM branch and bound ``bnb``, which needs the data behind the
model rather than its rows).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from milopt.solvers.result import Termination


@dataclass(frozen=True)
class SolveOptions:
    """Options every backend receives (the same for all; ``options`` are native and passed through)."""

    time_limit: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    warm_start: bool = False
    verbose: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    problem_class: str = ""
    #: starting point in the matrix form's column order (NaN where unknown), when warm_start
    x0: np.ndarray | None = None
    #: called as ``on_incumbent(seconds, objective, x)`` for every improving solution, by the
    #: backends that report a trajectory (the driver streams them out of an isolated solve)
    on_incumbent: Callable | None = None

    def get(self, key, default=None):  # dict-style access, as older backends read their options
        return getattr(self, key, default)

    def __getitem__(self, key):
        return getattr(self, key)


@dataclass
class RawResult:
    """What ``solve_matrix`` returns: the solver's outcome before normalisation.

    ``x`` is in the matrix form's column order (None without a solution); ``objective`` and
    ``bound`` are in the model's own sense and include the constant ``c0``; ``trajectory`` is
    the list of ``(seconds since the solve started, incumbent objective)`` of every improving
    solution the solver reported, in the order found (for primal integrals)."""

    termination: Termination
    x: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    iterations: int | None = None
    nodes: int | None = None
    log: str = ""
    status_text: str = ""
    trajectory: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    #: per-iteration records (an interior-point log, say), kept in ``SolveResult.history``
    history: tuple = ()


def map_status(status_map: Mapping, code, default: Termination = Termination.UNKNOWN) -> Termination:
    """The :class:`Termination` of a solver status code through its backend's map."""
    return status_map.get(code, default)


@dataclass
class Backend:
    """A solver backend.

    Parameters
    ----------
    name : str
        milopt name (``highs``, ``scip``, ``cplex``, ...).
    classes : set of str
        Problem classes it solves (LP, QP, QCQP, MILP, MIQP, MIQCQP) and features
        (``SOS``, ``INDICATOR``).
    module : str
        Python module that must be importable.
    version : callable() -> str
    solve_matrix : callable(MatrixForm, SolveOptions) -> RawResult, optional
        The solve, from the matrix form (the normal case).
    run : callable(model, options: dict) -> SolveResult, optional
        The solve, from the Pyomo model itself (plugins of the older kind; ``bnb``).
    status_map : mapping
        The solver's status codes → :class:`Termination` (documentation and one place to read).
    skip : callable(MatrixForm, SolveOptions) -> (bool, str), optional
        Whether this backend cannot take this model, and the one-line reason with the fix.
    description, install, limits : str
        For ``milopt list`` and the capability table.
    formulations : tuple of str
        When given, the only formulations (public names) the backend accepts.
    generic : bool
        False for a structure-aware backend that solves only some formulations of its classes
        (e.g. ``bnb``): used when named or for those formulations, never for ``auto``.
    write : callable(model, path) -> dict, optional
        Writer for models only this backend can represent (kept for plugins).
    isolated : bool
        Run ``solve_matrix`` in a child process with a hard deadline (time limit plus a grace
        period): a solver that hangs or aborts in native code then ends as ``time_limit`` or
        ``error`` instead of hanging or killing the Python process.
    trajectory, warm_start, threads : bool
        Capabilities for the table: reports the incumbent trajectory, takes a start, honours a
        thread count.
    params : ParamSet, optional
        Options the backend declares (typed, with defaults and help), e.g. ``bnb``'s.
    """

    name: str
    classes: frozenset
    module: str
    version: Callable[[], str]
    run: Callable | None = None
    solve_matrix: Callable | None = None
    status_map: Mapping = field(default_factory=dict)
    skip: Callable | None = None
    description: str = ""
    install: str = ""
    limits: str = ""
    aliases: tuple = ()
    write: Callable | None = None
    formulations: tuple = ()
    generic: bool = True
    isolated: bool = False
    trajectory: bool = False
    warm_start: bool = False
    threads: bool = True
    #: the backend's own options as a :class:`milopt.params.ParamSet` (``--set key=value`` on
    #: ``milopt solve`` reaches them, typed); None: native options pass through unchecked
    params: object = None
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

    def cannot_take(self, mf, opts: SolveOptions) -> tuple[bool, str]:
        """``(True, reason)`` when this backend cannot take ``mf`` (its ``skip`` hook)."""
        if self.skip is None:
            return False, ""
        return self.skip(mf, opts)


@contextmanager
def quiet_stdout():
    """Send what native code writes to file descriptor 1 (banners, logs) to stderr meanwhile.

    Solvers print from C (HiGHS's banner when a ``Highs()`` is created, CPLEX's and Xpress's
    licence lines) before any option can silence them; ``--json`` promises stdout holds one
    JSON document only."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        saved = os.dup(fd)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        os.dup2(2, fd)
        yield
    finally:
        try:
            sys.stdout.flush()
        except Exception:
            pass
        os.dup2(saved, fd)
        os.close(saved)
