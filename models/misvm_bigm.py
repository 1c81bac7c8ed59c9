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

**A provably valid big-M** (see docs/misvm_bigm.md).  Any feasible point bounds the
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
**Strengthening** (``strengthen=``, docs/misvm_bigm.md "Strengthening and warm start"): from an
incumbent objective F (``warm_start`` computes one: :func:`incumbent`), every solution with
objective ≤ F has :math:`\lVert w\rVert \le T = \sqrt{2F}`, :math:`\xi_I \le F/C_I`, b between the
bounds obtained by averaging the margin rows of the negative bags and of the positive bags'
witnesses, and scores :math:`w^\top z_i + b \ge lo_i`; hence the smaller valid big-M
:math:`L_{I,i} = \min(T D_i, 1 - lo_i)` with the exact bag diameter :math:`D_i`
(:func:`incumbent_bounds`).  ``reduce`` drops instances inside the convex hull of the rest of
their bag (:func:`hull_interior`): their score never exceeds the bag's maximum.

* ``disjunction="sos1"``: the margin row of a positive-bag instance gets its own slack
  :math:`s_i \ge 0` instead of :math:`L_{I,i}\zeta_{I,i}`, with :math:`u_i = 1 - \zeta_{I,i}` and a
  special ordered set of type 1 over :math:`(s_i, u_i)` (at most one nonzero): a witness
  (:math:`\zeta = 0`) has :math:`s_i = 0`.  No big-M at all; needs a solver with SOS support
  (SCIP; HiGHS has none and is refused by the driver).
* ``disjunction="indicator"``: :math:`\zeta_{I,i} = 0 \Rightarrow w^\top z_i + b + \xi_I \ge 1`
  (no big-M).  Pyomo 6.10 has no indicator-constraint component and its ``highs`` /
  ``scip_direct`` interfaces cannot pass one, so the rows of positive-bag instances are built
  in the *deactivated* component ``margin_ind`` and declared in ``model._milopt_indicators``;
  the model has the feature ``INDICATOR`` and only the backend ``scip-native``
  (``milopt/solvers/scip_native.py``: PySCIPOpt's ``addConsIndicator``) accepts it.  Export
  to ``.mps``/``.lp`` is refused for it.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC

from milopt import numerics as _numerics
from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.models._linear import add_linear_rows, var_list
from milopt.params import Bool, Choice, Float, ParamSet, Str
from milopt.segments import expand, segment_max, segment_mean

PROBLEM_CLASS = "MIQP"

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


def bag_costs(bags: Bags, C: float, class_weight="kent-yu") -> np.ndarray:
    """Per-bag cost C_I (see module docstring; :func:`milopt.numerics.bag_costs`)."""
    return _numerics.bag_costs(bags, C, class_weight)


def trivial_upper_bound(costs: np.ndarray, y: np.ndarray) -> float:
    """Objective of the best of the trivial feasible points w = 0, b in {-1, 0, 1}."""
    pos = y == 1
    return float(min(costs.sum(), 2 * costs[pos].sum(), 2 * costs[~pos].sum()))


def valid_big_m(bags: Bags, costs: np.ndarray, upper_bound: float | None = None, norm: str = "l2") -> np.ndarray:
    r"""Per-instance provably valid L_{I,i} (module docstring), shape (n_instances,).

    ``norm="l2"``: :math:`\sqrt{2F_0}(\lVert z_i - c_I\rVert + \max_k \lVert z_k - c_I\rVert)`;
    ``norm="l1"``: :math:`F_0 \max_{j\in I} \lVert z_i - z_j\rVert_\infty`.
    """
    F0 = trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(upper_bound):
        F0 = min(F0, float(upper_bound))
    if norm == "l1":
        return F0 * linf_spread(bags)
    W = np.sqrt(2.0 * F0)
    ptr = bags.bag_ptr
    cent = segment_mean(bags.X, ptr)
    dist = np.linalg.norm(bags.X - expand(cent, ptr), axis=1)
    return W * (dist + expand(segment_max(dist, ptr), ptr))


def linf_spread(bags: Bags) -> np.ndarray:
    r""":math:`\max_{j \in I} \lVert z_i - z_j \rVert_\infty` for every instance i of bag I, shape (n_instances,)."""
    ptr = bags.bag_ptr
    X = bags.X
    lo = expand(np.minimum.reduceat(X, ptr[:-1], axis=0), ptr)
    hi = expand(np.maximum.reduceat(X, ptr[:-1], axis=0), ptr)
    return np.maximum(X - lo, hi - X).max(axis=1)


def mildsvm_big_m(bags: Bags) -> float:
    """mildsvm's L = 100 * sum over columns of mean |x| (no validity guarantee)."""
    return float(100.0 * np.abs(bags.X).mean(axis=0).sum())


# ----------------------------------------------------------------------------- strengthening
def parse_strengthen(value) -> frozenset:
    """``strengthen`` parameter -> set of options (``none``, ``all``, or names joined by ',' / '+')."""
    if value is None or value is False or str(value).strip().lower() in ("", "none", "false", "no", "off"):
        return frozenset()
    if value is True or str(value).strip().lower() in ("all", "true", "yes", "on"):
        return frozenset(STRENGTHEN)
    parts = [p.strip().lower() for p in str(value).replace("+", ",").split(",") if p.strip()]
    bad = [p for p in parts if p not in STRENGTHEN]
    if bad:
        raise InvalidParameterError(f"strengthen: unknown option(s) {bad}; expected none, all, or any of "
                                    f"{', '.join(STRENGTHEN)} joined by ',' (e.g. strengthen=bounds,reduce)")
    return frozenset(parts)


def incumbent(bags: Bags, C: float = 1.0, class_weight="kent-yu", norm: str = "l2", random_state=0) -> dict:
    r"""A cheap feasible point of MI-SVM and its objective F (an upper bound on the optimum).

    Candidates: the trivial points :math:`w = 0,\ b \in \{-1, 0, 1\}`; a linear SVM on the
    instances with the bag labels copied (:func:`milopt.estimators.misvm.sil_start`); and, for
    ``norm="l2"``, the MI-SVM alternating heuristic of Andrews et al. (bag-slack form,
    :func:`milopt.algorithms.mi_heuristics.misvm_alternate`, linear kernel) started from that
    SVM's witnesses.  The lowest objective (:func:`objective_value`) is returned.

    Returns
    -------
    dict: ``w`` (d,), ``b``, ``objective`` F, ``source`` ('trivial', 'sil' or 'alternation').
    """
    from milopt.numerics import sil_start

    norm = str(norm).lower()
    d = bags.n_features
    cands = [(np.zeros(d), float(b0), "trivial") for b0 in (-1.0, 0.0, 1.0)]
    w, b = sil_start(bags, C=C, random_state=random_state)
    cands.append((w, float(b), "sil"))
    if norm == "l2" and np.any(bags.y == 1) and np.any(bags.y != 1):
        from milopt.algorithms.mi_heuristics import misvm_alternate

        h = misvm_alternate(None, bags, C=C, class_weight=class_weight, slack="bag", init_scores=bags.X @ w + b,
                            X=bags.X, random_state=random_state)
        cands.append((bags.X.T @ (h["alpha"] * h["y"]), float(h["b"]), "alternation"))
    objs = [objective_value(bags, cw, cb, C, class_weight, norm) for cw, cb, _ in cands]
    k = int(np.argmin(objs))
    return {"w": np.asarray(cands[k][0], dtype=float), "b": cands[k][1], "objective": float(objs[k]),
            "source": cands[k][2]}


def _dual_norm(norm):
    """Norm of data vectors paired with the regulariser's norm of w (Cauchy-Schwarz / Hoelder)."""
    return (lambda V: np.linalg.norm(V, axis=-1)) if norm == "l2" else (lambda V: np.abs(V).max(axis=-1))


def _best_t(F, S, a, norm):
    r""":math:`\max_{0 \le t \le T} \; (F - r(t))/S + a\,t` with :math:`r(t) = t^2/2,\ T = \sqrt{2F}`
    (l2) or :math:`r(t) = t,\ T = F` (l1); ``a`` may be an array."""
    a = np.asarray(a, dtype=float)
    if norm == "l2":
        t = np.clip(S * a, 0.0, np.sqrt(2.0 * F))
        return (F - 0.5 * t * t) / S + a * t
    T = F
    return np.maximum(F / S, a * T)  # linear in t: an endpoint


def pair_diameter(bags: Bags, norm: str = "l2", mask=None) -> np.ndarray:
    r""":math:`D_i = \max_{j \in I} \lVert z_i - z_j \rVert` (2-norm, or the ∞-norm for l1) over the
    instances j of i's bag (those in ``mask`` when given), shape (n_instances,); exact, by bag."""
    X, ptr = bags.X, bags.bag_ptr
    out = np.zeros(bags.n_instances)
    keep = np.ones(bags.n_instances, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    for I in range(bags.n_bags):
        s, e = ptr[I], ptr[I + 1]
        Z = X[s:e]
        Zk = Z[keep[s:e]]
        if Zk.shape[0] == 0:
            continue
        if norm == "l2":
            sq = (Z * Z).sum(1)[:, None] + (Zk * Zk).sum(1)[None, :] - 2.0 * Z @ Zk.T
            out[s:e] = np.sqrt(np.maximum(sq.max(axis=1), 0.0))
        else:
            out[s:e] = np.maximum(Z - Zk.min(axis=0), Zk.max(axis=0) - Z).max(axis=1)
    return out


def incumbent_bounds(bags: Bags, costs: np.ndarray, F: float, norm: str = "l2", mask=None) -> dict:
    r"""Bounds every solution with objective :math:`\le F` satisfies (proofs in docs/misvm_bigm.md).

    With :math:`t = \lVert w\rVert` (2-norm for l2, 1-norm for l1), :math:`r(t)` the regulariser
    and :math:`\lVert\cdot\rVert_*` its dual norm on data vectors:

    * :math:`r(t) \le F`: :math:`|w_k| \le T` (:math:`T = \sqrt{2F}` or :math:`F`);
    * :math:`0 \le \xi_I \le F / C_I`;
    * negative bags, averaged with weights :math:`C_I / S^-` (:math:`S^- = \sum_{Y_I=-1} C_I`):
      :math:`b + w^\top g^- \le (F - r(t))/S^- - 1`, so
      :math:`b \le -1 + \max_{0\le t\le T} [(F - r(t))/S^- + t \lVert g^-\rVert_*]`; the same with
      one negative bag (its mean, :math:`S = C_I`); the smallest is kept;
    * positive bags, their witnesses averaged likewise: :math:`b + w^\top z_i \ge 1 -
      \max_{0\le t\le T}[(F - r(t))/S^+ + t (\bar\rho^+ + \lVert z_i - g^+\rVert_*)]` =: ``lo_i``
      for every instance, where :math:`\bar\rho^+ = \sum C_I \rho_I / S^+`,
      :math:`\rho_I = \max_{j\in I}\lVert z_j - c_I\rVert_*`; at :math:`z_i = 0` this bounds b;
    * the big-M: :math:`L_{I,i} = \min(T D_i,\ 1 - lo_i)` with the exact bag diameter :math:`D_i`.

    ``mask``: instances kept by ``reduce`` (removed ones are ignored in bag means and diameters).

    Returns
    -------
    dict: ``W`` (T), ``b_lo``, ``b_hi``, ``xi_hi`` (B,), ``lo`` (n,), ``L`` (n,), ``F``.
    """
    X, ptr = bags.X, bags.bag_ptr
    n = bags.n_instances
    keep = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    F = float(F) * (1.0 + 1e-9) + 1e-12  # a hair of slack for the rounding of F itself
    dn = _dual_norm(norm)
    T = np.sqrt(2.0 * F) if norm == "l2" else F
    pos = bags.y == 1
    cnt = np.add.reduceat(keep.astype(float), ptr[:-1])
    cent = np.add.reduceat(X * keep[:, None], ptr[:-1], axis=0) / np.maximum(cnt, 1.0)[:, None]
    rad = np.zeros(bags.n_bags)
    dev = dn(X - expand(cent, ptr))
    np.maximum.at(rad, bags.bag_index[keep], dev[keep])
    # b <= ... from negative bags
    b_hi = np.inf
    if np.any(~pos):
        Sn = costs[~pos].sum()
        gn = (costs[~pos, None] * cent[~pos]).sum(0) / Sn
        b_hi = -1.0 + float(_best_t(F, Sn, dn(gn), norm))
        b_hi = min(b_hi, float(np.min(-1.0 + _best_t(F, costs[~pos], dn(cent[~pos]), norm))))
    # w z_i + b >= lo_i from the witnesses of positive bags
    lo = np.full(n, -np.inf)
    b_lo = -np.inf
    if np.any(pos):
        Sp = costs[pos].sum()
        gp = (costs[pos, None] * cent[pos]).sum(0) / Sp
        rbar = float((costs[pos] * rad[pos]).sum() / Sp)
        lo = 1.0 - _best_t(F, Sp, rbar + dn(X - gp), norm)
        b_lo = 1.0 - float(_best_t(F, Sp, rbar + dn(gp), norm))
        # one positive bag at a time: b + w z_i >= 1 - (F - r)/C_I - t (||z_i - c_I|| + rho_I) for i in I
        own = 1.0 - _best_t(F, expand(costs, ptr), expand(rad, ptr) + dev, norm)
        lo = np.where(pos[bags.bag_index], np.maximum(lo, own), lo)
        b_lo = max(b_lo, float(np.max(1.0 - _best_t(F, costs[pos], rad[pos] + dn(cent[pos]), norm))))
    xi_hi = F / costs
    D = pair_diameter(bags, norm, mask=keep)
    L = np.maximum(np.minimum(T * D, 1.0 - lo), 0.0)
    return {"W": float(T), "b_lo": float(b_lo), "b_hi": float(b_hi), "xi_hi": xi_hi, "lo": lo, "L": L, "F": F}


def hull_interior(bags: Bags, tol: float = 1e-9) -> np.ndarray:
    r"""Instances that lie in the convex hull of the *other* instances of their bag (exact duplicates
    included; of a group of duplicates the first is kept), removed one after the other, so that the
    kept instances of a bag have the same convex hull as the whole bag.  Boolean mask (n,).

    A bag whose instances are affinely independent has no such instance (no LP is solved);
    otherwise membership is decided by the feasibility LP
    :math:`z_i = \sum_{j \ne i} \lambda_j z_j,\ \sum_j \lambda_j = 1,\ \lambda \ge 0` (HiGHS)."""
    from scipy.optimize import linprog

    X, ptr = bags.X, bags.bag_ptr
    out = np.zeros(bags.n_instances, dtype=bool)
    for I in range(bags.n_bags):
        s, e = int(ptr[I]), int(ptr[I + 1])
        if e - s < 2:
            continue
        Z = X[s:e]
        # exact duplicates first
        _, first = np.unique(Z, axis=0, return_index=True)
        dup = np.ones(e - s, dtype=bool)
        dup[first] = False
        out[s:e] |= dup
        idx = np.flatnonzero(~dup)
        if idx.size < 3:
            continue
        Zu = Z[idx]
        if np.linalg.matrix_rank(Zu[1:] - Zu[0]) == idx.size - 1:
            continue  # affinely independent: every point is a vertex
        alive = np.ones(idx.size, dtype=bool)
        scale = max(1.0, float(np.abs(Zu).max()))
        for k in range(idx.size):
            others = np.flatnonzero(alive & (np.arange(idx.size) != k))
            if others.size < 2:
                break
            A = np.vstack([Zu[others].T / scale, np.ones(others.size)])
            rhs = np.concatenate([Zu[k] / scale, [1.0]])
            r = linprog(np.zeros(others.size), A_eq=A, b_eq=rhs, bounds=(0, None), method="highs")
            if r.status == 0 and np.abs(A @ r.x - rhs).max() <= 1e-7:
                alive[k] = False
        out[s + idx[~alive]] = True
    return out


def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", big_m="valid", upper_bound: float | None = None,
          norm: str = "l2", disjunction: str = "bigm", warm_start: bool = False, strengthen="none",
          branch_priority: str = "none", **unused) -> pe.ConcreteModel:
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
        Compute a cheap incumbent first (:func:`incumbent`): its objective F replaces the
        trivial bound in the valid big-M and in the strengthening, and its point is set as the
        model's starting values (``model._milopt_start = True``; the runner hands it to the
        solver).  ``milopt solve`` defaults to true (``PARAMS``); the Python default is false.
    strengthen : 'none' | 'all' | 'bounds' | 'reduce' | 'bounds,reduce'
        ``bounds``: the variable bounds of :func:`incumbent_bounds` and its smaller big-M;
        ``reduce``: instances inside the convex hull of the other instances of their bag
        (:func:`hull_interior`, duplicates included) lose their row and ζ.  Both keep every
        optimal value (docs/misvm_bigm.md, "Strengthening").
    branch_priority : {'none', 'bagsize'}
        Declares SCIP branching priorities in ``model._milopt_branch_priority`` (used by the
        ``scip-native`` backend; other backends ignore it): ζ of smaller positive bags first,
        and in each bag the incumbent's witness first.

    Returns
    -------
    pyomo.environ.ConcreteModel
        Components ``w, b, xi, zeta, margin, witness, obj`` (+ ``v, l1_pos, l1_neg`` for l1,
        + ``s, u, u_def, sos`` for sos1, + the deactivated ``margin_ind`` for indicator);
        ``_milopt_class`` MIQP/MILP (QP/LP without binaries), ``_milopt_features`` ``("SOS",)``
        for sos1, ``("INDICATOR",)`` for indicator.

    Raises
    ------
    InvalidParameterError
        Bad C, class_weight, big_m, norm, disjunction, non-binary labels, unknown keys.
    """
    if unused:
        raise InvalidParameterError(f"misvm-bigm: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)}")
    opts = parse_strengthen(strengthen)
    branch_priority = str(branch_priority).lower()
    if branch_priority not in PRIORITIES:
        raise InvalidParameterError(f"branch_priority: expected one of {', '.join(PRIORITIES)}, got {branch_priority!r}")
    if not isinstance(warm_start, (bool, np.bool_)):
        raise InvalidParameterError(f"warm_start: expected true or false, got {warm_start!r}")
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
    if bags.n_classes > 2:
        raise InvalidParameterError("misvm-bigm: binary bag labels (0/1) are required")
    X, ptr = bags.X, bags.bag_ptr
    n, d = X.shape
    B = bags.n_bags
    costs = bag_costs(bags, C, class_weight)
    pos_bag = bags.y == 1
    inst_pos = pos_bag[bags.bag_index]
    # a cheap incumbent and the best known upper bound F on the optimum
    inc = incumbent(bags, C, class_weight, norm) if warm_start else None
    F = trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(upper_bound):
        F = min(F, upper_bound)
    if inc is not None:
        F = min(F, inc["objective"])
    removed = hull_interior(bags) if "reduce" in opts else np.zeros(n, dtype=bool)
    kept = ~removed
    bnd = incumbent_bounds(bags, costs, F, norm, mask=kept) if "bounds" in opts else None
    sizes = np.add.reduceat(kept.astype(np.int64), ptr[:-1])  # instances per bag (after reduction)
    if isinstance(big_m, str) and big_m == "valid":
        L = bnd["L"] if bnd is not None else valid_big_m(bags, costs, F, norm=norm)
    elif isinstance(big_m, str) and big_m == "mildsvm":
        L = np.full(n, mildsvm_big_m(bags))
    else:
        try:
            L = np.full(n, float(big_m))
        except (TypeError, ValueError):
            raise InvalidParameterError(f"big_m: expected 'valid', 'mildsvm' or a number, got {big_m!r}") from None
        if not L[0] > 0:
            raise InvalidParameterError(f"big_m: must be positive, got {big_m!r}")
    # ζ only for instances of positive bags with at least two instances
    has_zeta = inst_pos & kept & (sizes[bags.bag_index] >= 2)
    zrows = np.flatnonzero(has_zeta)
    nz = zrows.size
    sos = disjunction == "sos1"
    ind = disjunction == "indicator"

    m = pe.ConcreteModel(name="misvm_bigm")
    with PauseGC():
        m.F = pe.RangeSet(0, d - 1)
        m.BAGS = pe.RangeSet(0, B - 1)
        m.w = pe.Var(m.F, initialize=0.0)
        m.b = pe.Var(initialize=0.0)
        m.xi = pe.Var(m.BAGS, domain=pe.NonNegativeReals, initialize=1.0)
        m.ZETA = pe.Set(initialize=zrows.tolist(), ordered=True)
        m.zeta = pe.Var(m.ZETA, domain=pe.Binary, initialize=0)
        comps = [m.w, m.b, m.xi, m.zeta]
        if sos:
            m.s = pe.Var(m.ZETA, domain=pe.NonNegativeReals, initialize=0.0)
            m.u = pe.Var(m.ZETA, bounds=(0.0, 1.0), initialize=1.0)
            comps += [m.s, m.u]
        if norm == "l1":
            m.v = pe.Var(m.F, domain=pe.NonNegativeReals, initialize=0.0)
            comps.append(m.v)
        vars_ = var_list(*comps)
        nv = len(vars_)
        o_zeta = d + 1 + B
        o_s = o_zeta + nz
        o_u = o_s + nz
        o_v = o_u + nz if sos else o_zeta + nz

    # instance rows: sign * (z_i w + b) + xi_I + L_i zeta_i >= 1  (sign -1 for negative bags);
    # sos1: + s_i instead of + L_i zeta_i
    sign = np.where(inst_pos, 1.0, -1.0)
    Zs = sp.csr_matrix(X * sign[:, None])
    bcol = sp.csr_matrix(sign[:, None])
    XI = sp.csr_matrix((np.ones(n), (np.arange(n), bags.bag_index)), shape=(n, B))
    if ind:
        # zeta_i = 0  =>  w z_i + b + xi_I >= 1: the rows of released-able instances are kept in
        # the deactivated component margin_ind and declared as indicator constraints
        A = sp.hstack([Zs, bcol, XI, sp.csr_matrix((n, nv - o_zeta))], format="csr")
        hard = np.flatnonzero(~has_zeta & kept)
        add_linear_rows(m, "margin", A[hard], vars_, lb=1.0, index=hard.tolist())
        add_linear_rows(m, "margin_ind", A[zrows], vars_, lb=1.0, index=zrows.tolist())
        m.margin_ind.deactivate()
        m._milopt_indicators = [{"rows": m.margin_ind, "binaries": [m.zeta[i] for i in zrows.tolist()],
                                 "active_value": 0}]
    else:
        rel = sp.csr_matrix((np.ones(nz) if sos else L[zrows], (zrows, (o_s if sos else o_zeta) - o_zeta + np.arange(nz))),
                            shape=(n, nv - o_zeta))
        A = sp.hstack([Zs, bcol, XI, rel], format="csr")
        if removed.any():
            rows = np.flatnonzero(kept)
            add_linear_rows(m, "margin", A[rows], vars_, lb=1.0, index=rows.tolist())
        else:
            add_linear_rows(m, "margin", A, vars_, lb=1.0)

    # cardinality: sum of zeta over a positive bag <= |I| - 1
    zb = bags.bag_index[zrows]
    cbags = np.unique(zb)
    crow = np.searchsorted(cbags, zb)
    Acard = sp.csr_matrix((np.ones(nz), (crow, o_zeta + np.arange(nz))), shape=(cbags.size, nv))
    add_linear_rows(m, "witness", Acard, vars_, ub=sizes[cbags] - 1.0, index=cbags.tolist())

    if sos:
        # u_i + zeta_i = 1 and SOS1 {s_i, u_i}: a witness (zeta = 0, u = 1) has s_i = 0
        k = np.arange(nz)
        Au = sp.csr_matrix((np.ones(2 * nz), (np.concatenate([k, k]), np.concatenate([o_u + k, o_zeta + k]))),
                           shape=(nz, nv))
        add_linear_rows(m, "u_def", Au, vars_, lb=1.0, ub=1.0, index=zrows.tolist())
        m.sos = pe.SOSConstraint(m.ZETA, rule=lambda mdl, i: ([mdl.s[i], mdl.u[i]], [1, 2]), sos=1)
    if norm == "l1":
        # v - w >= 0, v + w >= 0
        k = np.arange(d)
        for name, sg in (("l1_pos", -1.0), ("l1_neg", 1.0)):
            Av = sp.csr_matrix((np.concatenate([np.ones(d), np.full(d, sg)]),
                                (np.concatenate([k, k]), np.concatenate([o_v + k, k]))), shape=(d, nv))
            add_linear_rows(m, name, Av, vars_, lb=0.0)

    cost = costs.tolist()
    xi_term = pe.quicksum(cost[I] * m.xi[I] for I in range(B))
    if norm == "l1":
        m.obj = pe.Objective(expr=pe.quicksum(m.v[k] for k in range(d)) + xi_term, sense=pe.minimize)
        cls = "MILP" if nz else "LP"
    else:
        m.obj = pe.Objective(expr=0.5 * pe.quicksum(m.w[k] ** 2 for k in range(d)) + xi_term, sense=pe.minimize)
        cls = PROBLEM_CLASS if nz else "QP"
    m._milopt_class = cls
    m._milopt_features = ("SOS",) if sos and nz else (("INDICATOR",) if ind and nz else ())
    m._milopt_meta = {"big_m": None if (sos or ind) else L, "costs": costs, "n_features": d, "instances": n,
                      "norm": norm, "disjunction": disjunction, "C": float(C), "class_weight": class_weight,
                      "upper_bound": float(F), "incumbent": None if inc is None else inc["objective"],
                      "incumbent_source": None if inc is None else inc["source"],
                      "strengthen": sorted(opts), "removed": removed, "bounds": bnd}
    m._milopt_bags = bags
    if bnd is not None:
        _apply_bounds(m, bnd, d, B, norm)
    if inc is not None:
        globals()["warm_start"](m, inc["w"], inc["b"])
        m._milopt_start = True
    if branch_priority != "none" and nz:
        m._milopt_branch_priority = _priorities(m, bags, zrows, sizes, inc)
    return m


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
    d = model._milopt_meta["n_features"]
    w = np.array([pe.value(model.w[k], exception=False) or 0.0 for k in range(d)])
    b = float(pe.value(model.b, exception=False) or 0.0)
    xi = np.array([pe.value(model.xi[I], exception=False) or 0.0 for I in model.BAGS])
    bags = model._milopt_bags
    scores = bags.X @ w + b
    ptr = bags.bag_ptr
    # witness: among instances with zeta = 0 (free of the big-M), the highest score
    free = ~np.asarray(model._milopt_meta.get("removed", np.zeros(bags.n_instances, dtype=bool)), dtype=bool)
    for i in model.ZETA:
        v = model.zeta[i].value
        free[i] = v is None or v < 0.5
    masked = np.where(free, scores, -np.inf)
    from milopt.segments import segment_argmax

    arg = segment_argmax(masked, ptr)
    pos = np.flatnonzero(bags.y == 1)
    return {"w": w, "b": b, "xi": xi, "witnesses": dict(zip(pos.tolist(), arg[pos].tolist()))}


def objective_value(bags: Bags, w, b, C=1.0, class_weight="kent-yu", norm: str = "l2") -> float:
    """MI-SVM objective of (w, b) with optimal slacks for that (w, b) (:func:`milopt.numerics.misvm_objective`).

    ``norm="l2"``: ½‖w‖² + Σ C_I ξ_I; ``norm="l1"``: ‖w‖₁ + Σ C_I ξ_I.
    """
    return _numerics.misvm_objective(bags, w, b, C, class_weight, norm)


def warm_start(model, w, b) -> None:
    """Set a feasible starting point from (w, b): slacks at their minimum, ζ = 0 on the best instance
    of each positive bag (and, by variant, v = |w|; s_i = the violation of a non-witness, u = 1 - ζ)."""
    bags = model._milopt_bags
    meta = model._milopt_meta
    w = np.asarray(w, dtype=float)
    d = w.size
    for k in range(d):
        model.w[k].value = float(w[k])
    model.b.value = float(b)
    if meta.get("norm") == "l1":
        for k in range(d):
            model.v[k].value = float(abs(w[k]))
    s = bags.X @ w + b
    ptr = bags.bag_ptr
    from milopt.segments import segment_argmax

    removed = meta.get("removed")
    arg = segment_argmax(s if removed is None or not removed.any() else np.where(removed, -np.inf, s), ptr)
    mx = s[arg]
    pos = bags.y == 1
    neg_mx = segment_max(s, ptr)
    xi = np.where(pos, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + neg_mx))
    zi = np.fromiter(model.ZETA, dtype=np.int64, count=len(model.ZETA))
    zeta = (zi != arg[bags.bag_index[zi]]).astype(int)
    if meta.get("disjunction") == "indicator":
        pass  # a released instance needs no slack
    elif meta.get("disjunction") == "sos1":
        sl = np.where(zeta == 1, np.maximum(0.0, 1.0 - xi[bags.bag_index[zi]] - s[zi]), 0.0)
        for k, i in enumerate(zi.tolist()):
            model.s[i].value = float(sl[k])
            model.u[i].value = float(1 - zeta[k])
    else:
        # a non-witness instance of a positive bag may need a larger slack when L is small
        L = meta["big_m"]
        need = np.zeros(bags.n_bags)
        nw = zeta == 1
        np.maximum.at(need, bags.bag_index[zi[nw]], 1.0 - s[zi[nw]] - L[zi[nw]])
        xi = np.maximum(xi, need)
    for I in model.BAGS:
        model.xi[I].value = float(xi[I])
    for k, i in enumerate(zi.tolist()):
        model.zeta[i].value = int(zeta[k])


def default_start(model) -> None:
    """Warm start for a model built with ``warm_start=False``: the point of :func:`incumbent`
    (best of the trivial points, a linear SVM on the instances with bag labels copied, and the
    MI-SVM alternation started from it), made feasible by :func:`warm_start`.  (``milopt solve``
    builds with ``warm_start=True`` instead, so that F also tightens the model.)"""
    meta = model._milopt_meta
    inc = incumbent(model._milopt_bags, meta.get("C", 1.0), meta.get("class_weight", "kent-yu"),
                    meta.get("norm", "l2"))
    warm_start(model, inc["w"], inc["b"])
