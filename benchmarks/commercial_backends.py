"""Figures for docs/backends.md: the free editions' size limits, per-call overheads, and the
commercial backends next to SCIP and milopt's branch and bound on small instances.

Usage::

    python benchmarks/commercial_backends.py --limits     # where each free licence refuses (at limit / limit + 1)
    python benchmarks/commercial_backends.py --overhead   # licence probe, first and later tiny solves
    python benchmarks/commercial_backends.py --compare    # market split and MI-SVM (big-M) per solver
    python benchmarks/commercial_backends.py --status-tables   # the declared status maps as Markdown
    python benchmarks/commercial_backends.py --ctrlc-cost      # Xpress: a solve to optimality without / with the Ctrl-C callback
    python benchmarks/commercial_backends.py --accuracy        # a random MIQP (the tests' seed 1) and its fixed-integer QP
    python benchmarks/commercial_backends.py              # all three

The limits are measured by handing each solver, through its backend's ``solve_matrix`` (no
``skip`` check), a model exactly at and one past the limit; the outcome is ``ok`` or the
backend's one-line licence message.  Solvers that are not installed are left out.
"""
from __future__ import annotations

import argparse
import importlib
import math
import time

import numpy as np
import scipy.sparse as sp

from milopt.matrix import MatrixForm
from milopt.solvers.backend import SolveOptions

MODULES = {"cplex": "milopt.solvers.cplex_backend", "gurobi": "milopt.solvers.gurobi_backend",
           "xpress": "milopt.solvers.xpress_backend"}
INF = math.inf


def backend(name):
    b = importlib.import_module(MODULES[name]).BACKEND
    return b if b.available() else None


def lp(n_cols: int, n_rows: int, quadratic: bool = False) -> MatrixForm:
    """min -Σx (+ ½‖x‖²), x in [0, 2], rows x_{i mod n} <= 1."""
    r = np.arange(n_rows)
    A = sp.csr_matrix((np.ones(n_rows), (r, r % n_cols)), shape=(n_rows, n_cols))
    return MatrixForm(c=-np.ones(n_cols), c0=0.0, Q=sp.identity(n_cols, format="csc") if quadratic else None, A=A,
                      row_lb=np.full(n_rows, -INF), row_ub=np.ones(n_rows), col_lb=np.zeros(n_cols),
                      col_ub=np.full(n_cols, 2.0), integrality=np.zeros(n_cols, dtype=bool),
                      col_names=[f"x{j}" for j in range(n_cols)], row_names=[f"r{i}" for i in range(n_rows)])


def with_indicators(mf: MatrixForm, k: int) -> MatrixForm:
    """``mf`` plus a binary column z and ``k`` indicator rows z = 1 ⇒ x_0 <= 1."""
    from dataclasses import replace

    n = mf.n_cols
    G = sp.csr_matrix((np.ones(k), (np.arange(k), np.zeros(k, dtype=int))), shape=(k, n + 1))
    return replace(mf, c=np.r_[mf.c, 0.0], A=sp.hstack([mf.A, sp.csr_matrix((mf.A.shape[0], 1))]).tocsr(),
                   col_lb=np.r_[mf.col_lb, 0.0], col_ub=np.r_[mf.col_ub, 1.0], integrality=np.r_[mf.integrality, True],
                   col_names=mf.col_names + ["z"], ind_binary=np.full(k, n), ind_active=np.ones(k, dtype=np.int8),
                   ind_A=G, ind_lb=np.full(k, -INF), ind_ub=np.ones(k), ind_names=[f"i{r}" for r in range(k)])


def with_qrow(mf: MatrixForm) -> MatrixForm:
    """``mf`` plus the convex quadratic row x_0² <= 1."""
    from dataclasses import replace

    from milopt.matrix import QuadRow

    q = QuadRow("q", np.zeros(0, dtype=np.int64), np.zeros(0), np.array([0]), np.array([0]), np.array([1.0]), ub=1.0)
    return replace(mf, qrows=[q])


#: (count, model of that count, free limit): each is solved at the limit and one past it
LIMIT_CASES = {
    "cplex": [("variables", lambda k: lp(k, 1), 1000), ("constraints", lambda k: lp(1, k), 1000),
              ("linear + indicator rows", lambda k: with_indicators(lp(1, k - 1), 1), 1000),
              ("linear + quadratic rows", lambda k: with_qrow(lp(1, k - 1)), 1000)],
    "gurobi": [("variables", lambda k: lp(k, 1), 2000), ("constraints", lambda k: lp(1, k), 2000),
               ("linear + indicator rows", lambda k: with_indicators(lp(1, k - 1), 1), 2000),
               ("variables of a QP", lambda k: lp(k, 1, True), 200),
               ("variables with a quadratic row", lambda k: with_qrow(lp(k, 1)), 200)],
    "xpress": [("rows + columns", lambda k: lp(k - 1, 1), 5000),
               ("rows + columns, an indicator row among them", lambda k: with_indicators(lp(k - 3, 1), 1), 5000),
               ("rows + columns of a QP", lambda k: lp(k - 1, 1, True), 200),
               ("rows + columns with a quadratic row", lambda k: with_qrow(lp(k - 2, 1)), 200)],
}


def status_tables() -> None:
    """The status maps as Markdown tables (termination → the solver's codes and names)."""
    import warnings
    from collections import defaultdict

    order = ["optimal", "time_limit", "iteration_limit", "infeasible", "unbounded", "infeasible_or_unbounded",
             "interrupted", "error", "unknown"]

    def table(title, rows):
        print(f"\n**{title}**\n\n| termination | solver codes |\n|---|---|")
        g = defaultdict(list)
        for label, t in rows:
            g[str(t)].append(label)
        for t in order:
            if t in g:
                print(f"| {t} | {', '.join(g[t])} |")

    if backend("cplex"):
        import cplex

        st = cplex.Cplex().solution.status
        names = {getattr(st, k): k for k in dir(st) if not k.startswith("_") and isinstance(getattr(st, k), int)}
        mod = importlib.import_module(MODULES["cplex"])
        table("CPLEX", [(f"{k} {names.get(k, '')}", v) for k, v in mod.STATUS_MAP.items()])
    if backend("gurobi"):
        from gurobipy import GRB

        names = {getattr(GRB.Status, k): k for k in dir(GRB.Status) if k.isupper()}
        mod = importlib.import_module(MODULES["gurobi"])
        table("Gurobi", [(f"{k} {names.get(k, '')}", v) for k, v in mod.STATUS_MAP.items()])
    if backend("xpress"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import xpress as xp
        sol = {s.value: s.name for s in xp.SolStatus}
        stop = {s.value: s.name for s in xp.StopType}
        mod = importlib.import_module(MODULES["xpress"])
        table("Xpress", [(f"{how}/" + (sol[c] if how == "completed" else stop.get(c, str(c))), t)
                         for (how, c), t in mod.STATUS_MAP.items()])


def limits() -> None:
    print("| solver | count | at the limit | one past it |")
    print("|---|---|---|---|")
    for name, cases in LIMIT_CASES.items():
        b = backend(name)
        if b is None:
            continue
        for what, make, k in cases:
            out = []
            for size in (k, k + 1):
                r = b.solve_matrix(make(size), SolveOptions(time_limit=30))
                out.append(f"{size:,}: ok ({r.termination})" if not r.extra.get("licence_limit")
                           else f"{size:,}: refused")
            print(f"| {name} | {what} | {out[0]} | {out[1]} |")
    for name in MODULES:
        b = backend(name)
        if b is not None:
            print(f"\n{name}, the one-line message past the limit:\n  "
                  + b.solve_matrix(LIMIT_CASES[name][0][1](LIMIT_CASES[name][0][2] + 1), SolveOptions()).status_text)


def overhead() -> None:
    from milopt.solvers._commercial import probe_once

    print("| solver | licence probe (s) | first tiny solve (s) | later tiny solve (s) |")
    print("|---|---|---|---|")
    probes = {"cplex": "_probe_community", "gurobi": "_probe_restricted", "xpress": "_probe_community"}
    for name in MODULES:
        b = backend(name)
        if b is None:
            continue
        mod = importlib.import_module(MODULES[name])
        tiny = lp(10, 5)
        t0 = time.perf_counter()
        b.solve_matrix(tiny, SolveOptions())
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        limited = probe_once(name, getattr(mod, probes[name]))
        probe = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(5):
            b.solve_matrix(tiny, SolveOptions())
        later = (time.perf_counter() - t0) / 5
        print(f"| {name} | {probe:.3f} ({'limited' if limited else 'full'}) | {first:.3f} | {later:.3f} |")


def market_split(m=4, n=30, seed=0) -> MatrixForm:
    """min Σ|a_i'x - d_i| over binary x (Cornuéjols–Dawande)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, (m, n)).astype(float)
    d = np.floor(a.sum(1) / 2)
    A = sp.hstack([sp.csr_matrix(a), sp.eye(m), -sp.eye(m)]).tocsr()
    N = n + 2 * m
    return MatrixForm(c=np.r_[np.zeros(n), np.ones(2 * m)], c0=0.0, Q=None, A=A, row_lb=d, row_ub=d,
                      col_lb=np.zeros(N), col_ub=np.r_[np.ones(n), np.full(2 * m, INF)],
                      integrality=np.r_[np.ones(n), np.zeros(2 * m)].astype(bool),
                      col_names=[f"x{j}" for j in range(N)], row_names=[f"r{i}" for i in range(m)])


def _row(solver, inst, r, wall, traj):
    first = f"{traj[0][0]:.2f}" if traj else "-"
    last = f"{traj[-1][0]:.2f}" if traj else "-"
    obj = "-" if r.objective is None else f"{r.objective:.6g}"
    bound = "-" if r.bound is None else f"{r.bound:.6g}"
    print(f"| {inst} | {solver} | {r.termination} | {obj} | {bound} | {wall:.2f} | {r.nodes if r.nodes is not None else '-'} "
          f"| {len(traj)} | {first} / {last} |")


def compare(limit: float, threads: int) -> None:
    import milopt
    from milopt.models import formulation
    from milopt.numerics import standardize
    from milopt.solvers import driver, solve

    print(f"time limit {limit:g} s, threads {threads}")
    print("| instance | solver | termination | objective | bound | wall s | nodes | incumbents | first / last incumbent s |")
    print("|---|---|---|---|---|---|---|---|---|")
    ms = market_split()
    for name in ("scip", "cplex", "gurobi", "xpress"):
        b = driver.backends().get(name)
        if b is None or not b.available():
            continue
        t0 = time.perf_counter()
        raw = b.solve_matrix(ms, SolveOptions(time_limit=limit, threads=threads))
        wall = time.perf_counter() - t0
        _row(name, "market split 4x30", raw, wall, raw.trajectory)
    for bags_n in (12, 20):
        bags = standardize(milopt.load(f"gen:kent-yu?scenario=1&bags={bags_n}&seed=0"))
        f = formulation("misvm-bigm")
        for name in ("bnb", "scip", "cplex", "gurobi", "xpress"):
            b = driver.backends().get(name)
            if b is None or not b.available():
                continue
            model = f.build(bags)
            t0 = time.perf_counter()
            try:
                r = solve(model, name, time_limit=limit, threads=threads, mip_gap=1e-6)
            except Exception as exc:  # a licence refusal before solving
                print(f"| misvm-bigm kent-yu {bags_n} bags | {name} | refused: {str(exc)[:90]}... | | | | | | |")
                continue
            wall = time.perf_counter() - t0
            _row(name, f"misvm-bigm kent-yu {bags_n} bags", r, wall, r.extra.get("trajectory", []))


def ctrlc_cost(threads: int = 2, repeat: int = 2) -> None:
    """Xpress solving a 3 x 24 market split to optimality without and with the backend's Ctrl-C
    callback (callbacks on the main thread, a check-time callback): nodes and wall time."""
    if backend("xpress") is None:
        return
    xb = importlib.import_module(MODULES["xpress"])
    mf = market_split(3, 24, 0)
    print("| run | Ctrl-C callback | termination | objective | nodes | wall s |")
    print("|---|---|---|---|---|---|")
    for rep in range(repeat):
        for with_cb in (False, True):
            p = xb._problem()
            p.controls.outputlog = 0
            xb._load(p, mf)
            c = xb._CtrlC()
            if with_cb:
                c.attach(p)
            p.controls.timelimit = 120
            p.controls.threads = threads
            t0 = time.perf_counter()
            _, sol = p.optimize()
            wall = time.perf_counter() - t0
            c.restore()
            print(f"| {rep + 1} | {'with' if with_cb else 'without'} | {'optimal' if int(sol) == 1 else int(sol)} "
                  f"| {p.attributes.objval:.6g} | {int(p.attributes.nodes):,} | {wall:.2f} |")


def accuracy(seed: int = 1) -> None:
    """The random MIQP of ``tests/test_commercial.py`` (seed 1) with a 1e-9 gap per solver, then
    the QP with its integers fixed at the optimum: objective and bound."""
    import importlib.util
    from dataclasses import replace
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tests" / "test_commercial.py"
    spec = importlib.util.spec_from_file_location("_test_commercial", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mf = mod.random_mixed_form(seed)
    from milopt.solvers import scip_backend

    print("| solver | MIQP objective | MIQP bound | QP with the integers fixed |")
    print("|---|---|---|---|")
    ref = scip_backend.BACKEND.solve_matrix(mf, SolveOptions(time_limit=60, mip_gap=1e-9))
    integ = np.asarray(mf.integrality, dtype=bool)
    lb, ub = mf.col_lb.copy(), mf.col_ub.copy()
    lb[integ] = ub[integ] = np.round(ref.x[integ])
    qp = replace(mf, col_lb=lb, col_ub=ub, integrality=np.zeros(mf.n_cols, dtype=bool), priority=None)
    rq = scip_backend.BACKEND.solve_matrix(qp, SolveOptions(time_limit=60))
    print(f"| scip | {ref.objective:.9f} | {ref.bound:.9f} | {rq.objective:.9f} |")
    for name in MODULES:
        b = backend(name)
        if b is None:
            continue
        r = b.solve_matrix(mf, SolveOptions(time_limit=60, mip_gap=1e-9))
        rq = b.solve_matrix(qp, SolveOptions(time_limit=60))
        print(f"| {name} | {r.objective:.9f} | {r.bound:.9f} | {rq.objective:.9f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limits", action="store_true")
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--status-tables", action="store_true")
    ap.add_argument("--accuracy", action="store_true", help="a random MIQP and its fixed-integer QP per solver")
    ap.add_argument("--ctrlc-cost", action="store_true", help="Xpress to optimality without / with the Ctrl-C callback")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    if a.status_tables:
        status_tables()
        return 0
    if a.ctrlc_cost:
        ctrlc_cost()
        return 0
    if a.accuracy:
        accuracy()
        return 0
    every = not (a.limits or a.overhead or a.compare)
    if a.limits or every:
        limits()
    if a.overhead or every:
        print()
        overhead()
    if a.compare or every:
        print()
        compare(a.time_limit, a.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
