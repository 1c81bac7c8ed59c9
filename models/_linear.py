"""Vectorised construction helpers shared by the formulations.

Constraint rows are assembled as scipy.sparse matrices with numpy, then handed to Pyomo one
``LinearExpression`` per row (coefficients and variables passed as lists: no term-by-term
Python expression building).
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.core.expr.numeric_expr import LinearExpression


def var_list(*components) -> list:
    """Flat list of the VarData of the given (indexed or scalar) variables, in index order."""
    out = []
    for comp in components:
        if comp.is_indexed():
            out.extend(comp[k] for k in comp.index_set())
        else:
            out.append(comp)
    return out


def add_linear_rows(model, name: str, A, variables: list, lb=None, ub=None, index=None):
    """Add the rows ``lb <= A x <= ub`` as an indexed constraint ``model.<name>[r]``.

    Parameters
    ----------
    A : scipy.sparse matrix (m x len(variables))
    lb, ub : array-like (m,) or scalar or None
        None / ±inf mean no bound.
    index : sequence, optional
        Index of the rows (default 0..m-1).
    """
    A = sp.csr_matrix(A)
    m = A.shape[0]
    lb = np.broadcast_to(np.asarray(-np.inf if lb is None else lb, dtype=float), (m,))
    ub = np.broadcast_to(np.asarray(np.inf if ub is None else ub, dtype=float), (m,))
    idx = list(range(m)) if index is None else list(index)
    indptr, indices, data = A.indptr, A.indices.tolist(), A.data.tolist()
    lbl = [None if not np.isfinite(v) else float(v) for v in lb]
    ubl = [None if not np.isfinite(v) else float(v) for v in ub]
    pos = {k: r for r, k in enumerate(idx)}

    def rule(mdl, key):
        r = pos[key]
        s, e = indptr[r], indptr[r + 1]
        expr = LinearExpression(constant=0.0, linear_coefs=data[s:e],
                                linear_vars=[variables[j] for j in indices[s:e]])
        return (lbl[r], expr, ubl[r])

    setattr(model, name, pe.Constraint(idx, rule=rule))
    return getattr(model, name)
