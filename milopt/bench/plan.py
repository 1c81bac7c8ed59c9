"""Plans of benchmark runs: a configuration (or a library suite) expanded into runs.

:func:`expand` turns a validated configuration (:mod:`milopt.bench.config`) into the list of
:class:`~milopt.bench.config.Run` in a deterministic order; :func:`suite_runs` does the same for
a suite of the instance library (:mod:`milopt.bench.library`).
"""
from __future__ import annotations

import warnings
from types import SimpleNamespace

from milopt.errors import InvalidParameterError
from milopt.bench.config import (SUITE_GAP, SUITE_TIME_LIMIT, BenchWarning, Run, _int_list, _resolve_imports,
                                 _str_list, grid, import_plugins, params_label, run_id)

def expand(cfg: dict, *, warn=True) -> list[Run]:
    """The runs of a configuration (cross product), in a deterministic order.

    Unknown formulations, methods and solvers that are not installed are skipped with a
    :class:`BenchWarning` (so a shipped configuration runs on whatever is available);
    a configuration whose every entry is skipped raises :class:`InvalidParameterError`.
    """
    from milopt.estimators.registry import methods
    from milopt.models import available
    from milopt.solvers import backends, installed

    imports = _resolve_imports(cfg)
    import_plugins(imports)
    forms = available()
    meths = methods()
    inst = set(installed())
    known_backends = set(backends())
    top_tl = float(cfg.get("time_limit", 60.0))
    top_gap = cfg.get("gap")
    top_seeds = _int_list(cfg.get("seeds", [0]), "seeds", "config")
    top_folds = int(cfg.get("folds", 3))
    top_data = _str_list(cfg.get("data", []), "data", "config")
    iso = cfg.get("isolation", "auto")
    solver_cfg = cfg.get("solvers", {})
    top_threads = cfg.get("threads")

    def kill_for(e, tl):
        ka = e.get("kill_after", cfg.get("kill_after"))
        return float(ka) if ka is not None else 2.0 * tl + 30.0

    def say(msg):
        if warn:
            warnings.warn(msg, BenchWarning, stacklevel=3)

    ctx = SimpleNamespace(cfg=cfg, say=say, kill_for=kill_for, imports=imports, iso=iso, top_tl=top_tl,
                          top_gap=top_gap, top_seeds=top_seeds, top_folds=top_folds, top_data=top_data)
    runs = _solve_runs(ctx, forms, inst, known_backends, solver_cfg, top_threads)
    if cfg.get("suite"):
        runs += suite_runs(cfg, say, imports, iso, kill_for, inst, known_backends, solver_cfg, top_threads)
    runs += _fit_runs(ctx, meths)
    if not runs:
        raise InvalidParameterError("bench: the configuration yields no runnable run (every formulation, method "
                                    "or solver it names is unavailable); see the warnings above")
    seen = {}
    uniq = []
    for r in runs:  # the same run named twice runs once
        if r.run_id not in seen:
            seen[r.run_id] = r
            uniq.append(r)
    return uniq




def _solve_runs(ctx, forms, inst, known_backends, solver_cfg, top_threads) -> list:
    """The runs of the ``[[solve]]`` entries: formulation x solver x parameters x data x seed."""
    runs = []
    for e in ctx.cfg.get("solve", []):
        f = e["formulation"]
        if f not in forms:
            ctx.say(f"bench: formulation {f!r} is not available here; skipped (available: {', '.join(sorted(forms))})")
            continue
        sol_names = _str_list(e.get("solvers", sorted(inst)), "solvers", "solve")
        tl = float(e.get("time_limit", ctx.top_tl))
        gap = e.get("gap", ctx.top_gap)
        for s in sol_names:
            sc = solver_cfg.get(s, {})
            backend = sc.get("backend", s)
            if backend not in known_backends:
                ctx.say(f"bench: unknown solver {s!r} (backend {backend!r}); its runs are skipped (known: "
                    f"{', '.join(sorted(known_backends))}; define variants as [solvers.NAME] backend = \"scip\")")
                continue
            if backend not in inst:
                ctx.say(f"bench: solver {s!r} is not installed; its runs are skipped")
                continue
            options = dict(sc.get("options", {}))
            threads = sc.get("threads", top_threads)
            accepted = set(getattr(forms[f], "PARAMS", {})) | {"coords", "scale"}
            for params in grid(e.get("params", {})):
                unknown = [k for k in params if k not in accepted]
                if unknown:
                    raise InvalidParameterError(f"solve {f}: unknown parameter(s) {unknown}; accepted: "
                                                f"{', '.join(sorted(accepted))}")
                for d in _str_list(e.get("data", ctx.top_data), "data", "solve"):
                    for seed in _int_list(e.get("seeds", ctx.top_seeds), "seeds", "solve"):
                        spec = {"kind": "solve", "formulation": f, "data": d, "params": params, "solver": s,
                                "backend": backend, "options": options, "threads": threads, "time_limit": tl,
                                "gap": gap, "seed": seed}
                        runs.append(Run(spec, s, ctx.kill_for(e, tl), ctx.imports, ctx.iso, run_id(spec)))
    return runs


def _fit_runs(ctx, meths) -> list:
    """The runs of the ``[[fit]]`` entries: method x parameters x data x seed x fold."""
    runs = []
    for e in ctx.cfg.get("fit", []):
        m = e["method"]
        if m not in meths:
            ctx.say(f"bench: method {m!r} is not available here; skipped (available: {', '.join(sorted(meths))})")
            continue
        keys = meths[m].keys()
        tl = float(e.get("time_limit", ctx.top_tl))
        folds = int(e.get("folds", ctx.top_folds))
        for params in grid(e.get("params", {})):
            unknown = [k for k in params if k not in keys and k not in ("coords", "scale")]
            if unknown:
                raise InvalidParameterError(f"fit {m}: unknown parameter(s) {unknown}; accepted: {', '.join(keys)}")
            label = e.get("label") or (f"{m}[{params_label(params)}]" if params else m)
            full = dict(params)
            if "time_limit" in keys and "time_limit" not in full:
                full["time_limit"] = tl
            for d in _str_list(e.get("data", ctx.top_data), "data", "fit"):
                for seed in _int_list(e.get("seeds", ctx.top_seeds), "seeds", "fit"):
                    for fold in range(folds):
                        spec = {"kind": "fit", "method": m, "data": d, "params": full, "folds": folds,
                                "fold": fold, "seed": seed, "time_limit": tl}
                        runs.append(Run(spec, label, ctx.kill_for(e, tl), ctx.imports, ctx.iso, run_id(spec)))
    return runs


def suite_runs(cfg, say, imports, iso, kill_for, inst, known_backends, solver_cfg, top_threads) -> list:
    """Runs of ``cfg['suite']``: every catalogue instance of the suite x every solver that
    declares its class and features (``Backend.supports``; ``suite_solvers``, default every
    installed backend), gap ``SUITE_GAP`` unless ``gap`` is set.  Whether a backend can take a
    particular instance beyond its class (a licence's size limit, a formulation it is made for)
    is the backend's own ``skip`` hook, asked at run time: such a run is recorded as unsupported
    with the reason."""
    from milopt.bench.library import suite
    from milopt.models import available
    from milopt.runner import expected_class
    from milopt.solvers import get_backend

    forms = available()
    names = cfg.get("suite_solvers")
    if names is None:
        names = sorted(solver_cfg) if solver_cfg else sorted(inst)
    tl = float(cfg.get("time_limit", SUITE_TIME_LIMIT))
    gap = cfg.get("gap", SUITE_GAP)
    runs = []
    for li in suite(cfg["suite"]):
        if li.formulation not in forms:
            say(f"bench: library instance {li.name}: formulation {li.formulation!r} is not available here; skipped")
            continue
        cls = li.problem_class or (expected_class(forms[li.formulation], li.params) or ("", ()))[0]
        feats = set(li.features)
        for s in names:
            sc = solver_cfg.get(s, {})
            backend = sc.get("backend", s)
            if backend not in known_backends or backend not in inst:
                continue
            b = get_backend(backend)
            if cls and not b.supports(cls, tuple(feats), li.formulation):
                continue
            spec = {"kind": "solve", "formulation": li.formulation, "data": li.data, "params": dict(li.params),
                    "solver": s, "backend": backend, "options": dict(sc.get("options", {})),
                    "threads": sc.get("threads", top_threads), "time_limit": tl, "gap": gap, "seed": 0,
                    "instance": li.name}
            runs.append(Run(spec, s, kill_for({}, tl), imports, iso, run_id(spec)))
    return runs
