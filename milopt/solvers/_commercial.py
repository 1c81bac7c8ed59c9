r"""What the CPLEX, Gurobi and Xpress backends share (docs/backends.md).

* :func:`row_kinds` sorts two-sided rows :math:`\ell \le a^\top x \le u` into the one-sided
  kinds every API takes (equality, ``≤``, ``≥``, range, free); :func:`ranged_rows` gives them
  as one row each with a sense and a range (CPLEX, Xpress), :func:`one_sided_rows` as their
  one-sided pieces (indicator rows, Gurobi), :func:`native_rows` counts what a solver holds;
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


def ranged_rows(lb, ub, range_from: str = "lb") -> tuple:
    """Rows ``lb ≤ a'x ≤ ub`` as APIs with range rows take them, one row each:
    ``(kept, sense, rhs, rng)`` for the non-free rows ``kept``, sense ``E``/``L``/``G``/``R``.

    A range row (sense ``R``) is ``rhs ≤ a'x ≤ rhs + rng`` with ``range_from="lb"`` (CPLEX) and
    ``rhs - rng ≤ a'x ≤ rhs`` with ``range_from="ub"`` (Xpress); ``rng = ub - lb`` either way."""
    lb = np.asarray(lb, dtype=float)
    ub = np.asarray(ub, dtype=float)
    k = row_kinds(lb, ub)
    sense = np.full(lb.size, "L")
    sense[k.eq], sense[k.ge], sense[k.rng] = "E", "G", "R"
    rhs = ub.copy()
    lo = np.concatenate([k.eq, k.ge, k.rng] if range_from == "lb" else [k.eq, k.ge])
    rhs[lo] = lb[lo]
    rng = np.zeros(lb.size)
    rng[k.rng] = ub[k.rng] - lb[k.rng]
    kept = np.setdiff1d(np.arange(lb.size), k.free)
    return kept, sense[kept], rhs[kept], rng[kept]


def one_sided_rows(lb, ub) -> tuple:
    """:func:`one_sided` of every row, vectorised: ``(row, sense, rhs)`` arrays of the pieces in
    row order (a range row gives its ``L`` piece, then its ``G`` piece; free rows none)."""
    lb = np.asarray(lb, dtype=float)
    ub = np.asarray(ub, dtype=float)
    k = row_kinds(lb, ub)
    up = np.sort(np.concatenate([k.le, k.rng]))
    down = np.sort(np.concatenate([k.ge, k.rng]))
    row = np.concatenate([k.eq, up, down])
    sense = np.concatenate([np.full(k.eq.size, "E"), np.full(up.size, "L"), np.full(down.size, "G")])
    rhs = np.concatenate([lb[k.eq], ub[up], lb[down]])
    order = np.argsort(2 * row + (sense == "G"), kind="stable")
    return row[order], sense[order], rhs[order]


def native_rows(mf, *, split_ranges: bool, split_quadratic_equalities: bool = False) -> int:
    """Rows of a solver's model built from ``mf``: linear rows except free ones (a range as one
    row, or two with ``split_ranges``), quadratic rows as their one-sided pieces (an equality as
    two with ``split_quadratic_equalities``), indicator rows as their one-sided pieces."""
    k = row_kinds(mf.row_lb, mf.row_ub)
    rows = int(mf.A.shape[0] - k.free.size) + (int(k.rng.size) if split_ranges else 0)
    if split_quadratic_equalities:
        rows += sum(int(np.isfinite(r.ub)) + int(np.isfinite(r.lb)) for r in mf.qrows)
    else:
        rows += sum(len(one_sided(r.lb, r.ub)) for r in mf.qrows)
    return rows + int(one_sided_rows(mf.ind_lb, mf.ind_ub)[0].size)


def set_native(apply, options, solver: str, what: str) -> None:
    """Pass native options through ``apply(name, value)``; a name or value the solver refuses
    raises one :class:`~milopt.errors.InvalidParameterError` line naming ``solver`` and giving
    ``what`` (the kind of name expected, with an example)."""
    from milopt.errors import InvalidParameterError

    for k, v in dict(options or {}).items():
        try:
            apply(str(k), v)
        except InvalidParameterError:
            raise
        except Exception as exc:
            raise InvalidParameterError(f"{solver} option {k}={v!r}: {one_line(exc)}; give {what}") from None


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


def licence_skip(message: str | None, key: str, probe) -> tuple[bool, str]:
    """A backend's ``skip``: ``(True, message)`` when ``message`` (the instance's excess over the
    size-limited licence, None when within it) applies because that licence is the installed
    one (:func:`probe_once`); a full licence takes everything."""
    if message is not None and probe_once(key, probe):
        return True, message
    return False, ""


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


def priority_columns(mf) -> tuple[np.ndarray, np.ndarray]:
    """Integer columns with a branching priority (> 0) and their priorities."""
    if mf.priority is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pri = np.asarray(mf.priority, dtype=np.int64)
    cols = np.flatnonzero((pri > 0) & np.asarray(mf.integrality, dtype=bool))
    return cols, pri[cols]
