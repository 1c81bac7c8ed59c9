r"""What the CPLEX, Gurobi and Xpress backends share (docs/backends.md).

* :func:`row_kinds` sorts two-sided rows :math:`\ell \le a^\top x \le u` into the one-sided
  kinds every API takes (equality, ``≤``, ``≥``, range, free);
* :class:`Incumbents` records the incumbent trajectory from a solver's callback, keeping only
  improving values in the model's sense (callbacks may also report a worse candidate);
* :class:`Deadline` spends one time limit on the whole call: building the native model counts
  against it, and the solver receives what is left;
* :func:`start_pairs` gives the known entries of a warm start (NaN means unknown);
* :func:`probe_once` caches, per process, whether the installed licence is a size-limited one
  (each backend probes with a tiny model just over the free edition's limit);
* :func:`quiet_output` keeps solver output off stdout (native and Python-level);
* :func:`licence_message` writes the one line that names the limit, what the instance needs
  and how to get a full licence.
"""
from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from milopt.solvers.backend import RawResult, quiet_stdout
from milopt.solvers.result import Termination

#: what a solver library may treat as an infinite bound (CPLEX, Xpress: 1e20; Gurobi: 1e100)
BIG = 1e20


@dataclass(frozen=True)
class RowKinds:
    """Indices of rows by kind: ``eq`` (ℓ = u), ``le`` (u only), ``ge`` (ℓ only), ``rng``
    (both finite, ℓ < u) and ``free`` (neither)."""

    eq: np.ndarray
    le: np.ndarray
    ge: np.ndarray
    rng: np.ndarray
    free: np.ndarray


def row_kinds(lb, ub) -> RowKinds:
    """Sort rows ``lb ≤ a'x ≤ ub`` by kind (vectorised)."""
    lb = np.asarray(lb, dtype=float)
    ub = np.asarray(ub, dtype=float)
    flo, fhi = np.isfinite(lb), np.isfinite(ub)
    eq = flo & fhi & (lb == ub)
    return RowKinds(eq=np.flatnonzero(eq), le=np.flatnonzero(fhi & ~flo), ge=np.flatnonzero(flo & ~fhi),
                    rng=np.flatnonzero(flo & fhi & ~eq), free=np.flatnonzero(~flo & ~fhi))


def one_sided(lb: float, ub: float) -> list:
    """The one-sided pieces ``[(sense, rhs), ...]`` of ``lb ≤ g ≤ ub`` (sense ``E``, ``L``, ``G``)
    for APIs whose quadratic or indicator rows cannot be ranges: a range becomes two rows."""
    if math.isfinite(lb) and math.isfinite(ub) and lb == ub:
        return [("E", float(lb))]
    out = []
    if math.isfinite(ub):
        out.append(("L", float(ub)))
    if math.isfinite(lb):
        out.append(("G", float(lb)))
    return out


def finite(v, big: float = BIG) -> np.ndarray:
    """``v`` with ±inf replaced by ±``big`` (a solver's own infinity)."""
    return np.clip(np.asarray(v, dtype=float), -big, big)


def csr_rows(A):
    """``(ptr, idx, val)`` of a canonical CSR matrix (duplicates summed: the APIs refuse them)."""
    A = A.tocsr(copy=True)
    A.sum_duplicates()
    A.sort_indices()
    return A.indptr, A.indices, A.data


def start_pairs(x0) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of the finite entries of a warm start (NaN: unknown)."""
    x0 = np.asarray(x0, dtype=float)
    idx = np.flatnonzero(np.isfinite(x0))
    return idx, x0[idx]


def integer_codes(mf) -> np.ndarray:
    """Per column ``'B'`` (integer with bounds exactly [0, 1]), ``'I'`` (other integer, including
    a 0/1 column fixed by its bounds, so that no solver's treatment of the binary type can
    widen them) or ``'C'``."""
    integ = np.asarray(mf.integrality, dtype=bool)
    binary = integ & (np.asarray(mf.col_lb) == 0) & (np.asarray(mf.col_ub) == 1)
    return np.where(binary, "B", np.where(integ, "I", "C"))


def is_mip(mf) -> bool:
    """Integer columns, SOS or indicator rows: the solver runs branch and bound."""
    return bool(np.any(mf.integrality)) or bool(mf.sos) or mf.n_indicators > 0


class Deadline:
    """One time limit for the whole call (``None``: no limit), started at construction."""

    def __init__(self, limit: float | None):
        self.t0 = time.perf_counter()
        self.limit = None if limit is None else float(limit)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def remaining(self, floor: float = 0.01) -> float | None:
        """Seconds left for the solver (at least ``floor``, so a solver still starts and stops at
        once with its incumbent; ``None`` without a limit)."""
        if self.limit is None:
            return None
        return max(floor, self.limit - self.elapsed())


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


@contextlib.contextmanager
def quiet_output():
    """Keep stdout for milopt's own output while a solver runs: what native code writes to file
    descriptor 1 goes to stderr (:func:`~milopt.solvers.backend.quiet_stdout`), and so does what
    the solver's Python layer prints through ``sys.stdout`` (gurobipy's and xpress's logs are
    printed from Python, which a replaced ``sys.stdout`` — a captured or redirected one — would
    otherwise receive)."""
    with quiet_stdout(), contextlib.redirect_stdout(sys.stderr):
        yield


# ----------------------------------------------------------------------- licences
_PROBES: dict = {}
_PROBE_LOCK = threading.Lock()


def probe_once(key: str, probe) -> bool:
    """``probe()`` (True: the installed licence is the size-limited one) run once per process
    and cached; a probe that fails for another reason counts as not limited (a full licence must
    never be refused before solving — the solver's own refusal is still translated)."""
    with _PROBE_LOCK:
        if key not in _PROBES:
            try:
                _PROBES[key] = bool(probe())
            except Exception:
                _PROBES[key] = False
        return _PROBES[key]


def _n(v: int) -> str:
    return f"{int(v):,}"


def licence_message(solver: str, edition: str, limit: str, need: dict, fix: str, *, quadratic: bool = False) -> str:
    """One line: ``"<solver>: the installed <edition> takes at most <limit>; this instance has
    <need>[ and is quadratic]; <fix>"``.

    ``need`` maps a count's name to its value (``{"variables": 1286, "constraints": 6637}``)."""
    have = " and ".join(f"{_n(v)} {k[:-1] if v == 1 and k.endswith('s') else k}" for k, v in need.items())
    return (f"{solver}: the installed {edition} takes at most {limit}; this instance has {have}"
            f"{' and is quadratic' if quadratic else ''}; {fix}")


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


def native_options(apply, options) -> None:
    """Pass native options through ``apply(name, value)``; a bad name or value raises the
    caller's :class:`~milopt.errors.InvalidParameterError` via ``apply``."""
    for k, v in dict(options or {}).items():
        apply(str(k), v)


def priority_columns(mf) -> tuple[np.ndarray, np.ndarray]:
    """Integer columns with a branching priority (> 0) and their priorities."""
    if mf.priority is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pri = np.asarray(mf.priority, dtype=np.int64)
    cols = np.flatnonzero((pri > 0) & np.asarray(mf.integrality, dtype=bool))
    return cols, pri[cols]
