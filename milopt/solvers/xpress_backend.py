r"""FICO Xpress backend: the matrix form loaded into Xpress with one ``loadMIQCQP`` call.

No file round trip and no Pyomo solver interface: :class:`milopt.matrix.MatrixForm` becomes the
column-wise arrays of Xpress's own loader (docs/backends.md).

* rows, in this order: the linear rows (types ``E``, ``L``, ``G`` and ``R`` for a two-sided
  row, whose right-hand side is the upper bound and range :math:`u-\ell`; free rows are left
  out), then the quadratic rows, then the indicator rows;
* objective: Xpress states :math:`c^\top x + \tfrac12 x^\top Q x` from the upper triangle of
  :math:`Q` — the matrix form's Hessian as it is; the constant through ``chgObj([-1], [-c₀])``
  (Xpress keeps the objective's constant as the negated right-hand side of the objective row,
  measured: ``chgObj([-1], [3])`` lowers the objective by 3);
* quadratic rows: Xpress takes them as type ``L`` only, :math:`a^\top x + x^\top T x \le u`
  with the upper triangle of a *symmetric* :math:`T` — a term :math:`q\,x_i^2` is
  :math:`T_{ii} = q`, a term :math:`q\,x_i x_j` (:math:`i < j`) is :math:`T_{ij} = q/2`
  (measured: the coefficient 0.5 on :math:`(x_0, x_1)` bounds :math:`x_0 x_1`); a lower bound
  becomes the negated row :math:`-a^\top x - x^\top T x \le -\ell`.  Non-convex rows and
  objectives go to Xpress's global solver;
* indicator rows: ordinary rows marked with ``setIndicators`` (complement ``1`` when active at
  :math:`z = 1`, ``-1`` at :math:`z = 0`; a range as two rows);
* SOS: the loader's set arrays with the weights as reference values; branching priorities:
  ``loadDirs`` — Xpress branches first on the *smallest* priority (0–1000, 500 by default),
  so the matrix form's priorities (higher first) are ranked, the highest getting 0;
* warm start: ``addMipSol`` with the known entries of ``opts.x0``;
* incumbent trajectory: ``addIntsolCallback`` with the attribute ``mipobjval`` (constant
  included);
* limits: ``timelimit`` (what is left of ``opts.time_limit`` after the load), ``miprelstop``,
  ``threads``; native controls by name (``{"presolve": 0}``); ``outputlog = 0`` unless verbose,
  the log then goes to stderr.

Licence: the ``xpress`` wheel carries the Community licence.  Measured with xpress 9.9.1: rows
plus columns at most 5,000 for a linear model (5,001 refused), at most 200 once the objective or
a row is quadratic; past them ``optimize`` raises "?120 Error: Problem has too many rows and
columns".  Whether the installed licence is the Community one is probed once per process (a
201-column QP); only then does ``skip`` refuse a larger instance.
"""
from __future__ import annotations

import signal
import threading
import warnings

import numpy as np
import scipy.sparse as sp

from milopt.solvers import rewrites as rw
from milopt.solvers._commercial import (CommercialBackend, integer_codes, licence_message, licence_skip, native_rows, priority_columns,
                                        ranged_rows, start_pairs)
from milopt.solvers.backend import Outcome, error_result, one_line, quiet_output
from milopt.solvers.result import Termination as T

#: Xpress outcome → Termination.  A finished solve is keyed by ("completed", SOLSTATUS:
#: 0 not found, 1 optimal, 2 feasible, 3 infeasible, 4 unbounded); a stopped one by
#: ("stopped", STOPSTATUS); a failed one by ("failed", STOPSTATUS).
STATUS_MAP = {
    ("completed", 0): T.UNKNOWN,             # SOLSTATUS_NOTFOUND
    ("completed", 1): T.OPTIMAL,             # SOLSTATUS_OPTIMAL
    ("completed", 2): T.UNKNOWN,             # SOLSTATUS_FEASIBLE (a local solve)
    ("completed", 3): T.INFEASIBLE,          # SOLSTATUS_INFEASIBLE
    ("completed", 4): T.UNBOUNDED,           # SOLSTATUS_UNBOUNDED
    ("stopped", 0): T.UNKNOWN,               # STOP_NONE
    ("stopped", 1): T.TIME_LIMIT,            # STOP_TIMELIMIT
    ("stopped", 2): T.INTERRUPTED,           # STOP_CTRLC
    ("stopped", 3): T.ITERATION_LIMIT,       # STOP_NODELIMIT
    ("stopped", 4): T.ITERATION_LIMIT,       # STOP_ITERLIMIT
    ("stopped", 5): T.OPTIMAL,               # STOP_MIPGAP (within miprelstop)
    ("stopped", 6): T.ITERATION_LIMIT,       # STOP_SOLLIMIT
    ("stopped", 7): T.ERROR,                 # STOP_GENERICERROR
    ("stopped", 8): T.ERROR,                 # STOP_MEMORYERROR
    ("stopped", 9): T.INTERRUPTED,           # STOP_USER
    ("stopped", 10): T.OPTIMAL,              # STOP_SOLVECOMPLETE
    ("stopped", 11): T.ERROR,                # STOP_LICENSELOST
    ("stopped", 13): T.ERROR,                # STOP_NUMERICALERROR
    ("stopped", 14): T.ITERATION_LIMIT,      # STOP_WORKLIMIT
    ("stopped", 16): T.ITERATION_LIMIT,      # STOP_MIPSTAGE
}
_SOLVESTATUS = {0: "unstarted", 1: "stopped", 2: "failed", 3: "completed"}

#: Community licence (measured with xpress 9.9.1)
COMMUNITY_ROWS_COLS = 5000
COMMUNITY_QUADRATIC_ROWS_COLS = 200
#: Xpress's infinite bound (xpress.infinity)
XPRESS_INF = 1e20
FULL_LICENCE = ("set XPAUTH_PATH to a full xpauth.xpr (or call xpress.init with its path), "
                "or use another solver (--solver scip)")

_XP = None


def _xpress():
    """The ``xpress`` module, imported without its Community-licence warning (docs/backends.md
    states the licence and its limits)."""
    global _XP
    if _XP is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import xpress

        _XP = xpress
    return _XP


def _problem():
    """A new ``xpress.problem`` (the first one in a process checks the licence and warns about the
    Community licence: silenced, as at import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _xpress().problem()


def native_size(mf) -> tuple[int, int, bool]:
    """Columns, rows (free linear rows left out; quadratic and indicator rows split into their
    one-sided pieces) and whether the model is quadratic, as loaded into Xpress."""
    rows = native_rows(mf, split_ranges=False, split_quadratic_equalities=True)
    return int(mf.n_cols), rows, bool(mf.qrows) or mf.has_quadratic_objective()


def _probe_community() -> bool:
    """True when a 201-column QP is refused with the Community licence's error 120."""
    with quiet_output():
        p = _problem()
        p.controls.outputlog = 0
        n = COMMUNITY_QUADRATIC_ROWS_COLS + 1
        p.loadMIQCQP("probe", objcoef=[0.0] * n, lb=[0.0] * n, ub=[1.0] * n, objqcol1=list(range(n)),
                     objqcol2=list(range(n)), objqcoef=[1.0] * n)
        try:
            p.optimize()
        except Exception as exc:
            return _is_size_error(exc)
        return False


def _is_size_error(exc) -> bool:
    text = str(exc)
    return "?120" in text or "too many rows and columns" in text


def _over(mf) -> str | None:
    cols, rows, quad = native_size(mf)
    cap = COMMUNITY_QUADRATIC_ROWS_COLS if quad else COMMUNITY_ROWS_COLS
    if cols + rows <= cap:
        return None
    limit = (f"{COMMUNITY_ROWS_COLS:,} rows plus columns ({COMMUNITY_QUADRATIC_ROWS_COLS} when quadratic)")
    return licence_message("xpress", "Xpress Community licence", limit,
                           {"rows plus columns": cols + rows}, FULL_LICENCE, quadratic=quad)


def _load(p, mf) -> None:
    """One ``loadMIQCQP`` call with every row, then the sense, constant and indicator marks.
    Free rows are gone and quadratic rows are ``≤`` rows (the backend's rewrites)."""
    xp = _xpress()
    n = mf.n_cols
    rtype, rhs, rng = ranged_rows(mf.row_lb, mf.row_ub, range_from="ub")  # R: rhs - rng <= a'x <= rhs
    blocks = [sp.csr_matrix(mf.A)]
    types, rhss, rngs = [rtype], [rhs], [rng]
    row = mf.A.shape[0]
    # quadratic rows (type L): the upper triangle of the symmetric T (a cross term halved)
    qrowind, nq, q1, q2, qc = [], [], [], [], []
    for q in mf.qrows:
        qi, qj = np.asarray(q.qi, dtype=np.int64), np.asarray(q.qj, dtype=np.int64)
        a, b = np.minimum(qi, qj), np.maximum(qi, qj)
        blocks.append(sp.csr_matrix((np.asarray(q.lin_val, dtype=float),
                                     (np.zeros(len(q.lin_idx), dtype=np.int64), np.asarray(q.lin_idx, dtype=np.int64))),
                                    shape=(1, n)))
        types.append(np.array(["L"]))
        rhss.append(np.array([float(q.ub)]))
        rngs.append(np.zeros(1))
        qrowind.append(row)
        nq.append(int(a.size))
        q1.append(a)
        q2.append(b)
        qc.append(np.where(a == b, 1.0, 0.5) * np.asarray(q.qv, dtype=float))
        row += 1
    # indicator rows (one-sided): ordinary rows, marked after the load
    ind_rows = None
    if mf.n_indicators:
        sen, rhs_i, _ = ranged_rows(mf.ind_lb, mf.ind_ub)
        blocks.append(sp.csr_matrix(mf.ind_A))
        types.append(sen)
        rhss.append(rhs_i)
        rngs.append(np.zeros(sen.size))
        ind_rows = np.arange(row, row + sen.size)
        row += sen.size

    M = sp.vstack(blocks, format="csc") if row else sp.csc_matrix((0, n))
    M.sum_duplicates()
    M.sort_indices()
    kw = {}
    if row:
        kw.update(rowtype=np.concatenate(types).tolist(), rhs=np.concatenate(rhss).tolist(),
                  rng=np.concatenate(rngs).tolist(), start=M.indptr.tolist(), rowind=M.indices.tolist(),
                  rowcoef=M.data.tolist())
    if mf.has_quadratic_objective():
        U = sp.triu(sp.coo_matrix(mf.Q)).tocoo()
        U.sum_duplicates()
        kw.update(objqcol1=U.row.tolist(), objqcol2=U.col.tolist(), objqcoef=U.data.tolist())
    if qrowind:
        kw.update(qrowind=qrowind, nrowqcoefs=nq, rowqcol1=np.concatenate(q1).tolist(),
                  rowqcol2=np.concatenate(q2).tolist(), rowqcoef=np.concatenate(qc).tolist())
    codes = integer_codes(mf)
    ent = np.flatnonzero(codes != "C")
    if ent.size:
        kw.update(coltype=codes[ent].tolist(), entind=ent.tolist())
    if mf.sos:
        kw.update(settype=[str(int(s.level)) for s in mf.sos],
                  setstart=np.concatenate([[0], np.cumsum([len(s.idx) for s in mf.sos])]).astype(int).tolist(),
                  setind=np.concatenate([np.asarray(s.idx) for s in mf.sos]).astype(int).tolist(),
                  refval=np.concatenate([np.asarray(s.weights, dtype=float) for s in mf.sos]).tolist())
    p.loadMIQCQP("milopt", objcoef=np.asarray(mf.c, dtype=float).tolist(), lb=np.asarray(mf.col_lb, float).tolist(),
                 ub=np.asarray(mf.col_ub, float).tolist(), **kw)
    if mf.sense < 0:
        p.chgObjSense(xp.ObjSense.MAXIMIZE)
    if mf.c0:
        p.chgObj([-1], [-float(mf.c0)])
    if ind_rows is not None:
        p.setIndicators(ind_rows.tolist(), np.asarray(mf.ind_binary).astype(int).tolist(),
                        np.where(np.asarray(mf.ind_active) == 1, 1, -1).astype(int).tolist())


def _priorities(p, mf) -> None:
    cols, pri = priority_columns(mf)
    if cols.size:
        levels = np.unique(pri)[::-1]  # highest first → Xpress priority 0
        rank = np.minimum(np.searchsorted(-levels, -pri), 499)
        p.loadDirs(cols.tolist(), rank.astype(int).tolist())


class _CtrlC:
    """Ctrl-C during an Xpress solve stops the solve (termination interrupted), as with the other
    solvers, instead of killing the process.

    Measured with xpress 9.9.1: while ``optimize`` runs, SIGINT's disposition is the default
    one, so Ctrl-C ends the Python process at once (exit 130, no result, no clean-up).  When
    the caller handles SIGINT in Python (the interpreter's default) and calls from the main
    thread, callbacks run on the main thread (control ``callbackfrommainthread``), and the
    check-time callback — called whenever Xpress checks its time limit — puts a Python handler
    back in place and, once Ctrl-C was pressed, calls ``interrupt(CTRLC)``.  The caller's handler
    is restored afterwards."""

    def __init__(self):
        self.hit = False
        self.installed = False
        self.active = (threading.current_thread() is threading.main_thread()
                       and callable(signal.getsignal(signal.SIGINT)))
        self.saved = signal.getsignal(signal.SIGINT) if self.active else None

    def attach(self, p) -> None:
        if self.active:
            p.controls.callbackfrommainthread = 1
            p.addCheckTimeCallback(self._check, None, 0)

    def _on_sigint(self, signum, frame):
        self.hit = True

    def _check(self, prob, data):
        if not self.installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._on_sigint)
            self.installed = True
        if self.hit:
            prob.interrupt(_xpress().StopType.CTRLC)

    def restore(self) -> None:
        if self.installed:
            signal.signal(signal.SIGINT, self.saved)


class _Session:
    """The problem, the Ctrl-C guard and the statuses of ``optimize``."""

    def __init__(self, p):
        self.p, self.ctrlc, self.status = p, _CtrlC(), (2, 0)


class XpressBackend(CommercialBackend):
    """FICO Xpress through its Python API (see the module docstring)."""

    name = module = "xpress"
    summary = "FICO Xpress through its Python API (LP, MILP, QP, MIQP, QCQP, MIQCQP incl. non-convex; SOS, indicators)"
    limits = "PyPI wheel = Community licence: rows + columns <= 5,000; <= 200 when quadratic"
    status_map = STATUS_MAP
    rewrites = (rw.DROP_FREE_ROWS, rw.QUADRATIC_LE, rw.ONE_SIDED_INDICATORS, rw.finite_bounds(XPRESS_INF))
    option_hint = "an Xpress control name, e.g. presolve=0"
    error_names = ("SolverError", "ModelError", "InterfaceError")

    def api(self):
        return _xpress()

    def cannot_take(self, mf, opts):
        """Refuse, before loading, an instance over the Community licence when that is the
        installed licence (probed once); a full licence takes everything."""
        return licence_skip(_over(mf), "xpress", _probe_community)

    def open(self, mf, opts):
        p = _problem()
        p.controls.outputlog = 1 if opts.verbose else 0
        return _Session(p)

    def build(self, s, mf, opts, incumbents):
        p = s.p
        _load(p, mf)
        _priorities(p, mf)
        extra = {}
        mip = mf.is_mip()
        if opts.warm_start and opts.x0 is not None and mip:
            idx, vals = start_pairs(opts.x0)
            if idx.size:
                p.addMipSol(vals.tolist(), idx.tolist(), "milopt_start")
            extra["warm_start_entries"] = int(idx.size)
        if mip or mf.qrows or mf.has_quadratic_objective():
            p.addIntsolCallback(lambda prob, data: incumbents.add(prob.attributes.mipobjval, prob.getCallbackSolution),
                                None, 0)
        return extra

    def set_common(self, s, mf, opts):
        if opts.threads is not None:
            s.p.controls.threads = int(opts.threads)
        if opts.mip_gap is not None:
            s.p.controls.miprelstop = float(opts.mip_gap)

    def set_option(self, s, name, value):
        s.p.setControl(name, value)

    def option_names(self, s):
        return [k for k in dir(s.p.controls) if not k.startswith("_")]

    def set_time_limit(self, s, seconds):
        s.p.controls.timelimit = seconds

    def optimize(self, s, mf, opts, extra):
        s.ctrlc.attach(s.p)
        try:
            solvestatus, solstatus = s.p.optimize()
        finally:
            s.ctrlc.restore()
        s.status = (int(solvestatus), int(solstatus))

    def outcome(self, s, mf, extra) -> Outcome:
        p, (solvestatus, solstatus) = s.p, s.status
        a = p.attributes
        stop = int(a.stopstatus)
        how = _SOLVESTATUS.get(solvestatus, "failed")
        code = (how, solstatus) if how == "completed" else ("stopped", stop)
        has = solstatus in (1, 2)
        used = int(a.optimizetypeused)  # 0 LP, 1 MIP, 2 local NLP, 3 global NLP
        branch = used in (1, 3)
        bound = None
        if branch:
            try:
                bound = float(a.bestbound)
            except Exception:
                bound = None
            if bound is not None and abs(bound) >= XPRESS_INF:
                bound = None
        extra.update(solvestatus=solvestatus, solstatus=solstatus, stopstatus=stop, optimizetypeused=used)
        return Outcome(code=code, termination=T.ERROR if how == "failed" else None,
                       x=np.asarray(p.getSolution(), dtype=float) if has else None,
                       objective=float(a.objval) if has else None, bound=bound,
                       iterations=int(a.simplexiter) + int(a.bariter), nodes=int(a.nodes) if branch else None,
                       status_text=f"{how}; solstatus {solstatus}; stopstatus {stop}", extra=extra)

    def failure(self, exc, mf, incumbents):
        if _is_size_error(exc):
            msg = _over(mf) or f"xpress: the installed licence refused the instance ({one_line(exc)}); {FULL_LICENCE}"
            return error_result(msg, licence=True, trajectory=incumbents.points)
        if "licen" in str(exc).lower():
            return error_result(f"xpress: {one_line(exc)}; {FULL_LICENCE}", licence=True)
        return error_result(f"xpress: {one_line(exc)}", trajectory=incumbents.points)


BACKEND = XpressBackend()
