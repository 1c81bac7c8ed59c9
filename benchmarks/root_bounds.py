"""Root bounds of the exact MI-SVM formulations, and cold vs warm vs strengthened SCIP runs.

Data: MUSK1 (shipped) or a balanced subset of it (half positive, half negative bags drawn with a
fixed seed), features standardised, C = 1, class weights ``kent-yu``.

Two tables:

* ``--table roots`` (default): for every formulation, its size, the continuous relaxation bound
  (integrality dropped; solved as a conic program by Clarabel when it is installed —
  ``pip install clarabel`` —, else by Ipopt (QP) or SCIP (cone form)), and SCIP's bound after the root node
  (``limits/nodes = 1``, root cuts included), next to the incumbent F every model is built with.
* ``--table starts``: ``misvm-bigm`` with SCIP for ``--time-limit`` seconds: cold (no start, the
  trivial F), warm (the default of ``milopt solve``), warm + ``strengthen=all``, and warm +
  ``strengthen=all`` + ``branch_priority=bagsize`` through ``scip-native``.

The roots table goes through :func:`milopt.runner.run_solve` (the code path of ``milopt solve``);
the starts table repeats its steps and also re-evaluates the decoded classifier.
Examples::

    python benchmarks/root_bounds.py --bags 16,24,92
    python benchmarks/root_bounds.py --table starts --bags 16,24 --time-limit 60
    python benchmarks/root_bounds.py --table starts --bags 16 --node-limit 200 --time-limit 1800
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


def conic_relaxation(bags, params, perspective=True):
    """Continuous relaxation of ``misvm-hull`` (or of ``misvm-bigm`` with ``perspective=None``)
    solved as a conic program by Clarabel (``pip install clarabel``; an interior-point SOCP solver).

    The linear rows and bounds come from the model's matrix form (``extract``; for the hull, the
    box form, whose rows the cone form contains), then the perspective cones
    ``||w^j||^2 <= 2 t^j lambda_j`` become second-order cones
    ``||(sqrt2 w^j, t^j - lambda_j)|| <= t^j + lambda_j``, with ``t^j <= F lambda_j``,
    ``tau >= sum_j t^j`` per bag and ``tau >= 1/2 ||w||^2``; objective ``tau + sum C xi``.
    Returns (bound, seconds, status)."""
    import clarabel
    import scipy.sparse as sp

    from milopt.runner import build_formulation
    from milopt.solvers.extract import extract

    form = "misvm-hull" if perspective is not None else "misvm-bigm"
    p = dict(params)
    if perspective is not None:
        p["perspective"] = False
    p.pop("warm_start", None)
    model, sb, _, _ = build_formulation(form, "", {**p, "upper_bound": params["upper_bound"]}, bags=bags)
    t0 = time.perf_counter()
    mf = extract(model)
    n = mf.c.size
    col = {id(v): j for j, v in enumerate(mf.variables)}
    rows, rhs = [], []

    def le(A, ub):  # A x <= ub
        rows.append(sp.csr_matrix(A))
        rhs.append(np.asarray(ub, dtype=float))

    A = sp.csr_matrix(mf.A)
    eq = np.isfinite(mf.row_lb) & np.isfinite(mf.row_ub) & (mf.row_lb == mf.row_ub)
    if perspective:
        J = list(model.J)
        nJ, d = len(J), model._milopt_meta["n_features"]
        extra = nJ + 1            # t^j, tau
    else:
        nJ, d, extra = 0, model._milopt_meta["n_features"], 1   # tau
    N = n + extra
    pad = lambda M: sp.hstack([sp.csr_matrix(M), sp.csr_matrix((M.shape[0], extra))], format="csr")
    # zero cone first (equalities), then nonnegative cone
    Aeq = pad(A[eq])
    beq = mf.row_lb[eq]
    ub = np.isfinite(mf.row_ub) & ~eq
    lb = np.isfinite(mf.row_lb) & ~eq
    le(pad(A[ub]), mf.row_ub[ub])
    le(-pad(A[lb]), -mf.row_lb[lb])
    I = sp.identity(N, format="csr")
    cub = np.concatenate([mf.col_ub, np.full(extra, np.inf)])
    clb = np.concatenate([mf.col_lb, np.zeros(extra)])   # t, tau >= 0
    for mask, sign, val in ((np.isfinite(cub), 1.0, cub), (np.isfinite(clb), -1.0, -clb)):
        le(sign * I[np.flatnonzero(mask)], val[mask])
    F = model._milopt_meta["upper_bound"] * (1 + 1e-9) + 1e-12
    tau = N - 1
    q = np.concatenate([mf.c, np.zeros(extra)])
    q[tau] = 1.0                                      # objective tau + sum C xi (drop 1/2||w||^2)
    soc_rows, soc_rhs, soc_dims = [], [], []
    wcols = [col[id(model.w[k])] for k in range(d)]

    def cone(vec_cols, vec_scale, a_lin, b_lin):
        """|| (scale * x[vec_cols], a_lin[0] x + b_lin[0]) || <= a_lin[1] x + b_lin[1] ... as rows."""
        k = len(vec_cols) + 1
        M = sp.lil_matrix((k + 1, N))
        b = np.zeros(k + 1)
        M[0, :] = -a_lin[1]
        b[0] = b_lin[1]
        M[1, :] = -a_lin[0]
        b[1] = b_lin[0]
        for r, (cc, sc) in enumerate(zip(vec_cols, vec_scale)):
            M[2 + r, cc] = -sc
        soc_rows.append(M.tocsr())
        soc_rhs.append(b)
        soc_dims.append(k + 1)

    def e(*pairs):
        v = sp.lil_matrix((1, N))
        for c, a in pairs:
            v[0, c] += a
        return v

    # tau >= 1/2 ||w||^2  <=>  ||(sqrt2 w, tau - 1)|| <= tau + 1
    cone(wcols, [np.sqrt(2)] * d, [e((tau, 1.0)), e((tau, 1.0))], [-1.0, 1.0])
    if perspective:
        bagof = {}
        for r, j in enumerate(J):
            tj = n + r
            lam = col[id(model.lam[j])]
            wc = [col[id(model.wc[j, k])] for k in range(d)]
            cone(wc, [np.sqrt(2)] * d, [e((tj, 1.0), (lam, -1.0)), e((tj, 1.0), (lam, 1.0))], [0.0, 0.0])
            le(e((tj, 1.0), (lam, -F)).tocsr(), [0.0])          # t^j <= F lambda_j
            bagof.setdefault(int(sb.bag_index[j]), []).append(tj)
        for I_, ts in bagof.items():                             # sum_j t^j - tau <= 0
            le(e(*[(t_, 1.0) for t_ in ts], (tau, -1.0)).tocsr(), [0.0])
    Aall = sp.vstack([Aeq] + rows + soc_rows, format="csc")
    ball = np.concatenate([beq] + rhs + soc_rhs)
    cones_ = [clarabel.ZeroConeT(Aeq.shape[0]), clarabel.NonnegativeConeT(int(sum(r.shape[0] for r in rows)))]
    cones_ += [clarabel.SecondOrderConeT(k) for k in soc_dims]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.time_limit = 1800.0
    sol = clarabel.DefaultSolver(sp.csc_matrix((N, N)), q, Aall, ball, cones_, settings).solve()
    return float(sol.obj_val) + float(mf.c0), time.perf_counter() - t0, str(sol.status)



def _header(*columns):
    """Print a Markdown table header with these columns."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))

def table_roots(sizes, seed, names, time_limit, root=True):
    from milopt.runner import run_solve

    try:
        import clarabel  # noqa: F401
        conic = True
    except ImportError:  # fall back: Ipopt for the QP relaxations, SCIP for the cone form
        conic = False

    _header("bags", "formulation", "vars", "binaries", "rows", "nonzeros", "F (incumbent)", "relaxation bound",
            "relaxation s", "root bound (SCIP, 1 node)", "root s")
    rows = []
    for nb in sizes:
        bags = musk1_subset(nb, seed)
        for name in names:
            form, extra = FORMULATIONS[name]
            params = {"warm_start": True, **extra}
            t0 = time.perf_counter()
            if root:
                res = run_solve(form, "", "scip", time_limit=time_limit, params=dict(params), bags=bags,
                                options={"limits/nodes": 1})
            else:  # sizes and F only
                from milopt.runner import build_formulation
                from milopt.solvers import model_size

                mdl, _, _, _ = build_formulation(form, "", dict(params), bags=bags)
                res = {"model_size": model_size(mdl), "warm_start_objective": mdl._milopt_meta["incumbent"],
                       "bound": None, "objective": None, "wall_time": 0.0, "termination": "not run"}
            if conic:
                persp = None if form == "misvm-bigm" else bool(extra.get("perspective", True))
                rp = {k: v for k, v in params.items() if k not in ("perspective", "warm_start")}
                rp["upper_bound"] = res["warm_start_objective"]
                relax, relax_s, relax_term = conic_relaxation(bags, rp, persp)
            else:
                relax, relax_s, relax_term = relaxation_bound(form, bags, dict(params), time_limit)
            size = res["model_size"]
            row = {"bags": nb, "formulation": name, **size, "incumbent": res.get("warm_start_objective"),
                   "relaxation": relax, "relaxation_termination": relax_term, "root_bound": res["bound"],
                   "root_objective": res["objective"], "root_seconds": res["wall_time"], "relaxation_seconds": relax_s,
                   "root_termination": res["termination"], "total_seconds": time.perf_counter() - t0}
            rows.append(row)
            print(f"| {nb} | {name} | {size.get('variables')} | {size.get('binaries')} | {size.get('constraints')} | "
                  f"{size.get('nonzeros')} | {_f(row['incumbent'])} | {_f(relax)} ({relax_term}) | {relax_s:.1f} | "
                  f"{_f(res['bound'])} | {res['wall_time']:.1f} |", flush=True)
    return rows


def table_starts(sizes, seed, names, time_limit, node_limit=None):
    """The steps of ``milopt solve`` (build with the params, hand the built start to the solver),
    plus a check: the decoded (w, b) re-evaluated with optimal slacks on the full data."""
    from milopt.models import misvm_bigm
    from milopt.runner import build_formulation
    from milopt.solvers import solve

    _header("bags", "start", "solver", "F (start)", "objective", "re-evaluated", "bound", "gap", "wall s", "nodes",
            "termination")
    rows = []
    for nb in sizes:
        bags = musk1_subset(nb, seed)
        for name in names:
            solver, params = STARTS[name]
            model, sb, _, build_s = build_formulation("misvm-bigm", "", dict(params), bags=bags)
            res = solve(model, solver, time_limit=time_limit, warm_start=bool(getattr(model, "_milopt_start", False)),
                        options={"limits/nodes": int(node_limit)} if node_limit else None)
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
    ap.add_argument("--node-limit", type=int, default=None,
                    help="starts: stop SCIP after this many nodes (a measure of work that does not depend on the "
                         "machine's load; give a generous --time-limit)")
    ap.add_argument("--no-root", action="store_true", help="roots: relaxations only (skip SCIP's root node)")
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.bags.split(",")]
    if a.table == "roots":
        names = a.only.split(",") if a.only else list(FORMULATIONS)
        rows = table_roots(sizes, a.seed, names, a.time_limit or 600.0, root=not a.no_root)
    else:
        names = a.only.split(",") if a.only else list(STARTS)
        rows = table_starts(sizes, a.seed, names, a.time_limit or 60.0, a.node_limit)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
