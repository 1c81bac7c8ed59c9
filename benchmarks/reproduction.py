"""Reproduction table: every fit method on MUSK1 / MUSK2 with nested-CV-tuned hyper-parameters.

Protocol (one row per method and data set):

* outer loop: stratified K-fold over bags (``milopt.metrics.bag_folds``, ``--folds`` 10, seed
  ``--seed`` 0: the folds of ``milopt fit METHOD --cv 10 --seed 0``);
* on each outer training set: scikit-learn's ``GridSearchCV`` over ``--grid`` with a stratified
  ``--inner-folds``-fold split of the *training bags only* (shuffled, same seed), scored by bag
  accuracy; the best values are refitted on the whole outer training set;
* the estimator is ``milopt.estimator(METHOD, **fixed)`` -- the one ``milopt fit METHOD`` uses,
  a pipeline whose first step standardises the features with the statistics of the bags it is
  fitted on (so every inner and outer training set is scaled with its own statistics);
* the refitted model is scored once on the held-out outer fold: bag accuracy and bag AUC; the
  table reports mean ± standard deviation over the outer folds and the mean seconds of the
  refit (one fit on an outer training set with the chosen values).

Per-fold rows are appended to ``--out`` (CSV) as soon as they are measured, so an interrupted
run still makes a table; a rerun skips the (data, method, fold) rows the CSV already holds.
``--table`` prints the Markdown table from the CSV.

Budget controls for a loaded machine: ``--methods``, ``--data``, ``--folds``, ``--inner-folds``,
``--grid METHOD:key=v1,v2[;key=...]`` (replaces the default grid of METHOD; repeatable),
``--set METHOD:key=value`` (fixed values), ``--time-limit S`` (passed as ``time_limit`` to every
method that has one: it bounds each solve), ``--method-budget S`` (stop a method on a data set
once its folds have used S seconds of wall time; the folds not run are reported as such).

``--protocol published`` runs instead the protocol of Castro-Macias et al. (*Hyperbolic secant
representation of the logistic function ...*, Sec. 6.2): ``--splits`` 5 stratified 80/20
train/test splits of the bags (scikit-learn ``StratifiedShuffleSplit``, seeds ``--seed`` ..
``--seed + 4``); *every* grid point is fitted on each training part and scored on the matching
test part; the grid point with the best mean bag accuracy over the splits is reported (mean and
standard deviation over the splits). The choice is made on the very test splits whose scores are
reported, so the figure is **optimistic** (a maximum over the grid of noisy test estimates); it
is there to compare with figures obtained that way, not to estimate generalisation. One CSV row
per (grid point, split); ``--table`` recognises such a CSV and prints the selected grid point.

Usage::

    python benchmarks/reproduction.py --out results.csv                 # everything (hours)
    python benchmarks/reproduction.py --data musk1 --methods sil,mi-svm-heuristic --out r.csv
    python benchmarks/reproduction.py --table --out r.csv               # Markdown from the CSV
    python benchmarks/reproduction.py --data 'gen:digits?bags=40' --folds 2 --inner-folds 2 \\
        --methods sil --grid 'sil:C=1,10' --out /tmp/r.csv             # a smoke test
    python benchmarks/reproduction.py --protocol published --data musk1 --methods g-vgpmil \
        --grid 'g-vgpmil:n_inducing=50,100,200;alpha=0.5,1;beta=1,2.5,4' --out p.csv
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import GridSearchCV, ParameterGrid, StratifiedKFold, StratifiedShuffleSplit

import milopt
from milopt.estimators.registry import methods as registered_methods
from milopt.metrics import bag_folds, evaluate

#: fixed values per method (the model that is tuned); strings are typed by milopt.estimator
FIXED = {
    "sil": {"kernel": "rbf"},
    "misvm-heuristic": {"kernel": "rbf"},
    "mi-svm-heuristic": {"kernel": "rbf"},
    "pdmisvm": {},
    "misvm-miqp": {},
    "dcmil": {},
    "dcmil-dca": {},
    "svm-l1": {},
    "psvm": {},
    "vgpmil": {},
    "g-vgpmil": {},
}

#: default grids (small: the full grids of the papers are out of reach of a shared 2-core machine)
GRIDS = {
    "sil": {"C": [1.0, 10.0, 100.0]},
    "misvm-heuristic": {"C": [1.0, 10.0, 100.0]},
    "mi-svm-heuristic": {"C": [1.0, 10.0, 100.0]},
    "pdmisvm": {"C": [0.1, 1.0, 10.0]},
    "misvm-miqp": {"C": [1.0]},
    "dcmil": {"C": [0.1, 1.0, 10.0]},
    "dcmil-dca": {"C": [1.0]},
    "svm-l1": {"nu": [0.1, 1.0, 10.0]},
    "psvm": {"nu": [0.1, 1.0, 10.0]},
    "vgpmil": {"n_inducing": [100, 200]},
    "g-vgpmil": {"n_inducing": [100, 200]},
}

FIELDS = ["data", "method", "fold", "status", "bag_accuracy", "bag_auc", "fit_seconds", "search_seconds",
          "inner_accuracy", "best_params", "fixed", "grid", "inner_folds", "folds", "seed", "termination"]

#: per-(grid point, split) rows of ``--protocol published``
FIELDS_PUBLISHED = ["protocol", "data", "method", "params", "split", "status", "bag_accuracy", "bag_auc",
                    "fit_seconds", "fixed", "grid", "splits", "test_size", "seed", "termination"]


def _typed(v: str):
    low = v.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        f = float(v)
    except ValueError:
        return v.strip()
    return int(f) if f.is_integer() and "." not in v and "e" not in low else f


def parse_method_kv(items, what):
    """``["sil:C=1,10;gamma=0.01"]`` -> {"sil": {"C": [1, 10], "gamma": [0.01]}}."""
    out: dict[str, dict] = {}
    for it in items or []:
        if ":" not in it:
            raise SystemExit(f"error: {what} {it!r}: expected METHOD:key=value (e.g. sil:C=1,10)")
        name, rest = it.split(":", 1)
        d = out.setdefault(name.strip(), {})
        for part in rest.split(";"):
            if not part.strip():
                continue
            if "=" not in part:
                raise SystemExit(f"error: {what} {it!r}: expected key=value after the method name")
            k, v = part.split("=", 1)
            vals = [_typed(x) for x in v.split(",")] if what == "--grid" else _typed(v)
            d[k.strip()] = vals
    return out


def applicable(spec, bags) -> str | None:
    """Why a method cannot run on ``bags`` (None when it can)."""
    if "coords" in spec.needs and bags.coords is None:
        return "needs instance coordinates (batch methods)"
    if "samples" in spec.needs and bags.samples is None:
        return "needs distributional instances (samples)"
    return None


def _rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def method_setup(name, specs, bags, args, sets_cli, grids_cli):
    """(why not applicable or None, fixed values, grid) of method ``name`` on ``bags``."""
    if name not in specs:
        raise SystemExit(f"error: unknown method {name!r}; available: {', '.join(sorted(specs))}")
    spec = specs[name]
    fixed = {**FIXED.get(name, {}), **sets_cli.get(name, {})}
    if args.time_limit is not None and "time_limit" in spec.params:
        fixed.setdefault("time_limit", args.time_limit)
    return applicable(spec, bags), fixed, grids_cli.get(name, GRIDS.get(name, {}))


def done_keys(path):
    return {(r["data"], r["method"], r["fold"]) for r in _rows(path)
            if r["status"] == "ok" or r["status"].startswith("not applicable")}  # a rerun retries the rest


def append(path, row, fields=None):
    """Append ``row`` to the CSV at ``path`` (header written when the file is new or empty)."""
    fields = FIELDS if fields is None else fields
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in fields})
        fh.flush()


def error_status(exc) -> str:
    """The CSV status of a failed fit: the exception's type and its first (and last) line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()] or [""]
    msg = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return f"error: {type(exc).__name__}: {msg[:300]}"


def one_fold(name, fixed, grid, Btr, Bte, inner, seed):
    """GridSearchCV on the training bags only, refit, score the held-out bags."""
    est = milopt.estimator(name, seed=seed, **fixed)
    prefix = "model__" if hasattr(est, "steps") else ""
    pgrid = {prefix + k: v for k, v in grid.items()}
    cv = StratifiedKFold(inner, shuffle=True, random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if all(len(v) == 1 for v in pgrid.values()):  # nothing to choose: no inner CV, one fit
            best_est = est.set_params(**{k: v[0] for k, v in pgrid.items()}).fit(Btr, Btr.y)
            refit_s, inner_acc, best_params = time.perf_counter() - t0, "", {k: v[0] for k, v in pgrid.items()}
        else:
            gs = GridSearchCV(est, pgrid, cv=cv, refit=True, error_score=np.nan, n_jobs=None)
            gs.fit(Btr, Btr.y)
            best_est, refit_s, inner_acc, best_params = (gs.best_estimator_, gs.refit_time_, float(gs.best_score_),
                                                         gs.best_params_)
    search_s = time.perf_counter() - t0
    m = evaluate(best_est, Bte)
    final = best_est.steps[-1][1] if prefix else best_est
    info = getattr(final, "fit_info_", None) or {}
    best = {k[len(prefix):]: v for k, v in best_params.items()}
    return {"bag_accuracy": m["bag_accuracy"], "bag_auc": m["bag_auc"], "fit_seconds": refit_s,
            "search_seconds": search_s, "inner_accuracy": inner_acc,
            "best_params": json.dumps(best), "termination": info.get("termination", "")}


def run(args):
    specs = registered_methods()
    names = args.methods.split(",") if args.methods else list(FIXED)
    grids_cli = parse_method_kv(args.grid, "--grid")
    sets_cli = parse_method_kv(args.set, "--set")
    done = done_keys(args.out)
    for data in args.data.split(","):
        bags = milopt.load(data)
        folds = list(bag_folds(bags, args.folds, args.seed))
        for name in names:
            why, fixed, grid = method_setup(name, specs, bags, args, sets_cli, grids_cli)
            if why:
                if (data, name, "-") not in done:
                    append(args.out, {"data": data, "method": name, "fold": "-", "status": f"not applicable: {why}"})
                print(f"{data} {name}: not applicable ({why})", flush=True)
                continue
            used = 0.0
            for f, (tr, te) in enumerate(folds):
                if (data, name, str(f)) in done:
                    continue
                base = {"data": data, "method": name, "fold": f, "fixed": json.dumps(fixed),
                        "grid": json.dumps(grid), "inner_folds": args.inner_folds, "folds": args.folds,
                        "seed": args.seed}
                if args.method_budget is not None and used > args.method_budget:
                    append(args.out, {**base, "status": f"skipped: method budget {args.method_budget:g} s used"})
                    print(f"{data} {name} fold {f}: skipped (budget)", flush=True)
                    continue
                t0 = time.perf_counter()
                try:
                    row = one_fold(name, fixed, grid, bags.subset(tr), bags.subset(te), args.inner_folds, args.seed)
                    status = "ok"
                except KeyboardInterrupt:
                    raise
                except Exception as exc:  # a failing method is a row of the table, not the end of the run
                    row, status = {}, error_status(exc)
                used += time.perf_counter() - t0
                append(args.out, {**base, **row, "status": status})
                if status == "ok":
                    print(f"{data} {name} fold {f}: acc={row['bag_accuracy']:.3f} auc={row['bag_auc']:.3f} "
                          f"refit={row['fit_seconds']:.1f}s search={row['search_seconds']:.0f}s "
                          f"best={row['best_params']} {row['termination']}", flush=True)
                else:
                    print(f"{data} {name} fold {f}: {status}", flush=True)


def published_splits(bags, n_splits=5, test_size=0.2, seed=0):
    """The ``n_splits`` stratified train/test splits of ``--protocol published``: split ``s`` is
    ``StratifiedShuffleSplit(1, test_size, random_state=seed + s)`` over the bag labels."""
    out = []
    for s in range(n_splits):
        sss = StratifiedShuffleSplit(n_splits=1, test_size=test_size, random_state=seed + s)
        out.append(next(sss.split(np.zeros(bags.n_bags), bags.y)))
    return out


def _params_key(params: dict) -> str:
    return json.dumps({k: params[k] for k in sorted(params)})


def done_published(path):
    return {(r["data"], r["method"], r["params"], r["split"]) for r in _rows(path)
            if r.get("protocol") == "published" and r["status"] == "ok"}


def append_published(path, row):
    append(path, row, FIELDS_PUBLISHED)


def run_published(args):
    """``--protocol published``: every grid point on every split (see the module docstring)."""
    specs = registered_methods()
    names = args.methods.split(",")
    grids_cli = parse_method_kv(args.grid, "--grid")
    sets_cli = parse_method_kv(args.set, "--set")
    done = done_published(args.out)
    for data in args.data.split(","):
        bags = milopt.load(data)
        splits = published_splits(bags, args.splits, args.test_size, args.seed)
        for name in names:
            why, fixed, grid = method_setup(name, specs, bags, args, sets_cli, grids_cli)
            if why:
                print(f"{data} {name}: not applicable ({why})", flush=True)
                continue
            used = 0.0
            for point in ParameterGrid(grid):
                key = _params_key(point)
                for s, (tr, te) in enumerate(splits):
                    if (data, name, key, str(s)) in done:
                        continue
                    base = {"protocol": "published", "data": data, "method": name, "params": key, "split": s,
                            "fixed": json.dumps(fixed), "grid": json.dumps(grid), "splits": args.splits,
                            "test_size": args.test_size, "seed": args.seed}
                    if args.method_budget is not None and used > args.method_budget:
                        append_published(args.out, {**base, "status": f"skipped: method budget {args.method_budget:g} s used"})
                        continue
                    t0 = time.perf_counter()
                    try:
                        Btr, Bte = bags.subset(tr), bags.subset(te)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = milopt.estimator(name, seed=args.seed, **fixed, **point).fit(Btr, Btr.y)
                        fit_s = time.perf_counter() - t0
                        m = evaluate(est, Bte)
                        final = est.steps[-1][1] if hasattr(est, "steps") else est
                        info = getattr(final, "fit_info_", None) or {}
                        row = {"bag_accuracy": m["bag_accuracy"], "bag_auc": m["bag_auc"], "fit_seconds": fit_s,
                               "termination": info.get("termination", "")}
                        status = "ok"
                    except KeyboardInterrupt:
                        raise
                    except Exception as exc:  # a failing fit is a row, not the end of the run
                        row, status = {}, error_status(exc)
                    used += time.perf_counter() - t0
                    append_published(args.out, {**base, **row, "status": status})
                    if status == "ok":
                        print(f"{data} {name} {key} split {s}: acc={row['bag_accuracy']:.3f} "
                              f"auc={row['bag_auc']:.3f} fit={row['fit_seconds']:.1f}s {row['termination']}", flush=True)
                    else:
                        print(f"{data} {name} {key} split {s}: {status}", flush=True)


def select_published(rows, n_splits):
    """The grid point of ``--protocol published``: among the grid points measured on all
    ``n_splits`` splits, the one with the highest mean bag accuracy (ties: the higher mean bag
    AUC, then the first measured). Returns ``(params, per-point summary dict)``; params is None
    when no grid point is complete."""
    per: dict[str, dict] = {}
    for r in rows:
        if r["status"] != "ok":
            continue
        per.setdefault(r["params"], {})[r["split"]] = r  # a split measured twice counts once
    summary = {}
    for key, by_split in per.items():
        if len(by_split) < n_splits:
            continue
        acc = np.array([_f(r["bag_accuracy"]) for r in by_split.values()])
        auc = np.array([_f(r["bag_auc"]) for r in by_split.values()])
        fit = np.array([_f(r["fit_seconds"]) for r in by_split.values()])
        summary[key] = {"acc": acc, "auc": auc, "fit": fit,
                        "terminations": sorted({r["termination"] for r in by_split.values() if r.get("termination")})}
    if not summary:
        return None, summary
    best = max(summary, key=lambda k: (np.nanmean(summary[k]["acc"]), np.nanmean(summary[k]["auc"]),
                                       -list(summary).index(k)))
    return best, summary


def table_published(rows_by_run, several) -> str:
    """Markdown of ``--protocol published`` CSVs: one row per (data, method, run)."""
    head = ("| data | method | " + ("run | " if several else "")
            + "grid points (complete/all) | selected grid point | bag accuracy | bag AUC | s / fit "
            + "| grid mean accuracy (range) | note |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    groups: dict[tuple, list] = {}
    for run_name, rows in rows_by_run:
        for r in rows:
            groups.setdefault((r["data"], r["method"], run_name), []).append(r)
    for key in sorted(groups, key=lambda k: k[0]):
        g = groups[key]
        n_splits = int(g[0]["splits"])
        n_points = len(ParameterGrid(json.loads(g[0]["grid"])))
        best, summary = select_published(g, n_splits)
        lead = f"| {key[0]} | {key[1]} | " + (f"{key[2]} | " if several else "")
        notes = sorted({r["status"] for r in g if r["status"] != "ok"})
        if best is None:
            lines.append(lead + f"0/{n_points} | – | – | – | – | – | {'; '.join(notes) or 'no complete grid point'} |")
            continue
        sb = summary[best]
        means = np.array([np.nanmean(v["acc"]) for v in summary.values()])
        b = json.loads(best)
        ch = _label(b) or "–"
        note = "; ".join(notes + ([f"termination: {', '.join(sb['terminations'])}"] if sb["terminations"] else []))
        lines.append(lead + f"{len(summary)}/{n_points} | {ch} | {np.nanmean(sb['acc']):.3f} ± {np.nanstd(sb['acc']):.3f} | "
                     f"{np.nanmean(sb['auc']):.3f} ± {np.nanstd(sb['auc']):.3f} | {np.nanmean(sb['fit']):.2f} | "
                     f"{means.mean():.3f} ({means.min():.3f}–{means.max():.3f}) | {note} |")
    return "\n".join(lines)


def _label(params: dict) -> str:
    """``{"C": 10.0, "scale_C": False}`` -> ``C=10, scale_C=false``."""
    return ", ".join(f"{k}={str(v).lower()}" if isinstance(v, bool) else f"{k}={v:g}" if isinstance(v, (int, float))
                     else f"{k}={v}" for k, v in params.items())


def _f(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def table(paths) -> str:
    """Markdown: one row per (data, method, run) from per-fold CSVs (``paths``: comma-separated;
    the run is the file's stem without "reproduction_", shown when there are several files)."""
    rows = []
    paths = paths.split(",")
    published = []
    for path in paths:
        with open(path, newline="") as fh:
            rd = list(csv.DictReader(fh))
        run_name = os.path.splitext(os.path.basename(path))[0].removeprefix("reproduction_")
        if rd and "protocol" in rd[0]:
            published.append((run_name, rd))
        else:
            rows += [{**r, "run": run_name} for r in rd]
    several = len(paths) > 1
    if published:
        out = table_published(published, several)
        pub = {n for n, _ in published}
        nested = [p for p in paths if os.path.splitext(os.path.basename(p))[0].removeprefix("reproduction_") not in pub]
        return out if not rows else table(",".join(nested)) + "\n\n" + out
    order, groups = [], {}
    for r in rows:
        key = (r["data"], r["method"], r["run"])
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(r)
    head = "| data | method | " + ("run | " if several else "") + \
        "folds run | bag accuracy | bag AUC | s / fit | chosen values (folds) | note |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for key in sorted(order, key=lambda k: (k[0], order.index(k))):
        g, seen = [], set()
        for r in groups[key]:  # a fold measured twice (two runs appending to one CSV) counts once
            if r["status"] == "ok":
                if r["fold"] in seen:
                    continue
                seen.add(r["fold"])
            g.append(r)
        ok = [r for r in g if r["status"] == "ok"]
        measured = {r["fold"] for r in ok}  # a skipped or failed fold that a rerun measured counts as measured
        g = [r for r in g if r["status"] == "ok" or r["fold"] not in measured]
        if not ok:
            lines.append(f"| {key[0]} | {key[1]} | " + (f"{key[2]} | " if several else "")
                         + f"0 | – | – | – | – | {g[0]['status']} |")
            continue
        acc = np.array([_f(r["bag_accuracy"]) for r in ok])
        auc = np.array([_f(r["bag_auc"]) for r in ok])
        fit = np.array([_f(r["fit_seconds"]) for r in ok])
        chosen: dict[str, int] = {}
        for r in ok:
            b = json.loads(r["best_params"] or "{}")
            s = _label(b)
            chosen[s] = chosen.get(s, 0) + 1
        ch = "; ".join(f"{k} ({n})" for k, n in sorted(chosen.items(), key=lambda t: -t[1])) or "–"
        notes = sorted({r["status"] for r in g if r["status"] != "ok"})
        terms = sorted({r["termination"] for r in ok if r.get("termination")})
        note = "; ".join(notes + ([f"termination: {', '.join(terms)}"] if terms else []))
        k = int(ok[0]["folds"])
        lines.append(f"| {key[0]} | {key[1]} | " + (f"{key[2]} | " if several else "") + f"{len(ok)}/{k} | {np.nanmean(acc):.3f} ± {np.nanstd(acc):.3f} | "
                     f"{np.nanmean(auc):.3f} ± {np.nanstd(auc):.3f} | {np.nanmean(fit):.2f} | {ch} | {note} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", default=None, help="comma-separated method names (default: every registered one)")
    ap.add_argument("--data", default="musk1,musk2", help="comma-separated DATA (default musk1,musk2)")
    ap.add_argument("--folds", type=int, default=10, help="outer folds (default 10)")
    ap.add_argument("--inner-folds", type=int, default=3, help="inner folds of the grid search (default 3)")
    ap.add_argument("--grid", action="append", help="METHOD:key=v1,v2[;key=...] replaces METHOD's default grid")
    ap.add_argument("--set", action="append", help="METHOD:key=value fixed value (repeatable)")
    ap.add_argument("--time-limit", type=float, default=None, help="time_limit of every method that has one (s)")
    ap.add_argument("--method-budget", type=float, default=None,
                    help="wall seconds per (data, method); later folds are skipped once used")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="reproduction.csv",
                    help="per-fold CSV, appended to (default reproduction.csv); with --table, several comma-separated")
    ap.add_argument("--table", action="store_true", help="only print the Markdown table of --out")
    ap.add_argument("--protocol", choices=("nested", "published"), default="nested",
                    help="nested (default): nested CV; published: every grid point on --splits stratified "
                         "train/test splits, the best mean test accuracy reported (optimistic)")
    ap.add_argument("--splits", type=int, default=5, help="train/test splits of --protocol published (default 5)")
    ap.add_argument("--test-size", type=float, default=0.2,
                    help="test fraction of each split of --protocol published (default 0.2)")
    args = ap.parse_args(argv)
    if args.methods is None and not args.table:
        args.methods = ",".join(n for n in registered_methods())
    if not args.table:
        (run_published if args.protocol == "published" else run)(args)
    print(table(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
