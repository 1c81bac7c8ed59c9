"""HiGHS backend: LP, MILP and convex QP through highspy, built from the matrix form.

The :class:`~milopt.matrix.MatrixForm` is handed to HiGHS in one ``passModel`` call (column-wise
constraint matrix, lower-triangular Hessian), so no Pyomo interface sits in between.  HiGHS
solves MIQP and quadratic rows not at all: the backend declares LP, MILP, QP and the driver
refuses the rest before solving.

Hazards handled (docs/solvers.md):

* HiGHS prints its banner on standard output when a ``Highs()`` object is created, before any
  option can be set: the construction runs with file descriptor 1 pointed at stderr
  (:func:`~milopt.solvers.backend.quiet_stdout`), and so does the solve when ``verbose`` (HiGHS
  logs to stdout), so ``--json`` output stays one JSON document.
* HiGHS's global thread scheduler cannot change its thread count inside one process without
  ``Highs.resetGlobalScheduler(True)``: done whenever the requested count changes.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from milopt.errors import InvalidDataError
from milopt.solvers.backend import About, Backend, Capabilities, Outcome, map_status, quiet_stdout
from milopt.solvers.result import Termination

# the QP regularisations of polish, in order: none, then one far below the optimality check's tolerance
_POLISH_REGULARISATION = (0.0, 1e-12)

#: HighsModelStatus name -> Termination
STATUS_MAP = {
    "kOptimal": Termination.OPTIMAL,
    "kInfeasible": Termination.INFEASIBLE,
    "kUnboundedOrInfeasible": Termination.INFEASIBLE_OR_UNBOUNDED,
    "kUnbounded": Termination.UNBOUNDED,
    "kTimeLimit": Termination.TIME_LIMIT,
    "kIterationLimit": Termination.ITERATION_LIMIT,
    "kSolutionLimit": Termination.ITERATION_LIMIT,
    "kObjectiveBound": Termination.ITERATION_LIMIT,
    "kObjectiveTarget": Termination.ITERATION_LIMIT,
    "kInterrupt": Termination.INTERRUPTED,
    "kHighsInterrupt": Termination.INTERRUPTED,
    "kModelEmpty": Termination.OPTIMAL,
    "kMemoryLimit": Termination.ERROR,
    "kLoadError": Termination.ERROR,
    "kModelError": Termination.ERROR,
    "kPresolveError": Termination.ERROR,
    "kSolveError": Termination.ERROR,
    "kPostsolveError": Termination.ERROR,
    "kNotset": Termination.UNKNOWN,
    "kUnknown": Termination.UNKNOWN,
}

#: HiGHS refuses matrix, cost and Hessian values of this size or more (its large_matrix_value)
HIGHS_LARGE_VALUE = 1e15

_THREADS = [None]


def new_highs():
    """A quiet ``highspy.Highs`` (its banner kept off stdout)."""
    import highspy

    with quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def version() -> str:
    import highspy

    try:
        return highspy.Highs.version()
    except TypeError:
        return new_highs().version()


def check_magnitudes(mf) -> None:
    """Refuse, with a message naming the source, a model whose coefficients a solver cannot hold
    (non-finite, or beyond HiGHS's 1e15 limit: data near 1e300 with standardisation off)."""
    parts = [("constraint matrix", sp.csr_matrix(mf.A).data), ("objective", np.asarray(mf.c))]
    if mf.Q is not None:
        parts.append(("quadratic objective", sp.csr_matrix(mf.Q).data))
    for what, vals in parts:
        if vals.size == 0:
            continue
        big = np.abs(vals)
        if not np.all(np.isfinite(big)):
            raise InvalidDataError(f"the model's {what} holds infinite or NaN coefficients (from data values too "
                                   "large to multiply); rescale the features or keep --set scale=true")
        if big.max() >= HIGHS_LARGE_VALUE:
            raise InvalidDataError(f"the model's {what} holds coefficients up to {big.max():.3g} (solvers accept "
                                   f"less than {HIGHS_LARGE_VALUE:.0e}); the data has values of that size: rescale the "
                                   "features or keep --set scale=true")


def to_highs(mf, names: bool = False, h=None):
    """A ``highspy.Highs`` object holding the problem (quiet).  Linear rows and a quadratic
    objective only: the caller refuses quadratic rows, SOS and indicators first."""
    import highspy

    h = h or new_highs()
    lp = highspy.HighsLp()
    n = mf.c.size
    lp.num_col_ = n
    lp.num_row_ = mf.A.shape[0]
    lp.col_cost_ = np.asarray(mf.c, dtype=float)
    lp.col_lower_ = np.asarray(mf.col_lb, dtype=float)
    lp.col_upper_ = np.asarray(mf.col_ub, dtype=float)
    lp.row_lower_ = np.asarray(mf.row_lb, dtype=float)
    lp.row_upper_ = np.asarray(mf.row_ub, dtype=float)
    lp.offset_ = float(mf.c0)
    lp.sense_ = highspy.ObjSense.kMinimize if mf.sense == 1 else highspy.ObjSense.kMaximize
    Acsc = sp.csc_matrix(mf.A)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = Acsc.indptr
    lp.a_matrix_.index_ = Acsc.indices
    lp.a_matrix_.value_ = Acsc.data
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = mf.A.shape[0]
    if np.any(mf.integrality):
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in np.asarray(mf.integrality, dtype=bool)]
    if names:
        lp.col_names_ = [str(s) for s in mf.col_names]
        lp.row_names_ = [str(s) for s in mf.row_names]
    model = highspy.HighsModel()
    model.lp_ = lp
    if mf.Q is not None and mf.Q.nnz:
        L = sp.tril(mf.Q, format="csc")
        hess = highspy.HighsHessian()
        hess.dim_ = n
        hess.format_ = highspy.HessianFormat.kTriangular
        hess.start_ = L.indptr
        hess.index_ = L.indices
        hess.value_ = L.data
        model.hessian_ = hess
    st = h.passModel(model)
    if st == highspy.HighsStatus.kError:
        raise InvalidDataError("HiGHS refused the model (coefficients or bounds it cannot represent); "
                               "rescale the data or keep feature standardisation on")
    return h


class _Session:
    """The ``Highs`` object and what the solve needs to remember."""

    def __init__(self, h):
        self.h, self.incumbents = h, None


class HighsBackend(Backend):
    """HiGHS through highspy (see the module docstring)."""

    name = "highs"
    module = "highspy"
    aliases = ("appsi_highs",)
    caps = Capabilities(classes=frozenset({"LP", "MILP", "QP"}), trajectory=True, warm_start=True, certify=True)
    about = About(description="HiGHS (LP, MILP, convex QP by active set); not MIQP", install="included (highspy)",
                  limits="no MIQP, no quadratic rows, SOS or indicators")
    status_map = STATUS_MAP
    option_hint = "a HiGHS option name, e.g. presolve=off"

    def version(self) -> str:
        return version()

    def cannot_take(self, mf, opts):
        if mf.qrows:
            return True, "highs cannot solve problems with quadratic constraints"
        if mf.sos or mf.n_indicators:
            return True, "highs takes neither SOS nor indicator constraints"
        if np.any(mf.integrality) and mf.has_quadratic_objective():
            return True, "highs cannot solve MIQP problems (integer variables with a quadratic objective)"
        return False, ""

    def open(self, mf, opts):
        import highspy

        check_magnitudes(mf)
        want = 0 if opts.threads is None else int(opts.threads)  # 0: HiGHS's automatic count
        if _THREADS[0] is not None and want != _THREADS[0]:
            highspy.Highs.resetGlobalScheduler(True)  # a thread-count change needs a new scheduler
        _THREADS[0] = want
        return _Session(new_highs())

    def build(self, s, mf, opts, incumbents):
        import highspy

        h = to_highs(mf, h=s.h)
        if opts.verbose:
            h.setOptionValue("output_flag", True)
        if opts.warm_start and opts.x0 is not None and np.any(mf.integrality):
            sol = highspy.HighsSolution()
            sol.col_value = list(map(float, np.where(np.isnan(opts.x0), 0.0, opts.x0)))
            sol.value_valid = True
            h.setSolution(sol)
        if np.any(mf.integrality):
            h.cbMipImprovingSolution.subscribe(
                lambda e: incumbents.add(float(e.data_out.objective_function_value)))
        s.incumbents = incumbents
        return {}

    def set_common(self, s, mf, opts):
        if opts.mip_gap is not None:
            s.h.setOptionValue("mip_rel_gap", float(opts.mip_gap))
        if opts.threads is not None:
            s.h.setOptionValue("threads", int(opts.threads))

    def set_option(self, s, name, value):
        import highspy

        if s.h.setOptionValue(name, value) == highspy.HighsStatus.kError:
            raise ValueError("HiGHS refused the value" if name in self.option_names(s) else "no such option")

    def option_names(self, s):
        return [k for k in dir(s.h.getOptions()) if not k.startswith("_")]

    def set_time_limit(self, s, seconds):
        s.h.setOptionValue("time_limit", float(seconds))

    def optimize(self, s, mf, opts, extra):
        if s.incumbents is not None:
            s.incumbents.t0 = time.perf_counter()  # the trajectory counts from the solver's start
        with quiet_stdout():
            s.h.run()

    def outcome(self, s, mf, extra) -> Outcome:
        h = s.h
        status = h.getModelStatus()
        name = status.name if hasattr(status, "name") else str(status).rsplit(".", 1)[-1]
        info = h.getInfo()
        has = int(getattr(info, "primal_solution_status", 0)) == 2  # kSolutionStatusFeasible
        integer = bool(np.any(mf.integrality))
        sol = h.getSolution()
        bound = None
        if integer:
            b = float(info.mip_dual_bound)
            bound = b if np.isfinite(b) else None
        iters = sum(max(0, int(getattr(info, k, 0) or 0)) for k in ("simplex_iteration_count", "qp_iteration_count",
                                                                     "ipm_iteration_count"))
        nodes = int(info.mip_node_count) if integer and int(info.mip_node_count) >= 0 else None
        extra["highs_status"] = name
        duals = np.asarray(sol.row_dual, dtype=float) if has and bool(getattr(sol, "dual_valid", True)) else None
        return Outcome(code=name, x=np.asarray(sol.col_value, dtype=float) if has else None,
                       objective=float(info.objective_function_value) if has else None, bound=bound,
                       iterations=iters, nodes=nodes, status_text=name, extra=extra,
                       row_dual=None if integer else duals)

    def polish(self, mf, opts, budget):
        """Solve again without HiGHS's QP regularisation (``qp_regularization_value = 0``; its
        default 1e-7 perturbs a column without curvature, e.g. the epigraph variable of
        dcmil-direction, and the active-set method then stops short of the optimum); where HiGHS
        cannot solve the unregularised QP (a free column without curvature, as in
        ``dcmil-direction.it5.musk1``), with ``qp_regularization_value = 1e-12``, whose
        perturbation of the reduced costs (about 1e-12 times the column's value) stays far below
        the optimality check's tolerance."""
        if not mf.has_quadratic_objective() or "qp_regularization_value" in dict(opts.options):
            return None
        from dataclasses import replace

        out = None
        for reg in _POLISH_REGULARISATION:
            again = replace(opts, options={**dict(opts.options), "qp_regularization_value": reg},
                            on_incumbent=None, budget=budget)
            s = self.open(mf, again)
            try:
                self.build(s, mf, again, _NoIncumbents())
                self.set_common(s, mf, again)
                left = budget.remaining()
                if left is not None:
                    self.set_time_limit(s, left)
                self.set_options(s, again.options)
                self.optimize(s, mf, again, {})
                out = self.outcome(s, mf, {"polished": f"qp_regularization_value={reg:g}"})
            finally:
                self.close(s)
            if map_status(self.status_map, out.code) == Termination.OPTIMAL:
                return out
        return out


class _NoIncumbents:
    def add(self, *a, **k):
        pass


BACKEND = HighsBackend()
