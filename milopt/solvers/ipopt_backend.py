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

from milopt.solvers import rewrites as rw
from milopt.solvers.backend import About, Backend, Capabilities, Outcome, map_status
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


def _start_point(mf, x0) -> np.ndarray:
    x0 = np.full(mf.c.size, np.nan) if x0 is None else np.asarray(x0, dtype=float)
    x0 = np.where(np.isfinite(x0), x0, 0.0)
    return np.clip(x0, mf.col_lb, mf.col_ub)


class _Session:
    """The cyipopt problem, its callbacks, the log file and the answer."""

    def __init__(self, prob, cb, history, logfile):
        self.prob, self.cb, self.history, self.logfile = prob, cb, history, logfile
        self.x = self.info = None
        self.t1 = 0.0


class IpoptBackend(Backend):
    """Ipopt through cyipopt (see the module docstring)."""

    name = "ipopt"
    module = "cyipopt"
    caps = Capabilities(classes=frozenset({"LP", "QP"}), warm_start=True, isolated=True, certify=True)
    about = About(description="Ipopt interior point via cyipopt (continuous LP/QP with linear constraints; exact "
                              "derivatives), in a child process with a hard deadline",
                  install="included (cyipopt-wheels)",
                  limits="continuous problems with linear rows (a local method: proves optimality for convex "
                         "problems only)")
    status_map = STATUS_MAP
    #: Ipopt minimises, and its infinite bound is 1e19 (nlp_lower/upper_bound_inf)
    rewrites = (rw.MINIMISE, rw.finite_bounds(IPOPT_INF, rows=True))
    option_hint = "an Ipopt option name, e.g. tol=1e-9"

    def version(self) -> str:
        return _ipopt_version()

    def cannot_take(self, mf, opts):
        if mf.qrows:
            return True, "ipopt (milopt's bridge) takes linear rows only, not quadratic constraints; use --solver scip"
        if mf.is_mip():
            return True, "ipopt solves continuous problems only; use --solver scip for integer models"
        return False, ""

    def open(self, mf, opts):
        import cyipopt

        history: list = []
        cb = _QPCallbacks(mf.c, mf.c0, mf.Q, mf.A, history)
        fd, logfile = tempfile.mkstemp(prefix="milopt_ipopt_", suffix=".log")
        os.close(fd)
        try:
            prob = cyipopt.Problem(n=mf.n_cols, m=mf.A.shape[0], problem_obj=cb, lb=mf.col_lb, ub=mf.col_ub,
                                   cl=mf.row_lb, cu=mf.row_ub)
        except Exception:
            os.remove(logfile)
            raise
        return _Session(prob, cb, history, logfile)

    def build(self, s, mf, opts, incumbents):
        prob = s.prob
        prob.add_option("sb", "yes")  # no banner
        prob.add_option("print_level", 5 if opts.verbose else 0)
        prob.add_option("output_file", s.logfile)
        prob.add_option("file_print_level", 5)
        prob.add_option("mu_strategy", "adaptive")
        # linear rows and a quadratic objective: the Hessian is constant
        prob.add_option("hessian_constant", "yes")
        prob.add_option("jac_c_constant", "yes")
        prob.add_option("jac_d_constant", "yes")
        s.x0 = _start_point(mf, opts.x0 if opts.warm_start else None)
        return {"mu_strategy": dict(opts.options).get("mu_strategy", "adaptive")}

    def set_option(self, s, name, value):
        s.prob.add_option(name, value)

    def set_time_limit(self, s, seconds):
        s.prob.add_option("max_wall_time", float(seconds))

    def optimize(self, s, mf, opts, extra):
        s.t1 = time.perf_counter()
        s.x, s.info = s.prob.solve(s.x0)
        extra["setup_seconds"] = extra.get("build_seconds", 0.0)

    def outcome(self, s, mf, extra) -> Outcome:
        status = int(s.info["status"])
        term = map_status(STATUS_MAP, status, Termination.ERROR)
        x = np.asarray(s.x, dtype=float)
        viol = mf.violation(x)
        viol = max(viol["rows"], viol["bounds"])  # a returned point is a solution when it is (primal) feasible
        scale = max(1.0, float(np.max(np.abs(mf.row_lb[np.abs(mf.row_lb) < IPOPT_INF]), initial=1.0)))
        feasible = bool(np.all(np.isfinite(x))) and viol <= 1e-6 * scale
        has = term == Termination.OPTIMAL or (feasible and term not in (Termination.INFEASIBLE, Termination.UNBOUNDED))
        msg = s.info.get("status_msg", b"")
        msg = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        if status in _MESSAGES and (not msg or msg.lower().startswith("unknown")):
            msg = _MESSAGES[status]  # cyipopt has no text for some codes (e.g. -5, the wall-time limit)
        extra.update({"ipopt_status": status, "ipopt_message": msg, "max_violation": viol,
                      "acceptable": status == 1})
        mult = s.info.get("mult_g")
        return Outcome(code=status, termination=term, x=x if has else None,
                       row_dual=None if mult is None else -np.asarray(mult, dtype=float),  # L = f + g'λ: y = -λ
                       objective=s.cb.objective(x) if has else None,
                       iterations=s.history[-1]["iteration"] if s.history else None, status_text=msg, extra=extra,
                       log=_read(s.logfile), history=tuple({**h, "time": h["time"] - s.t1} for h in s.history))

    def close(self, s):
        try:
            os.remove(s.logfile)
        except OSError:
            pass


def _read(path) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


BACKEND = IpoptBackend()
