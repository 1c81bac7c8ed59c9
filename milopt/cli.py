"""The ``milopt`` command.

(Longer than 600 lines on purpose: what every subcommand prints — its text and ``--json``
output and its exit status — is read in one place; the arguments are declared in
:mod:`milopt.cli_parser`, the work itself lives in :mod:`milopt.runner`, :mod:`milopt.bench`
and below.)

Stable contract (users script against it):

* ``milopt datasets [--json]``
* ``milopt info DATA [--json]`` -> bags, positive_bags, instances, features
* ``milopt list [--json]`` -> methods, formulations, solvers, generators
* ``milopt fit METHOD --data DATA [--set k=v ...] [--cv K] [--seed S] [--tune k=v1,v2,...] [--json]``
* ``milopt solve FORMULATION --data DATA --solver S [--time-limit T] [--gap G] [--warm-start | --no-warm-start] [--set ...] [--json]``
* ``milopt export FORMULATION --data DATA -o FILE.mps|FILE.lp[.gz] [--set ...] [--json]``
* ``milopt study kent-yu [--out DIR] [--replicates N] [--quick] [--full] [--json]``
* ``milopt bench`` / ``milopt report`` / ``milopt export-library`` (benchmark harness)

DATA is a shipped name (``musk1``, ``musk2``), a path to a headerless MIL CSV, or a generator
``gen:NAME?key=value&...``.  ``--set coords=K`` marks the first K feature columns of a CSV as
coordinates; ``--set scale=false`` turns off feature standardisation (fitted on training
folds only).  Errors exit with status 2 and one line naming the problem.
"""
# size: one module for the whole public command: a function per subcommand (cmd_*) and the output
# helpers they share; the argparse tree is in milopt.cli_parser, the work in milopt.runner, milopt.bench
from __future__ import annotations

import argparse
import collections
import importlib
import contextlib
import json
import math
import statistics
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

    from milopt.runner import _header

    from milopt.runner import DATA_PARAMS

    sets = parse_sets(args.set)
    unknown = [k for k in sets if k not in ("coords", "header")]
    if unknown:
        from milopt.errors import InvalidParameterError

        from milopt.errors import did_you_mean

        raise InvalidParameterError(f"info: unknown key(s) {unknown}{did_you_mean(unknown, ['coords', 'header'])}; "
                                    "accepted keys: coords, header")
    data_kw = DATA_PARAMS.validate(dict(sets), "data")
    bags = load(args.data, coords=data_kw.get("coords", 0) or 0, header=_header(data_kw.get("header")))
    info = data_info(bags)
    emit(info, args.json, "\n".join(f"{k}: {v}" for k, v in info.items()))
    return 0


def cmd_list(args) -> int:
    from milopt.data.registry import generators  # (milopt.data.generators is also a module name)
    from milopt.estimators.registry import methods
    from milopt.models import formulations
    from milopt.solvers import backends

    out = {
        "methods": {n: {"doc": s.doc, "keys": s.keys(), "needs": list(s.needs), "params": s.params.summary()}
                    for n, s in sorted(methods().items())},
        "formulations": {n: {"doc": f.doc, "keys": f.params.help(), "params": f.params.summary()}
                         for n, f in sorted(formulations().items())},
        "solvers": {n: {"installed": b.available(), "classes": sorted(b.classes), "description": b.description,
                        "params": b.params.summary() if getattr(b, "params", None) else {}}
                    for n, b in sorted(backends().items())},
        "generators": {n: g.doc for n, g in sorted(generators().items())},
    }
    names = list(getattr(args, "names", None) or [])
    if names:  # milopt list NAME ...: only those methods / formulations (with every key)
        known = set(out["methods"]) | set(out["formulations"]) | set(out["solvers"]) | set(out["generators"])
        unknown = [n for n in names if n not in known]
        if unknown:
            from milopt.errors import InvalidParameterError

            from milopt.errors import did_you_mean

            raise InvalidParameterError(f"list: unknown name(s) {unknown}{did_you_mean(unknown, known)}; `milopt list` "
                                        "shows every method, formulation, solver and generator")
        out = {sec: {n: v for n, v in d.items() if n in names} for sec, d in out.items()}

    def keys(v):
        return [f"      {k} = {_fmt_default(p['default'])}" + (f"  ({p['accepts']})" if p.get("accepts") else "")
                + (f": {p['help']}" if p.get("help") else "") for k, p in v["params"].items()]

    lines = []
    for sec in ("methods", "formulations"):
        if out[sec]:
            lines.append(f"{sec} (key = default (accepts): meaning; set with --set key=value):")
            for n, v in out[sec].items():
                lines.append(f"  {n:20s} {v['doc']}")
                lines += keys(v)
    if out["solvers"]:  # with the options a solver declares (its --set keys on `milopt solve`)
        lines.append("solvers (with the options they declare, set with --set key=value):")
        for n, v in out["solvers"].items():
            lines.append(f"  {n:10s} {'installed' if v['installed'] else 'not installed':14s} {','.join(v['classes'])}")
            lines += keys(v)
    if out["generators"]:
        lines += ["generators:"] + [f"  gen:{n:16s} {d}" for n, d in out["generators"].items()]
    emit(out, args.json, "\n".join(lines))
    return 0


def _fmt_default(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_fmt_default(x) for x in v)
    return str(v)


def _used_params(method: str, params: dict, seed: int) -> dict:
    """Every parameter value the method's estimator runs with (defaults included)."""
    from milopt.estimators.registry import get_method

    est = get_method(method).make(params, seed)
    out = {}
    for k, v in est.get_params(deep=False).items():
        if v is None or isinstance(v, (bool, int, float, str)):
            out[k] = v
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float, str)) for x in v):
            out[k] = list(v)
        else:
            out[k] = str(v)
    return out


def _termination_notes(counts) -> list[str]:
    """One note per termination word other than ``optimal`` (their meanings: docs/statuses.md)."""
    from milopt.solvers.result import TERMINATION_NOTES

    return [f"note: {k}: {TERMINATION_NOTES[k]}" for k in counts if k != "optimal" and k in TERMINATION_NOTES]


def _proof_line(res) -> list[str]:
    """What ``milopt solve``'s result proves, in one line (docs/statuses.md)."""
    term, obj, bound, gap = res.get("termination"), res.get("objective"), res.get("bound"), res.get("gap")
    if obj is None:
        return []
    minimize = res.get("sense", "minimize") != "maximize"
    if term == "optimal" and bound is not None and gap is not None:
        side = "below" if minimize else "above"
        return [f"  proof: no solution has an objective {side} the bound {bound:.6g}; the objective {obj:.6g} is "
                f"within {100 * gap:.2g} % of it (relative gap; proven optimal)"]
    if bound is not None and gap is not None:
        return [f"  not proven: objective {obj:.6g}, bound {bound:.6g}, gap {gap:.2%} ({term}); the solution is "
                "the best found, not certified optimal"]
    return [f"  not proven: objective {obj:.6g}, no bound ({term})"]


def _fmt_gap(row) -> str:
    term = row.get("termination")
    gap = row.get("gap")
    if term == "optimal":
        return "proven optimal" if gap is None or gap <= 1e-4 else f"optimal (gap {gap:.2%})"
    if gap is None or (isinstance(gap, float) and not math.isfinite(gap)):
        return "no bound"
    return f"gap {gap:.1%}"


def _time_limit_option(args, params: dict) -> dict:
    """``--time-limit T`` and ``--set time_limit=T`` are the same setting; refuse two different values."""
    params = dict(params)
    from milopt.solvers.budget import parse_time_limit

    cli = parse_time_limit(getattr(args, "time_limit", None), "--time-limit")
    if cli is not None and "time_limit" in params and parse_time_limit(params["time_limit"], "--set time_limit") != cli:
        from milopt.errors import InvalidParameterError

        raise InvalidParameterError(f"--time-limit {cli:g} and --set time_limit={params['time_limit']} disagree; "
                                    "give one of them")
    if cli is not None:
        params["time_limit"] = cli
    return params


def _check_cv(cv) -> None:
    from milopt.errors import InvalidParameterError

    if cv is not None and cv < 2:
        raise InvalidParameterError(f"--cv {cv}: K-fold cross-validation needs K >= 2 folds (omit --cv to fit on "
                                    "all bags and see training metrics)")


def _tune_options(args) -> dict:
    """``--tune``, ``--inner-cv``, ``--tune-metric`` as run_fit's keywords (refused without --tune / --cv)."""
    from milopt.errors import InvalidParameterError
    from milopt.runner import parse_tunes

    items = getattr(args, "tune", None) or []
    inner, metric = getattr(args, "inner_cv", None), getattr(args, "tune_metric", None)
    if not items:
        if inner is not None or metric is not None:
            raise InvalidParameterError("--inner-cv and --tune-metric apply only with --tune KEY=v1,v2,...")
        return {}
    tune = parse_tunes(items)
    if not args.cv:
        raise InvalidParameterError("--tune needs --cv K with K >= 2 (nested cross-validation tunes on the "
                                    "training bags of each outer fold)")
    return {"tune": tune, "inner_cv": 3 if inner is None else inner, "tune_metric": metric or "auc"}


def cmd_fit(args) -> int:
    from milopt.runner import parse_sets, run_fit

    _check_cv(args.cv)
    params = _time_limit_option(args, parse_sets(args.set))
    tune_kw = _tune_options(args)
    progress = None
    if not args.quiet and (args.progress or sys.stderr.isatty()):
        tuning = ""
        if tune_kw:
            tuning = (f" (tuning: {math.prod(len(v) for v in tune_kw['tune'].values())} grid points × "
                      f"{tune_kw['inner_cv']} inner folds)")

        def progress(fold, k):
            print(f"milopt: fold {fold + 1}/{k}{tuning}", file=sys.stderr, flush=True)

    res = run_fit(args.method, args.data, params=params, cv=args.cv, seed=args.seed,
                  **({"progress": progress} if progress is not None else {}), **tune_kw)
    data_keys = {"coords", "scale", "header"}
    used = _used_params(args.method, {k: v for k, v in params.items() if k not in data_keys}, args.seed)
    res["params"] = {**used, **{k: v for k, v in params.items() if k in data_keys}}
    for k in (res.get("tune") or {}).get("grid", {}):  # tuned keys: per fold in folds[i].tuned
        res["params"].pop(k, None)
    exact = False
    if args.cv:
        num = [k for k, v in res["mean"].items() if v is not None]
        std = {}
        for k in num:
            vals = [r[k] for r in res["folds"] if isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                    and r.get(k) is not None and math.isfinite(r[k])]
            std[k] = float(statistics.pstdev(vals)) if len(vals) >= 2 else None
        res["std"] = std
        exact = any("termination" in r for r in res["folds"])
        if exact:
            res["terminations"] = dict(collections.Counter(str(r.get("termination")) for r in res["folds"]))
    for w in res.get("warnings") or ():  # one line each on stderr, also with --json (stdout stays one document)
        print(f"milopt: warning: {w}", file=sys.stderr)
    if args.json:
        emit(res, True)
        return 0
    d = res["data"]
    lines = [f"{args.method} on {d['name']} ({d['bags']} bags, {d['instances']} instances, {d['features']} features)"]
    if args.cv:
        keys = ["bag_accuracy", "bag_auc", "bag_f1", "bag_balanced_accuracy", "fit_seconds"]
        keys += [k for k in ("instance_auc", "instance_f1") if k in res["mean"]]
        w = 16
        ws = {k: max(w, len(k)) for k in keys}
        head = "fold  " + "  ".join(f"{k:>{ws[k]}s}" for k in keys)
        if exact:
            head += "  termination / gap"
        if "tune" in res:
            head += "  tuned"
        lines.append(head)
        for r in res["folds"]:
            line = f"{r['fold']:>4d}  " + "  ".join(f"{_fmt(r.get(k)):>{ws[k]}s}" for k in keys)
            if exact:
                line += f"  {r.get('termination', '-')} / {_fmt_gap(r)}"
            if "tune" in res:
                line += "  " + " ".join(f"{k}={_fmt(v)}" for k, v in r["tuned"].items())
            lines.append(line)

        def pm(k):
            m, sd = res["mean"].get(k), res["std"].get(k)
            return "-" if m is None else (f"{m:.3f}" if sd is None else f"{m:.3f} ± {sd:.3f}")

        lines.append("mean  " + "  ".join(f"{pm(k):>{ws[k]}s}" for k in keys))
        if exact:
            t = res["terminations"]
            lines.append("terminations: " + ", ".join(f"{v} × {k}" for k, v in t.items()))
            lines += _termination_notes(t)
        if "tune" in res:
            t = res["tune"]
            lines.append(f"tuned by nested CV: inner {t['inner_cv']}-fold on each training fold, best mean inner "
                         f"bag {t['metric']} over " + " x ".join(f"{k}={','.join(_fmt(v) for v in vs)}"
                                                                 for k, vs in t["grid"].items()))
    else:
        lines.append("training metrics:")
        lines += [f"  {k}: {_fmt(v)}" for k, v in res["train"].items()]
        if "termination" in res["train"]:
            lines.append(f"  termination: {res['train']['termination']} / {_fmt_gap(res['train'])}")
            lines += _termination_notes({res["train"]["termination"]: 1})
    emit(res, False, "\n".join(lines))
    return 0


def cmd_solve(args) -> int:
    from milopt.runner import parse_sets, run_solve

    params = parse_sets(args.set)
    if "time_limit" in params:  # --set time_limit=T is accepted as on `milopt fit`
        from milopt.errors import InvalidParameterError

        raw = params.pop("time_limit")
        from milopt.solvers.budget import parse_time_limit

        tl = parse_time_limit(raw, "--set time_limit")
        if args.time_limit is not None and tl != args.time_limit:
            raise InvalidParameterError(f"--time-limit {args.time_limit:g} and --set time_limit={tl} disagree; "
                                        "give one of them")
        args.time_limit = tl
    from milopt.solvers.budget import parse_time_limit

    args.time_limit = parse_time_limit(args.time_limit, "--time-limit")  # the one check of a time limit
    from milopt.processes import command_start
    from milopt.solvers.budget import FINISH_SECONDS

    # the command's limit bounds its whole wall time: from the process's start, keeping time to
    # print and exit (called as a function, main() counts from the call)
    start = command_start()
    res = run_solve(args.formulation, args.data, args.solver, time_limit=args.time_limit, gap=args.gap,
                    params=params, threads=args.threads, verbose=args.verbose, warm_start=args.warm_start,
                    t_start=None if start is None else start - FINISH_SECONDS)
    keys = ["solver", "solver_version", "problem_class", "termination", "status", "objective", "bound", "gap",
            "wall_time", "iterations", "nodes", "build_seconds"]
    if res.get("data") and res.get("model_size"):
        lines = [f"{args.formulation} on {res['data']['name']}: " +
                 ", ".join(f"{k}={v}" for k, v in res["model_size"].items())]
    else:  # the time limit passed before the model was built
        lines = [f"{args.formulation} on {args.data}: {(res.get('extra') or {}).get('message', 'not built')}"]
    lines += [f"  {k}: {_fmt(res.get(k))}" for k in keys]
    lines += _proof_line(res)
    emit(res, args.json, "\n".join(lines))
    if res.get("termination") == "interrupted":  # the result so far is printed; the status says why it ended
        from milopt.processes import exit_status

        print(f"milopt: interrupted; the result above is the best found when the {res.get('solver')} solve "
              "stopped", file=sys.stderr)
        return exit_status()
    if res.get("termination") in ("error", "unknown"):
        extra = res.get("extra") or {}
        why = extra.get("error") or extra.get("ipopt_message") or extra.get("scip_status") or "no detail"
        print(f"milopt: error: {res.get('solver')} ended with termination {res['termination']} ({why})",
              file=sys.stderr)
        return 1
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
        from milopt.errors import unknown_name

        raise unknown_name("study", args.name, ["kent-yu"])
    try:
        study = importlib.import_module("milopt.study")
    except ModuleNotFoundError:
        raise InvalidParameterError("the kent-yu study is not available in this build") from None
    kw = {"out_dir": args.out}
    if args.replicates is not None:
        kw["replicates"] = args.replicates
    if args.quick:
        kw["quick"] = True
    if getattr(args, "full", False):
        kw["full"] = True
    res = study.kent_yu_study(**kw)
    emit(res, args.json, None if args.json else json.dumps(_clean(res), default=_json_default, indent=2))
    return 0


# -------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The command's argparse tree (:func:`milopt.cli_parser.build_parser`), each subcommand bound to
    its function here, with the subcommands of the installed :data:`PLUGINS`."""
    from milopt.cli_parser import build_parser as tree

    return tree({"datasets": cmd_datasets, "info": cmd_info, "list": cmd_list, "fit": cmd_fit, "solve": cmd_solve,
                 "export": cmd_export, "study": cmd_study}, PLUGINS)


def _set_items(args) -> list[tuple[str, str]]:
    """The ``--set`` items as (key, value) pairs, read by :func:`milopt.runner.parse_sets` (the one
    parser; a command has refused a malformed item before it could fail elsewhere)."""
    from milopt.errors import InvalidParameterError
    from milopt.runner import parse_sets

    try:
        return list(parse_sets(getattr(args, "set", None)).items())
    except InvalidParameterError:
        return []


def _blame_key(args, msg: str) -> str | None:
    """The ``--set`` item a bare Python error message is about (its value appears in the message)."""
    for k, v in _set_items(args):
        if v and (repr(v) in msg or f"'{v}'" in msg or f'"{v}"' in msg):
            return f"{k}={v}"
    keys = [f"{k}={v}" for k, v in _set_items(args) if k and k in msg]
    return keys[0] if len(keys) == 1 else None


#: one line per file-system error (the file name fills the braces)
_OS_ERRORS = (
    (FileNotFoundError, "file not found: {}"),
    (IsADirectoryError, "{} is a directory; give a file path"),
    (NotADirectoryError, "cannot write {}: a part of the path is a regular file, not a directory"),
    (FileExistsError, "cannot create {}: a file of that name is in the way"),
    (PermissionError, "permission denied: {}"),
)


def plugins_first(argv) -> list[str]:
    """``argv`` with every ``--plugin FILE`` / ``--plugin=FILE`` moved before the subcommand, so
    that ``--plugin`` is accepted anywhere on the command line (``milopt fit m --plugin p.py``
    as ``milopt --plugin p.py fit m``).  A ``--plugin`` without a value is left in place (the
    parser then says what is missing)."""
    front, rest = [], []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--plugin" and i + 1 < len(argv):
            front += [a, argv[i + 1]]
            i += 2
            continue
        if a.startswith("--plugin="):
            front.append(a)
        else:
            rest.append(a)
        i += 1
    return front + rest


@contextlib.contextmanager
def json_stdout(active: bool):
    """With ``--json``, stdout holds the one JSON document and nothing else: while the command
    runs, file descriptor 1 points at stderr (native solver code printing banners and logs from C
    writes there), and Python's ``sys.stdout`` writes to the real standard output."""
    if not active:
        yield
        return
    import os

    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
        saved = os.dup(fd)
    except (AttributeError, OSError, ValueError):  # no real file behind stdout (captured): nothing to guard
        yield
        return
    old = sys.stdout
    real = os.fdopen(os.dup(saved), "w", encoding=getattr(old, "encoding", None) or "utf-8")
    os.dup2(2, fd)
    sys.stdout = real
    try:
        yield
    finally:
        try:
            real.flush()
        finally:
            sys.stdout = old
            os.dup2(saved, fd)
            os.close(saved)
            real.close()


def main(argv=None) -> int:
    from milopt.errors import MiloptError

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        from milopt.plugins import argv_plugins, load_all

        load_all(argv_plugins(argv))
    except MiloptError as exc:
        print(f"milopt: error: {exc}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(plugins_first(argv))
    from milopt.processes import exit_status, received, signal_name

    try:
        code = _run_command(args)
    except Exception:  # an error a signal caused (e.g. an extension module whose import it cut)
        if received() is None:
            raise
        print(f"milopt: interrupted by {signal_name(received())}", file=sys.stderr)
        code = 0
    # a signal arrived and the command stopped with what it had (printed): 128 + n, whatever else
    return exit_status() if received() is not None else code


def _run_command(args) -> int:
    """``args.func(args)``, its errors as one line each and their exit status."""
    from milopt.errors import MiloptError

    try:
        with json_stdout(bool(getattr(args, "json", False))):
            return int(args.func(args) or 0)
    except MiloptError as exc:
        print(f"milopt: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        from milopt.processes import exit_status, received, signal_name

        n = getattr(exc, "signum", None) or received()
        print(f"milopt: interrupted{f' by {signal_name(n)}' if n else ''}", file=sys.stderr)
        return exit_status(n)
    except BrokenPipeError:  # output piped into a command that stopped reading (e.g. `| head`)
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0
    except OSError as exc:
        import os

        for typ, msg in _OS_ERRORS:
            if isinstance(exc, typ):
                print(f"milopt: error: {msg.format(exc.filename)}", file=sys.stderr)
                return 2
        if os.environ.get("MILOPT_DEBUG"):
            raise
        where = f": {exc.filename}" if exc.filename else ""
        print(f"milopt: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OverflowError) as exc:
        # a value milopt did not validate itself (e.g. rejected inside scikit-learn): still one
        # line, not a traceback; MILOPT_DEBUG=1 re-raises for a full trace
        import os

        if os.environ.get("MILOPT_DEBUG"):
            raise
        msg = " ".join(str(exc).split())
        key = _blame_key(args, msg)
        if key:
            print(f"milopt: error: --set {key}: value rejected ({type(exc).__name__}: {msg}); check the key's "
                  "type with `milopt list`", file=sys.stderr)
        else:
            print(f"milopt: error: {type(exc).__name__}: {msg} (check the --set values; MILOPT_DEBUG=1 shows the "
                  "traceback)", file=sys.stderr)
        return 2


#: commands whose process may end without Python's finalisation (freeing a large Pyomo model
#: object by object took seconds, outside every time limit); their files are closed already
FAST_EXIT_COMMANDS = frozenset({"fit", "solve", "export", "info", "datasets", "list"})


def run() -> None:  # pragma: no cover - the console-script entry point (exits the process)
    """``milopt`` console script: :func:`main`, then exit (skipping the teardown for the
    commands in :data:`FAST_EXIT_COMMANDS`).

    SIGINT, SIGTERM and SIGHUP end the command the same way (:mod:`milopt.processes`): the
    result so far is printed, every process the command started is ended, and the exit status
    is 128 + the signal's number."""
    import os

    from milopt import processes

    processes.begin_command()
    processes.install()
    argv = sys.argv[1:]
    try:
        code = main(argv)
    except KeyboardInterrupt as exc:  # a signal outside main's own handling (start-up, plugins)
        code = processes.exit_status(getattr(exc, "signum", None))
    processes.ending()
    processes.end_descendants()  # nothing the command started outlives it
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in FAST_EXIT_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
