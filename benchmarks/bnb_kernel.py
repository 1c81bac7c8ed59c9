"""Exact kernel MI-SVM: the branch and bound on a Gram matrix, or the misvm-kernel-bigm model by any solver.

Features are standardised; kernels as ``milopt/models/misvm_kernel_bigm.py``: RBF exp(-γ‖x − x′‖²),
poly (γ x·x′ + coef0)^degree, linear x·x′, γ = 1/d by default.  Two modes:

* ``--solver direct`` (default): :func:`milopt.algorithms.bnb.solve_bags` with ``kernel=K`` from
  Python (no Pyomo model);
* ``--solver bnb|scip|cplex|gurobi|xpress``: the formulation ``misvm-kernel-bigm`` built and
  solved through :func:`milopt.runner.run_solve`, exactly what ``milopt solve
  misvm-kernel-bigm --solver S`` does (for plain DATA strings the CLI command is printed).

Prints termination, objective, bound, gap, nodes, seconds and the CPU seconds of the process.
``--split`` (direct mode) adds the CPU seconds spent in the node QPs and in the look-ahead (the
single-candidate gains and the two-level joint steps), the per-node split of a run; with
``branching=strong`` the number of children's QPs the rule solved is printed too (they are not
in the node QPs' seconds).  ``--blocks N`` (direct mode) adds one row per N evaluated nodes:
CPU milliseconds per node, of them in the node QPs and in the look-ahead, node-QP iterations per
node, node QPs handed to the interior point after the active-set method failed, open nodes,
mean depth of the evaluated nodes and the lower bound (the per-node cost along the tree; the
rows are the JSON's ``blocks``).  Instances
as in benchmarks/exact_frontier.py (``nested:musk1:N``, ``musk1``, generators).

Usage::

    python benchmarks/bnb_kernel.py --data nested:musk1:20 --kernel rbf --time-limit 60
    python benchmarks/bnb_kernel.py --data musk1 --kernel rbf --time-limit 600 --solver bnb --json
    python benchmarks/bnb_kernel.py --data 'gen:subset?data=musk1&bags=12&seed=0' --solver scip --time-limit 60
    python benchmarks/bnb_kernel.py --data musk1 --split --time-limit 0 \
        --set node_limit=3000 kick_seconds=0 kick_every=0 heuristic_share=0
    python benchmarks/bnb_kernel.py --data musk1 --blocks 1000 --time-limit 0 \
        --set node_limit=20000 kick_seconds=0 kick_every=0 heuristic_share=0
"""
from __future__ import annotations

import contextlib
import json
import sys
import time

from _bnb_args import load_bags, parser, set_options


@contextlib.contextmanager
def cpu_split(acc):
    """CPU seconds of the node evaluation's parts, added to ``acc`` while the block runs: ``qp``
    (the node QPs), ``lookahead`` (single-candidate gains and two-level joint steps)."""
    from milopt.algorithms.bnb.evaluate import NodeEvaluation

    parts = {"_node_qp": "qp", "gains": "lookahead", "_two_bag_gains": "lookahead"}
    saved = {name: getattr(NodeEvaluation, name) for name in parts}

    def timed(fn, key):
        def run(*a, **k):
            t = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                acc[key] = acc.get(key, 0.0) + time.process_time() - t
        return run

    for name, key in parts.items():
        setattr(NodeEvaluation, name, timed(saved[name], key))
    try:
        yield acc
    finally:
        for name, fn in saved.items():
            setattr(NodeEvaluation, name, fn)


@contextlib.contextmanager
def node_blocks(every, acc, rows):
    """One row per ``every`` evaluated nodes into ``rows`` (see the module's ``--blocks``);
    ``acc``: the running split of :func:`cpu_split`."""
    from milopt.algorithms.bnb.search import Search

    saved = Search.apply
    mark = {"cpu": time.process_time(), "acc": {}, "its": 0, "fail": 0, "depth": 0}

    def apply(self, node, res):
        out = saved(self, node, res)
        s = self.s
        mark["depth"] += node.depth
        if s.nodes % every == 0:
            now = time.process_time()
            part = {k: acc.get(k, 0.0) - mark["acc"].get(k, 0.0) for k in ("qp", "lookahead")}
            rows.append({"nodes": s.nodes, "ms_per_node": 1e3 * (now - mark["cpu"]) / every,
                         "qp_ms": 1e3 * part["qp"] / every, "lookahead_ms": 1e3 * part["lookahead"] / every,
                         "qp_iterations": (s.iterations - mark["its"]) / every,
                         "fallbacks": s.active_set_fallbacks - mark["fail"], "open": len(s.queue),
                         "mean_depth": mark["depth"] / every, "lower": self.lower()})
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rows[-1].items()),
                  file=sys.stderr, flush=True)
            mark.update(cpu=now, acc=dict(acc), its=s.iterations, fail=s.active_set_fallbacks, depth=0)
        return out

    Search.apply = apply
    try:
        yield rows
    finally:
        Search.apply = saved


def main(argv=None):
    ap = parser(__doc__, "nested:musk1:20", time_limit=60.0)
    ap.add_argument("--kernel", choices=("rbf", "poly", "linear"), default="rbf")
    ap.add_argument("--gamma", type=float, default=None, help="RBF width / poly scale (default 1 / features)")
    ap.add_argument("--degree", type=int, default=2)
    ap.add_argument("--coef0", type=float, default=1.0)
    ap.add_argument("--solver", default="direct", help="direct (solve_bags) or a backend for misvm-kernel-bigm")
    ap.add_argument("--split", action="store_true", help="CPU seconds in the node QPs and in the look-ahead (direct)")
    ap.add_argument("--blocks", type=int, default=0, metavar="N",
                    help="one row of per-node costs per N evaluated nodes (direct)")
    a = ap.parse_args(argv)
    if (a.split or a.blocks) and a.solver != "direct":
        raise SystemExit("--split, --blocks: only with --solver direct")
    if a.blocks < 0:
        raise SystemExit(f"--blocks: expected a number of nodes >= 1, got {a.blocks}")
    limit = a.time_limit if a.time_limit else None
    from milopt.models import misvm_kernel_bigm as kb
    from milopt.numerics import bag_costs

    bags = load_bags(a)
    opts = set_options(a)
    gamma = "auto" if a.gamma is None else a.gamma
    if a.solver == "direct":
        from milopt.algorithms.bnb import solve_bags

        K = kb.gram_matrix(bags.X, None, a.kernel, gamma, a.degree, a.coef0)
        acc, blocks = {}, []
        cpu = time.process_time()
        with contextlib.ExitStack() as stack:
            if a.split or a.blocks:
                stack.enter_context(cpu_split(acc))
            if a.blocks:
                stack.enter_context(node_blocks(a.blocks, acc, blocks))
            out = solve_bags(bags, costs=bag_costs(bags, 1.0), kernel=K, time_limit=limit, **opts)
        cpu = time.process_time() - cpu
        term, obj, bound, nodes, secs = (out["termination"], out["objective"], out["bound"], out["nodes"],
                                         out["seconds"])
        strong = out.get("strong_qps", 0)
    else:
        from milopt.params import coerce
        from milopt.runner import run_solve

        params = {"kernel": a.kernel, "gamma": gamma, "degree": a.degree, "coef0": a.coef0,
                  **{k: coerce(v) for k, v in opts.items()}}
        cpu = time.process_time()
        out = run_solve("misvm-kernel-bigm", a.data, a.solver, time_limit=limit, params=params, bags=bags)
        cpu = time.process_time() - cpu
        term, obj, bound, nodes, secs = (out["termination"], out["objective"], out["bound"], out["nodes"],
                                         out["wall_time"])
        strong = None
    gap = (obj - bound) / max(abs(obj), 1e-10) if obj is not None and bound is not None else float("inf")
    row = {"data": a.data, "kernel": a.kernel, "gamma": gamma, "solver": a.solver, "bags": bags.n_bags,
           "instances": bags.n_instances, "termination": str(term), "objective": obj, "bound": bound, "gap": gap,
           "nodes": nodes, "seconds": secs, "cpu_seconds": cpu}
    if strong:
        row["strong_qps"] = strong
    if a.blocks:
        row["blocks"] = blocks
    if a.split:
        row.update({f"{k}_cpu_seconds": v for k, v in acc.items()})
        row["lookahead_per_qp"] = acc.get("lookahead", 0.0) / max(acc.get("qp", 0.0), 1e-12)
    if a.json:
        print(json.dumps(row, indent=1))
    else:
        print(f"{a.data} {a.kernel} {a.solver}: {row['termination']} objective={obj:.7g} bound={bound:.7g} "
              f"gap={100 * gap:.3f}% nodes={nodes} {secs:.1f} s ({cpu:.1f} CPU s)")
        if a.split:
            print(f"node QPs {acc.get('qp', 0.0):.2f} CPU s, look-ahead {acc.get('lookahead', 0.0):.2f} CPU s "
                  f"({row['lookahead_per_qp']:.2f} x the node QPs)")
        if strong:
            print(f"strong branching: {strong} children's QPs (not in the node QPs' CPU seconds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
