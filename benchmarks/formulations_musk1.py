"""MI-SVM formulation variants and the Ipopt bridge on MUSK1 (the figures of docs/misvm_bigm_variants.md).

Data: MUSK1 (92 bags, 476 instances, 166 features), features standardised on the whole set,
C = 1, class weights ``kent-yu`` (the misvm-bigm default).  Every solve runs in its own
process with a hard kill at (time limit + 120 s) (a solver call can
hang), one thread.

Rows printed:

* misvm-bigm (½‖w‖², big-M)            on SCIP (Pyomo scip_direct) and scip-native (PySCIPOpt)
* misvm-bigm disjunction=sos1          on SCIP            -- MIQP + SOS1, no big-M
* misvm-bigm disjunction=indicator     on scip-native     -- MIQP + indicator constraints, no big-M
* misvm-bigm norm=l1 (big-M)           on HiGHS and SCIP  -- MILP
* misvm-bigm norm=l1 disjunction=sos1  on SCIP            -- MILP + SOS1
* misvm-dual-qp kernel=rbf             on Ipopt and HiGHS (and SCIP) -- the dual QP of Kent & Yu eq. 3

For each: termination, objective, best bound, gap, wall seconds (time to optimality when
optimal, else the gap at the time limit), CPU seconds of the solving process and the 1-minute
load average at the end (the machine is shared: a wall-clock limit on a loaded machine buys
fewer CPU seconds), nodes / iterations, build seconds.

Usage::

    python benchmarks/formulations_musk1.py [--time-limit 60] [--data musk1] [--only bigm,l1,...]
"""
from __future__ import annotations

import argparse
import json
import os
import multiprocessing as mp
import sys
import time

CASES = [
    ("bigm", "misvm-bigm", {}, ["scip", "scip-native"]),
    ("sos1", "misvm-bigm", {"disjunction": "sos1"}, ["scip"]),
    ("indicator", "misvm-bigm", {"disjunction": "indicator"}, ["scip-native"]),
    ("l1", "misvm-bigm", {"norm": "l1"}, ["highs", "scip"]),
    ("l1-sos1", "misvm-bigm", {"norm": "l1", "disjunction": "sos1"}, ["scip"]),
    ("dual-rbf", "misvm-dual-qp", {"kernel": "rbf"}, ["ipopt", "highs", "scip"]),
]


def _worker(q, data, formulation, params, solver, time_limit):
    try:
        import milopt
        from milopt import models
        from milopt.metrics import standardize
        from milopt.solvers import model_size, solve

        bags = standardize(milopt.load(data))
        t0 = time.perf_counter()
        m = models.get(formulation).build(bags, C=1.0, **params)
        build = time.perf_counter() - t0
        size = model_size(m)
        c0 = time.process_time()
        r = solve(m, solver, time_limit=time_limit, threads=1)
        cpu = time.process_time() - c0
        q.put({"cpu": cpu, "load": os.getloadavg()[0], "termination": str(r.termination), "status": str(r.status), "objective": r.objective,
               "bound": r.bound, "gap": r.gap, "wall": r.wall_time, "nodes": r.nodes, "iterations": r.iterations,
               "build": build, "size": size, "version": r.solver_version})
    except Exception as exc:  # reported as a row, not a crash
        q.put({"error": f"{type(exc).__name__}: {exc}"})


def run_one(data, formulation, params, solver, time_limit) -> dict:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_worker, args=(q, data, formulation, params, solver, time_limit))
    t0 = time.perf_counter()
    p.start()
    try:
        out = q.get(timeout=time_limit + 120)
    except Exception:
        out = {"error": f"killed after {time.perf_counter() - t0:.0f} s (solver did not return)"}
    p.join(5)
    if p.is_alive():
        p.kill()
        p.join()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="musk1")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--only", default="", help="comma-separated case keys: " + ",".join(c[0] for c in CASES))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    rows = []
    for key, form, params, solvers in CASES:
        if only and key not in only:
            continue
        for s in solvers:
            out = run_one(args.data, form, params, s, args.time_limit)
            rows.append({"case": key, "formulation": form, "params": params, "solver": s, **out})
            print(_fmt(rows[-1]), flush=True)
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
    return 0


def _num(v, f="{:.6g}"):
    return "-" if v is None else (f.format(v) if isinstance(v, float) else str(v))


def _fmt(r) -> str:
    tag = f"{r['formulation']} {','.join(f'{k}={v}' for k, v in r['params'].items()) or '(default)'} [{r['solver']}]"
    if "error" in r:
        return f"{tag:<52} ERROR {r['error']}"
    gap = r["gap"]
    gap_s = "-" if gap is None or gap == float("inf") else f"{100 * gap:.3g}%"
    sz = r["size"]
    return (f"{tag:<52} {r['termination']:<11} obj={_num(r['objective'])} bound={_num(r['bound'])} gap={gap_s} "
            f"wall={r['wall']:.1f}s cpu={r['cpu']:.1f}s load={r['load']:.1f} nodes={_num(r['nodes'])} iters={_num(r['iterations'])} build={r['build']:.2f}s "
            f"size={sz.get('variables')}x{sz.get('constraints')} bin={sz.get('binaries')} nnz={sz.get('nonzeros')}")


if __name__ == "__main__":
    sys.exit(main())
