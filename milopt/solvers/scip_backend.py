"""SCIP backend: LP, MILP, QP, MIQP, QCQP, MIQCQP, SOS and indicator constraints through
PySCIPOpt, built from the matrix form.

The :class:`~milopt.matrix.MatrixForm` gives the columns (with integrality and bounds), the
linear rows, the quadratic rows (``lb ≤ aᵀx + Σ q x_i x_j ≤ ub``), SOS1/SOS2 sets, indicator
rows (``addConsIndicator``; a row with two finite sides becomes two indicator rows) and the
branching priorities.  SCIP objectives are linear, so a quadratic objective is moved into an
epigraph variable: ``min cᵀx + t + c0`` s.t. ``t ≥ ½xᵀQx``.  SCIP's output is off unless
``verbose`` (no pipe is involved, so SCIP cannot block on a full log pipe).

The backend runs *isolated* (the driver solves in a child process with a hard deadline): with
PySCIPOpt 6.3 / SCIP 10, some models make SCIP abort the process or dead-lock in native code
(docs/solvers.md, "Hazards"); the user then gets ``error`` or ``time_limit`` with the best
solution reported so far instead of a dead or hung Python process.

Every improving solution is recorded through an event handler on ``BESTSOLFOUND`` (the
incumbent trajectory, for primal integrals) and streamed to the driver.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from milopt.solvers.backend import About, Backend, Capabilities, Outcome, map_status, quiet_stdout
from milopt.solvers.result import Termination

#: SCIP status (Model.getStatus()) -> Termination
STATUS_MAP = {
    "optimal": Termination.OPTIMAL,
    "gaplimit": Termination.OPTIMAL,
    "timelimit": Termination.TIME_LIMIT,
    "nodelimit": Termination.ITERATION_LIMIT,
    "totalnodelimit": Termination.ITERATION_LIMIT,
    "stallnodelimit": Termination.ITERATION_LIMIT,
    "sollimit": Termination.ITERATION_LIMIT,
    "bestsollimit": Termination.ITERATION_LIMIT,
    "restartlimit": Termination.ITERATION_LIMIT,
    "infeasible": Termination.INFEASIBLE,
    "unbounded": Termination.UNBOUNDED,
    "inforunbd": Termination.INFEASIBLE_OR_UNBOUNDED,
    "userinterrupt": Termination.INTERRUPTED,
    "terminate": Termination.INTERRUPTED,
    "memlimit": Termination.ERROR,
    "unknown": Termination.UNKNOWN,
}


def version() -> str:
    import pyscipopt

    with quiet_stdout():
        v = pyscipopt.Model().version()
    return f"{v} (PySCIPOpt {pyscipopt.__version__})"


def _bound(v):
    return None if not np.isfinite(v) else float(v)


def build_scip(mf, verbose: bool = False):
    """The PySCIPOpt model of ``mf``: ``(scip_model, scip_vars)`` (``scip_vars`` in column order)."""
    import pyscipopt as ps
    from pyscipopt.scip import ExprCons

    s = ps.Model()
    if not verbose:
        s.hideOutput()
    n = mf.n_cols
    integ = np.asarray(mf.integrality, dtype=bool)
    binary = mf.binary()
    xs = []
    for j in range(n):
        lb, ub = _bound(mf.col_lb[j]), _bound(mf.col_ub[j])
        vt = "C"
        if integ[j]:
            vt = "B" if binary[j] else "I"
        xs.append(s.addVar(name=f"c{j}", vtype=vt, lb=lb, ub=ub))
    A = sp.csr_matrix(mf.A)
    ind, dat, ptr = A.indices, A.data, A.indptr
    for r in range(A.shape[0]):
        lo, hi = _bound(mf.row_lb[r]), _bound(mf.row_ub[r])
        if lo is None and hi is None:  # a free row constrains nothing (PySCIPOpt refuses it)
            continue
        a, b = ptr[r], ptr[r + 1]
        e = ps.quicksum(float(v) * xs[j] for v, j in zip(dat[a:b].tolist(), ind[a:b].tolist()))
        s.addCons(ExprCons(e, lhs=lo, rhs=hi), name=f"r{r}")
    for k, q in enumerate(mf.qrows):
        e = ps.quicksum(float(v) * xs[j] for v, j in zip(q.lin_val.tolist(), q.lin_idx.tolist()))
        e = e + ps.quicksum(float(v) * xs[i] * xs[j] for v, i, j in zip(q.qv.tolist(), q.qi.tolist(), q.qj.tolist()))
        if np.isfinite(q.lb) or np.isfinite(q.ub):
            s.addCons(ExprCons(e, lhs=_bound(q.lb), rhs=_bound(q.ub)), name=f"q{k}")
    for k, so in enumerate(mf.sos):
        vs = [xs[j] for j in so.idx.tolist()]
        w = [float(x) for x in so.weights]
        if so.level == 1:
            s.addConsSOS1(vs, weights=w, name=f"sos{k}")
        else:
            s.addConsSOS2(vs, weights=w, name=f"sos{k}")
    if mf.n_indicators:
        G = sp.csr_matrix(mf.ind_A)
        for r in range(G.shape[0]):
            a, b = G.indptr[r], G.indptr[r + 1]
            e = ps.quicksum(float(v) * xs[j] for v, j in zip(G.data[a:b].tolist(), G.indices[a:b].tolist()))
            z = xs[int(mf.ind_binary[r])]
            one = bool(mf.ind_active[r] == 1)
            if np.isfinite(mf.ind_lb[r]):  # e >= lb  <=>  -e <= -lb
                s.addConsIndicator(-e <= -float(mf.ind_lb[r]), binvar=z, activeone=one, name=f"i{r}l")
            if np.isfinite(mf.ind_ub[r]):
                s.addConsIndicator(e <= float(mf.ind_ub[r]), binvar=z, activeone=one, name=f"i{r}u")
    if mf.priority is not None:
        for j in np.flatnonzero(mf.priority).tolist():
            s.chgVarBranchPriority(xs[j], int(mf.priority[j]))
    obj = ps.quicksum(float(v) * xs[j] for j, v in zip(np.flatnonzero(mf.c).tolist(), mf.c[mf.c != 0].tolist()))
    obj = obj + float(mf.c0)
    if mf.has_quadratic_objective():
        t = s.addVar(name="qobj", lb=None, ub=None)
        U = sp.triu(mf.Q, format="coo")
        quad = ps.quicksum((0.5 if i == j else 1.0) * float(q) * xs[i] * xs[j]
                           for i, j, q in zip(U.row.tolist(), U.col.tolist(), U.data.tolist()))
        s.addCons((t >= quad) if mf.sense == 1 else (t <= quad), name="qobj_epigraph")
        obj = obj + t
    s.setObjective(obj, sense="minimize" if mf.sense == 1 else "maximize")
    return s, xs


def _incumbent_handler(xs, incumbents):
    import pyscipopt as ps

    class _Incumbents(ps.Eventhdlr):
        def eventinit(self):
            self.model.catchEvent(ps.SCIP_EVENTTYPE.BESTSOLFOUND, self)

        def eventexit(self):
            self.model.dropEvent(ps.SCIP_EVENTTYPE.BESTSOLFOUND, self)

        def eventexec(self, event):
            sol = self.model.getBestSol()
            incumbents.add(float(self.model.getSolObjVal(sol)),
                           lambda: np.array([self.model.getSolVal(sol, x) for x in xs]))

    return _Incumbents()


#: Ipopt options SCIP's NLP heuristics use: MUMPS ordered by AMD, not METIS (docs/solvers.md,
#: "SCIP 10 and the convex-hull model": METIS corrupts memory on large hull sub-NLPs)
IPOPT_OPTIONS = "mumps_pivot_order 0\n"
_OPTFILE = [None]


def ipopt_option_file() -> str | None:
    """Path of a (per-process) Ipopt option file holding :data:`IPOPT_OPTIONS`."""
    if _OPTFILE[0] is None:
        import atexit
        import os
        import tempfile

        fd, path = tempfile.mkstemp(prefix="milopt-ipopt-", suffix=".opt")
        with os.fdopen(fd, "w") as fh:
            fh.write(IPOPT_OPTIONS)
        atexit.register(lambda: os.path.exists(path) and os.unlink(path))
        _OPTFILE[0] = path
    return _OPTFILE[0]


class _Session:
    """The SCIP model, its columns and the incumbent recorder."""

    def __init__(self, s, xs):
        self.s, self.xs, self.incumbents = s, xs, None


class ScipBackend(Backend):
    """SCIP through PySCIPOpt (see the module docstring)."""

    name = "scip"
    module = "pyscipopt"
    aliases = ("scip_direct", "scip_persistent", "scip-native")
    caps = Capabilities(classes=frozenset({"LP", "MILP", "QP", "MIQP", "QCQP", "MIQCQP", "SOS", "INDICATOR"}),
                        isolated=True, trajectory=True, warm_start=True)
    about = About(description="SCIP (LP, MILP, QP, MIQP, QCQP, MIQCQP; SOS, indicators), in a child process with "
                              "a hard deadline",
                  install="included (pyscipopt)", limits="threads: LP solver threads only (lp/threads)")
    status_map = STATUS_MAP
    option_hint = "a SCIP parameter name, e.g. limits/nodes=1000"

    def version(self) -> str:
        return version()

    def open(self, mf, opts):
        return _Session(*build_scip(mf, bool(opts.verbose)))

    def build(self, ss, mf, opts, incumbents):
        s = ss.s
        if "nlpi/ipopt/optfile" not in dict(opts.options) and (mf.qrows or mf.has_quadratic_objective()):
            try:  # SCIP's NLP heuristics: Ipopt with AMD ordering (the METIS hazard)
                s.setParam("nlpi/ipopt/optfile", ipopt_option_file())
            except Exception:  # a SCIP built without Ipopt has no such parameter
                pass
        if opts.warm_start and opts.x0 is not None:
            sol = s.createPartialSol()
            for x, val in zip(ss.xs, opts.x0.tolist()):
                if val == val:  # not NaN
                    s.setSolVal(sol, x, float(val))
            s.addSol(sol)
        ss.incumbents = incumbents
        s.includeEventhdlr(_incumbent_handler(ss.xs, incumbents), "milopt_incumbents", "records improving solutions")
        return {"indicator_constraints": int(mf.n_indicators)}

    def set_common(self, ss, mf, opts):
        if opts.mip_gap is not None:
            ss.s.setParam("limits/gap", float(opts.mip_gap))
        if opts.threads is not None:
            ss.s.setParam("lp/threads", int(opts.threads))

    def set_option(self, ss, name, value):
        ss.s.setParam(name, value)

    def option_names(self, ss):
        return list(ss.s.getParams())

    def set_time_limit(self, ss, seconds):
        ss.s.setParam("limits/time", seconds)

    def optimize(self, ss, mf, opts, extra):
        ss.incumbents.t0 = time.perf_counter()  # the trajectory counts from the solver's start
        ss.s.optimize()

    def outcome(self, ss, mf, extra) -> Outcome:
        s = ss.s
        status = s.getStatus()
        term = map_status(STATUS_MAP, status)
        x = objective = None
        if s.getNSols() > 0 and term not in (Termination.INFEASIBLE, Termination.UNBOUNDED):
            best = s.getBestSol()
            x = np.array([s.getSolVal(best, v) for v in ss.xs])
            objective = float(s.getObjVal())
        try:
            bound = float(s.getDualbound())
        except Exception:
            bound = None
        extra["scip_status"] = status
        return Outcome(code=status, x=x, objective=objective, bound=bound, nodes=int(s.getNNodes()),
                       iterations=int(s.getNLPIterations()), status_text=status, extra=extra)


def write(mf, path) -> None:
    """SCIP's own writer (``.mps``, ``.lp``, ``.cip``): for comparison with milopt's writer only."""
    s, _ = build_scip(mf)
    s.writeProblem(str(path), verbose=False)


BACKEND = ScipBackend()
