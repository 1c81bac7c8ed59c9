"""``milopt export-library DIR``: the instance library for external solvers.

Every formulation x shipped data set (default parameters), or every solve instance of a bench
configuration, is built (features standardised as in ``milopt solve``) and written as
``NAME.mps.gz`` / ``NAME.lp.gz`` with ``manifest.json`` (sizes, parameters, problem class,
files with sha256, best known objective from a .solu file when one is given or found) and
``library.solu`` (the best known objectives of the library's instances).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from milopt.bench.config import grid, instance_name, load_config
from milopt.data.loading import sha256_file
from milopt.errors import InvalidParameterError, MiloptError

FORMATS = ("mps", "lp")


def library_instances(config=None, formulations=None, data=None) -> list[tuple[str, str, dict]]:
    """(formulation, data, params) triples: from a configuration's [[solve]] entries, or
    every available formulation x every shipped data set with default parameters."""
    from milopt.data import datasets
    from milopt.models import available

    forms = available()
    out = []
    if config is not None:
        cfg = config if isinstance(config, dict) else load_config(config)
        for e in cfg.get("solve", []):
            if e["formulation"] not in forms:
                continue
            for params in grid(e.get("params", {})):
                for d in e.get("data", cfg.get("data", [])):
                    out.append((e["formulation"], d, params))
    else:
        names = list(formulations) if formulations else sorted(forms)
        unknown = [f for f in names if f not in forms]
        if unknown:
            raise InvalidParameterError(f"export-library: unknown formulation(s) {unknown}; available: "
                                        f"{', '.join(sorted(forms))}")
        ds = list(data) if data else list(datasets())
        out = [(f, d, {}) for f in names for d in ds]
    if formulations and config is not None:
        out = [t for t in out if t[0] in formulations]
    if data and config is not None:
        out = [t for t in out if t[1] in data]
    seen, uniq = set(), []
    for t in out:
        key = instance_name(*t)
        if key not in seen:
            seen.add(key)
            uniq.append(t)
    return uniq


def export_library(folder, *, formats=FORMATS, config=None, formulations=None, data=None, solu=None,
                   progress=None) -> dict:
    """Write the library into ``folder``; returns the manifest.

    Parameters
    ----------
    formats : sequence of {'mps', 'lp'}
    config : path or dict, optional
        Take the instances from this bench configuration's [[solve]] entries.
    formulations, data : list of str, optional
        Restrict to these formulations / data sets.
    solu : path, optional
        Best known objectives (``milopt report`` writes ``best.solu``); default:
        ``folder/library.solu`` when it exists, else the shipped ``instances/milopt.solu``.
    progress : file-like, optional
        A line per instance is written there.
    """
    from milopt import __version__
    from milopt.bench.report import read_solu, write_solu
    from milopt.runner import build_formulation
    from milopt.runner import objective_sense
    from milopt.solvers import classify, export, model_size

    formats = [f.strip().lower() for f in formats if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise InvalidParameterError(f"--formats: expected a comma list of {', '.join(FORMATS)}, got {bad or formats}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if solu is None and not (folder / "library.solu").is_file():
        from milopt.data.loading import instances_dir

        shipped = instances_dir() / "milopt.solu"  # best known values shipped with milopt
        known = read_solu(shipped) if shipped.is_file() else {}
    else:
        known = read_solu(solu if solu is not None else folder / "library.solu")
    if solu is not None and not Path(solu).is_file():
        raise InvalidParameterError(f"--solu: {solu!r} not found (milopt report DIR writes DIR/best.solu)")
    entries, skipped = [], []
    for f, d, params in library_instances(config, formulations, data):
        name = instance_name(f, d, params)
        t0 = time.perf_counter()
        try:
            model, bags, typed, build_s = build_formulation(f, d, params)
        except MiloptError as exc:
            skipped.append({"name": name, "formulation": f, "data": d, "params": params, "reason": str(exc)})
            if progress:
                progress.write(f"skip {name}: {exc}\n")
            continue
        cls, feats = classify(model)
        sense = objective_sense(model)
        files = {}
        for fmt in formats:
            p = folder / f"{name}.{fmt}.gz"
            export(model, str(p))
            files[fmt] = {"file": p.name, "bytes": p.stat().st_size, "sha256": sha256_file(p)}
        kb = known.get(name)
        entries.append({
            "name": name, "formulation": f, "data": d, "params": typed, "problem_class": cls, "sense": sense,
            "features": list(feats), "size": model_size(model),
            "data_size": {"bags": bags.n_bags, "positive_bags": bags.positive_bags, "instances": bags.n_instances,
                          "features": bags.n_features},
            "files": files, "best_known": None if kb is None else {"kind": kb[0], "objective": kb[1]},
            "seconds": round(time.perf_counter() - t0, 3)})
        if progress:
            progress.write(f"wrote {name} ({cls}, {entries[-1]['size'].get('variables')} variables) "
                           f"in {entries[-1]['seconds']:.1f} s\n")
        del model
    manifest = {"milopt_version": __version__,
                "note": "features standardised (mean 0, variance 1 over the data set) before building, as milopt solve",
                "instances": entries, "skipped": skipped}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    lib = {e["name"]: known[e["name"]] for e in entries if e["name"] in known}
    write_solu(folder / "library.solu", lib)
    return manifest
