r"""MI-SVM with the witness disjunction of every positive bag in extended (convex-hull) form.

MI-SVM (Andrews, Tsochantaridis & Hofmann, NIPS 2002; the MIP of Kent & Yu, eq. 5) asks, for
every positive bag *I*, for at least one witness *j* whose margin row holds:

.. math::

    \min_{w,b,\xi \ge 0}\ \tfrac12\lVert w\rVert^2 + \sum_I C_I\xi_I \quad\text{s.t.}\quad
    -(w^\top z_i + b) \ge 1 - \xi_I\ (Y_I = -1),\qquad
    \bigvee_{j \in I} \big[\, w^\top z_j + b \ge 1 - \xi_I \,\big]\ (Y_I = +1).

Kent & Yu write the disjunction with a big-M (``misvm-bigm``).  Here it is written as the convex
hull of the union of its disjuncts (Balas' disjunctive programming; for convex disjuncts with a
convex objective, the perspective formulation of Ceria & Soares, *Convex programming for
disjunctive convex optimization*, Math. Programming 86, 1999, and Stubbs & Mehrotra 1999).
The disjuncts must be bounded for the hull to be closed and useful, so every solution with
objective at most an incumbent value :math:`F` is confined to the box of
:func:`milopt.models.misvm_bigm.incumbent_bounds` (:math:`\lVert w\rVert \le W = \sqrt{2F}`,
:math:`b \in [b^-, b^+]`, :math:`0 \le \xi_I \le \bar\xi_I = F/C_I`).  For every positive bag
*I* with at least two instances and every :math:`j \in I`, a binary :math:`\lambda_j` (*j* is the
designated witness) and a copy :math:`(w^j, b^j, \xi^j, t^j)`:

.. math::

    & w = \textstyle\sum_{j\in I} w^j,\quad b = \sum_{j\in I} b^j,\quad \xi_I = \sum_{j \in I}\xi^j,
      \quad \sum_{j\in I}\lambda_j = 1, \\
    & (w^j)^\top z_j + b^j + \xi^j \ge \lambda_j, \quad b^-\lambda_j \le b^j \le b^+\lambda_j,
      \quad 0 \le \xi^j \le \bar\xi_I\lambda_j, \\
    & \lVert w^j\rVert^2 \le 2\,t^j\lambda_j,\quad 0 \le t^j \le F\lambda_j, \qquad
      \tau \ge \textstyle\sum_{j \in I} t^j, \qquad \tau \ge \tfrac12\lVert w\rVert^2,

objective :math:`\tau + \sum_I C_I\xi_I`.  :math:`\lVert w^j\rVert^2 \le 2 t^j\lambda_j`
(:math:`t^j, \lambda_j \ge 0`) is a rotated second-order cone: the perspective of
:math:`\tfrac12\lVert w\rVert^2`, which also bounds :math:`\lVert w^j\rVert \le W\lambda_j`.  With
``perspective=False`` the cones are replaced by the box :math:`|w^j_k| \le W\lambda_j` and the
objective is :math:`\tfrac12\lVert w\rVert^2 + \sum C_I\xi_I` (an MIQP with linear rows only).
In addition the model keeps the big-M rows :math:`w^\top z_j + b + \xi_I \ge 1 - L_j(1-\lambda_j)`
with the valid :math:`L` of ``misvm-bigm`` (redundant for binary λ), so that its continuous
relaxation is contained in the big-M model's (with :math:`\zeta = 1 - \lambda`).

**Exactness** (proofs in docs/misvm_hull.md): for binary λ the copies of non-witnesses vanish
(:math:`\lVert w^j\rVert \le W\lambda_j`, and the b, ξ, t bounds), the witness copy equals
:math:`(w, b, \xi_I)`, and :math:`\tau` is :math:`\tfrac12\lVert w\rVert^2` at an optimum: the
model has the MI-SVM optimum.  For one bag, the constraints above describe the closed convex
hull of the union of its disjuncts intersected with the box (with the cone: of their epigraphs
under :math:`\tfrac12\lVert w\rVert^2`); the intersection over bags is a relaxation of the
hull of the whole problem, not the hull itself.

Size: one copy of w per positive-bag instance: :math:`\sum_{Y_I=+1}|I|\cdot d` extra variables.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.models import misvm_bigm as _bigm
from milopt.models._linear import add_linear_rows, var_list

PROBLEM_CLASS = "MIQCQP"

#: keys accepted from the command line: name -> (type, default, help)
PARAMS = {
    "C": (float, 1.0, "misclassification cost"),
    "class_weight": (str, "kent-yu", "kent-yu | balanced | none"),
    "perspective": (bool, True, "true: rotated-cone perspective of 1/2||w||^2 per witness copy (MIQCQP); "
                                "false: box |w^j_k| <= W lambda_j (MIQP)"),
    "reduce": (bool, False, "drop instances inside the convex hull of the other instances of their bag"),
    "warm_start": (bool, True, "start from the incumbent of misvm-bigm (its objective F also gives the box)"),
    "upper_bound": (float, None, "objective of a known feasible point (tightens the box)"),
}


def problem_class(perspective=True, **unused):
    """MIQCQP with the perspective cones, MIQP with the box."""
    return ("MIQCQP" if perspective in (True, "true", "True", 1, None) else "MIQP"), ()


def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", perspective: bool = True, reduce: bool = False,
          warm_start: bool = False, upper_bound: float | None = None, **unused) -> pe.ConcreteModel:
    """Build the convex-hull MI-SVM model (module docstring).

    Parameters
    ----------
    bags : Bags
        Binary MIL data.
    C, class_weight : as ``misvm-bigm``.
    perspective : bool
        Perspective cones (MIQCQP) or box-disaggregated hull (MIQP).
    reduce : bool
        Drop instances inside the convex hull of the rest of their bag
        (:func:`milopt.models.misvm_bigm.hull_interior`; optimum unchanged).
    warm_start : bool
        Compute the incumbent of :func:`milopt.models.misvm_bigm.incumbent`; its objective gives
        F, its point the model's starting values (``model._milopt_start``).  ``milopt solve``
        defaults to true.
    upper_bound : float, optional
        Objective of a known feasible point.

    Returns
    -------
    pyomo.environ.ConcreteModel
        Components ``w, b, xi, lam, wc, bc, xc`` (+ ``t, tau, cone, tau_def, persp_obj, t_cap``
        with the perspective; + ``wbox_lo, wbox_hi`` with the box), rows ``margin`` (hard
        rows), ``choose, link_w, link_b, link_xi, margin_hull, bcopy_lo, bcopy_hi, xcopy,
        margin_bigm``, ``obj``.
    """
    if unused:
        raise InvalidParameterError(f"misvm-hull: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)}")
    for name, v in (("perspective", perspective), ("reduce", reduce), ("warm_start", warm_start)):
        if not isinstance(v, (bool, np.bool_)):
            raise InvalidParameterError(f"{name}: expected true or false, got {v!r}")
    if bags.n_classes > 2:
        raise InvalidParameterError("misvm-hull: binary bag labels (0/1) are required")
    if upper_bound is not None:
        try:
            upper_bound = float(upper_bound)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"upper_bound: expected a number, got {upper_bound!r}") from None
    X, ptr = bags.X, bags.bag_ptr
    n, d = X.shape
    B = bags.n_bags
    costs = _bigm.bag_costs(bags, C, class_weight)
    inc = _bigm.incumbent(bags, C, class_weight) if warm_start else None
    F = _bigm.trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(upper_bound):
        F = min(F, upper_bound)
    if inc is not None:
        F = min(F, inc["objective"])
    removed = _bigm.hull_interior(bags) if reduce else np.zeros(n, dtype=bool)
    kept = ~removed
    bnd = _bigm.incumbent_bounds(bags, costs, F, "l2", mask=kept)
    Fb, W, L = bnd["F"], bnd["W"], bnd["L"]
    pos_bag = bags.y == 1
    inst_pos = pos_bag[bags.bag_index]
    sizes = np.add.reduceat(kept.astype(np.int64), ptr[:-1])
    hull_inst = inst_pos & kept & (sizes[bags.bag_index] >= 2)    # disjuncts
    J = np.flatnonzero(hull_inst)
    nJ = J.size
    hard = np.flatnonzero(kept & ~hull_inst)                      # plain margin rows
    HB = np.unique(bags.bag_index[J])                              # bags in hull form
    hb_row = np.full(B, -1)
    hb_row[HB] = np.arange(HB.size)
    jb = bags.bag_index[J]
    persp = bool(perspective)

    m = pe.ConcreteModel(name="misvm_hull")
    with PauseGC():
        m.F = pe.RangeSet(0, d - 1)
        m.BAGS = pe.RangeSet(0, B - 1)
        m.J = pe.Set(initialize=J.tolist(), ordered=True)
        m.HB = pe.Set(initialize=HB.tolist(), ordered=True)
        m.w = pe.Var(m.F, bounds=(-W, W), initialize=0.0)
        m.b = pe.Var(bounds=(bnd["b_lo"] if np.isfinite(bnd["b_lo"]) else None,
                             bnd["b_hi"] if np.isfinite(bnd["b_hi"]) else None), initialize=0.0)
        m.xi = pe.Var(m.BAGS, bounds=lambda mdl, I: (0.0, float(bnd["xi_hi"][I])), initialize=0.0)
        m.lam = pe.Var(m.J, domain=pe.Binary, initialize=0)
        m.wc = pe.Var(m.J, m.F, bounds=(-W, W), initialize=0.0)
        m.bc = pe.Var(m.J, initialize=0.0)
        m.xc = pe.Var(m.J, domain=pe.NonNegativeReals, initialize=0.0)
        comps = [m.w, m.b, m.xi, m.lam, m.wc, m.bc, m.xc]
        if persp:
            m.t = pe.Var(m.J, domain=pe.NonNegativeReals, initialize=0.0)
            m.tau = pe.Var(domain=pe.NonNegativeReals, initialize=0.0)
            comps += [m.t, m.tau]
        vars_ = var_list(*comps)
        nv = len(vars_)
    o_b, o_xi, o_lam = d, d + 1, d + 1 + B
    o_wc = o_lam + nJ
    o_bc = o_wc + nJ * d
    o_xc = o_bc + nJ
    o_t = o_xc + nJ
    o_tau = o_t + nJ
    assert vars_[o_wc + d + 1] is m.wc[J[1], 1] if nJ > 1 and d > 1 else True

    def mat(rows, cols, vals, nrows):
        return sp.csr_matrix((np.asarray(vals, dtype=float), (np.asarray(rows), np.asarray(cols))), shape=(nrows, nv))

    # hard margin rows: negative bags, positive bags with one (kept) instance
    sign = np.where(inst_pos, 1.0, -1.0)
    nh = hard.size
    Zh = sp.csr_matrix(X[hard] * sign[hard, None])
    A = sp.hstack([Zh, sp.csr_matrix(sign[hard, None]),
                   sp.csr_matrix((np.ones(nh), (np.arange(nh), bags.bag_index[hard])), shape=(nh, B)),
                   sp.csr_matrix((nh, nv - o_lam))], format="csr")
    add_linear_rows(m, "margin", A, vars_, lb=1.0, index=hard.tolist())
    k = np.arange(nJ)
    r = hb_row[jb]
    nb = HB.size
    # one designated witness per bag
    add_linear_rows(m, "choose", mat(r, o_lam + k, np.ones(nJ), nb), vars_, lb=1.0, ub=1.0, index=HB.tolist())
    # w = sum_j w^j (rows (I, k))
    rr = (r[:, None] * d + np.arange(d)[None, :]).ravel()
    cc = (o_wc + k[:, None] * d + np.arange(d)[None, :]).ravel()
    Aw = mat(np.concatenate([rr, np.arange(nb * d)]), np.concatenate([cc, np.tile(np.arange(d), nb)]),
             np.concatenate([np.ones(nJ * d), -np.ones(nb * d)]), nb * d)
    add_linear_rows(m, "link_w", Aw, vars_, lb=0.0, ub=0.0)  # row r * d + k: bag HB[r], feature k
    add_linear_rows(m, "link_b", mat(np.concatenate([r, np.arange(nb)]), np.concatenate([o_bc + k, np.full(nb, o_b)]),
                                     np.concatenate([np.ones(nJ), -np.ones(nb)]), nb), vars_, lb=0.0, ub=0.0,
                    index=HB.tolist())
    add_linear_rows(m, "link_xi", mat(np.concatenate([r, np.arange(nb)]), np.concatenate([o_xc + k, o_xi + HB]),
                                      np.concatenate([np.ones(nJ), -np.ones(nb)]), nb), vars_, lb=0.0, ub=0.0,
                    index=HB.tolist())
    # (w^j) z_j + b^j + xi^j - lambda_j >= 0
    Am = mat(np.concatenate([np.repeat(k, d), k, k, k]),
             np.concatenate([cc, o_bc + k, o_xc + k, o_lam + k]),
             np.concatenate([X[J].ravel(), np.ones(nJ), np.ones(nJ), -np.ones(nJ)]), nJ)
    add_linear_rows(m, "margin_hull", Am, vars_, lb=0.0, index=J.tolist())
    # copies vanish with lambda: b^- lam <= b^j <= b^+ lam, xi^j <= xi_hi lam
    if np.isfinite(bnd["b_lo"]):
        add_linear_rows(m, "bcopy_lo", mat(np.concatenate([k, k]), np.concatenate([o_bc + k, o_lam + k]),
                                           np.concatenate([np.ones(nJ), np.full(nJ, -bnd["b_lo"])]), nJ),
                        vars_, lb=0.0, index=J.tolist())
    if np.isfinite(bnd["b_hi"]):
        add_linear_rows(m, "bcopy_hi", mat(np.concatenate([k, k]), np.concatenate([o_bc + k, o_lam + k]),
                                           np.concatenate([np.ones(nJ), np.full(nJ, -bnd["b_hi"])]), nJ),
                        vars_, ub=0.0, index=J.tolist())
    add_linear_rows(m, "xcopy", mat(np.concatenate([k, k]), np.concatenate([o_xc + k, o_lam + k]),
                                    np.concatenate([np.ones(nJ), -bnd["xi_hi"][jb]]), nJ), vars_, ub=0.0,
                    index=J.tolist())
    # the valid big-M rows, redundant for binary lambda: w z_j + b + xi_I - L_j lambda_j >= 1 - L_j
    Ab = mat(np.concatenate([np.repeat(k, d), k, k, k]),
             np.concatenate([np.tile(np.arange(d), nJ), np.full(nJ, o_b), o_xi + jb, o_lam + k]),
             np.concatenate([X[J].ravel(), np.ones(nJ), np.ones(nJ), -L[J]]), nJ)
    add_linear_rows(m, "margin_bigm", Ab, vars_, lb=1.0 - L[J], index=J.tolist())

    cost = costs.tolist()
    xi_term = pe.quicksum(cost[I] * m.xi[I] for I in range(B))
    if persp:
        # t^j <= F lambda_j;  tau >= sum_{j in I} t^j;  ||w^j||^2 <= 2 t^j lambda_j;  tau >= 1/2 ||w||^2
        add_linear_rows(m, "t_cap", mat(np.concatenate([k, k]), np.concatenate([o_t + k, o_lam + k]),
                                        np.concatenate([np.ones(nJ), np.full(nJ, -Fb)]), nJ), vars_, ub=0.0,
                        index=J.tolist())
        add_linear_rows(m, "persp_obj", mat(np.concatenate([np.arange(nb), r]),
                                            np.concatenate([np.full(nb, o_tau), o_t + k]),
                                            np.concatenate([np.ones(nb), -np.ones(nJ)]), nb), vars_, lb=0.0,
                        index=HB.tolist())
        with PauseGC():
            m.cone = pe.Constraint(m.J, rule=lambda mdl, j: pe.quicksum(mdl.wc[j, q] ** 2 for q in range(d))
                                   - 2.0 * mdl.t[j] * mdl.lam[j] <= 0)
            m.tau_def = pe.Constraint(expr=0.5 * pe.quicksum(m.w[q] ** 2 for q in range(d)) - m.tau <= 0)
        m.obj = pe.Objective(expr=m.tau + xi_term, sense=pe.minimize)
        cls = "MIQCQP" if nJ else "QCQP"
    else:
        # |w^j_k| <= W lambda_j
        cl = np.repeat(o_lam + k, d)
        add_linear_rows(m, "wbox_lo", mat(np.concatenate([np.arange(nJ * d)] * 2), np.concatenate([cc, cl]),
                                          np.concatenate([np.ones(nJ * d), np.full(nJ * d, W)]), nJ * d),
                        vars_, lb=0.0)
        add_linear_rows(m, "wbox_hi", mat(np.concatenate([np.arange(nJ * d)] * 2), np.concatenate([cc, cl]),
                                          np.concatenate([np.ones(nJ * d), np.full(nJ * d, -W)]), nJ * d),
                        vars_, ub=0.0)
        m.obj = pe.Objective(expr=0.5 * pe.quicksum(m.w[q] ** 2 for q in range(d)) + xi_term, sense=pe.minimize)
        cls = "MIQP" if nJ else "QP"
    m._milopt_class = cls
    m._milopt_features = ()
    m._milopt_meta = {"costs": costs, "n_features": d, "instances": n, "C": float(C), "class_weight": class_weight,
                      "perspective": persp, "upper_bound": float(F), "bounds": bnd, "removed": removed,
                      "big_m": L, "disjuncts": int(nJ), "incumbent": None if inc is None else inc["objective"],
                      "incumbent_source": None if inc is None else inc["source"]}
    m._milopt_bags = bags
    if inc is not None:
        set_start(m, inc["w"], inc["b"])
        m._milopt_start = True
    return m


def decode(model) -> dict:
    """Learned classifier: w, b, slacks and the designated witness (row) of every positive bag."""
    d = model._milopt_meta["n_features"]
    bags = model._milopt_bags
    w = np.array([pe.value(model.w[k], exception=False) or 0.0 for k in range(d)])
    b = float(pe.value(model.b, exception=False) or 0.0)
    xi = np.array([pe.value(model.xi[I], exception=False) or 0.0 for I in model.BAGS])
    scores = bags.X @ w + b
    wit = {}
    for j in model.J:
        I = int(bags.bag_index[j])
        v = model.lam[j].value or 0.0
        if I not in wit or v > wit[I][1]:
            wit[I] = (j, v)
    removed = model._milopt_meta["removed"]
    ptr = bags.bag_ptr
    out = {I: j for I, (j, _) in wit.items()}
    for I in np.flatnonzero(bags.y == 1).tolist():
        if I not in out:  # bag in plain form: its only kept instance
            s, e = ptr[I], ptr[I + 1]
            cand = np.flatnonzero(~removed[s:e])
            out[I] = int(s + cand[np.argmax(scores[s + cand])])
    return {"w": w, "b": b, "xi": xi, "witnesses": out}


def set_start(model, w, b) -> None:
    """Feasible starting values from (w, b): minimal slacks, λ = 1 on the highest-scoring kept
    instance of each bag, its copy equal to (w, b, ξ_I, ½‖w‖²), the other copies 0."""
    bags = model._milopt_bags
    meta = model._milopt_meta
    w = np.asarray(w, dtype=float)
    d = w.size
    s = bags.X @ w + b
    ptr = bags.bag_ptr
    from milopt.segments import segment_argmax, segment_max

    removed = meta["removed"]
    sm = np.where(removed, -np.inf, s)
    arg = segment_argmax(sm, ptr)
    mx = segment_max(sm, ptr)
    pos = bags.y == 1
    xi = np.where(pos, np.maximum(0.0, 1.0 - mx), np.maximum(0.0, 1.0 + mx))
    half = 0.5 * float(w @ w)
    for k in range(d):
        model.w[k].value = float(w[k])
    model.b.value = float(b)
    for I in model.BAGS:
        model.xi[I].value = float(xi[I])
    for j in model.J:
        I = int(bags.bag_index[j])
        on = int(arg[I] == j)
        model.lam[j].value = on
        for k in range(d):
            model.wc[j, k].value = float(w[k]) * on
        model.bc[j].value = float(b) * on
        model.xc[j].value = float(xi[I]) * on
        if meta["perspective"]:
            model.t[j].value = half * on
    if meta["perspective"]:
        model.tau.value = half


def default_start(model) -> None:
    """Starting values from :func:`milopt.models.misvm_bigm.incumbent` (for a model built cold)."""
    meta = model._milopt_meta
    inc = _bigm.incumbent(model._milopt_bags, meta["C"], meta["class_weight"])
    set_start(model, inc["w"], inc["b"])


def model_size_estimate(bags: Bags) -> dict:
    """Variables and linear nonzeros of the hull model (no build): the copies dominate."""
    pos = bags.y[bags.bag_index] == 1
    P = int(pos.sum())
    d = bags.n_features
    return {"disjuncts": P, "copy_variables": P * d, "link_rows": int((bags.y == 1).sum()) * d,
            "nonzeros_approx": 3 * P * d + bags.n_instances * (d + 2)}
