"""Matrix extraction from Pyomo models and export to ``.mps`` / ``.lp`` (optionally ``.gz``).

Path: :func:`extract` reads the constraint matrix (one row per constraint, ranged rows kept as
one row with two bounds; blocks built by ``models/_linear.add_linear_rows`` straight from their
cached sparse matrix after an identity check, other rows from their expressions),
``generate_standard_repn(quadratic=True)`` gives the objective (linear part, constant, and the
quadratic terms), and highspy writes the files.  Files written this
way are read identically by HiGHS and SCIP: Pyomo's own ``.lp`` writer prints squared terms
as ``x ^ 2``, which SCIP 10's LP reader rejects (docs/solvers.md).  Models with SOS or
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

from milopt.errors import InvalidDataError, InvalidParameterError

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


def extract(model) -> MatrixForm:
    """Matrix form of a linear-constrained Pyomo model with a linear or quadratic objective.

    Rows: one per active, bounded constraint (a ranged constraint is one row with both bounds).
    Columns: the unfixed variables that appear in an active constraint or in the objective, in
    order of first appearance; fixed variables are substituted (moved to the row bounds and to
    the objective constant).  Blocks of rows created by ``milopt.models._linear.add_linear_rows``
    are taken from the sparse matrix they were built from (after a row-by-row identity check,
    see that module); every other row is read from its expression.

    Raises
    ------
    InvalidParameterError
        No or several active objectives, or a constraint that is not linear.
    """
    from pyomo.common.gc_manager import PauseGC

    objs = list(model.component_data_objects(pe.Objective, active=True))
    if len(objs) != 1:
        raise InvalidParameterError(f"export: the model needs exactly one active objective, found {len(objs)}")
    obj = objs[0]
    with PauseGC():
        return _extract(model, obj)


class _Columns:
    """Global column numbering (id(VarData) -> column)."""

    def __init__(self):
        self.index = {}
        self.vars = []

    def add_many(self, variables) -> np.ndarray:
        index, out = self.index, np.empty(len(variables), dtype=np.int64)
        for k, v in enumerate(variables):
            j = index.get(id(v))
            if j is None:
                j = index[id(v)] = len(self.vars)
                self.vars.append(v)
            out[k] = j
        return out


def _linear_rows_generic(cons, cols: _Columns):
    """Rows of arbitrary (linear) ConstraintData: COO triplets, bounds, names."""
    from pyomo.repn import generate_standard_repn

    ri, ci, vals, lbs, ubs, names = [], [], [], [], [], []
    r = 0
    for con in cons:
        lo, body, hi = con.to_bounded_expression(evaluate_bounds=True)
        if lo is None and hi is None:
            continue
        repn = generate_standard_repn(body, quadratic=False, compute_values=True)
        if repn.nonlinear_expr is not None or repn.quadratic_vars:
            raise InvalidParameterError(
                f"export: constraint {con.name} is not linear; only linear constraints can be extracted "
                "(write the model with Pyomo's own writers or reformulate it)")
        const = float(repn.constant or 0.0)
        if not repn.linear_vars:
            if (lo is None or lo - 1e-9 <= const) and (hi is None or const <= hi + 1e-9):
                continue
            raise InvalidParameterError(f"export: constraint {con.name} is trivially infeasible ({lo} <= {const} <= {hi})")
        j = cols.add_many(repn.linear_vars)
        ci.append(j)
        ri.append(np.full(j.size, r, dtype=np.int64))
        vals.append(np.asarray(repn.linear_coefs, dtype=float))
        lbs.append(-INF if lo is None else float(lo) - const)
        ubs.append(INF if hi is None else float(hi) - const)
        names.append(con.name)
        r += 1
    if not r:
        return None
    return (np.concatenate(ri), np.concatenate(ci), np.concatenate(vals), np.array(lbs), np.array(ubs), names, r)


def _cached_rows(comp, cache, cols: _Columns):
    """Rows of a component built by add_linear_rows, from its cached matrix; returns (block, stale rows)."""
    ok = cache.valid_rows(comp)
    stale = [d for d, good in zip(cache.datas, ok) if not good and d.active and d.parent_component() is comp]
    keep = np.flatnonzero(ok & (np.isfinite(cache.lb) | np.isfinite(cache.ub)))
    if keep.size == 0:
        return None, stale
    A = cache.A if keep.size == cache.A.shape[0] else cache.A[keep]
    lb, ub = cache.lb[keep].copy(), cache.ub[keep].copy()
    V = cache.variables
    fixed = np.fromiter((v.fixed for v in V), dtype=bool, count=len(V))
    if fixed.any():
        fj = np.flatnonzero(fixed)
        vals = np.array([float(V[j].value) for j in fj])
        shift = A[:, fj] @ vals
        lb -= shift
        ub -= shift
    used = (A.getnnz(axis=0) > 0) & ~fixed
    if fixed.any():  # rows left without a free variable: check and drop (as the generic path does)
        left = (A[:, np.flatnonzero(used)] != 0).getnnz(axis=1)
        empty = left == 0
        if empty.any():
            bad = empty & ((lb > 1e-9) | (ub < -1e-9))
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise InvalidParameterError(f"export: constraint {cache.datas[keep[r]].name} is trivially infeasible "
                                            "with the fixed variables")
            keep, A, lb, ub = keep[~empty], A[~empty], lb[~empty], ub[~empty]
            if keep.size == 0:
                return None, stale
    uj = np.flatnonzero(used)
    glob = np.full(len(V), -1, dtype=np.int64)
    glob[uj] = cols.add_many([V[j] for j in uj])
    coo = A.tocoo()
    sel = used[coo.col]
    names = [cache.datas[r].name for r in keep.tolist()]
    return (coo.row[sel].astype(np.int64), glob[coo.col[sel]], coo.data[sel], lb, ub, names, keep.size), stale


def _cached_objective(qc, cols: _Columns):
    """(c, c0, Q) of a matrix objective, fixed variables substituted, in the global columns."""
    V = qc.variables
    c = np.asarray(qc.c, dtype=float)
    fixed = np.fromiter((v.fixed for v in V), dtype=bool, count=len(V))
    F = np.flatnonzero(~fixed)
    X = np.flatnonzero(fixed)
    c0 = float(qc.c0)
    Q = qc.Q
    if X.size:
        xv = np.array([float(V[j].value) for j in X])
        c0 += float(c[X] @ xv)
        if Q is not None:
            QX = Q[:, X] if not sp.issparse(Q) else sp.csc_matrix(Q)[:, X]
            qx = np.asarray(QX @ xv).ravel()
            c0 += 0.5 * float(xv @ qx[X])
            c = c + qx
    glob = cols.add_many([V[j] for j in F])
    n = len(cols.vars)
    cg = np.zeros(n)
    cg[glob] = c[F]
    Qg = None
    m = glob.size
    if (Q is not None and not sp.issparse(Q) and X.size == 0 and m
            and np.array_equal(glob, np.arange(glob[0], glob[0] + m))):
        # dense matrix over contiguous columns: CSC straight from the column-major data (no COO)
        k0 = int(glob[0])
        indptr = np.concatenate([np.zeros(k0 + 1, dtype=np.int64), np.arange(1, m + 1, dtype=np.int64) * m,
                                 np.full(n - k0 - m, m * m, dtype=np.int64)])
        indices = np.tile(np.arange(k0, k0 + m, dtype=np.int32), m)
        Qg = sp.csc_matrix((np.asarray(Q, dtype=float).ravel(order="F"), indices, indptr), shape=(n, n))
        return cg, c0, Qg
    if Q is not None:
        QF = Q if X.size == 0 else (Q[np.ix_(F, F)] if not sp.issparse(Q) else sp.csc_matrix(Q)[F][:, F])
        QF = sp.coo_matrix(QF)
        if QF.nnz:
            Qg = sp.csc_matrix((QF.data, (glob[QF.row], glob[QF.col])), shape=(n, n))
            Qg.sum_duplicates()
    return cg, c0, Qg


def _extract(model, obj) -> MatrixForm:
    from pyomo.repn import generate_standard_repn

    cols = _Columns()
    blocks = []
    for comp in model.component_objects(pe.Constraint, active=True, descend_into=True):
        cache = getattr(comp, "_milopt_rows", None)
        if cache is not None:
            blk, stale = _cached_rows(comp, cache, cols)
            if blk is not None:
                blocks.append(blk)
            others = stale
            if len(comp) != len(cache.datas):  # rows added after build
                seen = set(map(id, cache.datas))
                others = others + [d for d in comp.values() if d.active and id(d) not in seen]
        else:
            others = [d for d in comp.values() if d.active]
        if others:
            blk = _linear_rows_generic(others, cols)
            if blk is not None:
                blocks.append(blk)
    qc = obj.quad_cache() if hasattr(obj, "quad_cache") else None
    if qc is not None:  # an objective built from matrices (models._linear.add_quadratic_objective)
        c, c0, Q = _cached_objective(qc, cols)
        n = len(cols.vars)
    else:
        repn = generate_standard_repn(obj.expr, quadratic=True, compute_values=True)
        if repn.nonlinear_expr is not None:
            raise InvalidParameterError(f"export: objective {obj.name} is neither linear nor quadratic")
        lin_j = cols.add_many(list(repn.linear_vars))
        qpairs = list(repn.quadratic_vars or ())
        qi = cols.add_many([a for a, _ in qpairs])
        qj = cols.add_many([b for _, b in qpairs])
        n = len(cols.vars)
        c = np.zeros(n)
        np.add.at(c, lin_j, np.asarray(repn.linear_coefs, dtype=float))
        c0 = float(repn.constant or 0.0)
        Q = None
        if qpairs:
            qv = np.asarray(repn.quadratic_coefs, dtype=float)
            # term q * x_i x_j  ->  ½ xᵀQx with Q_ij = Q_ji = q (i != j), Q_ii = 2q
            Q = sp.csc_matrix((np.concatenate([qv, qv]), (np.concatenate([qi, qj]), np.concatenate([qj, qi]))),
                              shape=(n, n))
            Q.sum_duplicates()
    # stack the row blocks
    offs = np.cumsum([0] + [b[6] for b in blocks])
    m = int(offs[-1])
    if blocks:
        rr = np.concatenate([b[0] + o for b, o in zip(blocks, offs[:-1])])
        cc = np.concatenate([b[1] for b in blocks])
        vv = np.concatenate([b[2] for b in blocks])
        lb = np.concatenate([b[3] for b in blocks])
        ub = np.concatenate([b[4] for b in blocks])
        names = [nm for b in blocks for nm in b[5]]
    else:
        rr = cc = np.zeros(0, dtype=np.int64)
        vv, lb, ub, names = np.zeros(0), np.zeros(0), np.zeros(0), []
    A = sp.csr_matrix((vv, (rr, cc)), shape=(m, n))
    A.sum_duplicates()
    V = cols.vars
    col_lb = np.array([-INF if v.lb is None else float(v.lb) for v in V])
    col_ub = np.array([INF if v.ub is None else float(v.ub) for v in V])
    integ = np.array([v.is_integer() or v.is_binary() for v in V], dtype=bool)
    if integ.any() and not integ[np.argmax(integ):].all():
        # integer columns last: HiGHS's MPS writer leaves a continuous column without matrix
        # entries that follows an integer column inside the INTORG/INTEND markers (it is then
        # read back as integer)
        perm = np.argsort(integ, kind="stable")
        A = A[:, perm]
        c = c[perm]
        Q = None if Q is None else sp.csc_matrix(Q[perm][:, perm])
        col_lb, col_ub, integ = col_lb[perm], col_ub[perm], integ[perm]
        V = [V[j] for j in perm]
    sense = 1 if obj.sense == pe.minimize else -1
    return MatrixForm(c=c, c0=c0, Q=Q, A=A, row_lb=lb, row_ub=ub, col_lb=col_lb,
                      col_ub=col_ub, integrality=integ.astype(bool), col_names=[v.name for v in V], row_names=names,
                      sense=sense, variables=V)


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
        raise InvalidDataError("HiGHS refused the model (coefficients or bounds it cannot represent); "
                               "rescale the data or keep feature standardisation on")
    return h


#: HiGHS refuses matrix, cost and Hessian values of this size or more (its large_matrix_value)
HIGHS_LARGE_VALUE = 1e15


def check_magnitudes(mf: MatrixForm) -> None:
    """Refuse, with a message naming the source, a model whose coefficients a solver cannot hold
    (non-finite, or beyond HiGHS's 1e15 limit: data near 1e300 with standardisation off)."""
    parts = [("constraint matrix", sp.csr_matrix(mf.A).data), ("objective", np.asarray(mf.c))]
    if mf.Q is not None:
        parts.append(("quadratic objective", sp.csr_matrix(mf.Q).data))
    for what, vals in parts:
        if vals.size == 0:
            continue
        big = np.abs(vals)
        if not np.all(np.isfinite(big)):
            raise InvalidDataError(f"the model's {what} holds infinite or NaN coefficients (from data values too "
                                   "large to multiply); rescale the features or keep --set scale=true")
        if big.max() >= HIGHS_LARGE_VALUE:
            raise InvalidDataError(f"the model's {what} holds coefficients up to {big.max():.3g} (solvers accept "
                                   f"less than {HIGHS_LARGE_VALUE:.0e}); the data has values of that size: rescale the "
                                   "features or keep --set scale=true")


_NAME_RE = re.compile(r"[^A-Za-z0-9_.]")


def _clean(name: str) -> str:
    # MPS/LP-safe names: x[3,4] -> x(3_4)
    return _NAME_RE.sub("_", name.replace("[", "(").replace("]", ")").replace(",", "_")).replace("(", "_").replace(")", "")


def _has_special(model) -> bool:
    if any(True for _ in model.component_data_objects(pe.SOSConstraint, active=True)):
        return True
    if str(getattr(model, "_milopt_class", "") or "").endswith("QCQP"):
        return True  # quadratic rows: extract() takes linear rows only
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
    anc = path.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if anc.exists() and not anc.is_dir():
        raise InvalidParameterError(f"cannot write {path}: {anc} is a regular file, not a directory")
    if path.is_dir():
        raise InvalidParameterError(f"cannot write {path}: it is a directory; give a file name ending in .mps or .lp")
    path.parent.mkdir(parents=True, exist_ok=True)
    from pyomo.common.gc_manager import PauseGC

    # no cyclic garbage collection while the matrices are assembled: a collection would walk
    # every Pyomo expression of the model (about a second on MUSK2's 10^6 terms)
    with PauseGC(), tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / ("model" + fmt)
        if getattr(model, "_milopt_indicators", None):
            # indicator constraints exist only as milopt declarations: SCIP's writers hold them
            from milopt.solvers.driver import get_backend

            size = get_backend("scip-native").write(model, target)
        elif _has_special(model):
            size = _pyomo_write(model, target, fmt)
        else:
            mf = extract(model)
            check_magnitudes(mf)
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
    else:
        # Pyomo repeats the "SOS" section header before every set; SCIP's MPS reader accepts
        # one section holding all sets ("syntax error" otherwise)
        text = target.read_text()
        k = text.find("\nSOS\n")
        if k >= 0:
            target.write_text(text[:k + 5] + re.sub(r"^SOS\n", "", text[k + 5:], flags=re.M))
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
