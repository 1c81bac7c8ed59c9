""".solu files (MIPLIB 2017 style): best known objective values and dual bounds per instance.

``=opt= NAME VALUE`` (proven optimum), ``=best= NAME VALUE`` (best known), ``=bestdual= NAME
BOUND`` (best known dual bound), ``=inf= NAME`` (infeasible).
"""
from __future__ import annotations

import math
from pathlib import Path

def read_solu(path) -> dict:
    """``{name: (kind, value)}`` from a .solu file (kind in opt, best, inf, feas)."""
    out = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in p.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("=") and parts[0].endswith("=") and parts[0] != "=bestdual=":
            kind = parts[0].strip("=")
            val = float(parts[2]) if len(parts) > 2 and kind in ("opt", "best") else None
            out[parts[1]] = (kind, val)
    return out


def read_solu_full(path) -> dict:
    """``{name: {"kind", "value", "bound"}}`` from a .solu file, with ``=bestdual=`` bounds.

    MIPLIB 2017 lines: ``=opt= NAME VALUE`` (proven), ``=best= NAME VALUE`` (best known),
    ``=bestdual= NAME BOUND`` (best known dual bound), ``=inf= NAME``."""
    out: dict = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in p.read_text().splitlines():
        parts = line.split()
        if len(parts) < 2 or not (parts[0].startswith("=") and parts[0].endswith("=")):
            continue
        kind, name = parts[0].strip("="), parts[1]
        try:
            val = float(parts[2]) if len(parts) > 2 else None
        except ValueError:
            continue
        e = out.setdefault(name, {"kind": None, "value": None, "bound": None})
        if kind == "bestdual":
            e["bound"] = val
        elif kind in ("opt", "best", "inf", "feas"):
            e["kind"], e["value"] = kind, val
            if kind == "opt" and e["bound"] is None:
                e["bound"] = val
    return {k: v for k, v in out.items() if v["kind"] is not None or v["bound"] is not None}


def write_solu_full(path, entries: dict) -> None:
    """Write ``{name: {"kind", "value", "bound"}}`` (``=bestdual=`` for unproven instances)."""
    lines = []
    for name in sorted(entries):
        e = entries[name]
        kind, val, bnd = e.get("kind"), e.get("value"), e.get("bound")
        if kind in ("opt", "best") and val is not None:
            lines.append(f"={kind}= {name} {val:.12g}")
        elif kind == "inf":
            lines.append(f"=inf= {name}")
        if kind != "opt" and bnd is not None and math.isfinite(bnd):
            lines.append(f"=bestdual= {name} {bnd:.12g}")
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""))


def write_solu(path, entries: dict) -> None:
    lines = []
    for name in sorted(entries):
        kind, val = entries[name]
        lines.append(f"={kind}= {name}" + (f" {val:.12g}" if val is not None and kind in ("opt", "best") else ""))
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""))


# --------------------------------------------------------------------- plots
