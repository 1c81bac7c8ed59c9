r"""Verification of a solver's answer against the model, and against the best known values.

A benchmark result counts as solved only when it is verified (docs/library.md):

1. **Feasibility** of the returned point :math:`x` in the model's matrix form
   (``milopt.solvers.extract``: :math:`\ell \le Ax \le u`, :math:`l \le x \le h`,
   :math:`x_j \in \mathbb{Z}` for integer columns, quadratic rows, SOS1/SOS2 sets, indicator
   rows where the indicator is active).  A violation counts when it exceeds
   ``FEAS_TOL`` = 1e-6 relative to :math:`\max(1, |\text{bound}|)` -- the convention of
   SCIP's and HiGHS's primal feasibility tolerance.
2. **Objective recomputed**: :math:`c^\top x + \tfrac12 x^\top Q x + c_0` must equal the
   objective the solver reported within ``OBJ_TOL`` = 1e-5 relative to :math:`\max(1, |f|)`
   (SCIP carries a quadratic objective as an epigraph row :math:`t \ge \tfrac12 x^\top Q x`
   satisfied only to its feasibility tolerance 1e-6, so its reported value may differ by
   that much; the recomputed value is the one compared with best known values).
3. **Agreement with the .solu** (done in the report): the objective is compared with the
   best known value within the benchmark's gap tolerance.

A ``.sol`` file (``name value`` per line, the MIPLIB convention; ``=obj=`` lines and
comments ignored) can be verified the same way against a catalogue instance.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from milopt.errors import InvalidParameterError

FEAS_TOL = 1e-6
OBJ_TOL = 1e-5


def _rel_excess(val, lo, hi):
    """Violation of lo <= val <= hi relative to max(1, |bound|) (vectorised)."""
    with np.errstate(invalid="ignore"):
        below = np.where(np.isfinite(lo), (lo - val) / np.maximum(1.0, np.abs(lo)), 0.0)
        above = np.where(np.isfinite(hi), (val - hi) / np.maximum(1.0, np.abs(hi)), 0.0)
    return np.maximum(np.maximum(below, above), 0.0)


def check_point(mf, x: np.ndarray, objective: float | None) -> dict:
    """Check ``x`` (column order of the MatrixForm ``mf``) and the reported ``objective``.

    Returns a dict: ``feasible`` (bool), ``max_violation`` (relative), ``where`` (what
    violates most), ``integrality`` (largest distance to an integer), ``objective_recomputed``,
    ``objective_error`` (relative), ``verified`` (both checks pass) and ``reason``.
    """
    x = np.asarray(x, dtype=float)
    out = {"verified": False, "feasible": False, "max_violation": None, "where": "", "integrality": 0.0,
           "objective_recomputed": None, "objective_error": None, "reason": ""}
    if x.shape != mf.c.shape or not np.all(np.isfinite(x)):
        out["reason"] = "no complete finite solution to check"
        return out
    ax = mf.A @ x
    rv = _rel_excess(ax, mf.row_lb, mf.row_ub)
    cv = _rel_excess(x, mf.col_lb, mf.col_ub)
    iv = np.abs(x[mf.integrality] - np.round(x[mf.integrality])) if mf.integrality.any() else np.zeros(0)
    worst = [(float(rv.max()) if rv.size else 0.0, "row", int(rv.argmax()) if rv.size else -1),
             (float(cv.max()) if cv.size else 0.0, "bound", int(cv.argmax()) if cv.size else -1),
             (float(iv.max()) if iv.size else 0.0, "integrality", -1)]
    names = {"row": mf.row_names, "bound": mf.col_names}
    if mf.qrows:  # quadratic rows
        qv = _rel_excess(mf.quad_row_values(x), np.array([q.lb for q in mf.qrows]), np.array([q.ub for q in mf.qrows]))
        worst.append((float(qv.max()), "quadratic row", int(qv.argmax())))
        names["quadratic row"] = [q.name for q in mf.qrows]
    if mf.n_indicators:  # the implied row, where the indicator is active
        on = np.round(x[mf.ind_binary]) == mf.ind_active
        gv = np.where(on, _rel_excess(mf.ind_A @ x, mf.ind_lb, mf.ind_ub), 0.0)
        worst.append((float(gv.max()), "indicator", int(gv.argmax())))
        names["indicator"] = mf.ind_names
    for k_s, so in enumerate(mf.sos):  # at most one (SOS1) / two adjacent (SOS2) nonzeros
        a = np.abs(x[so.idx])
        order = np.sort(a)[::-1]
        extra = order[1] if so.level == 1 and a.size > 1 else 0.0
        if so.level == 2 and a.size > 2:
            big = np.flatnonzero(a > FEAS_TOL)
            extra = order[2] if big.size > 2 or (big.size == 2 and big[1] - big[0] != 1) else 0.0
        worst.append((float(extra), "SOS", k_s))
        names["SOS"] = [q.name for q in mf.sos]
    v, kind, k = max(worst, key=lambda t: t[0])
    out["max_violation"] = v
    out["integrality"] = worst[2][0]
    if v > FEAS_TOL:
        nm = names.get(kind, [])
        out["where"] = f"{kind} {nm[k] if 0 <= k < len(nm) else ''}".strip()
    out["feasible"] = v <= FEAS_TOL
    obj = mf.objective_value(x)
    out["objective_recomputed"] = obj
    if objective is not None and math.isfinite(objective):
        err = abs(obj - objective) / max(1.0, abs(obj))
        out["objective_error"] = err
        obj_ok = err <= OBJ_TOL
    else:
        obj_ok = False
    reasons = []
    if not out["feasible"]:
        reasons.append(f"infeasible: {out['where']} violated by {v:.3g} (relative; tolerance {FEAS_TOL:g})")
    if not obj_ok:
        reasons.append("no objective reported" if out["objective_error"] is None else
                       f"reported objective {objective:.10g} differs from the recomputed {obj:.10g} "
                       f"(relative {out['objective_error']:.3g} > {OBJ_TOL:g})")
    out["verified"] = bool(out["feasible"] and obj_ok)
    out["reason"] = "; ".join(reasons)
    return out


def _special_violation(model) -> tuple[float, str]:
    """Largest violation of SOS1 sets and indicator implications on the Pyomo model's values."""
    import pyomo.environ as pe

    worst, where = 0.0, ""
    for sos in model.component_data_objects(pe.SOSConstraint, active=True):
        vals = sorted((abs(v.value or 0.0) for v in sos.get_variables()), reverse=True)
        if len(vals) > 1 and vals[1] > worst:
            worst, where = vals[1], f"SOS1 {sos.name}"
    from milopt.models.info import info

    for blk in info(model).indicators or ():
        try:
            zs, rows = blk["binaries"], list(blk["rows"].values())  # one row per binary, in order
        except (TypeError, KeyError, AttributeError):
            continue
        for z, row in zip(zs, rows):
            if z.value is not None and abs(z.value - blk.get("active_value", 0)) < 0.5:
                lo, body, hi = row.to_bounded_expression(evaluate_bounds=True)
                val = pe.value(body)
                ex = float(_rel_excess(np.array([val]), np.array([-np.inf if lo is None else lo]),
                                       np.array([np.inf if hi is None else hi]))[0])
                if ex > worst:
                    worst, where = ex, f"indicator {row.name}"
    return worst, where


def verify_pyomo(model, objective: float | None) -> dict:
    """Verification by evaluating every active constraint of ``model`` (any algebraic form, e.g.
    the rotated cones of ``misvm-hull``), the variable bounds and integrality, and the active
    objective -- the same tolerances as :func:`check_point`; used where the matrix form does
    not exist (nonlinear constraints)."""
    import pyomo.environ as pe

    out = {"verified": False, "feasible": False, "max_violation": None, "where": "", "integrality": 0.0,
           "objective_recomputed": None, "objective_error": None, "reason": ""}
    worst, where = 0.0, ""
    for v in model.component_data_objects(pe.Var, active=True):
        if v.fixed:
            continue
        if v.value is None:
            out["reason"] = f"no value for {v.name}"
            return out
        x = float(v.value)
        ex = float(_rel_excess(np.array([x]), np.array([-np.inf if v.lb is None else v.lb]),
                               np.array([np.inf if v.ub is None else v.ub]))[0])
        if ex > worst:
            worst, where = ex, f"bound {v.name}"
        if v.is_integer() or v.is_binary():
            d = abs(x - round(x))
            out["integrality"] = max(out["integrality"], d)
            if d > worst:
                worst, where = d, f"integrality {v.name}"
    for c in model.component_data_objects(pe.Constraint, active=True):
        val = pe.value(c.body, exception=False)
        if val is None:
            continue
        lo, hi = pe.value(c.lower, exception=False), pe.value(c.upper, exception=False)
        ex = float(_rel_excess(np.array([val]), np.array([-np.inf if lo is None else lo]),
                               np.array([np.inf if hi is None else hi]))[0])
        if ex > worst:
            worst, where = ex, f"row {c.name}"
    sv, swhere = _special_violation(model)
    if sv > worst:
        worst, where = sv, swhere
    out["max_violation"] = worst
    out["feasible"] = worst <= FEAS_TOL
    obj = next(iter(model.component_data_objects(pe.Objective, active=True)))
    f = float(pe.value(obj.expr))
    out["objective_recomputed"] = f
    reasons = []
    if not out["feasible"]:
        out["where"] = where
        reasons.append(f"infeasible: {where} violated by {worst:.3g} (relative; tolerance {FEAS_TOL:g})")
    ok = False
    if objective is not None and math.isfinite(objective):
        out["objective_error"] = abs(f - objective) / max(1.0, abs(f))
        ok = out["objective_error"] <= OBJ_TOL
        if not ok:
            reasons.append(f"reported objective {objective:.10g} differs from the recomputed {f:.10g}")
    else:
        reasons.append("no objective reported")
    out["verified"] = bool(out["feasible"] and ok)
    out["reason"] = "; ".join(reasons)
    return out


def verify_model(model, objective: float | None) -> dict:
    """Verify the values currently held by a solved Pyomo ``model`` (see :func:`check_point`);
    models with nonlinear constraints are checked by :func:`verify_pyomo`."""
    from milopt.solvers.extract import extract

    try:
        mf = extract(model)
    except InvalidParameterError:
        return verify_pyomo(model, objective)
    x = np.array([np.nan if v.value is None else float(v.value) for v in mf.variables])
    return check_point(mf, x, objective)


_NORM = re.compile(r"[^A-Za-z0-9]+")


def _norm(name: str) -> str:
    return _NORM.sub("_", name).strip("_")


def read_sol(path) -> dict:
    """``{column name: value}`` of a ``.sol`` (or ``.sol.gz``) file (``name value`` lines; ``=obj=``,
    comments skipped)."""
    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f".sol file {str(p)!r} not found")
    if p.name.endswith(".gz"):   # the library ships its solution files gzip-compressed
        import gzip

        with gzip.open(p, "rt", errors="replace") as fh:
            text = fh.read()
    else:
        text = p.read_text(errors="replace")
    out = {}
    for ln, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith(("#", "=")) or parts[0].lower() in ("objective", "solution"):
            continue
        if len(parts) < 2:
            raise InvalidParameterError(f"{p}: line {ln}: expected 'name value', got {line.strip()!r}")
        try:
            out[parts[0]] = float(parts[1])
        except ValueError:
            raise InvalidParameterError(f"{p}: line {ln}: value {parts[1]!r} is not a number") from None
    return out


def verify_sol_file(model, sol_path, objective: float | None) -> dict:
    """Verify a ``.sol`` file's point against ``model`` (an instance built by milopt).

    Column names are matched as milopt's ``.mps``/``.lp`` files write them (``w(3)``,
    ``zeta(12)``: :mod:`milopt.io.names`), else punctuation-insensitively (files from other
    writers: ``w_3_``); a column missing from the file is taken as 0 (the MIPLIB convention).
    An unknown name is an error.
    """
    from milopt.io.names import clean_names
    from milopt.solvers.extract import extract

    vals = read_sol(sol_path)
    mf = extract(model)
    exact = {n: j for j, n in enumerate(clean_names(mf.col_names, "C"))}
    index = {_norm(n): j for j, n in enumerate(mf.col_names)}
    x = np.zeros(mf.c.size)
    unknown = []
    for name, v in vals.items():
        j = exact.get(name, index.get(_norm(name)))
        if j is None:
            unknown.append(name)
        else:
            x[j] = v
    if unknown:
        out = check_point(mf, x, objective)
        out.update(verified=False, reason=f"{len(unknown)} unknown column name(s) in the .sol, e.g. {unknown[:3]}")
        return out
    for j, var in enumerate(mf.variables):
        var.set_value(float(x[j]), skip_validation=True)
    return check_point(mf, x, objective)
