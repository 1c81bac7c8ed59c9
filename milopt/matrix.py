r"""The matrix form of an optimisation model: the one hand-off between a model and everything
that consumes it (the ``.mps`` / ``.lp`` writers of :mod:`milopt.io`, every solver backend,
solution verification).

Pyomo-free (numpy and scipy only), so a writer, a backend running in a child process or a
test can hold a model without Pyomo.  :func:`milopt.solvers.extract` builds one from a
Pyomo model; a user may also build one directly.

The problem it states:

.. math::

    \min\ (\text{or}\ \max)\quad & c^\top x + \tfrac12 x^\top Q x + c_0 \\
    \text{s.t.}\quad & \ell^A \le A x \le u^A  && \text{(linear rows)}\\
    & \ell_k \le a_k^\top x + \textstyle\sum_{(i,j,q) \in T_k} q\, x_i x_j \le u_k
      && \text{(quadratic rows, } k = 1..K)\\
    & z_r = v_r \ \Rightarrow\ \ell^I_r \le g_r^\top x \le u^I_r && \text{(indicator rows)}\\
    & \{x_j : j \in S_s\}\ \text{SOS1 or SOS2 with weights}\ \omega_s \\
    & \ell^x \le x \le u^x,\quad x_j \in \mathbb Z\ \text{for integrality}_j .

Conventions (the writers and backends translate them into each dialect):

* ``Q`` is the *full symmetric* Hessian of the objective (``½ xᵀQx``): a term ``q x_i²`` is
  ``Q_ii = 2q``, a term ``q x_i x_j`` (i ≠ j) is ``Q_ij = Q_ji = q``.
* a quadratic row holds *terms*: ``(qi, qj, qv)`` with ``qi ≤ qj`` meaning ``Σ qv · x_qi · x_qj``
  (no ½, no symmetrisation; each pair at most once).
* an indicator row ``r`` is active when column ``ind_binary[r]`` equals ``ind_active[r]`` (0 or 1).
* infinite bounds are ``±inf``; ``sense`` is +1 (minimise) or -1 (maximise).
* ``priority`` (optional) holds one integer per column, higher is branched on first; 0 = none.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["MatrixForm", "QuadRow", "SOS", "INF", "PROBLEM_CLASSES", "binary_mask"]

#: an infinite bound (the matrix form's one representation: ``±INF``; a backend that needs a
#: finite stand-in declares :func:`milopt.solvers.rewrites.finite_bounds`)
INF = float("inf")

#: problem classes, from the least to the most general
PROBLEM_CLASSES = ("LP", "QP", "QCQP", "MILP", "MIQP", "MIQCQP")


def binary_mask(integrality, lb, ub) -> np.ndarray:
    """Columns that are *binary*: integer with bounds exactly [0, 1].  An integer column fixed at
    0 or 1 is not (it is an integer column that no solver's binary type may widen).  The one
    definition behind the writers' ``BOUNDS``, the backends' column types and ``size()``."""
    return (np.asarray(integrality, dtype=bool) & (np.asarray(lb, dtype=float) == 0)
            & (np.asarray(ub, dtype=float) == 1))


@dataclass
class QuadRow:
    """``lb ≤ Σ lin_val·x[lin_idx] + Σ qv·x[qi]·x[qj] ≤ ub`` (``qi ≤ qj``; each pair once)."""

    name: str
    lin_idx: np.ndarray
    lin_val: np.ndarray
    qi: np.ndarray
    qj: np.ndarray
    qv: np.ndarray
    lb: float = -INF
    ub: float = INF


@dataclass
class SOS:
    """A special ordered set of type ``level`` (1 or 2) over columns ``idx`` with ``weights``."""

    name: str
    level: int
    idx: np.ndarray
    weights: np.ndarray


@dataclass
class MatrixForm:
    """A linear / quadratic / mixed-integer model in matrix form (see the module docstring)."""

    c: np.ndarray
    c0: float
    Q: sp.csc_matrix | None
    A: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    col_lb: np.ndarray
    col_ub: np.ndarray
    integrality: np.ndarray
    col_names: list
    row_names: list
    sense: int = 1
    #: the modelling objects behind the columns (Pyomo VarData for an extracted model), used to
    #: load a solution back; None for a hand-built form.  Not used by writers or backends.
    variables: list | None = field(default=None, repr=False)
    qrows: list = field(default_factory=list)
    sos: list = field(default_factory=list)
    # indicator rows (vectorised: one entry per row)
    ind_binary: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ind_active: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    ind_A: sp.csr_matrix | None = None
    ind_lb: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ind_ub: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ind_names: list = field(default_factory=list)
    priority: np.ndarray | None = None
    #: free-form description carried into file headers (the formulation and its parameters)
    comment: str = ""

    # ------------------------------------------------------------------ shape
    @property
    def shape(self):
        return self.A.shape

    @property
    def n_cols(self) -> int:
        return int(self.c.size)

    @property
    def n_indicators(self) -> int:
        return int(self.ind_binary.size)

    def has_quadratic_objective(self) -> bool:
        return self.Q is not None and self.Q.nnz > 0

    def features(self) -> tuple:
        """Constraint features beyond rows and bounds: ``SOS`` and ``INDICATOR``."""
        out = []
        if self.sos:
            out.append("SOS")
        if self.n_indicators:
            out.append("INDICATOR")
        return tuple(out)

    def binary(self) -> np.ndarray:
        """Mask of the binary columns (:func:`binary_mask`)."""
        return binary_mask(self.integrality, self.col_lb, self.col_ub)

    def is_mip(self) -> bool:
        """Integer columns, SOS or indicator rows: a solver runs branch and bound."""
        return bool(np.any(self.integrality)) or bool(self.sos) or self.n_indicators > 0

    def problem_class(self) -> str:
        """LP, QP, QCQP, MILP, MIQP or MIQCQP, derived from the data as it is now.

        The one computation of a model's class (the driver's refusal of a solver, ``auto``'s
        choice, the reported ``problem_class``, the export's size): quadratic rows make it QCQP,
        else a quadratic objective QP, else LP; integer columns, SOS sets or indicator rows
        (all solved by branch and bound) add MI.  A formulation's declared class is a hint known
        before building, checked against this one by the tests."""
        integer = self.is_mip()
        if self.qrows:
            base = "QCQP"
        elif self.has_quadratic_objective():
            base = "QP"
        else:
            base = "LP"
        return ("MI" + base) if integer else base

    def size(self) -> dict:
        """Counts of columns, binaries, integers, rows (all kinds) and nonzeros."""
        integ = np.asarray(self.integrality, dtype=bool)
        binaries = int(np.sum(self.binary()))
        qnz = 0 if self.Q is None else int(sp.triu(self.Q).nnz)
        return {"variables": self.n_cols, "binaries": binaries, "integers": int(integ.sum()),
                "constraints": int(self.A.shape[0]) + len(self.qrows) + self.n_indicators,
                "linear_constraints": int(self.A.shape[0]), "quadratic_constraints": len(self.qrows),
                "indicator_constraints": self.n_indicators, "sos": len(self.sos),
                "nonzeros": int(self.A.nnz) + sum(int(r.lin_idx.size) for r in self.qrows)
                + (0 if self.ind_A is None else int(self.ind_A.nnz)),
                "quadratic_nonzeros": qnz + sum(int(r.qv.size) for r in self.qrows),
                "problem_class": self.problem_class()}

    # --------------------------------------------------------------- evaluation
    def objective_value(self, x: np.ndarray) -> float:
        """Objective at ``x`` as written (before the sense is applied)."""
        x = np.asarray(x, dtype=float)
        v = float(self.c @ x) + float(self.c0)
        if self.has_quadratic_objective():
            v += 0.5 * float(x @ (self.Q @ x))
        return v

    def quad_row_values(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.array([float(r.lin_val @ x[r.lin_idx]) + float(np.sum(r.qv * x[r.qi] * x[r.qj]))
                         for r in self.qrows])

    def violation(self, x: np.ndarray) -> dict:
        """Largest absolute violation of each constraint kind at ``x`` (0 when satisfied)."""
        x = np.asarray(x, dtype=float)

        def over(v, lo, hi):
            if np.size(v) == 0:
                return 0.0
            return float(max(np.max(np.maximum(lo - v, 0.0), initial=0.0),
                             np.max(np.maximum(v - hi, 0.0), initial=0.0)))

        out = {"bounds": over(x, self.col_lb, self.col_ub), "rows": over(self.A @ x, self.row_lb, self.row_ub)}
        integ = np.asarray(self.integrality, dtype=bool)
        out["integrality"] = float(np.max(np.abs(x[integ] - np.round(x[integ])), initial=0.0))
        if self.qrows:
            out["quadratic_rows"] = over(self.quad_row_values(x), np.array([r.lb for r in self.qrows]),
                                         np.array([r.ub for r in self.qrows]))
        if self.n_indicators:
            on = np.round(x[self.ind_binary]) == self.ind_active
            g = self.ind_A @ x
            out["indicators"] = over(g[on], self.ind_lb[on], self.ind_ub[on])
        if self.sos:
            worst = 0.0
            for s in self.sos:
                nz = np.flatnonzero(np.abs(x[s.idx]) > 1e-9)
                if s.level == 1 and nz.size > 1:
                    worst = max(worst, float(np.sort(np.abs(x[s.idx]))[-2]))
                if s.level == 2 and nz.size > 2 or (nz.size == 2 and nz[1] - nz[0] != 1):
                    worst = max(worst, float(np.sort(np.abs(x[s.idx]))[-2 if s.level == 1 else -3]))
            out["sos"] = worst
        return out

    # ------------------------------------------------------------- transforms
    def without_variables(self) -> "MatrixForm":
        """A copy sharing the arrays but not the modelling objects (cheap to send elsewhere)."""
        from dataclasses import replace

        return replace(self, variables=None)
