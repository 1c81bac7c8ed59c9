r"""Names that every ``.mps`` and ``.lp`` reader accepts.

A model's raw names (Pyomo's ``w[3]``, ``margin[12]``, ``x[1,2]``, or anything a user typed)
are mapped to names that are legal in both file formats, unique, deterministic and still
readable.  The rule, applied name by name in order:

1. ``[`` becomes ``(`` and ``]`` becomes ``)`` (``w[3]`` → ``w(3)``, ``x[1,2]`` → ``x(1,2)``);
2. every character outside ``A-Z a-z 0-9 _ ( ) , .`` becomes ``_`` (spaces, ``:``, ``+``,
   ``*``, ``^``, ``<``, ``=``, non-ASCII letters ...): these delimit tokens in the LP format
   or end a name in free MPS;
3. a name that the LP format would read as something else gets a leading ``_``: one that
   starts with anything but a letter or ``_`` (a digit, ``.``, ``(``, ``,``), one that starts
   with ``e`` / ``E`` followed by a digit, ``+``, ``-`` or ``.`` (read as an exponent), one
   equal (in any case) to a keyword of either format (``inf``, ``infinity``, ``free``, ``end``,
   ``st``, ``bounds``, ``binary``, ``sos``, ``constant``, ``obj`` ...);
4. an empty (or missing) name becomes ``C<j>`` for column ``j`` or ``R<i>`` for row ``i``;
5. a name longer than 255 characters (the limit of CPLEX's and Gurobi's readers) is cut;
6. collisions: the first holder of a name keeps it; each later one becomes ``name_k`` with the
   smallest ``k = 1, 2, ...`` that no other name (cleaned or assigned) holds.

Columns and rows are two separate name spaces (both formats keep them apart); the objective's
row name and the names of quadratic, indicator and SOS rows share the rows' space.
"""
from __future__ import annotations

import re

__all__ = ["clean_names", "MAX_NAME"]

#: longest name written (the limit of CPLEX's and Gurobi's readers); longer names are cut
MAX_NAME = 255

_LEGAL = re.compile(r"[A-Za-z0-9_(),.]+\Z")
_ILLEGAL_CHAR = re.compile(r"[^A-Za-z0-9_(),.]")
_BAD_START = re.compile(r"[^A-Za-z_]|[eE]([0-9+\-.]|\Z)")
_KEYWORDS = frozenset("""
    inf infinity infinite free end st s.t. st. subject such to that minimize minimise min minimum
    maximize maximise max maximum bound bounds general generals gen integer integers int binary
    binaries bin semi semis semi-continuous semicontinuous sos sos1 sos2 s1 s2 lazy user cuts
    constraints constraint obj objective rhs ranges range columns rows name endata marker
    quadobj qmatrix qcmatrix indicators pwl constant
""".split())


def _clean(name: str) -> str:
    if _LEGAL.match(name) and not _BAD_START.match(name) and name.lower() not in _KEYWORDS \
            and len(name) <= MAX_NAME:
        return name
    s = _ILLEGAL_CHAR.sub("_", name.replace("[", "(").replace("]", ")"))
    if s and (_BAD_START.match(s) or s.lower() in _KEYWORDS):
        s = "_" + s
    return s[:MAX_NAME]


def clean_names(raw, default: str, reserved=()) -> list:
    """Legal, unique names for ``raw`` (the rule is in this module's docstring).

    Parameters
    ----------
    raw : sequence of str or None
        The model's names; ``None`` or a short sequence means default names for the rest.
    default : str
        Prefix of a default name (``"C"`` for columns, ``"R"`` for rows): ``C0, C1, ...``.
    reserved : iterable of str
        Names already taken in this name space (e.g. the objective row's name); they are
        never handed out.

    Returns
    -------
    list of str
        One name per entry of ``raw``, each matching ``[A-Za-z_][A-Za-z0-9_(),.]*``.
    """
    raw = list(raw) if raw is not None else []
    out = [_clean(str(r)) if r is not None and str(r) != "" else "" for r in raw]
    out = [s if s else f"{default}{k}" for k, s in enumerate(out)]
    taken = set(reserved)
    seen = set()
    clash = []
    for k, s in enumerate(out):
        if s in seen or s in taken:
            clash.append(k)
        else:
            seen.add(s)
    if not clash:
        return out
    taken |= seen
    for k in clash:
        base = out[k][:MAX_NAME - 8]
        i = 1
        while f"{base}_{i}" in taken:
            i += 1
        out[k] = f"{base}_{i}"
        taken.add(out[k])
    return out
