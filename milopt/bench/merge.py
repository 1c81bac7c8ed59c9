"""Results from several runs or machines, and results of solvers run outside milopt.

* :func:`merge_runs`: the ``runs.csv`` tables of several bench folders as one table (column
  ``source``).  A run id present in two tables is the same run done twice: from the same
  host the later row wins (a resumed bench); from different hosts both are kept and every
  contender is labelled ``solver@host``, so that machines are compared, not mixed.
* :func:`import_external`: a CSV of results a user obtained elsewhere (a commercial solver on
  the library files), one row per run::

      instance,solver,status,time,objective,bound[,sol][,time_limit][,gap_limit]

  ``instance`` is a catalogue name (docs/library.md); ``status`` one of optimal, time_limit,
  infeasible, unbounded, iteration_limit, interrupted, error, unknown (``timelimit``, ``tl``,
  ``opt`` are accepted); ``sol`` an optional ``.sol`` file (relative to the CSV's folder) that
  milopt verifies against the instance it builds (feasibility within 1e-6, objective
  recomputed).  Without a ``.sol`` the row is ``unchecked``: it counts as solved only when its
  objective agrees with a best known value.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from milopt.bench.assess import _f
from milopt.errors import InvalidParameterError

STATUS_MAP = {"optimal": "optimal", "opt": "optimal", "time_limit": "time_limit", "timelimit": "time_limit",
              "tl": "time_limit", "infeasible": "infeasible", "unbounded": "unbounded",
              "iteration_limit": "iteration_limit", "node_limit": "iteration_limit", "interrupted": "interrupted",
              "error": "error", "fail": "error", "failed": "error", "unknown": "unknown", "feasible": "time_limit"}
EXTERNAL_COLUMNS = ("instance", "solver", "status", "time", "objective", "bound")


def merge_runs(sources) -> pd.DataFrame:
    """One table from several bench folders (or ``runs.csv`` paths); see the module docstring."""
    from milopt.bench.runs import load_runs

    frames = []
    for k, src in enumerate(sources):
        df = load_runs(src)
        df["source"] = str(src)
        df["_order"] = k
        frames.append(df)
    if not frames:
        raise InvalidParameterError("report: give at least one bench folder")
    df = pd.concat(frames, ignore_index=True)
    if "host" not in df:
        df["host"] = ""
    df["host"] = df["host"].fillna("")
    df = df.drop_duplicates(["run_id", "host"], keep="last")
    multi = df.groupby("run_id")["host"].nunique()
    if (multi > 1).any():
        df["contender"] = df["contender"] + "@" + df["host"].replace("", "unknown-host")
    return df.drop(columns=["_order"]).reset_index(drop=True)


def import_external(path, *, time_limit: float | None = None, verify: bool = True) -> pd.DataFrame:
    """Rows (bench columns) of an external results CSV; ``.sol`` files verified when given."""
    from milopt.bench.execute import COLUMNS
    from milopt.solvers.result import relative_gap

    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f"--external: {str(p)!r} not found")
    try:
        ext = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise InvalidParameterError(f"{p}: not a readable CSV ({exc})") from None
    ext.columns = [c.strip().lower() for c in ext.columns]
    missing = [c for c in EXTERNAL_COLUMNS if c not in ext.columns]
    if missing:
        raise InvalidParameterError(f"{p}: missing column(s) {missing}; expected {', '.join(EXTERNAL_COLUMNS)}"
                                    "[,sol][,time_limit][,gap_limit]")
    from milopt.bench.library import load_catalogue

    cat = {i.name: i for i in load_catalogue()}
    rows = []
    for k, r in ext.iterrows():
        where = f"{p.name} row {k + 2}"
        inst = r["instance"].strip()
        solver = r["solver"].strip()
        st = r["status"].strip().lower()
        if st not in STATUS_MAP:
            raise InvalidParameterError(f"{where}: status {r['status']!r} unknown; use one of "
                                        f"{', '.join(sorted(set(STATUS_MAP.values())))}")
        term = STATUS_MAP[st]
        t = _f(r["time"])
        if t is None or t < 0:
            raise InvalidParameterError(f"{where}: time must be seconds >= 0, got {r['time']!r}")
        obj, bound = _f(r["objective"]), _f(r["bound"])
        tl = _f(r.get("time_limit", "")) if "time_limit" in ext.columns else None
        tl = tl if tl is not None else time_limit
        row = dict.fromkeys(COLUMNS)
        row.update(run_id=f"ext-{solver}-{inst}", kind="solve", problem=f"{inst}#s0", instance=inst,
                   contender=solver, solver=solver, backend="external", outcome="error" if term == "error" else "ok",
                   termination=term, status="optimal" if term == "optimal" else ("feasible" if obj is not None
                                                                                  else "none"),
                   objective=obj, bound=bound, gap=relative_gap(obj, bound) if obj is not None else None,
                   time=t, wall_time=t, time_limit=tl, seed=0, gap_limit=_f(r.get("gap_limit", "")),
                   error="" if term != "error" else "reported as error", host="external", verified="unchecked",
                   verify_note="no .sol given", extra="")
        li = cat.get(inst)
        if li is not None:
            row.update(formulation=li.formulation, data=li.data, problem_class=li.problem_class,
                       sense=li.sense or "minimize")
        sol = (r.get("sol") or "").strip() if "sol" in ext.columns else ""
        if sol and verify and obj is not None:
            solp = Path(sol) if Path(sol).is_absolute() else p.parent / sol
            row.update(_verify_external(inst, solp, obj, where))
        elif sol and obj is None:
            row.update(verified="no", verify_note="a .sol without an objective value")
        rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["source"] = str(p)
    return df


def _verify_external(inst: str, sol, objective: float, where: str) -> dict:
    from milopt.bench.library import build, get_instance
    from milopt.bench.verify import verify_sol_file
    from milopt.runner import objective_sense
    from milopt.solvers import model_size

    li = get_instance(inst)
    model, bags, _typed, _b = build(li)
    v = verify_sol_file(model, sol, objective)
    size = model_size(model)
    return {"verified": "yes" if v["verified"] else "no", "verify_note": v["reason"][:300],
            "max_violation": v.get("max_violation"), "objective_recomputed": v.get("objective_recomputed"),
            "sense": objective_sense(model), "formulation": li.formulation, "data": li.data,
            "variables": size.get("variables"), "binaries": size.get("binaries"),
            "constraints": size.get("constraints"), "nonzeros": size.get("nonzeros")}
