r"""An ``optimal`` that is checked: a continuous solver's claim verified from the matrix form.

A branch-and-bound solver proves its optimum with a bound of its own.  An active-set or
interior-point QP solver (HiGHS's QP) reports ``optimal`` when its own stopping tests pass, in
its own (scaled, regularised) terms; it gives no bound.  For such a claim on a convex QP

.. math::

    \min_x\ F(x) = c^\top x + \tfrac12 x^\top Q x + c_0 \quad\text{s.t.}\quad
    \ell \le A x \le u,\quad l \le x \le v

(a maximisation is checked as the minimisation of :math:`-F`), :func:`kkt` evaluates, at the
returned point :math:`\bar x` and the solver's row multipliers :math:`y`, the reduced costs
:math:`z = \nabla F(\bar x) - A^\top y` and

* the primal infeasibility :math:`\max(\ell - A\bar x, A\bar x - u, l - \bar x, \bar x - v)^+`;
* the dual infeasibility: the part of :math:`y_i` (of :math:`z_j`) whose sign asks for a side
  that is infinite -- a multiplier :math:`> 0` needs a finite lower side, :math:`< 0` a finite
  upper side;
* the Lagrangian dual value (Wolfe's dual of a convex QP; Nocedal & Wright, *Numerical
  Optimization*, 2nd ed., 2006, §16.1 and §12.9)

  .. math::

      D(\bar x, y) = c_0 - \tfrac12 \bar x^\top Q \bar x + \sum_i (y_i^+ \ell_i - y_i^- u_i)
                     + \sum_j (z_j^+ l_j - z_j^- v_j),

  a lower bound on the optimum whenever the multipliers are dual feasible (weak duality: the
  Lagrangian's minimum over :math:`x` is attained at :math:`\bar x`, where its gradient is zero
  by the definition of :math:`z`).

The claim is *certified* when the primal and dual infeasibilities and the duality gap
:math:`F(\bar x) - D` are all within :data:`TOL`, relative to the problem's scale.
:func:`certify_optimal` applies this to a backend's result: a claim that fails is first given
to the backend's ``polish`` (a second solve with tolerances that reach the optimum); if that
passes its result replaces the first, otherwise the termination becomes ``converged`` (the
solver's stopping test was met, nothing is proven) and the result has no bound.  The details go
to ``extra["optimality_check"]``.
"""
from __future__ import annotations

import numpy as np

from milopt.solvers.result import Termination

#: relative tolerance of each test (primal, dual infeasibility, duality gap)
TOL = 1e-6
#: a side at or beyond this magnitude is infinite: a backend's rewritten form states infinity as
#: its solver's own number (Ipopt 1e19, CPLEX and Xpress 1e20, Gurobi 1e100); such a side takes
#: no multiplier, and a tiny multiplier on it must not enter the dual value as ``1e19 * y``
INFINITE_SIDE = 1e19


def _finite(b: np.ndarray) -> np.ndarray:
    return np.isfinite(b) & (np.abs(b) < INFINITE_SIDE)


def kkt(mf, x, y) -> dict:
    """Residuals and dual value of ``(x, y)`` for the continuous QP ``mf`` (see the module
    docstring); ``y`` are the multipliers of the linear rows in the solver's sign (that of
    ``c + Qx - A'y``, HiGHS's convention)."""
    s = float(mf.sense)
    x = np.asarray(x, dtype=float)
    y = s * np.asarray(y, dtype=float)                 # multipliers of the minimised -F when maximising
    Qx = mf.Q @ x if mf.has_quadratic_objective() else np.zeros_like(x)
    grad = s * (np.asarray(mf.c, dtype=float) + Qx)
    z = grad - (mf.A.T @ y if mf.A.shape[0] else 0.0)
    lo, hi = np.asarray(mf.row_lb, float), np.asarray(mf.row_ub, float)
    lb, ub = np.asarray(mf.col_lb, float), np.asarray(mf.col_ub, float)

    def wrong_sign(m, low, up):
        """The part of multipliers ``m`` that asks for an infinite side."""
        return np.where(_finite(low), 0.0, np.maximum(m, 0.0)) + np.where(_finite(up), 0.0, np.maximum(-m, 0.0))

    def side_value(m, low, up):
        return float(np.sum(np.where(m > 0, m * np.where(_finite(low), low, 0.0), 0.0))
                     + np.sum(np.where(m < 0, m * np.where(_finite(up), up, 0.0), 0.0)))

    viol = mf.violation(x)
    primal = max(viol["rows"], viol["bounds"])
    dual = float(max(np.max(wrong_sign(y, lo, hi), initial=0.0), np.max(wrong_sign(z, lb, ub), initial=0.0)))
    value = s * mf.objective_value(x)
    bound = s * float(mf.c0) - 0.5 * s * float(x @ Qx) + side_value(y, lo, hi) + side_value(z, lb, ub)
    finite = np.concatenate([b[_finite(b)] for b in (lo, hi, lb, ub)] + [np.zeros(1)])
    scale_p = 1.0 + float(np.max(np.abs(finite)))
    scale_d = max(1.0, float(np.max(np.abs(grad), initial=0.0)))
    gap = (value - bound) / max(1.0, abs(value))
    return {"primal_infeasibility": primal / scale_p, "dual_infeasibility": dual / scale_d, "duality_gap": gap,
            "dual_bound": s * bound, "passed": bool(primal / scale_p <= TOL and dual / scale_d <= TOL
                                                    and abs(gap) <= TOL)}


def certify_optimal(mf, raw, row_dual, recheck=None):
    """``raw`` (a :class:`~milopt.solvers.backend.RawResult` of ``mf``) with its claim of
    optimality checked (see the module docstring); other results are returned unchanged.

    ``recheck()`` gives the ``Outcome`` of a second solve that
    claims optimality (or None); it is tried once when the first check fails."""
    if raw.termination != Termination.OPTIMAL or raw.x is None or mf.is_mip() or not mf.has_quadratic_objective():
        return raw
    if row_dual is None:
        return _unproven(raw, {"passed": False, "reason": "the solver returned no multipliers"})
    first = kkt(mf, raw.x, row_dual)
    if first["passed"]:
        raw.extra["optimality_check"] = first
        return raw
    again = recheck() if recheck is not None else None
    if again is not None and again.x is not None and again.row_dual is not None:
        second = kkt(mf, again.x, again.row_dual)
        if second["passed"]:
            raw.x, raw.objective = again.x, again.objective
            raw.iterations = (raw.iterations or 0) + (again.iterations or 0)
            t_last = raw.trajectory[-1][0] if raw.trajectory else 0.0
            raw.trajectory = list(raw.trajectory) + [(t_last, float(again.objective))]
            raw.extra.update(again.extra)
            raw.extra["optimality_check"] = {**second, "first_answer": first}
            return raw
        first = {**first, "second_answer": second}
    return _unproven(raw, first)


def _unproven(raw, check: dict):
    """The claim failed its check: termination converged, no bound."""
    raw.termination = Termination.CONVERGED
    raw.bound = None
    raw.extra["optimality_check"] = check
    raw.extra["message"] = ("the solver reported optimal, but its answer fails the optimality check from the "
                            "matrix form (see optimality_check); it is reported as converged, not proven")
    return raw

__all__ = ["TOL", "kkt", "certify_optimal"]
