r"""Gurobi backend: the matrix form handed to Gurobi through ``gurobipy``'s matrix API.

No file round trip and no Pyomo solver interface: :class:`milopt.matrix.MatrixForm` becomes a
``gurobipy.Model`` directly (docs/backends.md).

* columns: one ``addMVar`` with bounds and types (``B`` for integer columns within [0, 1],
  ``I``, ``C``);
* objective: ``setMObjective(½Q, c, c₀, sense)`` — Gurobi's matrix objective is
  :math:`x^\top Q' x + c^\top x + c_0`, so the matrix form's full symmetric Hessian enters
  halved;
* linear rows: one ``addMConstr`` with senses ``=``, ``<``, ``>`` (a two-sided row is split
  into a ``≤`` and a ``≥`` row by :data:`~milopt.solvers.rewrites.SPLIT_RANGES`: Gurobi's own
  ranges add a slack column);
* quadratic rows: ``addMQConstr`` with the term matrix :math:`T_{ij} = q` for each term
  :math:`q\,x_i x_j` over the columns involved (:math:`x^\top T x` counts each term once);
  non-convex rows and objectives are solved to global optimality (Gurobi's ``NonConvex``
  default);
* indicator rows: ``addGenConstrIndicator`` (active at ``z = v``; a range as two);
  SOS: ``addSOS`` with the weights; branching priorities: the ``BranchPriority`` attribute
  (higher first, as in the matrix form);
* warm start: the ``Start`` attribute (``GRB.UNDEFINED`` where ``x0`` is NaN);
* incumbent trajectory: the callback at ``MIPSOL`` with ``MIPSOL_OBJ`` (the objective with its
  constant);
* limits: ``TimeLimit`` (what is left of ``opts.time_limit`` after the build), ``MIPGap``,
  ``Threads``; native options by parameter name (``{"MIPFocus": 1}``).

Output: the environment is started with ``OutputFlag = 0`` (no banner) unless ``verbose``;
the log then goes to stderr (:func:`~milopt.solvers._commercial.quiet_output`: gurobipy prints
it from Python, and native code writes to file descriptor 1).

Licence: the ``gurobipy`` wheel carries a size-limited licence.  Measured with gurobipy 13.0.3:
at most 2,000 variables and 2,000 constraints (linear, quadratic and general constraints
such as indicators counted together), and at most 200 variables once the objective or a row is
quadratic; past them ``optimize`` raises error 10010.  Whether the licence is that one is probed
once per process (a 2,001-variable LP); only then does ``skip`` refuse a larger instance.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from milopt.solvers import rewrites as rw
from milopt.solvers._commercial import (CommercialBackend, integer_codes, licence_message, licence_skip, native_rows, priority_columns)
from milopt.solvers.backend import Outcome, error_result, one_line, quiet_output
from milopt.solvers.result import Termination as T

#: Gurobi optimisation status codes (GRB.Status) → Termination
STATUS_MAP = {
    1: T.UNKNOWN,                    # LOADED (not solved)
    2: T.OPTIMAL,                    # OPTIMAL
    3: T.INFEASIBLE,                 # INFEASIBLE
    4: T.INFEASIBLE_OR_UNBOUNDED,    # INF_OR_UNBD
    5: T.UNBOUNDED,                  # UNBOUNDED
    6: T.ITERATION_LIMIT,            # CUTOFF (objective cutoff)
    7: T.ITERATION_LIMIT,            # ITERATION_LIMIT
    8: T.ITERATION_LIMIT,            # NODE_LIMIT
    9: T.TIME_LIMIT,                 # TIME_LIMIT
    10: T.ITERATION_LIMIT,           # SOLUTION_LIMIT
    11: T.INTERRUPTED,               # INTERRUPTED (Ctrl-C)
    12: T.ERROR,                     # NUMERIC
    13: T.UNKNOWN,                   # SUBOPTIMAL
    14: T.UNKNOWN,                   # INPROGRESS
    15: T.ITERATION_LIMIT,           # USER_OBJ_LIMIT
    16: T.ITERATION_LIMIT,           # WORK_LIMIT
    17: T.ERROR,                     # MEM_LIMIT
    18: T.OPTIMAL,                   # LOCALLY_OPTIMAL (local NLP solve)
    19: T.INFEASIBLE,                # LOCALLY_INFEASIBLE
}

#: size-limited (pip) licence: measured with gurobipy 13.0.3
RESTRICTED_VARIABLES = 2000
RESTRICTED_CONSTRAINTS = 2000
RESTRICTED_QUADRATIC_VARIABLES = 200
LICENCE_ERRORS = {10009, 10010}  # NO_LICENSE, SIZE_LIMIT_EXCEEDED
FULL_LICENCE = ("set GRB_LICENSE_FILE to a full gurobi.lic (academic or commercial, from grbgetkey), "
                "or use another solver (--solver scip)")
#: Gurobi's infinite bound (GRB.INFINITY)
GUROBI_INF = 1e100


def native_size(mf) -> tuple[int, int, bool]:
    """Variables, constraints (a two-sided linear, quadratic or indicator row counts twice,
    free linear rows not at all) and whether the model is quadratic, as built for Gurobi."""
    return int(mf.n_cols), native_rows(mf, split_ranges=True), bool(mf.qrows) or mf.has_quadratic_objective()


def _env(verbose: bool):
    import gurobipy as gp

    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 1 if verbose else 0)
    env.start()
    return env


def _probe_restricted() -> bool:
    """True when a 2,001-variable LP is refused with the size-limited licence's error 10010."""
    import gurobipy as gp

    with quiet_output():
        env = _env(False)
        try:
            m = gp.Model(env=env)
            m.addMVar(RESTRICTED_VARIABLES + 1, lb=0.0, ub=1.0, obj=1.0)
            try:
                m.optimize()
            except gp.GurobiError as exc:
                return getattr(exc, "errno", None) == 10010
            finally:
                m.dispose()
            return False
        finally:
            env.dispose()


def _over(mf) -> str | None:
    cols, rows, quad = native_size(mf)
    cap = RESTRICTED_QUADRATIC_VARIABLES if quad else RESTRICTED_VARIABLES
    if cols <= cap and rows <= RESTRICTED_CONSTRAINTS:
        return None
    limit = (f"{RESTRICTED_VARIABLES:,} variables and {RESTRICTED_CONSTRAINTS:,} constraints "
             f"({RESTRICTED_QUADRATIC_VARIABLES} variables when quadratic)")
    need = {"variables": cols, "constraints": rows}
    return licence_message("gurobi", "size-limited Gurobi licence", limit, need, FULL_LICENCE, quadratic=quad)


def _one_sided(lb, ub) -> tuple[np.ndarray, np.ndarray]:
    """Sense characters (``=``, ``<``, ``>``) and right-hand sides of one-sided rows."""
    lb, ub = np.asarray(lb, dtype=float), np.asarray(ub, dtype=float)
    eq = lb == ub
    sense = np.where(eq, "=", np.where(np.isfinite(ub), "<", ">"))
    return sense, np.where(sense == ">", lb, ub)


def _load(m, mf):
    """Columns, objective and every kind of row of ``mf`` (all one-sided) into the model ``m``."""
    import gurobipy as gp
    from gurobipy import GRB

    x = m.addMVar(mf.n_cols, lb=np.asarray(mf.col_lb, float), ub=np.asarray(mf.col_ub, float),
                  vtype=integer_codes(mf))
    Q = 0.5 * sp.csr_matrix(mf.Q) if mf.has_quadratic_objective() else None
    m.setMObjective(Q, np.asarray(mf.c, dtype=float), float(mf.c0),
                    sense=GRB.MAXIMIZE if mf.sense < 0 else GRB.MINIMIZE)
    if mf.A.shape[0]:
        sense, rhs = _one_sided(mf.row_lb, mf.row_ub)
        m.addMConstr(sp.csr_matrix(mf.A), x, sense, rhs)
    for q in mf.qrows:
        qi, qj = np.asarray(q.qi, dtype=np.int64), np.asarray(q.qj, dtype=np.int64)
        u, inv = np.unique(np.concatenate([qi, qj]), return_inverse=True)
        Tq = sp.coo_matrix((np.asarray(q.qv, dtype=float), (inv[:qi.size], inv[qi.size:])), shape=(u.size, u.size))
        li = np.asarray(q.lin_idx, dtype=np.int64)
        lin = (np.asarray(q.lin_val, dtype=float), x[li]) if li.size else (None, None)
        sense, rhs = _one_sided([q.lb], [q.ub])
        m.addMQConstr(Tq.tocsr(), lin[0], str(sense[0]), float(rhs[0]), x[u], x[u], lin[1], name=q.name)
    xl = x.tolist()
    if mf.n_indicators:
        G = sp.csr_matrix(mf.ind_A)
        G.sum_duplicates()
        sense, rhs = _one_sided(mf.ind_lb, mf.ind_ub)
        native = {"=": GRB.EQUAL, "<": GRB.LESS_EQUAL, ">": GRB.GREATER_EQUAL}
        binary, active = np.asarray(mf.ind_binary).tolist(), (np.asarray(mf.ind_active) == 1).tolist()
        for r, (sn, v, z, on) in enumerate(zip(sense.tolist(), rhs.tolist(), binary, active)):
            a, b = G.indptr[r], G.indptr[r + 1]
            expr = gp.LinExpr(G.data[a:b].tolist(), [xl[j] for j in G.indices[a:b].tolist()])
            m.addGenConstrIndicator(xl[z], on, expr, native[sn], v)
    for s in mf.sos:
        m.addSOS(GRB.SOS_TYPE1 if int(s.level) == 1 else GRB.SOS_TYPE2, [xl[j] for j in np.asarray(s.idx).tolist()],
                 np.asarray(s.weights, dtype=float).tolist())
    cols, pri = priority_columns(mf)
    if cols.size:
        full = np.zeros(mf.n_cols, dtype=np.int64)
        full[cols] = pri
        x.setAttr("BranchPriority", full)
    return x


_NAMES = None


def _status_name(code: int) -> str:
    global _NAMES
    if _NAMES is None:
        from gurobipy import GRB

        _NAMES = {getattr(GRB.Status, k): k for k in dir(GRB.Status) if k.isupper()}
    return _NAMES.get(code, str(code))


class _Session:
    """The environment, the model and its columns."""

    def __init__(self, env, m):
        self.env, self.m, self.x = env, m, None


class GurobiBackend(CommercialBackend):
    """Gurobi through gurobipy's matrix API (see the module docstring)."""

    name = "gurobi"
    module = "gurobipy"
    summary = "Gurobi through gurobipy's matrix API (LP, MILP, QP, MIQP, QCQP, MIQCQP incl. non-convex; SOS, indicators)"
    limits = ("PyPI wheel = size-limited licence: <= 2,000 variables and <= 2,000 constraints; <= 200 variables "
              "when quadratic")
    status_map = STATUS_MAP
    rewrites = (rw.DROP_FREE_ROWS, rw.SPLIT_RANGES, rw.ONE_SIDED_QUADRATIC, rw.ONE_SIDED_INDICATORS,
                rw.finite_bounds(GUROBI_INF))
    option_hint = "a Gurobi parameter name, e.g. MIPFocus=1"
    error_names = ("GurobiError",)

    def version(self) -> str:
        return ".".join(map(str, self.api().gurobi.version()))

    def cannot_take(self, mf, opts):
        """Refuse, before building, an instance over the size-limited licence when that is the
        installed licence (probed once); a full licence takes everything."""
        return licence_skip(_over(mf), "gurobi", _probe_restricted)

    def open(self, mf, opts):
        import gurobipy as gp

        env = _env(bool(opts.verbose))
        try:
            return _Session(env, gp.Model(env=env))
        except Exception:
            env.dispose()
            raise

    def build(self, s, mf, opts, incumbents):
        from gurobipy import GRB

        s.x = _load(s.m, mf)
        extra = {}
        if opts.warm_start and opts.x0 is not None and mf.is_mip():
            x0 = np.asarray(opts.x0, dtype=float)
            s.x.setAttr("Start", np.where(np.isfinite(x0), x0, GRB.UNDEFINED))
            extra["warm_start_entries"] = int(np.isfinite(x0).sum())

        def callback(model, where):
            if where == GRB.Callback.MIPSOL:
                incumbents.add(model.cbGet(GRB.Callback.MIPSOL_OBJ), lambda: model.cbGetSolution(s.x))

        s.callback = callback
        return extra

    def set_common(self, s, mf, opts):
        if opts.threads is not None:
            s.m.Params.Threads = int(opts.threads)
        if opts.mip_gap is not None:
            s.m.Params.MIPGap = float(opts.mip_gap)

    def set_option(self, s, name, value):
        s.m.setParam(name, value)

    def option_names(self, s):
        from gurobipy import GRB

        return [k for k in dir(GRB.Param) if not k.startswith("_")]

    def set_time_limit(self, s, seconds):
        s.m.Params.TimeLimit = seconds

    def optimize(self, s, mf, opts, extra):
        s.m.optimize(s.callback)

    def outcome(self, s, mf, extra) -> Outcome:
        m = s.m
        status = int(m.Status)
        has = int(m.SolCount) > 0
        try:
            nodes = int(m.NodeCount)
        except Exception:
            nodes = None
        mip = bool(m.IsMIP) or bool(nodes)  # a non-convex QP / QCQP is solved by branch and bound too
        bound = None
        if mip:
            try:
                bound = float(m.ObjBound)
            except Exception:
                bound = None
            if bound is not None and abs(bound) >= GUROBI_INF:
                bound = None
        iters = 0
        for attr in ("IterCount", "BarIterCount"):
            try:
                iters += int(getattr(m, attr))
            except Exception:
                pass
        extra.update(status_code=status)
        return Outcome(code=status, x=np.asarray(s.x.X, dtype=float) if has else None,
                       objective=float(m.ObjVal) if has else None, bound=bound, iterations=iters,
                       nodes=nodes if mip else None, status_text=_status_name(status), extra=extra)

    def failure(self, exc, mf, incumbents):
        errno = getattr(exc, "errno", None)
        if errno == 10010:
            msg = _over(mf) or licence_message(
                "gurobi", "size-limited Gurobi licence",
                f"{RESTRICTED_VARIABLES:,} variables and {RESTRICTED_CONSTRAINTS:,} constraints",
                dict(zip(("variables", "constraints"), native_size(mf)[:2])), FULL_LICENCE)
            return error_result(msg, licence=True, trajectory=incumbents.points)
        if errno == 10009:
            return error_result(f"gurobi: no valid licence ({' '.join(str(exc).split())}); {FULL_LICENCE}",
                                licence=True)
        return error_result(f"gurobi: {one_line(exc)}", trajectory=incumbents.points)

    def close(self, s):
        s.m.dispose()
        s.env.dispose()


BACKEND = GurobiBackend()
