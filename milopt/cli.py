"""The ``milopt`` command.

Stable contract (users script against it):

* ``milopt datasets [--json]``
* ``milopt info DATA [--json]`` -> bags, positive_bags, instances, features
* ``milopt list [--json]`` -> methods, formulations, solvers, generators
* ``milopt fit METHOD --data DATA [--set k=v ...] [--cv K] [--seed S] [--json]``
* ``milopt solve FORMULATION --data DATA --solver S [--time-limit T] [--gap G] [--warm-start] [--set ...] [--json]``
* ``milopt export FORMULATION --data DATA -o FILE.mps|FILE.lp[.gz] [--set ...] [--json]``
* ``milopt study kent-yu [--out DIR] [--replicates N] [--quick] [--json]``
* ``milopt bench`` / ``milopt report`` / ``milopt export-library`` (benchmark harness)

DATA is a shipped name (``musk1``, ``musk2``), a path to a headerless MIL CSV, or a generator
``gen:NAME?key=value&...``.  ``--set coords=K`` marks the first K feature columns of a CSV as
coordinates; ``--set scale=false`` turns off feature standardisation (fitted on training
folds only).  Errors exit with status 2 and one line naming the problem.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys

PLUGINS = ["milopt.bench.cli"]


def _json_default(o):
    from milopt.jsonutil import default

    return default(o)


def _clean(o):
    from milopt.jsonutil import clean

    return clean(o)


def emit(obj, as_json: bool, text: str | None = None) -> None:
    if as_json:
        print(json.dumps(_clean(obj), default=_json_default, indent=2))
    else:
        print(text if text is not None else json.dumps(_clean(obj), default=_json_default, indent=2))


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# ------------------------------------------------------------------- handlers
def cmd_datasets(args) -> int:
    from milopt.data import datasets

    ds = datasets()
    rows = [{"name": n, "bags": e["bags"], "positive_bags": e["positive_bags"], "instances": e["instances"],
             "features": e["features"], "source": e["source"], "licence": e["licence"]} for n, e in ds.items()]
    text = "\n".join(f"{r['name']:8s} bags={r['bags']:<4d} positive_bags={r['positive_bags']:<4d} "
                     f"instances={r['instances']:<6d} features={r['features']}  ({r['licence']})" for r in rows)
    emit(rows, args.json, text)
    return 0


def cmd_info(args) -> int:
    from milopt.data import load
    from milopt.runner import data_info, parse_sets

    sets = parse_sets(args.set)
    bags = load(args.data, coords=int(sets.get("coords", 0) or 0))
    info = data_info(bags)
    emit(info, args.json, "\n".join(f"{k}: {v}" for k, v in info.items()))
    return 0


def cmd_list(args) -> int:
    from milopt.data import generators
    from milopt.estimators.registry import methods
    from milopt.models import available
    from milopt.solvers import backends

    out = {
        "methods": {n: {"doc": s.doc, "keys": s.keys(), "needs": list(s.needs)} for n, s in sorted(methods().items())},
        "formulations": {n: {"doc": (m.__doc__ or "").strip().split("\n")[0],
                             "keys": {k: v[2] for k, v in getattr(m, "PARAMS", {}).items()}}
                         for n, m in sorted(available().items())},
        "solvers": {n: {"installed": b.available(), "classes": sorted(b.classes), "description": b.description}
                    for n, b in sorted(backends().items())},
        "generators": {n: g.doc for n, g in sorted(generators().items())},
    }
    lines = ["methods:"] + [f"  {n:20s} {v['doc']}" for n, v in out["methods"].items()]
    lines += ["formulations:"] + [f"  {n:20s} {v['doc']}" for n, v in out["formulations"].items()]
    lines += ["solvers:"] + [f"  {n:10s} {'installed' if v['installed'] else 'not installed':14s} "
                             f"{','.join(v['classes'])}" for n, v in out["solvers"].items()]
    lines += ["generators:"] + [f"  gen:{n:16s} {d}" for n, d in out["generators"].items()]
    emit(out, args.json, "\n".join(lines))
    return 0


def cmd_fit(args) -> int:
    from milopt.runner import parse_sets, run_fit

    res = run_fit(args.method, args.data, params=parse_sets(args.set), cv=args.cv, seed=args.seed)
    if args.json:
        emit(res, True)
        return 0
    d = res["data"]
    lines = [f"{args.method} on {d['name']} ({d['bags']} bags, {d['instances']} instances, {d['features']} features)"]
    if args.cv:
        keys = ["bag_accuracy", "bag_auc", "bag_f1", "bag_balanced_accuracy", "fit_seconds"]
        extra = [k for k in ("instance_auc", "instance_f1") if k in res["mean"]]
        keys += extra
        lines.append("fold  " + "  ".join(f"{k:>22s}" for k in keys))
        for r in res["folds"]:
            lines.append(f"{r['fold']:>4d}  " + "  ".join(f"{_fmt(r.get(k)):>22s}" for k in keys))
        lines.append("mean  " + "  ".join(f"{_fmt(res['mean'].get(k)):>22s}" for k in keys))
    else:
        lines.append("training metrics:")
        lines += [f"  {k}: {_fmt(v)}" for k, v in res["train"].items()]
    emit(res, False, "\n".join(lines))
    return 0


def cmd_solve(args) -> int:
    from milopt.runner import parse_sets, run_solve

    res = run_solve(args.formulation, args.data, args.solver, time_limit=args.time_limit, gap=args.gap,
                    params=parse_sets(args.set), threads=args.threads, verbose=args.verbose,
                    warm_start=args.warm_start)
    keys = ["solver", "solver_version", "problem_class", "termination", "status", "objective", "bound", "gap",
            "wall_time", "iterations", "nodes", "build_seconds"]
    lines = [f"{args.formulation} on {res['data']['name']}: " +
             ", ".join(f"{k}={v}" for k, v in res["model_size"].items())]
    lines += [f"  {k}: {_fmt(res.get(k))}" for k in keys]
    emit(res, args.json, "\n".join(lines))
    return 0


def cmd_export(args) -> int:
    import time

    from milopt.runner import build_formulation, data_info, parse_sets
    from milopt.solvers import export

    model, bags, typed, build_s = build_formulation(args.formulation, args.data, parse_sets(args.set))
    t0 = time.perf_counter()
    size = export(model, args.output)
    out = {"formulation": args.formulation, "params": typed, "data": data_info(bags), "file": size.pop("file"),
           "bytes": size.pop("bytes"), "model_size": size, "build_seconds": build_s,
           "write_seconds": time.perf_counter() - t0}
    emit(out, args.json, f"wrote {out['file']} ({out['bytes']} bytes): " +
         ", ".join(f"{k}={v}" for k, v in size.items()))
    return 0


def cmd_study(args) -> int:
    from milopt.errors import InvalidParameterError

    if args.name != "kent-yu":
        raise InvalidParameterError(f"unknown study {args.name!r}; available: kent-yu")
    try:
        study = importlib.import_module("milopt.study")
    except ModuleNotFoundError:
        raise InvalidParameterError("the kent-yu study is not available in this build") from None
    kw = {"out_dir": args.out}
    if args.replicates is not None:
        kw["replicates"] = args.replicates
    if args.quick:
        kw["quick"] = True
    res = study.kent_yu_study(**kw)
    emit(res, args.json, None if args.json else json.dumps(_clean(res), default=_json_default, indent=2))
    return 0


# -------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="milopt", description="Optimization models and algorithms for "
                                "support-vector multiple-instance learning.")
    from milopt import __version__

    p.add_argument("--version", action="version", version=f"milopt {__version__}")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE",
                   help="a .py file or module that registers formulations, methods, backends (repeatable)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def common(sp, data=True):
        if data:
            sp.add_argument("--data", required=True, metavar="DATA",
                            help="shipped name (musk1, musk2), CSV path, or gen:NAME?key=value&...")
            sp.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                            help="parameters, e.g. --set C=10 kernel=rbf (repeatable)")
        sp.add_argument("--json", action="store_true", help="print JSON")

    sp = sub.add_parser("datasets", help="list the shipped data sets")
    common(sp, data=False)
    sp.set_defaults(func=cmd_datasets)

    sp = sub.add_parser("info", help="size of a data set")
    sp.add_argument("data", metavar="DATA")
    sp.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE")
    common(sp, data=False)
    sp.set_defaults(func=cmd_info)

    sp = sub.add_parser("list", help="methods, formulations, solvers and generators")
    common(sp, data=False)
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("fit", help="fit a method (optionally K-fold CV over bags)")
    sp.add_argument("method", metavar="METHOD")
    common(sp)
    sp.add_argument("--cv", type=int, default=None, metavar="K", help="stratified K-fold CV over bags")
    sp.add_argument("--seed", type=int, default=0)
    sp.set_defaults(func=cmd_fit)

    sp = sub.add_parser("solve", help="build a formulation and solve it")
    sp.add_argument("formulation", metavar="FORMULATION")
    common(sp)
    sp.add_argument("--solver", required=True)
    sp.add_argument("--time-limit", type=float, default=None, dest="time_limit")
    sp.add_argument("--gap", type=float, default=None)
    sp.add_argument("--threads", type=int, default=None)
    sp.add_argument("--verbose", action="store_true")
    sp.add_argument("--warm-start", action="store_true", dest="warm_start",
                    help="start from the formulation's cheap feasible point (e.g. a linear SVM for misvm-bigm)")
    sp.set_defaults(func=cmd_solve)

    sp = sub.add_parser("export", help="write a formulation to .mps / .lp (optionally .gz)")
    sp.add_argument("formulation", metavar="FORMULATION")
    common(sp)
    sp.add_argument("-o", "--output", required=True, metavar="FILE")
    sp.set_defaults(func=cmd_export)

    sp = sub.add_parser("study", help="simulation studies (kent-yu)")
    sp.add_argument("name", metavar="STUDY")
    sp.add_argument("--out", default="kent-yu-study")
    sp.add_argument("--replicates", type=int, default=None)
    sp.add_argument("--quick", action="store_true")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_study)

    for mod in PLUGINS:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        m.register(sub)
    return p


def main(argv=None) -> int:
    from milopt.errors import MiloptError

    try:
        from milopt.plugins import argv_plugins, load_all

        load_all(argv_plugins(sys.argv[1:] if argv is None else argv))
    except MiloptError as exc:
        print(f"milopt: error: {exc}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MiloptError as exc:
        print(f"milopt: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"milopt: error: file not found: {exc.filename}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("milopt: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError) as exc:
        # a value milopt did not validate itself (e.g. rejected inside scikit-learn): still one
        # line, not a traceback; MILOPT_DEBUG=1 re-raises for a full trace
        import os

        if os.environ.get("MILOPT_DEBUG"):
            raise
        msg = " ".join(str(exc).split())
        print(f"milopt: error: {type(exc).__name__}: {msg} (check the --set values; MILOPT_DEBUG=1 shows the "
              "traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
