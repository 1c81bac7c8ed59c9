"""Vectorised construction helpers shared by the formulations.

Constraint rows are assembled as scipy.sparse matrices with numpy, then handed to Pyomo one
``LinearExpression`` per row (coefficients and variables passed as lists: no term-by-term
Python expression building).

Speed (see docs/build_export.md):

* Pyomo creates one small ``MonomialTermExpression`` object per nonzero; with Python's cyclic
  garbage collector running, the collections triggered by those allocations dominated the
  build (MUSK2: 3.2 s with GC, 1.0 s without).  Rows are therefore created inside
  ``pyomo.common.gc_manager.PauseGC``.
* The sparse matrix each call was built from is attached to the constraint component (a
  :class:`~milopt.models.matrices.RowMatrix`, :func:`~milopt.models.matrices.attach`).
  ``milopt.solvers.extract`` reads it instead of walking 10^6 expression terms, *after checking
  row by row* that the constraint
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

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC
from pyomo.core.expr.numeric_expr import LinearExpression

from milopt.models.matrices import ObjectiveMatrix, RowMatrix, attach, matrix_of


def var_list(*components) -> list:
    """Flat list of the VarData of the given (indexed or scalar) variables, in index order."""
    out = []
    for comp in components:
        if comp.is_indexed():
            out.extend(comp.values())
        else:
            out.append(comp)
    return out


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
        The new component, with its :class:`~milopt.models.matrices.RowMatrix` attached.
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
        attach(comp, RowMatrix(A=A, variables=tuple(variables), lb=lb, ub=ub, datas=datas,
                               exprs=tuple(d._expr for d in datas)))
    return comp


# ------------------------------------------------------------ quadratic objectives from matrices
def quadratic_expression(c, Q, variables, c0=0.0):
    """The Pyomo expression ``c0 + cᵀx + ½ xᵀQx`` (one term per upper-triangle nonzero of Q).

    This is what a modelling language builds; for a dense n × n matrix it holds n(n+1)/2 terms
    and takes minutes for n in the thousands, so :class:`MatrixObjective` builds it only when
    something reads the expression."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    c = np.asarray(c, dtype=float)
    U = sp.triu(sp.coo_matrix(Q), format="coo")
    coef = np.where(U.row == U.col, 0.5, 1.0) * U.data
    keep = coef != 0
    with PauseGC():
        nz = np.flatnonzero(c)
        lin = LinearExpression(linear_coefs=c[nz].tolist(), linear_vars=[variables[j] for j in nz.tolist()])
        quad = pe.quicksum(float(q) * variables[i] * variables[j]
                           for q, i, j in zip(coef[keep].tolist(), U.row[keep].tolist(), U.col[keep].tolist()))
        return float(c0) + lin + quad


def add_quadratic_objective(model, name: str, variables: list, c=None, Q=None, c0: float = 0.0, sense=pe.minimize):
    """Add the objective ``c0 + cᵀx + ½ xᵀQx`` held as matrices (``model.<name>``).

    The matrices are attached to the component (an
    :class:`~milopt.models.matrices.ObjectiveMatrix`) and :func:`milopt.solvers.extract` reads
    them directly, so a dense Q reaches a
    matrix-based backend (Ipopt, HiGHS export, SCIP native) in the time numpy takes to slice it;
    the Pyomo expression is only built if a Pyomo-based solver or writer reads it.
    """
    n = len(variables)
    c = np.zeros(n) if c is None else np.asarray(c, dtype=float).ravel()
    if c.size != n:
        raise ValueError(f"add_quadratic_objective({name}): c has {c.size} entries for {n} variables")
    if Q is not None:
        if Q.shape != (n, n):
            raise ValueError(f"add_quadratic_objective({name}): Q has shape {Q.shape} for {n} variables")
        if not sp.issparse(Q):
            Q = np.asarray(Q, dtype=float)
    obj = MatrixObjective(ObjectiveMatrix(c=c, Q=Q, c0=float(c0), variables=tuple(variables)), sense=sense)
    setattr(model, name, obj)
    return getattr(model, name)


from pyomo.core.base.objective import ScalarObjective  # noqa: E402


class MatrixObjective(ScalarObjective):
    """A scalar objective whose expression is built from its matrices on first use.

    Its :class:`~milopt.models.matrices.ObjectiveMatrix` stays attached while the expression is
    the one described by it (built lazily, or never); giving the objective another expression
    (``set_value`` / ``expr = ...``) detaches it, so the extractor then reads the new expression."""

    def __init__(self, matrix: ObjectiveMatrix, sense=pe.minimize):
        self.__dict__["_lazy_args"] = None
        attach(self, matrix)
        super().__init__(sense=sense)
        self.construct()
        self.set_sense(sense)

    @property
    def _args_(self):
        d = self.__dict__
        args = d.get("_lazy_args")
        if args is None or args == (None,):
            q = matrix_of(self)
            if q is None:
                return (None,) if args is None else args
            d["_lazy_args"] = args = (quadratic_expression(q.c, 0 * sp.eye(len(q.variables)) if q.Q is None else q.Q,
                                                             q.variables, q.c0),)
            d["_built_expr"] = args[0]
        return args

    @_args_.setter
    def _args_(self, value):
        d = self.__dict__
        if value != (None,) and matrix_of(self) is not None and value[0] is not d.get("_built_expr"):
            attach(self, None)  # a new expression replaces the matrices
        d["_lazy_args"] = value
