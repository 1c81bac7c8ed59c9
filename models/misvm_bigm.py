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
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.models._linear import add_linear_rows, var_list
from milopt.segments import expand, segment_max, segment_mean

PROBLEM_CLASS = "MIQP"

#: keys accepted from the command line: name -> (type, default, help)
PARAMS = {
    "C": (float, 1.0, "misclassification cost"),
    "class_weight": (str, "kent-yu", "kent-yu | balanced | none"),
    "big_m": (str, "valid", "valid (provable, per instance) | mildsvm (100 x sum of column mean |x|) | a number"),
}


def bag_costs(bags: Bags, C: float, class_weight="kent-yu") -> np.ndarray:
    """Per-bag cost C_I (see module docstring)."""
    if not (C > 0 and np.isfinite(C)):
        raise InvalidParameterError(f"C: expected a positive finite cost, got {C}")
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


def valid_big_m(bags: Bags, costs: np.ndarray, upper_bound: float | None = None) -> np.ndarray:
    """Per-instance provably valid L_{I,i} (module docstring), shape (n_instances,)."""
    F0 = trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(upper_bound):
        F0 = min(F0, float(upper_bound))
    W = np.sqrt(2.0 * F0)
    ptr = bags.bag_ptr
    cent = segment_mean(bags.X, ptr)
    dist = np.linalg.norm(bags.X - expand(cent, ptr), axis=1)
    return W * (dist + expand(segment_max(dist, ptr), ptr))


def mildsvm_big_m(bags: Bags) -> float:
    """mildsvm's L = 100 * sum over columns of mean |x| (no validity guarantee)."""
    return float(100.0 * np.abs(bags.X).mean(axis=0).sum())


def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", big_m="valid", upper_bound: float | None = None,
          **unused) -> pe.ConcreteModel:
    """Build the big-M MIQP for ``bags`` (binary labels).

    Parameters
    ----------
    bags : Bags
        Binary MIL data (labels 0/1).
    C : float
        Cost of a bag slack (before class weighting).
    class_weight : {'kent-yu', 'balanced', 'none'}
    big_m : 'valid' | 'mildsvm' | float
        Big-M rule: the provably valid per-instance bound, mildsvm's heuristic constant, or a
        user constant.
    upper_bound : float, optional
        Objective of a known feasible point; tightens the valid big-M.
    """
    if unused:
        raise InvalidParameterError(f"misvm-bigm: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)} "
                                    "(and upper_bound)")
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
        L = valid_big_m(bags, costs, upper_bound)
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

    m = pe.ConcreteModel(name="misvm_bigm")
    m.F = pe.RangeSet(0, d - 1)
    m.BAGS = pe.RangeSet(0, B - 1)
    m.w = pe.Var(m.F, initialize=0.0)
    m.b = pe.Var(initialize=0.0)
    m.xi = pe.Var(m.BAGS, domain=pe.NonNegativeReals, initialize=1.0)
    m.ZETA = pe.Set(initialize=zrows.tolist(), ordered=True)
    m.zeta = pe.Var(m.ZETA, domain=pe.Binary, initialize=0)
    vars_ = var_list(m.w, m.b, m.xi, m.zeta)

    # instance rows: sign * (z_i w + b) + xi_I + L_i zeta_i >= 1  (sign -1 for negative bags)
    sign = np.where(inst_pos, 1.0, -1.0)
    Zs = sp.csr_matrix(X * sign[:, None])
    bcol = sp.csr_matrix(sign[:, None])
    XI = sp.csr_matrix((np.ones(n), (np.arange(n), bags.bag_index)), shape=(n, B))
    ZE = sp.csr_matrix((L[zrows], (zrows, np.arange(nz))), shape=(n, nz))
    A = sp.hstack([Zs, bcol, XI, ZE], format="csr")
    add_linear_rows(m, "margin", A, vars_, lb=1.0)

    # cardinality: sum of zeta over a positive bag <= |I| - 1
    zb = bags.bag_index[zrows]
    cbags = np.unique(zb)
    crow = np.searchsorted(cbags, zb)
    Acard = sp.csr_matrix((np.ones(nz), (crow, d + 1 + B + np.arange(nz))), shape=(cbags.size, len(vars_)))
    add_linear_rows(m, "witness", Acard, vars_, ub=sizes[cbags] - 1.0, index=cbags.tolist())

    cost = costs.tolist()
    m.obj = pe.Objective(expr=0.5 * pe.quicksum(m.w[k] ** 2 for k in range(d))
                         + pe.quicksum(cost[I] * m.xi[I] for I in range(B)), sense=pe.minimize)
    m._milopt_class = PROBLEM_CLASS if nz else "QP"
    m._milopt_meta = {"big_m": L, "costs": costs, "n_features": d, "instances": n}
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


def objective_value(bags: Bags, w, b, C=1.0, class_weight="kent-yu") -> float:
    """MI-SVM objective of (w, b): ½‖w‖² + Σ C_I ξ_I with optimal slacks for that (w, b)."""
    costs = bag_costs(bags, C, class_weight)
    s = bags.X @ np.asarray(w) + b
    ptr = bags.bag_ptr
    mx = segment_max(s, ptr)
    pos = bags.y == 1
    xi = np.where(pos, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + mx))
    return float(0.5 * np.dot(w, w) + np.dot(costs, xi))


def warm_start(model, w, b) -> None:
    """Set a feasible starting point from (w, b): slacks at their minimum, ζ = 0 on the best instance of each positive bag."""
    bags = model._milopt_bags
    w = np.asarray(w, dtype=float)
    d = w.size
    for k in range(d):
        model.w[k].value = float(w[k])
    model.b.value = float(b)
    s = bags.X @ w + b
    ptr = bags.bag_ptr
    from milopt.segments import segment_argmax

    arg = segment_argmax(s, ptr)
    mx = s[arg]
    pos = bags.y == 1
    neg_mx = segment_max(s, ptr)
    L = model._milopt_meta["big_m"]
    xi = np.where(pos, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + neg_mx))
    # a non-witness instance of a positive bag may need a larger slack when L is small
    zeta = {i: (0 if i == arg[bags.bag_index[i]] else 1) for i in model.ZETA}
    need = np.zeros(bags.n_bags)
    for i, z in zeta.items():
        if z == 1:
            need[bags.bag_index[i]] = max(need[bags.bag_index[i]], 1.0 - s[i] - L[i])
    xi = np.maximum(xi, need)
    for I in model.BAGS:
        model.xi[I].value = float(xi[I])
    for i, z in zeta.items():
        model.zeta[i].value = z
