"""The results table of a bench folder (``runs.csv``), read back safely.

A bench appends one row per run; :func:`load_runs` reads the table with the last row per run
id, skipping rows damaged by a killed bench with a :class:`BenchReportWarning`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from milopt.errors import InvalidParameterError

_STR_COLS = ["run_id", "kind", "problem", "instance", "contender", "data", "formulation", "method", "params",
             "solver", "outcome", "status", "termination", "error", "extra", "solver_options", "sense", "verified",
             "verify_note", "host", "source"]


def _complete_text(path: Path) -> tuple[str, int]:
    """The table's text without a last row cut mid-write, and the number of rows dropped.

    A bench appends one line per run and fsyncs it; a bench killed during a write leaves a
    last line without its newline (``--resume`` cuts it off).  That line, and any line whose
    number of fields differs from the header's, is skipped with a warning."""
    import csv
    import io
    import warnings

    text = path.read_text(errors="replace")
    dropped = 0
    if text and not text.endswith("\n"):
        cut = text.rfind("\n") + 1
        text = text[:cut]
        dropped += 1
        warnings.warn(f"{path}: the last row was cut mid-write (no line end); skipped", BenchReportWarning,
                      stacklevel=3)
    rows = list(csv.reader(io.StringIO(text)))
    if rows and any(len(r) != len(rows[0]) for r in rows[1:]):
        n = len(rows[0])
        bad = [k + 1 for k, r in enumerate(rows[1:], 1) if len(r) != n]
        warnings.warn(f"{path}: {len(bad)} row(s) with a wrong number of fields skipped (lines {bad[:5]})",
                      BenchReportWarning, stacklevel=3)
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([rows[0]] + [r for r in rows[1:] if len(r) == n])
        text = buf.getvalue()
        dropped += len(bad)
    return text, dropped


class BenchReportWarning(UserWarning):
    """A results table had a damaged row (skipped)."""


def load_runs(folder) -> pd.DataFrame:
    """The ``runs.csv`` of a bench folder (last row per run id); damaged rows skipped with a warning."""
    import io

    p = Path(folder)
    path = p / "runs.csv" if p.is_dir() else p
    if not path.is_file():
        raise InvalidParameterError(f"{str(path)!r}: no runs.csv; give the --out folder of a milopt bench")
    text, _ = _complete_text(path)
    if not text.strip():
        raise InvalidParameterError(f"{path}: empty results table")
    header = pd.read_csv(io.StringIO(text), nrows=0).columns
    df = pd.read_csv(io.StringIO(text), dtype={c: str for c in _STR_COLS if c in header}, keep_default_na=False,
                     na_values={c: [""] for c in header if c not in _STR_COLS})
    for c in _STR_COLS:
        if c in df:
            df[c] = df[c].fillna("")
    return df.drop_duplicates("run_id", keep="last").reset_index(drop=True)
