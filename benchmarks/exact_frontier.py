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

The frontier (``--frontier``): time to proof against the number of bags on nested subsets of
MUSK1 (20, 40, 60, 80, 92 bags), MUSK2 (20, 40, 60, 80, 102) and of one generated MUSK-like
data set (``gen:multiclass?classes=2&bags=200&seed=1``: 162 features, 1..10 instances per bag,
prefixes of 20, 40, 60, 80, 100, 150, 200 bags) for three paths: ``bnb``, SCIP on the big-M
MIQP with the warm start, CPLEX on the same model with the warm start.  Every run is single
threaded: SCIP's branch and bound is sequential (``lp/threads`` is 1), CPLEX gets
``threads=1``, bnb runs with ``workers=1`` and one BLAS thread, and every child process has
``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1``.  A run the installed free edition
of a solver cannot take (CPLEX community edition: at most 1000 variables and 1000 rows) is
reported as "over the free edition's size limit" (termination ``licence_limit``), not as a
failure.  Sizes larger than a data set are clamped to all of its bags and run once.

``--out FILE`` appends each finished run as one JSON line (a long grid survives an
interruption; runs already in FILE are skipped when the grid is run again); ``--from FILE[,FILE]``
renders the table and the figure from such files without running anything (a later file's
run of the same path on the same instance replaces an earlier one, so one column can be
re-measured alone).  ``--markdown`` prints the table as Markdown, ``--plot PNG`` draws it.

Usage::

    python benchmarks/exact_frontier.py                         # 8..40 bags + generated, 60 s
    python benchmarks/exact_frontier.py --sizes 8,16,24,40,60,92 --time-limit 600
    python benchmarks/exact_frontier.py --paths bnb --sizes 24 --json
    python benchmarks/exact_frontier.py --paths bnb=misvm-bigm:bnb --nested musk1,musk2 \
        --sizes 20,40,60,80,100 --generated "" --time-limit 120     # nested subsets
    python benchmarks/exact_frontier.py --frontier --out frontier.jsonl --markdown \
        --plot docs/img/exact-frontier.png                          # the frontier, 120 s per run
    python benchmarks/exact_frontier.py --from frontier.jsonl --markdown --plot docs/img/exact-frontier.png
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

DEFAULT_PATHS = ("scip-cold=misvm-bigm:scip,scip-warm=misvm-bigm:scip:warm,"
                 "scip-strong=misvm-bigm:scip:warm:strengthen=all,hull=misvm-hull:scip,bnb=misvm-bigm:bnb")
GENERATED = ["gen:digits?bags=20&seed=1", "gen:multiclass?classes=2&bags=30&seed=1"]
FRONTIER_PATHS = "bnb=misvm-bigm:bnb,scip-warm=misvm-bigm:scip:warm,cplex-warm=misvm-bigm:cplex:warm"
FRONTIER_GEN = "gen:multiclass?classes=2&bags=200&seed=1"
FRONTIER_DATA = f"musk1@20/40/60/80/92,musk2@20/40/60/80/102,{FRONTIER_GEN}@20/40/60/80/100/150/200"
FRONTIER_SIZES = "20,40,60,80,100,150,200"
LICENCE = "over the free edition's size limit"
SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def parse_path(spec: str) -> dict:
    """``NAME=FORMULATION:SOLVER[:warm][:key=value...]`` as a dict (a bare known name such as
    ``bnb`` or ``scip-warm`` stands for its entry in the default or frontier paths)."""
    if "=" not in spec.split(":")[0]:
        known = {d.split("=", 1)[0]: d for d in (DEFAULT_PATHS + "," + FRONTIER_PATHS).split(",")}
        spec = known.get(spec, spec)
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
    39 / 63; past the smaller class the rest comes from the other).  ``name`` is any data spec
    ``milopt.data.load`` accepts (a shipped name or a ``gen:...`` generator)."""
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


def split_nested(spec: str):
    """``nested:DATA:N`` -> (DATA, N); DATA may itself contain colons (``gen:...``)."""
    data, _, n = spec[len("nested:"):].rpartition(":")
    return data, int(n)


def load_instance(spec: str, seed: int):
    from milopt.data import load

    if spec.startswith("musk1:"):
        return musk1_subset(int(spec.split(":")[1]), seed)
    if spec.startswith("nested:"):
        return nested_subset(*split_nested(spec), seed)
    return load(spec)


def worker(job: dict) -> dict:
    from milopt.errors import LicenceLimitError
    from milopt.params import coerce
    from milopt.runner import run_solve

    bags = load_instance(job["instance"], job["seed"])
    params = {k: coerce(v) for k, v in job["params"].items()}
    params.setdefault("C", 1.0)
    options = {}
    if job.get("root"):
        options = {"node_limit": 1} if job["solver"] == "bnb" else {"limits/nodes": 1}
    threads = job.get("threads")
    if job["solver"] == "bnb":
        threads = None  # bnb: workers=1 (its default) and one BLAS thread
    try:
        res = run_solve(job["formulation"], job["instance"], job["solver"], time_limit=job["time_limit"],
                        params=params, warm_start=job["warm"], bags=bags, options=options, threads=threads)
    except LicenceLimitError as exc:
        return {"termination": "licence_limit", "error": str(exc), "bags": bags.n_bags, "instances": bags.n_instances}
    keep = ("termination", "status", "objective", "bound", "gap", "wall_time", "nodes", "build_seconds",
            "warm_start_seconds")
    out = {k: res.get(k) for k in keep}
    extra = res.get("extra") or {}
    if extra.get("licence_limit"):
        out["termination"] = "licence_limit"
        out["error"] = extra.get("error")
    out["root_bound"] = extra.get("root_bound")
    out["incumbent_time"] = extra.get("incumbent_time")
    # time to the first proof of optimality, when the backend reports its gap over time
    out["history_tail"] = (res.get("history") or [])[-1:] if res.get("history") else []
    out["bags"] = res["data"]["bags"]
    out["instances"] = res["data"]["instances"]
    return out


def run_job(job: dict) -> dict:
    tl = job["time_limit"]
    t0 = time.perf_counter()
    env = {**os.environ, **SINGLE_THREAD_ENV}
    try:
        p = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], capture_output=True, text=True,
                           timeout=1.5 * tl + 60, check=False, env=env)
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


def data_label(spec: str) -> str:
    """Short name of a data spec for tables and legends."""
    if spec.startswith("gen:"):
        return "generated " + spec[4:].split("?")[0]
    return spec.upper() if spec.lower().startswith("musk") else spec


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"


def git_commit() -> str | None:
    try:
        p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                           cwd=os.path.dirname(os.path.abspath(__file__)))
        return p.stdout.strip() or None
    except OSError:
        return None


def nested_instances(datasets, sizes, seed=0):
    """``nested:DATA:N`` for every data set and size (``DATA@20/40/92``: that data set's own
    sizes), sizes past the data set's bag count clamped to all of its bags and listed once;
    ordered by size first, so the smallest subsets of every data set run before any larger one."""
    from milopt.data import load

    out = []
    for i, entry in enumerate(datasets):
        d, _, own = entry.partition("@")
        n = load(d).n_bags
        seen = []
        for s in (own.split("/") if own else sizes):
            k = min(int(s), n)
            if k not in seen:
                seen.append(k)
        out += [(k, i, f"nested:{d}:{k}") for k in seen]
    return [spec for _, _, spec in sorted(out)]


def cell(r: dict | None) -> str:
    """One table cell: time to proof, or the final gap at the limit, and the node count."""
    if r is None:
        return "not run"
    t = r.get("termination")
    if t == "licence_limit":
        m = re.search(r"this instance has ([^;]+);", r.get("error") or "")
        return LICENCE + (f" ({m.group(1).replace(' constraints', ' rows')})" if m else "")
    nodes = r.get("nodes")
    nodes_s = "" if nodes is None else f", {int(nodes):,} node{'' if int(nodes) == 1 else 's'}"
    if t == "optimal":
        return f"**{r['wall_time']:.1f} s**{nodes_s}"
    if t in ("killed", "error"):
        return f"{t}" + (f" ({r['error']})" if r.get("error") else "")
    return f"{gap_text(r)} at {fmt(r.get('time_limit'))} s{nodes_s}"


def final_gap(r: dict) -> float | None:
    """The relative gap at the end of a run, or None when there is no incumbent or no finite
    bound (SCIP reports -1e20 before its root relaxation is solved)."""
    gap, obj, bound = r.get("gap"), r.get("objective"), r.get("bound")
    if obj is None or bound is None or gap is None or not math.isfinite(gap) or abs(bound) >= 1e19:
        return None
    return gap


def gap_text(r: dict) -> str:
    if r.get("objective") is None:
        return "no incumbent"
    g = final_gap(r)
    return "no bound" if g is None else f"gap {100 * g:.3g} %"


def table(rows, paths):
    """Markdown table: rows data x bags, one column per path."""
    by = {(r["instance"], r["path"]): r for r in rows}
    insts = []
    for r in rows:
        if r["instance"] not in insts:
            insts.append(r["instance"])
    head = "| data | bags / instances | " + " | ".join(paths) + " |"
    lines = [head, "|" + "---|" * (2 + len(paths))]
    key = {}
    for inst in insts:
        d, n = split_nested(inst) if inst.startswith("nested:") else (inst, 0)
        key[inst] = (d, n)
    order = sorted(insts, key=lambda i: (list(dict.fromkeys(k[0] for k in key.values())).index(key[i][0]), key[i][1]))
    for inst in order:
        any_r = next(r for r in rows if r["instance"] == inst)
        bi = f"{fmt(any_r.get('bags'))} / {int(any_r['instances']):,}" if any_r.get("instances") else fmt(key[inst][1])
        lines.append(f"| {data_label(key[inst][0])} | {bi} | " + " | ".join(cell(by.get((inst, p))) for p in paths)
                     + " |")
    return "\n".join(lines)


def plot(rows, paths, out, time_limit):
    """Time to proof (top) and final gap (bottom) against bags, one panel per data set; a run
    that did not prove optimality is drawn at the limit with an open marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(split_nested(r["instance"])[0] for r in rows if r["instance"].startswith("nested:")))
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 6.4), sharex="col", sharey="row",
                             squeeze=False)
    markers = "osD^v"
    for j, d in enumerate(datasets):
        ax_t, ax_g = axes[0, j], axes[1, j]
        for k, p in enumerate(paths):
            rs = sorted((r for r in rows if r["path"] == p and r["instance"].startswith("nested:")
                         and split_nested(r["instance"])[0] == d and r.get("termination") != "licence_limit"
                         and r.get("bags")), key=lambda r: r["bags"])
            if not rs:
                continue
            x = [r["bags"] for r in rs]
            proved = [r.get("termination") == "optimal" for r in rs]
            t = [r["wall_time"] if ok else (r.get("time_limit") or time_limit) for r, ok in zip(rs, proved)]
            g = [0.0 if ok else (100 * final_gap(r) if final_gap(r) is not None else math.nan)
                 for r, ok in zip(rs, proved)]
            line, = ax_t.plot(x, t, "-", lw=1.2, label=p)
            c, m = line.get_color(), markers[k % len(markers)]
            ax_t.plot([a for a, ok in zip(x, proved) if ok], [b for b, ok in zip(t, proved) if ok], m, color=c)
            ax_t.plot([a for a, ok in zip(x, proved) if not ok], [b for b, ok in zip(t, proved) if not ok], m,
                      color=c, mfc="none")
            ax_g.plot(x, g, "-" + m, color=c, lw=1.2, label=p)
        ax_t.set_yscale("log")
        ax_t.axhline(time_limit, color="grey", lw=0.8, ls=":")
        ax_t.set_title(data_label(d))
        ax_g.set_ylim(-3, 103)
        ax_g.set_xlabel("bags (nested subsets)")
        if j == 0:
            ax_t.set_ylabel("time to proof [s]\n(open marker: not proved, at the limit)")
            ax_g.set_ylabel("final gap [%]\n(0: proved; none drawn: no bound)")
            ax_t.legend(fontsize=8)
    fig.suptitle(f"MI-SVM, exact frontier ({fmt(time_limit)} s per run, single thread)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)


def read_rows(files):
    """Rows from JSON-lines files (later files replace earlier runs of the same path and instance)."""
    rows, meta = {}, []
    for f in files:
        with open(f) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if "meta" in r:
                    meta.append(r["meta"])
                    continue
                rows[(r["instance"], r["path"])] = r
    return list(rows.values()), meta


def report(rows, paths, a, meta=()):
    if a.markdown:
        for m in meta:
            print(f"<!-- {json.dumps(m)} -->")
        print(table(rows, paths))
    if a.plot:
        tl = max((r.get("time_limit") or 0 for r in rows), default=a.time_limit) or a.time_limit
        plot(rows, paths, a.plot, tl)
        print(f"figure: {a.plot}", file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paths", default=None, help="comma-separated paths (default: the five SCIP / bnb paths; "
                    "with --frontier: bnb, scip-warm, cplex-warm)")
    ap.add_argument("--sizes", default=None, help="subset sizes in bags (default 8,16,24,40; with --frontier "
                    + FRONTIER_SIZES + "); 92 = all of MUSK1")
    ap.add_argument("--generated", default=None, help="generated instances ('' for none; default none with --nested "
                    "or --frontier)")
    ap.add_argument("--nested", default=None, help="comma-separated data specs (musk1, musk2, gen:...) whose nested "
                    "subsets of --sizes bags are run instead of the independent MUSK1 subsets; DATA@20/40/92 gives "
                    "one data set its own sizes")
    ap.add_argument("--frontier", action="store_true", help="the frontier grid: --nested " + FRONTIER_DATA
                    + " --paths " + FRONTIER_PATHS + " --time-limit 120")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per run (default 60; 120 with --frontier)")
    ap.add_argument("--threads", type=int, default=1, help="solver threads (SCIP: LP threads; CPLEX: threads); "
                    "bnb always runs one worker")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--root", action="store_true", help="also measure each path's root bound on MUSK1 (92 bags)")
    ap.add_argument("--root-time-limit", type=float, default=120.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="append every finished run to this JSON-lines file (runs already there are skipped)")
    ap.add_argument("--from", dest="from_files", help="render from these JSON-lines files (comma separated); run nothing")
    ap.add_argument("--markdown", action="store_true", help="print the table (data x bags, one column per path)")
    ap.add_argument("--plot", help="save the figure (time to proof and final gap against bags) to this PNG")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(json.loads(a.worker)), default=float))
        return 0
    paths_given = a.paths is not None
    if a.frontier:
        a.paths = a.paths or FRONTIER_PATHS
        a.nested = FRONTIER_DATA if a.nested is None else a.nested
        a.sizes = a.sizes or FRONTIER_SIZES
        a.time_limit = 120.0 if a.time_limit is None else a.time_limit
    a.paths = a.paths or DEFAULT_PATHS
    a.sizes = a.sizes or "8,16,24,40"
    a.time_limit = 60.0 if a.time_limit is None else a.time_limit
    if a.generated is None:
        a.generated = "" if a.nested else ",".join(GENERATED)
    paths = [parse_path(s) for s in a.paths.split(",") if s]
    names = [p["name"] for p in paths]
    if a.from_files:
        rows, meta = read_rows([f for f in a.from_files.split(",") if f])
        if not paths_given:
            names = list(dict.fromkeys(r["path"] for r in rows))
        report(rows, names, a, meta)
        return 0
    sizes = [s for s in a.sizes.split(",") if s]
    if a.nested:
        insts = nested_instances([d for d in a.nested.split(",") if d], sizes, a.seed)
    else:
        insts = [f"musk1:{s}" for s in sizes]
    insts += [g for g in a.generated.split(",") if g]
    done = {}
    if a.out and os.path.exists(a.out):
        done = {(r["instance"], r["path"]): r for r in read_rows([a.out])[0]}
    meta = {"start": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "uptime_start": uptime(),
            "commit": git_commit(), "time_limit": a.time_limit, "threads": a.threads}
    if not a.json:
        print(f"# {meta['start']}  commit {meta['commit']}  {meta['uptime_start']}", flush=True)
    out_fh = open(a.out, "a") if a.out else None
    rows = []
    for inst in insts:
        for p in paths:
            if (inst, p["name"]) in done:
                rows.append(done[(inst, p["name"])])
                continue
            job = {"instance": inst, "seed": a.seed, "time_limit": a.time_limit, "formulation": p["formulation"],
                   "solver": p["solver"], "warm": p["warm"], "params": p["params"], "threads": a.threads}
            r = run_job(job)
            r.update(instance=inst, path=p["name"], time_limit=a.time_limit, commit=meta["commit"],
                     finished=time.strftime("%H:%M:%S", time.gmtime()))
            rows.append(r)
            if out_fh:
                out_fh.write(json.dumps(r, default=float) + "\n")
                out_fh.flush()
            if not a.json:
                proven = r.get("termination") == "optimal"
                res = (LICENCE if r.get("termination") == "licence_limit" else
                       "optimal in " + fmt(r.get("wall_time"), 3) + " s" if proven else
                       "gap " + fmt(r.get("gap"), 3) + " at " + fmt(a.time_limit) + " s")
                print(f"{inst:42s} {p['name']:10s} bags={fmt(r.get('bags')):>3s} {res:24s} "
                      f"obj={fmt(r.get('objective'), 6):>9s} bound={fmt(r.get('bound'), 6):>9s} "
                      f"nodes={fmt(r.get('nodes'))} ({r.get('termination')})", flush=True)
    roots = []
    if a.root:
        for p in paths:
            job = {"instance": "musk1:92", "seed": a.seed, "time_limit": a.root_time_limit, "root": True,
                   "formulation": p["formulation"], "solver": p["solver"], "warm": p["warm"], "params": p["params"],
                   "threads": a.threads}
            r = run_job(job)
            r.update(path=p["name"])
            roots.append(r)
            if not a.json:
                rb = r.get("root_bound") if r.get("root_bound") is not None else r.get("bound")
                print(f"root bound on MUSK1 (92 bags) {p['name']:10s} {fmt(rb, 6)}  (incumbent {fmt(r.get('objective'), 6)}, "
                      f"{fmt(r.get('wall_time'), 3)} s, {r.get('termination')})", flush=True)
    meta.update(end=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), uptime_end=uptime())
    if out_fh:
        out_fh.write(json.dumps({"meta": meta}) + "\n")
        out_fh.close()
    if a.json:
        print(json.dumps({"rows": rows, "root": roots, "meta": meta}, indent=1, default=float))
        return 0
    print(f"# end {meta['end']}  {meta['uptime_end']}", flush=True)
    report(rows, names, a, [meta])
    return 0


if __name__ == "__main__":
    sys.exit(main())
