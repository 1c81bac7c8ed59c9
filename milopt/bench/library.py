"""The MIL instance library: catalogue, suites, ``milopt export-library DIR [--suite S]``.

The catalogue ``instances/library.csv`` (package data ``milopt/instances/library.csv``) defines
every instance deterministically, one line each::

    name,formulation,data,params,benchmark,class,sense,sha256_mps,status,proof_seconds,proof_solver

``data`` is any data spec :func:`milopt.data.load` accepts (a shipped set, ``gen:subset?data=
musk1&bags=8&seed=0`` for a stratified subset of whole bags, or a generator with its
parameters); ``params`` are the formulation's ``--set`` keys (``norm=l1;disjunction=sos1``).
Features are standardised as in ``milopt solve``.  The remaining columns are computed by
``benchmarks/library_status.py``: the problem class, the sha256 of the ``.mps`` as milopt
writes it, and the status as in MIPLIB 2017:

* ``easy``: proved optimal, and every free backend of milopt that takes it solves it, verified,
  within 10 s (1/6 of the benchmark's 60-s limit; ``benchmarks/library_grade.py``);
* ``hard``: proved optimal, but not easy;
* ``open``: no proof yet.

The best known objective (``=opt=`` only with a certificate: a dual bound within 1e-4 relative;
``=best=`` otherwise) and the best known dual bound (``=bestdual=``) are in
``instances/milopt.solu``; every value is the objective of the shipped solution file
``instances/solutions/NAME.sol.gz`` and ``instances/certificates.csv`` says how it was proved
(:mod:`milopt.bench.certificates`, with the stated tolerances).  Suites: ``easy``, ``hard``, ``open``, ``benchmark`` (the lines with
``benchmark=1``: a balanced set the default solvers finish in about 30 minutes), ``all``.

A new instance (or a new formulation) is one more line; a new solver needs no line at all.
"""
from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from milopt.bench.config import grid, instance_name, load_config
from milopt.data.loading import sha256_file
from milopt.errors import InvalidParameterError, MiloptError

FORMATS = ("mps", "lp")
#: the instance subsets ``milopt export-library --suite`` accepts
SUITES = ("easy", "hard", "open", "benchmark", "all")
STATUSES = ("easy", "hard", "open")
COLUMNS = ["name", "formulation", "data", "params", "benchmark", "class", "sense", "sha256_mps", "status",
           "proof_seconds", "proof_solver"]
#: what the library's data are and under which licence
SOURCES = {
    "musk1": ("MUSK1 (Dietterich, Lathrop & Lozano-Perez 1997; UCI Machine Learning Repository)", "CC BY 4.0"),
    "musk2": ("MUSK2 (Dietterich, Lathrop & Lozano-Perez 1997; UCI Machine Learning Repository)", "CC BY 4.0"),
    "digits": ("bags of the UCI optical digits (scikit-learn load_digits), milopt's gen:digits", "CC BY 4.0"),
    "kent-yu": ("Kent & Yu (2024) simulation scenarios, milopt's gen:kent-yu generator", "BSD-3-Clause (milopt)"),
    "cad": ("CAD-like images with spatially clustered candidates, milopt's gen:cad generator",
            "BSD-3-Clause (milopt)"),
}

#: the paper each formulation of the library comes from (the ``reference`` of ``metadata.csv``)
REFERENCES = {
    "misvm-bigm": "Kent & Yu, eq. 5; Andrews, Tsochantaridis & Hofmann, NIPS 2002",
    "misvm-kernel-bigm": "Kent & Yu, eqs. 1 and 5 (representer form); Andrews et al., NIPS 2002",
    "misvm-hull": "Balas' disjunctive programming; Ceria & Soares, Math. Prog. 86 (1999)",
    "misvm-dual-qp": "Kent & Yu, eq. 3; Andrews et al., NIPS 2002",
    "batchsvm-lp": "Vural et al., JMLR 10 (2009), eq. 4",
    "batchprob-lp": "Vural et al., JMLR 10 (2009), eq. 12",
    "dcmil-dca": "Astorino et al., Algorithms 12 (2019), eqs. 1-3",
    "dcmil-direction": "Gaudioso et al., J. Glob. Optim. (2018)",
}


@dataclass(frozen=True)
class Instance:
    """One line of the catalogue."""

    name: str
    formulation: str
    data: str
    params: dict = field(default_factory=dict)
    benchmark: bool = False
    problem_class: str = ""
    sense: str = ""
    sha256_mps: str = ""
    status: str = ""
    proof_seconds: float | None = None
    proof_solver: str = ""

    @property
    def features(self) -> tuple:
        """Special constraint types the solver must handle (SOS, INDICATOR), from the parameters."""
        dj = str(self.params.get("disjunction", "")).lower()
        return ("SOS",) if dj == "sos1" else (("INDICATOR",) if dj == "indicator" else ())

    def source(self) -> tuple[str, str]:
        """(description of the data, licence)."""
        d = self.data
        if d.startswith("gen:subset"):
            from urllib.parse import parse_qsl

            q = dict(parse_qsl(d.partition("?")[2]))
            base = q.get("data", "musk1")
            desc, lic = SOURCES.get(base, (base, "see the data set"))
            return (f"{desc}: stratified subset of {q.get('bags')} whole bags, seed {q.get('seed', 0)}", lic)
        if d.startswith("gen:"):
            gen = d[4:].partition("?")[0]
            desc, lic = SOURCES.get(gen, (f"generator {gen}", "BSD-3-Clause (milopt)"))
            return (f"{desc} ({d})", lic)
        return SOURCES.get(d, (d, "see the data set"))

    def row(self) -> list:
        return [self.name, self.formulation, self.data, format_params(self.params), int(self.benchmark),
                self.problem_class, self.sense, self.sha256_mps, self.status,
                "" if self.proof_seconds is None else f"{self.proof_seconds:.2f}", self.proof_solver]


def parse_params(text: str, where: str = "params") -> dict:
    """``key=value;key=value`` -> dict with values typed as ``--set`` types them."""
    from milopt.params import coerce

    out = {}
    for item in (text or "").split(";"):
        item = item.strip()
        if not item:
            continue
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise InvalidParameterError(f"{where}: expected key=value, got {item!r}")
        out[k.strip()] = coerce(v.strip())
    return out


def format_params(params: dict) -> str:
    def fmt(v):
        return str(v).lower() if isinstance(v, bool) else str(v)

    return ";".join(f"{k}={fmt(v)}" for k, v in params.items())


def catalogue_path() -> Path:
    """The shipped catalogue (``MILOPT_LIBRARY`` overrides it)."""
    import os

    env = os.environ.get("MILOPT_LIBRARY")
    if env:
        return Path(env)
    from milopt.data.loading import instances_dir

    return instances_dir() / "library.csv"


def solu_path() -> Path:
    """The best known values next to the catalogue (``milopt.solu``)."""
    return Path(catalogue_path()).with_name("milopt.solu")


def metadata_path() -> Path:
    """Per-instance metadata next to the catalogue (``metadata.csv``: sizes, source, licence, reference)."""
    return Path(catalogue_path()).with_name("metadata.csv")


def read_metadata(path=None) -> dict:
    """``{name: row}`` of ``metadata.csv`` (empty when absent)."""
    p = Path(path) if path is not None else metadata_path()
    if not p.is_file():
        return {}
    return {r["name"]: r for r in csv.DictReader(io.StringIO(p.read_text()))}


def load_catalogue(path=None) -> list[Instance]:
    """The catalogue's instances, in file order (``#`` lines are comments)."""
    p = Path(path) if path is not None else catalogue_path()
    if not p.is_file():
        raise InvalidParameterError(f"instance catalogue {str(p)!r} not found; reinstall milopt")
    lines = [ln for ln in p.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    out, seen = [], set()
    for i, r in enumerate(rows):
        where = f"{p.name} line {i + 2} ({r.get('name')})"
        missing = [c for c in ("name", "formulation", "data") if not (r.get(c) or "").strip()]
        if missing:
            raise InvalidParameterError(f"{where}: empty {missing}")
        if r["name"] in seen:
            raise InvalidParameterError(f"{where}: duplicate instance name {r['name']!r}")
        seen.add(r["name"])
        status = (r.get("status") or "").strip()
        if status and status not in STATUSES:
            raise InvalidParameterError(f"{where}: status must be one of {STATUSES}, got {status!r}")
        ps = (r.get("proof_seconds") or "").strip()
        out.append(Instance(name=r["name"].strip(), formulation=r["formulation"].strip(), data=r["data"].strip(),
                            params=parse_params(r.get("params", ""), where),
                            benchmark=(r.get("benchmark") or "0").strip() in ("1", "true", "yes"),
                            problem_class=(r.get("class") or "").strip(),
                            sense=(r.get("sense") or "").strip(),
                            sha256_mps=(r.get("sha256_mps") or "").strip(), status=status or "open",
                            proof_seconds=float(ps) if ps else None,
                            proof_solver=(r.get("proof_solver") or "").strip()))
    return out


def write_catalogue(instances, path=None) -> None:
    """Rewrite the catalogue, keeping its leading comment lines."""
    p = Path(path) if path is not None else catalogue_path()
    head = [ln for ln in p.read_text().splitlines() if ln.lstrip().startswith("#")] if p.is_file() else []
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for inst in instances:
        w.writerow(inst.row())
    p.write_text("\n".join(head) + ("\n" if head else "") + buf.getvalue())


def suite(name: str = "all", path=None) -> list[Instance]:
    """The instances of a suite (``easy``, ``hard``, ``open``, ``benchmark``, ``all``) or of a
    comma list of instance names."""
    cat = load_catalogue(path)
    if name == "all":
        return cat
    if name == "benchmark":
        return [i for i in cat if i.benchmark]
    if name in STATUSES:
        return [i for i in cat if i.status == name]
    names = [s.strip() for s in str(name).split(",") if s.strip()]
    by = {i.name: i for i in cat}
    unknown = [n for n in names if n not in by]
    if unknown or not names:
        raise InvalidParameterError(f"--suite: {name!r} is neither a suite ({', '.join(SUITES)}) nor a comma list of "
                                    f"catalogue instances (unknown: {unknown[:5]}; see docs/library.md)")
    return [by[n] for n in names]


def get_instance(name: str, path=None) -> Instance:
    """The catalogue entry called ``name`` (the shipped catalogue, or the one at ``path``)."""
    for i in load_catalogue(path):
        if i.name == name:
            return i
    raise InvalidParameterError(f"instance {name!r} is not in the catalogue {catalogue_path()}; see docs/library.md")


def build(inst: Instance):
    """Build an instance's Pyomo model; returns (model, bags, typed params, build seconds)."""
    from milopt.runner import build_formulation

    return build_formulation(inst.formulation, inst.data, dict(inst.params))


def library_instances(config=None, formulations=None, data=None) -> list[tuple[str, str, dict]]:
    """(formulation, data, params) triples of a bench configuration's [[solve]] entries
    (``export-library --config``), or of every formulation x shipped data set."""
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


def _selected(suite_name, config, formulations, data) -> list[Instance]:
    if config is not None:
        return [Instance(instance_name(f, d, p), f, d, dict(p)) for f, d, p in
                library_instances(config, formulations, data)]
    insts = suite(suite_name or "all")
    if formulations:
        insts = [i for i in insts if i.formulation in formulations]
    if data:
        insts = [i for i in insts if i.data in data or any(f"data={d}&" in i.data or
                                                             i.data.startswith(f"gen:{d}") for d in data)]
    return insts


def export_library(folder, *, formats=FORMATS, suite=None, config=None, formulations=None, data=None, solu=None,
                   progress=None, names: list | None = None) -> dict:
    """Write the library into ``folder``; returns the manifest.

    Parameters
    ----------
    formats : sequence of {'mps', 'lp'}
        Each instance is written as ``NAME.mps.gz`` / ``NAME.lp.gz``.
    suite : str, optional
        Catalogue suite (``easy``, ``hard``, ``open``, ``benchmark``, ``all``; default ``all``)
        or a comma list of instance names.
    config : path or dict, optional
        Instead of the catalogue, the [[solve]] entries of a bench configuration.
    formulations, data : list of str, optional
        Restrict to these formulations / data specs.
    solu : path, optional
        Best known values to record (default: the shipped ``milopt.solu``).
    progress : file-like, optional
        A line per instance is written there.

    Writes ``manifest.json`` (per instance: class, rows, columns, nonzeros, binaries,
    quadratic nonzeros, source, licence, status, best known values, files with sha256 and
    whether the ``.mps`` sha256 equals the catalogue's) and ``library.solu`` (``=opt=`` /
    ``=best=`` / ``=bestdual=`` lines of the written instances).
    """
    from milopt import __version__
    from milopt.bench.solu import read_solu_full, write_solu_full
    from milopt.runner import objective_sense
    from milopt.solvers import export

    formats = [f.strip().lower() for f in formats if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise InvalidParameterError(f"--formats: expected a comma list of {', '.join(FORMATS)}, got {bad or formats}")
    if solu is not None and not Path(solu).is_file():
        raise InvalidParameterError(f"--solu: {solu!r} not found (milopt report DIR writes DIR/best.solu)")
    insts = _selected(suite, config, formulations, data)
    if names:
        insts = [i for i in insts if i.name in names]
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InvalidParameterError(f"export-library: {str(folder)!r} is a file; give a folder")
    folder.mkdir(parents=True, exist_ok=True)
    known = read_solu_full(solu if solu is not None else solu_path())
    entries, skipped = [], []
    for inst in insts:
        t0 = time.perf_counter()
        try:
            model, bags, typed, build_s = build(inst)
        except MiloptError as exc:
            skipped.append({"name": inst.name, "formulation": inst.formulation, "data": inst.data,
                            "params": inst.params, "reason": str(exc)})
            if progress:
                progress.write(f"skip {inst.name}: {exc}\n")
            continue
        files, size = {}, {}
        for fmt in formats:
            p = folder / f"{inst.name}.{fmt}.gz"
            sz = export(model, str(p))
            if fmt == "mps" or not size:
                size = {k: v for k, v in sz.items() if k not in ("file", "bytes")}
            files[fmt] = {"file": p.name, "bytes": p.stat().st_size, "sha256": sha256_file(p),
                          "sha256_uncompressed": uncompressed_sha256(p)}
        mps_sha = files.get("mps", {}).get("sha256_uncompressed")
        cls = size.get("problem_class")  # as written in the file (a quadratic row makes it MIQCQP)
        feats = [f for f, k in (("SOS", "sos"), ("INDICATOR", "indicator_constraints")) if size.get(k)]
        kb = known.get(inst.name, {})
        desc, lic = inst.source()
        entries.append({
            "name": inst.name, "formulation": inst.formulation, "data": inst.data, "params": typed,
            "class": cls, "features": list(feats), "sense": objective_sense(model), "status": inst.status,
            "benchmark": inst.benchmark, "rows": size.get("constraints"), "columns": size.get("variables"),
            "nonzeros": size.get("nonzeros"), "binaries": size.get("binaries"), "integers": size.get("integers"),
            "quadratic_nonzeros": size.get("quadratic_nonzeros"), "size": size,
            "data_size": {"bags": bags.n_bags, "positive_bags": bags.positive_bags, "instances": bags.n_instances,
                          "features": bags.n_features},
            "source": desc, "licence": lic, "files": files,
            "sha256_mps": mps_sha,
            "sha256_matches_catalogue": None if not (inst.sha256_mps and mps_sha) else mps_sha == inst.sha256_mps,
            "best_known": {"kind": kb.get("kind"), "objective": kb.get("value"), "bound": kb.get("bound")} if kb
            else None,
            "seconds": round(time.perf_counter() - t0, 3)})
        if progress:
            progress.write(f"wrote {inst.name} ({cls}, {size.get('variables')} columns, {size.get('constraints')} "
                           f"rows) in {entries[-1]['seconds']:.1f} s\n")
        del model
    manifest = {"milopt_version": __version__,
                "note": "features standardised (mean 0, variance 1 over the data set) before building, as milopt "
                        "solve; objective convention of the files: min c'x + 1/2 x'Qx + c0 (or max as stated)",
                "instances": entries, "skipped": skipped}
    manifest["sha256_mismatches"] = [e["name"] for e in entries if e["sha256_matches_catalogue"] is False]
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    write_solu_full(folder / "library.solu", {e["name"]: known[e["name"]] for e in entries if e["name"] in known})
    return manifest


def uncompressed_sha256(path) -> str:
    """sha256 of a file's content, gunzipped first when it ends in ``.gz``."""
    import gzip
    import hashlib

    p = Path(path)
    if not p.name.endswith(".gz"):
        return sha256_file(p)
    h = hashlib.sha256()
    with gzip.open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def mps_sha256(inst: Instance) -> str:
    """sha256 of the ``.mps`` milopt writes for ``inst`` (uncompressed)."""
    import tempfile

    from milopt.solvers import export

    model = build(inst)[0]
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"{inst.name}.mps"
        export(model, str(p))
        return sha256_file(p)


__all__ = ["Instance", "REFERENCES", "read_metadata", "metadata_path", "load_catalogue", "write_catalogue", "suite", "get_instance", "build", "export_library",
           "mps_sha256", "SUITES", "replace"]
