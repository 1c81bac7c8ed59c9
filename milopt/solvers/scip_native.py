"""SCIP through PySCIPOpt directly, for models Pyomo's interfaces cannot pass: indicator constraints.

Backend ``scip-native`` (classes LP, MILP, QP, MIQP, SOS, INDICATOR).  Pyomo 6.10 has no
indicator-constraint component and its ``scip_direct`` interface passes only rows, a
quadratic objective and SOS sets.  SCIP itself has indicator constraints
(``Model.addConsIndicator``).  This backend builds the SCIP model from the matrix form
(:func:`milopt.solvers.export.extract`: active rows, objective, bounds, integrality), adds the
model's SOS1/SOS2 sets, the branching priorities a builder declared in
``model._milopt_branch_priority`` (pairs of a variable and an integer, higher first), and the
indicator constraints a builder declared in ``model._milopt_indicators``:

``model._milopt_indicators = [{"rows": <deactivated IndexedConstraint built by add_linear_rows>,
"binaries": [VarData per row], "active_value": 0 | 1}, ...]``

meaning: row r must hold when ``binaries[r] == active_value``.  The rows are kept *deactivated*
in the Pyomo model (so no Pyomo-based solver or writer treats them as hard rows), and the model
declares the feature ``INDICATOR`` so that the driver refuses every backend but this one.

A quadratic objective is moved into an epigraph variable (SCIP objectives are linear):
min cᵀx + t + c0 s.t. t ≥ ½xᵀQx.  SCIP is called in-process with its output off unless
``verbose`` (no pipe is involved, so SCIP cannot block on a full log pipe; docs/solvers.md).
"""
from __future__ import annotations

import time

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.solvers.driver import Backend, finish, register_backend
from milopt.solvers.result import Termination

_STATUS = {
    "optimal": Termination.OPTIMAL,
    "gaplimit": Termination.OPTIMAL,
    "timelimit": Termination.TIME_LIMIT,
    "nodelimit": Termination.ITERATION_LIMIT,
    "totalnodelimit": Termination.ITERATION_LIMIT,
    "stallnodelimit": Termination.ITERATION_LIMIT,
    "infeasible": Termination.INFEASIBLE,
    "unbounded": Termination.UNBOUNDED,
    "inforunbd": Termination.INFEASIBLE_OR_UNBOUNDED,
    "userinterrupt": Termination.INTERRUPTED,
    "memlimit": Termination.ERROR,
}


def _version():
    import pyscipopt

    return f"{pyscipopt.Model().version()} (PySCIPOpt {pyscipopt.__version__}, native)"


def indicator_blocks(model) -> list:
    """The indicator declarations of ``model`` (validated)."""
    blocks = list(getattr(model, "_milopt_indicators", ()) or ())
    for blk in blocks:
        comp = blk["rows"]
        if getattr(comp, "_milopt_rows", None) is None:
            raise ValueError(f"indicator rows {comp.name} must be built with models._linear.add_linear_rows")
        if comp.active:
            raise ValueError(f"indicator rows {comp.name} must be deactivated (they are not hard rows)")
        if len(blk["binaries"]) != len(comp._milopt_rows.datas):
            raise ValueError(f"indicator rows {comp.name}: one binary per row expected")
    return blocks


def _linexpr(ps, coefs, xs):
    return ps.quicksum(float(a) * x for a, x in zip(coefs, xs))


def build_scip(model, verbose: bool = False):
    """The PySCIPOpt model of ``model``: (scip_model, scip_vars, pyomo_vars, n_indicators)."""
    import pyscipopt as ps
    from pyscipopt.scip import ExprCons

    from milopt.solvers.export import extract

    mf = extract(model)
    blocks = indicator_blocks(model)
    s = ps.Model()
    if not verbose:
        s.hideOutput()
    n = mf.c.size
    cols = {id(v): j for j, v in enumerate(mf.variables)}
    allvars = list(mf.variables)
    xs = []
    for j in range(n):
        lb = None if not np.isfinite(mf.col_lb[j]) else float(mf.col_lb[j])
        ub = None if not np.isfinite(mf.col_ub[j]) else float(mf.col_ub[j])
        vt = "C"
        if mf.integrality[j]:
            vt = "B" if lb is not None and ub is not None and lb >= 0 and ub <= 1 else "I"
        xs.append(s.addVar(name=f"x{j}", vtype=vt, lb=lb, ub=ub))

    def col(v):
        j = cols.get(id(v))
        if j is None:  # a variable that appears only in indicator rows
            j = cols[id(v)] = len(xs)
            allvars.append(v)
            vt = "B" if v.is_binary() else ("I" if v.is_integer() else "C")
            xs.append(s.addVar(name=f"x{j}", vtype=vt, lb=v.lb, ub=v.ub))
        return xs[j]

    A = sp.csr_matrix(mf.A)
    for r in range(A.shape[0]):
        a, b = A.indptr[r], A.indptr[r + 1]
        e = _linexpr(ps, A.data[a:b], [xs[j] for j in A.indices[a:b]])
        lo = None if not np.isfinite(mf.row_lb[r]) else float(mf.row_lb[r])
        hi = None if not np.isfinite(mf.row_ub[r]) else float(mf.row_ub[r])
        s.addCons(ExprCons(e, lhs=lo, rhs=hi), name=f"r{r}")
    # SOS sets
    for con in model.component_data_objects(pe.SOSConstraint, active=True):
        vs = [col(v) for v in con.get_variables()]
        w = [float(x) for x in con.weights] if hasattr(con, "weights") else list(range(1, len(vs) + 1))
        if con.level == 1:
            s.addConsSOS1(vs, weights=w)
        elif con.level == 2:
            s.addConsSOS2(vs, weights=w)
        else:
            raise ValueError(f"SOS level {con.level} is not supported")
    # indicator constraints: row holds when binary == active_value
    n_ind = 0
    for blk in blocks:
        cache = blk["rows"]._milopt_rows
        Ac = sp.csr_matrix(cache.A)
        V = cache.variables
        for r, zv in enumerate(blk["binaries"]):
            a, b = Ac.indptr[r], Ac.indptr[r + 1]
            coefs, idx = Ac.data[a:b], Ac.indices[a:b]
            const = sum(float(c) * float(V[j].value) for c, j in zip(coefs, idx) if V[j].fixed)
            free = [(c, col(V[j])) for c, j in zip(coefs, idx) if not V[j].fixed]
            e = ps.quicksum(float(c) * x for c, x in free)
            if zv.fixed:  # decided: a hard row or nothing
                if round(zv.value) == blk["active_value"]:
                    lo, hi = cache.lb[r], cache.ub[r]
                    s.addCons(ExprCons(e, lhs=None if not np.isfinite(lo) else lo - const,
                                       rhs=None if not np.isfinite(hi) else hi - const))
                continue
            zb = col(zv)
            one = blk["active_value"] == 1
            if np.isfinite(cache.lb[r]):  # e >= lb  <=>  -e <= -lb
                s.addConsIndicator(-e <= -(float(cache.lb[r]) - const), binvar=zb, activeone=one)
                n_ind += 1
            if np.isfinite(cache.ub[r]):
                s.addConsIndicator(e <= float(cache.ub[r]) - const, binvar=zb, activeone=one)
                n_ind += 1
    # branching priorities a builder declared: [(VarData, int)], higher is branched on first
    for v, prio in getattr(model, "_milopt_branch_priority", None) or ():
        if not v.fixed:
            s.chgVarBranchPriority(col(v), int(prio))
    # objective (epigraph for the quadratic part)
    sgn = mf.sense
    obj = _linexpr(ps, mf.c, xs[:n]) + float(mf.c0)
    if mf.Q is not None and mf.Q.nnz:
        t = s.addVar(name="qobj", lb=None, ub=None)
        U = sp.triu(mf.Q, format="coo")
        quad = ps.quicksum((0.5 if i == j else 1.0) * float(q) * xs[i] * xs[j] for i, j, q in zip(U.row, U.col, U.data))
        s.addCons((t >= quad) if sgn == 1 else (t <= quad), name="qobj_epigraph")
        obj = obj + t
    s.setObjective(obj, sense="minimize" if sgn == 1 else "maximize")
    return s, xs, allvars, n_ind


def write(model, path) -> dict:
    """Write ``model`` (with its indicator constraints) with SCIP's own writers (.mps / .lp)."""
    s, xs, allvars, n_ind = build_scip(model)
    s.writeProblem(str(path), verbose=False)
    return {"variables": s.getNVars(), "binaries": s.getNBinVars(), "integers": s.getNBinVars() + s.getNIntVars(),
            "constraints": s.getNConss(), "nonzeros": None, "quadratic_nonzeros": None, "indicators": n_ind}


def _run(model, opts):
    t0 = time.perf_counter()
    s, xs, allvars, n_ind = build_scip(model, bool(opts["verbose"]))
    if opts["time_limit"] is not None:  # building the SCIP model counts against the limit
        s.setParam("limits/time", max(0.01, float(opts["time_limit"]) - (time.perf_counter() - t0)))
    if opts["mip_gap"] is not None:
        s.setParam("limits/gap", float(opts["mip_gap"]))
    if opts["threads"] is not None:
        s.setParam("lp/threads", int(opts["threads"]))
    for k, v in opts["options"].items():
        s.setParam(k, v)
    if opts["warm_start"]:
        sol = s.createPartialSol()
        for v, x in zip(allvars, xs):
            if v.value is not None:
                s.setSolVal(sol, x, float(v.value))
        s.addSol(sol)
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    s.optimize()
    wall = time.perf_counter() - t0
    status = s.getStatus()
    term = _STATUS.get(status, Termination.UNKNOWN)
    has_sol = s.getNSols() > 0 and term not in (Termination.INFEASIBLE, Termination.UNBOUNDED)
    objective = bound = None
    if has_sol:
        best = s.getBestSol()
        for v, x in zip(allvars, xs):
            val = s.getSolVal(best, x)
            if v.is_integer() or v.is_binary():
                val = round(val)
            v.set_value(val, skip_validation=True)
        objective = s.getObjVal()
    try:
        bound = s.getDualbound()
    except Exception:
        bound = None
    cls = opts["problem_class"]
    return finish("scip-native", _version(), cls, term, has_sol, objective, bound, wall, nodes=int(s.getNNodes()),
                  extra={"scip_status": status, "build_seconds": build, "solve_seconds": time.perf_counter() - t1,
                         "indicator_constraints": n_ind}, integer=cls.startswith("MI"))


register_backend(Backend(
    name="scip-native", classes=frozenset({"LP", "MILP", "QP", "MIQP", "SOS", "INDICATOR"}), module="pyscipopt",
    run=_run, version=_version, write=write,
    description="SCIP via PySCIPOpt directly from the matrix form (adds indicator constraints Pyomo cannot pass)"))
