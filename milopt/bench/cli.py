"""Subcommands ``milopt bench``, ``milopt report`` and ``milopt export-library`` (registered by milopt.cli)."""
from __future__ import annotations

import sys
from pathlib import Path


def _print_json(obj) -> None:
    from milopt.cli import emit

    emit(obj, True)


def _summary_text(rep: dict) -> str:
    from milopt.bench.report import load_runs, markdown_table, summary_table

    return markdown_table(summary_table(load_runs(Path(rep["files"]["summary_md"]).parent)))


def cmd_bench(args) -> int:
    import warnings

    from milopt.bench.config import BenchWarning, load_config
    from milopt.bench.harness import run_bench
    from milopt.bench.report import write_report
    from milopt.errors import InvalidParameterError

    if args.jobs is not None and args.jobs == 0:
        raise InvalidParameterError("--jobs: expected a positive number of parallel runs (or -1 for one per CPU)")
    cfg = load_config(args.config)
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


def cmd_report(args) -> int:
    from milopt.bench.report import write_report

    rep = write_report(args.dir, solu_in=args.solu, shift=args.shift)
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
    man = export_library(args.dir, formats=split(args.formats) or [], config=args.config,
                         formulations=split(args.formulations), data=split(args.data), solu=args.solu,
                         progress=None if args.json else sys.stderr)
    if args.json:
        _print_json(man)
    else:
        print(f"{len(man['instances'])} instance(s) written to {args.dir} (manifest.json, library.solu); "
              f"{len(man['skipped'])} skipped")
        for s in man["skipped"]:
            print(f"  skipped {s['name']}: {s['reason'][:160]}")
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
    sp.add_argument("--quiet", action="store_true", help="no progress display")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_bench)

    sp = subparsers.add_parser("report", help="summaries, performance profiles, gap plots and .solu of a bench folder")
    sp.add_argument("dir", metavar="DIR")
    sp.add_argument("--solu", default=None, metavar="FILE",
                    help="existing .solu file to update (default: DIR/best.solu)")
    sp.add_argument("--shift", type=float, default=10.0, help="shift of the geometric mean in seconds (10)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_report)

    sp = subparsers.add_parser("export-library", help="write every formulation x shipped data set as .mps.gz/.lp.gz")
    sp.add_argument("dir", metavar="DIR")
    sp.add_argument("--formats", default="mps,lp", help="comma list of mps, lp (default both)")
    sp.add_argument("--config", default=None, metavar="CONFIG.toml",
                    help="take the instances from this bench configuration's [[solve]] entries")
    sp.add_argument("--formulations", default=None, help="comma list restricting the formulations")
    sp.add_argument("--data", default=None, help="comma list restricting the data sets")
    sp.add_argument("--solu", default=None, metavar="FILE", help="best known objectives (from milopt report)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_export_library)
