"""Matrix extraction from Pyomo models and export to ``.mps`` / ``.lp`` (optionally ``.gz``).

Path: Pyomo's linear standard-form compiler gives the constraint matrix (ranged rows merged
back into one row), ``generate_standard_repn(quadratic=True)`` gives the objective (linear
part, constant, and the quadratic terms), and highspy writes the files.  Files written this
way are read identically by HiGHS and SCIP: Pyomo's own ``.lp`` writer prints squared terms
as ``x ^ 2``, which SCIP 10's LP reader rejects (SOLVER_NOTES.md).  Models with SOS or
indicator constraints, which highspy cannot represent, fall back to Pyomo's writers with the
``^ 2`` spacing repaired.

Objective convention in the files: min cᵀx + ½xᵀQx + c0 (HiGHS's convention; MPS QUADOBJ lower
triangle).
"""
from __future__ import annotations

import gzip
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.errors import InvalidParameterError

INF = float("inf")


@dataclass
class MatrixForm:
    """min (sense) cᵀx + ½ xᵀQx + c0  s.t.  row_lb ≤ A x ≤ row_ub,  col_lb ≤ x ≤ col_ub, x_j integer for integrality[j].

    ``Q`` is symmetric (full) CSC; ``sense`` is +1 (minimise) or -1 (maximise, with c, Q, c0
    as written in the model)."""

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
    variables: list | None = None

    @property
    def shape(self):
        return self.A.shape

    def size(self) -> dict:
        binaries = int(np.sum(self.integrality & (self.col_lb >= 0) & (self.col_ub <= 1)))
        return {"variables": int(self.c.size), "binaries": binaries,
                "integers": int(self.integrality.sum()), "constraints": int(self.A.shape[0]),
                "nonzeros": int(self.A.nnz), "quadratic_nonzeros": int(0 if self.Q is None else self.Q.nnz)}


def _bound(v):
    return -INF if v is None else float(v)


def extract(model) -> MatrixForm:
    """Matrix form of a linear-constrained Pyomo model with a linear or quadratic objective."""
    from pyomo.repn import generate_standard_repn
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    objs = list(model.component_data_objects(pe.Objective, active=True))
    if len(objs) != 1:
        raise InvalidParameterError(f"export: the model needs exactly one active objective, found {len(objs)}")
    obj = objs[0]
    obj.deactivate()
    try:
        sf = LinearStandardFormCompiler().write(model, mixed_form=True)
    finally:
        obj.activate()
    cols = list(sf.columns)
    index = {id(v): k for k, v in enumerate(cols)}
    repn = generate_standard_repn(obj.expr, quadratic=True, compute_values=True)
    for v in list(repn.linear_vars) + [x for pair in (repn.quadratic_vars or ()) for x in pair]:
        if id(v) not in index:
            index[id(v)] = len(cols)
            cols.append(v)
    n = len(cols)
    c = np.zeros(n)
    for v, a in zip(repn.linear_vars, repn.linear_coefs):
        c[index[id(v)]] += a
    Q = None
    if repn.quadratic_vars:
        qi = np.fromiter((index[id(a)] for a, _ in repn.quadratic_vars), dtype=np.int64)
        qj = np.fromiter((index[id(b)] for _, b in repn.quadratic_vars), dtype=np.int64)
        qv = np.asarray(repn.quadratic_coefs, dtype=float)
        # term q * x_i x_j  ->  ½ xᵀQx with Q_ij = Q_ji = q (i != j), Q_ii = 2q
        rows = np.concatenate([qi, qj])
        colsq = np.concatenate([qj, qi])
        vals = np.concatenate([qv, qv])
        Q = sp.csc_matrix((vals, (rows, colsq)), shape=(n, n))
        Q.sum_duplicates()
    # rows: merge the two halves of ranged constraints
    A = sp.csr_matrix(sf.A)
    if A.shape[1] < n:
        A = sp.csr_matrix((A.data, A.indices, A.indptr), shape=(A.shape[0], n))
    rhs = np.asarray(sf.rhs, dtype=float)
    keys = [id(con) for con, _ in sf.rows]
    bt = np.array([b for _, b in sf.rows], dtype=int)
    first = {}
    owner = np.empty(len(keys), dtype=np.int64)
    names = []
    for r, k in enumerate(keys):
        if k not in first:
            first[k] = len(first)
            names.append(sf.rows[r][0].name)
        owner[r] = first[k]
    m = len(first)
    keep = np.zeros(len(keys), dtype=bool)
    keep[np.unique(owner, return_index=True)[1]] = True
    lb = np.full(m, -INF)
    ub = np.full(m, INF)
    # pyomo multiplies >= rows by -1 in non-mixed form only; in mixed form rows keep their sign
    ge = bt == -1
    le = bt == 1
    eq = bt == 0
    np.maximum.at(lb, owner[ge | eq], rhs[ge | eq])
    np.minimum.at(ub, owner[le | eq], rhs[le | eq])
    A = A[np.flatnonzero(keep)]
    col_lb = np.array([_bound(v.lb) for v in cols])
    col_ub = np.array([INF if v.ub is None else float(v.ub) for v in cols])
    for j, v in enumerate(cols):
        if v.fixed:
            col_lb[j] = col_ub[j] = float(v.value)
    integ = np.array([v.is_integer() or v.is_binary() for v in cols], dtype=bool)
    sense = 1 if obj.sense == pe.minimize else -1
    return MatrixForm(c=c, c0=float(repn.constant or 0.0), Q=Q, A=A, row_lb=lb, row_ub=ub, col_lb=col_lb,
                      col_ub=col_ub, integrality=integ, col_names=[v.name for v in cols], row_names=names,
                      sense=sense, variables=cols)


def to_highs(mf: MatrixForm, names: bool = True):
    """A ``highspy.Highs`` object holding the problem (quiet)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    n = mf.c.size
    lp.num_col_ = n
    lp.num_row_ = mf.A.shape[0]
    lp.col_cost_ = mf.c
    lp.col_lower_ = mf.col_lb
    lp.col_upper_ = mf.col_ub
    lp.row_lower_ = mf.row_lb
    lp.row_upper_ = mf.row_ub
    lp.offset_ = mf.c0
    lp.sense_ = highspy.ObjSense.kMinimize if mf.sense == 1 else highspy.ObjSense.kMaximize
    Acsc = sp.csc_matrix(mf.A)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = Acsc.indptr
    lp.a_matrix_.index_ = Acsc.indices
    lp.a_matrix_.value_ = Acsc.data
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = mf.A.shape[0]
    if mf.integrality.any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in mf.integrality]
    if names:
        lp.col_names_ = [_clean(s) for s in mf.col_names]
        lp.row_names_ = [_clean(s) for s in mf.row_names]
    model = highspy.HighsModel()
    model.lp_ = lp
    if mf.Q is not None and mf.Q.nnz:
        L = sp.tril(mf.Q, format="csc")
        hess = highspy.HighsHessian()
        hess.dim_ = n
        hess.format_ = highspy.HessianFormat.kTriangular
        hess.start_ = L.indptr
        hess.index_ = L.indices
        hess.value_ = L.data
        model.hessian_ = hess
    st = h.passModel(model)
    if st == highspy.HighsStatus.kError:
        raise RuntimeError("HiGHS refused the extracted model")
    return h


_NAME_RE = re.compile(r"[^A-Za-z0-9_.]")


def _clean(name: str) -> str:
    # MPS/LP-safe names: x[3,4] -> x(3_4)
    return _NAME_RE.sub("_", name.replace("[", "(").replace("]", ")").replace(",", "_")).replace("(", "_").replace(")", "")


def _has_special(model) -> bool:
    if any(True for _ in model.component_data_objects(pe.SOSConstraint, active=True)):
        return True
    return bool(getattr(model, "_milopt_features", ()))


def export(model, path, *, names: bool = True) -> dict:
    """Write ``model`` to ``path`` (.mps, .lp, optionally .gz-compressed); returns its size.

    Both formats are readable by HiGHS and SCIP.
    """
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    gz = suffixes[-1:] == [".gz"]
    fmt = suffixes[-2] if gz and len(suffixes) >= 2 else (suffixes[-1] if suffixes else "")
    if fmt not in (".mps", ".lp"):
        raise InvalidParameterError(f"export: file name must end in .mps or .lp (optionally .gz), got {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / ("model" + fmt)
        if _has_special(model):
            size = _pyomo_write(model, target, fmt)
        else:
            mf = extract(model)
            h = to_highs(mf, names=names)
            st = h.writeModel(str(target))
            import highspy

            if st == highspy.HighsStatus.kError:
                raise RuntimeError(f"HiGHS could not write {target}")
            size = mf.size()
        if gz:
            with open(target, "rb") as src, gzip.open(path, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
        else:
            shutil.move(str(target), str(path))
    size["file"] = str(path)
    size["bytes"] = os.path.getsize(path)
    return size


def _pyomo_write(model, target: Path, fmt: str) -> dict:
    model.write(str(target), io_options={"symbolic_solver_labels": True})
    if fmt == ".lp":
        text = target.read_text()
        target.write_text(re.sub(r"\s\^\s2\b", "^2", text))
    return model_size(model, exact=False)


def model_size(model, exact: bool = True) -> dict:
    """Variables, binaries, integers, constraints (rows) and nonzeros of a model."""
    if exact and not _has_special(model):
        return extract(model).size()
    vs = [v for v in model.component_data_objects(pe.Var, active=True)]
    cons = list(model.component_data_objects(pe.Constraint, active=True))
    from pyomo.repn import generate_standard_repn

    nnz = sum(len(generate_standard_repn(c.body, quadratic=False).linear_vars) for c in cons)
    return {"variables": len(vs), "binaries": sum(v.is_binary() for v in vs),
            "integers": sum(v.is_integer() or v.is_binary() for v in vs), "constraints": len(cons),
            "nonzeros": nnz, "quadratic_nonzeros": None}
