"""Root bounds of the exact MI-SVM formulations, and cold vs warm vs strengthened SCIP runs.

Data: MUSK1 (shipped) or a balanced subset of it (half positive, half negative bags drawn with a
fixed seed), features standardised, C = 1, class weights ``kent-yu``.

Two tables:

* ``--table roots`` (default): for every formulation, its size, the continuous relaxation bound
  (integrality dropped, solved by SCIP), and SCIP's bound after the root node
  (``limits/nodes = 1``, root cuts included), next to the incumbent F every model is built with.
* ``--table starts``: ``misvm-bigm`` with SCIP for ``--time-limit`` seconds: cold (no start, the
  trivial F), warm (the default of ``milopt solve``), warm + ``strengthen=all``, and warm +
  ``strengthen=all`` + ``branch_priority=bagsize`` through ``scip-native``.

The roots table goes through :func:`milopt.runner.run_solve` (the code path of ``milopt solve``);
the starts table repeats its steps and also re-evaluates the decoded classifier.
Examples::

    python benchmarks/root_bounds.py --bags 16,24,92
    python benchmarks/root_bounds.py --table starts --bags 16,24 --time-limit 60
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

FORMULATIONS = {
    "bigm": ("misvm-bigm", {}),
    "bigm+bounds": ("misvm-bigm", {"strengthen": "all"}),
    "hull-box": ("misvm-hull", {"perspective": False}),
    "hull-persp": ("misvm-hull", {"perspective": True}),
}

STARTS = {
    "cold": ("scip", {"warm_start": False}),
    "warm": ("scip", {"warm_start": True}),
    "warm+strengthen": ("scip", {"warm_start": True, "strengthen": "all"}),
    "warm+strengthen+priority": ("scip-native", {"warm_start": True, "strengthen": "all", "branch_priority": "bagsize"}),
}


def musk1_subset(n_bags: int, seed: int):
    """``n_bags`` bags of MUSK1 (half positive), drawn with ``seed``; all of MUSK1 for n >= 92."""
    from milopt.data.loading import load

    bags = load("musk1")
    if n_bags >= bags.n_bags:
        return bags
    rng = np.random.default_rng(seed)
    pos = np.flatnonzero(bags.y == 1)
    neg = np.flatnonzero(bags.y != 1)
    k = n_bags // 2
    ids = np.sort(np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, n_bags - k, replace=False)]))
    import dataclasses

    return dataclasses.replace(bags.subset(ids), name=f"musk1[{n_bags} bags, seed {seed}]")


def relaxation_bound(formulation, bags, params, time_limit):
    """Continuous relaxation (binaries in [0, 1]) of the model: a QP solved by Ipopt, a QCQP
    (perspective cones) by SCIP."""
    import pyomo.environ as pe

    from milopt.runner import build_formulation
    from milopt.solvers import solve

    from milopt.solvers.driver import classify

    model, _, _, _ = build_formulation(formulation, "", params, bags=bags)
    pe.TransformationFactory("core.relax_integer_vars").apply_to(model)
    model._milopt_class = None  # classify again: QP (Ipopt) or QCQP (SCIP)
    cls, _ = classify(model)
    r = solve(model, "ipopt" if cls == "QP" else "scip", time_limit=time_limit)
    return r.objective if r.status.name == "OPTIMAL" else r.bound, r.wall_time, str(r.termination)


def table_roots(sizes, seed, names, time_limit):
    from milopt.runner import run_solve

    print("| bags | formulation | vars | binaries | rows | nonzeros | F (incumbent) | relaxation bound | "
          "root bound (SCIP, 1 node) | root s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for nb in sizes:
        bags = musk1_subset(nb, seed)
        for name in names:
            form, extra = FORMULATIONS[name]
            params = {"warm_start": True, **extra}
            t0 = time.perf_counter()
            res = run_solve(form, "", "scip", time_limit=time_limit, params=dict(params), bags=bags,
                            options={"limits/nodes": 1})
            relax, relax_s, relax_term = relaxation_bound(form, bags, dict(params), time_limit)
            size = res["model_size"]
            row = {"bags": nb, "formulation": name, **size, "incumbent": res.get("warm_start_objective"),
                   "relaxation": relax, "relaxation_termination": relax_term, "root_bound": res["bound"],
                   "root_objective": res["objective"], "root_seconds": res["wall_time"],
                   "root_termination": res["termination"], "total_seconds": time.perf_counter() - t0}
            rows.append(row)
            print(f"| {nb} | {name} | {size.get('variables')} | {size.get('binaries')} | {size.get('constraints')} | "
                  f"{size.get('nonzeros')} | {_f(row['incumbent'])} | {_f(relax)} | {_f(res['bound'])} | "
                  f"{res['wall_time']:.1f} |", flush=True)
    return rows


def table_starts(sizes, seed, names, time_limit):
    """The steps of ``milopt solve`` (build with the params, hand the built start to the solver),
    plus a check: the decoded (w, b) re-evaluated with optimal slacks on the full data."""
    from milopt.models import misvm_bigm
    from milopt.runner import build_formulation
    from milopt.solvers import solve

    print("| bags | start | solver | F (start) | objective | re-evaluated | bound | gap | wall s | nodes | termination |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for nb in sizes:
        bags = musk1_subset(nb, seed)
        for name in names:
            solver, params = STARTS[name]
            model, sb, _, build_s = build_formulation("misvm-bigm", "", dict(params), bags=bags)
            res = solve(model, solver, time_limit=time_limit, warm_start=bool(getattr(model, "_milopt_start", False)))
            check = None
            if res.ok:
                sol = misvm_bigm.decode(model)
                check = misvm_bigm.objective_value(sb, sol["w"], sol["b"])
            row = {"bags": nb, "start": name, "solver": solver, "incumbent": model._milopt_meta["incumbent"],
                   "objective": res.objective, "reevaluated": check, "bound": res.bound, "gap": res.gap,
                   "wall_time": res.wall_time, "nodes": res.nodes, "termination": str(res.termination),
                   "build_seconds": build_s}
            rows.append(row)
            print(f"| {nb} | {name} | {solver} | {_f(row['incumbent'])} | {_f(res.objective)} | {_f(check)} | "
                  f"{_f(res.bound)} | {_f(res.gap)} | {res.wall_time:.1f} | {res.nodes} | {res.termination} |",
                  flush=True)
    return rows


def _f(v):
    return "—" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", choices=("roots", "starts"), default="roots")
    ap.add_argument("--bags", default="16,24,92", help="comma list of subset sizes (92 = all of MUSK1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None, help="comma list of formulations (roots) or starts (starts)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per run (starts: default 60; roots: default 600 per root solve)")
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.bags.split(",")]
    if a.table == "roots":
        names = a.only.split(",") if a.only else list(FORMULATIONS)
        rows = table_roots(sizes, a.seed, names, a.time_limit or 600.0)
    else:
        names = a.only.split(",") if a.only else list(STARTS)
        rows = table_starts(sizes, a.seed, names, a.time_limit or 60.0)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
