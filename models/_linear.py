"""Vectorised construction helpers shared by the formulations.

Constraint rows are assembled as scipy.sparse matrices with numpy, then handed to Pyomo one
``LinearExpression`` per row (coefficients and variables passed as lists: no term-by-term
Python expression building).

Speed (see docs/build_export.md):

* Pyomo creates one small ``MonomialTermExpression`` object per nonzero; with Python's cyclic
  garbage collector running, the collections triggered by those allocations dominated the
  build (MUSK2: 3.2 s with GC, 1.0 s without).  Rows are therefore created inside
  ``pyomo.common.gc_manager.PauseGC``.
* The sparse matrix each call was built from is remembered on the constraint component
  (:class:`RowCache`, attribute ``_milopt_rows``).  ``milopt.solvers.export.extract`` reuses it
  instead of walking 10^6 expression terms, *after checking row by row* that the constraint
  still holds the very expression object created here (``ConstraintData._expr`` identity) and
  is active.  Pyomo expressions are immutable, so a row whose expression object is unchanged
  has unchanged coefficients and bounds; rows replaced with ``set_value``, deleted or
  deactivated are detected and handled by the generic path; fixed variables are substituted
  by the extractor.

``pyomo.core.base.matrix_constraint.MatrixConstraint`` (the component Pyomo offers for this)
was tried and is unusable with Pyomo 6.10: its rows lack ``_expr`` so ``to_bounded_expression``,
the HiGHS/SCIP interfaces and the MPS writer all fail.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC
from pyomo.core.expr.numeric_expr import LinearExpression


def var_list(*components) -> list:
    """Flat list of the VarData of the given (indexed or scalar) variables, in index order."""
    out = []
    for comp in components:
        if comp.is_indexed():
            out.extend(comp.values())
        else:
            out.append(comp)
    return out


@dataclass
class RowCache:
    """The matrix a block of rows was built from (see module docstring).

    Attributes
    ----------
    A : scipy.sparse.csr_matrix, shape (m, len(variables))
    variables : tuple of VarData
        Column order of ``A``.
    lb, ub : ndarray (m,)
        Row bounds (±inf when absent).
    datas : tuple of ConstraintData
        The row objects, in the order of the rows of ``A``.
    exprs : tuple
        ``ConstraintData._expr`` of each row at build time (identity is checked).
    """

    A: sp.csr_matrix
    variables: tuple
    lb: np.ndarray
    ub: np.ndarray
    datas: tuple
    exprs: tuple

    def valid_rows(self, component) -> np.ndarray:
        """Boolean mask (m,): row r is still active and holds the expression built here."""
        m = len(self.datas)
        if not component.active:
            return np.zeros(m, dtype=bool)
        return np.fromiter(
            (d.active and d._expr is e and d.parent_component() is component for d, e in zip(self.datas, self.exprs)),
            dtype=bool, count=m)


def add_linear_rows(model, name: str, A, variables: list, lb=None, ub=None, index=None):
    """Add the rows ``lb <= A x <= ub`` as an indexed constraint ``model.<name>[r]``.

    Parameters
    ----------
    model : pyomo Block
    name : str
        Component name.
    A : scipy.sparse matrix, shape (m, len(variables))
    variables : list of VarData
        Column order of ``A``.
    lb, ub : array-like (m,) or scalar or None
        None / ±inf mean no bound.
    index : sequence, optional
        Index of the rows (default 0..m-1).

    Returns
    -------
    IndexedConstraint
        The new component; its ``_milopt_rows`` attribute holds a :class:`RowCache`.
    """
    A = sp.csr_matrix(A, dtype=float)
    A.sum_duplicates()
    m = A.shape[0]
    if A.shape[1] != len(variables):
        raise ValueError(f"add_linear_rows({name}): A has {A.shape[1]} columns but {len(variables)} variables were given")
    lb = np.array(np.broadcast_to(np.asarray(-np.inf if lb is None else lb, dtype=float), (m,)))
    ub = np.array(np.broadcast_to(np.asarray(np.inf if ub is None else ub, dtype=float), (m,)))
    idx = list(range(m)) if index is None else list(index)
    if len(idx) != m:
        raise ValueError(f"add_linear_rows({name}): {len(idx)} index keys for {m} rows")
    indptr = A.indptr.tolist()
    data = A.data.tolist()
    with PauseGC():
        allvars = [variables[j] for j in A.indices.tolist()]
        lbl = [None if not np.isfinite(v) else float(v) for v in lb]
        ubl = [None if not np.isfinite(v) else float(v) for v in ub]
        rows = {}
        for r, key in enumerate(idx):
            s, e = indptr[r], indptr[r + 1]
            rows[key] = (lbl[r], LinearExpression(linear_coefs=data[s:e], linear_vars=allvars[s:e]), ubl[r])
        comp = pe.Constraint(idx, rule=lambda mdl, key: rows[key])
        setattr(model, name, comp)
        comp = getattr(model, name)
        comp._rule = None  # the construction closure is not needed any more (and is not picklable)
        datas = tuple(comp[k] for k in idx)
        comp._milopt_rows = RowCache(A=A, variables=tuple(variables), lb=lb, ub=ub, datas=datas,
                                     exprs=tuple(d._expr for d in datas))
    return comp
