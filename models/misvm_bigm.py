r"""MI-SVM as a big-M mixed-integer quadratic program (Kent & Yu, eq. 5).

Kent, S. and Yu, M. "Non-convex SVM for multiple instance learning with distributional
instances" (mi-SMM / MI-SVM mixed-integer formulation; R package mildsvm).  The MI-SVM
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

**A provably valid big-M** (see docs/models/misvm_bigm.md).  Any feasible point bounds the
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

**Variants** (issue 3; docs/misvm_bigm_variants.md).

* ``norm="l1"``: the regulariser :math:`\lVert w\rVert_1` written with :math:`v \ge w,\ v \ge -w`
  (objective :math:`e^\top v + \sum_I C_I \xi_I`): a MILP, solvable by HiGHS as well as SCIP.
  Valid big-M: the same trivial points bound :math:`\lVert w\rVert_1 \le F_0`, and by Hölder
  :math:`|w^\top (z_i - z_j)| \le \lVert w\rVert_1 \lVert z_i - z_j\rVert_\infty`, so
  :math:`L_{I,i} = F_0 \max_{j \in I}\lVert z_i - z_j\rVert_\infty` (computed exactly per
  feature from the bag's minimum and maximum) is valid.
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

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError, positive_number
from milopt.models._linear import add_linear_rows, var_list
from milopt.segments import expand, segment_max, segment_mean

PROBLEM_CLASS = "MIQP"

#: keys accepted from the command line: name -> (type, default, help)
PARAMS = {
    "C": (float, 1.0, "misclassification cost"),
    "class_weight": (str, "kent-yu", "kent-yu | balanced | none"),
    "big_m": (str, "valid", "valid (provable, per instance) | mildsvm (100 x sum of column mean |x|) | a number"),
    "norm": (str, "l2", "l2 (1/2 ||w||^2: MIQP) | l1 (||w||_1 through v >= +-w: MILP)"),
    "disjunction": (str, "bigm", "bigm (L zeta) | sos1 (SOS1 over slack s_i and 1 - zeta_i; SCIP) | "
                                 "indicator (zeta_i = 0 => margin row; solver scip-native)"),
}

NORMS = ("l2", "l1")
DISJUNCTIONS = ("bigm", "sos1", "indicator")


def problem_class(norm: str = "l2", disjunction: str = "bigm", **unused):
    """(problem class, features) of the model ``build`` returns for these parameters (known
    before building, so that the CLI refuses a solver early): MIQP / MILP, plus SOS for sos1."""
    cls = "MILP" if str(norm).lower() == "l1" else "MIQP"
    dj = str(disjunction).lower()
    return cls, (("SOS",) if dj == "sos1" else (("INDICATOR",) if dj == "indicator" else ()))


def bag_costs(bags: Bags, C: float, class_weight="kent-yu") -> np.ndarray:
    """Per-bag cost C_I (see module docstring)."""
    C = positive_number("C", C)
    pos = bags.y == 1
    n_pos_bags = int(pos.sum())
    if class_weight in (None, "none", "None", False):
        return np.full(bags.n_bags, float(C))
    if class_weight == "kent-yu":
        n_neg_inst = int(np.sum(~pos[bags.bag_index]))
        w_neg = n_pos_bags / max(n_neg_inst, 1)
        return np.where(pos, C, C * w_neg)
    if class_weight == "balanced":
        nb = bags.n_bags
        return np.where(pos, C * nb / (2 * max(n_pos_bags, 1)), C * nb / (2 * max(nb - n_pos_bags, 1)))
    raise InvalidParameterError(f"class_weight: expected 'kent-yu', 'balanced' or 'none', got {class_weight!r}")


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


def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", big_m="valid", upper_bound: float | None = None,
          norm: str = "l2", disjunction: str = "bigm", **unused) -> pe.ConcreteModel:
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
        raise InvalidParameterError(f"misvm-bigm: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)} "
                                    "(and upper_bound)")
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
    sizes = np.diff(ptr)
    if isinstance(big_m, str) and big_m == "valid":
        L = valid_big_m(bags, costs, upper_bound, norm=norm)
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
    has_zeta = inst_pos & (sizes[bags.bag_index] >= 2)
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
        hard = np.flatnonzero(~has_zeta)
        add_linear_rows(m, "margin", A[hard], vars_, lb=1.0, index=hard.tolist())
        add_linear_rows(m, "margin_ind", A[zrows], vars_, lb=1.0, index=zrows.tolist())
        m.margin_ind.deactivate()
        m._milopt_indicators = [{"rows": m.margin_ind, "binaries": [m.zeta[i] for i in zrows.tolist()],
                                 "active_value": 0}]
    else:
        rel = sp.csr_matrix((np.ones(nz) if sos else L[zrows], (zrows, (o_s if sos else o_zeta) - o_zeta + np.arange(nz))),
                            shape=(n, nv - o_zeta))
        A = sp.hstack([Zs, bcol, XI, rel], format="csr")
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
                      "norm": norm, "disjunction": disjunction, "C": float(C), "class_weight": class_weight}
    m._milopt_bags = bags
    return m


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
    free = np.ones(bags.n_instances, dtype=bool)
    for i in model.ZETA:
        v = model.zeta[i].value
        free[i] = v is None or v < 0.5
    masked = np.where(free, scores, -np.inf)
    from milopt.segments import segment_argmax

    arg = segment_argmax(masked, ptr)
    pos = np.flatnonzero(bags.y == 1)
    return {"w": w, "b": b, "xi": xi, "witnesses": dict(zip(pos.tolist(), arg[pos].tolist()))}


def objective_value(bags: Bags, w, b, C=1.0, class_weight="kent-yu", norm: str = "l2") -> float:
    """MI-SVM objective of (w, b) with optimal slacks for that (w, b).

    ``norm="l2"``: ½‖w‖² + Σ C_I ξ_I; ``norm="l1"``: ‖w‖₁ + Σ C_I ξ_I.
    """
    costs = bag_costs(bags, C, class_weight)
    w = np.asarray(w, dtype=float)
    s = bags.X @ w + b
    ptr = bags.bag_ptr
    mx = segment_max(s, ptr)
    pos = bags.y == 1
    xi = np.where(pos, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + mx))
    reg = float(np.abs(w).sum()) if str(norm).lower() == "l1" else float(0.5 * np.dot(w, w))
    return reg + float(np.dot(costs, xi))


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

    arg = segment_argmax(s, ptr)
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
    """Warm start of ``milopt solve misvm-bigm --warm-start``: a linear SVM on the instances with
    bag labels copied (liblinear, class-balanced), made feasible by :func:`warm_start`."""
    from milopt.numerics import sil_start

    meta = model._milopt_meta
    w, b = sil_start(model._milopt_bags, C=meta.get("C", 1.0))
    warm_start(model, w, b)
