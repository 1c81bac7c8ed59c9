"""What both writers share: checking a :class:`~milopt.matrix.MatrixForm`, the rows as written
(ranged rows kept or split), number formatting and the vectorised assembly of text lines.

Numbers are written with Python's ``repr`` of a float (the shortest string that reads back as
the same double; a trailing ``.0`` dropped), never with numpy's or a solver's formatting, so a
file's bytes depend only on the model.  Lines are assembled as fixed-width byte fields in one
numpy array whose padding (NUL bytes) is then squeezed out: one pass over memory instead of one
Python string operation per nonzero.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from milopt.errors import InvalidDataError
from milopt.io.names import clean_names
from milopt.matrix import INF, binary_mask

# value count above which numbers are formatted once per distinct value
_DEDUP = 2048
# size of the block of records assembled at a time (fits in a typical L2 cache)
_BLOCK_BYTES = 1 << 19


def num(x: float) -> str:
    """One number as written: ``repr`` of the double, a trailing ``.0`` dropped (``2.0`` → ``2``)."""
    s = repr(float(x) + 0.0)
    return s[:-2] if s.endswith(".0") else s


def num_strings(v) -> list:
    """:func:`num` of every entry of ``v`` (a list of ``str``)."""
    v = np.asarray(v, dtype=float).ravel() + 0.0          # -0.0 -> 0.0
    return [s[:-2] if s.endswith(".0") else s for s in map(repr, v.tolist())]


def num_bytes(v) -> np.ndarray:
    """:func:`num` of every entry of ``v`` as a fixed-width ``S`` array."""
    f = num_field(v)
    return f[0][f[1]] if isinstance(f, tuple) else f


def num_field(v):
    """:func:`num` of every entry of ``v`` as an :func:`assemble` field ``(table, index)``: the
    distinct values formatted once (a fixed-width ``S`` table) and each entry's row in it."""
    v = np.asarray(v, dtype=float).ravel() + 0.0
    if v.size <= _DEDUP:
        return np.array(num_strings(v), dtype="S") if v.size else np.zeros(0, dtype="S1")
    bits = v.view(np.int64)
    order = np.argsort(bits, kind="stable")
    sb = bits[order]
    new = np.empty(sb.size, dtype=bool)
    new[0] = True
    np.not_equal(sb[1:], sb[:-1], out=new[1:])
    inv = np.empty(v.size, dtype=np.intp)
    inv[order] = np.cumsum(new) - 1
    return np.array(num_strings(v[order[new]]), dtype="S"), inv


def as_bytes(strings) -> np.ndarray:
    """ASCII strings as a fixed-width ``S`` array (width at least 1)."""
    a = np.array(list(strings), dtype="S")
    return a if a.dtype.itemsize else a.astype("S1")


def assemble(fields, n: int, ends: bool = True):
    """Concatenate per-record fields into one byte string.

    Parameters
    ----------
    fields : list of bytes, ``S`` arrays or ``(table, index)`` pairs
        A ``bytes`` constant is repeated on every record; an ``S`` array (length ``n``) gives
        one field per record; a pair gives ``table[index]`` (gathered block by block, never
        whole).  An empty entry contributes nothing.
    n : int
        Number of records.

    Returns
    -------
    blob : bytes
        The records one after another (no separator added).
    ends : numpy.ndarray or None
        ``ends[k]`` is the offset in ``blob`` just after record ``k`` (None unless asked for).
    """
    if n == 0:
        return b"", (np.zeros(0, dtype=np.int64) if ends else None)
    consts, arrays = [], []
    for f in fields:
        if isinstance(f, (bytes, bytearray)):
            consts.append(bytes(f))
            arrays.append(None)
        else:
            table, idx = f if isinstance(f, tuple) else (np.ascontiguousarray(f), None)
            if (idx if idx is not None else table).shape != (n,):
                raise ValueError("field length does not match the number of records")
            consts.append(None)
            arrays.append((table, idx))
    widths = [len(c) if c is not None else a[0].dtype.itemsize for c, a in zip(consts, arrays)]
    offsets = np.r_[0, np.cumsum(widths)]
    # blocks of records small enough to stay in cache while they are built and squeezed
    step = max(1, _BLOCK_BYTES // max(int(offsets[-1]), 1))
    buf = np.empty((min(step, n), int(offsets[-1])), dtype=np.uint8)
    for c, o, w in zip(consts, offsets[:-1].tolist(), widths):
        if c is not None and w:
            buf[:, o:o + w] = np.frombuffer(c, np.uint8)
    out, counts = [], []
    for s0 in range(0, n, step):
        s1 = min(n, s0 + step)
        b = buf[:s1 - s0]
        for a, o, w in zip(arrays, offsets[:-1].tolist(), widths):
            if a is not None and w:
                col = a[0][s0:s1] if a[1] is None else a[0][a[1][s0:s1]]
                b[:, o:o + w] = col.view(np.uint8).reshape(s1 - s0, w)
        if ends:
            counts.append(np.count_nonzero(b, axis=1))
        out.append(b.tobytes().translate(None, b"\0"))
    blob = b"".join(out)
    return blob, (np.cumsum(np.concatenate(counts)) if ends else None)


def check_form(mf) -> None:
    """Refuse a form no file can state (NaN, bounds crossing or infinite the wrong way)."""
    n = mf.n_cols
    for nm, arr, size in (("col_lb", mf.col_lb, n), ("col_ub", mf.col_ub, n),
                          ("integrality", mf.integrality, n), ("row_lb", mf.row_lb, mf.A.shape[0]),
                          ("row_ub", mf.row_ub, mf.A.shape[0])):
        if np.size(arr) != size:
            raise InvalidDataError(f"MatrixForm.{nm} has {np.size(arr)} entries, expected {size}: "
                                   "give one entry per column (per row for row_lb/row_ub)")
    if mf.A.shape[1] != n:
        raise InvalidDataError(f"MatrixForm.A has {mf.A.shape[1]} columns, c has {n}: make them agree")
    if mf.Q is not None and mf.Q.shape != (n, n):
        raise InvalidDataError(f"MatrixForm.Q has shape {mf.Q.shape}, expected ({n}, {n}): one row and column "
                               "per column of the form")
    Qd = None if mf.Q is None else sp.csc_matrix(mf.Q).data
    for nm, v in (("c", mf.c), ("A", sp.csr_matrix(mf.A).data), ("Q", Qd)):
        if v is not None and not np.all(np.isfinite(v)):
            raise InvalidDataError(f"MatrixForm.{nm} holds NaN or infinite entries: "
                                   "coefficients must be finite numbers")
    if not np.isfinite(mf.c0):
        raise InvalidDataError("MatrixForm.c0 is not finite: give a finite objective constant")
    for what, lo, hi in (("column", mf.col_lb, mf.col_ub), ("row", mf.row_lb, mf.row_ub),
                         ("indicator row", mf.ind_lb, mf.ind_ub)):
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        bad = np.flatnonzero(np.isnan(lo) | np.isnan(hi) | (lo > hi) | (lo == INF) | (hi == -INF))
        if bad.size:
            k = int(bad[0])
            raise InvalidDataError(f"{what} {k} has bounds [{lo[k]}, {hi[k]}]: a lower bound must be "
                                   "below +inf, an upper bound above -inf, and lower <= upper")
    for r in mf.qrows:
        if np.isnan(r.lb) or np.isnan(r.ub) or r.lb > r.ub or r.lb == INF or r.ub == -INF:
            raise InvalidDataError(f"quadratic row {r.name!r} has bounds [{r.lb}, {r.ub}]: "
                                   "give lower <= upper, neither NaN")
        if not (np.all(np.isfinite(r.lin_val)) and np.all(np.isfinite(r.qv))):
            raise InvalidDataError(f"quadratic row {r.name!r} holds NaN or infinite coefficients: "
                                   "coefficients must be finite numbers")
    if mf.n_indicators:
        if mf.ind_A is None or mf.ind_A.shape != (mf.n_indicators, n):
            raise InvalidDataError("MatrixForm.ind_A must have one row per indicator and one column "
                                   "per column of the form")
        act = np.asarray(mf.ind_active)
        if not np.all((act == 0) | (act == 1)):
            raise InvalidDataError("MatrixForm.ind_active must hold 0 or 1 for every indicator row")
        zb = np.asarray(mf.ind_binary, dtype=np.int64)
        ok = (zb >= 0) & (zb < n)
        ok[ok] = (np.asarray(mf.integrality, bool)[zb[ok]] & (np.asarray(mf.col_lb)[zb[ok]] >= 0)
                  & (np.asarray(mf.col_ub)[zb[ok]] <= 1))
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            raise InvalidDataError(f"indicator row {k} is switched by column {int(zb[k])}, which is not a binary "
                                   "column: give ind_binary the index of an integer column with bounds in [0, 1]")
    if mf.sense not in (1, -1):
        raise InvalidDataError(f"MatrixForm.sense is {mf.sense!r}: use +1 (minimise) or -1 (maximise)")


@dataclass
class Rows:
    """Every row as written: linear rows first, then quadratic rows, then indicator rows.

    ``B`` holds the linear part of each written row; ``lo``/``hi`` its bounds; ``kind`` is 0
    (linear), 1 (quadratic) or 2 (indicator) and ``src`` the index of the row in its kind;
    ``names`` are the written (clean, unique) names.
    """

    B: sp.csr_matrix
    lo: np.ndarray
    hi: np.ndarray
    kind: np.ndarray
    src: np.ndarray
    names: list
    obj_name: str
    base_names: list


OBJ_NAME = "obj"


def row_kinds(lo, hi) -> tuple:
    """Boolean masks of rows ``lo <= a'x <= hi`` by kind: ``(eq, le, ge, ranged, free)`` -- an
    equality (both sides equal), an upper side only, a lower side only, two different finite
    sides, no finite side.  The one reading of row bounds behind the writers and the solver
    backends (:mod:`milopt.solvers.rewrites`)."""
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    flo, fhi = np.isfinite(lo), np.isfinite(hi)
    eq = flo & fhi & (lo == hi)
    return eq, ~flo & fhi, flo & ~fhi, flo & fhi & (lo < hi), ~flo & ~fhi


def row_senses(lo, hi):
    """Type letter (``E``, ``G``, ``L``; ``N`` for a free row), right-hand side and range (NaN
    when none) of each written row ``lo <= a'x <= hi``: the one reading of row bounds behind
    both writers (MPS writes a ranged row with ``RANGES``; the LP writer splits them first)."""
    m = lo.size
    typ = np.full(m, b"N", dtype="S1")
    rhs = np.zeros(m)
    rng = np.full(m, np.nan)
    eq, le, ge, both, _ = row_kinds(lo, hi)
    typ[eq], rhs[eq] = b"E", lo[eq]
    typ[ge], rhs[ge] = b"G", lo[ge]
    typ[le], rhs[le] = b"L", hi[le]
    if both.any():
        # a G row [rhs, rhs + R] with rhs = lo, or an L row [rhs - R, rhs] with rhs = hi; R is
        # hi - lo or one of its neighbouring doubles, whichever makes the far bound read back exactly
        k = np.flatnonzero(both)
        l, h = lo[k], hi[k]
        w0 = h - l
        r_g = np.full(k.size, np.nan)
        r_l = np.full(k.size, np.nan)
        for w in (w0, np.nextafter(w0, INF), np.nextafter(w0, 0), np.nextafter(np.nextafter(w0, INF), INF),
                  np.nextafter(np.nextafter(w0, 0), 0)):
            ok = np.isnan(r_g) & (l + w == h) & (w > 0)
            r_g[ok] = w[ok]
            ok = np.isnan(r_l) & (h - w == l) & (w > 0)
            r_l[ok] = w[ok]
        use_l = np.isnan(r_g) & ~np.isnan(r_l)
        typ[k] = np.where(use_l, b"L", b"G")
        rhs[k] = np.where(use_l, h, l)
        rng[k] = np.where(use_l, r_l, np.where(np.isnan(r_g), w0, r_g))
    return typ, rhs, rng


@dataclass(frozen=True)
class ColumnKinds:
    """Boolean masks over columns: finite lower / upper bound, ``fixed`` (lb = ub), ``binary``
    (integer, not fixed, bounds exactly [0, 1]) and ``free`` (no finite bound)."""

    flo: np.ndarray
    fhi: np.ndarray
    fixed: np.ndarray
    binary: np.ndarray
    free: np.ndarray


def column_kinds(lb, ub, integ) -> ColumnKinds:
    """The :class:`ColumnKinds` of the columns (both writers' BOUNDS sections read these)."""
    lb, ub = np.asarray(lb, float), np.asarray(ub, float)
    flo, fhi = np.isfinite(lb), np.isfinite(ub)
    fixed = flo & fhi & (lb == ub)
    return ColumnKinds(flo, fhi, fixed, binary_mask(integ, lb, ub), ~flo & ~fhi)



def _split(lo, hi, split):
    """Indices into the source rows, bounds and name suffixes of the written rows: a ranged
    row (``-inf < lo < hi < inf``) becomes a ``>= lo`` row (``_lo``) and a ``<= hi`` row
    (``_up``) when ``split`` is true."""
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    m = lo.size
    ranged = np.isfinite(lo) & np.isfinite(hi) & (lo < hi)
    if not split or not ranged.any():
        return np.arange(m), lo, hi, None
    reps = np.where(ranged, 2, 1)
    idx = np.repeat(np.arange(m), reps)
    first = np.r_[True, idx[1:] != idx[:-1]]
    second = ~first
    r_idx = ranged[idx]
    new_lo = lo[idx].copy()
    new_hi = hi[idx].copy()
    new_hi[r_idx & first] = INF
    new_lo[r_idx & second] = -INF
    suffix = np.where(r_idx, np.where(first, "_lo", "_up"), "")
    return idx, new_lo, new_hi, suffix


def rows_as_written(mf, split_linear_ranges: bool) -> Rows:
    """The written rows of ``mf`` (see :class:`Rows`); quadratic and indicator rows with two
    finite bounds are always split in two (no reader takes a ranged one)."""
    n = mf.n_cols
    A = sp.csr_matrix(mf.A)
    blocks, los, his, kinds, srcs, bases, suffixes, raw = [], [], [], [], [], [], [], []

    def add(kind, mat, lo, hi, names, split):
        idx, lo2, hi2, suffix = _split(lo, hi, split)
        blocks.append(mat[idx] if suffix is not None else mat)
        los.append(lo2)
        his.append(hi2)
        kinds.append(np.full(idx.size, kind, dtype=np.int8))
        srcs.append(idx)
        bases.append(idx + len(raw))
        suffixes.append(np.full(idx.size, "") if suffix is None else suffix)
        nm = list(names) if names is not None else []
        raw.extend(nm[:len(lo)] + [None] * (len(lo) - len(nm)))

    add(0, A, mf.row_lb, mf.row_ub, mf.row_names, split_linear_ranges)
    if mf.qrows:
        K = len(mf.qrows)
        lens = [r.lin_idx.size for r in mf.qrows]
        QL = sp.csr_matrix((np.concatenate([np.asarray(r.lin_val, float) for r in mf.qrows]),
                            np.concatenate([np.asarray(r.lin_idx, np.int64) for r in mf.qrows]),
                            np.r_[0, np.cumsum(lens)]), shape=(K, n))
        add(1, QL, [r.lb for r in mf.qrows], [r.ub for r in mf.qrows], [r.name for r in mf.qrows], True)
    if mf.n_indicators:
        add(2, sp.csr_matrix(mf.ind_A), mf.ind_lb, mf.ind_ub, mf.ind_names, True)
    B = sp.vstack(blocks, format="csr") if len(blocks) > 1 else sp.csr_matrix(blocks[0])
    B.sum_duplicates()
    B.eliminate_zeros()
    kind = np.concatenate(kinds)
    src = np.concatenate(srcs)
    base = np.concatenate(bases)
    suffix = np.concatenate(suffixes)
    lo, hi = np.concatenate(los), np.concatenate(his)
    # a quadratic or indicator row without a finite bound constrains nothing: left out
    drop = (kind > 0) & (lo == -INF) & (hi == INF)
    if drop.any():
        keep = np.flatnonzero(~drop)
        B, kind, src, lo, hi = B[keep], kind[keep], src[keep], lo[keep], hi[keep]
        base, suffix = base[keep], suffix[keep]
    # names: every row's own name cleaned (the same in both formats), then the _lo / _up of a
    # split row appended, then collisions that creates resolved
    clean = clean_names(raw, "R", reserved=(OBJ_NAME,))
    names = [clean[b] + x for b, x in zip(base.tolist(), suffix.tolist())]
    if suffix.size and (suffix != "").any():
        names = clean_names(names, "R", reserved=(OBJ_NAME,))
    return Rows(B=B, lo=lo, hi=hi, kind=kind, src=src, names=names, obj_name=OBJ_NAME, base_names=clean)


def column_names(mf, reserved=()) -> list:
    return clean_names(mf.col_names, "C", reserved=reserved)


def sos_names(mf, rows) -> list:
    """SOS names: cleaned, unique, distinct from every row name."""
    return clean_names([s.name for s in mf.sos], "SOS", reserved=set(rows.base_names) | set(rows.names)
                       | {rows.obj_name})


def header_lines(comment: str, prefix: str) -> list:
    """The comment, one output line per line of text, non-ASCII replaced by ``?``."""
    if not comment:
        return []
    text = str(comment).encode("ascii", "replace").decode("ascii")
    return [f"{prefix} {line}".rstrip() for line in text.splitlines()]
