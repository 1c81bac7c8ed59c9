r"""What a solver backend is: one subclass of :class:`Backend`, in one file.

The skeleton of a solve is written once, in :meth:`Backend.solve_matrix`:

1. the declared :attr:`~Backend.rewrites` turn the matrix form (:class:`milopt.matrix.MatrixForm`)
   into the form the solver's API takes (:mod:`milopt.solvers.rewrites`: ranged rows split,
   free rows dropped, infinite bounds made finite, maximisation made minimisation, quadratic
   rows one-sided) -- each a small declared step ``MatrixForm -> MatrixForm``;
2. :meth:`~Backend.open` and :meth:`~Backend.build` load it into the solver (the backend's API
   calls);
3. the common options (threads, relative gap) and then the native ones are set, a native option
   the solver refuses becoming one :class:`~milopt.errors.InvalidParameterError` line that names
   it and the closest valid names (:meth:`~Backend.set_options`);
4. the solver receives what is left of the command's one :class:`~milopt.solvers.budget.TimeBudget`
   after all of that (:meth:`~Backend.set_time_limit`), then :meth:`~Backend.optimize` runs it;
5. :meth:`~Backend.outcome` reads the solver's answer as an :class:`Outcome`; its status code goes
   through the backend's :attr:`~Backend.status_map` (one table per solver), the incumbent
   trajectory is completed, the rewrites are undone (a negated objective), and a claim of
   optimality on a continuous model without a bound of the solver's own is checked from the
   matrix form when the backend asks for it (``Capabilities.certify``,
   :mod:`milopt.solvers.certify`).

A solver failure is a :class:`RawResult` with termination ``error`` and one line, never an
exception.  The driver (:mod:`milopt.solvers.driver`) extracts the matrix form once, refuses what a
backend cannot take (:meth:`~Backend.cannot_take`), runs :meth:`~Backend.solve_matrix` (in a
child process with a hard deadline when ``Capabilities.isolated``), loads the solution into the
model and assembles the :class:`~milopt.solvers.result.SolveResult` (:func:`~milopt.solvers.result.finish`).

A structure-aware backend that needs the model rather than its rows (the MI-SVM branch and bound
``bnb``) sets ``takes_model = True`` and implements :meth:`~Backend.solve_model` instead.
"""
from __future__ import annotations

import difflib
import importlib.util
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from milopt.solvers.budget import TimeBudget
from milopt.solvers.result import Termination


@dataclass(frozen=True)
class SolveOptions:
    """Options every backend receives (the same for all; ``options`` are native).

    ``budget`` is the command's one :class:`~milopt.solvers.budget.TimeBudget`: a backend hands
    its solver :meth:`seconds_left` right before starting it.  ``time_limit`` alone (no budget)
    starts a budget of that many seconds when the options are made."""

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
    budget: TimeBudget | None = None

    def __post_init__(self):
        if self.budget is None and self.time_limit is not None:
            object.__setattr__(self, "budget", TimeBudget(self.time_limit))

    def seconds_left(self) -> float | None:
        """What is left of the budget now (at least the floor); None without a limit."""
        return None if self.budget is None else self.budget.remaining()


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
class Outcome:
    """What :meth:`Backend.outcome` reads from the solver after a solve.

    ``code`` is the key of the backend's status map; ``bound`` is a bound of the solver's own
    (branch and bound), None for a continuous solve (:func:`~milopt.solvers.result.finish` then
    uses the objective of a proven optimum); ``row_dual`` are the linear rows' multipliers
    (for :mod:`milopt.solvers.certify`)."""

    code: Any
    x: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    iterations: int | None = None
    nodes: int | None = None
    status_text: str = ""
    extra: dict = field(default_factory=dict)
    row_dual: np.ndarray | None = None
    log: str = ""
    history: tuple = ()
    #: a termination decided by the backend itself (overrides the status map)
    termination: Termination | None = None


@dataclass(frozen=True)
class Capabilities:
    """What a backend takes and does.

    Attributes
    ----------
    classes : frozenset of str
        Problem classes (LP, QP, QCQP, MILP, MIQP, MIQCQP) and features (``SOS``, ``INDICATOR``).
    formulations : tuple of str
        When given, the only formulations (public names) it accepts.
    generic : bool
        False for a structure-aware backend (``bnb``): used when named, never for ``auto``.
    isolated : bool
        Solve in a child process with a hard deadline (a solver that can hang or abort in
        native code, or that checks its time limit too rarely).
    trajectory, warm_start, threads : bool
        Reports the incumbent trajectory; takes a start; honours a thread count.
    certify : bool
        Its claims of optimality on continuous models carry no bound of its own: the skeleton
        checks them from the matrix form (:mod:`milopt.solvers.certify`).
    """

    classes: frozenset = frozenset()
    formulations: tuple = ()
    generic: bool = True
    isolated: bool = False
    trajectory: bool = False
    warm_start: bool = False
    threads: bool = True
    certify: bool = False


@dataclass(frozen=True)
class About:
    """For ``milopt list`` and the capability table: one line, how to install, limits."""

    description: str = ""
    install: str = ""
    limits: str = ""


class Backend:
    """A solver backend (subclass it; see the module docstring for the skeleton it fills in).

    Class attributes: ``name``, ``module`` (the Python module that must be importable),
    ``aliases``, ``caps`` (:class:`Capabilities`), ``about`` (:class:`About`), ``status_map``
    (the solver's status codes -> :class:`Termination`), ``rewrites`` (steps of
    :mod:`milopt.solvers.rewrites`), ``params`` (declared native options, a
    :class:`milopt.params.ParamSet`, or None: native options are passed through),
    ``option_hint`` (what a native option name looks like, for the error line) and
    ``native_errors`` (the solver's exception types, turned into ``error`` results).
    Keyword arguments of the constructor override them for one instance.
    """

    name: str = ""
    module: str = ""
    aliases: tuple = ()
    caps: Capabilities = Capabilities()
    about: About = About()
    status_map: Mapping = {}
    rewrites: tuple = ()
    params: Any = None
    option_hint: str = "a native option name"
    native_errors: tuple = ()
    takes_model: bool = False

    def __init__(self, **overrides):
        for k, v in overrides.items():
            if not hasattr(type(self), k):
                raise TypeError(f"{type(self).__name__}: unknown attribute {k!r}")
            setattr(self, k, v)
        self._available = None

    def __repr__(self):
        return f"<backend {self.name}>"

    # ------------------------------------------------------------ declarations
    @property
    def classes(self) -> frozenset:
        return self.caps.classes

    @property
    def description(self) -> str:
        return self.about.description

    def version(self) -> str:
        return ""

    def available(self) -> bool:
        if self._available is None:
            try:
                self._available = importlib.util.find_spec(self.module) is not None
            except (ImportError, ValueError):
                self._available = False
        return self._available

    def supports(self, cls: str, features=(), formulation: str | None = None) -> bool:
        if self.caps.formulations and formulation not in self.caps.formulations:
            return False
        return cls in self.caps.classes and all(f in self.caps.classes for f in features)

    def cannot_take(self, mf, opts: SolveOptions) -> tuple[bool, str]:
        """``(True, reason)`` when this backend cannot take ``mf`` (a licence limit, a feature
        it lacks), asked before the solve; ``(False, "")`` otherwise."""
        return False, ""

    def solve_model(self, model, opts: SolveOptions):
        """The solve of a backend with ``takes_model = True``: a :class:`SolveResult`."""
        raise NotImplementedError(f"{self.name} solves from the matrix form")

    # ------------------------------------------------------------ the skeleton
    def solve_matrix(self, mf, opts: SolveOptions) -> RawResult:
        """Solve ``mf`` (see the module docstring); never raises for a solver failure."""
        from milopt.solvers.rewrites import rewrite
        from milopt.solvers.trajectory import Incumbents

        budget = opts.budget if opts.budget is not None else TimeBudget(None)
        t0 = time.perf_counter()
        form, undo = rewrite(mf, self.rewrites)
        incumbents = Incumbents(int(form.sense), t0, opts.on_incumbent)
        session = None
        with quiet_output():
            try:
                session = self.open(form, opts)
                extra = dict(self.build(session, form, opts, incumbents) or {})
                self.set_common(session, form, opts)
                left = budget.remaining()
                if left is not None:
                    self.set_time_limit(session, left)
                self.set_options(session, opts.options)  # last: a native option overrides the common ones
                extra["build_seconds"] = time.perf_counter() - t0
                self.optimize(session, form, opts, extra)
                extra["solve_seconds"] = time.perf_counter() - t0 - extra["build_seconds"]
                out = self.outcome(session, form, extra)
            except self.native_errors as exc:
                return undo(self.failure(exc, form, incumbents))
            finally:
                if session is not None:
                    self.close(session)
            term = out.termination if out.termination is not None else map_status(self.status_map, out.code)
            has = out.x is not None
            raw = RawResult(termination=term, x=out.x, objective=out.objective if has else None, bound=out.bound,
                            iterations=out.iterations, nodes=out.nodes, status_text=out.status_text, log=out.log,
                            trajectory=incumbents.finish(out.objective, has, out.x), extra=out.extra,
                            history=out.history)
            if self.caps.certify:
                from milopt.solvers.certify import certify_optimal

                raw = certify_optimal(form, raw, out.row_dual, recheck=lambda: self._polished(form, opts, budget))
        return undo(raw)

    # ------------------------------------------------------------ hooks (the API calls)
    def open(self, mf, opts: SolveOptions):
        """A new, empty solver model (the session every other hook receives)."""
        raise NotImplementedError

    def build(self, session, mf, opts: SolveOptions, incumbents) -> dict | None:
        """Load ``mf`` (and a warm start, callbacks) into the session; details for ``extra``."""
        raise NotImplementedError

    def set_common(self, session, mf, opts: SolveOptions) -> None:
        """Threads and the relative gap (when given)."""

    def set_option(self, session, name: str, value) -> None:
        """One native option (raise on a name or value the solver refuses)."""
        raise NotImplementedError(f"{self.name} takes no native options")

    def option_names(self, session) -> list:
        """Every native option name the solver knows (for suggestions; may be empty)."""
        return []

    def set_options(self, session, options) -> None:
        """Native options through :meth:`set_option`; a refused one raises one
        :class:`~milopt.errors.InvalidParameterError` line naming it, the solver's reason and
        the closest valid names."""
        from milopt.errors import InvalidParameterError

        for k, v in dict(options or {}).items():
            try:
                self.set_option(session, str(k), v)
            except InvalidParameterError:
                raise
            except Exception as exc:
                raise InvalidParameterError(self._option_error(session, str(k), v, exc)) from None

    def _option_error(self, session, name, value, exc) -> str:
        try:
            known = list(self.option_names(session))
        except Exception:
            known = []
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.6) if known else []
        why = one_line(exc)
        if known and name not in known:
            why = "no such option"
        hint = f"did you mean {', '.join(close)}? " if close else ""
        return f"{self.name} option {name}={value!r}: {why}; {hint}give {self.option_hint}"

    def set_time_limit(self, session, seconds: float) -> None:
        """Hand the solver ``seconds`` (what is left of the budget)."""
        raise NotImplementedError

    def optimize(self, session, mf, opts: SolveOptions, extra: dict) -> None:
        raise NotImplementedError

    def outcome(self, session, mf, extra: dict) -> Outcome:
        raise NotImplementedError

    def polish(self, mf, opts: SolveOptions, budget: TimeBudget):
        """A second solve with tolerances that reach the optimum, for :mod:`~milopt.solvers.certify`
        when the first answer's check fails: ``(Outcome, row_dual)`` or None (no such solve)."""
        return None

    def _polished(self, mf, opts, budget):
        out = self.polish(mf, opts, budget)
        if out is None or (out.termination or map_status(self.status_map, out.code)) != Termination.OPTIMAL:
            return None
        return out

    def failure(self, exc, mf, incumbents) -> RawResult:
        """The ``error`` result of a native exception (a backend translates licence refusals)."""
        return error_result(f"{self.name}: {one_line(exc)}", trajectory=incumbents.points)

    def close(self, session) -> None:
        """Free the solver model."""


def error_result(message: str, *, licence: bool = False, trajectory=None) -> RawResult:
    """A :class:`RawResult` with termination error and the one-line message."""
    extra = {"error": message}
    if licence:
        extra["licence_limit"] = True
    return RawResult(termination=Termination.ERROR, status_text=message, log=message, extra=extra,
                     trajectory=list(trajectory or []))


def one_line(exc: BaseException) -> str:
    """An exception as one line (its type and first non-empty message line)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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


@contextmanager
def quiet_output():
    """Keep stdout for milopt's own output while a solver runs: what native code writes to file
    descriptor 1 goes to stderr (:func:`quiet_stdout`), and so does what the solver's Python
    layer prints through ``sys.stdout`` (gurobipy's and xpress's logs are printed from Python,
    which a replaced ``sys.stdout`` -- a captured or redirected one -- would otherwise receive)."""
    import contextlib

    with quiet_stdout(), contextlib.redirect_stdout(sys.stderr):
        yield
