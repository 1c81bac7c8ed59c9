"""Pyomo model → :class:`milopt.matrix.MatrixForm`: the one extraction every consumer uses.

Rows: one per active, bounded constraint (a ranged constraint is one row with two bounds);
blocks that carry the matrix they were built from (a :class:`~milopt.models.matrices.RowMatrix`,
attached by ``milopt/models/_linear.add_linear_rows``) are taken from it after a row-by-row identity
check; other rows from their expressions (``generate_standard_repn(quadratic=True)``): linear
rows into ``A``, quadratic rows into ``qrows``.  The objective from its
:class:`~milopt.models.matrices.ObjectiveMatrix` (``milopt/models/_linear.add_quadratic_objective``)
or its expression.  This module is the only reader of those records
(:func:`milopt.models.matrices.matrix_of`); ``extract(model, matrices=False)`` ignores them and
reads everything through Pyomo, and gives the same form.  SOS sets from Pyomo's ``SOSConstraint``; indicator rows and branching
priorities from the model's declarations (``ModelInfo.indicators``, see
:func:`indicator_blocks`; ``ModelInfo.branch_priority``; :mod:`milopt.models.info`).  Columns: the unfixed variables that
appear anywhere, in order of first appearance; fixed variables are substituted (moved to row
bounds and the objective constant).
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.errors import InvalidParameterError
from milopt.matrix import INF, SOS, MatrixForm, QuadRow


def extract(model, *, matrices: bool = True) -> MatrixForm:
    """The matrix form of a Pyomo model (see the module docstring).

    ``matrices=False`` reads every row and the objective from their Pyomo expressions, ignoring
    the matrices a builder attached (:mod:`milopt.models.matrices`): slower, the same form (the
    reference those matrices are tested against).  Indicator rows are read from their matrix
    either way.

    Raises
    ------
    InvalidParameterError
        No or several active objectives, a nonlinear (beyond quadratic) row or objective, or a
        row left trivially infeasible by fixed variables.
    """
    from pyomo.common.gc_manager import PauseGC

    objs = list(model.component_data_objects(pe.Objective, active=True))
    if len(objs) != 1:
        raise InvalidParameterError(f"the model needs exactly one active objective, found {len(objs)}; "
                                    "deactivate the others (obj.deactivate())")
    with PauseGC():
        return _extract(model, objs[0], matrices)


def indicator_blocks(model) -> list:
    """The indicator declarations of ``model``, validated.

    ``ModelInfo.indicators = [{"rows": <deactivated IndexedConstraint built by
    add_linear_rows>, "binaries": [VarData per row], "active_value": 0 | 1}, ...]`` means: row r
    must hold when ``binaries[r] == active_value``.  The rows stay deactivated in the Pyomo
    model, so nothing treats them as hard rows."""
    from milopt.models.info import info
    from milopt.models.matrices import RowMatrix, matrix_of

    blocks = list(info(model).indicators or ())
    for blk in blocks:
        comp = blk["rows"]
        rows = matrix_of(comp)
        if not isinstance(rows, RowMatrix):
            raise InvalidParameterError(f"indicator rows {comp.name} must be built with models._linear.add_linear_rows")
        if comp.active:
            raise InvalidParameterError(f"indicator rows {comp.name} must be deactivated (they are not hard rows)")
        if len(blk["binaries"]) != len(rows.datas):
            raise InvalidParameterError(f"indicator rows {comp.name}: one binary per row expected")
    return blocks


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


def _rows_generic(cons, cols: _Columns, qrows: list):
    """Rows of arbitrary ConstraintData: linear ones as COO triplets, bounds, names; quadratic
    ones appended to ``qrows`` (as :class:`milopt.matrix.QuadRow`)."""
    from pyomo.repn import generate_standard_repn

    ri, ci, vals, lbs, ubs, names = [], [], [], [], [], []
    r = 0
    for con in cons:
        lo, body, hi = con.to_bounded_expression(evaluate_bounds=True)
        if lo is None and hi is None:
            continue
        repn = generate_standard_repn(body, quadratic=True, compute_values=True)
        if repn.nonlinear_expr is not None:
            raise InvalidParameterError(
                f"constraint {con.name} is neither linear nor quadratic; milopt's matrix form (and so its writers and "
                "backends) holds linear and quadratic rows only: reformulate the row")
        const = float(repn.constant or 0.0)
        lo_s = -INF if lo is None else float(lo) - const
        hi_s = INF if hi is None else float(hi) - const
        if repn.quadratic_vars:
            qrows.append(_quad_row(con.name, repn, cols, lo_s, hi_s))
            continue
        if not repn.linear_vars:
            if (lo is None or lo - 1e-9 <= const) and (hi is None or const <= hi + 1e-9):
                continue
            raise InvalidParameterError(f"constraint {con.name} is trivially infeasible ({lo} <= {const} <= {hi}); "
                                        "check the fixed variables and the data")
        j = cols.add_many(repn.linear_vars)
        ci.append(j)
        ri.append(np.full(j.size, r, dtype=np.int64))
        vals.append(np.asarray(repn.linear_coefs, dtype=float))
        lbs.append(lo_s)
        ubs.append(hi_s)
        names.append(con.name)
        r += 1
    if not r:
        return None
    return (np.concatenate(ri), np.concatenate(ci), np.concatenate(vals), np.array(lbs), np.array(ubs), names, r)


def _quad_row(name, repn, cols: _Columns, lo: float, hi: float) -> QuadRow:
    """A quadratic row from a standard repn: linear part summed per column, terms per pair (i <= j)."""
    lj = cols.add_many(list(repn.linear_vars)) if repn.linear_vars else np.zeros(0, dtype=np.int64)
    lv = np.asarray(repn.linear_coefs, dtype=float) if repn.linear_vars else np.zeros(0)
    if lj.size:
        u, inv = np.unique(lj, return_inverse=True)
        lv = np.bincount(inv, weights=lv, minlength=u.size)
        lj = u
    qa = cols.add_many([a for a, _ in repn.quadratic_vars])
    qb = cols.add_many([b for _, b in repn.quadratic_vars])
    qv = np.asarray(repn.quadratic_coefs, dtype=float)
    qi, qj = np.minimum(qa, qb), np.maximum(qa, qb)
    key = qi * (len(cols.vars) + 1) + qj
    u, first, inv = np.unique(key, return_index=True, return_inverse=True)
    qv = np.bincount(inv, weights=qv, minlength=u.size)
    keep = qv != 0
    return QuadRow(name=name, lin_idx=lj, lin_val=lv, qi=qi[first][keep], qj=qj[first][keep], qv=qv[keep],
                   lb=lo, ub=hi)


def _cached_rows(comp, cache, cols: _Columns):
    """Rows of a component from its :class:`~milopt.models.matrices.RowMatrix` ``cache``;
    returns (block, stale rows)."""
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
                raise InvalidParameterError(f"constraint {cache.datas[keep[r]].name} is trivially infeasible "
                                            "with the fixed variables; unfix or change them")
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
    """(c, c0, Q) of an :class:`~milopt.models.matrices.ObjectiveMatrix`, fixed variables
    substituted, in the global columns."""
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


def _indicators(model, cols: _Columns):
    """Vectorised indicator rows (binary column, active value, matrix, bounds, names) and the
    hard rows / dropped rows of indicators whose binary is fixed."""
    from milopt.models.matrices import matrix_of

    blocks = indicator_blocks(model)
    if not blocks:
        return None, []
    bins, act, mats, lbs, ubs, names, hard = [], [], [], [], [], [], []
    for blk in blocks:
        cache = matrix_of(blk["rows"])
        A = sp.csr_matrix(cache.A)
        V = cache.variables
        zs = blk["binaries"]
        a = int(blk["active_value"])
        fixed = np.fromiter((v.fixed for v in V), dtype=bool, count=len(V))
        lb, ub = np.asarray(cache.lb, dtype=float).copy(), np.asarray(cache.ub, dtype=float).copy()
        if fixed.any():
            fj = np.flatnonzero(fixed)
            shift = A[:, fj] @ np.array([float(V[j].value) for j in fj])
            lb, ub = lb - shift, ub - shift
        free = np.flatnonzero(~fixed)
        Af = A[:, free]
        zfixed = np.fromiter((z.fixed for z in zs), dtype=bool, count=len(zs))
        # a fixed binary decides the row: a hard row (binary at its active value) or nothing
        for r in np.flatnonzero(zfixed):
            if round(float(zs[r].value)) == a:
                hard.append((Af[r], lb[r], ub[r], cache.datas[r].name, free, V))
        live = np.flatnonzero(~zfixed)
        if live.size == 0:
            continue
        glob = cols.add_many([V[j] for j in free])
        coo = Af[live].tocoo()
        mats.append((coo.row + sum(m[3] for m in mats), glob[coo.col], coo.data, live.size))
        bins.append(cols.add_many([zs[r] for r in live]))
        act.append(np.full(live.size, a, dtype=np.int8))
        lbs.append(lb[live])
        ubs.append(ub[live])
        names.extend(cache.datas[r].name for r in live.tolist())
    if not mats:
        return None, hard
    rr = np.concatenate([m[0] for m in mats])
    cc = np.concatenate([m[1] for m in mats])
    vv = np.concatenate([m[2] for m in mats])
    m = int(sum(x[3] for x in mats))
    return (rr, cc, vv, m, np.concatenate(bins), np.concatenate(act), np.concatenate(lbs), np.concatenate(ubs),
            names), hard


def _extract(model, obj, matrices: bool = True) -> MatrixForm:
    """The matrix form of ``model`` with objective ``obj``.  Columns are numbered in the order
    first met: constraint rows, objective, SOS sets, indicator rows, branching priorities."""
    from milopt.models.info import info

    rec = info(model)
    cols = _Columns()
    qrows = []
    blocks = _row_blocks(model, cols, qrows, matrices)
    c, c0, Q = _objective(obj, cols, matrices)
    sos = _sos_sets(model, cols)
    # indicator rows (and the hard rows of decided indicators)
    ind, hard = _indicators(model, cols)
    for row, lo, hi, name, free, V in hard:
        g = cols.add_many([V[j] for j in free[row.indices]])
        blocks.append((np.zeros(g.size, dtype=np.int64), g, row.data.copy(), np.array([lo]), np.array([hi]), [name], 1))
    # branching priorities: [(VarData, int)], higher is branched on first
    pri_pairs = [(v, int(p)) for v, p in (rec.branch_priority or ()) if not v.fixed]
    pj = cols.add_many([v for v, _ in pri_pairs]) if pri_pairs else None
    n = len(cols.vars)
    if c.size < n:
        c = np.concatenate([c, np.zeros(n - c.size)])
    if Q is not None and Q.shape[0] < n:
        Q = sp.csc_matrix((Q.data, Q.indices, np.concatenate([Q.indptr, np.full(n - Q.shape[0], Q.indptr[-1])])),
                          shape=(n, n))
    A, lb, ub, names = _stack(blocks, n)
    V = cols.vars
    col_lb = np.array([-INF if v.lb is None else float(v.lb) for v in V])
    col_ub = np.array([INF if v.ub is None else float(v.ub) for v in V])
    integ = np.array([v.is_integer() or v.is_binary() for v in V], dtype=bool)
    priority = None
    if pri_pairs:
        priority = np.zeros(n, dtype=np.int64)
        priority[pj] = [p for _, p in pri_pairs]
    kw = {}
    if ind is not None:
        ir, ic, iv, im, ib, ia, ilb, iub, inames = ind
        kw = dict(ind_binary=ib.astype(np.int64), ind_active=ia, ind_A=sp.csr_matrix((iv, (ir, ic)), shape=(im, n)),
                  ind_lb=ilb, ind_ub=iub, ind_names=inames)
    sense = 1 if obj.sense == pe.minimize else -1
    return MatrixForm(c=c, c0=c0, Q=Q, A=A, row_lb=lb, row_ub=ub, col_lb=col_lb, col_ub=col_ub,
                      integrality=integ, col_names=[v.name for v in V], row_names=names, sense=sense,
                      variables=V, qrows=qrows, sos=sos, priority=priority,
                      comment=str(rec.formulation or ""), **kw)


def _row_blocks(model, cols, qrows, matrices: bool = True) -> list:
    """The row blocks of every active constraint: rows built from matrices are read from their
    :class:`~milopt.models.matrices.RowMatrix` (rows added after the build, or made stale,
    through Pyomo); quadratic rows go to ``qrows``."""
    from milopt.models.matrices import RowMatrix, matrix_of

    blocks = []
    for comp in model.component_objects(pe.Constraint, active=True, descend_into=True):
        cache = matrix_of(comp) if matrices else None
        if isinstance(cache, RowMatrix):
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
            blk = _rows_generic(others, cols, qrows)
            if blk is not None:
                blocks.append(blk)
    return blocks


def _objective(obj, cols, matrices: bool = True) -> tuple:
    """``(c, c0, Q)`` of the objective (``Q`` None when linear): from its
    :class:`~milopt.models.matrices.ObjectiveMatrix` when it was built from one
    (:func:`milopt.models._linear.add_quadratic_objective`), else through Pyomo."""
    from pyomo.repn import generate_standard_repn

    from milopt.models.matrices import ObjectiveMatrix, matrix_of

    qc = matrix_of(obj) if matrices else None
    if isinstance(qc, ObjectiveMatrix):
        return _cached_objective(qc, cols)
    repn = generate_standard_repn(obj.expr, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise InvalidParameterError(f"objective {obj.name} is neither linear nor quadratic; milopt's matrix form "
                                    "holds linear and quadratic objectives only")
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
    return c, c0, Q


def _sos_sets(model, cols) -> list:
    """The active SOS constraints (fixed members left out)."""
    sos = []
    for con in model.component_data_objects(pe.SOSConstraint, active=True):
        items = list(con.get_items())
        vs = [v for v, _ in items]
        if con.level not in (1, 2):
            raise InvalidParameterError(f"SOS constraint {con.name}: level {con.level} is not supported (1 or 2)")
        w = np.asarray([float(wt) for _, wt in items], dtype=float)
        keep = np.array([not v.fixed for v in vs], dtype=bool)
        idx = cols.add_many([v for v, k in zip(vs, keep) if k])
        sos.append(SOS(name=con.name, level=int(con.level), idx=idx, weights=w[keep]))
    return sos


def _stack(blocks, n) -> tuple:
    """``(A, row_lb, row_ub, row_names)`` of the row blocks stacked in order."""
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
    return A, lb, ub, names


def load_solution(mf: MatrixForm, x) -> None:
    """Set the values of the model's variables from ``x`` (the form's column order); integer
    columns are rounded."""
    x = np.asarray(x, dtype=float)
    integ = np.asarray(mf.integrality, dtype=bool)
    for v, val, isint in zip(mf.variables, x.tolist(), integ.tolist()):
        v.set_value(float(round(val)) if isint else val, skip_validation=True)


def start_vector(mf: MatrixForm) -> np.ndarray:
    """The variables' current values in the form's column order (NaN where a variable has none)."""
    return np.array([np.nan if v.value is None else float(v.value) for v in mf.variables])


def model_size(model) -> dict:
    """Variables, binaries, integers, constraints and nonzeros of a model (from its matrix form)."""
    return extract(model).size()
