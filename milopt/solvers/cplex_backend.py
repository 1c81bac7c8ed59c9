r"""CPLEX backend: the matrix form handed to IBM ILOG CPLEX through its own Python API (``cplex``).

No file round trip and no Pyomo solver interface: :class:`milopt.matrix.MatrixForm` becomes
CPLEX's model directly (docs/backends.md).

.. math::

    \min/\max\ c^\top x + \tfrac12 x^\top Q x + c_0 \quad\text{s.t.}\quad
    \ell^A \le A x \le u^A,\ \ \ell_k \le a_k^\top x + x^\top T_k x \le u_k,\ \
    z_r = v_r \Rightarrow \ell^I_r \le g_r^\top x \le u^I_r,\ \ \text{SOS},\ \ x \in [\ell^x, u^x]

* objective: CPLEX states it as :math:`c^\top x + \tfrac12 x^\top Q x` with the same full
  symmetric :math:`Q` (``objective.set_quadratic``, column by column), the constant through
  ``objective.set_offset``, the sense through ``objective.set_sense``;
* linear rows: senses ``E``/``L``/``G`` and ``R`` (``rhs ≤ a'x ≤ rhs + range``) for two-sided
  rows, so a range is one CPLEX row; free rows are left out;
* quadratic rows: ``quadratic_constraints.add`` takes each term :math:`q\,x_i x_j` as the triple
  :math:`(i, j, q)` (no ½, no symmetrisation — checked: :math:`x^2 - yz \le 0` gives the rotated
  cone); a two-sided row becomes two rows.  CPLEX solves convex quadratic rows and second-order
  cones only (error 5002 otherwise: the backend says so in one line);
* a non-convex quadratic objective is solved to global optimality (``optimalitytarget = 3``)
  after CPLEX's convexity check refuses it;
* indicator rows: ``indicator_constraints.add_batch`` (``complemented = 1`` when the row is
  active at ``z = 0``); SOS: ``SOS.add`` with the set's weights; branching priorities:
  ``order.set`` (higher first, as in the matrix form);
* warm start: ``MIP_starts.add`` with the known entries of ``opts.x0`` (effort level auto);
* incumbent trajectory: a generic callback in the *candidate* context (every new integer
  feasible point, including heuristic ones and the MIP start), filtered to improving values;
* limits: ``timelimit`` is what is left of ``opts.time_limit`` after the model is built,
  ``mip.tolerances.mipgap``, ``threads``; native options by parameter path
  (``{"mip.strategy.search": 1}``).

Licence: the ``cplex`` wheel on PyPI is the Community Edition, limited to 1,000 variables and
1,000 constraints (linear, quadratic and indicator rows counted together; measured: 1,000
variables solve, 1,001 raise CPLEX Error 1016).  Whether the installed library is that edition
is probed once per process with a 1,001-variable model; only then does ``skip`` refuse a larger
instance before building it.  A licence refusal during the solve is translated into one line.
"""
from __future__ import annotations

import sys

import numpy as np

from milopt.solvers import rewrites as rw
from milopt.solvers._commercial import (CommercialBackend, csr_rows, integer_codes, licence_message, licence_skip, native_rows,
                                        priority_columns, ranged_rows, start_pairs)
from milopt.solvers.backend import Outcome, error_result, one_line, quiet_output
from milopt.solvers.result import Termination as T

#: CPLEX solution status codes (CPX_STAT_*, CPXMIP_*) → Termination
STATUS_MAP = {
    1: T.OPTIMAL,                    # optimal
    2: T.UNBOUNDED,                  # unbounded
    3: T.INFEASIBLE,                 # infeasible
    4: T.INFEASIBLE_OR_UNBOUNDED,    # infeasible_or_unbounded
    5: T.OPTIMAL,                    # optimal_infeasible (optimal, infeasibilities after unscaling)
    6: T.ERROR,                      # num_best (numerical difficulties)
    10: T.ITERATION_LIMIT,           # abort_iteration_limit
    11: T.TIME_LIMIT,                # abort_time_limit
    12: T.ITERATION_LIMIT,           # abort_obj_limit
    13: T.INTERRUPTED,               # abort_user (Ctrl-C)
    20: T.UNBOUNDED,                 # optimal_face_unbounded
    21: T.ITERATION_LIMIT,           # abort_primal_obj_limit
    22: T.ITERATION_LIMIT,           # abort_dual_obj_limit
    23: T.UNKNOWN,                   # feasible (non-convex QP solved locally)
    24: T.CONVERGED,                 # first_order (a local optimum of a non-convex QP: no proof)
    25: T.TIME_LIMIT,                # abort_dettime_limit
    101: T.OPTIMAL,                  # MIP_optimal
    102: T.OPTIMAL,                  # optimal_tolerance (within the relative / absolute gap)
    103: T.INFEASIBLE,               # MIP_infeasible
    104: T.ITERATION_LIMIT,          # solution_limit
    105: T.ITERATION_LIMIT,          # node_limit_feasible
    106: T.ITERATION_LIMIT,          # node_limit_infeasible
    107: T.TIME_LIMIT,               # MIP_time_limit_feasible
    108: T.TIME_LIMIT,               # MIP_time_limit_infeasible
    109: T.ERROR,                    # fail_feasible
    110: T.ERROR,                    # fail_infeasible
    111: T.ERROR,                    # mem_limit_feasible
    112: T.ERROR,                    # mem_limit_infeasible
    113: T.INTERRUPTED,              # MIP_abort_feasible
    114: T.INTERRUPTED,              # MIP_abort_infeasible
    115: T.OPTIMAL,                  # MIP_optimal_infeasible
    116: T.ERROR,                    # fail_feasible_no_tree
    117: T.ERROR,                    # fail_infeasible_no_tree
    118: T.UNBOUNDED,                # MIP_unbounded
    119: T.INFEASIBLE_OR_UNBOUNDED,  # MIP_infeasible_or_unbounded
    127: T.UNKNOWN,                  # MIP_feasible
    131: T.TIME_LIMIT,               # MIP_dettime_limit_feasible
    132: T.TIME_LIMIT,               # MIP_dettime_limit_infeasible
    133: T.UNBOUNDED,                # relaxation_unbounded
}

#: Community Edition limits (measured: CPLEX Error 1016 past them)
COMMUNITY_VARIABLES = 1000
COMMUNITY_CONSTRAINTS = 1000
LICENCE_ERRORS = {1016}  # CPXERR_RESTRICTED_VERSION ("Community Edition. Problem size limits exceeded")
FULL_LICENCE = ("install the CPLEX Python API of a full IBM ILOG CPLEX Optimization Studio (pip install "
                "<studio>/cplex/python) in place of the community wheel, or use another solver (--solver scip)")
#: CPLEX's infinite bound
CPLEX_INF = 1e20


def native_size(mf) -> tuple[int, int]:
    """Variables and constraints of the CPLEX model built from ``mf`` (the licence counts):
    linear rows except free ones (a range is one row), quadratic and indicator rows split into
    their one-sided pieces."""
    return int(mf.n_cols), native_rows(mf, split_ranges=False)


def _quiet(c, verbose: bool) -> None:
    stream = sys.stderr if verbose else None
    for setter in (c.set_results_stream, c.set_log_stream, c.set_warning_stream, c.set_error_stream):
        setter(stream)


def _code(exc) -> int | None:
    args = getattr(exc, "args", ())
    return args[2] if len(args) >= 3 and isinstance(args[2], int) else None


def _probe_community() -> bool:
    """True when a 1,001-variable LP is refused with the Community Edition's error 1016."""
    import cplex
    from cplex.exceptions import CplexSolverError

    with quiet_output():
        c = cplex.Cplex()
        try:
            _quiet(c, False)
            c.variables.add(obj=[1.0] * (COMMUNITY_VARIABLES + 1))
            try:
                c.solve()
            except CplexSolverError as exc:
                return _code(exc) in LICENCE_ERRORS
            return False
        finally:
            c.end()


def _limit_message(mf) -> str:
    cols, rows = native_size(mf)
    return licence_message("cplex", "CPLEX Community Edition (a size-limited free licence)",
                           f"{COMMUNITY_VARIABLES:,} variables and {COMMUNITY_CONSTRAINTS:,} constraints",
                           {"variables": cols, "constraints": rows}, FULL_LICENCE)


class _Candidates:
    """Generic callback (candidate context): record each new integer feasible point's objective."""

    def __init__(self, incumbents):
        self.incumbents = incumbents

    def invoke(self, context):
        if context.in_candidate() and context.is_candidate_point():
            self.incumbents.add(context.get_candidate_objective(), context.get_candidate_point)


def _sparse_pairs(A) -> list:
    """``[[indices, values], ...]`` of the rows of ``A`` (duplicates summed), as CPLEX's
    ``lin_expr`` takes them."""
    ptr, idx, val = csr_rows(A)
    il, vl = np.split(idx, ptr[1:-1]), np.split(val, ptr[1:-1])
    return [[i.tolist(), v.tolist()] for i, v in zip(il, vl)]


def _merge(idx, val) -> tuple[list, list]:
    """Linear terms with repeated columns summed (CPLEX refuses duplicate indices)."""
    idx = np.asarray(idx, dtype=np.int64)
    val = np.asarray(val, dtype=float)
    if idx.size == 0:
        return [], []
    u, inv = np.unique(idx, return_inverse=True)
    return u.tolist(), np.bincount(inv, weights=val).tolist()


def _load(c, mf) -> None:
    """Columns, objective and every kind of row of ``mf`` into the empty problem ``c``."""
    codes = integer_codes(mf)
    c.variables.add(obj=np.asarray(mf.c, dtype=float).tolist(), lb=np.asarray(mf.col_lb, float).tolist(),
                    ub=np.asarray(mf.col_ub, float).tolist(),
                    types="".join(codes.tolist()) if np.any(codes != "C") else "")
    c.objective.set_sense(c.objective.sense.maximize if mf.sense < 0 else c.objective.sense.minimize)
    if mf.c0:
        c.objective.set_offset(float(mf.c0))
    if mf.has_quadratic_objective():
        ptr, idx, val = csr_rows(mf.Q)  # rows of the symmetric Q = its columns
        il, vl = idx.tolist(), val.tolist()
        c.objective.set_quadratic([[il[a:b], vl[a:b]] for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist())])
    if mf.A.shape[0]:  # one CPLEX row each (a range is sense R: rhs <= a'x <= rhs + range)
        sense, rhs, rng = ranged_rows(mf.row_lb, mf.row_ub, range_from="lb")
        c.linear_constraints.add(lin_expr=_sparse_pairs(mf.A), senses="".join(sense.tolist()),
                                 rhs=rhs.tolist(), range_values=rng.tolist())
    for q in mf.qrows:  # one-sided (rewrites.ONE_SIDED_QUADRATIC)
        lin_i, lin_v = _merge(q.lin_idx, q.lin_val)
        sn, r = ("E", q.lb) if q.lb == q.ub else ("L", q.ub) if np.isfinite(q.ub) else ("G", q.lb)
        c.quadratic_constraints.add(lin_expr=[lin_i, lin_v],
                                    quad_expr=[np.asarray(q.qi).tolist(), np.asarray(q.qj).tolist(),
                                               np.asarray(q.qv, dtype=float).tolist()],
                                    sense=sn, rhs=float(r), name=q.name)
    if mf.n_indicators:  # one-sided (rewrites.ONE_SIDED_INDICATORS)
        sense, rhs, _ = ranged_rows(mf.ind_lb, mf.ind_ub)
        c.indicator_constraints.add_batch(
            lin_expr=_sparse_pairs(mf.ind_A), sense=sense.tolist(), rhs=rhs.tolist(),
            indvar=np.asarray(mf.ind_binary, dtype=np.int64).tolist(),
            complemented=np.where(np.asarray(mf.ind_active) == 1, 0, 1).tolist())
    for k, s in enumerate(mf.sos):
        c.SOS.add(type=str(int(s.level)), SOS=[np.asarray(s.idx).tolist(), np.asarray(s.weights, dtype=float).tolist()],
                  name=s.name or f"sos{k}")
    cols, pri = priority_columns(mf)
    if cols.size:
        d = c.order.branch_direction.default
        c.order.set([(j, p, d) for j, p in zip(cols.tolist(), pri.tolist())])


class CplexBackend(CommercialBackend):
    """CPLEX through its Python API (see the module docstring)."""

    name = module = "cplex"
    summary = "IBM ILOG CPLEX through its Python API (LP, MILP, QP, MIQP, convex QCQP/MIQCQP; SOS, indicators)"
    limits = "PyPI wheel = Community Edition: <= 1,000 variables and <= 1,000 constraints"
    status_map = STATUS_MAP
    rewrites = (rw.DROP_FREE_ROWS, rw.ONE_SIDED_QUADRATIC, rw.ONE_SIDED_INDICATORS, rw.finite_bounds(CPLEX_INF))
    option_hint = "a CPLEX parameter path as in the Python API, e.g. mip.strategy.search=1"
    error_names = ("exceptions.CplexError",)

    def cannot_take(self, mf, opts):
        """Refuse, before building, an instance over the Community Edition's limits when that is
        the installed edition (probed once); a full edition takes everything."""
        cols, rows = native_size(mf)
        over = cols > COMMUNITY_VARIABLES or rows > COMMUNITY_CONSTRAINTS
        return licence_skip(_limit_message(mf) if over else None, "cplex", _probe_community)

    def open(self, mf, opts):
        import cplex

        c = cplex.Cplex()
        _quiet(c, bool(opts.verbose))
        return c

    def build(self, c, mf, opts, incumbents):
        _load(c, mf)
        extra = {"cplex_variables": mf.n_cols}
        if mf.is_mip():
            if opts.warm_start and opts.x0 is not None:
                idx, vals = start_pairs(opts.x0)
                if idx.size:
                    c.MIP_starts.add([idx.tolist(), vals.tolist()], c.MIP_starts.effort_level.auto, "milopt_start")
                extra["warm_start_entries"] = int(idx.size)
            import cplex

            c.set_callback(_Candidates(incumbents), cplex.callbacks.Context.id.candidate)
        return extra

    def set_common(self, c, mf, opts):
        if opts.threads is not None:
            c.parameters.threads.set(int(opts.threads))
        if opts.mip_gap is not None:
            c.parameters.mip.tolerances.mipgap.set(float(opts.mip_gap))

    def set_option(self, c, name, value):
        obj = c.parameters
        for part in name.split("."):
            obj = getattr(obj, part)
        obj.set(value)

    def option_names(self, c):
        return [repr(p).split(".", 1)[1] for p, _ in c.parameters.get_all()]

    def set_time_limit(self, c, seconds):
        c.parameters.timelimit.set(seconds)

    def optimize(self, c, mf, opts, extra):
        from cplex.exceptions import CplexSolverError

        try:
            c.solve()
        except CplexSolverError as exc:
            # a non-convex objective: CPLEX solves it to global optimality when asked to
            if _code(exc) == 5002 and "objective" in str(exc) and not mf.qrows:
                c.parameters.optimalitytarget.set(3)
                extra["optimalitytarget"] = 3
                c.solve()
            else:
                raise

    def outcome(self, c, mf, extra) -> Outcome:
        sol = c.solution
        status = int(sol.get_status())
        has = sol.get_solution_type() != sol.type.none and bool(sol.is_primal_feasible())
        ptype = c.get_problem_type()
        bound = nodes = None
        if ptype in (c.problem_type.MILP, c.problem_type.MIQP, c.problem_type.MIQCP):
            try:
                bound = float(sol.MIP.get_best_objective())
            except Exception:
                bound = None
            if bound is not None and abs(bound) >= CPLEX_INF:
                bound = None
            nodes = int(sol.progress.get_num_nodes_processed())
        iters = int(sol.progress.get_num_iterations())
        try:
            iters += int(sol.progress.get_num_barrier_iterations())
        except Exception:
            pass
        extra.update(status_code=status, problem_type=c.problem_type[ptype])
        return Outcome(code=status, x=np.asarray(sol.get_values(), dtype=float) if has else None,
                       objective=float(sol.get_objective_value()) if has else None, bound=bound, iterations=iters,
                       nodes=nodes, status_text=sol.get_status_string(), extra=extra)

    def failure(self, exc, mf, incumbents):
        from cplex.exceptions import CplexSolverError

        code = _code(exc) if isinstance(exc, CplexSolverError) else None
        if code in LICENCE_ERRORS:
            return error_result(_limit_message(mf), licence=True, trajectory=incumbents.points)
        if code == 5002:
            return error_result(f"cplex: {' '.join(str(exc).split())}: CPLEX solves convex quadratic rows and "
                                "second-order cones only; use gurobi, xpress or scip for this model")
        return error_result(f"cplex: {one_line(exc)}", trajectory=incumbents.points)

    def close(self, c):
        c.end()


BACKEND = CplexBackend()
