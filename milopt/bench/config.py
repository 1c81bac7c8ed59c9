"""Benchmark configuration (TOML) and its expansion into runs.

A configuration names data sets, formulations (solved by solvers) and/or fit methods with
parameter grids, the per-run time limit, folds and seeds.  :func:`milopt.bench.plan.expand` turns it into a
list of :class:`Run` objects -- the cross product -- each with a stable id (a hash of the
run's specification), so that a resumed bench can skip what is already finished.

See docs/bench.md for the format; ``milopt/bench/default.toml`` is the shipped example.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from milopt.errors import InvalidParameterError

TOP_KEYS = {"name", "description", "time_limit", "kill_after", "gap", "seeds", "folds", "data", "imports",
            "isolation", "threads", "solvers", "solve", "fit", "jobs", "suite", "suite_solvers"}
SOLVE_KEYS = {"formulation", "solvers", "params", "data", "time_limit", "gap", "seeds", "kill_after"}
FIT_KEYS = {"method", "params", "data", "time_limit", "folds", "seeds", "kill_after", "label"}
SOLVER_KEYS = {"backend", "threads", "options"}
ISOLATION = ("auto", "forkserver", "subprocess")


class BenchWarning(UserWarning):
    """A configuration entry was skipped (unknown or unavailable name)."""


@dataclass(frozen=True)
class Run:
    """One run of the bench.

    ``spec`` is what defines the run (hashed into ``run_id``); ``kill_after``, ``imports``
    and ``isolation`` only say how it is executed.
    """

    spec: dict
    label: str
    kill_after: float
    imports: tuple = ()
    isolation: str = "auto"
    run_id: str = field(default="")

    def task(self) -> dict:
        """Picklable/JSON description handed to the executor."""
        return {"run_id": self.run_id, "spec": self.spec, "label": self.label, "kill_after": self.kill_after,
                "imports": list(self.imports), "isolation": self.isolation}


def run_id(spec: dict) -> str:
    """Stable 12-hex-digit id: SHA-1 of the canonical JSON of the run's specification."""
    blob = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def default_config_path() -> Path:
    """The shipped default configuration (``milopt/bench/default.toml``)."""
    try:
        p = resources.files("milopt.bench") / "default.toml"
        return Path(str(p))
    except ModuleNotFoundError:  # pragma: no cover
        return Path(__file__).with_name("default.toml")


def load_config(path=None) -> dict:
    """Read and validate a TOML configuration (the shipped default when ``path`` is None).

    The returned dict carries ``_path`` (the file) and ``_text`` (its content).
    """
    p = Path(path) if path is not None else default_config_path()
    if not p.is_file():
        raise InvalidParameterError(f"bench configuration {str(p)!r} not found; give a TOML file "
                                    "(see docs/bench.md) or omit it to run the shipped default")
    text = p.read_text()
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidParameterError(f"{p}: not valid TOML ({exc})") from None
    validate(cfg, str(p))
    cfg["_path"] = str(p.resolve())
    cfg["_text"] = text
    return cfg


def _num(cfg, key, where, positive=True, default=None):
    v = cfg.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        raise InvalidParameterError(f"{where}: {key} must be a positive number, got {v!r}")
    return float(v)


def _str_list(v, key, where) -> list:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise InvalidParameterError(f"{where}: {key} must be a string or a list of strings, got {v!r}")
    return v


def _int_list(v, key, where) -> list:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise InvalidParameterError(f"{where}: {key} must be an integer or a non-empty list of integers, got {v!r}")
    return v


def validate(cfg: dict, where: str = "config") -> None:
    """Check keys and types; raise :class:`InvalidParameterError` naming the offending entry."""
    unknown = set(cfg) - TOP_KEYS
    if unknown:
        raise InvalidParameterError(f"{where}: unknown key(s) {sorted(unknown)}; accepted: {sorted(TOP_KEYS)}")
    for k in ("time_limit", "kill_after", "gap"):
        _num(cfg, k, where)
    if "gap" in cfg and not cfg["gap"] < 1:
        raise InvalidParameterError(f"{where}: gap must be a relative gap in (0, 1), got {cfg['gap']!r}")
    if "seeds" in cfg:
        _int_list(cfg["seeds"], "seeds", where)
    folds = cfg.get("folds", 3)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InvalidParameterError(f"{where}: folds must be an integer >= 2, got {folds!r}")
    if "data" in cfg:
        _str_list(cfg["data"], "data", where)
    if "imports" in cfg:
        _str_list(cfg["imports"], "imports", where)
    if cfg.get("isolation", "auto") not in ISOLATION:
        raise InvalidParameterError(f"{where}: isolation must be one of {ISOLATION}, got {cfg.get('isolation')!r}")
    solvers = cfg.get("solvers", {})
    if not isinstance(solvers, dict):
        raise InvalidParameterError(f"{where}: [solvers] must be a table of solver tables, e.g. [solvers.scip]")
    for name, s in solvers.items():
        if not isinstance(s, dict):
            raise InvalidParameterError(f"{where}: solvers.{name} must be a table (backend, threads, options)")
        bad = set(s) - SOLVER_KEYS
        if bad:
            raise InvalidParameterError(f"{where}: solvers.{name}: unknown key(s) {sorted(bad)}; "
                                        f"accepted: {sorted(SOLVER_KEYS)}")
        if "options" in s and not isinstance(s["options"], dict):
            raise InvalidParameterError(f"{where}: solvers.{name}.options must be a table of native options")
    if "suite" in cfg and not isinstance(cfg["suite"], str):
        raise InvalidParameterError(f"{where}: suite must be a library suite name (easy, hard, open, benchmark, all)")
    if "suite_solvers" in cfg:
        _str_list(cfg["suite_solvers"], "suite_solvers", where)
    if not cfg.get("solve") and not cfg.get("fit") and not cfg.get("suite"):
        raise InvalidParameterError(f"{where}: nothing to run; add [[solve]] (formulation, solvers) "
                                    "and/or [[fit]] (method) entries, or suite = \"benchmark\"")
    for kind, keys, who in (("solve", SOLVE_KEYS, "formulation"), ("fit", FIT_KEYS, "method")):
        entries = cfg.get(kind, [])
        if not isinstance(entries, list):
            raise InvalidParameterError(f"{where}: {kind} must be an array of tables ([[{kind}]])")
        for i, e in enumerate(entries):
            w = f"{where}: [[{kind}]] #{i + 1}"
            bad = set(e) - keys
            if bad:
                raise InvalidParameterError(f"{w}: unknown key(s) {sorted(bad)}; accepted: {sorted(keys)}")
            if not isinstance(e.get(who), str):
                raise InvalidParameterError(f"{w}: needs {who} = \"NAME\"")
            if "params" in e and not isinstance(e["params"], dict):
                raise InvalidParameterError(f"{w}: params must be a table, e.g. params = {{ C = [0.1, 1.0] }}")
            for k in ("time_limit", "kill_after", "gap"):
                _num(e, k, w)
            if "data" in e:
                _str_list(e["data"], "data", w)
            if "solvers" in e:
                _str_list(e["solvers"], "solvers", w)
            if "seeds" in e:
                _int_list(e["seeds"], "seeds", w)
            if "folds" in e and (isinstance(e["folds"], bool) or not isinstance(e["folds"], int) or e["folds"] < 2):
                raise InvalidParameterError(f"{w}: folds must be an integer >= 2, got {e['folds']!r}")
        if entries and not (cfg.get("data") or all("data" in e for e in entries)):
            raise InvalidParameterError(f"{where}: no data sets; set data = [\"musk1\", ...] at the top "
                                        f"or in every [[{kind}]] entry")


def grid(params: dict) -> list[dict]:
    """Cross product of a parameter table: list values are grids, scalars are fixed."""
    keys = sorted(params)
    vals = [params[k] if isinstance(params[k], list) else [params[k]] for k in keys]
    for k, v in zip(keys, vals):
        if not v:
            raise InvalidParameterError(f"params.{k}: empty list (give at least one value)")
    return [dict(zip(keys, combo)) for combo in itertools.product(*vals)]


def _fmt_value(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return repr(v)
    return str(v)


def params_label(params: dict) -> str:
    return ",".join(f"{k}={_fmt_value(params[k])}" for k in sorted(params))


def slug(text: str) -> str:
    """A token without spaces for instance names (``gen:digits?bags=8`` -> ``gen-digits-bags=8``)."""
    t = str(text)
    if not t.startswith("gen:") and ("/" in t or t.endswith((".csv", ".gz"))):
        t = Path(t).name
        for suf in (".gz", ".csv"):
            if t.endswith(suf):
                t = t[: -len(suf)]
    t = t.replace("gen:", "gen-")
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", t).strip("-")


def _same(value, default) -> bool:
    if value is None or default is None:
        return value is default
    if isinstance(default, bool) or isinstance(value, bool):
        return value is default or (isinstance(value, str) and value.lower() == str(default).lower())
    if isinstance(default, (int, float)):
        try:
            return float(value) == float(default)
        except (TypeError, ValueError):
            return False
    return str(value) == str(default)


def canonical_params(formulation: str, params: dict) -> dict:
    """``params`` without the entries equal to the formulation's defaults (its ``PARAMS``)."""
    try:
        from milopt.models import available

        spec = getattr(available().get(formulation), "PARAMS", {}) or {}
    except Exception:  # pragma: no cover - naming must never fail
        spec = {}
    return {k: v for k, v in params.items() if not (k in spec and _same(v, spec[k][1]))}


def instance_name(formulation: str, data: str, params: dict) -> str:
    """Name of a problem instance (formulation + data + non-default parameters), used in .solu files.

    Parameters equal to the formulation's defaults are left out, so ``misvm-bigm`` on MUSK1
    is ``misvm-bigm.musk1`` whether or not a configuration spells ``C = 1.0`` out.
    """
    params = canonical_params(formulation, params)
    name = f"{formulation}.{slug(data)}"
    if params:
        name += "." + "_".join(f"{k}={slug(_fmt_value(params[k]))}" for k in sorted(params))
    return name


def _resolve_imports(cfg: dict) -> tuple:
    base = Path(cfg.get("_path", ".")).parent
    out = []
    for item in cfg.get("imports", []):
        if item.endswith(".py"):
            p = Path(item)
            if not p.is_absolute():
                p = (base / p).resolve()
            if not p.is_file():
                raise InvalidParameterError(f"imports: file {item!r} not found (relative paths are read from "
                                            f"the configuration's folder {base})")
            out.append(str(p))
        else:
            out.append(item)
    return tuple(out)


def import_plugins(imports) -> None:
    """Import plugin modules (names or .py paths) so that their registrations take effect."""
    from milopt.plugins import load

    for item in imports:
        try:
            load(item)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"imports: {exc}") from None


#: default relative gap of library-suite runs (Mittelmann's MIQP benchmarks use 1e-4)
SUITE_GAP = 1e-4
#: default per-run time limit of library-suite runs (seconds)
SUITE_TIME_LIMIT = 60.0
