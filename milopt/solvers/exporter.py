"""Export a Pyomo model to ``.mps`` / ``.lp`` (optionally ``.gz``) with milopt's own writer,
or to a format registered with :func:`milopt.io.register_format`.

The model's matrix form (:func:`milopt.solvers.extract`) is written by
:mod:`milopt.io`: one dialect (CPLEX's extended MPS and LP formats) that CPLEX, Gurobi,
Xpress, SCIP and — for the classes it reads — HiGHS all read, every column declared,
deterministic names and numbers that read back exactly, the same bytes whatever versions of
the dependencies are installed (docs/file_format.md).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from milopt.errors import InvalidParameterError
from milopt.solvers.extract import extract, model_size  # noqa: F401  (model_size: public)


def check_path(path) -> tuple[Path, str]:
    """``(path, format)`` for a writable file name ending in a format of :data:`milopt.io.FORMATS`
    (``.mps``, ``.lp``, ...; optionally ``.gz``), or one clear error."""
    from milopt import io

    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    gz = suffixes[-1:] == [".gz"]
    fmt = suffixes[-2] if gz and len(suffixes) >= 2 else (suffixes[-1] if suffixes else "")
    if fmt[1:] not in io.FORMATS:
        raise InvalidParameterError(f"export: file name must end in {' or '.join('.' + f for f in io.FORMATS)} "
                                    f"(optionally .gz), got {path.name!r}")
    anc = path.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if anc.exists() and not anc.is_dir():
        raise InvalidParameterError(f"cannot write {path}: {anc} is a regular file, not a directory")
    if path.is_dir():
        raise InvalidParameterError(f"cannot write {path}: it is a directory; give a file name ending in .mps or .lp")
    return path, fmt


def export(model, path, *, names: bool = True) -> dict:
    """Write ``model`` to ``path`` (.mps, .lp, optionally .gz); returns its size and the file.

    ``names=False`` writes generic names (``x1, x2, …`` for columns, ``r1, r2, …`` for rows)
    instead of the model's own.
    """
    from pyomo.common.gc_manager import PauseGC

    from milopt import io
    from milopt.solvers.highs_backend import check_magnitudes

    path, _ = check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # no cyclic garbage collection while the matrices are assembled: a collection would walk
    # every Pyomo expression of the model (about a second on MUSK2's 10^6 terms)
    with PauseGC():
        mf = extract(model)
        check_magnitudes(mf)
        if not names:
            mf = replace(mf, col_names=[f"x{j + 1}" for j in range(mf.n_cols)],
                         row_names=[f"r{i + 1}" for i in range(mf.A.shape[0])],
                         qrows=[replace(q, name=f"q{k + 1}") for k, q in enumerate(mf.qrows)],
                         sos=[replace(s, name=f"s{k + 1}") for k, s in enumerate(mf.sos)],
                         ind_names=[f"i{k + 1}" for k in range(mf.n_indicators)])
        return io.write(mf, path)
