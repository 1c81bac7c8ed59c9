"""milopt's own ``.mps`` / ``.lp`` writers, from a :class:`~milopt.matrix.MatrixForm`.

One dialect per format, chosen so that HiGHS, SCIP, CPLEX, Gurobi and Xpress all read the same
file (``docs/file_format.md`` says which reader takes which section, and how it was checked):
CPLEX's free MPS with its extensions (``OBJSENSE``, ``QUADOBJ``, ``QCMATRIX``, ``SOS``,
``INDICATORS``) and CPLEX's LP format.  The bytes written depend only on the model: numbers are
Python's shortest round-trip ``repr`` of each double (they read back exactly), names are cleaned
by one deterministic rule (:mod:`milopt.io.names`), and a ``.gz`` file has no time stamp and no
file name in its header.

>>> from milopt.io import write                                   # doctest: +SKIP
>>> write(mf, "model.mps.gz")                                     # doctest: +SKIP
{'variables': ..., 'file': 'model.mps.gz', 'bytes': ..., 'format': 'mps', 'compressed': True}

Formats are registered here, in one place: :data:`FORMATS` maps a file suffix to the writer,
a function ``chunks(mf) -> iterable of bytes`` (named as ``"module:function"`` for the
built-in ones, imported when first used).  A plugin adds one with :func:`register_format`;
``milopt export F.ext`` then writes ``.ext`` (and ``.ext.gz``) files.
"""
from __future__ import annotations

import gzip
import io
import os
import tempfile
from pathlib import Path

from milopt.errors import InvalidParameterError

__all__ = ["write", "write_mps", "write_lp", "FORMATS", "register_format", "format_of"]

#: file suffix -> writer ``chunks(mf) -> iterable of bytes`` (or its ``"module:function"`` name)
FORMATS: dict = {"mps": "milopt.io.mps:mps_chunks", "lp": "milopt.io.lp:lp_chunks"}
#: gzip level of ``.gz`` files: on MUSK2's big-M model (47.5 MB of MPS) level 3 takes 0.24 s CPU
#: for 6.7 MB, zlib's default 6 takes 0.81 s for 5.6 MB
GZIP_LEVEL = 3


def register_format(suffix: str, chunks) -> None:
    """Register a file format: files whose name ends ``.suffix`` (optionally ``.gz``) are
    written by ``chunks(mf)``, which returns the file's bytes as an iterable of ``bytes``
    (compression, atomic replacement and file objects are handled here)."""
    suffix = str(suffix).lower().lstrip(".")
    if not suffix or "." in suffix or suffix == "gz":
        raise InvalidParameterError(f"register_format: expected a suffix such as 'mps', got {suffix!r}")
    if not callable(chunks):
        raise InvalidParameterError(f"register_format {suffix!r}: the writer must be a function chunks(mf)")
    FORMATS[suffix] = chunks


def _suffixes() -> str:
    return " or ".join("." + f for f in FORMATS)


def format_of(path) -> tuple:
    """(format, compressed) from a file name ending in a registered suffix, optionally ``.gz``."""
    name = str(path).lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    for fmt in sorted(FORMATS, key=len, reverse=True):
        if name.endswith("." + fmt):
            return fmt, gz
    raise InvalidParameterError(f"output file {str(path)!r}: expected a name ending {_suffixes()} "
                                "(optionally followed by .gz)")


def _chunks(mf, fmt: str):
    writer = FORMATS[fmt]
    if isinstance(writer, str):
        import importlib

        module, func = writer.split(":")
        writer = FORMATS[fmt] = getattr(importlib.import_module(module), func)
    return writer(mf)


def _gzip(chunks, raw) -> None:
    # filename="" and mtime=0: the header holds neither a name nor a time stamp
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0) as gz:
        for ch in chunks:
            gz.write(ch)


def _emit(chunks, dest, compress: bool | None) -> int:
    """Write ``chunks`` to a path (atomically: a temporary file renamed into place) or to a file
    object; return the number of bytes written."""
    if isinstance(dest, (str, os.PathLike)):
        path = Path(dest)
        if not path.parent.is_dir():
            raise InvalidParameterError(f"cannot write {path}: the directory {path.parent} does not exist; "
                                        "create it first")
        if compress is None:
            compress = str(path).lower().endswith(".gz")
        fd, tmp = tempfile.mkstemp(prefix=".milopt-", suffix=".tmp", dir=str(path.parent) or ".")
        try:
            with os.fdopen(fd, "wb") as fh:
                if compress:
                    _gzip(chunks, fh)
                else:
                    fh.writelines(chunks)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return path.stat().st_size
    # a file object: binary unless it is a text stream
    if isinstance(dest, io.TextIOBase):
        if compress:
            raise InvalidParameterError("a gzip-compressed model needs a binary file object, got a text stream: "
                                        "open the file with mode 'wb'")
        text = b"".join(chunks).decode("ascii")
        dest.write(text)
        return len(text)
    if compress:
        buf = io.BytesIO()
        _gzip(chunks, buf)
        data = buf.getvalue()
        dest.write(data)
        return len(data)
    total = 0
    for ch in chunks:
        dest.write(ch)
        total += len(ch)
    return total


def write_mps(mf, dest, compress: bool | None = None) -> int:
    """Write ``mf`` as free MPS to a path or a file object.

    Parameters
    ----------
    mf : milopt.matrix.MatrixForm
        The model.
    dest : str, os.PathLike or file object
        A path (gzip-compressed when it ends ``.gz``) or an open file (binary or text).
    compress : bool, optional
        Force or forbid gzip compression (default: from the file name; never for a file object).

    Returns
    -------
    int
        Bytes written.
    """
    return _emit(_chunks(mf, "mps"), dest, compress)


def write_lp(mf, dest, compress: bool | None = None) -> int:
    """Write ``mf`` in the CPLEX LP format to a path or a file object (as :func:`write_mps`)."""
    return _emit(_chunks(mf, "lp"), dest, compress)


def write(mf, path) -> dict:
    """Write ``mf`` to ``path``, the format chosen by its suffix (``.mps``, ``.lp`` or a
    registered one, each optionally ``.gz``).

    Returns
    -------
    dict
        ``mf.size()`` plus ``file`` (the path), ``bytes`` (file size), ``format`` (the suffix,
        e.g. ``"mps"``) and ``compressed``.

    Raises
    ------
    InvalidParameterError
        The suffix names no known format.
    InvalidDataError
        The model holds NaN or bounds that cross.
    """
    fmt, gz = format_of(path)
    nbytes = _emit(_chunks(mf, fmt), path, gz)
    info = dict(mf.size())
    info.update({"file": str(path), "bytes": int(nbytes), "format": fmt, "compressed": gz})
    return info
