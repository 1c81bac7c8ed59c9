"""Ipopt backend: continuous LP/QP models solved by Ipopt through ``cyipopt`` (docs/ipopt.md).

Pyomo's own Ipopt interfaces need either an ``ipopt`` executable or the PyNumero ASL library;
neither exists here (the ``cyipopt-wheels`` wheel ships only the Ipopt shared library).  So
this bridge takes the model's matrix form (:class:`milopt.matrix.MatrixForm`)

.. math::

    \\min_x\\; c^\\top x + \\tfrac12 x^\\top Q x + c_0 \\quad\\text{s.t.}\\quad
    r_L \\le A x \\le r_U,\\; x_L \\le x \\le x_U

and hands Ipopt exact derivatives: gradient :math:`c + Qx`, the constant Jacobian :math:`A`
(sparse structure given once), and the Hessian of the Lagrangian
:math:`\\sigma_f Q` (lower triangle; the constraints are linear so their multipliers do not
enter it).  Options: ``mu_strategy=adaptive`` by default (measured: with Ipopt's
monotone default an SVM-shaped QP had not finished after 270 s, adaptive took 42 s),
``max_wall_time`` for the time limit, ``print_level=0`` and no banner unless ``verbose``.
Ipopt writes its log from C straight to the process's stdout, never through a pipe that
Python must drain, so the SCIP-style blocking cannot happen; the log kept in the result is
Ipopt's own ``output_file`` (a temporary file).  The solution is loaded back into the Pyomo
variables; integer models are refused by the driver (the backend declares LP and QP only).
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from milopt.solvers.backend import Backend, RawResult, map_status
from milopt.solvers.result import Termination

#: Ipopt's value for an infinite bound (its option nlp_lower/upper_bound_inf defaults to ±1e19)
IPOPT_INF = 1e19

#: ApplicationReturnStatus -> Termination
STATUS_MAP = {
    0: Termination.OPTIMAL,            # Solve_Succeeded
    1: Termination.CONVERGED,          # Solved_To_Acceptable_Level: only the looser tolerances, no proof
    2: Termination.INFEASIBLE,         # Infeasible_Problem_Detected
    3: Termination.ERROR,              # Search_Direction_Becomes_Too_Small
    4: Termination.UNBOUNDED,          # Diverging_Iterates
    5: Termination.INTERRUPTED,        # User_Requested_Stop
    6: Termination.UNKNOWN,            # Feasible_Point_Found (square problems)
    -1: Termination.ITERATION_LIMIT,   # Maximum_Iterations_Exceeded
    -2: Termination.ERROR,             # Restoration_Failed
    -3: Termination.ERROR,             # Error_In_Step_Computation
    -4: Termination.TIME_LIMIT,        # Maximum_CpuTime_Exceeded
    -5: Termination.TIME_LIMIT,        # Maximum_WallTime_Exceeded
    -10: Termination.ERROR,            # Not_Enough_Degrees_Of_Freedom
    -11: Termination.ERROR,            # Invalid_Problem_Definition
    -12: Termination.ERROR,            # Invalid_Option
    -13: Termination.ERROR,            # Invalid_Number_Detected
}


#: Ipopt's ApplicationReturnStatus names (IpReturnCodes_inc.h) with a short explanation
_MESSAGES = {
    0: "Solve_Succeeded: optimal solution found",
    1: "Solved_To_Acceptable_Level: solved to the acceptable (looser) tolerances",
    2: "Infeasible_Problem_Detected: the problem is (locally) infeasible",
    3: "Search_Direction_Becomes_Too_Small: no further progress possible",
    4: "Diverging_Iterates: the iterates diverge (unbounded problem?)",
    5: "User_Requested_Stop: stopped by a callback (interrupted)",
    6: "Feasible_Point_Found: a feasible point of a square problem",
    -1: "Maximum_Iterations_Exceeded: iteration limit reached",
    -2: "Restoration_Failed: the feasibility restoration phase failed",
    -3: "Error_In_Step_Computation: the step could not be computed",
    -4: "Maximum_CpuTime_Exceeded: CPU time limit reached",
    -5: "Maximum_WallTime_Exceeded: wall-clock time limit reached",
    -10: "Not_Enough_Degrees_Of_Freedom: more equality constraints than variables",
    -11: "Invalid_Problem_Definition: the problem data are invalid",
    -12: "Invalid_Option: an option value was rejected",
    -13: "Invalid_Number_Detected: NaN or infinity in the problem functions",
}


def _ipopt_version() -> str:
    import cyipopt

    v = getattr(cyipopt, "IPOPT_VERSION", None)
    iv = ".".join(map(str, v)) if v else "?"
    return f"{iv} (cyipopt {cyipopt.__version__})"


def _hessian(Q):
    """(Q for products, (rows, cols, values) of its lower triangle).  A Q that is dense over a
    block of columns (a kernel matrix held as a matrix objective) stays a dense block: products
    by BLAS, triangle indices by ``np.tril_indices`` instead of sparse conversions of n² entries."""
    Q = sp.csc_matrix(Q)
    cols = np.flatnonzero(np.diff(Q.indptr))
    m = cols.size
    if m and Q.nnz == m * m and cols[-1] - cols[0] == m - 1:
        k0 = int(cols[0])
        block = Q[:, k0:k0 + m]
        if np.array_equal(block.indices[:m], np.arange(k0, k0 + m)) and np.all(np.diff(block.indptr) == m):
            D = block.data.reshape(m, m).T          # column-major data -> row-major block (symmetric)
            r, c = np.tril_indices(m)
            return _DenseBlock(D, k0, Q.shape[0]), (r.astype(np.int32) + k0, c.astype(np.int32) + k0, D[r, c])
    Qc = sp.csr_matrix(Q)
    L = sp.tril(Qc, format="coo")
    return Qc, (L.row.astype(np.int32), L.col.astype(np.int32), L.data.astype(float))


class _DenseBlock:
    """A symmetric matrix that is zero except for a dense block on columns/rows k0..k0+m-1."""

    def __init__(self, D, k0, n):
        self.D, self.k0, self.n = np.ascontiguousarray(D), k0, n

    def __matmul__(self, x):
        out = np.zeros(self.n)
        s = slice(self.k0, self.k0 + self.D.shape[0])
        out[s] = self.D @ x[s]
        return out


class _QPCallbacks:
    """cyipopt callbacks for min cᵀx + ½xᵀQx + c0 s.t. linear rows (exact derivatives)."""

    def __init__(self, c, c0, Q, A, history: list):
        self.c = c
        self.c0 = c0
        self.Q = None if Q is None or Q.nnz == 0 else Q
        A = sp.coo_matrix(A)
        self.jrow, self.jcol, self.jval = A.row.astype(np.int32), A.col.astype(np.int32), A.data.astype(float)
        self.A = sp.csr_matrix(A)
        if self.Q is not None:
            self.Q, (self.hrow, self.hcol, self.hval) = _hessian(self.Q)
        else:
            self.hrow = self.hcol = np.zeros(0, dtype=np.int32)
            self.hval = np.zeros(0)
        self.history = history

    def objective(self, x):
        f = float(self.c @ x) + self.c0
        if self.Q is not None:
            f += 0.5 * float(x @ (self.Q @ x))
        return f

    def gradient(self, x):
        return self.c + (self.Q @ x if self.Q is not None else 0.0)

    def constraints(self, x):
        return self.A @ x

    def jacobian(self, x):
        return self.jval

    def jacobianstructure(self):
        return self.jrow, self.jcol

    def hessian(self, x, lagrange, obj_factor):
        return obj_factor * self.hval

    def hessianstructure(self):
        return self.hrow, self.hcol

    def intermediate(self, alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm, regularization_size,
                     alpha_du, alpha_pr, ls_trials):
        self.history.append({"iteration": int(iter_count), "objective": float(obj_value), "inf_pr": float(inf_pr),
                             "inf_du": float(inf_du), "mu": float(mu), "time": time.perf_counter()})
        return True


def _finite(v: np.ndarray) -> np.ndarray:
    return np.clip(np.nan_to_num(v, posinf=IPOPT_INF, neginf=-IPOPT_INF), -IPOPT_INF, IPOPT_INF)


def _start_point(mf, x0) -> np.ndarray:
    x0 = np.full(mf.c.size, np.nan) if x0 is None else np.asarray(x0, dtype=float)
    x0 = np.where(np.isfinite(x0), x0, 0.0)
    return np.clip(x0, mf.col_lb, mf.col_ub)


def _skip(mf, opts):
    if mf.qrows:
        return True, "ipopt (milopt's bridge) takes linear rows only, not quadratic constraints; use --solver scip"
    if np.any(mf.integrality) or mf.sos or mf.n_indicators:
        return True, "ipopt solves continuous problems only; use --solver scip for integer models"
    return False, ""


def solve_matrix(mf, opts) -> RawResult:
    import cyipopt

    t0 = time.perf_counter()
    sgn = float(mf.sense)  # Ipopt minimises: a maximisation is solved as min of the negated objective
    c, c0 = sgn * mf.c, sgn * mf.c0
    Q = None if mf.Q is None else sgn * mf.Q
    n, m = mf.c.size, mf.A.shape[0]
    history: list = []
    cb = _QPCallbacks(c, c0, Q, mf.A, history)
    verbose = bool(opts.verbose)
    fd, logfile = tempfile.mkstemp(prefix="milopt_ipopt_", suffix=".log")
    os.close(fd)
    try:
        prob = cyipopt.Problem(n=n, m=m, problem_obj=cb, lb=_finite(mf.col_lb), ub=_finite(mf.col_ub),
                               cl=_finite(mf.row_lb), cu=_finite(mf.row_ub))
        prob.add_option("sb", "yes")  # no banner
        prob.add_option("print_level", 5 if verbose else 0)
        prob.add_option("output_file", logfile)
        prob.add_option("file_print_level", 5)
        prob.add_option("mu_strategy", "adaptive")
        # linear rows and a quadratic objective: the Hessian is constant
        prob.add_option("hessian_constant", "yes")
        prob.add_option("jac_c_constant", "yes")
        prob.add_option("jac_d_constant", "yes")
        if opts.time_limit is not None:  # the set-up above counts against the limit
            prob.add_option("max_wall_time", max(0.01, float(opts.time_limit) - (time.perf_counter() - t0)))
        for k, v in dict(opts.options).items():  # native options last: they override the defaults
            prob.add_option(str(k), v)
        x0 = _start_point(mf, opts.x0 if opts.warm_start else None)
        t1 = time.perf_counter()
        x, info = prob.solve(x0)
        solve_wall = time.perf_counter() - t1
    finally:
        try:
            with open(logfile, errors="replace") as fh:
                log = fh.read()
        except OSError:
            log = ""
        os.remove(logfile)
    status = int(info["status"])
    term = map_status(STATUS_MAP, status, Termination.ERROR)
    x = np.asarray(x, dtype=float)
    # a returned point counts as a solution when it is (primal) feasible
    viol = 0.0
    if m:
        ax = mf.A @ x
        viol = max(viol, float(np.max(np.maximum(mf.row_lb - ax, 0.0), initial=0.0)),
                   float(np.max(np.maximum(ax - mf.row_ub, 0.0), initial=0.0)))
    viol = max(viol, float(np.max(np.maximum(mf.col_lb - x, 0.0), initial=0.0)),
               float(np.max(np.maximum(x - mf.col_ub, 0.0), initial=0.0)))
    feasible = bool(np.all(np.isfinite(x))) and viol <= 1e-6 * max(1.0, float(np.max(np.abs(mf.row_lb[np.isfinite(mf.row_lb)]), initial=1.0)))
    has_sol = term == Termination.OPTIMAL or (feasible and term not in (Termination.INFEASIBLE, Termination.UNBOUNDED))
    obj = sgn * cb.objective(x) if has_sol else None
    iters = history[-1]["iteration"] if history else None
    msg = info.get("status_msg", b"")
    msg = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
    if status in _MESSAGES and (not msg or msg.lower().startswith("unknown")):
        msg = _MESSAGES[status]  # cyipopt has no text for some codes (e.g. -5, the wall-time limit)
    extra = {"ipopt_status": status, "ipopt_message": msg, "max_violation": viol, "solve_seconds": solve_wall,
             "setup_seconds": t1 - t0, "acceptable": status == 1,
             "mu_strategy": dict(opts.options).get("mu_strategy", "adaptive")}
    hist = tuple({**h, "time": h["time"] - t1} for h in history)
    return RawResult(termination=term, x=x if has_sol else None, objective=obj,
                     bound=obj if term == Termination.OPTIMAL else None, iterations=iters, log=log,
                     status_text=msg, extra=extra, history=hist)


BACKEND = Backend(
    name="ipopt", classes=frozenset({"LP", "QP"}), module="cyipopt", version=_ipopt_version,
    solve_matrix=solve_matrix, status_map=STATUS_MAP, skip=_skip, warm_start=True,
    install="included (cyipopt-wheels)", limits="continuous problems with linear rows (a local method: proves "
    "optimality for convex problems only)",
    description="Ipopt interior point via cyipopt (continuous LP/QP with linear constraints; exact derivatives)")
