r"""Rewrites of the matrix form that solvers (and writers) need, as small declared steps.

Each step is a function ``MatrixForm -> MatrixForm`` that states an equivalent problem in the
shape a solver's API takes (in the manner of cvxpy's reductions: a problem rewritten by small
declared steps before a solver sees it).  A backend lists the steps it needs in its
``rewrites``; :func:`rewrite` applies them in order and returns, with the rewritten form, the
function that maps the solver's result back to the original problem.  Only :data:`MINIMISE`
changes what a result means (the objective's sign); the others keep the columns, so a solution
vector needs no translation.

============================  ================================================================
step                          rewrite
============================  ================================================================
:data:`DROP_FREE_ROWS`        linear rows with no finite side are left out (they constrain nothing)
:data:`SPLIT_RANGES`          a linear row :math:`\ell < a^\top x < u` (both finite) becomes
                              :math:`a^\top x \le u` and :math:`a^\top x \ge \ell`, in place
:data:`ONE_SIDED_INDICATORS`  the same for indicator rows (no API takes a ranged one); free
                              indicator rows are left out
:data:`ONE_SIDED_QUADRATIC`   the same for quadratic rows; an equality stays one row
:data:`QUADRATIC_LE`          quadratic rows as ``≤`` rows only: a lower side becomes the negated
                              row :math:`-a^\top x - x^\top T x \le -\ell` (an equality gives two)
:func:`finite_bounds`         infinite column (and row) bounds as the solver's own infinity
:data:`MINIMISE`              a maximisation as the minimisation of the negated objective
============================  ================================================================

The row-sense reading itself (which side of ``lb <= a'x <= ub`` is finite) is
``row_senses`` of ``milopt.io._common``, shared with the ``.mps`` / ``.lp`` writers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import scipy.sparse as sp

from milopt.matrix import INF, MatrixForm, QuadRow


@dataclass(frozen=True)
class Rewrite:
    """One declared step: ``apply(mf) -> mf'`` and, when the meaning of a result changes,
    ``invert(raw) -> raw`` (a :class:`~milopt.solvers.backend.RawResult` of ``mf'`` read as one of ``mf``)."""

    name: str
    apply: Callable[[MatrixForm], MatrixForm]
    invert: Callable | None = None

    def __call__(self, mf: MatrixForm) -> MatrixForm:
        return self.apply(mf)


def rewrite(mf: MatrixForm, steps) -> tuple[MatrixForm, Callable]:
    """``(steps applied to mf in order, undo)`` where ``undo(raw)`` inverts them on a result."""
    inverses = []
    for step in steps:
        out = step.apply(mf)
        if step.invert is not None and out is not mf:
            inverses.append(step.invert)
        mf = out

    def undo(raw):
        for inv in reversed(inverses):
            raw = inv(raw)
        return raw

    return mf, undo


# ----------------------------------------------------------------- linear rows
def _pieces(lb, ub, keep_equalities: bool = True):
    """``(source row, lower, upper)`` of the one-sided pieces of rows ``lb <= g <= ub``, in row
    order: an equality stays one piece (two, ``≤`` then ``≥``, without ``keep_equalities``), a
    range gives its ``≤`` piece then its ``≥`` piece, a free row none."""
    lb = np.asarray(lb, dtype=float)
    ub = np.asarray(ub, dtype=float)
    flo, fhi = np.isfinite(lb), np.isfinite(ub)
    eq = flo & fhi & (lb == ub) & keep_equalities
    up = fhi & ~eq                       # a ≤ piece
    down = flo & ~eq                     # a ≥ piece
    rows = np.concatenate([np.flatnonzero(eq), np.flatnonzero(up), np.flatnonzero(down)])
    kind = np.concatenate([np.zeros(eq.sum(), int), np.ones(up.sum(), int), np.full(down.sum(), 2)])
    order = np.lexsort((kind, rows))
    rows, kind = rows[order], kind[order]
    lo = np.where(kind == 1, -INF, lb[rows])
    hi = np.where(kind == 2, INF, ub[rows])
    return rows, lo, hi


def _names(names, rows, lo, hi, suffix=("_up", "_lo")):
    names = list(names or [])
    if not names:
        return []
    src = np.asarray(rows)
    split = np.bincount(src, minlength=len(names)) > 1 if src.size else np.zeros(len(names), bool)
    return [str(names[r]) + ((suffix[0] if math.isinf(lo_) else suffix[1]) if split[r] else "")
            for r, lo_ in zip(src.tolist(), np.asarray(lo).tolist())]


def _drop_free_rows(mf: MatrixForm) -> MatrixForm:
    keep = np.isfinite(mf.row_lb) | np.isfinite(mf.row_ub)
    if keep.all():
        return mf
    idx = np.flatnonzero(keep)
    return replace(mf, A=sp.csr_matrix(mf.A)[idx], row_lb=np.asarray(mf.row_lb)[idx],
                   row_ub=np.asarray(mf.row_ub)[idx], row_names=[mf.row_names[i] for i in idx] if mf.row_names else [])


def _split_ranges(mf: MatrixForm) -> MatrixForm:
    lb, ub = np.asarray(mf.row_lb, float), np.asarray(mf.row_ub, float)
    if not np.any(np.isfinite(lb) & np.isfinite(ub) & (lb < ub)):
        return mf
    rows, lo, hi = _pieces(lb, ub)
    return replace(mf, A=sp.csr_matrix(mf.A)[rows], row_lb=lo, row_ub=hi,
                   row_names=_names(mf.row_names, rows, lo, hi))


def _one_sided_indicators(mf: MatrixForm) -> MatrixForm:
    if not mf.n_indicators:
        return mf
    rows, lo, hi = _pieces(mf.ind_lb, mf.ind_ub)
    return replace(mf, ind_A=sp.csr_matrix(mf.ind_A)[rows], ind_lb=lo, ind_ub=hi,
                   ind_binary=np.asarray(mf.ind_binary)[rows], ind_active=np.asarray(mf.ind_active)[rows],
                   ind_names=_names(mf.ind_names, rows, lo, hi))


def _quadratic_pieces(mf: MatrixForm, keep_equalities: bool, as_le: bool) -> MatrixForm:
    if not mf.qrows:
        return mf
    rows, lo, hi = _pieces([q.lb for q in mf.qrows], [q.ub for q in mf.qrows], keep_equalities)
    out, seen = [], set()
    for r, l, u in zip(rows.tolist(), lo.tolist(), hi.tolist()):
        q = mf.qrows[r]
        name = (q.name or f"q{r}") + ("_lo" if r in seen else "")
        seen.add(r)
        if as_le and math.isinf(u):      # l <= g  as  -g <= -l
            out.append(QuadRow(name, q.lin_idx, -np.asarray(q.lin_val, float), q.qi, q.qj,
                               -np.asarray(q.qv, float), -INF, -l))
        else:
            out.append(replace(q, name=name, lb=l, ub=u))
    return replace(mf, qrows=out)


# ----------------------------------------------------------------- bounds and sense
def finite_bounds(big: float, rows: bool = False) -> Rewrite:
    """The step that states infinite column bounds (and row sides, with ``rows``) as ``±big``,
    a solver's own infinity (CPLEX and Xpress 1e20, Gurobi 1e100, Ipopt 1e19)."""

    def apply(mf: MatrixForm) -> MatrixForm:
        clip = (lambda v: np.clip(np.asarray(v, dtype=float), -big, big))
        out = replace(mf, col_lb=clip(mf.col_lb), col_ub=clip(mf.col_ub))
        return replace(out, row_lb=clip(mf.row_lb), row_ub=clip(mf.row_ub)) if rows else out

    return Rewrite(f"finite_bounds({big:g})", apply)


def _minimise(mf: MatrixForm) -> MatrixForm:
    if mf.sense == 1:
        return mf
    return replace(mf, c=-np.asarray(mf.c, float), c0=-float(mf.c0), Q=None if mf.Q is None else -mf.Q, sense=1)


def _negate_result(raw):
    """Objective, bound, trajectory (and the dual bound of an optimality check) back in the
    maximisation's sign."""
    neg = (lambda v: None if v is None else -float(v))
    raw.objective, raw.bound = neg(raw.objective), neg(raw.bound)
    raw.trajectory = [(t, -float(v)) for t, v in raw.trajectory]
    check = raw.extra.get("optimality_check")
    while isinstance(check, dict):
        if "dual_bound" in check:
            check["dual_bound"] = neg(check["dual_bound"])
        check = check.get("first_answer") or check.get("second_answer")
    return raw


#: rows with no finite side dropped (they constrain nothing)
DROP_FREE_ROWS = Rewrite("drop_free_rows", _drop_free_rows)
#: a ranged row ``lo <= a x <= hi`` split into two one-sided rows
SPLIT_RANGES = Rewrite("split_ranges", _split_ranges)
#: indicator rows stated one-sided (an equality or range as two rows)
ONE_SIDED_INDICATORS = Rewrite("one_sided_indicators", _one_sided_indicators)
#: quadratic rows stated one-sided, equalities kept
ONE_SIDED_QUADRATIC = Rewrite("one_sided_quadratic", lambda mf: _quadratic_pieces(mf, True, False))
#: quadratic rows stated as ``<=`` rows only (an equality as two rows, a ``>=`` row negated)
QUADRATIC_LE = Rewrite("quadratic_le", lambda mf: _quadratic_pieces(mf, False, True))
#: a maximisation stated as the minimisation of the negated objective (results read back)
MINIMISE = Rewrite("minimise", _minimise, _negate_result)

__all__ = ["Rewrite", "rewrite", "finite_bounds", "DROP_FREE_ROWS", "SPLIT_RANGES", "ONE_SIDED_INDICATORS",
           "ONE_SIDED_QUADRATIC", "QUADRATIC_LE", "MINIMISE"]
