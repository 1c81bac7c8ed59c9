"""The gap of the exact MI-SVM branch and bound at fixed times: one version against another.

Runs ``milopt solve misvm-bigm --data DATA --solver bnb --time-limit T --json`` (C = 1,
kent-yu costs, standardised features, as the command does) once per data set, one run at a
time, with one BLAS thread, and reads the search's ``history`` (time, lower, upper, gap about
every 0.5 s): the gap at each of ``--times`` is the gap of the last record at or before it.
``--checkout DIR`` runs the ``milopt`` of another source tree (e.g. ``git archive REV | tar -x
-C DIR``) with this interpreter, so that a previous version is measured the same way;
``--label`` names the column; ``--set KEY=VALUE`` passes bnb options.  ``--out FILE`` appends
each run as one JSON line (with the load average before and after, and the commit);
``--from FILE[,FILE]`` prints the table from such files without running anything: one row per
data set and label, the gap at each time, the nodes, the bound and the incumbent at the end.

Usage::

    python benchmarks/bnb_bound_frontier.py --out frontier.jsonl --label this
    git archive c481d57 | (mkdir -p /tmp/prev && tar -x -C /tmp/prev)
    python benchmarks/bnb_bound_frontier.py --checkout /tmp/prev --label previous --out frontier.jsonl
    python benchmarks/bnb_bound_frontier.py --from frontier.jsonl --markdown
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

DATA = ("musk2", "gen:multiclass?classes=2&bags=200&seed=1")
SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
CLI = "import sys; from milopt.cli import run; sys.exit(run())"


def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"


def commit(where):
    try:
        p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                           cwd=where)
        return p.stdout.strip() or None
    except OSError:
        return None


def run_one(data, time_limit, sets, checkout=None):
    """One ``milopt solve`` run: its JSON document, or ``{"termination": "error", "error": ...}``."""
    env = {**os.environ, **SINGLE_THREAD_ENV}
    if checkout:
        env["PYTHONPATH"] = os.path.abspath(checkout)
    cmd = [sys.executable, "-c", CLI, "solve", "misvm-bigm", "--data", data, "--solver", "bnb",
           "--time-limit", str(time_limit), "--json"]
    if sets:
        cmd += ["--set", *sets]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=2 * time_limit + 300,
                       cwd=os.path.abspath(checkout) if checkout else None)
    if p.returncode != 0:
        return {"termination": "error", "error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout)


def gap_at(history, t):
    """The gap of the last history record at or before time ``t`` (None: no record yet)."""
    last = None
    for h in history or []:
        if h["time"] <= t:
            last = h
    return None if last is None else last["gap"]


def record(data, label, res, times, checkout, load0, load1):
    hist = res.get("history") or []
    return {"data": data, "label": label, "termination": res.get("termination"), "gap": res.get("gap"),
            "bound": res.get("bound"), "objective": res.get("objective"), "nodes": res.get("nodes"),
            "wall_time": res.get("wall_time"), "open_nodes": (res.get("extra") or {}).get("open_nodes"),
            "gaps": {str(t): gap_at(hist, t) for t in times}, "history": hist,
            "commit": commit(checkout or os.path.dirname(os.path.abspath(__file__))),
            "checkout": checkout, "load_start": load0, "load_end": load1, "error": res.get("error")}


def pct(g):
    return "-" if g is None else f"{100 * g:.1f} %"


def render(rows, times, markdown):
    head = ["data", "version"] + [f"gap at {t:g} s" for t in times] + ["nodes", "bound", "incumbent"]
    lines = []
    for r in rows:
        cells = [r["data"], r["label"]] + [pct(r["gaps"].get(str(t))) for t in times]
        cells += [f"{r['nodes']:,}" if r.get("nodes") is not None else "-",
                  "-" if r.get("bound") is None else f"{r['bound']:.7f}",
                  "-" if r.get("objective") is None else f"{r['objective']:.7f}"]
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c) + " |" for c in lines]
    else:
        out = ["  ".join(head)] + ["  ".join(c) for c in lines]
    return "\n".join(out)


def read(files):
    rows = {}
    for f in files.split(","):
        with open(f) as fh:
            for line in fh:
                if line.strip():
                    r = json.loads(line)
                    rows[(r["data"], r["label"])] = r      # a later run of the same cell replaces
    return sorted(rows.values(), key=lambda r: (r["data"], r["label"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=",".join(DATA), help="comma-separated data specs ('|' also separates)")
    ap.add_argument("--times", default="60,150,300,600", help="times (s) at which the gap is read")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per run (default: the last time)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options")
    ap.add_argument("--checkout", help="run the milopt of this source tree (a previous version)")
    ap.add_argument("--label", default="this version")
    ap.add_argument("--out", help="append each run to this JSON-lines file")
    ap.add_argument("--from", dest="from_files", help="print the table from these JSON-lines files; run nothing")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    times = [float(t) for t in a.times.split(",")]
    if a.from_files:
        print(render(read(a.from_files), times, a.markdown))
        return 0
    if a.checkout and not os.path.isdir(os.path.join(a.checkout, "milopt")):
        raise SystemExit(f"--checkout {a.checkout}: no milopt package there; pass the root of a source tree")
    rows = []
    for data in a.data.replace("|", ",").split(","):
        load0, t0 = uptime(), time.perf_counter()
        res = run_one(data, a.time_limit or max(times), a.set, a.checkout)
        rec = record(data, a.label, res, times, a.checkout, load0, uptime())
        rec["command_seconds"] = time.perf_counter() - t0
        rows.append(rec)
        if a.out:
            with open(a.out, "a") as fh:
                fh.write(json.dumps(rec) + "\n")
        print(f"{data} ({a.label}): {rec['termination']}, gaps "
              + ", ".join(f"{t:g} s {pct(rec['gaps'][str(t)])}" for t in times)
              + f"; load {load0.split('load average:')[-1].strip()} -> {rec['load_end'].split('load average:')[-1].strip()}",
              file=sys.stderr, flush=True)
    print(render(rows, times, a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
