"""Loading data sets: shipped names, MIL CSV files (with or without a header row), Parquet, pandas
frames, and ``gen:`` generators."""
from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path

import numpy as np

from milopt.data.bags import Bags, _plain, normalise_labels
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


#: column names recognised in a frame / a file with a header row
BAG_COLUMNS = ("bag_id", "bag", "bag_name")
LABEL_COLUMNS = ("label", "bag_label", "y")
INSTANCE_LABEL_COLUMNS = ("instance_label", "instance_y")
COORD_PREFIX = "coord"


def _is_number(v) -> bool:
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return True
    try:
        float(str(v).strip())
        return True
    except ValueError:
        return False


def _maybe_numeric(col):
    """A text column as numbers when every cell is one (pandas infers this for headerless files)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(col):
        return col
    try:
        out = pd.to_numeric(col)
    except (ValueError, TypeError):
        return col
    if pd.api.types.is_float_dtype(out):
        # pandas' own text-to-float conversion can be an ulp off; Python's float() is exact
        out = col.map(lambda v: float(v) if isinstance(v, str) else v).astype(float)
    return out


def _detect_header(first_row) -> bool:
    """A first row is a header when none of its feature cells (column 2 on) is a number."""
    cells = [c for c in list(first_row)[2:] if not (isinstance(c, float) and np.isnan(c))]
    return bool(cells) and not any(_is_number(c) for c in cells)


def _numeric_columns(df, where: str, header_hint: bool):
    """``df`` with every column numeric, or InvalidDataError naming the first bad cell."""
    import pandas as pd

    out = {}
    for pos, c in enumerate(df.columns):
        col = df[c]
        if pd.api.types.is_bool_dtype(col):
            raise InvalidDataError(f"{where}: column {c!r} holds true/false values; every feature must be a number")
        if pd.api.types.is_numeric_dtype(col):
            out[c] = col.astype(np.float64)
            continue
        num = pd.to_numeric(col, errors="coerce")
        bad = num.isna() & col.notna() & (col.astype(str).str.strip() != "")
        if bad.any():
            r = int(np.flatnonzero(bad.to_numpy())[0])
            hint = (" (if the first row is a header, give --set header=true / load(..., header=True))"
                    if header_hint and r == 0 else "")
            raise InvalidDataError(f"{where}: row {r + 1}, column {_plain(c)!r} holds a non-numeric value "
                                   f"{str(col.iloc[r])!r}; every feature must be a number{hint}")
        out[c] = num.astype(np.float64)
    return pd.DataFrame(out, index=df.index)


def _bag_ids(col, where: str) -> np.ndarray:
    import pandas as pd

    if col.isna().any():
        r = int(np.flatnonzero(col.isna().to_numpy())[0])
        raise InvalidDataError(f"{where}: row {r + 1} has no bag id")
    ids = col.to_numpy()
    if not pd.api.types.is_numeric_dtype(col):
        ids = np.asarray(ids, dtype=object)
        kinds = {type(v) for v in ids}
        if len(kinds) > 1:  # mixed numbers and strings: compare them as text
            ids = np.array([str(v) for v in ids], dtype=object)
    elif pd.api.types.is_bool_dtype(col):
        raise InvalidDataError(f"{where}: bag ids must be numbers or names, not true/false")
    elif ids.dtype.kind == "f":
        if not np.all(np.isfinite(ids)):
            raise InvalidDataError(f"{where}: bag ids must be finite")
        if np.all(ids == np.round(ids)) and np.all(np.abs(ids) < 2 ** 53):
            ids = ids.astype(np.int64)
    return ids


def frame_to_bags(df, *, name: str = "bags", coords: int = 0, where: str = "frame", named: bool = True,
                  header_hint: bool = False) -> Bags:
    """A long table (one row per instance) as :class:`Bags`.

    ``named=True``: columns are found by name -- the bag id (``bag_id``, ``bag`` or
    ``bag_name``), the bag label (``label``, ``bag_label`` or ``y``), optionally
    ``instance_label`` and coordinate columns ``coord0, coord1, ...``; every other column is a
    feature.  ``named=False``: by position -- label, bag id, features (the MIL CSV layout).
    ``coords=K`` takes the first K feature columns as coordinates.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise InvalidDataError(f"{where}: expected a pandas DataFrame, got {type(df).__name__}")
    if not isinstance(coords, (int, np.integer)) or isinstance(coords, bool) or coords < 0:
        raise InvalidDataError(f"coords: expected the number of leading coordinate columns (int >= 0), got {coords!r}")
    iy = None
    if named:
        cols = [str(c) for c in df.columns]
        if len(set(cols)) != len(cols):
            dup = sorted({c for c in cols if cols.count(c) > 1})
            raise InvalidDataError(f"{where}: duplicated column names {dup[:5]}")
        df = df.copy()
        df.columns = cols
        low = {c.lower(): c for c in cols}
        bag_c = next((low[c] for c in BAG_COLUMNS if c in low), None)
        lab_c = next((low[c] for c in LABEL_COLUMNS if c in low), None)
        if bag_c is None or lab_c is None:
            raise InvalidDataError(
                f"{where}: needs a bag id column ({' / '.join(BAG_COLUMNS)}) and a bag label column "
                f"({' / '.join(LABEL_COLUMNS)}); found columns {cols[:8]}{' ...' if len(cols) > 8 else ''}")
        il_c = next((low[c] for c in INSTANCE_LABEL_COLUMNS if c in low), None)
        coord_cols = [c for c in cols if c.lower().startswith(COORD_PREFIX) and c.lower()[len(COORD_PREFIX):].isdigit()]
        feat_cols = [c for c in cols if c not in {bag_c, lab_c, il_c, *coord_cols}]
        bag_col, lab_col = df[bag_c], df[lab_c]
        if il_c is not None:
            if df[il_c].isna().any():
                raise InvalidDataError(f"{where}: column {il_c!r} has missing instance labels")
            iy = normalise_labels(df[il_c].to_numpy(), f"{where}: column {il_c!r}")
    else:
        if df.shape[1] < 3 + coords:
            raise InvalidDataError(f"{where}: expected columns label, bag_id, features...; got {df.shape[1]} column(s)")
        lab_col, bag_col = df.iloc[:, 0], df.iloc[:, 1]
        feat_cols = list(df.columns[2:])
        coord_cols = []
    if coords:
        if len(feat_cols) < coords + 1:
            raise InvalidDataError(f"coords={coords}: the data has only {len(feat_cols)} feature column(s)")
        coord_cols, feat_cols = coord_cols + feat_cols[:coords], feat_cols[coords:]
    if not feat_cols:
        raise InvalidDataError(f"{where}: no feature columns")
    F = _numeric_columns(df[feat_cols], where, header_hint).to_numpy(dtype=np.float64)
    if np.isnan(F).any():
        r, c = np.argwhere(np.isnan(F))[0]
        raise InvalidDataError(f"{where}: row {int(r) + 1}, feature column {_plain(feat_cols[c])!r} is empty or NaN; "
                               "impute or drop it")
    if np.isinf(F).any():
        r, c = np.argwhere(np.isinf(F))[0]
        raise InvalidDataError(f"{where}: row {int(r) + 1}, feature column {_plain(feat_cols[c])!r} is infinite")
    C = None
    if coord_cols:
        C = _numeric_columns(df[coord_cols], where, header_hint).to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(C)):
            raise InvalidDataError(f"{where}: coordinate columns hold empty, NaN or infinite values")
    lab = lab_col.to_numpy()
    if pd.isna(lab).any():
        raise InvalidDataError(f"{where}: row {int(np.flatnonzero(pd.isna(lab))[0]) + 1} has no bag label")
    ids = _bag_ids(bag_col, where)
    return Bags.from_instances(F, ids, normalise_labels(lab, f"{where}: label column"), coords=C, instance_y=iy,
                               name=name)


def read_mil_csv(path, *, name=None, coords: int = 0, header=None) -> Bags:
    """Read a MIL CSV (optionally gzip-compressed).

    Without a header row: column 0 bag label (0/1 or -1/1), column 1 bag id, rest features.
    With a header row (``header=True``, or detected when ``header=None``: no cell of the first
    row's feature columns is a number), columns are found by name as in ``frame_to_bags``
    (``bag_id``, ``label``, ``instance_label``, ``coord0..``); a header without those names is
    read by position.

    Parameters
    ----------
    coords : int
        When > 0, the first ``coords`` feature columns are instance coordinates (for batch
        methods), not features.
    header : bool or None
        Whether the first row holds column names (None: detect).
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise InvalidDataError(f"data file {str(path)!r} not found; give a shipped name "
                               f"({', '.join(datasets())}), an existing CSV or Parquet path or gen:NAME?k=v")
    if path.is_dir():
        raise InvalidDataError(f"{path} is a directory; give a CSV or Parquet file")
    if header not in (None, True, False):
        raise InvalidDataError(f"header: expected true, false or auto, got {header!r}")
    where = str(path)
    try:
        # every double must read back exactly: pandas < 3's default parser may be off by an ulp
        # (round_trip fixes it); pandas 3 parses exactly by default and deprecates the option
        exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
        df = pd.read_csv(path, header=None, compression="infer", low_memory=False, skipinitialspace=True, **exact)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError, EOFError,
            ValueError) as exc:
        msg = " ".join(str(exc).split())[:200]
        raise InvalidDataError(f"{path}: not a readable CSV ({type(exc).__name__}: {msg})") from None
    if df.shape[0] == 0:
        raise InvalidDataError(f"{path}: the file has no rows")
    has_header = _detect_header(df.iloc[0].tolist()) if header is None else bool(header)
    name = name or path.name.split(".")[0]
    if has_header:
        names = [str(c).strip() for c in df.iloc[0].tolist()]
        body = df.iloc[1:].reset_index(drop=True)
        if body.shape[0] == 0:
            raise InvalidDataError(f"{path}: the file holds a header row but no data")
        body = body.apply(_maybe_numeric)
        low = {n.lower() for n in names}
        if any(b in low for b in BAG_COLUMNS) and any(lb in low for lb in LABEL_COLUMNS):
            body.columns = names
            if len(set(names)) != len(names):
                dup = sorted({c for c in names if names.count(c) > 1})
                raise InvalidDataError(f"{path}: duplicated column names {dup[:5]} in the header row")
            return frame_to_bags(body, name=name, coords=coords, where=where, named=True)
        body.columns = list(range(body.shape[1]))
        return frame_to_bags(body, name=name, coords=coords, where=where, named=False)
    return frame_to_bags(df, name=name, coords=coords, where=where, named=False, header_hint=True)


def _read_shipped(path, *, name: str, coords: int = 0) -> Bags:
    """A shipped data set (a headerless, all-numeric MIL CSV whose sha256 the manifest records)
    read with numpy alone: the same :class:`Bags` as :func:`read_mil_csv`, without importing
    pandas (a command on MUSK2 then starts about a second sooner)."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        D = np.loadtxt(fh, delimiter=",", ndmin=2)
    if D.shape[1] < 3 + coords:
        raise InvalidDataError(f"{path}: expected columns label, bag_id, features...; got {D.shape[1]} column(s)")
    lab, ids = D[:, 0], D[:, 1]
    if np.all(lab == np.round(lab)):
        lab = lab.astype(np.int64)
    if np.all(ids == np.round(ids)):
        ids = ids.astype(np.int64)
    F = D[:, 2 + coords:]
    C = D[:, 2:2 + coords] if coords else None
    return Bags.from_instances(np.ascontiguousarray(F), ids, normalise_labels(lab, f"{path}: label column"),
                               coords=None if C is None else np.ascontiguousarray(C), name=name)


def read_parquet(path, *, name=None, coords: int = 0) -> Bags:
    """Read a Parquet table with named columns (as ``frame_to_bags``)."""
    import pandas as pd

    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises its own error types for every malformed file
        msg = " ".join(str(exc).split())[:200]
        raise InvalidDataError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {msg})") from None
    return frame_to_bags(df, name=name or path.name.split(".")[0], coords=coords, where=str(path), named=True)


def sha256_file(path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load(name_or_path, *, verify: bool = False, coords: int = 0, require_both_classes: bool = True,
         header=None) -> Bags:
    """Load a data set.

    Parameters
    ----------
    name_or_path : str, path, pandas.DataFrame or Bags
        A shipped name (``musk1``, ``musk2``); a path to a MIL CSV (optionally
        gzip-compressed; headerless ``label, bag_id, features...`` or with a header row naming
        ``bag_id`` and ``label``); a Parquet file (``.parquet`` / ``.pq``); a generator
        ``gen:NAME?key=value&...``; a long pandas DataFrame with columns ``bag_id``, ``label``
        and features (as written by :meth:`Bags.to_frame`); or a :class:`Bags` (returned as is).
    verify : bool
        Check the sha256 of a shipped file against the manifest.
    coords : int
        Number of leading feature columns that are coordinates (CSV, Parquet, DataFrame).
    require_both_classes : bool
        Refuse a binary data set whose bags are all of one class.
    header : bool or None
        CSV only: whether the first row holds column names (None: detect).
    """
    from milopt.data.registry import generate

    if isinstance(name_or_path, Bags):
        bags = name_or_path
    elif type(name_or_path).__name__ == "DataFrame":
        bags = frame_to_bags(name_or_path, coords=coords, where="DataFrame", named=True)
    elif isinstance(name_or_path, (str, os.PathLike)):
        spec = os.fspath(name_or_path)
        if isinstance(spec, bytes):
            spec = os.fsdecode(spec)
        shipped = datasets()
        if spec.startswith("gen:"):
            bags = generate(spec)
        elif spec in shipped:
            entry = shipped[spec]
            path = instances_dir() / entry["file"]
            if verify and sha256_file(path) != entry["sha256_gz"]:
                raise InvalidDataError(f"{path}: sha256 does not match the manifest; reinstall milopt")
            bags = _read_shipped(path, name=spec, coords=coords)
        elif spec.lower().endswith((".parquet", ".pq")):
            bags = read_parquet(spec, coords=coords)
        else:
            bags = read_mil_csv(spec, coords=coords, header=header)
    else:
        raise InvalidDataError(
            f"data: expected a shipped name, a CSV or Parquet path, gen:NAME?k=v, a pandas DataFrame or Bags; "
            f"got {type(name_or_path).__name__}")
    if require_both_classes:
        check_both_classes(bags)
    return bags


def check_both_classes(bags: Bags, what="data"):
    """Raise :class:`~milopt.errors.InvalidDataError` naming ``what`` unless ``bags`` has bags of
    at least two classes (a classifier cannot be trained otherwise)."""
    classes = np.unique(bags.y)
    if classes.size < 2:
        raise InvalidDataError(f"{what}: every bag has label {_plain(classes[0])}; a classifier needs bags of at least "
                               "two classes")
