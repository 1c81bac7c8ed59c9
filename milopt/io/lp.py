r"""The CPLEX LP format writer.

What is written (see ``docs/file_format.md`` for the readers that take each part)::

    \ comment
    Minimize                                   (or Maximize)
     obj: + 1 x + 0 y + ... + [ 2 x^2 + 4 x * y ] / 2 + 5 Constant
    Subject To
     r1: + 1 x + 2 y <= 4
     r2_lo: + 1 x - 1 y >= -1                  (a ranged row: two rows)
     r2_up: + 1 x - 1 y <= 3
     q1: + 1 t + [ 1 x^2 + 1 x * y ] <= 2      (quadratic row: no ½)
     i1: z = 1 -> + 1 x + 1 y <= 3             (indicator row)
    Bounds
     x free | -inf <= x <= 4 | 1 <= x <= 4 | x >= 2 | x = 3
     Constant = 1
    Generals
     n1 n2
    Binaries
     z
    SOS
     s1: S1:: x:1 y:2
    End

* **Every column appears in the objective** in the form's order (``+ 0 x`` when its coefficient
  is zero): the readers number columns in the order they meet them and drop a column they never
  meet, so this keeps every column and its position.
* **The objective constant** :math:`c_0` is written as ``+ c0 Constant`` with a column
  ``Constant`` fixed to 1: Gurobi's reader turns exactly that into its objective constant, and
  the other readers see a fixed column of the same value (a bare number is read by Gurobi as a
  column named after the number).  Written only when :math:`c_0 \ne 0`.
* **Ranged rows** (:math:`-\infty < \ell < u < \infty`) become two rows ``name_lo``
  (:math:`\ge \ell`) and ``name_up`` (:math:`\le u`): no syntax for a ranged row is taken by all
  readers (``ℓ <= expr <= u`` is refused by CPLEX, Gurobi, SCIP and HiGHS).
* The objective's quadratic part ``[ ... ] / 2`` holds :math:`Q_{ii}` for ``x_i^2`` and
  :math:`2 Q_{ij}` for ``x_i * x_j`` (:math:`i<j`), i.e. it is :math:`\tfrac12 x^\top Q x`;
  a quadratic row's ``[ ... ]`` holds its terms as they are.  Squares are written ``x^2``
  without spaces (SCIP's reader refuses ``x ^ 2``).
* A linear row without a finite bound constrains nothing and is left out.
* Long expressions are broken after every 8 terms (CPLEX's reader limits line length).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from milopt.io._common import (as_bytes, assemble, check_form, column_kinds, column_names, header_lines, num,
                               num_field, num_strings, row_senses, rows_as_written, sos_names)

__all__ = ["lp_chunks"]

PER_LINE = 8
CONSTANT = "Constant"


def _terms(rowptr, cols, vals, colS, n_rows):
    """Linear terms ``+ v name`` of each row (rows given by ``rowptr``), a line break after
    every ``PER_LINE`` terms; returns the blob and the byte offset where each row starts/ends."""
    nnz = vals.size
    if nnz == 0:
        return b"", np.zeros(n_rows + 1, dtype=np.int64)
    vals = np.asarray(vals, float)
    sign = np.where(vals < 0, b" - ", b" + ").astype("S3")
    counts = np.diff(rowptr)
    pos = np.arange(nnz) - np.repeat(rowptr[:-1], counts)          # position within its row
    last = np.zeros(nnz, dtype=bool)
    last[rowptr[1:][counts > 0] - 1] = True
    brk = np.where(((pos % PER_LINE) == PER_LINE - 1) & ~last, b"\n ", b"").astype("S2")
    blob, ends = assemble([sign, num_field(np.abs(vals)), b" ", (colS, cols), brk], nnz)
    offs = np.r_[0, ends]
    return blob, offs[rowptr]


def _rhs_text(lo, hi) -> list:
    """`` <= u`` / `` >= l`` / `` = v`` of each row (:func:`~milopt.io._common.row_senses`; rows
    with two finite, different bounds are split before this point)."""
    typ, rhs, _ = row_senses(np.asarray(lo, float), np.asarray(hi, float))
    op = {b"E": " = ", b"G": " >= ", b"L": " <= "}
    return [f"{op[t]}{v}\n" for t, v in zip(typ.tolist(), num_strings(rhs))]


def num_strings_or_none(v):
    v = np.asarray(v, float)
    fin = np.isfinite(v)
    s = num_strings(np.where(fin, v, 0.0))
    return [x if f else None for x, f in zip(s, fin.tolist())]


def _wrap_names(names, indent=" "):
    lines = []
    for k in range(0, len(names), PER_LINE):
        lines.append(indent + " ".join(names[k:k + PER_LINE]))
    return lines


def _quad_bracket(ii, jj, vv, cols, scale_offdiag: float) -> str:
    """`` + [ v x^2 + w x * y ... ]`` for entries (ii ≤ jj) with values vv; off-diagonal values
    multiplied by ``scale_offdiag``."""
    vv = np.where(ii == jj, vv, vv * scale_offdiag)
    s = num_strings(np.abs(vv))
    parts = []
    for k, (i, j, v) in enumerate(zip(ii.tolist(), jj.tolist(), vv.tolist())):
        sign = "-" if v < 0 else "+"
        term = f"{s[k]} {cols[i]}^2" if i == j else f"{s[k]} {cols[i]} * {cols[j]}"
        if k and k % PER_LINE == 0:
            parts.append("\n ")
        parts.append(f" {sign} {term}")
    return " + [" + "".join(parts) + " ]"


def _bounds_sections(mf, cols, lb, ub, integ) -> list:
    """The ``Bounds`` (a line per column not at the default [0, inf) and not binary),
    ``Generals`` and ``Binaries`` sections (:func:`~milopt.io._common.column_kinds`, as the MPS
    writer reads the bounds)."""
    out = []
    # ---- bounds (:func:`~milopt.io._common.column_kinds`, as the MPS writer)
    k = column_kinds(lb, ub, integ)
    flo, fhi, fixed, binary = k.flo, k.fhi, k.fixed, k.binary
    lbs, ubs = num_strings_or_none(lb), num_strings_or_none(ub)
    line = {}
    for j in np.flatnonzero(fixed).tolist():
        line[j] = f" {cols[j]} = {lbs[j]}"
    for j in np.flatnonzero(k.free).tolist():
        line[j] = f" {cols[j]} free"
    for j in np.flatnonzero(~flo & fhi).tolist():
        line[j] = f" -inf <= {cols[j]} <= {ubs[j]}"
    for j in np.flatnonzero(flo & fhi & ~fixed & ~binary).tolist():
        line[j] = f" {lbs[j]} <= {cols[j]} <= {ubs[j]}"
    for j in np.flatnonzero(flo & ~fhi & (lb != 0)).tolist():
        line[j] = f" {cols[j]} >= {lbs[j]}"
    lines = [line[j] for j in sorted(line)]
    if mf.c0 != 0:
        lines.append(f" {CONSTANT} = 1")
    if lines:
        out.append(("Bounds\n" + "\n".join(lines) + "\n").encode("ascii"))
    gen = [cols[j] for j in np.flatnonzero(integ & ~binary).tolist()]
    if gen:
        out.append(("Generals\n" + "\n".join(_wrap_names(gen)) + "\n").encode("ascii"))
    bins = [cols[j] for j in np.flatnonzero(binary).tolist()]
    if bins:
        out.append(("Binaries\n" + "\n".join(_wrap_names(bins)) + "\n").encode("ascii"))
    return out


def _rows_section(mf, rows, cols, colS) -> bytes:
    """The rows of ``Subject To``: linear, quadratic (terms in brackets), indicator
    (``z = v ->``) rows, free linear rows left out; an empty row gets a ``0`` term."""
    n = mf.n_cols
    # ---- rows: linear, quadratic, indicator (free linear rows left out)
    keep = np.flatnonzero(np.isfinite(rows.lo) | np.isfinite(rows.hi))
    B = sp.csr_matrix(rows.B)[keep]
    B.sort_indices()
    m = keep.size
    blob, offs = _terms(B.indptr, B.indices, B.data, colS, m)
    tails = _rhs_text(rows.lo[keep], rows.hi[keep])
    kind = rows.kind[keep]
    src = rows.src[keep]
    zb = np.asarray(mf.ind_binary, np.int64)
    act = np.asarray(mf.ind_active, np.int64)
    pieces = []
    for r in range(m):
        k = int(kind[r])
        name = rows.names[int(keep[r])]
        if k == 2:
            s = int(src[r])
            pieces.append(f" {name}: {cols[zb[s]]} = {int(act[s])} ->".encode("ascii"))
        else:
            pieces.append(f" {name}:".encode("ascii"))
        if offs[r] == offs[r + 1] and not (k == 1 and mf.qrows[int(src[r])].qv.size):
            pieces.append(f" 0 {cols[0]}".encode("ascii"))   # an empty row still needs a term
        pieces.append(blob[offs[r]:offs[r + 1]])
        if k == 1:
            q = mf.qrows[int(src[r])]
            qi, qj = np.asarray(q.qi, np.int64), np.asarray(q.qj, np.int64)
            P = sp.coo_matrix((np.asarray(q.qv, float), (np.minimum(qi, qj), np.maximum(qi, qj))),
                              shape=(n, n)).tocsr()
            P.sum_duplicates()
            P.eliminate_zeros()
            P.sort_indices()
            if P.nnz:
                ii = np.repeat(np.arange(n), np.diff(P.indptr))
                pieces.append(("\n " + _quad_bracket(ii, P.indices, P.data, cols, 1.0)).encode("ascii"))
        pieces.append(tails[r].encode("ascii"))
    return b"".join(pieces)


def lp_chunks(mf) -> list:
    """The LP file of ``mf`` as a list of ``bytes`` chunks (see the module docstring)."""
    check_form(mf)
    n = mf.n_cols
    cols = column_names(mf)
    rows = rows_as_written(mf, split_linear_ranges=True)
    colS = as_bytes(cols)
    lb = np.asarray(mf.col_lb, float)
    ub = np.asarray(mf.col_ub, float)
    integ = np.asarray(mf.integrality, dtype=bool)
    c = np.asarray(mf.c, float)
    out = []
    head = header_lines(mf.comment, "\\")
    head.append("Maximize" if mf.sense == -1 else "Minimize")
    out.append(("\n".join(head) + "\n").encode("ascii"))

    # ---- objective: every column, in order
    blob, offs = _terms(np.array([0, n]), np.arange(n), c, colS, 1)
    out.append(f" {rows.obj_name}:".encode("ascii"))
    out.append(blob)
    if mf.has_quadratic_objective():
        U = sp.triu(sp.coo_matrix(mf.Q), format="csr")
        U.sum_duplicates()
        U.eliminate_zeros()
        U.sort_indices()
        ii = np.repeat(np.arange(n), np.diff(U.indptr))
        out.append(("\n" + _quad_bracket(ii, U.indices, U.data, cols, 2.0) + " / 2").encode("ascii"))
    if mf.c0 != 0:
        c0 = float(mf.c0)
        out.append(f"\n {'-' if c0 < 0 else '+'} {num(abs(c0))} {CONSTANT}".encode("ascii"))
    out.append(b"\nSubject To\n")

    out.append(_rows_section(mf, rows, cols, colS))

    out += _bounds_sections(mf, cols, lb, ub, integ)

    # ---- SOS
    if mf.sos:
        lines = ["SOS"]
        for s, sn in zip(mf.sos, sos_names(mf, rows)):
            idx = np.asarray(s.idx, np.int64)
            w = s.weights if s.weights is not None and np.size(s.weights) else np.arange(1, idx.size + 1)
            members = [f"{cols[j]}:{x}" for j, x in zip(idx.tolist(), num_strings(w))]
            body = "\n ".join(" ".join(members[k:k + PER_LINE]) for k in range(0, len(members), PER_LINE))
            lines.append(f" {sn}: S{int(s.level)}:: {body}")
        out.append(("\n".join(lines) + "\n").encode("ascii"))
    out.append(b"End\n")
    return out
