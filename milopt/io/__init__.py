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

import contextlib
import errno
import gzip
import io
import os
import stat
import tempfile
import time
from pathlib import Path

from milopt.errors import InvalidParameterError, OutputFileError
from milopt.processes import signals_blocked, temporary_file

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


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``/proc``)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)   # elsewhere: the classic read (set and restore)
    os.umask(old)
    return old


def _tmpfile_supported(folder: Path) -> bool:
    return hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


def _open_unnamed(folder: Path):
    """An unnamed file in ``folder`` (Linux ``O_TMPFILE``; created with ``0o666 & ~umask``, as
    ``open()`` would): nothing to remove if the process is killed, even by SIGKILL.  None where
    the file system does not support it."""
    if not _tmpfile_supported(folder):
        return None
    try:
        return os.open(str(folder), os.O_TMPFILE | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise


def _publish_unnamed(fd: int, path: Path) -> None:
    """Give the unnamed file ``fd`` the name ``path``, replacing any file there atomically."""
    src = f"/proc/self/fd/{fd}"
    # linkat(AT_SYMLINK_FOLLOW) (os.link calls plain link() unless a directory fd is given)
    dfd = os.open(str(path.parent), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        with signals_blocked():
            try:   # a new name: atomic, no temporary name at all
                os.link(src, path.name, dst_dir_fd=dfd, follow_symlinks=True)
                return
            except FileExistsError:
                pass
            tmp = f".milopt-{os.getpid()}-{fd}-{time.monotonic_ns()}.tmp"
            os.link(src, tmp, dst_dir_fd=dfd, follow_symlinks=True)  # named for microseconds, signals held back
            try:
                os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                raise
    finally:
        os.close(dfd)


def _publish_copy(fd: int, path: Path) -> None:
    """Copy the unnamed file ``fd`` to a named temporary file (removed on error and on signals),
    then rename it over ``path``."""
    tfd, tmp = tempfile.mkstemp(prefix=".milopt-", suffix=".tmp", dir=str(path.parent))
    with temporary_file(tmp):
        try:
            os.fchmod(tfd, stat.S_IMODE(os.fstat(fd).st_mode))
            offset = 0
            while True:
                block = os.pread(fd, 1 << 20, offset)
                if not block:
                    break
                os.write(tfd, block)
                offset += len(block)
            os.close(tfd)
            tfd = None
            os.replace(tmp, path)
        except BaseException:
            if tfd is not None:
                os.close(tfd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _emit_path(chunks, path: Path, compress: bool) -> int:
    """Write ``chunks`` to ``path`` atomically.

    The bytes go to an unnamed file in the target's folder (``O_TMPFILE``) that is linked in
    place only when complete, so that no signal (not even SIGKILL) leaves a partial file or a
    temporary one behind; where the file system has no unnamed files, to a named temporary file
    that is removed on every error, on Ctrl-C, SIGTERM and SIGHUP (:mod:`milopt.processes`), then
    renamed over the target.  The file gets the mode ``open()`` would give it: a new file
    ``0o666`` less the umask, a replaced file keeps its permission bits.  Every failure is an
    :class:`~milopt.errors.OutputFileError` naming ``path``."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputFileError(path, exc) from None
    tmp = None
    try:
        fd = _open_unnamed(path.parent)
        if fd is None:
            fd, tmp = tempfile.mkstemp(prefix=".milopt-", suffix=".tmp", dir=str(path.parent) or ".")
    except OSError as exc:
        raise OutputFileError(path, exc) from None
    with contextlib.ExitStack() as stack:
        if tmp is not None:
            stack.enter_context(temporary_file(tmp))
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                if compress:
                    _gzip(chunks, fh)
                else:
                    fh.writelines(chunks)
            if mode is not None or tmp is not None:
                os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
            if tmp is None:
                try:
                    _publish_unnamed(fd, path)
                except OSError as exc:  # no linking from /proc here: copy into a named temporary file
                    if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOENT, errno.EOPNOTSUPP):
                        raise
                    _publish_copy(fd, path)
            else:
                os.replace(tmp, path)
                tmp = None
        except OSError as exc:
            raise OutputFileError(path, exc) from None
        finally:
            os.close(fd)
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    return path.stat().st_size


def _emit(chunks, dest, compress: bool | None) -> int:
    """Write ``chunks`` to a path (atomically, :func:`_emit_path`) or to a file object; return
    the number of bytes written."""
    if isinstance(dest, (str, os.PathLike)):
        path = Path(dest)
        if not path.parent.is_dir():
            raise InvalidParameterError(f"cannot write {path}: the directory {path.parent} does not exist; "
                                        "create it first")
        if compress is None:
            compress = str(path).lower().endswith(".gz")
        return _emit_path(chunks, path, compress)
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
