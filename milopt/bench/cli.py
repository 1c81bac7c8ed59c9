"""Subcommands ``milopt bench``, ``milopt report`` and ``milopt export-library`` (registered by milopt.cli)."""
from __future__ import annotations

import sys
from pathlib import Path


def _print_json(obj) -> None:
    from milopt.cli import emit

    emit(obj, True)


def _summary_text(rep: dict) -> str:
    import pandas as pd

    from milopt.bench.report_tables import markdown_table

    t = pd.read_csv(rep["files"]["summary_csv"])
    text = markdown_table(t.dropna(axis=1, how="all"))
    gaps = rep.get("gap_limits")
    if gaps:
        text += "relative gap limit given to the solvers: " + ", ".join(f"{g:g}" for g in gaps) + "\n"
    for f in rep.get("failures", [])[:20]:
        if f.get("kind") == "solve":
            text += f"not solved: {f['contender']} {f['problem']}: {f['failure']}\n"
    return text


def cmd_bench(args) -> int:
    import warnings

    from milopt.bench.config import BenchWarning, load_config
    from milopt.bench.harness import run_bench
    from milopt.bench.report import write_report
    from milopt.errors import InvalidParameterError

    if args.jobs is not None and args.jobs == 0:
        raise InvalidParameterError("--jobs: expected a positive number of parallel runs (or -1 for one per CPU)")
    suite_name = getattr(args, "suite", None)
    if suite_name is not None and args.config is None:
        cfg = suite_config(suite_name, args)
    else:
        cfg = load_config(args.config)
        if suite_name is not None:
            cfg["suite"] = suite_name
        for k in ("time_limit", "gap"):
            if getattr(args, k, None) is not None:
                cfg[k] = getattr(args, k)
    if getattr(args, "solvers", None):
        cfg["suite_solvers"] = [x.strip() for x in args.solvers.split(",") if x.strip()]
    if cfg.get("suite"):
        from milopt.bench.library import suite

        suite(cfg["suite"])  # an unknown suite is refused before anything runs
    out = args.out or f"bench-{Path(cfg['_path']).stem}"
    with warnings.catch_warnings():
        warnings.simplefilter("always", BenchWarning)
        warnings.showwarning = lambda message, *a, **k: print(f"warning: {message}", file=sys.stderr)
        res = run_bench(cfg, out, jobs=args.jobs, scheduler=args.scheduler, resume=args.resume,
                        progress=not args.quiet)
    rep = write_report(out) if (Path(out) / "runs.csv").is_file() else None
    if args.json:
        _print_json({"bench": res, "report": rep})
    else:
        print(f"{res['executed']} run(s) executed ({res['failures']} not ok), {res['skipped']} skipped as finished, "
              f"in {res['seconds']:.1f} s; table {res['table']}")
        if rep:
            print(_summary_text(rep))
            print(f"report: {rep['files']['summary_md']}")
    return 0


def suite_config(name: str, args) -> dict:
    """The configuration of ``milopt bench --suite NAME``: every catalogue instance of the suite
    x every installed solver that handles its class, gap 1e-4, 60 s per run, one thread each."""
    from milopt.bench.config import SUITE_GAP, SUITE_TIME_LIMIT
    from milopt.errors import InvalidParameterError
    from milopt.solvers.budget import parse_time_limit

    tl = args.time_limit if args.time_limit is not None else SUITE_TIME_LIMIT
    gap = args.gap if args.gap is not None else SUITE_GAP
    tl = parse_time_limit(tl, "--time-limit")
    if not 0 <= gap < 1:
        raise InvalidParameterError(f"--gap: expected a relative gap in [0, 1), got {gap}")
    text = (f'name = "suite-{name}"\nsuite = "{name}"\ntime_limit = {tl!r}\ngap = {gap!r}\nthreads = 1\n'
            f"kill_after = {2 * tl + 60!r}\n")
    import tomllib

    cfg = tomllib.loads(text)
    cfg["_path"] = f"suite-{name}.toml"
    cfg["_text"] = text
    return cfg


def cmd_report(args) -> int:
    import warnings

    from milopt.bench.report import write_report
    from milopt.bench.runs import BenchReportWarning
    from milopt.errors import InvalidParameterError

    dirs = list(args.dir or [])
    if not dirs and not args.external:
        raise InvalidParameterError("report: give a bench folder (DIR) and/or --external RESULTS.csv")
    if (len(dirs) > 1 or not dirs) and not args.out:
        raise InvalidParameterError("report: merging several sources needs --out DIR for the merged report")
    with warnings.catch_warnings():
        warnings.simplefilter("always", BenchReportWarning)
        warnings.showwarning = lambda message, *a, **k: print(f"warning: {message}", file=sys.stderr)
        rep = write_report(dirs[0] if dirs else None, solu_in=args.solu, shift=args.shift, sources=dirs[1:],
                           external=args.external or (), out=args.out)
    if args.json:
        _print_json(rep)
    else:
        print(_summary_text(rep))
        for k, v in rep["files"].items():
            print(f"{k}: {v}")
        for c in rep["conflicts"]:
            print(f"conflict: {c}", file=sys.stderr)
    return 0


def cmd_export_library(args) -> int:
    from milopt.bench.library import export_library

    split = (lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None)
    man = export_library(args.dir, formats=split(args.formats) or [], config=args.config, suite=args.suite,
                         formulations=split(args.formulations), data=split(args.data), solu=args.solu,
                         progress=None if args.json else sys.stderr)
    bad = man.get("sha256_mismatches", [])
    if args.json:
        _print_json(man)
    else:
        print(f"{len(man['instances'])} instance(s) written to {args.dir} (manifest.json, library.solu); "
              f"{len(man['skipped'])} skipped")
        for s in man["skipped"]:
            print(f"  skipped {s['name']}: {s['reason'][:160]}")
    if args.check:
        missing = [e["name"] for e in man["instances"] if e.get("sha256_matches_catalogue") is None]
        if bad or missing:
            print(f"milopt: error: {len(bad)} .mps file(s) differ from the catalogue's sha256"
                  f"{' (' + ', '.join(bad[:5]) + ')' if bad else ''}"
                  f"{f'; {len(missing)} without a recorded sha256' if missing else ''}; "
                  "if the change is intended, record the new sums with benchmarks/library_status.py --update",
                  file=sys.stderr)
            return 1
        print(f"check: all {len(man['instances'])} .mps file(s) match the catalogue's sha256", file=sys.stderr)
    elif bad:
        print(f"  .mps differs from the catalogue's sha256 for {len(bad)} instance(s): {', '.join(bad[:5])} "
              "(--check exits non-zero on this)", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add ``bench``, ``report`` and ``export-library`` to the ``milopt`` parser."""
    sp = subparsers.add_parser("bench", help="run a solver / formulation / method benchmark (TOML configuration)")
    sp.add_argument("config", nargs="?", default=None, metavar="CONFIG.toml",
                    help="benchmark configuration (default: the shipped milopt/bench/default.toml)")
    sp.add_argument("--jobs", type=int, default=None, help="runs at once locally (default: config 'jobs' or 1)")
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run on this Dask scheduler (tcp://host:8786) instead of locally")
    sp.add_argument("--out", default=None, metavar="DIR", help="output folder (default: bench-<config name>)")
    sp.add_argument("--resume", action="store_true", help="skip runs already in DIR/runs.csv")
    sp.add_argument("--suite", default=None, metavar="S",
                    help="run a suite of the instance library (easy, hard, open, benchmark, all, or a comma list of "
                         "instance names; docs/library.md)")
    sp.add_argument("--solvers", default=None, help="comma list of solvers for --suite (default: every installed one "
                                                     "that handles each instance)")
    sp.add_argument("--time-limit", dest="time_limit", type=float, default=None,
                    help="seconds per run for --suite (default 60)")
    sp.add_argument("--gap", type=float, default=None, help="relative gap given to the solvers for --suite "
                                                            "(default 1e-4)")
    sp.add_argument("--quiet", action="store_true", help="no progress display")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_bench)

    sp = subparsers.add_parser("report", help="summaries, performance profiles, gap plots and .solu of bench folders")
    sp.add_argument("dir", metavar="DIR", nargs="*",
                    help="bench folder(s); several are merged (runs from other machines or runs)")
    sp.add_argument("--external", action="append", default=None, metavar="RESULTS.csv",
                    help="import results obtained outside milopt: CSV instance,solver,status,time,objective,bound"
                         "[,sol] (a .sol is verified); repeatable")
    sp.add_argument("--out", default=None, metavar="DIR", help="write the (merged) report here (default: DIR)")
    sp.add_argument("--solu", default=None, metavar="FILE",
                    help="existing .solu file to update (default: DIR/best.solu)")
    sp.add_argument("--shift", type=float, default=10.0, help="shift of the geometric mean in seconds (10)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_report)

    sp = subparsers.add_parser("export-library", help="write the MIL instance library (.mps.gz/.lp.gz, manifest, .solu)")
    sp.add_argument("dir", metavar="DIR")
    sp.add_argument("--suite", default=None, metavar="S",
                    help="easy, hard, open, benchmark, all (default) or a comma list of instance names")
    sp.add_argument("--formats", default="mps,lp", help="comma list of mps, lp (default both)")
    sp.add_argument("--config", default=None, metavar="CONFIG.toml",
                    help="take the instances from this bench configuration's [[solve]] entries")
    sp.add_argument("--formulations", default=None, help="comma list restricting the formulations")
    sp.add_argument("--data", default=None, help="comma list restricting the data sets (catalogue data specs or "
                                                  "shipped names)")
    sp.add_argument("--solu", default=None, metavar="FILE", help="best known objectives (from milopt report)")
    sp.add_argument("--check", action="store_true",
                    help="exit 1 unless every written .mps has the sha256 the catalogue records (regenerate and compare)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_export_library)
