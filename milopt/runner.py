"""One fit or one solve, from names: the layer shared by the CLI and the benchmark harness.

``run_fit(method, data, ...)`` and ``run_solve(formulation, data, solver, ...)`` take the public
names of the ``milopt`` command (method / formulation names, DATA as a shipped name, a CSV path
or ``gen:NAME?k=v``) and return plain dictionaries ready for JSON.
"""
from __future__ import annotations

import time
import warnings as _warnings

import numpy as np

from milopt.data.bags import Bags
from milopt.data.loading import load
from milopt.errors import DegenerateModelWarning, InvalidDataError, InvalidParameterError
from milopt.jsonutil import finite
from milopt.numerics import standardize
from milopt.params import Bool, Int, ParamSet, Str

#: keys of ``--set`` that describe the data rather than the method or formulation
DATA_PARAMS = ParamSet(
    coords=Int(0, "number of leading feature columns of a CSV that are instance coordinates", ge=0),
    scale=Bool(True, "standardise features (with training statistics only)"),
    header=Str("auto", "CSV files: the first row holds column names (true, false or auto: detected)"),
)
DATA_KEYS = tuple(DATA_PARAMS)


def _header(value):
    """``--set header=true|false|auto`` (CSV files: the first row holds column names)."""
    if value is None or isinstance(value, bool):
        return value
    if str(value).strip().lower() == "auto":
        return None
    from milopt.params import parse_bool

    try:
        return parse_bool("header", value)
    except InvalidParameterError:
        raise InvalidParameterError(f"header: expected true, false or auto, got {value!r}") from None


def parse_sets(items) -> dict:
    """``["C=1", "kernel=rbf"]`` -> {"C": "1", "kernel": "rbf"}: the values stay strings until
    the method's or formulation's declaration types them (:mod:`milopt.params`)."""
    out: dict = {}
    for k, v in _key_values(items, "--set", "key=value (e.g. --set C=10)"):
        if k in out and out[k] != v.strip():
            raise InvalidParameterError(f"--set {k}: given twice ({k}={out[k]}, {k}={v.strip()}); give it once")
        out[k] = v.strip()
    return out


def _key_values(items, flag: str, expected: str):
    """(key, raw value) pairs of ``KEY=VALUE`` command-line items; one-line errors name ``flag``."""
    for it in items or []:
        if "=" not in it:
            raise InvalidParameterError(f"{flag} {it!r}: expected {expected}")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k:
            raise InvalidParameterError(f"{flag} {it!r}: empty key")
        yield k, v


def data_info(bags: Bags) -> dict:
    return {"name": bags.name, "bags": bags.n_bags, "positive_bags": bags.positive_bags,
            "instances": bags.n_instances, "features": bags.n_features,
            "has_instance_labels": bags.instance_y is not None, "has_coords": bags.coords is not None,
            "has_samples": bags.samples is not None}


def _split_params(params: dict | None):
    params = dict(params or {})
    data_kw = DATA_PARAMS.validate({k: params.pop(k) for k in DATA_KEYS if k in params}, "data")
    return params, data_kw.get("coords", 0), data_kw.get("scale", True)


def check_needs(name: str, needs, bags: Bags) -> None:
    if "coords" in needs and bags.coords is None:
        raise InvalidDataError(
            f"{name} needs instance coordinates (batch methods build within-batch similarities from them); "
            "use a generator with coordinates (gen:cad) or, for a CSV whose first K feature columns are "
            "coordinates, --set coords=K")
    if "samples" in needs and bags.samples is None:
        raise InvalidDataError(
            f"{name} needs distributional instances (a sample of points per instance); use gen:kent-yu "
            "or build Bags with samples=")


def _fit_eval(spec, params, seed, Btr: Bags, Bte: Bags | None, scale: bool) -> dict:
    from milopt.metrics import evaluate

    if scale and spec.scale:
        if Bte is not None:
            Btr, Bte = standardize(Btr, Bte)
        else:
            Btr = standardize(Btr)
    est = spec.make(params, seed)
    t0 = time.perf_counter()
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always", DegenerateModelWarning)
        est.fit(Btr)
    fit_s = time.perf_counter() - t0
    if str((getattr(est, "fit_info_", None) or {}).get("termination")) == "interrupted":
        # the solver stopped on Ctrl-C / SIGTERM and returned its best point: the fit is not
        # finished, and an interrupted fit never counts (the command stops here)
        from milopt.processes import Interrupted, received

        raise Interrupted(received()) if received() is not None else KeyboardInterrupt("fit interrupted")
    for w in caught:  # the degenerate-model finding is reported below; other warnings pass on
        if not issubclass(w.category, DegenerateModelWarning):
            _warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    found = []
    if Bte is not None and getattr(est, "degenerate_", None):
        found.append(f"training bags: {est.degenerate_}")
    t1 = time.perf_counter()
    held = []
    row = evaluate(est, Bte if Bte is not None else Btr, warnings=held)
    pred_s = time.perf_counter() - t1
    found += [(f"held-out bags: {w}" if Bte is not None else f"training bags: {w}") for w in held]
    row.update({"fit_seconds": fit_s, "predict_seconds": pred_s})
    info = getattr(est, "fit_info_", None) or {}
    for k, v in info.items():
        if isinstance(v, (bool, int, float, str)) and k not in row:
            row[k] = v
    row = finite(row)
    if found:
        row["warnings"] = found
    hist = getattr(est, "history_", None)  # per-iteration records of native algorithms (--json)
    if hist:
        row["history"] = [finite(dict(h)) for h in hist]
    return row


def run_fit(method: str, data: str, *, params: dict | None = None, cv: int | None = None, seed: int = 0,
            fold: int | None = None, bags: Bags | None = None, progress=None, tune: dict | None = None,
            inner_cv: int = 3, tune_metric: str = "auc") -> dict:
    """Fit ``method`` on ``data``.

    Without ``cv``: fit on all bags and report training metrics.  With ``cv``: stratified
    K-fold over bags (features standardised on each training fold); ``fold`` restricts the
    run to one held-out fold (the benchmark harness runs folds as separate runs).

    ``tune={"C": [0.1, 1, 10], ...}`` (needs ``cv`` >= 2) runs nested cross-validation: on each
    outer training fold, an inner stratified ``inner_cv``-fold over its bags scores every point of
    the grid (the Cartesian product of the values, first key varying slowest) by the mean inner
    bag AUC (``tune_metric="auc"``; ties broken by bag accuracy, then by grid order) or bag
    accuracy (``"accuracy"``; ties by AUC, then grid order); the chosen values are refitted on the
    whole outer training fold and evaluated on its test fold.  Each row of ``folds`` then holds
    ``tuned`` (the chosen values) and ``tune_scores`` (mean inner metrics per grid point); the
    result holds ``tune = {"grid", "inner_cv", "metric", "path_starts"}``.  With the exact
    solver (``--set solver=bnb``) the grid of C on one inner training set is solved as a path,
    each C started from the previous C's certified optimum (``path_starts``: how many inner
    fits were; :func:`_select`).
    """
    from milopt.estimators.registry import get_method
    from milopt.metrics import bag_folds

    spec = get_method(method)
    header = _header((params or {}).get("header"))
    if tune is not None:
        grid = tune_grid(spec, tune, params)
        if not cv or int(cv) < 2:
            raise InvalidParameterError("--tune needs --cv K with K >= 2 (nested cross-validation tunes on the "
                                        "training bags of each outer fold)")
        inner_cv = _check_inner(inner_cv, tune_metric)
    params, coords, scale = _split_params(params)
    params = spec.validate(params)  # typed; bad keys and values refused before loading data
    if bags is None:
        bags = load(data, coords=coords, header=header)
    check_needs(method, spec.needs, bags)
    out = {"method": method, "data": data_info(bags), "params": spec.resolve(params, seed), "seed": seed}
    if not cv:
        out["train"] = _fit_eval(spec, params, seed, bags, None, scale)
        if "history" in out["train"]:
            out["history"] = out["train"].pop("history")
        out["warnings"] = [f"degenerate model: {w}" for w in out["train"].pop("warnings", [])]
        out["mean"] = out["train"]
        return out
    folds = list(bag_folds(bags, int(cv), seed))
    if fold is not None and not (0 <= fold < len(folds)):
        raise InvalidParameterError(f"fold: expected 0..{len(folds) - 1}, got {fold}")
    if tune is not None:  # every outer training fold can hold the inner folds: refuse before fitting
        for f, (tr, _) in enumerate(folds):
            if fold is None or f == fold:
                _check_inner_folds(bags.y[tr], inner_cv)
    rows, path_starts = [], 0
    for f, (tr, te) in enumerate(folds):
        if fold is not None and f != fold:
            continue
        if progress is not None:
            progress(f, len(folds))
        if tune is not None:
            chosen, scores, warm = _select(spec, params, seed, bags.subset(tr), grid, inner_cv, tune_metric, scale)
            row = _fit_eval(spec, {**params, **chosen}, seed, bags.subset(tr), bags.subset(te), scale)
            row.update({"tuned": chosen, "tune_scores": scores})
            path_starts += warm
        else:
            row = _fit_eval(spec, params, seed, bags.subset(tr), bags.subset(te), scale)
        rows.append({"fold": f, "train_bags": int(tr.size), "test_bags": int(te.size), **row})
    keys = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            and k not in ("fold", "train_bags", "test_bags")]
    mean = {}
    for k in keys:
        vals = [r[k] for r in rows if isinstance(r.get(k), (int, float)) and r.get(k) is not None]
        mean[k] = float(np.nanmean(vals)) if vals else None
    out.update({"cv": int(cv), "folds": rows, "mean": finite(mean)})
    from milopt.metrics import fold_warnings

    out["warnings"] = fold_warnings(rows)
    if tune is not None:
        out["tune"] = {"grid": grid, "inner_cv": inner_cv, "metric": tune_metric, "path_starts": path_starts}
        for k in grid:  # a tuned key has no single value: it is in each fold's "tuned"
            out["params"].pop(k, None)
    return out


#: ``--tune-metric`` choices: the inner-CV criterion and its tie-break
TUNE_METRICS = {"auc": ("bag_auc", "bag_accuracy"), "accuracy": ("bag_accuracy", "bag_auc")}


def parse_tunes(items) -> dict:
    """``["C=0.1,1,10", "gamma=0.5,1"]`` -> {"C": ["0.1", "1", "10"], "gamma": ["0.5", "1"]}
    (strings; :func:`tune_grid` types them through the method's declaration)."""
    out = {}
    for k, v in _key_values(items, "--tune", "key=v1,v2,... (e.g. --tune C=0.1,1,10)"):
        it = f"{k}={v}"
        vals = [x.strip() for x in v.split(",")]
        if k in out:
            raise InvalidParameterError(f"--tune {k} is given twice; list all its values once (--tune {k}=v1,v2,...)")
        if not v.strip() or any(x == "" for x in vals):
            raise InvalidParameterError(f"--tune {it!r}: empty value; expected {k}=v1,v2,...")
        out[k] = vals
    return out


def tune_grid(spec, tune: dict, params: dict | None = None) -> dict:
    """The grid ``{key: [typed values]}``: every value typed by the method's declaration.

    Refuses an empty grid, data keys, keys also fixed in ``params`` (``--set``), and values the
    declaration rejects (one line naming the key)."""
    if not isinstance(tune, dict) or not tune:
        raise InvalidParameterError("--tune: give at least one key and its values (e.g. --tune C=0.1,1,10)")
    grid = {}
    for k, vals in tune.items():
        if k in DATA_PARAMS:
            raise InvalidParameterError(f"--tune {k}: {k} describes the data and cannot be tuned; use --set {k}=...")
        if k in (params or {}):
            raise InvalidParameterError(f"--tune {k} and --set {k} both given; a key is either fixed (--set) or "
                                        "tuned (--tune)")
        if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
            vals = [vals]
        vals = list(vals)
        if not vals:
            raise InvalidParameterError(f"--tune {k}: no values; expected {k}=v1,v2,...")
        typed = []
        for v in vals:
            try:
                typed.append(spec.params.validate({k: v}, spec.name)[k])   # the key alone: rules between
                # keys are checked with the other values, per grid point
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"--tune {exc}") from None
        grid[k] = typed
    return grid


def _check_inner(inner_cv, tune_metric) -> int:
    if isinstance(inner_cv, bool) or not isinstance(inner_cv, (int, np.integer)) or inner_cv < 2:
        raise InvalidParameterError(f"--inner-cv {inner_cv}: the inner cross-validation needs K >= 2 folds")
    if tune_metric not in TUNE_METRICS:
        raise InvalidParameterError(f"--tune-metric {tune_metric!r}: expected one of {', '.join(TUNE_METRICS)}")
    return int(inner_cv)


def _check_inner_folds(y, inner_cv: int) -> None:
    counts = np.bincount(np.asarray(y))
    if counts[counts > 0].min() < inner_cv:
        raise InvalidDataError(f"--inner-cv {inner_cv}: an outer training fold has only {counts[counts > 0].min()} "
                               "bags in its smallest class; use a smaller --inner-cv or --cv")


def grid_points(grid: dict) -> list[dict]:
    """The Cartesian product of ``grid`` in grid order (the first key varies slowest)."""
    import itertools

    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _select(spec, params, seed, Btr: Bags, grid: dict, inner_cv: int, metric: str, scale: bool):
    """Inner stratified K-fold over the bags of ``Btr`` (an outer training fold): the grid point
    with the best mean inner ``metric`` (ties: the other metric, then grid order), the table
    of mean inner scores and the number of inner fits warm-started along a path of C.  On AUC,
    an inner fit whose ``threshold`` is not given uses ``'zero'``: AUC does not depend on the
    decision rule, and ``'auto'`` would cost the inner-cv rule's extra fits in every inner fit
    (the accuracy of the tie-break is then the margin rule's).

    The grid is fitted inner fold by inner fold, in grid order, inside
    :func:`milopt.solvers.bnb.c_path`: with the exact solver (``--set solver=bnb``) the points
    of one inner training set form a path of C, each solve started from the previous point's
    certified optimum (:func:`milopt.algorithms.bnb.solve_c_path`); the optima, hence the
    scores, are those of independent fits.  Other methods fit as they would alone."""
    from milopt.metrics import bag_folds
    from milopt.solvers.bnb import c_path

    _check_inner_folds(Btr.y, inner_cv)
    inner = list(bag_folds(Btr, inner_cv, seed))
    primary, secondary = TUNE_METRICS[metric]
    if metric == "auc" and "threshold" in spec.params and "threshold" not in params and "threshold" not in grid:
        params = {**params, "threshold": "zero"}
    points = grid_points(grid)
    rows = [[] for _ in points]
    warm = 0
    for itr, ite in inner:
        with c_path() as path:
            for j, point in enumerate(points):
                rows[j].append(_fit_eval(spec, {**params, **point}, seed, Btr.subset(itr), Btr.subset(ite), scale))
        warm += path["warm"]
    scores, best, best_key = [], None, None
    for point, fits in zip(points, rows):
        s = {"params": dict(point)}
        for m in ("bag_auc", "bag_accuracy"):
            vals = np.array([r.get(m, np.nan) for r in fits], dtype=float)
            s[m] = float(np.nanmean(vals)) if np.isfinite(vals).any() else None
        scores.append(s)
        key = tuple(-np.inf if s[m] is None else round(s[m], 12) for m in (primary, secondary))
        if best_key is None or key > best_key:  # strictly better: the first in grid order wins ties
            best, best_key = point, key
    return dict(best), scores, warm


def _prepare(formulation: str, data: str, params: dict | None, bags: Bags | None):
    """(formulation, typed params, loader): the parameters are validated against the
    formulation's declaration (strings from ``--set`` are typed) before any data are loaded;
    ``loader()`` loads (unless ``bags`` are given) and standardises the bags."""
    from milopt.models import formulation as get_formulation

    form = get_formulation(formulation)
    header = _header((params or {}).get("header"))
    params, coords, scale = _split_params(params)
    try:
        typed = form.validate(params)
    except InvalidParameterError as exc:
        if "unknown key" in str(exc):
            raise InvalidParameterError(f"{exc}, {', '.join(DATA_KEYS)}") from None
        raise

    def loader():
        b = load(data, coords=coords, header=header) if bags is None else bags
        return standardize(b) if scale else b

    return form, typed, loader


def build_formulation(formulation: str, data: str, params: dict | None = None, bags: Bags | None = None):
    """Load data and build a formulation; returns (model, bags, params, build_seconds).

    ``params`` are validated against the formulation's declaration (strings from ``--set``
    are typed) before the data are loaded; the returned params are the typed ones given."""
    form, typed, loader = _prepare(formulation, data, params, bags)
    bags = loader()
    t0 = time.perf_counter()
    model = form.make_model(bags, **typed)
    return model, bags, typed, time.perf_counter() - t0


def expected_class(mod, params: dict | None):
    """(problem class, features) a formulation will have, known before building (None when unknown).

    ``mod`` is a :class:`~milopt.models.Formulation`, a formulation name or a module."""
    from milopt.models import Formulation, formulation

    if isinstance(mod, str):
        form = formulation(mod)
    elif isinstance(mod, Formulation):
        form = mod
    else:
        form = Formulation.from_module(getattr(mod, "__name__", "formulation"), mod)
    params = {k: v for k, v in (params or {}).items() if k not in DATA_KEYS}
    try:
        params = form.validate(params)
    except InvalidParameterError:
        return None
    return form.problem_class(**params)


def objective_sense(model) -> str:
    """'minimize' or 'maximize' (the active objective's sense)."""
    import pyomo.environ as pe

    for o in model.component_data_objects(pe.Objective, active=True):
        return "maximize" if o.sense == pe.maximize else "minimize"
    return ""


def run_solve(formulation: str, data: str, solver: str, *, time_limit: float | None = None, gap: float | None = None,
              params: dict | None = None, seed: int = 0, threads: int | None = None, verbose: bool = False,
              options: dict | None = None, warm_start: bool | None = None, bags: Bags | None = None,
              t_start: float | None = None) -> dict:
    """Build ``formulation`` on ``data`` and solve it with ``solver``; returns a JSON-ready dict.

    ``time_limit`` bounds everything from ``t_start`` (a ``time.perf_counter()`` value; default:
    the call), loading the data and building the model included; ``milopt solve`` passes the
    start of its process, so that the limit bounds the command's whole wall time.

    ``options`` are native solver options passed through unchanged; the output records the
    objective ``sense`` ('minimize' / 'maximize').  ``warm_start`` calls the formulation's
    ``default_start(model)`` (a cheap feasible point) and hands it to the solver.  A formulation
    with a ``warm_start`` parameter computes its start while building (so that its objective can
    tighten the model): there ``warm_start=None`` means that parameter's default
    (``--set warm_start=...`` and the flag must agree)."""
    from milopt.models import formulation as get_formulation
    from milopt.params import parse_bool
    from milopt.solvers import get_backend
    from milopt.solvers.driver import check_supported

    form = get_formulation(formulation)
    import milopt.metrics  # noqa: F401
    import milopt.solvers.exporter  # noqa: F401
    from milopt.solvers.budget import TimeBudget

    budget = TimeBudget(time_limit, t_start)  # the limit covers loading, building, hand-off and solve
    if solver != "auto":
        backend = get_backend(solver)  # unknown / not installed: refuse before loading data or building
        native = getattr(backend, "params", None)
        if native and params:  # --set keys the backend declares (and the formulation does not) are its options
            params = dict(params)
            own = {k: params.pop(k) for k in list(params) if k in native and k not in form.params}
            options = {**native.validate(own, f"{solver} options"), **(options or {})}
            unknown = [k for k in params if k not in form.params and k not in DATA_KEYS]
            if unknown:   # name the backend's options too, not only the formulation's keys
                from milopt.errors import did_you_mean

                hint = did_you_mean(unknown, [*form.params, *DATA_KEYS, *native])
                raise InvalidParameterError(
                    f"{form.name}: unknown key(s) {unknown}{hint}; accepted keys: {', '.join(form.params)}, "
                    f"{', '.join(DATA_KEYS)}; {solver} options: {', '.join(native)}")
        cls = expected_class(form, params)
        if cls:
            check_supported(backend, *cls, formulation=form.name)
    if "warm_start" in form.params:  # the start is built with the model
        params = dict(params or {})
        given = parse_bool("warm_start", params.get("warm_start", warm_start if warm_start is not None else
                                                    form.params["warm_start"].default))
        if warm_start is not None and given != warm_start:
            raise InvalidParameterError("warm_start: --set warm_start and --warm-start/--no-warm-start disagree")
        params["warm_start"] = given
        warm_start = None
    if warm_start and form.default_start is None:
        raise InvalidParameterError(f"{formulation} has no default warm start; solve without --warm-start")
    from milopt.models.info import info as model_info
    from milopt.solvers.pipeline import build_and_solve

    form, typed, loader = _prepare(formulation, data, params, bags)
    run = build_and_solve(form, loader, typed, solver, budget=budget, warm_start=warm_start,
                          interrupt=True, mip_gap=gap, threads=threads, verbose=verbose, options=options)
    out = run.result.to_dict(log=False)
    if run.stage == "build":  # the time limit passed while loading and building (the solver never started)
        out.update({"formulation": formulation, "params": dict(params or {}), "model_size": None, "data": None,
                    "build_seconds": run.build_seconds, "warm_start_seconds": 0.0, "sense": ""})
        return out
    # the matrix form is extracted once, by the driver, which reports its size; backends that take
    # the Pyomo model itself (bnb) get it measured here
    out.update({"formulation": formulation, "params": typed, "model_size": run.model_size(),
                "data": data_info(run.bags), "build_seconds": run.build_seconds,
                "warm_start_seconds": run.start_seconds, "sense": objective_sense(run.model)})
    out["extra"].pop("model_size", None)
    if run.stage == "budget":  # the budget was spent before the solver started
        return out
    out["warm_start"] = bool(run.warm_start)
    meta = model_info(run.model).meta or {}
    if meta.get("incumbent") is not None:
        out["warm_start_objective"] = meta["incumbent"]
    return out
