r"""MI-SVM as a big-M mixed-integer quadratic program (Kent & Yu, eq. 5).

Kent, S. and Yu, M. "Non-convex SVM for cancer diagnosis based on morphologic features of
tumor microenvironment" (mi-SMM / MI-SVM mixed-integer formulation; R package mildsvm).  The MI-SVM
problem of Andrews, Tsochantaridis & Hofmann (NIPS 2002) asks for one *witness* per positive
bag; the binary ζ selects which instances of a positive bag may violate the margin.

.. math::

    \min_{w, b, \xi, \zeta}\; & \tfrac12 \lVert w \rVert_2^2 + \sum_I C_I \xi_I \\
    \text{s.t.}\; & -(w^\top z_i + b) \ge 1 - \xi_I, && i \in I,\ Y_I = -1, \\
    & w^\top z_i + b \ge 1 - \xi_I - L_{I,i}\,\zeta_{I,i}, && i \in I,\ Y_I = +1, \\
    & \textstyle\sum_{i \in I} \zeta_{I,i} \le |I| - 1, && Y_I = +1, \\
    & \xi_I \ge 0,\ \zeta_{I,i} \in \{0, 1\}.

One slack per bag.  Class weights (``class_weight="kent-yu"``, the default, as mildsvm):
:math:`C_I = C` for positive bags and :math:`C_I = C\,n^+_{\text{bags}} / n^-_{\text{inst}}`
for negative bags (weights inversely proportional to the number of positive bags and of
negative instances); ``"balanced"`` uses inverse bag counts
(:math:`C_I = C\,B / (2 B_{Y_I})`); ``None`` uses :math:`C_I = C`.

**A provably valid big-M** (see docs/misvm_bigm.md; the bounds are computed by the Pyomo-free
:mod:`milopt.mil.bigm`).  Any feasible point bounds the
optimum :math:`F^*`; the trivial points :math:`w = 0, b \in \{-1, 0, 1\}` give
:math:`F_0 = \min(\sum_I C_I,\ 2\sum_{Y_I=+1} C_I,\ 2\sum_{Y_I=-1} C_I)` (a better incumbent
value may be passed as ``upper_bound``).  At an optimum :math:`\tfrac12\lVert w\rVert^2 \le F_0`,
so :math:`\lVert w \rVert \le W = \sqrt{2 F_0}`.  In a positive bag with witness *j*,
:math:`w^\top z_j + b \ge 1 - \xi_I`, hence for every *i* in the bag
:math:`w^\top z_i + b \ge 1 - \xi_I - W \lVert z_i - z_j \rVert`, and with the bag centroid
:math:`c_I`, :math:`\lVert z_i - z_j\rVert \le \lVert z_i - c_I\rVert + \max_{k\in I}\lVert z_k - c_I\rVert`.
So :math:`L_{I,i} = W(\lVert z_i - c_I\rVert + \max_{k \in I}\lVert z_k - c_I\rVert)` never cuts
off an optimal solution.  mildsvm's choice :math:`L = 100 \sum_{\text{columns}} \overline{|x|}`
(``big_m="mildsvm"``) carries no such guarantee.

**Variants** (docs/misvm_bigm_variants.md).

* ``norm="l1"``: the regulariser :math:`\lVert w\rVert_1` written with :math:`v \ge w,\ v \ge -w`
  (objective :math:`e^\top v + \sum_I C_I \xi_I`): a MILP, solvable by HiGHS as well as SCIP.
  Valid big-M: the same trivial points bound :math:`\lVert w\rVert_1 \le F_0`, and by Hölder
  :math:`|w^\top (z_i - z_j)| \le \lVert w\rVert_1 \lVert z_i - z_j\rVert_\infty`, so
  :math:`L_{I,i} = F_0 \max_{j \in I}\lVert z_i - z_j\rVert_\infty` (computed exactly per
  feature from the bag's minimum and maximum) is valid.

**Rounded outward** (so that a model's numbers, and the bytes of its ``.mps``, do not depend on
the last bits of numpy's reductions or BLAS): every computed bound is rounded *outward* to
:data:`DIGITS` significant decimal digits by :func:`round_outward` -- a big-M, an upper bound on
:math:`\lVert w\rVert`, :math:`b` or :math:`\xi_I` up, a lower bound on :math:`b` down -- so a
valid bound stays valid and loosens by less than :math:`10^{-7}` relative (:func:`stable_bounds`).
A ``big_m`` given as a number is used as given.

**Strengthening** (``strengthen=``, docs/misvm_bigm.md "Strengthening and warm start"): from an
incumbent objective F (``warm_start`` computes one: :func:`~milopt.mil.bigm.incumbent`), every solution with
objective ≤ F has :math:`\lVert w\rVert \le T = \sqrt{2F}`, :math:`\xi_I \le F/C_I`, b between the
bounds obtained by averaging the margin rows of the negative bags and of the positive bags'
witnesses, and scores :math:`w^\top z_i + b \ge lo_i`; hence the smaller valid big-M
:math:`L_{I,i} = \min(T D_i, 1 - lo_i)` with the exact bag diameter :math:`D_i`
(:func:`~milopt.mil.bigm.incumbent_bounds`).  ``reduce`` drops instances inside the convex hull of
the rest of their bag (:func:`~milopt.mil.bigm.hull_interior`): their score never exceeds the
bag's maximum.

* ``disjunction="sos1"``: the margin row of a positive-bag instance gets its own slack
  :math:`s_i \ge 0` instead of :math:`L_{I,i}\zeta_{I,i}`, with :math:`u_i = 1 - \zeta_{I,i}` and a
  special ordered set of type 1 over :math:`(s_i, u_i)` (at most one nonzero): a witness
  (:math:`\zeta = 0`) has :math:`s_i = 0`.  No big-M at all; needs a solver with SOS support
  (SCIP; HiGHS has none and is refused by the driver).
* ``disjunction="indicator"``: :math:`\zeta_{I,i} = 0 \Rightarrow w^\top z_i + b + \xi_I \ge 1`
  (no big-M).  Pyomo 6.10 has no indicator-constraint component and its ``highs`` /
  ``scip_direct`` interfaces cannot pass one, so the rows of positive-bag instances are built
  in the *deactivated* component ``margin_ind`` and declared in the model's
  :class:`~milopt.models.info.ModelInfo` (``indicators``);
  the model has the feature ``INDICATOR`` and only the backend ``scip-native``
  (``milopt/solvers/scip_native.py``: PySCIPOpt's ``addConsIndicator``) accepts it.  Export
  to ``.mps``/``.lp`` goes through SCIP's writers, which keep the indicator constraints.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.mil.bigm import (hull_interior, incumbent, incumbent_bounds, known_bound, mildsvm_big_m,
                             start_slacks, valid_big_m)
from milopt.models._linear import add_linear_rows, var_list
from milopt.models.info import MILModel
from milopt.models.info import info as model_info
from milopt.numerics import bag_costs, misvm_objective
from milopt.params import FALSE, TRUE, Bool, Choice, Float, ParamSet, Str, parse_bool
from milopt.segments import segment_argmax

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    C=Float(1.0, "misclassification cost", gt=0),
    class_weight=Choice("kent-yu", ("kent-yu", "balanced", "none"), "kent-yu | balanced | none"),
    big_m=Float("valid", "valid (provable, per instance) | mildsvm (100 x sum of column mean |x|) | a number",
                gt=0, choices=("valid", "mildsvm")),
    norm=Choice("l2", ("l2", "l1"), "l2 (1/2 ||w||^2: MIQP) | l1 (||w||_1 through v >= +-w: MILP)"),
    disjunction=Choice("bigm", ("bigm", "sos1", "indicator"), "bigm (L zeta) | sos1 (SOS1 over slack s_i and "
                       "1 - zeta_i; SCIP) | indicator (zeta_i = 0 => margin row; solver scip-native)"),
    warm_start=Bool(True, "start from a cheap incumbent (linear SVM on instances, improved by the MI-SVM "
                          "alternation); its objective F tightens the big-M and the strengthening "
                          "(default of milopt solve; false: cold start)"),
    strengthen=Str("none", "none | all | any of bounds,reduce joined by ',' or '+': incumbent bounds on "
                           "w, b, xi and the big-M they imply; removal of instances inside their bag's convex hull"),
    branch_priority=Choice("none", ("none", "bagsize"), "none | bagsize (SCIP branching priorities, smaller "
                           "positive bags and incumbent witnesses first; honoured by scip-native)"),
    upper_bound=Float(None, "objective of a known feasible point (tightens the big-M and the bounds)",
                      finite=False),
)

STRENGTHEN = ("bounds", "reduce")
PRIORITIES = ("none", "bagsize")

NORMS = ("l2", "l1")
DISJUNCTIONS = ("bigm", "sos1", "indicator")


def problem_class(norm: str = "l2", disjunction: str = "bigm", **unused):
    """(problem class, features) of the model ``build`` returns for these parameters (known
    before building, so that the CLI refuses a solver early): MIQP / MILP, plus SOS for sos1."""
    cls = "MILP" if str(norm).lower() == "l1" else "MIQP"
    dj = str(disjunction).lower()
    return cls, (("SOS",) if dj == "sos1" else (("INDICATOR",) if dj == "indicator" else ()))


# ----------------------------------------------------------------------------- byte-stable numbers
#: significant decimal digits kept by :func:`round_outward`
DIGITS = 8


def round_outward(x, up: bool = True, digits: int = DIGITS):
    """Round to ``digits`` significant decimal digits, towards +inf (``up``) or -inf.

    The result is the nearest double to the smallest (largest) ``digits``-digit decimal not below
    (above) ``x``: Python's correctly rounded float formatting and parsing make it the same on
    every platform and for every numpy version, so last-bit differences of the computation
    that produced ``x`` vanish unless ``x`` lies within those bits of a decimal.  Non-finite
    values pass through.  ``x``: a float or an array (returned as a float / float array).
    """
    arr = np.asarray(x, dtype=float)
    flat = arr.ravel()
    out = np.empty_like(flat)
    for i, v in enumerate(flat.tolist()):
        if not np.isfinite(v) or v == 0.0:
            out[i] = v
            continue
        mant, _, exp = f"{v:.{digits - 1}e}".partition("e")
        r = float(f"{mant}e{exp}")
        if (r < v) if up else (r > v):    # one unit of the last kept digit outward
            r = float(f"{int(mant.replace('.', '')) + (1 if up else -1)}e{int(exp) - digits + 1}")
        out[i] = r
    return float(out[0]) if arr.ndim == 0 else out.reshape(arr.shape)


def stable_bounds(bnd: dict | None) -> dict | None:
    """The bounds of :func:`~milopt.mil.bigm.incumbent_bounds` rounded outward (:func:`round_outward`):
    ``W``, ``b_hi``, ``xi_hi``, ``L``, ``F`` up; ``b_lo``, ``lo`` down.  Each stays valid."""
    if bnd is None:
        return None
    out = dict(bnd)
    for k in ("W", "b_hi", "xi_hi", "L", "F"):
        out[k] = round_outward(bnd[k], up=True)
    for k in ("b_lo", "lo"):
        out[k] = round_outward(bnd[k], up=False)
    return out


# ----------------------------------------------------------------------------- strengthening
def parse_strengthen(value) -> frozenset:
    """``strengthen`` parameter -> set of options (``none``, ``all``, or names joined by ',' / '+')."""
    low = str(value).strip().lower()
    if value is None or low in ("", "none"):
        return frozenset()
    if low == "all":
        return frozenset(STRENGTHEN)
    if low in TRUE + FALSE or isinstance(value, bool):
        return frozenset(STRENGTHEN) if parse_bool("strengthen", value) else frozenset()
    parts = [p.strip().lower() for p in str(value).replace("+", ",").split(",") if p.strip()]
    bad = [p for p in parts if p not in STRENGTHEN]
    if bad:
        raise InvalidParameterError(f"strengthen: unknown option(s) {bad}; expected none, all, or any of "
                                    f"{', '.join(STRENGTHEN)} joined by ',' (e.g. strengthen=bounds,reduce)")
    return frozenset(parts)


# ----------------------------------------------------------------------------- the build
@dataclass
class BuildPlan:
    """The numbers of a build, computed without Pyomo (:func:`plan`).

    ``costs`` C_I (B,); ``incumbent`` (dict of :func:`~milopt.mil.bigm.incumbent`) or None;
    ``F`` the best known objective; ``removed`` instances dropped by ``reduce`` (n,);
    ``bounds`` of :func:`~milopt.mil.bigm.incumbent_bounds` or None; ``big_m`` L (n,) or None
    (sos1, indicator); ``sizes`` kept instances per bag (B,); ``zrows`` the instances with a ζ
    (kept instances of positive bags with at least two kept instances)."""

    norm: str
    disjunction: str
    strengthen: frozenset
    costs: np.ndarray
    incumbent: dict | None
    F: float
    removed: np.ndarray
    bounds: dict | None
    big_m: np.ndarray | None
    sizes: np.ndarray
    zrows: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        return ~self.removed


def _options(norm, disjunction, warm_start, strengthen, branch_priority, upper_bound):
    """Normalised options (one clear error each)."""
    opts = parse_strengthen(strengthen)
    branch_priority = str(branch_priority).lower()
    if branch_priority not in PRIORITIES:
        raise InvalidParameterError(f"branch_priority: expected one of {', '.join(PRIORITIES)}, got {branch_priority!r}")
    warm_start = parse_bool("warm_start", warm_start)
    if upper_bound is not None:
        try:
            upper_bound = float(upper_bound)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"upper_bound: expected a number, got {upper_bound!r}") from None
    norm = str(norm).lower()
    disjunction = str(disjunction).lower()
    if norm not in NORMS:
        raise InvalidParameterError(f"norm: expected 'l2' or 'l1', got {norm!r}")
    if disjunction not in DISJUNCTIONS:
        raise InvalidParameterError(f"disjunction: expected 'bigm', 'sos1' or 'indicator', got {disjunction!r}")
    return norm, disjunction, warm_start, opts, branch_priority, upper_bound


def _big_m(bags: Bags, big_m, costs, F: float, norm: str, bounds) -> np.ndarray:
    """L per instance by the ``big_m`` rule (module docstring)."""
    n = bags.n_instances
    if isinstance(big_m, str) and big_m == "valid":    # rounded up: still valid, and byte-stable
        return bounds["L"] if bounds is not None else round_outward(valid_big_m(bags, costs, F, norm=norm))
    if isinstance(big_m, str) and big_m == "mildsvm":
        return np.full(n, round_outward(mildsvm_big_m(bags)))
    try:
        L = np.full(n, float(big_m))
    except (TypeError, ValueError):
        raise InvalidParameterError(f"big_m: expected 'valid', 'mildsvm' or a number, got {big_m!r}") from None
    if not L[0] > 0:
        raise InvalidParameterError(f"big_m: must be positive, got {big_m!r}")
    return L


def plan(bags: Bags, C: float = 1.0, class_weight="kent-yu", big_m="valid", upper_bound: float | None = None,
         norm: str = "l2", disjunction: str = "bigm", warm_start: bool = False, strengthen="none") -> BuildPlan:
    """Everything :func:`build` computes before it creates a Pyomo component: costs, the incumbent
    and its objective F, the reduction, the bounds and the big-M (parameters as :func:`build`)."""
    norm, disjunction, warm_start, opts, _, upper_bound = _options(norm, disjunction, warm_start, strengthen,
                                                                  "none", upper_bound)
    if bags.n_classes > 2:
        raise InvalidParameterError("misvm-bigm: binary bag labels (0/1) are required")
    n = bags.n_instances
    costs = bag_costs(bags, C, class_weight)
    inc, F = known_bound(bags, costs, C, class_weight, norm, upper_bound, with_incumbent=warm_start)
    removed = hull_interior(bags) if "reduce" in opts else np.zeros(n, dtype=bool)
    kept = ~removed
    bnd = stable_bounds(incumbent_bounds(bags, costs, F, norm, mask=kept)) if "bounds" in opts else None
    sizes = np.add.reduceat(kept.astype(np.int64), bags.bag_ptr[:-1])
    L = _big_m(bags, big_m, costs, F, norm, bnd)
    has_zeta = (bags.y == 1)[bags.bag_index] & kept & (sizes[bags.bag_index] >= 2)
    return BuildPlan(norm=norm, disjunction=disjunction, strengthen=opts, costs=costs, incumbent=inc, F=float(F),
                     removed=removed, bounds=bnd, big_m=None if disjunction in ("sos1", "indicator") else L,
                     sizes=sizes, zrows=np.flatnonzero(has_zeta))


def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", big_m="valid", upper_bound: float | None = None,
          norm: str = "l2", disjunction: str = "bigm", warm_start: bool = False, strengthen="none",
          branch_priority: str = "none", **unused) -> MILModel:
    """Build the MI-SVM mixed-integer program for ``bags`` (binary labels).

    Parameters
    ----------
    bags : Bags
        Binary MIL data (labels 0/1).
    C : float
        Cost of a bag slack (before class weighting).
    class_weight : {'kent-yu', 'balanced', 'none'}
    big_m : 'valid' | 'mildsvm' | float
        Big-M rule: the provably valid per-instance bound, mildsvm's heuristic constant, or a
        user constant.  Ignored by ``disjunction='sos1'`` and ``'indicator'`` (no big-M).
    upper_bound : float, optional
        Objective of a known feasible point (for the chosen ``norm``); tightens the valid big-M.
    norm : {'l2', 'l1'}
        Regulariser ½‖w‖² (MIQP) or ‖w‖₁ (MILP, variables ``v`` and rows ``l1_pos``/``l1_neg``).
    disjunction : {'bigm', 'sos1', 'indicator'}
        How a non-witness instance is released from its margin row (module docstring).
    warm_start : bool
        Compute a cheap incumbent first (:func:`~milopt.mil.bigm.incumbent`): its objective F
        replaces the trivial bound in the valid big-M and in the strengthening, and its point is
        set as the model's starting values (``ModelInfo.start``; the runner hands it to the
        solver).  ``milopt solve`` defaults to true (``PARAMS``); the Python default is false.
    strengthen : 'none' | 'all' | 'bounds' | 'reduce' | 'bounds,reduce'
        ``bounds``: the variable bounds of :func:`~milopt.mil.bigm.incumbent_bounds` and its
        smaller big-M; ``reduce``: instances inside the convex hull of the other instances of
        their bag (:func:`~milopt.mil.bigm.hull_interior`, duplicates included) lose their row
        and ζ.  Both keep every optimal value (docs/misvm_bigm.md, "Strengthening").
    branch_priority : {'none', 'bagsize'}
        Declares SCIP branching priorities (``ModelInfo.branch_priority``, used by the
        ``scip-native`` backend; other backends ignore it): ζ of smaller positive bags first,
        and in each bag the incumbent's witness first.

    Returns
    -------
    MILModel
        Components ``w, b, xi, zeta, margin, witness, obj`` (+ ``v, l1_pos, l1_neg`` for l1,
        + ``s, u, u_def, sos`` for sos1, + the deactivated ``margin_ind`` for indicator);
        ``ModelInfo.problem_class`` MIQP/MILP (QP/LP without binaries), ``features``
        ``("SOS",)`` for sos1, ``("INDICATOR",)`` for indicator; ``meta`` documented in
        docs/misvm_bigm.md (``big_m``, ``costs``, ``upper_bound``, ``bounds``, ``removed``, ...).

    Raises
    ------
    InvalidParameterError
        Bad C, class_weight, big_m, norm, disjunction, non-binary labels, unknown keys.
    """
    if unused:
        raise InvalidParameterError(f"misvm-bigm: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)}")
    branch_priority = _options(norm, disjunction, warm_start, strengthen, branch_priority, upper_bound)[4]
    p = plan(bags, C, class_weight, big_m, upper_bound, norm, disjunction, warm_start, strengthen)
    d, B = bags.n_features, bags.n_bags
    m = MILModel(name="misvm_bigm")
    cols = _variables(m, p, d, B)
    if p.disjunction == "indicator":
        _margin_indicator(m, bags, p, cols)
    else:
        _margin_released(m, bags, p, cols)
    _witness_rows(m, bags, p, cols)
    if p.disjunction == "sos1":
        _sos_rows(m, p, cols)
    if p.norm == "l1":
        _l1_rows(m, d, cols)
    has_z = p.zrows.size > 0
    _objective(m, p.costs, d, B, p.norm)
    info = m._milopt
    cls, feats = problem_class(p.norm, p.disjunction)
    info.problem_class, info.features = (cls, feats) if has_z else (cls[2:], ())   # no binaries: QP / LP
    inc = p.incumbent
    info.meta = {"big_m": p.big_m, "costs": p.costs, "n_features": d, "instances": bags.n_instances,
                 "norm": p.norm, "disjunction": p.disjunction, "C": float(C), "class_weight": class_weight,
                 "upper_bound": p.F, "incumbent": None if inc is None else inc["objective"],
                 "incumbent_source": None if inc is None else inc["source"],
                 "strengthen": sorted(p.strengthen), "removed": p.removed, "bounds": p.bounds}
    info.bags = bags
    if p.bounds is not None:
        _apply_bounds(m, p.bounds, d, B, p.norm)
    if inc is not None:
        _start_from(m, inc)
    if branch_priority != "none" and has_z:
        info.branch_priority = _priorities(m, bags, p.zrows, p.sizes, inc)
    return m


def _variables(m, p: BuildPlan, d: int, B: int) -> dict:
    """Variables ``w, b, xi, zeta`` (+ ``s, u`` for sos1, ``v`` for l1) and their column offsets in
    the list ``cols["vars"]`` that every row matrix is written against."""
    nz = p.zrows.size
    sos = p.disjunction == "sos1"
    with PauseGC():
        m.F = pe.RangeSet(0, d - 1)
        m.BAGS = pe.RangeSet(0, B - 1)
        m.w = pe.Var(m.F, initialize=0.0)
        m.b = pe.Var(initialize=0.0)
        m.xi = pe.Var(m.BAGS, domain=pe.NonNegativeReals, initialize=1.0)
        m.ZETA = pe.Set(initialize=p.zrows.tolist(), ordered=True)
        m.zeta = pe.Var(m.ZETA, domain=pe.Binary, initialize=0)
        comps = [m.w, m.b, m.xi, m.zeta]
        if sos:
            m.s = pe.Var(m.ZETA, domain=pe.NonNegativeReals, initialize=0.0)
            m.u = pe.Var(m.ZETA, bounds=(0.0, 1.0), initialize=1.0)
            comps += [m.s, m.u]
        if p.norm == "l1":
            m.v = pe.Var(m.F, domain=pe.NonNegativeReals, initialize=0.0)
            comps.append(m.v)
        vars_ = var_list(*comps)
    o_zeta = d + 1 + B
    o_s = o_zeta + nz
    o_u = o_s + nz
    return {"vars": vars_, "n": len(vars_), "zeta": o_zeta, "s": o_s, "u": o_u, "v": o_u + nz if sos else o_zeta + nz}


def _instance_block(bags: Bags, cols: dict) -> sp.csr_matrix:
    """Columns (w, b, xi) of the instance rows sign_i (z_i w + b) + xi_I (sign -1 in negative bags)."""
    n = bags.n_instances
    sign = np.where((bags.y == 1)[bags.bag_index], 1.0, -1.0)
    XI = sp.csr_matrix((np.ones(n), (np.arange(n), bags.bag_index)), shape=(n, bags.n_bags))
    return sp.hstack([sp.csr_matrix(bags.X * sign[:, None]), sp.csr_matrix(sign[:, None]), XI], format="csr")


def _margin_released(m, bags: Bags, p: BuildPlan, cols: dict) -> None:
    """``margin``: sign (z_i w + b) + xi_I + L_i zeta_i >= 1 (bigm) or + s_i (sos1) instead."""
    n, z = bags.n_instances, p.zrows
    nz = z.size
    sos = p.disjunction == "sos1"
    o = cols["zeta"]
    rel = sp.csr_matrix((np.ones(nz) if sos else p.big_m[z], (z, (cols["s"] if sos else o) - o + np.arange(nz))),
                        shape=(n, cols["n"] - o))
    A = sp.hstack([_instance_block(bags, cols), rel], format="csr")
    if p.removed.any():
        rows = np.flatnonzero(p.kept)
        add_linear_rows(m, "margin", A[rows], cols["vars"], lb=1.0, index=rows.tolist())
    else:
        add_linear_rows(m, "margin", A, cols["vars"], lb=1.0)


def _margin_indicator(m, bags: Bags, p: BuildPlan, cols: dict) -> None:
    """``margin`` for rows that always hold; the rows of release-able instances (zeta_i = 0 =>
    w z_i + b + xi_I >= 1) in the deactivated ``margin_ind``, declared as indicator constraints."""
    n, z = bags.n_instances, p.zrows
    A = sp.hstack([_instance_block(bags, cols), sp.csr_matrix((n, cols["n"] - cols["zeta"]))], format="csr")
    has_zeta = np.zeros(n, dtype=bool)
    has_zeta[z] = True
    hard = np.flatnonzero(~has_zeta & p.kept)
    add_linear_rows(m, "margin", A[hard], cols["vars"], lb=1.0, index=hard.tolist())
    add_linear_rows(m, "margin_ind", A[z], cols["vars"], lb=1.0, index=z.tolist())
    m.margin_ind.deactivate()
    m._milopt.indicators = [{"rows": m.margin_ind, "binaries": [m.zeta[i] for i in z.tolist()], "active_value": 0}]


def _witness_rows(m, bags: Bags, p: BuildPlan, cols: dict) -> None:
    """``witness``: sum of zeta over a positive bag <= |I| - 1 (at least one witness)."""
    nz = p.zrows.size
    zb = bags.bag_index[p.zrows]
    cbags = np.unique(zb)
    crow = np.searchsorted(cbags, zb)
    Acard = sp.csr_matrix((np.ones(nz), (crow, cols["zeta"] + np.arange(nz))), shape=(cbags.size, cols["n"]))
    add_linear_rows(m, "witness", Acard, cols["vars"], ub=p.sizes[cbags] - 1.0, index=cbags.tolist())


def _sos_rows(m, p: BuildPlan, cols: dict) -> None:
    """``u_def``: u_i + zeta_i = 1, and ``sos``: SOS1 {s_i, u_i} (a witness, zeta = 0 and u = 1, has s_i = 0)."""
    nz = p.zrows.size
    k = np.arange(nz)
    Au = sp.csr_matrix((np.ones(2 * nz), (np.concatenate([k, k]), np.concatenate([cols["u"] + k, cols["zeta"] + k]))),
                       shape=(nz, cols["n"]))
    add_linear_rows(m, "u_def", Au, cols["vars"], lb=1.0, ub=1.0, index=p.zrows.tolist())
    m.sos = pe.SOSConstraint(m.ZETA, rule=lambda mdl, i: ([mdl.s[i], mdl.u[i]], [1, 2]), sos=1)


def _l1_rows(m, d: int, cols: dict) -> None:
    """``l1_pos``: v - w >= 0, ``l1_neg``: v + w >= 0."""
    k = np.arange(d)
    for name, sg in (("l1_pos", -1.0), ("l1_neg", 1.0)):
        Av = sp.csr_matrix((np.concatenate([np.ones(d), np.full(d, sg)]),
                            (np.concatenate([k, k]), np.concatenate([cols["v"] + k, k]))), shape=(d, cols["n"]))
        add_linear_rows(m, name, Av, cols["vars"], lb=0.0)


def _objective(m, costs, d: int, B: int, norm: str) -> None:
    """½‖w‖² (or e'v) + Σ C_I ξ_I."""
    cost = costs.tolist()
    xi_term = pe.quicksum(cost[I] * m.xi[I] for I in range(B))
    if norm == "l1":
        m.obj = pe.Objective(expr=pe.quicksum(m.v[k] for k in range(d)) + xi_term, sense=pe.minimize)
    else:
        m.obj = pe.Objective(expr=0.5 * pe.quicksum(m.w[k] ** 2 for k in range(d)) + xi_term, sense=pe.minimize)


def _start_from(m, inc: dict) -> None:
    """The incumbent's point as starting values (``warm_start``); ``ModelInfo.start``."""
    warm_start(m, inc["w"], inc["b"])
    m._milopt.start = True


def _apply_bounds(m, bnd, d, B, norm):
    """Variable bounds of :func:`incumbent_bounds` on w (and v), b and xi."""
    W = bnd["W"]
    for k in range(d):
        m.w[k].setlb(-W)
        m.w[k].setub(W)
        if norm == "l1":
            m.v[k].setub(W)
    if np.isfinite(bnd["b_lo"]):
        m.b.setlb(bnd["b_lo"])
    if np.isfinite(bnd["b_hi"]):
        m.b.setub(bnd["b_hi"])
    for I in range(B):
        m.xi[I].setub(float(bnd["xi_hi"][I]))


def _priorities(m, bags, zrows, sizes, inc) -> list:
    """(ζ variable, priority): smaller positive bags first; within a bag the incumbent's witness
    (highest incumbent score) first.  Priorities are positive integers (SCIP: higher = earlier)."""
    bi = bags.bag_index[zrows]
    base = 2 * (int(sizes.max()) - sizes[bi]) + 2
    if inc is not None:
        s = bags.X[zrows] @ inc["w"] + inc["b"]
        best = np.full(bags.n_bags, -np.inf)
        np.maximum.at(best, bi, s)
        base = base + (s >= best[bi]).astype(int)
    return [(m.zeta[int(i)], int(p)) for i, p in zip(zrows, base)]


def decode(model) -> dict:
    """Learned classifier: w, b, slacks and the witness instance (row) of each positive bag."""
    rec = model_info(model)
    d = rec.meta["n_features"]
    w = np.array([pe.value(model.w[k], exception=False) or 0.0 for k in range(d)])
    b = float(pe.value(model.b, exception=False) or 0.0)
    xi = np.array([pe.value(model.xi[I], exception=False) or 0.0 for I in model.BAGS])
    bags = rec.bags
    scores = bags.X @ w + b
    # witness: among instances with zeta = 0 (free of the big-M), the highest score
    free = ~np.asarray(rec.meta.get("removed", np.zeros(bags.n_instances, dtype=bool)), dtype=bool)
    for i in model.ZETA:
        v = model.zeta[i].value
        free[i] = v is None or v < 0.5
    arg = segment_argmax(np.where(free, scores, -np.inf), bags.bag_ptr)
    pos = np.flatnonzero(bags.y == 1)
    return {"w": w, "b": b, "xi": xi, "witnesses": dict(zip(pos.tolist(), arg[pos].tolist()))}


def objective_value(bags: Bags, w, b, C=1.0, class_weight="kent-yu", norm: str = "l2") -> float:
    """The objective of this formulation at (w, b) with optimal slacks for that (w, b):
    ``norm="l2"``: ½‖w‖² + Σ C_I ξ_I; ``norm="l1"``: ‖w‖₁ + Σ C_I ξ_I
    (:func:`milopt.numerics.misvm_objective`)."""
    return misvm_objective(bags, w, b, C, class_weight, norm)


def warm_start(model, w, b) -> None:
    """Set a feasible starting point from (w, b): slacks at their minimum, ζ = 0 on the best instance
    of each positive bag (and, by variant, v = |w|; s_i = the violation of a non-witness, u = 1 - ζ)."""
    rec = model_info(model)
    bags, meta = rec.bags, rec.meta
    w = np.asarray(w, dtype=float)
    d = w.size
    for k in range(d):
        model.w[k].value = float(w[k])
    model.b.value = float(b)
    if meta.get("norm") == "l1":
        for k in range(d):
            model.v[k].value = float(abs(w[k]))
    s = bags.X @ w + b
    zi = np.fromiter(model.ZETA, dtype=np.int64, count=len(model.ZETA))
    disj = meta.get("disjunction")
    # a released instance needs no slack with indicators; sos1 takes its violation in s_i
    xi, zeta, _ = start_slacks(s, bags, zi, None if disj in ("indicator", "sos1") else meta["big_m"],
                               meta.get("removed"))
    if disj == "sos1":
        sl = np.where(zeta == 1, np.maximum(0.0, 1.0 - xi[bags.bag_index[zi]] - s[zi]), 0.0)
        for k, i in enumerate(zi.tolist()):
            model.s[i].value = float(sl[k])
            model.u[i].value = float(1 - zeta[k])
    for I in model.BAGS:
        model.xi[I].value = float(xi[I])
    for k, i in enumerate(zi.tolist()):
        model.zeta[i].value = int(zeta[k])


def default_start(model) -> None:
    """Warm start for a model built with ``warm_start=False``: the point of
    :func:`~milopt.mil.bigm.incumbent` (best of the trivial points, a linear SVM on the instances
    with bag labels copied, and the MI-SVM alternation started from it), made feasible by
    ``warm_start``.  (``milopt solve`` builds with ``warm_start=True`` instead, so that F
    also tightens the model.)"""
    rec = model_info(model)
    meta = rec.meta
    inc = incumbent(rec.bags, meta.get("C", 1.0), meta.get("class_weight", "kent-yu"), meta.get("norm", "l2"))
    warm_start(model, inc["w"], inc["b"])
