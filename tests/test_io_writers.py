"""milopt's own .mps / .lp writers: every file of a catalogue of small models is read back by
HiGHS, SCIP, and CPLEX / Gurobi / Xpress when importable, and must reach the model's optimum
with the expected numbers of columns and rows; the bytes are deterministic; numbers round-trip.

The optimum of each model is computed by SCIP from the form in memory (no file involved) and,
for most models, also stated by hand.
"""
from __future__ import annotations

import contextlib
import gzip
import os
import sys

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.io import write, write_lp, write_mps
from milopt.io.names import clean_names
from milopt.matrix import SOS, MatrixForm, QuadRow

INF = np.inf


# --------------------------------------------------------------------------- the catalogue
def form(c, A, row_lb, row_ub, col_lb, col_ub, integrality=None, *, c0=0.0, Q=None, sense=1,
         col_names=None, row_names=None, **kw):
    n = len(c)
    A = sp.csr_matrix(np.asarray(A, float).reshape(-1, n))
    Q = None if Q is None else sp.csc_matrix(np.asarray(Q, float))
    return MatrixForm(c=np.asarray(c, float), c0=float(c0), Q=Q, A=A, row_lb=np.asarray(row_lb, float), row_ub=np.asarray(row_ub, float),
                      col_lb=np.asarray(col_lb, float), col_ub=np.asarray(col_ub, float),
                      integrality=np.zeros(n, bool) if integrality is None else np.asarray(integrality, bool),
                      col_names=col_names or [f"x[{j}]" for j in range(n)],
                      row_names=row_names or [f"c[{i}]" for i in range(A.shape[0])], sense=sense, **kw)


def qrow(name, lin, terms, lb=-INF, ub=INF):
    li = np.array([j for j, _ in lin], dtype=np.int64)
    lv = np.array([v for _, v in lin], dtype=float)
    qi = np.array([t[0] for t in terms], dtype=np.int64)
    qj = np.array([t[1] for t in terms], dtype=np.int64)
    qv = np.array([t[2] for t in terms], dtype=float)
    return QuadRow(name=name, lin_idx=li, lin_val=lv, qi=qi, qj=qj, qv=qv, lb=lb, ub=ub)


def catalogue():
    """name -> (form, optimum by hand or None)."""
    out = {}
    # LP: free, negative-lower, fixed and unbounded columns, ranged rows, constant, minimise.
    # x0 free, x1 in [-2, inf), x2 fixed 1.5, x3 in [0, 4]
    # min x0 + 2 x1 + x2 - x3 + 1 ; -1 <= x0 - x1 <= 3 ; x0 + x1 >= -3 ; x3 + x0 <= 5
    # x3 = 4 (ub), x0 <= 1; x0 + x1 >= -3, x0 - x1 <= 3 -> min x0 + 2 x1: x1 = -2 -> x0 >= -1,
    # x0 - x1 = x0 + 2 <= 3 -> x0 <= 1; x0 = -1 -> obj -1 - 4 + 1.5 - 4 + 1 = -6.5
    out["lp"] = (form([1, 2, 1, -1], [[1, -1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1]], [-1, -3, -INF], [3, INF, 5],
                      [-INF, -2, 1.5, 0], [INF, INF, 1.5, 4], c0=1.0), -6.5)
    # MILP, maximise: x2 has no matrix entry and no objective coefficient (must still be declared),
    # x1 general integer in [-3, 7], x3 binary; max x0 + 3 x1 - 2 x3 + 10
    # x0 + x1 <= 6.5 ; x1 - 5 x3 <= 2 ; x0 in [0, 3]
    # x3 = 0 -> x1 <= 2 -> x0 = 3 (x0 + x1 <= 6.5 fine): 3 + 6 + 10 = 19
    # x3 = 1 -> x1 <= 6.5 - x0, x1 <= 7: x1 = 6, x0 = 0.5: 0.5 + 18 - 2 + 10 = 26.5
    out["milp"] = (form([1, 3, 0, -2], [[1, 1, 0, 0], [0, 1, 0, -5]], [-INF, -INF], [6.5, 2],
                        [0, -3, 0, 0], [3, 7, 10, 1], [0, 1, 0, 1], c0=10.0, sense=-1), 26.5)
    # QP with an off-diagonal Hessian: min (x0^2 + x0 x1 + x1^2) - 3 x0 ; x0 + x1 = 1 (range-free)
    # Q = [[2, 1], [1, 2]]; on x1 = 1 - x0: x0^2 + x0 - x0^2 + 1 - 2 x0 + x0^2 - 3 x0 = x0^2 - 4 x0 + 1
    # -> x0 = 2, x1 = -1: 4 - 8 + 1 = -3
    out["qp"] = (form([-3, 0], [[1, 1]], [1], [1], [-INF, -INF], [INF, INF], Q=[[2, 1], [1, 2]]), -3.0)
    # MIQP: min (x0 - 0.4)^2 + (x1 - 2.6)^2 + 0.5 x0 x1 + z, x0 integer in [-5, 5], x1 in [0, 3],
    # z binary, x0 + x1 + z <= 4 -> x0 = 0, x1 = 2.6, z = 0: 0.16 (x0 = -1 gives 0.5975)
    out["miqp"] = (form([-0.8, -5.2, 1], [[1, 1, 1]], [-INF], [4], [-5, 0, 0], [5, 3, 1], [1, 0, 1],
                        Q=[[2, 0.5, 0], [0.5, 2, 0], [0, 0, 0]], c0=0.16 + 2.6 ** 2), 0.16)
    # QCQP: min t + l ; x0 + x1 >= 2.5 ; x0^2 + x1^2 <= 4 (convex row) ;
    # x0^2 + x1^2 - 2 t l <= 0 (rotated cone, bilinear term) ; t, l >= 0
    # -> x0 = x1 = 1.25, t = l = 1.25: 2.5
    cone_terms = [(0, 0, 1.0), (1, 1, 1.0), (2, 3, -2.0)]
    qcqp = form([0, 0, 1, 1], [[1, 1, 0, 0]], [2.5], [INF], [-INF, -INF, 0, 0], [INF, INF, INF, INF],
                qrows=[qrow("disk[0]", [], [(0, 0, 1.0), (1, 1, 1.0)], ub=4.0),
                       qrow("cone[0]", [], cone_terms, ub=0.0)])
    out["qcqp"] = (qcqp, 2.5)
    # MIQCQP: the same with x0 integer: x0 = 1, x1 = 1.5: t l >= 1.625 -> 2 sqrt(1.625)
    miqcqp = form([0, 0, 1, 1], [[1, 1, 0, 0]], [2.5], [INF], [-5, -INF, 0, 0], [5, INF, INF, INF], [1, 0, 0, 0],
                  qrows=[qrow("disk[0]", [], [(0, 0, 1.0), (1, 1, 1.0)], ub=4.0),
                         qrow("cone[0]", [(2, 0.0)], cone_terms, ub=0.0)])
    out["miqcqp"] = (miqcqp, 2 * np.sqrt(1.625))
    # a ranged quadratic row (written as two rows): 1 <= x0^2 + x1 <= 3, min x1 - x0, x in [0, 5]
    # x1 >= 1 - x0^2, x1 <= 3 - x0^2, x1 >= 0: x0 = sqrt(3), x1 = 0 -> -sqrt(3)
    out["qcqp_ranged"] = (form([-1, 1], np.zeros((0, 2)), [], [], [0, 0], [5, 5],
                               qrows=[qrow("band", [(1, 1.0)], [(0, 0, 1.0)], lb=1.0, ub=3.0)]), -np.sqrt(3))
    # SOS1: max x0 + 2 x1 + 3 x2 ; x0 + x1 + x2 <= 2 ; x in [0, 1] ; at most one nonzero -> 3
    out["sos1"] = (form([1, 2, 3], [[1, 1, 1]], [-INF], [2], [0, 0, 0], [1, 1, 1], sense=-1,
                        sos=[SOS("s1[0]", 1, np.array([0, 1, 2]), np.array([1.0, 2.0, 3.0]))]), 3.0)
    # SOS2: max 3 x0 + x1 + 2 x2 + 3 x3 ; sum <= 2 ; x in [0, 1] ; two adjacent nonzero -> x2 + x3 = 5
    # (6 without the set: x0 + x3)
    out["sos2"] = (form([3, 1, 2, 3], [[1, 1, 1, 1]], [-INF], [2], [0] * 4, [1] * 4, sense=-1,
                        sos=[SOS("s2", 2, np.array([0, 1, 2, 3]), np.array([1.0, 2.0, 3.0, 4.0]))]), 5.0)
    # indicators: max x0 + x1 - 0.5 z0 - 0.25 z1 ; x in [0, 4], z binary
    #   z0 = 1 -> x0 + x1 <= 3 (active value 1) ; z0 + z1 >= 1
    #   z1 = 0 -> 1 <= x0 - x1 <= 2 (active value 0, ranged) ; x0 + x1 <= 6 (row)
    # z0 = 1, z1 = 0: x0 + x1 <= 3 and x0 - x1 in [1, 2] -> 3 - 0.5 = 2.5
    # z0 = 0, z1 = 1: x0 + x1 <= 6 -> 6 - 0.25 = 5.75 ; z0 = z1 = 1: 3 - 0.75 -> best 5.75
    ind = form([1, 1, -0.5, -0.25], [[1, 1, 0, 0], [0, 0, 1, 1]], [-INF, 1], [6, INF], [0, 0, 0, 0], [4, 4, 1, 1],
               [0, 0, 1, 1], sense=-1,
               ind_binary=np.array([2, 3]), ind_active=np.array([1, 0], dtype=np.int8),
               ind_A=sp.csr_matrix(np.array([[1.0, 1, 0, 0], [1, -1, 0, 0]])),
               ind_lb=np.array([-INF, 1.0]), ind_ub=np.array([3.0, 2.0]), ind_names=["on[0]", "off[1]"])
    out["indicator"] = (ind, 5.75)
    # the same, where the cheap branch is the indicated one: costs swapped -> z1 = 0 forced cheap
    ind2 = form([1, 1, -0.5, -4], [[1, 1, 0, 0], [0, 0, 1, 1]], [-INF, 1], [6, INF], [0, 0, 0, 0], [4, 4, 1, 1],
                [0, 0, 1, 1], sense=-1,
                ind_binary=np.array([2, 3]), ind_active=np.array([1, 0], dtype=np.int8),
                ind_A=sp.csr_matrix(np.array([[1.0, 1, 0, 0], [1, -1, 0, 0]])),
                ind_lb=np.array([-INF, 1.0]), ind_ub=np.array([3.0, 2.0]), ind_names=["on[0]", "off[1]"])
    # z1 = 0 -> z0 = 1: x0 + x1 <= 3, 1 <= x0 - x1 <= 2: 3 - 0.5 = 2.5 ; z1 = 1: 6 - 4 (- 0.5) = 2
    out["indicator_active"] = (ind2, 2.5)
    # a free linear row (no finite bound): an N row in MPS that every reader discards, left out
    # of LP files; max x0 + x1, x0 + x1 <= 2, x in [0, 1] -> 2
    out["free_row"] = (form([1, 1], [[1, 1], [1, -1]], [-INF, -INF], [2, INF], [0, 0], [1, 1], sense=-1), 2.0)
    # no rows at all (an empty Subject To section): min x0 - x1, x0 in [0, 1], x1 in [0, 2] -> -2
    out["no_rows"] = (form([1, -1], np.zeros((0, 2)), [], [], [0, 0], [1, 2]), -2.0)
    # names that need cleaning and collide (columns and rows), default names, keyword names
    cn = ["w[3]", "w(3)", "3x", "e5", "a b", "inf", None, "free", "é"]
    rn = ["margin[1]", "margin(1)", "obj", "R3", None, "end"]
    n = len(cn)
    rng = np.random.default_rng(7)
    A = np.round(rng.uniform(-1, 1, (len(rn), n)), 3)
    out["names"] = (form(np.round(rng.uniform(-1, 1, n), 3), A, [-1] * len(rn), [1] * len(rn), [-1] * n, [1] * n,
                         col_names=cn, row_names=rn), None)
    return out


CATALOGUE = catalogue()


def reference_optimum(mf) -> float:
    """The optimum of ``mf`` by SCIP built in memory (objective in the form's own sense)."""
    import pyscipopt as ps

    m = ps.Model()
    m.hideOutput()
    n = mf.n_cols
    x = [m.addVar(lb=None if mf.col_lb[j] == -INF else mf.col_lb[j], ub=None if mf.col_ub[j] == INF else mf.col_ub[j],
                  vtype="I" if mf.integrality[j] else "C") for j in range(n)]
    A = sp.csr_matrix(mf.A)

    def lin(idx, val):
        return ps.quicksum(float(v) * x[int(j)] for j, v in zip(idx, val))

    def cons(expr, lo, hi):
        if hi < INF:
            m.addCons(expr <= float(hi))
        if lo > -INF:
            m.addCons(expr >= float(lo))

    for i in range(A.shape[0]):
        s = slice(A.indptr[i], A.indptr[i + 1])
        cons(lin(A.indices[s], A.data[s]), mf.row_lb[i], mf.row_ub[i])
    for r in mf.qrows:
        e = lin(r.lin_idx, r.lin_val) + ps.quicksum(float(v) * x[int(i)] * x[int(j)]
                                                    for i, j, v in zip(r.qi, r.qj, r.qv))
        cons(e, r.lb, r.ub)
    for k in range(mf.n_indicators):
        g = sp.csr_matrix(mf.ind_A)[k]
        e = lin(g.indices, g.data)
        z = x[int(mf.ind_binary[k])]
        one = bool(mf.ind_active[k] == 1)
        if mf.ind_ub[k] < INF:
            m.addConsIndicator(e <= mf.ind_ub[k], z, activeone=one)
        if mf.ind_lb[k] > -INF:
            m.addConsIndicator(-e <= -mf.ind_lb[k], z, activeone=one)
    for s in mf.sos:
        vs = [x[int(j)] for j in s.idx]
        (m.addConsSOS1 if s.level == 1 else m.addConsSOS2)(vs, weights=[float(w) for w in s.weights])
    obj = lin(range(n), mf.c)
    if mf.has_quadratic_objective():
        t = m.addVar(lb=None, ub=None)
        Q = sp.coo_matrix(mf.Q)
        qe = ps.quicksum(0.5 * float(v) * x[int(i)] * x[int(j)] for i, j, v in zip(Q.row, Q.col, Q.data))
        m.addCons(qe <= t if mf.sense == 1 else qe >= t)
        obj = obj + t
    m.setObjective(obj, "minimize" if mf.sense == 1 else "maximize")
    m.optimize()
    assert m.getStatus() == "optimal"
    return float(m.getObjVal()) + float(mf.c0)


@pytest.mark.scip
@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_reference_optimum_matches_hand_value(name):
    mf, hand = CATALOGUE[name]
    ref = reference_optimum(mf)
    if hand is not None:
        assert ref == pytest.approx(hand, abs=1e-5)


# --------------------------------------------------------------------------- readers
@contextlib.contextmanager
def quiet_fd1():
    """Silence what native code prints on file descriptor 1 (HiGHS's banner, licence lines)."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def highs_reads_gz() -> bool:
    """HiGHS reads ``.gz`` files itself from version 1.15.0 (1.14 and older refuse them)."""
    import highspy

    from milopt.solvers.highs_backend import version

    return tuple(int(x) for x in version().split(".")[:2]) >= (1, 15) if highspy else False


def read_highs(path):
    import highspy

    path = Path(path)
    if path.suffix == ".gz" and not highs_reads_gz():
        import gzip
        import shutil

        plain = path.with_name(path.name[:-3])
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        path = plain
    with quiet_fd1():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        status = h.readModel(str(path))
        assert status != highspy.HighsStatus.kError, f"HiGHS could not read {path}"
        h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    lp = h.getLp()
    return h.getInfo().objective_function_value, lp.num_col_, lp.num_row_


def read_scip(path):
    import pyscipopt as ps

    m = ps.Model()
    m.hideOutput()
    m.readProblem(str(path))
    nv, nc = m.getNVars(), m.getNConss()
    m.optimize()
    assert m.getStatus() == "optimal"
    return m.getObjVal(), nv, nc


def read_cplex(path):
    cplex = pytest.importorskip("cplex")
    with quiet_fd1():
        c = cplex.Cplex()
        for stream in (c.set_results_stream, c.set_log_stream, c.set_warning_stream):
            stream(None)
        c.read(str(path))
        c.parameters.optimalitytarget.set(3)          # a ranged quadratic row is not convex
        c.parameters.mip.tolerances.mipgap.set(1e-9)
        nv = c.variables.get_num()
        nc = c.linear_constraints.get_num() + c.quadratic_constraints.get_num() + c.indicator_constraints.get_num()
        c.solve()
    assert c.solution.get_status() in (1, 101, 102), c.solution.get_status_string()
    return c.solution.get_objective_value(), nv, nc


def read_gurobi(path):
    gp = pytest.importorskip("gurobipy")
    with quiet_fd1():
        env = gp.Env(params={"OutputFlag": 0})
        m = gp.read(str(path), env=env)
        m.Params.NonConvex = 2
        m.Params.MIPGap = 1e-9
        m.optimize()
    assert m.Status == gp.GRB.OPTIMAL
    return m.ObjVal, m.NumVars, m.NumConstrs + m.NumQConstrs + m.NumGenConstrs


def read_xpress(path):
    xp = pytest.importorskip("xpress")
    import warnings

    with quiet_fd1(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = xp.problem()
        p.setControl({"outputlog": 0, "miprelstop": 1e-9, "mipabsstop": 0.0})
        p.readProb(str(path))
        nv, nc = p.attributes.cols, p.attributes.rows
        p.optimize()
        val = p.attributes.objval
    assert p.attributes.solstatus == xp.SolStatus.OPTIMAL, p.attributes.solstatus
    return val, nv, nc


READERS = {"highs": read_highs, "scip": read_scip, "cplex": read_cplex, "gurobi": read_gurobi,
           "xpress": read_xpress}


def reads(reader, mf) -> bool:
    """Whether ``reader`` takes models of this kind (HiGHS: no SOS, indicators, quadratic rows,
    integer variables with a quadratic objective; CPLEX: no non-convex quadratic row)."""
    if reader == "cplex":   # CPLEX refuses a non-convex quadratic row (one bounded below)
        return not any(np.isfinite(r.lb) and r.qv.size for r in mf.qrows)
    if reader == "highs":
        return not (mf.sos or mf.n_indicators or mf.qrows
                    or (mf.has_quadratic_objective() and bool(np.any(mf.integrality))))
    return True


def expected_counts(reader, mf, fmt):
    """Columns and rows the reader should report for the written file (see docs/file_format.md)."""
    finite_lo = np.isfinite(mf.row_lb)
    finite_hi = np.isfinite(mf.row_ub)
    ranged = int(np.sum(finite_lo & finite_hi & (mf.row_lb < mf.row_ub)))
    q_ranged = sum(1 for r in mf.qrows if np.isfinite(r.lb) and np.isfinite(r.ub) and r.lb < r.ub)
    i_ranged = int(np.sum(np.isfinite(mf.ind_lb) & np.isfinite(mf.ind_ub) & (mf.ind_lb < mf.ind_ub)))
    cols = mf.n_cols
    free = int(np.sum(~finite_lo & ~finite_hi))       # discarded (MPS) or left out (LP)
    rows = mf.A.shape[0] - free + len(mf.qrows) + q_ranged + mf.n_indicators + i_ranged
    if fmt == "lp":
        rows += ranged
        if mf.c0 != 0 and reader != "gurobi":
            cols += 1                      # the fixed column "Constant"
    elif reader == "gurobi":
        cols += ranged                     # Gurobi adds one range column per ranged row
    if reader == "scip":
        rows += len(mf.sos)                # SOS sets are constraints in SCIP
        ind = mf.n_indicators + i_ranged   # an indicator row: a linear row, a slack column and
        cols += ind                        # the indicator constraint
        rows += ind
        if mf.has_quadratic_objective():
            cols += 1                      # SCIP moves a quadratic objective into a constraint
            rows += 1
    return cols, rows


CASES = [(name, fmt, gz) for name in sorted(CATALOGUE) for fmt in ("mps", "lp") for gz in (False, True)]


def _check(reader, name, fmt, gz, tmp_path):
    mf, hand = CATALOGUE[name]
    if not reads(reader, mf):
        pytest.skip(f"{reader} does not read this model class")
    path = tmp_path / f"m.{fmt}{'.gz' if gz else ''}"
    info = write(mf, path)
    assert info["format"] == fmt and info["compressed"] == gz and info["bytes"] == path.stat().st_size
    val, nv, nc = READERS[reader](path)       # every reader takes the .gz file as it is
    want = hand if hand is not None else reference_optimum(mf)
    assert val == pytest.approx(want, rel=1e-6, abs=1e-5)
    assert (nv, nc) == expected_counts(reader, mf, fmt)


@pytest.mark.highs
@pytest.mark.parametrize("name,fmt,gz", CASES)
def test_read_back_highs(name, fmt, gz, tmp_path):
    _check("highs", name, fmt, gz, tmp_path)


@pytest.mark.scip
@pytest.mark.parametrize("name,fmt,gz", CASES)
def test_read_back_scip(name, fmt, gz, tmp_path):
    _check("scip", name, fmt, gz, tmp_path)


@pytest.mark.parametrize("name,fmt,gz", CASES)
def test_read_back_cplex(name, fmt, gz, tmp_path):
    _check("cplex", name, fmt, gz, tmp_path)


@pytest.mark.parametrize("name,fmt,gz", CASES)
def test_read_back_gurobi(name, fmt, gz, tmp_path):
    _check("gurobi", name, fmt, gz, tmp_path)


@pytest.mark.parametrize("name,fmt,gz", CASES)
def test_read_back_xpress(name, fmt, gz, tmp_path):
    _check("xpress", name, fmt, gz, tmp_path)


# --------------------------------------------------------------------------- determinism, numbers, names
@pytest.mark.parametrize("suffix", [".mps", ".lp", ".mps.gz", ".lp.gz"])
def test_same_form_same_bytes(suffix, tmp_path):
    for name in ("names", "miqcqp", "indicator", "sos2", "milp"):
        mf = CATALOGUE[name][0]
        a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
        write(mf, a)
        write(mf, b)
        assert a.read_bytes() == b.read_bytes()
        if suffix.endswith(".gz"):
            head = a.read_bytes()[:10]
            assert head[:3] == b"\x1f\x8b\x08"
            assert head[3] == 0                      # FLG: no file name, no comment, no extra
            assert head[4:8] == b"\0\0\0\0"          # MTIME 0


def test_file_objects_and_text_streams(tmp_path):
    import io

    mf = CATALOGUE["milp"][0]
    write(mf, tmp_path / "m.mps")
    buf = io.BytesIO()
    n = write_mps(mf, buf)
    assert buf.getvalue() == (tmp_path / "m.mps").read_bytes() and n == len(buf.getvalue())
    txt = io.StringIO()
    write_lp(mf, txt)
    write(mf, tmp_path / "m.lp")
    assert txt.getvalue() == (tmp_path / "m.lp").read_text()
    gz = io.BytesIO()
    write_mps(mf, gz, compress=True)
    assert gzip.decompress(gz.getvalue()) == buf.getvalue()


def test_bad_suffix_and_bad_forms(tmp_path):
    mf = CATALOGUE["lp"][0]
    with pytest.raises(InvalidParameterError, match=r"\.mps or \.lp"):
        write(mf, tmp_path / "m.txt")
    bad = form([1.0, np.nan], [[1, 1]], [0], [1], [0, 0], [1, 1])
    with pytest.raises(InvalidDataError, match="NaN"):
        write(bad, tmp_path / "m.mps")
    crossed = form([1.0, 1.0], [[1, 1]], [0], [1], [0, 2], [1, 1])
    with pytest.raises(InvalidDataError, match="column 1"):
        write(crossed, tmp_path / "m.lp")
    from dataclasses import replace

    ind = CATALOGUE["indicator"][0]
    with pytest.raises(InvalidDataError, match="not a binary column"):
        write(replace(ind, ind_binary=np.array([0, 3])), tmp_path / "m.mps")
    with pytest.raises(InvalidParameterError, match="does not exist"):
        write(CATALOGUE["lp"][0], tmp_path / "no" / "m.mps")
    assert not list(tmp_path.iterdir())              # nothing left behind


def _random_lp(rng, n=30, m=20):
    """A feasible random LP whose numbers span many magnitudes (and need all 17 digits); within
    [1e-8, 1e13], where HiGHS keeps matrix entries and finite bounds as they are."""
    def draw(size):
        return rng.choice([-1, 1], size) * 10.0 ** rng.uniform(-8, 12, size) * rng.uniform(1, 10, size)

    A = sp.random(m, n, density=0.3, random_state=np.random.RandomState(int(rng.integers(1 << 30))), format="csr")
    A.data = draw(A.nnz)
    x0 = rng.uniform(0, 1, n)
    act = A @ x0
    lb, ub = act - np.abs(draw(m)), act + np.abs(draw(m))
    return form(draw(n), A.toarray(), lb, ub, np.zeros(n), np.full(n, 1.0) + np.abs(draw(n)), c0=float(draw(1)[0]))


@pytest.mark.highs
@pytest.mark.parametrize("fmt", ["mps", "lp"])
def test_highs_reads_every_number_exactly(fmt, tmp_path):
    import highspy

    rng = np.random.default_rng(11)
    mf = _random_lp(rng)
    path = tmp_path / f"r.{fmt}"
    write(mf, path)
    with quiet_fd1():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.readModel(str(path))
    lp = h.getLp()
    n = mf.n_cols
    assert np.array_equal(np.asarray(lp.col_cost_)[:n], mf.c)
    assert np.array_equal(np.asarray(lp.col_upper_)[:n], mf.col_ub)
    A = sp.csc_matrix((np.asarray(lp.a_matrix_.value_), np.asarray(lp.a_matrix_.index_),
                       np.asarray(lp.a_matrix_.start_)), shape=(lp.num_row_, lp.num_col_))
    if fmt == "mps":
        assert lp.offset_ == mf.c0
        assert np.array_equal(np.asarray(lp.row_lower_), mf.row_lb)
        # a ranged row is rhs and range: the far bound is exact when some double R gives
        # lo + R == up (or up - R == lo), else within a rounding (1 row of 20 here)
        up = np.asarray(lp.row_upper_)
        assert np.sum(up != mf.row_ub) <= 1
        assert np.all(np.abs(up - mf.row_ub) <= 2 * np.spacing(np.abs(mf.row_ub)))
        assert (A[:, :n] != sp.csc_matrix(mf.A)).nnz == 0
    else:   # ranged rows are split: rows 2k and 2k+1 of the file are row k's two sides
        assert np.array_equal(np.asarray(lp.row_lower_)[0::2], mf.row_lb)
        assert np.array_equal(np.asarray(lp.row_upper_)[1::2], mf.row_ub)
        assert (A[0::2, :n] != sp.csc_matrix(mf.A)).nnz == 0


hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40))
def test_mps_values_round_trip(values):
    """Every coefficient written to the MPS COLUMNS section reads back as the same double."""
    import io

    v = np.asarray(values, float)
    n = v.size
    mf = form(v, [v], [-INF], [INF], np.zeros(n), np.full(n, INF))
    buf = io.BytesIO()
    write_mps(mf, buf)
    text = buf.getvalue().decode("ascii")
    body = text.split("COLUMNS\n")[1].split("RHS\n")[0].splitlines()
    got = {}
    for line in body:
        col, row, val = line.split()
        got.setdefault(row, []).append(float(val))
    want = [x for x in v.tolist() if x != 0] or []
    assert got.get("c(0)", []) == want
    assert [x for x in got.get("obj", []) if x != 0] == want


def test_clean_names_rule():
    raw = ["w[3]", "w(3)", "3x", "e5", "E+1", "a b", "inf", None, "", "x:y", "free", "ok_1", "ok", "ok",
           ".5", "x" * 300, "é"]
    out = clean_names(raw, "C")
    assert out[:4] == ["w(3)", "w(3)_1", "_3x", "_e5"]
    assert out[4] == "E_1" and out[5] == "a_b" and out[6] == "_inf"
    assert out[7] == "C7" and out[8] == "C8" and out[9] == "x_y" and out[10] == "_free"
    assert out[11:14] == ["ok_1", "ok", "ok_2"]      # ok_1 is taken by a name of its own
    assert out[14] == "_.5" and len(out[15]) == 255 and out[16] == "_"
    assert len(set(out)) == len(out)
    import re

    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_(),.]*", s) for s in out)
    assert clean_names(raw, "C") == out              # deterministic
    assert clean_names(["obj", "x"], "R", reserved=("obj",)) == ["_obj", "x"]
    assert clean_names(["r", "r"], "R", reserved=("r_1",)) == ["r", "r_2"]


@pytest.mark.scip
def test_scip_sees_the_clean_names(tmp_path):
    import pyscipopt as ps

    mf = CATALOGUE["names"][0]
    want = clean_names(mf.col_names, "C")
    for fmt in ("mps", "lp"):
        write(mf, tmp_path / f"n.{fmt}")
        m = ps.Model()
        m.hideOutput()
        m.readProblem(str(tmp_path / f"n.{fmt}"))
        assert [v.name for v in m.getVars()] == want


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("fmt", ["mps", "lp"])
def test_musk2_bigm_reads_back_exactly(fmt, tmp_path):
    """The MUSK2 big-M MIQP (1.1M nonzeros): HiGHS reads back the same matrix, costs, bounds,
    integrality and Hessian."""
    import highspy

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    try:
        from writer_speed import bigm_form
    finally:
        sys.path.pop(0)
    mf = bigm_form("musk2")
    path = tmp_path / f"musk2.{fmt}"
    write(mf, path)
    with quiet_fd1():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        assert h.readModel(str(path)) != highspy.HighsStatus.kError
    lp = h.getLp()
    assert (lp.num_col_, lp.num_row_) == (mf.n_cols, mf.A.shape[0])
    assert np.array_equal(lp.col_cost_, mf.c) and np.array_equal(lp.col_lower_, mf.col_lb)
    assert np.array_equal(lp.col_upper_, mf.col_ub)
    assert np.array_equal(lp.row_lower_, mf.row_lb) and np.array_equal(lp.row_upper_, mf.row_ub)
    assert np.array_equal(np.asarray(lp.integrality_) == highspy.HighsVarType.kInteger, mf.integrality)
    A = sp.csc_matrix((np.asarray(lp.a_matrix_.value_), np.asarray(lp.a_matrix_.index_),
                       np.asarray(lp.a_matrix_.start_)), shape=mf.A.shape)
    assert (A != sp.csc_matrix(mf.A)).nnz == 0
    assert list(lp.col_names_) == clean_names(mf.col_names, "C")
    hs = h.getModel().hessian_
    H = sp.csc_matrix((np.asarray(hs.value_), np.asarray(hs.index_), np.asarray(hs.start_)), shape=(hs.dim_, hs.dim_))
    assert (sp.tril(H) != sp.tril(mf.Q)).nnz == 0


def test_integer_markers_same_bytes_either_way(monkeypatch):
    """COLUMNS is assembled run by run (few runs of integer columns) or in one piece and cut at
    the runs (many): both give the same bytes."""
    import io

    import milopt.io.mps as mps_mod

    rng = np.random.default_rng(3)
    n = 60
    integ = rng.random(n) < 0.5
    A = np.round(rng.uniform(-1, 1, (8, n)), 2)
    A[:, 5] = 0.0                                          # a column with no matrix entry
    mf = form(np.round(rng.uniform(-1, 1, n), 2), A, [-1] * 8, [1] * 8, [0] * n, [1] * n, integ)
    few, many = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(mps_mod, "_MAX_RUNS", 10 ** 6)
    write_mps(mf, few)
    monkeypatch.setattr(mps_mod, "_MAX_RUNS", 0)
    write_mps(mf, many)
    assert few.getvalue() == many.getvalue()
    text = few.getvalue().decode()
    runs = int(np.sum(np.diff(np.r_[0, integ.astype(int)]) == 1))
    assert text.count("'INTORG'") == text.count("'INTEND'") == runs
