"""Compare every installed MIP/QP backend on the MIL instance library (one thread, one time limit).

    python benchmarks/solver_comparison.py --out solver-comparison            # the full comparison
    python benchmarks/solver_comparison.py --quick --out solver-comparison-quick   # about 2 minutes

Instances: the catalogue ``instances/library.csv`` (``--suite``, default ``all``; ``--instances``
for a comma list) that fit the free size-limited editions -- at most ``--max-size`` variables and
at most ``--max-size`` rows (default 1000, the CPLEX community edition's limits; ``--max-size 0``
takes every size; sizes from the matrix form the driver solves, cached in ``OUT/instances.json``).
They are solved from the catalogue's definition by ``milopt bench`` (``OUT/bench``: one isolated
process per run, hard wall-clock limit, answers verified against the model; docs/bench.md) and
written with ``milopt export-library`` (``OUT/library``: ``.mps.gz`` files, ``manifest.json`` with
sha256) for other tools.  ``--quick`` takes six small instances of every class
(MUSK subsets, ``gen:digits``, ``gen:kent-yu``, ``gen:cad``) with a 10 s limit.

Contenders: ``--solvers`` (default every installed one of ``bnb, scip, highs, cplex, gurobi,
xpress``), each with ``threads = 1``, the same time limit and relative gap 1e-4.  A contender
that cannot take an instance is recorded as **skipped** with the reason, never as a failure:

* its problem class or a feature (SOS, indicators) is not one it solves, or it is a
  structure-aware backend for other formulations (``bnb``: the MI-SVM big-M MIQP only);
* its ``cannot_take(mf, opts)`` refuses the instance's matrix form (a licence size limit),
  checked here before anything runs;
* the driver refused the run itself (outcome ``unsupported``, or ``LicenceLimitError``).

Writes into ``OUT``: ``comparison.csv`` (one row per instance x solver: status, time, gap,
objective, reason), ``comparison.md`` (instance x solver table), ``profile.png`` (Dolan-Moré
performance profile over every instance; a skipped or failed instance counts as not solved),
``profile_<class>.png`` per problem class with two or more instances and contenders, and the bench report
(``OUT/bench/summary.md`` ...).  Prints the command, the machine load, the solver versions and the
table.  ``--resume`` continues an interrupted comparison in the same ``OUT``.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

CANDIDATES = ("bnb", "scip", "highs", "cplex", "gurobi", "xpress")
#: --quick: six small instances, one or more of each class, data other than MUSK included
QUICK = ("misvm-bigm.digits-b20", "misvm-bigm.ky1-b20", "misvm-bigm.musk1-b16", "misvm-bigm.l1.ky1-b20",
         "batchsvm-lp.cad-i10", "dcmil-dca.digits-b40")
GAP = 1e-4


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="solver-comparison", help="output folder (default: solver-comparison)")
    ap.add_argument("--quick", action="store_true", help="six small instances, 10 s each (about 2 minutes)")
    ap.add_argument("--solvers", default=None, help=f"comma list (default: the installed ones of {', '.join(CANDIDATES)})")
    ap.add_argument("--suite", default="all", help="catalogue suite: easy, hard, open, benchmark, all (default)")
    ap.add_argument("--instances", default=None, help="comma list of catalogue instance names (overrides --suite)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per run (default 60; 10 with --quick)")
    ap.add_argument("--max-size", type=int, default=1000,
                    help="largest number of variables and of rows taken (default 1000: CPLEX community edition); "
                         "0 takes every size")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (default 1: timings without contention)")
    ap.add_argument("--resume", action="store_true", help="continue a comparison already in OUT")
    return ap.parse_args(argv)


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f} (1, 5, 15 min) on {os.cpu_count()} CPUs"


def contenders(names) -> tuple[list, dict, list]:
    """(installed contenders, {name: version}, [(name, why not)])."""
    from milopt.solvers import backends

    known = backends()
    out, versions, absent = [], {}, []
    for n in names:
        b = known.get(n)
        if b is None:
            absent.append((n, "no such backend in this milopt"))
        elif not b.available():
            absent.append((n, f"not installed (Python module {b.module!r})"))
        else:
            out.append(n)
            try:
                versions[n] = str(b.version())
            except Exception as exc:  # noqa: BLE001 - a version is information, not a reason to stop
                versions[n] = f"unknown ({type(exc).__name__})"
    return out, versions, absent


def select_instances(args) -> list:
    from milopt.bench.library import suite

    if args.instances:
        return suite(args.instances)
    if args.quick:
        return suite(",".join(QUICK))
    return suite(args.suite)


def describe(insts, out: Path, resume: bool) -> tuple[dict, dict]:
    """``({name: {"class", "features", "columns", "rows", "nonzeros"}}, {name: MatrixForm})``.

    Each instance is built from the catalogue's definition and its matrix form extracted (what
    the driver and the backends' skip hooks see); the sizes are cached in ``OUT/instances.json``
    (reused with --resume; the matrix forms are then rebuilt only when a skip hook needs them)."""
    from milopt.bench.library import build
    from milopt.solvers.extract import extract

    cache = out / "instances.json"
    known = json.loads(cache.read_text()) if resume and cache.is_file() else {}
    forms = {}
    for inst in insts:
        if inst.name in known:
            continue
        t0 = time.perf_counter()
        try:
            mf = extract(build(inst)[0])
        except Exception as exc:  # noqa: BLE001 - an instance that cannot be built is listed, not fatal
            print(f"not built: {inst.name}: {type(exc).__name__}: {str(exc)[:160]}", file=sys.stderr)
            continue
        sz = mf.size()
        known[inst.name] = {"class": mf.problem_class(), "features": list(mf.features()),
                            "columns": sz["variables"], "rows": sz["constraints"], "nonzeros": sz["nonzeros"]}
        forms[inst.name] = mf
        print(f"built {inst.name} ({known[inst.name]['class']}, {sz['variables']} columns, {sz['constraints']} rows)"
              f" in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    cache.write_text(json.dumps(known, indent=1))
    return {i.name: known[i.name] for i in insts if i.name in known}, forms


def export_files(names: list, folder: Path) -> str:
    """Write the compared instances with ``milopt export-library`` (``.mps.gz``, manifest with
    sha256); returns a line saying where, or why not."""
    from milopt.bench.library import export_library

    try:
        man = export_library(folder, formats=("mps",), names=names)
    except Exception as exc:  # noqa: BLE001 - the files are a record; the comparison stands without them
        return f"export-library failed ({type(exc).__name__}: {str(exc)[:120]}); no instance files written"
    return f"{len(man['instances'])} instance(s) written to {folder} by export-library (manifest.json)"


def plan(insts, entries: dict, forms: dict, solvers: list, time_limit: float, max_size: int):
    """Runs to make ``{(instance, solver)}``, skipped cells ``{(instance, solver): reason}`` and the
    instances left out for their size ``[(name, variables, rows)]``."""
    from milopt.bench.library import build
    from milopt.solvers import backends
    from milopt.solvers.backend import Backend, SolveOptions

    bk = backends()
    runs, skipped, too_big = set(), {}, []
    for inst in insts:
        e = entries.get(inst.name)
        if e is None:
            continue
        nv, nr = int(e.get("columns") or 0), int(e.get("rows") or 0)
        if max_size and (nv > max_size or nr > max_size):
            too_big.append((inst.name, nv, nr))
            continue
        cls, feats = e["class"], tuple(e.get("features") or ())
        mf = forms.get(inst.name)
        for s in solvers:
            b = bk[s]
            only = b.caps.formulations
            if not b.supports(cls, feats, inst.formulation) or not (b.caps.generic or inst.formulation in only):
                need = cls + (" with " + "/".join(feats) if feats else "")
                why = (f"{s} solves only {', '.join(only)}" if only and
                       inst.formulation not in only else f"{s} does not solve {need} problems")
                skipped[(inst.name, s)] = why
                continue
            if type(b).cannot_take is not Backend.cannot_take:   # a backend with a size limit
                if mf is None:
                    try:
                        from milopt.solvers.extract import extract

                        mf = forms[inst.name] = extract(build(inst)[0])
                    except Exception as exc:  # noqa: BLE001 - the run itself will tell
                        mf = exc
                if not isinstance(mf, Exception):
                    opts = SolveOptions(time_limit=time_limit, mip_gap=GAP, threads=1, problem_class=cls)
                    no, reason = b.cannot_take(mf, opts)
                    if no:
                        skipped[(inst.name, s)] = reason or f"{s} cannot take this instance"
                        continue
            runs.add((inst.name, s))
    return runs, skipped, too_big


def bench_config(names: list, solvers: list, time_limit: float) -> dict:
    text = (f'name = "solver-comparison"\nsuite = "{",".join(names)}"\ntime_limit = {time_limit!r}\n'
            f"gap = {GAP!r}\nthreads = 1\nkill_after = {2 * time_limit + 60!r}\n")
    import tomllib

    cfg = tomllib.loads(text)
    cfg["suite_solvers"] = list(solvers)
    cfg["_path"] = "solver-comparison.toml"
    cfg["_text"] = text
    return cfg


def refused(r) -> bool:
    """A run the driver refused before solving: the solver cannot take the instance (outcome
    ``unsupported``) or it is past the installed licence's size limit (``LicenceLimitError``)."""
    return r["outcome"] == "unsupported" or str(r.get("error") or "").startswith("LicenceLimitError")


def comparison_table(df, entries: dict, skipped: dict, solvers: list, insts):
    """One row per instance x solver: class, size, status, time, gap, objective, reason."""
    import pandas as pd

    from milopt.bench.report_tables import capped_gaps

    rows = []
    by = {(r["instance"], r["contender"]): r for _, r in df.iterrows()}
    for inst in insts:
        e = entries.get(inst.name)
        if e is None:
            continue
        base = {"instance": inst.name, "class": e["class"], "variables": e.get("columns"), "rows": e.get("rows"),
                "status_in_library": inst.status}
        for s in solvers:
            row = dict(base, solver=s, status="", time=float("nan"), gap=float("nan"), objective=float("nan"),
                       reason="")
            r = by.get((inst.name, s))
            if (inst.name, s) in skipped:
                row.update(status="skipped", reason=skipped[(inst.name, s)])
            elif r is None:
                row.update(status="not run", reason="not in this comparison's bench table")
            elif refused(r):
                row.update(status="skipped", reason=str(r["error"])[:200])
            else:
                if bool(r["solved"]):
                    status = "optimal"
                elif r["outcome"] != "ok":
                    status = r["outcome"]
                elif r["termination"] == "optimal":
                    status = "optimal, rejected"
                else:
                    status = r["termination"] or "no termination"
                row.update(status=status, time=float(r["time"]), reason=str(r.get("failure") or "")[:200],
                           gap=float(capped_gaps(pd.DataFrame([r])).iloc[0]),
                           objective=float(r["objective"]) if pd.notna(r["objective"]) else float("nan"))
            rows.append(row)
    return pd.DataFrame(rows)


def wide_markdown(tab, solvers: list) -> str:
    def cell(r):
        if r["status"] in ("skipped", "not run"):
            return r["status"]
        gap = "" if r["status"] == "optimal" or r["gap"] != r["gap"] else f", gap {100 * r['gap']:.3g} %"
        return f"{r['status']} {r['time']:.1f} s{gap}"

    head = "| instance | class | vars | rows | " + " | ".join(solvers) + " |"
    lines = [head, "|" + "---|" * (4 + len(solvers))]
    for name, g in tab.groupby("instance", sort=False):
        cells = {r["solver"]: cell(r) for _, r in g.iterrows()}
        r0 = g.iloc[0]
        lines.append(f"| {name} | {r0['class']} | {r0['variables']} | {r0['rows']} | "
                     + " | ".join(cells.get(s, "") for s in solvers) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import warnings

    import pandas as pd

    from milopt.bench.assess import assess
    from milopt.bench.config import BenchWarning
    from milopt.bench.harness import run_bench
    from milopt.bench.report import write_report
    from milopt.bench.report_tables import time_matrix
    from milopt.bench.runs import load_runs
    from milopt.bench.report_plots import plot_profile
    from milopt.bench.report_tables import performance_profile
    from milopt.bench.solu import read_solu_full
    from milopt.bench.library import solu_path

    args = parse_args(argv)
    t0 = time.monotonic()
    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0]] + list(argv if argv is not None
                                                                                  else sys.argv[1:]))
    tl = args.time_limit if args.time_limit is not None else (10.0 if args.quick else 60.0)
    out = Path(args.out)
    if (out / "bench" / "runs.csv").is_file() and not args.resume:
        print(f"solver_comparison: {out}/bench already holds results; pass --resume or choose another --out",
              file=sys.stderr)
        return 2
    names = [s.strip() for s in args.solvers.split(",")] if args.solvers else list(CANDIDATES)
    solvers, versions, absent = contenders(names)
    if not solvers:
        print("solver_comparison: none of the solvers is installed: " + "; ".join(f"{n}: {w}" for n, w in absent),
              file=sys.stderr)
        return 2
    load_start = load_average()
    insts = select_instances(args)
    out.mkdir(parents=True, exist_ok=True)
    entries, forms = describe(insts, out, args.resume)
    runs, skipped, too_big = plan(insts, entries, forms, solvers, tl, args.max_size)
    forms.clear()
    taken = [i for i in insts if i.name in entries and i.name not in {n for n, _, _ in too_big}]
    exported = export_files([i.name for i in taken], out / "library")
    if runs:
        cfg = bench_config(sorted({n for n, _ in runs}), solvers, tl)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BenchWarning)
            run_bench(cfg, out / "bench", jobs=args.jobs, resume=args.resume, progress=True,
                      select=lambda r: (r.spec.get("instance"), r.spec.get("solver")) in runs)
        rep = write_report(out / "bench")
        df = assess(load_runs(out / "bench"), read_solu_full(solu_path()))
    else:
        rep, df = None, pd.DataFrame(columns=["instance", "contender", "outcome"])
    tab = comparison_table(df, entries, skipped, solvers, taken)
    tab.to_csv(out / "comparison.csv", index=False)
    files = [out / "comparison.csv", out / "comparison.md"]

    # performance profiles: every taken instance is a problem; skipped or failed = not solved
    probs = [f"{i.name}#s0" for i in taken]
    solved = df[[not refused(r) for _, r in df.iterrows()]] if len(df) else df
    profiles = {}
    if len(solved) and len(solvers) > 1:
        tm = time_matrix(solved, "solve", probs).reindex(columns=solvers)
        tm = tm.fillna(float("inf"))
        plot_profile(tm, out / "profile.png", "performance profile, all instances (skipped = not solved)")
        files.append(out / "profile.png")
        profiles["all"] = tm
        cls_of = {f"{i.name}#s0": entries[i.name]["class"] for i in taken}
        for cls in sorted(set(cls_of.values())):
            sub = tm.loc[[p for p in tm.index if cls_of.get(p) == cls]]
            able = [s for s in solvers if not all((n.split("#")[0], s) in skipped for n in sub.index)]
            if len(sub) > 1 and len(able) > 1:  # a profile of one instance says nothing
                p = out / f"profile_{cls}.png"
                plot_profile(sub[able], p, f"performance profile, {cls} instances")
                files.append(p)
                profiles[cls] = sub[able]

    md = ["# Solver comparison on the MIL instance library", "",
          f"Command: `{command}`", "",
          f"Machine load at the start: {load_start}; at the end: {load_average()}.", "",
          "Solvers: " + "; ".join(f"{s} {versions[s]}" for s in solvers) + " (threads = 1 each, time limit "
          f"{tl:g} s bounding build and solve, relative gap {GAP:g})."]
    if absent:
        md.append("Not compared: " + "; ".join(f"{n} ({w})" for n, w in absent) + ".")
    md += ["", f"Instance files: {exported}.", "", f"{len(taken)} instance(s); " + (f"left out for their size (more than {args.max_size} variables "
           f"or rows): {len(too_big)}." if args.max_size else "every size taken."),
           "Status: `optimal` = solved (optimal, verified against the model, within the time limit, agreeing "
           "with the best known value); `optimal, rejected` = claimed optimal but failed a check (reason in "
           "comparison.csv); `skipped` = the solver cannot take the instance (reason in comparison.csv); times "
           "are the solver's wall time.", "", wide_markdown(tab, solvers)]
    for key, tm in profiles.items():
        _, prof = performance_profile(tm, [1, 2, 4, 8, 16])
        md += [f"Performance profile ({key}, {len(tm)} instances): rho(tau) at tau = 1, 2, 4, 8, 16", "",
               "| solver | " + " | ".join(f"rho({t})" for t in (1, 2, 4, 8, 16)) + " |", "|---|---|---|---|---|---|"]
        md += [f"| {c} | " + " | ".join(f"{v:.2f}" for v in prof[c]) + " |" for c in prof.columns]
        md.append("")
    sk = tab[tab["status"] == "skipped"]
    if len(sk):
        md += ["Skipped (solver cannot take the instance):", ""]
        md += [f"- {r['solver']} on {r['instance']}: {r['reason']}" for _, r in sk.iterrows()]
        md.append("")
    if too_big:
        md += ["Left out for their size: " + ", ".join(f"{n} ({v} vars, {r} rows)" for n, v, r in too_big), ""]
    (out / "comparison.md").write_text("\n".join(md))

    print("\n".join(md))
    print(f"files: {', '.join(str(f) for f in files)}; bench report: "
          f"{rep['files']['summary_md'] if rep else '(no run)'}")
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
