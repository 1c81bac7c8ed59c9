"""Built-in backends: HiGHS and SCIP through Pyomo's new solver interfaces, Ipopt through
milopt's own cyipopt bridge, and commercial solvers through Pyomo when their module is present.
"""
from __future__ import annotations

import time

from milopt.solvers.driver import Backend, finish, register_backend
from milopt.solvers.result import Termination

_TC = None


def _termination(tc) -> Termination:
    global _TC
    if _TC is None:
        from pyomo.contrib.solver.common.results import TerminationCondition as T

        _TC = {
            T.convergenceCriteriaSatisfied: Termination.OPTIMAL,
            T.maxTimeLimit: Termination.TIME_LIMIT,
            T.iterationLimit: Termination.ITERATION_LIMIT,
            T.provenInfeasible: Termination.INFEASIBLE,
            T.locallyInfeasible: Termination.INFEASIBLE,
            T.unbounded: Termination.UNBOUNDED,
            T.infeasibleOrUnbounded: Termination.INFEASIBLE_OR_UNBOUNDED,
            T.interrupted: Termination.INTERRUPTED,
            T.error: Termination.ERROR,
            T.minStepLength: Termination.ERROR,
            T.licensingProblems: Termination.ERROR,
            T.emptyModel: Termination.OPTIMAL,
        }
    return _TC.get(tc, Termination.UNKNOWN)


_SCIP_CLASS = None


def _scip_with_full_start():
    """Pyomo's scip_direct passes only the integer variables of a warm start to SCIP; this
    subclass passes every variable that has a value (SCIP's completesol heuristic then only
    fills the auxiliary objective variable), so a feasible start is used at once."""
    global _SCIP_CLASS
    if _SCIP_CLASS is None:
        from pyomo.contrib.solver.solvers.scip.scip_direct import ScipDirect

        class _Scip(ScipDirect):
            _milopt_deadline = None

            def _create_solver_model(self, model, config):
                out = super()._create_solver_model(model, config)
                if self._milopt_deadline is not None:  # the hand-off to SCIP counts against the limit
                    config.time_limit = max(0.01, self._milopt_deadline - time.perf_counter())
                return out

            def _mipstart(self):
                sol = self._solver_model.createPartialSol()
                for pyomo_var, scip_var in self._pyomo_var_to_solver_var_map.items():
                    if pyomo_var.value is not None:
                        sol[scip_var] = pyomo_var.value
                self._solver_model.addSol(sol)

        _SCIP_CLASS = _Scip
    return _SCIP_CLASS()


def _run_pyomo(name: str, pyomo_name: str, version, model, opts, native_options, warm_key=None):
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus as PS

    t_entry = time.perf_counter()
    solver = _scip_with_full_start() if pyomo_name == "scip_direct" else SolverFactory(pyomo_name)
    if pyomo_name == "scip_direct" and opts["time_limit"] is not None:
        solver._milopt_deadline = t_entry + float(opts["time_limit"])
    kw = dict(load_solutions=False, raise_exception_on_nonoptimal_result=False, tee=bool(opts["verbose"]))
    if opts["time_limit"] is not None:
        kw["time_limit"] = float(opts["time_limit"])
    if opts["mip_gap"] is not None:
        kw["rel_gap"] = float(opts["mip_gap"])
    if opts["threads"] is not None:
        kw["threads"] = int(opts["threads"])
    if opts["warm_start"] and warm_key:
        kw[warm_key] = True
    kw["solver_options"] = {**native_options, **opts["options"]}
    t0 = time.perf_counter()
    res = solver.solve(model, **kw)
    wall = time.perf_counter() - t0
    has_sol = res.solution_status in (PS.feasible, PS.optimal)
    if has_sol:
        res.solution_loader.load_vars()
    info = dict(res.extra_info.items()) if res.extra_info is not None else {}
    nodes = info.get("mip_node_count", info.get("NNodes"))
    iters = None
    for k in ("simplex_iteration_count", "qp_iteration_count", "ipm_iteration_count"):
        if isinstance(info.get(k), int) and info[k] >= 0:
            iters = (iters or 0) + info[k]
    cls = opts["problem_class"]
    term = _termination(res.termination_condition)
    if term == Termination.UNKNOWN and has_sol and res.solution_status == PS.optimal:
        term = Termination.OPTIMAL
    bound = res.objective_bound
    if cls in ("LP", "QP") and term == Termination.OPTIMAL:
        bound = res.incumbent_objective
    return finish(name, version(), cls, term, has_sol, res.incumbent_objective, bound, wall,
                  iterations=iters, nodes=None if nodes is None or nodes < 0 else int(nodes),
                  log=res.solver_log or "", extra={"pyomo_interface": pyomo_name, "native": info},
                  integer=cls.startswith("MI"))


# ------------------------------------------------------------------------ HiGHS
_HIGHS_THREADS = [None]


def _highs_version():
    import highspy

    return highspy.Highs().version()


def _run_highs(model, opts):
    import highspy

    thr = opts["threads"]
    if thr is not None and _HIGHS_THREADS[0] is not None and thr != _HIGHS_THREADS[0]:
        highspy.Highs.resetGlobalScheduler(True)  # docs/solvers.md: scheduler re-initialisation
    if thr is not None:
        _HIGHS_THREADS[0] = thr
    native = {"output_flag": bool(opts["verbose"])}
    if opts["problem_class"] in ("LP", "QP"):
        # Integer variables that are all fixed make the model continuous, but Pyomo's highs
        # interface still declares them integer and refuses a quadratic objective ("Cannot
        # solve MIQP"): relax their domain for the solve and restore it afterwards.
        import pyomo.environ as pe

        fixed_int = [v for v in model.component_data_objects(pe.Var, active=True) if v.fixed and v.is_integer()]
        domains = [v.domain for v in fixed_int]
        for v in fixed_int:
            v.domain = pe.Reals
        try:
            return _run_pyomo("highs", "highs", _highs_version, model, opts, native)
        finally:
            for v, dom in zip(fixed_int, domains):
                v.domain = dom
    return _run_pyomo("highs", "highs", _highs_version, model, opts, native)


register_backend(Backend(
    name="highs", classes=frozenset({"LP", "MILP", "QP"}), module="highspy", run=_run_highs,
    version=_highs_version, description="HiGHS (LP, MILP, convex QP by active set); not MIQP", aliases=("appsi_highs",)))


# ------------------------------------------------------------------------- SCIP
def _scip_version():
    import pyscipopt

    return f"{pyscipopt.Model().version()} (PySCIPOpt {pyscipopt.__version__})"


def _run_scip(model, opts):
    # Keep SCIP quiet: its log goes through a pipe and blocks once it exceeds ~64 KiB.
    native = {"display/verblevel": 4 if opts["verbose"] else 0}
    if opts["verbose"]:
        native["display/freq"] = 10000
    return _run_pyomo("scip", "scip_direct", _scip_version, model, opts, native, warm_key="warmstart_discrete_vars")


register_backend(Backend(
    name="scip", classes=frozenset({"LP", "MILP", "QP", "MIQP", "QCQP", "MIQCQP", "SOS"}), module="pyscipopt",
    run=_run_scip, version=_scip_version, description="SCIP (LP, MILP, QP, MIQP, QCQP; SOS)",
    aliases=("scip_direct", "scip_persistent")))


# --------------------------------------------------------------------- Gurobi
def _gurobi_version():
    import gurobipy

    return ".".join(map(str, gurobipy.gurobi.version()))


def _run_gurobi(model, opts):
    return _run_pyomo("gurobi", "gurobi_direct", _gurobi_version, model, opts,
                      {"OutputFlag": int(bool(opts["verbose"]))}, warm_key="warmstart_discrete_vars")


register_backend(Backend(
    # no INDICATOR: Pyomo's gurobi_direct would not see milopt's indicator declarations (scip_native.py)
    name="gurobi", classes=frozenset({"LP", "MILP", "QP", "MIQP", "QCQP", "MIQCQP", "SOS"}),
    module="gurobipy", run=_run_gurobi, version=_gurobi_version,
    description="Gurobi (commercial; optional, used when gurobipy is installed)"))
