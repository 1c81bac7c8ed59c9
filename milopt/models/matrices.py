"""The matrices a model was built from: the typed records that matrix extraction reads.

A builder that assembles a block of rows :math:`\\ell \\le A x \\le u` (or an objective
:math:`c_0 + c^\\top x + \\tfrac12 x^\\top Q x`) with numpy / scipy.sparse hands the same
matrices to Pyomo *and* attaches them to the Pyomo component, so that
:func:`milopt.solvers.extract` slices them instead of walking every expression term
(10^6 terms on MUSK2; see ``milopt/models/_linear.py``):

* :class:`RowMatrix` on an indexed ``Constraint`` (``milopt.models._linear.add_linear_rows``
  attaches it), read *after a row-by-row identity check* (:meth:`RowMatrix.valid_rows`): rows
  replaced, deleted or deactivated since the build are read through Pyomo;
* :class:`ObjectiveMatrix` on a matrix objective
  (``milopt.models._linear.add_quadratic_objective``), dropped when the objective is given
  another expression.

:func:`attach` is the one way to attach a record and :func:`matrix_of` the one way to read it;
the extraction is their only reader, and ``extract(model, matrices=False)`` reads the same model
through Pyomo alone, which ``tests/test_layers_matrices.py`` holds every built-in formulation
to: the two readings give the same matrix form.  Indicator rows (deactivated; see
:mod:`milopt.models.info`) must carry a :class:`RowMatrix`.

Importing this module imports neither Pyomo nor scipy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RowMatrix", "ObjectiveMatrix", "attach", "matrix_of"]

#: the component attribute that holds the record (read and written here only)
_KEY = "_milopt_matrix"


@dataclass(frozen=True, eq=False)
class RowMatrix:
    """The rows ``lb <= A x <= ub`` of one indexed constraint, as built.

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

    A: object
    variables: tuple
    lb: np.ndarray
    ub: np.ndarray
    datas: tuple
    exprs: tuple

    def valid_rows(self, component) -> np.ndarray:
        """Boolean mask (m,): row r is still active and holds the expression built here.

        Pyomo expressions are immutable, so a row whose expression object is the one created at
        build time has the coefficients and bounds of row r of ``A``."""
        m = len(self.datas)
        if not component.active:
            return np.zeros(m, dtype=bool)
        return np.fromiter(
            (d.active and d._expr is e and d.parent_component() is component for d, e in zip(self.datas, self.exprs)),
            dtype=bool, count=m)


@dataclass(frozen=True, eq=False)
class ObjectiveMatrix:
    """The objective ``c0 + cᵀx + ½ xᵀQx``, as built.

    Attributes
    ----------
    c : ndarray (n,)
    Q : ndarray (n, n), scipy.sparse matrix or None
        Symmetric; None for a linear objective.
    c0 : float
    variables : tuple of VarData
        Column order of ``c`` and ``Q``.
    """

    c: np.ndarray
    Q: object
    c0: float
    variables: tuple


def attach(component, record: RowMatrix | ObjectiveMatrix | None) -> None:
    """Attach ``record`` to the Pyomo ``component`` built from it (None detaches).

    A :class:`RowMatrix` belongs on the indexed ``Constraint`` whose rows it lists, an
    :class:`ObjectiveMatrix` on the objective it describes; the caller guarantees that the
    component holds exactly what the record says (as the builders of ``milopt/models/_linear.py`` do)."""
    if record is not None and not isinstance(record, (RowMatrix, ObjectiveMatrix)):
        raise TypeError(f"attach: expected a RowMatrix or an ObjectiveMatrix, got {type(record).__name__}")
    component.__dict__[_KEY] = record


def matrix_of(component) -> RowMatrix | ObjectiveMatrix | None:
    """The record attached to ``component`` (None when it was not built from matrices or its
    objective expression was replaced since)."""
    return getattr(component, "__dict__", {}).get(_KEY)
