"""The exact frontier of MI-SVM: which path proves which instance optimal, and how fast.

Instances: balanced MUSK1 subsets (fixed seed; 92 = all of MUSK1) and generated data sets;
features standardised, C = 1, kent-yu class weights (as ``milopt solve misvm-bigm``).
Paths (``--paths``, comma separated, each ``NAME=FORMULATION:SOLVER[:warm][:key=value...]``):

* ``scip-cold=misvm-bigm:scip``           SCIP on the big-M MIQP, no start
* ``scip-warm=misvm-bigm:scip:warm``      SCIP with the SIL warm start (``--warm-start``)
* ``scip-strong=misvm-bigm:scip:warm:strengthen=all``  + incumbent bounds and hull reduction
* ``hull=misvm-hull:scip``                SCIP on the convex-hull (perspective) formulation
* ``bnb=misvm-bigm:bnb``                  milopt's branch and bound over witness selections

Further formulations or options are added the same way (values typed as ``--set`` does).
Every run is a separate process, killed at 1.5 x its limit + 60 s (SCIP can hang, see
docs/solvers.md); runs are sequential.  The root bound of each path on MUSK1 (92 bags) is
measured by a run limited to the root node (SCIP ``limits/nodes=1``, bnb ``node_limit=1``).

Usage::

    python benchmarks/exact_frontier.py                         # 8..40 bags + generated, 60 s
    python benchmarks/exact_frontier.py --sizes 8,16,24,40,60,92 --time-limit 600
    python benchmarks/exact_frontier.py --paths bnb --sizes 24 --json
    python benchmarks/exact_frontier.py --paths bnb=misvm-bigm:bnb --nested musk1,musk2 \
        --sizes 20,40,60,80,100 --generated "" --time-limit 120     # nested subsets
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

DEFAULT_PATHS = ("scip-cold=misvm-bigm:scip,scip-warm=misvm-bigm:scip:warm,"
                 "scip-strong=misvm-bigm:scip:warm:strengthen=all,hull=misvm-hull:scip,bnb=misvm-bigm:bnb")
GENERATED = ["gen:digits?bags=20&seed=1", "gen:multiclass?classes=2&bags=30&seed=1"]


def parse_path(spec: str) -> dict:
    name, _, rest = spec.partition("=")
    parts = rest.split(":") if rest else []
    if not name or len(parts) < 2:
        raise SystemExit(f"--paths: expected NAME=FORMULATION:SOLVER[:warm][:k=v], got {spec!r}")
    out = {"name": name, "formulation": parts[0], "solver": parts[1], "warm": False, "params": {}}
    for p in parts[2:]:
        if p == "warm":
            out["warm"] = True
        elif "=" in p:
            k, v = p.split("=", 1)
            out["params"][k] = v
        else:
            raise SystemExit(f"--paths: unknown flag {p!r} in {spec!r}")
    return out


def musk1_subset(n_bags: int, seed: int = 0):
    """Balanced MUSK1 subset (n_bags // 2 positive bags), or all of MUSK1 for n_bags >= 92."""
    import numpy as np

    from milopt.data import load

    b = load("musk1")
    if n_bags >= b.n_bags:
        return b
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(b.y == 1), np.flatnonzero(b.y == 0)
    ids = np.sort(np.r_[rng.choice(pos, n_bags // 2, replace=False), rng.choice(neg, n_bags - n_bags // 2,
                                                                                 replace=False)])
    return b.subset(ids)


def nested_subset(name: str, n_bags: int, seed: int = 0):
    """The first ``n_bags`` bags of a fixed order of ``name``'s bags (nested: every size contains
    the smaller ones).  The order alternates positive and negative bags, each class in a random
    order (seeded), so each prefix is as balanced as the data allow (MUSK1: 47 / 45, MUSK2:
    39 / 63; past the smaller class the rest comes from the other)."""
    import numpy as np

    from milopt.data import load

    b = load(name)
    if n_bags >= b.n_bags:
        return b
    rng = np.random.default_rng(seed)
    pos, neg = rng.permutation(np.flatnonzero(b.y == 1)), rng.permutation(np.flatnonzero(b.y == 0))
    order = []
    for k in range(max(pos.size, neg.size)):
        order += [int(a[k]) for a in (pos, neg) if k < a.size]
    return b.subset(np.sort(order[:n_bags]))


def load_instance(spec: str, seed: int):
    from milopt.data import load

    if spec.startswith("musk1:"):
        return musk1_subset(int(spec.split(":")[1]), seed)
    if spec.startswith("nested:"):
        _, name, n = spec.split(":")
        return nested_subset(name, int(n), seed)
    return load(spec)


def worker(job: dict) -> dict:
    from milopt.params import coerce
    from milopt.runner import run_solve

    bags = load_instance(job["instance"], job["seed"])
    params = {k: coerce(v) for k, v in job["params"].items()}
    params.setdefault("C", 1.0)
    options = {}
    if job.get("root"):
        options = {"node_limit": 1} if job["solver"] == "bnb" else {"limits/nodes": 1}
    res = run_solve(job["formulation"], job["instance"], job["solver"], time_limit=job["time_limit"], params=params,
                    warm_start=job["warm"], bags=bags, options=options)
    keep = ("termination", "status", "objective", "bound", "gap", "wall_time", "nodes", "build_seconds",
            "warm_start_seconds")
    out = {k: res.get(k) for k in keep}
    out["root_bound"] = (res.get("extra") or {}).get("root_bound")
    out["incumbent_time"] = (res.get("extra") or {}).get("incumbent_time")
    # time to the first proof of optimality, when the backend reports its gap over time
    out["history_tail"] = (res.get("history") or [])[-1:] if res.get("history") else []
    out["bags"] = res["data"]["bags"]
    out["instances"] = res["data"]["instances"]
    return out


def run_job(job: dict) -> dict:
    tl = job["time_limit"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], capture_output=True, text=True,
                           timeout=1.5 * tl + 60, check=False)
    except subprocess.TimeoutExpired:
        return {"termination": "killed", "wall_time": time.perf_counter() - t0}
    if p.returncode != 0:
        return {"termination": "error", "error": (p.stderr.strip().splitlines() or ["?"])[-1],
                "wall_time": time.perf_counter() - t0}
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(v, nd=4):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}g}"
    return str(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paths", default=DEFAULT_PATHS)
    ap.add_argument("--sizes", default="8,16,24,40", help="MUSK1 subset sizes (92 = all of MUSK1)")
    ap.add_argument("--generated", default=",".join(GENERATED), help="generated instances ('' for none)")
    ap.add_argument("--nested", default="", help="comma-separated data sets (musk1, musk2) whose nested subsets of "
                    "--sizes bags are run instead of the independent MUSK1 subsets")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--root", action="store_true", help="also measure each path's root bound on MUSK1 (92 bags)")
    ap.add_argument("--root-time-limit", type=float, default=120.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(json.loads(a.worker)), default=float))
        return 0
    paths = [parse_path(s) for s in a.paths.split(",") if s]
    sizes = [s for s in a.sizes.split(",") if s]
    if a.nested:
        insts = [f"nested:{d}:{s}" for d in a.nested.split(",") if d for s in sizes]
    else:
        insts = [f"musk1:{s}" for s in sizes]
    insts += [g for g in a.generated.split(",") if g]
    rows = []
    for inst in insts:
        for p in paths:
            job = {"instance": inst, "seed": a.seed, "time_limit": a.time_limit, "formulation": p["formulation"],
                   "solver": p["solver"], "warm": p["warm"], "params": p["params"]}
            r = run_job(job)
            r.update(instance=inst, path=p["name"], time_limit=a.time_limit)
            rows.append(r)
            if not a.json:
                proven = r.get("termination") == "optimal"
                print(f"{inst:42s} {p['name']:10s} bags={fmt(r.get('bags')):>3s} "
                      f"{'optimal in ' + fmt(r.get('wall_time'), 3) + ' s' if proven else 'gap ' + fmt(r.get('gap'), 3) + ' at ' + fmt(a.time_limit) + ' s':24s} "
                      f"obj={fmt(r.get('objective'), 6):>9s} bound={fmt(r.get('bound'), 6):>9s} "
                      f"nodes={fmt(r.get('nodes'))} ({r.get('termination')})", flush=True)
    roots = []
    if a.root:
        for p in paths:
            job = {"instance": "musk1:92", "seed": a.seed, "time_limit": a.root_time_limit, "root": True,
                   "formulation": p["formulation"], "solver": p["solver"], "warm": p["warm"], "params": p["params"]}
            r = run_job(job)
            r.update(path=p["name"])
            roots.append(r)
            if not a.json:
                rb = r.get("root_bound") if r.get("root_bound") is not None else r.get("bound")
                print(f"root bound on MUSK1 (92 bags) {p['name']:10s} {fmt(rb, 6)}  (incumbent {fmt(r.get('objective'), 6)}, "
                      f"{fmt(r.get('wall_time'), 3)} s, {r.get('termination')})", flush=True)
    if a.json:
        print(json.dumps({"rows": rows, "root": roots}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
