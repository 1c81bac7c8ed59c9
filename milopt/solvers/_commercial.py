r"""What the CPLEX, Gurobi and Xpress backends share (docs/backends.md).

* :func:`ranged_rows` gives linear rows ``lb <= a'x <= ub`` as APIs with range rows take them,
  one row each with a sense and a range (CPLEX, Xpress), from the one reading of row bounds
  (:func:`milopt.io._common.row_kinds`); :func:`native_rows` counts what a solver holds (its
  licence counts);
* :func:`integer_codes` gives each column's type letter (binary, integer, continuous);
* :func:`start_pairs` gives the known entries of a warm start (NaN means unknown);
* :func:`priority_columns` gives the columns with a branching priority;
* :func:`probe_once` caches, per process, whether the installed licence is a size-limited one
  (each backend probes with a tiny model just over the free edition's limit);
* :func:`licence_message` writes the one line that names the limit, what the instance needs
  and how to get a full licence.

:class:`CommercialBackend` is the declaration the three share (capabilities, ``about``, native
exceptions, version); the rest of a backend's skeleton (time budget, options and their errors,
status map, trajectory, result) is :class:`milopt.solvers.backend.Backend`'s.
"""
from __future__ import annotations

import functools
import importlib
import threading

import numpy as np
import scipy.sparse as sp

from milopt.io._common import row_kinds
from milopt.solvers.backend import About, Backend, Capabilities

#: what the three commercial backends take and do
COMMERCIAL = Capabilities(classes=frozenset({"LP", "MILP", "QP", "MIQP", "QCQP", "MIQCQP", "SOS", "INDICATOR"}),
                          trajectory=True, warm_start=True, threads=True)


class CommercialBackend(Backend):
    """The declaration of a commercial backend, written once: the :data:`COMMERCIAL`
    capabilities, ``about`` from ``summary`` and ``limits`` (installed with ``pip install
    milopt[NAME]``), the API's exception types named in ``error_names`` (attributes of
    :meth:`api`, looked up when first needed, so that declaring a backend imports no solver) and
    the API's ``__version__``.  A subclass declares those and makes its API calls."""

    caps = COMMERCIAL
    #: one line on what the solver takes (``milopt list``)
    summary: str = ""
    #: the limits of the free edition a PyPI wheel installs
    limits: str = ""
    #: the API's exception types, as (dotted) attribute names of :meth:`api`
    error_names: tuple = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "summary" in cls.__dict__:
            cls.about = About(description=cls.summary, install=f"pip install milopt[{cls.name}]", limits=cls.limits)

    def api(self):
        """The solver's Python module."""
        return importlib.import_module(self.module)

    @property
    def native_errors(self):
        api = self.api()
        return tuple(functools.reduce(getattr, n.split("."), api) for n in self.error_names)

    def version(self) -> str:
        return str(self.api().__version__)


def ranged_rows(lb, ub, range_from: str = "lb") -> tuple:
    """Rows ``lb <= a'x <= ub`` (none free: see :data:`~milopt.solvers.rewrites.DROP_FREE_ROWS`)
    as APIs with range rows take them: ``(sense, rhs, rng)``, sense ``E``/``L``/``G``/``R``.

    A range row (sense ``R``) is ``rhs <= a'x <= rhs + rng`` with ``range_from="lb"`` (CPLEX) and
    ``rhs - rng <= a'x <= rhs`` with ``range_from="ub"`` (Xpress); ``rng = ub - lb`` either way."""
    lb = np.asarray(lb, dtype=float)
    ub = np.asarray(ub, dtype=float)
    eq, le, ge, rng_, free = row_kinds(lb, ub)
    if free.any():
        raise ValueError("ranged_rows: free rows must be dropped first (rewrites.DROP_FREE_ROWS)")
    sense = np.full(lb.size, "L")
    sense[eq], sense[ge], sense[rng_] = "E", "G", "R"
    rhs = ub.copy()
    lo = eq | ge | (rng_ if range_from == "lb" else False)
    rhs[lo] = lb[lo]
    rng = np.where(rng_, ub - lb, 0.0)
    return sense, rhs, rng


def native_rows(mf, *, split_ranges: bool, split_quadratic_equalities: bool = False) -> int:
    """Rows of a solver's model built from ``mf``: linear rows except free ones (a range as one
    row, or two with ``split_ranges``), quadratic rows as their one-sided pieces (an equality as
    two with ``split_quadratic_equalities``), indicator rows as their one-sided pieces."""
    def pieces(lb, ub, split_eq=True, split_rng=True):
        eq, le, ge, rng, free = row_kinds(lb, ub)
        return int(le.sum() + ge.sum() + eq.sum() * (2 if split_eq else 1) + rng.sum() * (2 if split_rng else 1))

    rows = pieces(mf.row_lb, mf.row_ub, False, split_ranges)
    if mf.qrows:
        rows += pieces([r.lb for r in mf.qrows], [r.ub for r in mf.qrows], split_quadratic_equalities)
    if mf.n_indicators:
        rows += pieces(mf.ind_lb, mf.ind_ub, False)
    return rows


def integer_codes(mf) -> np.ndarray:
    """Per column ``'B'`` (binary: :meth:`~milopt.matrix.MatrixForm.binary`), ``'I'`` (other
    integer, including a 0/1 column fixed by its bounds, so that no solver's treatment of the
    binary type can widen them) or ``'C'``."""
    integ = np.asarray(mf.integrality, dtype=bool)
    return np.where(mf.binary(), "B", np.where(integ, "I", "C"))


def csr_rows(A):
    """``(ptr, idx, val)`` of a canonical CSR matrix (duplicates summed: the APIs refuse them)."""
    A = sp.csr_matrix(A, copy=True)
    A.sum_duplicates()
    A.sort_indices()
    return A.indptr, A.indices, A.data


def start_pairs(x0) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of the finite entries of a warm start (NaN: unknown)."""
    x0 = np.asarray(x0, dtype=float)
    idx = np.flatnonzero(np.isfinite(x0))
    return idx, x0[idx]


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


def priority_columns(mf) -> tuple[np.ndarray, np.ndarray]:
    """Integer columns with a branching priority (> 0) and their priorities."""
    if mf.priority is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pri = np.asarray(mf.priority, dtype=np.int64)
    cols = np.flatnonzero((pri > 0) & np.asarray(mf.integrality, dtype=bool))
    return cols, pri[cols]
