r"""The free (extended, CPLEX-style) MPS writer.

Sections, in the order written (see ``docs/file_format.md`` for the readers that take each):

``NAME``, ``OBJSENSE`` (``MAX`` on the next line, only when maximising), ``ROWS`` (``N`` for the
objective ``obj``; ``E`` / ``L`` / ``G``; ``N`` for a linear row without a finite bound),
``COLUMNS`` (every column, in the form's order; a column with no objective coefficient and no
matrix entry gets an explicit ``obj 0`` entry so that every reader declares it; integer columns
between ``MARKER 'MARKER' 'INTORG'`` / ``'INTEND'`` lines), ``RHS`` (the objective constant
:math:`c_0` as the right-hand side :math:`-c_0` of the objective row: the readers take
objective = :math:`c^\top x - \text{rhs}`), ``RANGES`` (a linear row with two finite bounds
:math:`\ell < u`: a ``G`` row with right-hand side :math:`\ell` and range :math:`R`, read as
:math:`[\ell, \ell + R]`, or an ``L`` row with right-hand side :math:`u`, read as
:math:`[u - R, u]`; :math:`R` is :math:`u - \ell` rounded, or a neighbouring double, chosen so
that the far bound computes back to exactly :math:`u` (or :math:`\ell`)), ``BOUNDS`` (``FR``,
``MI``, ``PL``, ``BV``, ``LI`` / ``UI``, ``FX``, ``LO`` / ``UP``; an upper bound is written
before a lower bound so that the old rule "a negative upper bound with no lower bound makes
the lower bound :math:`-\infty`" can never fire), ``SOS`` (a set line `` S1 name`` or `` S2 name``, then one
``column weight`` line per member), ``QUADOBJ`` (the lower triangle of the objective Hessian :math:`Q`, objective
:math:`c^\top x + \tfrac12 x^\top Q x`), ``QCMATRIX`` (one per quadratic row: the symmetric
matrix :math:`P` with :math:`x^\top P x` equal to the row's quadratic part, no ½, each
off-diagonal entry written twice, the diagonal once), ``INDICATORS`` (``IF row column value``),
``ENDATA``.

A quadratic or indicator row with two finite bounds is written as two rows ``name_lo``
(:math:`\ge \ell`) and ``name_up`` (:math:`\le u`): no reader takes a ranged one.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from milopt.io._common import (as_bytes, assemble, check_form, column_kinds, column_names, header_lines, row_senses,
                               num, num_bytes, num_field, num_strings, rows_as_written,
                               sos_names)

__all__ = ["mps_chunks"]

_MARK_ORG = b"    MARKER 'MARKER' 'INTORG'\n"
_MARK_END = b"    MARKER 'MARKER' 'INTEND'\n"
# up to this many runs of integer columns, COLUMNS is assembled run by run
_MAX_RUNS = 64


def _bounds(lb, ub, integ, colS):
    """The BOUNDS section as bytes (vectorised over columns)."""
    k = column_kinds(lb, ub, integ)
    flo, fhi, fixed, binary, free = k.flo, k.fhi, k.fixed, k.binary, k.free
    rest = ~fixed & ~binary & ~free
    recs = []   # (column indices, order within the column, type, values or None)
    j = np.flatnonzero(fixed)
    recs.append((j, 0, b"FX", lb[j]))
    j = np.flatnonzero(binary)
    recs.append((j, 0, b"BV", None))
    j = np.flatnonzero(free)
    recs.append((j, 0, b"FR", None))
    for is_int, up, lo_t in ((False, b"UP", b"LO"), (True, b"UI", b"LI")):
        kind = rest & (integ == is_int)
        j = np.flatnonzero(kind & ~flo & fhi)                       # (-inf, u]
        recs.append((j, 0, b"MI", None))
        recs.append((j, 1, up, ub[j]))
        j = np.flatnonzero(kind & flo & fhi)                        # [l, u]
        recs.append((j, 0, up, ub[j]))
        jl = j[(lb[j] != 0) | (ub[j] < 0)]
        recs.append((jl, 1, lo_t, lb[jl]))
        j = np.flatnonzero(kind & flo & ~fhi)                       # [l, inf)
        jl = j[lb[j] != 0]
        recs.append((jl, 0, lo_t, lb[jl]))
        if is_int:   # explicit +inf: some readers make an unbounded integer column binary
            recs.append((j, 1, b"PL", None))
    recs = [r for r in recs if r[0].size]
    if not recs:
        return b""
    cols = np.concatenate([r[0] for r in recs])
    order = np.concatenate([np.full(r[0].size, r[1]) for r in recs])
    types = np.concatenate([np.full(r[0].size, r[2], dtype="S2") for r in recs])
    vals = np.concatenate([num_bytes(r[3]) if r[3] is not None else np.zeros(r[0].size, dtype="S1")
                           for r in recs])
    vals = vals.astype(f"S{max(vals.dtype.itemsize, 1)}")
    sep = np.where(vals != b"", b" ", b"").astype("S1")
    perm = np.lexsort((order, cols))
    blob, _ = assemble([b" ", types[perm], b" BND ", colS[cols[perm]], sep[perm], vals[perm], b"\n"],
                       perm.size)
    return blob


def mps_chunks(mf, name: str = "milopt") -> list:
    """The MPS file of ``mf`` as a list of ``bytes`` chunks (see the module docstring)."""
    check_form(mf)
    cols = column_names(mf)
    rows = rows_as_written(mf, split_linear_ranges=False)
    colS = as_bytes(cols)
    rowS = as_bytes([rows.obj_name] + rows.names)
    lb = np.asarray(mf.col_lb, float)
    ub = np.asarray(mf.col_ub, float)
    integ = np.asarray(mf.integrality, dtype=bool)
    c = np.asarray(mf.c, float)
    out = []
    head = header_lines(mf.comment, "*")
    head.append(f"NAME {name}")
    if mf.sense == -1:
        head += ["OBJSENSE", "    MAX"]
    head += ["ROWS", f" N {rows.obj_name}"]
    out.append(("\n".join(head) + "\n").encode("ascii"))

    typ, rhs, rng = row_senses(rows.lo, rows.hi)
    m = typ.size
    blob, _ = assemble([b" ", typ, b" ", rowS[1:], b"\n"], m)
    out.append(blob)

    out += _columns(rows.B, c, integ, colS, rowS)

    # ---- RHS and RANGES
    out.append(b"RHS\n")
    if mf.c0 != 0:
        out.append(f"    RHS {rows.obj_name} {num(-float(mf.c0))}\n".encode("ascii"))
    k = np.flatnonzero((typ != b"N") & (rhs != 0))
    blob, _ = assemble([b"    RHS ", rowS[k + 1], b" ", num_bytes(rhs[k]), b"\n"], k.size)
    out.append(blob)
    k = np.flatnonzero(~np.isnan(rng))
    if k.size:
        out.append(b"RANGES\n")
        blob, _ = assemble([b"    RNG ", rowS[k + 1], b" ", num_bytes(rng[k]), b"\n"], k.size)
        out.append(blob)

    # ---- BOUNDS
    bounds = _bounds(lb, ub, integ, colS)
    if bounds:
        out += [b"BOUNDS\n", bounds]

    # ---- SOS
    if mf.sos:
        lines = ["SOS"]
        for s, sn in zip(mf.sos, sos_names(mf, rows)):
            lines.append(f" S{int(s.level)} {sn}")
            idx = np.asarray(s.idx, dtype=np.int64)
            for j, w in zip(idx.tolist(), num_strings_of(s.weights, idx.size)):
                lines.append(f"    {cols[j]} {w}")
        out.append(("\n".join(lines) + "\n").encode("ascii"))

    out += _quadratic(mf, rows, colS)

    # ---- INDICATORS
    k = np.flatnonzero(rows.kind == 2)
    if k.size:
        src = rows.src[k]
        zb = np.asarray(mf.ind_binary, np.int64)[src]
        act = np.asarray(mf.ind_active, np.int64)[src]
        out.append(b"INDICATORS\n")
        blob, _ = assemble([b" IF ", rowS[k + 1], b" ", colS[zb], b" ", np.where(act == 1, b"1", b"0").astype("S1"),
                            b"\n"], k.size)
        out.append(blob)
    out.append(b"ENDATA\n")
    return out


def _columns(B, c, integ, colS, rowS) -> list:
    """The COLUMNS section: per column its objective entry first (an explicit 0 for a column
    with no other entry), then its rows; runs of integer columns between ``MARKER`` lines."""
    # ---- COLUMNS: objective entry first (explicit 0 for a column with no other entry)
    n = c.size
    out = [b"COLUMNS\n"]
    Bc = sp.csc_matrix(B)
    Bc.sort_indices()
    counts = np.diff(Bc.indptr)
    has_obj = (c != 0) | (counts == 0)
    jo = np.flatnonzero(has_obj)
    at = Bc.indptr[:-1][jo]
    ent_row = np.insert(Bc.indices.astype(np.int64) + 1, at, 0)
    ent_val = np.insert(Bc.data.astype(float), at, c[jo])
    per_col = counts + has_obj
    ent_col = np.repeat(np.arange(n), per_col)
    fields = [b"    ", (colS, ent_col), b" ", (rowS, ent_row), b" ", num_field(ent_val), b"\n"]
    first = np.r_[0, np.cumsum(per_col)]                             # entry index of each column
    edges = np.diff(np.r_[0, integ.astype(np.int8), 0])
    run_s = first[np.flatnonzero(edges == 1)]                        # entry where a run starts
    run_e = first[np.flatnonzero(edges == -1)]                       # entry after a run
    if run_s.size <= _MAX_RUNS:
        # few runs of integer columns: assemble the stretches between markers one by one
        cuts = np.r_[0, np.ravel(np.column_stack([run_s, run_e])), ent_val.size].tolist()
        for k in range(len(cuts) - 1):
            if k:
                out.append(_MARK_ORG if k % 2 else _MARK_END)
            lo_, hi_ = cuts[k], cuts[k + 1]
            if hi_ > lo_:
                part = [f if isinstance(f, bytes) else
                        ((f[0], f[1][lo_:hi_]) if isinstance(f, tuple) else f[lo_:hi_]) for f in fields]
                out.append(assemble(part, hi_ - lo_, ends=False)[0])
    else:
        blob, ends = assemble(fields, ent_val.size)
        starts = np.r_[0, ends]                                      # byte offset of each entry
        prev = 0
        for s0, e0 in zip(starts[run_s].tolist(), starts[run_e].tolist()):
            out += [blob[prev:s0], _MARK_ORG, blob[s0:e0], _MARK_END]
            prev = e0
        out.append(blob[prev:])
    return out


def _quadratic(mf, rows, colS) -> list:
    """The QUADOBJ section (lower triangle of Q, column by column) and one QCMATRIX per written
    quadratic row (symmetric, no 1/2)."""
    n = mf.n_cols
    out = []
    # ---- QUADOBJ: lower triangle, column by column
    if mf.has_quadratic_objective():
        L = sp.tril(sp.csc_matrix(mf.Q), format="csc")
        L.sum_duplicates()
        L.eliminate_zeros()
        L.sort_indices()
        qc = np.repeat(np.arange(n), np.diff(L.indptr))
        out.append(b"QUADOBJ\n")
        blob, _ = assemble([b"    ", colS[qc], b" ", colS[L.indices], b" ", num_bytes(L.data), b"\n"],
                           L.nnz)
        out.append(blob)

    # ---- QCMATRIX: one per written quadratic row, symmetric, no 1/2
    for w in np.flatnonzero(rows.kind == 1).tolist():
        r = mf.qrows[int(rows.src[w])]
        qi, qj = np.asarray(r.qi, np.int64), np.asarray(r.qj, np.int64)
        qv = np.asarray(r.qv, float)
        off = qi != qj
        ii = np.r_[qi, qj[off]]
        jj = np.r_[qj, qi[off]]
        vv = np.r_[np.where(off, qv / 2, qv), qv[off] / 2]
        P = sp.csc_matrix((vv, (ii, jj)), shape=(n, n))
        P.sum_duplicates()
        P.eliminate_zeros()
        P.sort_indices()
        pc = np.repeat(np.arange(n), np.diff(P.indptr))
        out.append(f"QCMATRIX {rows.names[w]}\n".encode("ascii"))
        blob, _ = assemble([b"    ", colS[pc], b" ", colS[P.indices], b" ", num_bytes(P.data), b"\n"],
                           P.nnz)
        out.append(blob)
    return out


def num_strings_of(w, size):
    """SOS weights as strings (``1, 2, ...`` when none are given)."""
    if w is None or np.size(w) == 0:
        w = np.arange(1, size + 1, dtype=float)
    return num_strings(w)
