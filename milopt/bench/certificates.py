r"""Certificates and solution files of the instance library (the conventions of MIPLIB 2017).

A value enters ``instances/milopt.solu`` only as the objective of a point that is shipped as a
solution file ``instances/solutions/NAME.sol.gz`` and verified against the instance milopt
builds (:func:`check_solution`), at the **stated tolerances**:

* **feasibility**: every row, bound, quadratic row, SOS1 set and active indicator holds within
  ``FEAS_TOL`` = 1e-6 relative to :math:`\max(1, |\text{rhs}|)`; integer columns within 1e-6 of
  an integer (``milopt.bench.verify``, the convention of SCIP's and HiGHS's primal
  feasibility tolerance and of MIPLIB's solution checker);
* **objective**: the ``.solu`` value is the objective :math:`c^\top x + \tfrac12 x^\top Q x +
  c_0` recomputed at the ``.sol`` point (12 significant digits); the ``=obj=`` line of the file
  agrees with it within ``OBJ_TOL`` = 1e-9 relative to :math:`\max(1, |f|)`;
* **proof**: ``=opt=`` needs a dual bound :math:`\beta` of a verified run with
  :math:`f - \beta \le` ``PROOF_GAP`` :math:`\cdot |f|` (minimisation; maximisation
  mirrored), ``PROOF_GAP`` = 1e-4 relative, the relative gap at which CPLEX, Gurobi, Xpress and
  milopt's ``bnb`` stop by default and at which Mittelmann's benchmarks count an instance
  solved.  A bound that exceeds a verified point's objective by more than 1e-6 relative
  (:data:`BOUND_TOL`) is a wrong bound and is not used.

**Transfer of a certificate** (Kent & Yu's MI-SVM in other forms): a certificate proved on one
formulation carries over to another formulation of the same problem only after a check
(:func:`transfer`): the same data, cost C and class weights (hence the same bag costs
:math:`C_I`), the same regulariser (norm) and kernel; the certified point :math:`(w, b)` (or
:math:`(\beta, b)`) is loaded into the other formulation by its own start function (slacks,
witness binaries, copies), verified feasible there, and its objective there must equal the
certified value within 1e-6 relative.  A heuristic big-M (``big_m=mildsvm``) can cut off the
optimum: there the check fails and the certificate does not carry over.
"""
from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np

from milopt.bench.verify import check_point, read_sol
from milopt.errors import InvalidParameterError

#: a ``.solu`` value and the objective recomputed at its verified point agree within this (relative)
OBJ_TOL = 1e-9
#: a certificate proves its value when ``(value - bound) / max(1, abs(value))`` is at most this
PROOF_GAP = 1e-4
#: a bound that cuts off a verified point by more than this (relative) is not used
BOUND_TOL = 1e-6
#: formulations whose instances share one MI-SVM problem with ``misvm-bigm`` (norm, kernel as keyed)
MISVM_FORMS = ("misvm-bigm", "misvm-hull", "misvm-kernel-bigm")
CERT_COLUMNS = ["name", "kind", "value", "bound", "gap", "how", "solver", "version", "seconds", "nodes", "load",
                "date", "note"]


def solutions_dir() -> Path:
    """``instances/solutions`` next to the catalogue."""
    from milopt.bench.library import catalogue_path

    return Path(catalogue_path()).with_name("solutions")


def sol_path(name: str) -> Path:
    """The shipped solution file of an instance: ``solutions/NAME.sol.gz``."""
    return solutions_dir() / f"{name}.sol.gz"


def certificates_path() -> Path:
    from milopt.bench.library import catalogue_path

    return Path(catalogue_path()).with_name("certificates.csv")


def problem_key(inst) -> tuple | None:
    """Key of the MI-SVM problem an instance formulates (data, C, class weights, norm, kernel), or
    None when the instance is not an MI-SVM model.  Instances with equal keys have the same
    feasible (w, b) and the same objective ½‖w‖² + Σ C_I ξ_I (or its l1 / kernel form)."""
    if inst.formulation not in MISVM_FORMS:
        return None
    p = inst.params
    C = float(p.get("C", 1.0))
    cw = str(p.get("class_weight", "kent-yu"))
    if inst.formulation == "misvm-kernel-bigm":
        return (inst.data, C, cw, "kernel", str(p.get("kernel", "rbf")), str(p.get("gamma", "auto")),
                str(p.get("degree", 2)), str(p.get("coef0", 1.0)))
    return (inst.data, C, cw, str(p.get("norm", "l2")), "linear")


def model_point(model):
    """(matrix form, column names as milopt's writer writes them, point x) of a solved model."""
    from milopt.io.names import clean_names
    from milopt.solvers.extract import extract

    mf = extract(model)
    x = np.array([np.nan if v.value is None else float(v.value) for v in mf.variables])
    return mf, clean_names(mf.col_names, "C"), x


def write_sol(path, names, x, objective: float, comments=()) -> Path:
    """Write a MIPLIB-style solution file: ``=obj= VALUE`` then ``name value`` for every nonzero
    column (a column not listed is 0), values with 17 significant digits (exact doubles);
    gzip-compressed when the name ends in ``.gz``."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {c}" for c in comments] + [f"=obj= {objective:.17g}"]
    lines += [f"{n} {v:.17g}" for n, v in zip(names, np.asarray(x, dtype=float).tolist()) if v != 0.0]
    text = "\n".join(lines) + "\n"
    if p.name.endswith(".gz"):
        with gzip.GzipFile(p, "wb", mtime=0) as fh:   # mtime 0: the same bytes on every run
            fh.write(text.encode())
    else:
        p.write_text(text)
    return p


def read_sol_objective(path) -> float | None:
    """The ``=obj=`` value of a solution file (None when absent)."""
    for line in _lines(path):
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "=obj=":
            return float(parts[1])
    return None


def _lines(path):
    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f"solution file {str(p)!r} not found")
    if p.name.endswith(".gz"):
        with gzip.open(p, "rt") as fh:
            return fh.read().splitlines()
    return p.read_text(errors="replace").splitlines()


def point_from_sol(mf, path) -> tuple[np.ndarray, list]:
    """(x in ``mf``'s column order, unknown names) from a solution file (missing columns are 0)."""
    from milopt.io.names import clean_names

    vals = read_sol(path)
    index = {n: j for j, n in enumerate(clean_names(mf.col_names, "C"))}
    x = np.zeros(mf.c.size)
    unknown = []
    for name, v in vals.items():
        j = index.get(name)
        if j is None:
            unknown.append(name)
        else:
            x[j] = v
    return x, unknown


def check_point_model(model, x=None) -> dict:
    """Verify a point of ``model`` (default: the values it holds) at the stated tolerances;
    models with nonlinear rows (``misvm-hull``'s cones) are checked on the Pyomo model."""
    from milopt.bench.verify import verify_pyomo
    from milopt.solvers.extract import extract

    try:
        mf = extract(model)
    except InvalidParameterError:
        mf = None
    if mf is None:
        import pyomo.environ as pe

        obj = next(iter(model.component_data_objects(pe.Objective, active=True)))
        return verify_pyomo(model, float(pe.value(obj.expr)))
    if x is None:
        x = np.array([np.nan if v.value is None else float(v.value) for v in mf.variables])
    return check_point(mf, x, mf.objective_value(x) if np.all(np.isfinite(x)) else None)


def check_solution(inst, path=None, model=None) -> dict:
    """Verify the solution file of catalogue instance ``inst`` against the instance milopt builds.

    Returns the verification of ``milopt.bench.verify.check_point`` plus ``objective_file``
    (the ``=obj=`` line) and ``ok``: the point is feasible within ``FEAS_TOL``, every name is a
    column of the instance, and ``=obj=`` equals the recomputed objective within ``OBJ_TOL``.
    """
    from milopt.bench.library import build
    from milopt.solvers.extract import extract

    path = Path(path) if path is not None else sol_path(inst.name)
    if model is None:
        model = build(inst)[0]
    f_file = read_sol_objective(path)
    try:
        mf = extract(model)
    except InvalidParameterError:
        mf = None
    if mf is None:   # quadratic rows: load the point into the Pyomo model and evaluate every row
        out = _check_pyomo_sol(model, path, f_file)
    else:
        x, unknown = point_from_sol(mf, path)
        out = check_point(mf, x, f_file)
        if unknown:
            out.update(verified=False, reason=f"{len(unknown)} unknown column name(s), e.g. {unknown[:3]}")
    f = out.get("objective_recomputed")
    out["objective_file"] = f_file
    out["ok"] = bool(out["feasible"] and f_file is not None and f is not None and
                     abs(f - f_file) <= OBJ_TOL * max(1.0, abs(f)) and "unknown column" not in out["reason"])
    return out


def _check_pyomo_sol(model, path, f_file) -> dict:
    import pyomo.environ as pe

    from milopt.bench.verify import verify_pyomo
    from milopt.io.names import clean_names

    vars_ = [v for v in model.component_data_objects(pe.Var, active=True) if not v.fixed]
    names = clean_names([v.name for v in vars_], "C")
    vals = read_sol(path)
    index = dict(zip(names, vars_))
    unknown = [n for n in vals if n not in index]
    for n, v in index.items():
        v.set_value(float(vals.get(n, 0.0)), skip_validation=True)
    out = verify_pyomo(model, f_file)
    if unknown:
        out.update(verified=False, reason=f"{len(unknown)} unknown column name(s), e.g. {unknown[:3]}")
    return out


def misvm_point(inst, model) -> dict:
    """The MI-SVM point of a solved (or started) model of an MI-SVM instance: ``w``/``coef``, ``b``."""
    import pyomo.environ as pe

    if inst.formulation == "misvm-kernel-bigm":
        from milopt.models.misvm_kernel_bigm import beta_of

        return {"coef": beta_of(model), "b": float(pe.value(model.b))}
    return {"w": np.array([pe.value(model.w[k]) for k in model.w]), "b": float(pe.value(model.b))}


def load_misvm_point(inst, model, point: dict) -> None:
    """Load an MI-SVM point into ``model`` with the formulation's own start function (slacks,
    witness binaries and, for the hull form, the copies are derived from (w, b))."""
    if inst.formulation == "misvm-kernel-bigm":
        from milopt.models import misvm_kernel_bigm as mod

        mod.warm_start_point(model, point["coef"], point["b"])
    elif inst.formulation == "misvm-hull":
        from milopt.models import misvm_hull as mod

        mod.set_start(model, point["w"], point["b"])
    else:
        from milopt.models import misvm_bigm as mod

        mod.warm_start(model, point["w"], point["b"])


def transfer(point: dict, value: float, inst, model=None) -> dict:
    """Check that a certified MI-SVM point carries over to instance ``inst``: load it, verify
    feasibility at ``FEAS_TOL`` and compare the objective there with the certified ``value``
    (within ``BOUND_TOL`` relative).  Returns the verification with ``ok`` and ``objective``."""
    from milopt.bench.library import build

    if model is None:
        model = build(inst)[0]
    load_misvm_point(inst, model, point)
    out = check_point_model(model)
    f = out.get("objective_recomputed")
    out["objective"] = f
    out["model"] = model
    same = f is not None and abs(f - value) <= BOUND_TOL * max(1.0, abs(value))
    out["ok"] = bool(out["feasible"] and same)
    if not out["feasible"]:
        out["why"] = f"the point is infeasible there ({out['reason']})"
    elif not same:
        out["why"] = f"objective there {f:.10g} differs from the certified {value:.10g}"
    else:
        out["why"] = ""
    return out


def proved(value: float, bound: float | None, sense: str = "minimize", gap: float = PROOF_GAP) -> bool:
    """True when ``bound`` certifies ``value`` within the relative gap ``gap`` (``value - bound <=
    gap |value|``, minimisation) and does not cut it off by more than ``BOUND_TOL`` (relative to
    ``max(1, |value|)``)."""
    if bound is None or value is None or not math.isfinite(bound):
        return False
    sgn = -1.0 if sense == "maximize" else 1.0
    d = sgn * (value - bound)
    return -BOUND_TOL * max(1.0, abs(value)) <= d <= gap * max(abs(value), 1e-12)


def read_certificates(path=None) -> dict:
    """``{name: row}`` of ``certificates.csv`` (empty when absent)."""
    import csv

    p = Path(path) if path is not None else certificates_path()
    if not p.is_file():
        return {}
    lines = [ln for ln in p.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return {r["name"]: r for r in csv.DictReader(lines)}


def write_certificates(rows: dict, path=None) -> None:
    """Write ``{name: row}`` sorted by name (columns :data:`CERT_COLUMNS`), keeping ``#`` lines."""
    import csv
    import io

    p = Path(path) if path is not None else certificates_path()
    head = [ln for ln in p.read_text().splitlines() if ln.startswith("#")] if p.is_file() else []
    buf = io.StringIO()
    w = csv.DictWriter(buf, CERT_COLUMNS, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for name in sorted(rows):
        w.writerow({k: rows[name].get(k, "") for k in CERT_COLUMNS})
    p.write_text("\n".join(head) + ("\n" if head else "") + buf.getvalue())


__all__ = ["OBJ_TOL", "PROOF_GAP", "BOUND_TOL", "sol_path", "write_sol", "check_solution",
           "transfer", "proved", "problem_key", "read_certificates", "write_certificates"]
