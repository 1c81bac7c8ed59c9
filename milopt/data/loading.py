"""Loading data sets: shipped names, headerless MIL CSV files, and ``gen:`` generators."""
from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path

import numpy as np

from milopt.data.bags import Bags, normalise_labels
from milopt.errors import InvalidDataError


def instances_dir() -> Path:
    """Folder of the shipped data sets (installed as package data ``milopt/instances``)."""
    env = os.environ.get("MILOPT_INSTANCES")
    if env:
        return Path(env)
    try:
        pkg = resources.files("milopt.instances")
        if (pkg / "manifest.json").is_file():
            return Path(str(pkg))
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "instances"  # source checkout


def manifest() -> dict:
    return json.loads((instances_dir() / "manifest.json").read_text())


def datasets() -> dict:
    """Shipped data sets: name -> manifest entry."""
    return manifest()


def read_mil_csv(path, *, name=None, coords: int = 0) -> Bags:
    """Read a headerless MIL CSV: column 0 bag label (0/1 or -1/1), column 1 bag id, rest features.

    Parameters
    ----------
    coords : int
        When > 0, the first ``coords`` feature columns are instance coordinates (for batch
        methods), not features.
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise InvalidDataError(f"data file {str(path)!r} not found; give a shipped name "
                               f"({', '.join(datasets())}), an existing CSV path or gen:NAME?k=v")
    try:
        df = pd.read_csv(path, header=None, compression="infer", low_memory=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InvalidDataError(f"{path}: not a readable CSV ({exc})") from None
    if df.shape[1] < 3 + coords:
        raise InvalidDataError(f"{path}: expected columns label, bag_id, features...; got {df.shape[1]} column(s)")
    feats = df.iloc[:, 2:]
    nonnum = [int(c) for c in feats.columns if not pd.api.types.is_numeric_dtype(feats[c])]
    if nonnum:
        col = nonnum[0]
        bad = feats[col][pd.to_numeric(feats[col], errors="coerce").isna() & feats[col].notna()].iloc[0]
        raise InvalidDataError(f"{path}: column {col} holds a non-numeric value {bad!r}; every feature must be a number")
    F = feats.to_numpy(dtype=np.float64)
    if np.isnan(F).any():
        r, c = np.argwhere(np.isnan(F))[0]
        raise InvalidDataError(f"{path}: row {r + 1}, column {c + 2} is empty or NaN; impute or drop it")
    lab = df.iloc[:, 0].to_numpy()
    if pd.isna(lab).any():
        raise InvalidDataError(f"{path}: row {int(np.flatnonzero(pd.isna(lab))[0]) + 1} has no bag label")
    C = F[:, :coords] if coords else None
    X = F[:, coords:]
    bags = Bags.from_instances(X, df.iloc[:, 1].to_numpy(), normalise_labels(lab, f"{path}: label column"),
                               coords=C, name=name or path.name.split(".")[0])
    return bags


def sha256_file(path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load(name_or_path: str, *, verify: bool = False, coords: int = 0, require_both_classes: bool = True) -> Bags:
    """Load a data set.

    Parameters
    ----------
    name_or_path : str
        A shipped name (``musk1``, ``musk2``), a path to a headerless MIL CSV (optionally
        gzip-compressed), or a generator ``gen:NAME?key=value&...``.
    verify : bool
        Check the sha256 of a shipped file against the manifest.
    coords : int
        For CSV files: number of leading feature columns that are coordinates.
    require_both_classes : bool
        Refuse a binary data set whose bags are all of one class.
    """
    from milopt.data.registry import generate

    spec = str(name_or_path)
    if spec.startswith("gen:"):
        bags = generate(spec)
    else:
        shipped = datasets()
        if spec in shipped:
            entry = shipped[spec]
            path = instances_dir() / entry["file"]
            if verify and sha256_file(path) != entry["sha256_gz"]:
                raise InvalidDataError(f"{path}: sha256 does not match the manifest; reinstall milopt")
            bags = read_mil_csv(path, name=spec, coords=coords)
        else:
            bags = read_mil_csv(spec, coords=coords)
    if require_both_classes:
        check_both_classes(bags)
    return bags


def check_both_classes(bags: Bags, what="data"):
    classes = np.unique(bags.y)
    if classes.size < 2:
        raise InvalidDataError(f"{what}: every bag has label {classes[0]}; a classifier needs bags of at least two classes")
