"""JSON-ready values: non-finite floats become ``null``, numpy scalars and arrays plain Python.

One place for what every ``--json`` output, bench record and result dictionary needs
(no numpy or Pyomo import at module load).
"""
from __future__ import annotations

import json
import math


def finite(d: dict) -> dict:
    """A flat dict with non-finite float values replaced by None."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def clean(o):
    """``o`` with every non-finite float (also nested in dicts, lists, tuples) replaced by None."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    return o


def default(o):
    """``json.dumps(default=...)`` hook: numpy integers, floats (non-finite -> null), arrays; else str."""
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.ndarray):
        return clean(o.tolist())
    return str(o)


def dumps(obj, **kw) -> str:
    """``json.dumps`` of :func:`clean` ``(obj)`` with the numpy-aware :func:`default`."""
    return json.dumps(clean(obj), default=default, **kw)
