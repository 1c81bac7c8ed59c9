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
:func:`milopt.mil.bigm.incumbent_bounds` (:math:`\lVert w\rVert \le W = \sqrt{2F}`,
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

The box, the big-M and :math:`F` are those of :func:`milopt.mil.bigm.incumbent_bounds` rounded
outward to 8 significant digits (``stable_bounds`` of the big-M model): still valid,
and the same bytes in the written ``.mps`` whatever numpy or BLAS computed them.

Size: one copy of w per positive-bag instance: :math:`\sum_{Y_I=+1}|I|\cdot d` extra variables.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.mil.bigm import hull_interior, incumbent, incumbent_bounds, known_bound
from milopt.models._linear import add_linear_rows, var_list
from milopt.models.info import MILModel
from milopt.models.info import info as model_info
from milopt.models.misvm_bigm import stable_bounds
from milopt.numerics import bag_costs
from milopt.params import Bool, Choice, Float, ParamSet, parse_bool
from milopt.segments import segment_argmax, segment_max

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    C=Float(1.0, "misclassification cost", gt=0),
    class_weight=Choice("kent-yu", ("kent-yu", "balanced", "none"), "kent-yu | balanced | none"),
    perspective=Bool(True, "true: rotated-cone perspective of 1/2||w||^2 per witness copy (MIQCQP); "
                           "false: box |w^j_k| <= W lambda_j (MIQP)"),
    reduce=Bool(False, "drop instances inside the convex hull of the other instances of their bag"),
    warm_start=Bool(True, "start from the incumbent of misvm-bigm (its objective F also gives the box)"),
    upper_bound=Float(None, "objective of a known feasible point (tightens the box)", finite=False),
)


def problem_class(perspective=True, **unused):
    """MIQCQP with the perspective cones, MIQP with the box."""
    return ("MIQCQP" if perspective is None or parse_bool("perspective", perspective) else "MIQP"), ()


def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", perspective: bool = True, reduce: bool = False,
          warm_start: bool = False, upper_bound: float | None = None, **unused) -> MILModel:
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
        (:func:`milopt.mil.bigm.hull_interior`; optimum unchanged).
    warm_start : bool
        Compute the incumbent of :func:`milopt.mil.bigm.incumbent`; its objective gives
        F, its point the model's starting values (``ModelInfo.start``).  ``milopt solve``
        defaults to true.
    upper_bound : float, optional
        Objective of a known feasible point.

    Returns
    -------
    MILModel
        Components ``w, b, xi, lam, wc, bc, xc`` (+ ``t, tau, cone, tau_def, persp_obj, t_cap``
        with the perspective; + ``wbox_lo, wbox_hi`` with the box), rows ``margin`` (hard
        rows), ``choose, link_w, link_b, link_xi, margin_hull, bcopy_lo, bcopy_hi, xcopy,
        margin_bigm``, ``obj``.
    """
    if unused:
        raise InvalidParameterError(f"misvm-hull: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)}")
    p = plan(bags, C, class_weight, perspective, reduce, warm_start, upper_bound)
    d, B = bags.n_features, bags.n_bags
    m = MILModel(name="misvm_hull")
    cols = _variables(m, p, d, B)
    _hard_rows(m, bags, p, cols)
    _hull_rows(m, bags, p, cols)
    cost = p.costs.tolist()
    xi_term = pe.quicksum(cost[I] * m.xi[I] for I in range(B))
    if p.perspective:
        _perspective(m, bags, p, cols)
        m.obj = pe.Objective(expr=m.tau + xi_term, sense=pe.minimize)
        cls = problem_class(True)[0]
    else:
        _box(m, p, cols, d)
        m.obj = pe.Objective(expr=0.5 * pe.quicksum(m.w[q] ** 2 for q in range(d)) + xi_term, sense=pe.minimize)
        cls = problem_class(False)[0]
    info = m._milopt
    info.problem_class = cls if p.J.size else cls[2:]    # no disjunction: QCQP / QP
    inc, bnd = p.incumbent, p.bounds
    info.meta = {"costs": p.costs, "n_features": d, "instances": bags.n_instances, "C": float(C),
                 "class_weight": class_weight, "perspective": p.perspective, "upper_bound": p.F, "bounds": bnd,
                 "removed": p.removed, "big_m": bnd["L"], "disjuncts": int(p.J.size),
                 "incumbent": None if inc is None else inc["objective"],
                 "incumbent_source": None if inc is None else inc["source"]}
    info.bags = bags
    if inc is not None:
        set_start(m, inc["w"], inc["b"])
        info.start = True
    return m


@dataclass
class HullPlan:
    """The numbers of a hull build, computed without Pyomo (:func:`plan`): costs, incumbent, F,
    the box ``bounds`` of :func:`~milopt.mil.bigm.incumbent_bounds`, the removed instances, the
    disjuncts ``J`` (kept instances of positive bags with at least two kept instances), the
    plain rows ``hard``, the bags in hull form ``HB`` and each disjunct's row in ``HB``."""

    perspective: bool
    costs: np.ndarray
    incumbent: dict | None
    F: float
    bounds: dict
    removed: np.ndarray
    J: np.ndarray
    hard: np.ndarray
    HB: np.ndarray
    hb_row: np.ndarray


def plan(bags: Bags, C: float = 1.0, class_weight="kent-yu", perspective: bool = True, reduce: bool = False,
         warm_start: bool = False, upper_bound: float | None = None) -> HullPlan:
    """Everything :func:`build` computes before it creates a Pyomo component (parameters as :func:`build`)."""
    perspective = parse_bool("perspective", perspective)
    reduce = parse_bool("reduce", reduce)
    warm_start = parse_bool("warm_start", warm_start)
    if bags.n_classes > 2:
        raise InvalidParameterError("misvm-hull: binary bag labels (0/1) are required")
    if upper_bound is not None:
        try:
            upper_bound = float(upper_bound)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"upper_bound: expected a number, got {upper_bound!r}") from None
    n, B = bags.n_instances, bags.n_bags
    costs = bag_costs(bags, C, class_weight)
    inc, F = known_bound(bags, costs, C, class_weight, "l2", upper_bound, with_incumbent=warm_start)
    removed = hull_interior(bags) if reduce else np.zeros(n, dtype=bool)
    kept = ~removed
    bnd = stable_bounds(incumbent_bounds(bags, costs, F, "l2", mask=kept))    # rounded outward: byte-stable
    sizes = np.add.reduceat(kept.astype(np.int64), bags.bag_ptr[:-1])
    hull_inst = (bags.y == 1)[bags.bag_index] & kept & (sizes[bags.bag_index] >= 2)    # disjuncts
    J = np.flatnonzero(hull_inst)
    HB = np.unique(bags.bag_index[J])
    hb_row = np.full(B, -1)
    hb_row[HB] = np.arange(HB.size)
    return HullPlan(perspective=perspective, costs=costs, incumbent=inc, F=F, bounds=bnd, removed=removed, J=J,
                    hard=np.flatnonzero(kept & ~hull_inst), HB=HB, hb_row=hb_row)


def _variables(m, p: HullPlan, d: int, B: int) -> dict:
    """Variables ``w, b, xi, lam, wc, bc, xc`` (+ ``t, tau`` with the perspective) in the box, and the
    column offsets of each block in ``cols["vars"]``."""
    bnd, W, J, nJ = p.bounds, p.bounds["W"], p.J, p.J.size
    with PauseGC():
        m.F = pe.RangeSet(0, d - 1)
        m.BAGS = pe.RangeSet(0, B - 1)
        m.J = pe.Set(initialize=J.tolist(), ordered=True)
        m.HB = pe.Set(initialize=p.HB.tolist(), ordered=True)
        m.w = pe.Var(m.F, bounds=(-W, W), initialize=0.0)
        m.b = pe.Var(bounds=(bnd["b_lo"] if np.isfinite(bnd["b_lo"]) else None,
                             bnd["b_hi"] if np.isfinite(bnd["b_hi"]) else None), initialize=0.0)
        m.xi = pe.Var(m.BAGS, bounds=lambda mdl, I: (0.0, float(bnd["xi_hi"][I])), initialize=0.0)
        m.lam = pe.Var(m.J, domain=pe.Binary, initialize=0)
        m.wc = pe.Var(m.J, m.F, bounds=(-W, W), initialize=0.0)
        m.bc = pe.Var(m.J, initialize=0.0)
        m.xc = pe.Var(m.J, domain=pe.NonNegativeReals, initialize=0.0)
        comps = [m.w, m.b, m.xi, m.lam, m.wc, m.bc, m.xc]
        if p.perspective:
            m.t = pe.Var(m.J, domain=pe.NonNegativeReals, initialize=0.0)
            m.tau = pe.Var(domain=pe.NonNegativeReals, initialize=0.0)
            comps += [m.t, m.tau]
        vars_ = var_list(*comps)
    o_lam = d + 1 + B
    o_wc = o_lam + nJ
    o_bc = o_wc + nJ * d
    o_xc = o_bc + nJ
    o_t = o_xc + nJ
    cols = {"vars": vars_, "n": len(vars_), "b": d, "xi": d + 1, "lam": o_lam, "wc": o_wc, "bc": o_bc, "xc": o_xc,
            "t": o_t, "tau": o_t + nJ}
    assert vars_[o_wc + d + 1] is m.wc[J[1], 1] if nJ > 1 and d > 1 else True
    return cols


def _mat(cols: dict, rows, columns, vals, nrows: int) -> sp.csr_matrix:
    return sp.csr_matrix((np.asarray(vals, dtype=float), (np.asarray(rows), np.asarray(columns))),
                         shape=(nrows, cols["n"]))


def _hard_rows(m, bags: Bags, p: HullPlan, cols: dict) -> None:
    """``margin``: the plain rows of negative bags and of positive bags with one kept instance."""
    hard, B = p.hard, bags.n_bags
    sign = np.where((bags.y == 1)[bags.bag_index], 1.0, -1.0)
    nh = hard.size
    A = sp.hstack([sp.csr_matrix(bags.X[hard] * sign[hard, None]), sp.csr_matrix(sign[hard, None]),
                   sp.csr_matrix((np.ones(nh), (np.arange(nh), bags.bag_index[hard])), shape=(nh, B)),
                   sp.csr_matrix((nh, cols["n"] - cols["lam"]))], format="csr")
    add_linear_rows(m, "margin", A, cols["vars"], lb=1.0, index=hard.tolist())


def _hull_rows(m, bags: Bags, p: HullPlan, cols: dict) -> None:
    """The extended formulation of every positive bag's disjunction (module docstring): ``choose``,
    ``link_w``, ``link_b``, ``link_xi``, ``margin_hull``, ``bcopy_lo``/``bcopy_hi``, ``xcopy`` and the
    redundant big-M rows ``margin_bigm``."""
    X, J, bnd, vars_ = bags.X, p.J, p.bounds, cols["vars"]
    d, nJ, nb = X.shape[1], J.size, p.HB.size
    HBl = p.HB.tolist()
    Jl = J.tolist()
    o_b, o_xi, o_lam, o_bc, o_xc = cols["b"], cols["xi"], cols["lam"], cols["bc"], cols["xc"]
    k = np.arange(nJ)
    jb = bags.bag_index[J]
    r = p.hb_row[jb]
    # one designated witness per bag
    add_linear_rows(m, "choose", _mat(cols, r, o_lam + k, np.ones(nJ), nb), vars_, lb=1.0, ub=1.0, index=HBl)
    # w = sum_j w^j (row r * d + k: bag HB[r], feature k)
    rr = (r[:, None] * d + np.arange(d)[None, :]).ravel()
    cc = (cols["wc"] + k[:, None] * d + np.arange(d)[None, :]).ravel()
    Aw = _mat(cols, np.concatenate([rr, np.arange(nb * d)]), np.concatenate([cc, np.tile(np.arange(d), nb)]),
              np.concatenate([np.ones(nJ * d), -np.ones(nb * d)]), nb * d)
    add_linear_rows(m, "link_w", Aw, vars_, lb=0.0, ub=0.0)
    # b = sum_j b^j, xi_I = sum_j xi^j
    for name, own, total in (("link_b", o_bc + k, np.full(nb, o_b)), ("link_xi", o_xc + k, o_xi + p.HB)):
        A = _mat(cols, np.concatenate([r, np.arange(nb)]), np.concatenate([own, total]),
                 np.concatenate([np.ones(nJ), -np.ones(nb)]), nb)
        add_linear_rows(m, name, A, vars_, lb=0.0, ub=0.0, index=HBl)
    # (w^j) z_j + b^j + xi^j - lambda_j >= 0
    Am = _mat(cols, np.concatenate([np.repeat(k, d), k, k, k]), np.concatenate([cc, o_bc + k, o_xc + k, o_lam + k]),
              np.concatenate([X[J].ravel(), np.ones(nJ), np.ones(nJ), -np.ones(nJ)]), nJ)
    add_linear_rows(m, "margin_hull", Am, vars_, lb=0.0, index=Jl)

    # copies vanish with lambda: b^- lam <= b^j <= b^+ lam, xi^j <= xi_hi lam
    def scaled(col, coef):
        return _mat(cols, np.concatenate([k, k]), np.concatenate([col + k, o_lam + k]),
                    np.concatenate([np.ones(nJ), coef]), nJ)

    if np.isfinite(bnd["b_lo"]):
        add_linear_rows(m, "bcopy_lo", scaled(o_bc, np.full(nJ, -bnd["b_lo"])), vars_, lb=0.0, index=Jl)
    if np.isfinite(bnd["b_hi"]):
        add_linear_rows(m, "bcopy_hi", scaled(o_bc, np.full(nJ, -bnd["b_hi"])), vars_, ub=0.0, index=Jl)
    add_linear_rows(m, "xcopy", scaled(o_xc, -bnd["xi_hi"][jb]), vars_, ub=0.0, index=Jl)
    # the valid big-M rows, redundant for binary lambda: w z_j + b + xi_I - L_j lambda_j >= 1 - L_j
    L = bnd["L"]
    Ab = _mat(cols, np.concatenate([np.repeat(k, d), k, k, k]),
              np.concatenate([np.tile(np.arange(d), nJ), np.full(nJ, o_b), o_xi + jb, o_lam + k]),
              np.concatenate([X[J].ravel(), np.ones(nJ), np.ones(nJ), -L[J]]), nJ)
    add_linear_rows(m, "margin_bigm", Ab, vars_, lb=1.0 - L[J], index=Jl)


def _perspective(m, bags: Bags, p: HullPlan, cols: dict) -> None:
    """t^j <= F lambda_j (``t_cap``); tau >= sum_{j in I} t^j (``persp_obj``); ||w^j||^2 <= 2 t^j lambda_j
    (``cone``); tau >= 1/2 ||w||^2 (``tau_def``)."""
    nJ, nb, vars_, d = p.J.size, p.HB.size, cols["vars"], bags.n_features
    k = np.arange(nJ)
    o_t, o_lam = cols["t"], cols["lam"]
    Jl = p.J.tolist()
    add_linear_rows(m, "t_cap", _mat(cols, np.concatenate([k, k]), np.concatenate([o_t + k, o_lam + k]),
                                     np.concatenate([np.ones(nJ), np.full(nJ, -p.bounds["F"])]), nJ),
                    vars_, ub=0.0, index=Jl)
    r = p.hb_row[bags.bag_index[p.J]]
    add_linear_rows(m, "persp_obj", _mat(cols, np.concatenate([np.arange(nb), r]),
                                         np.concatenate([np.full(nb, cols["tau"]), o_t + k]),
                                         np.concatenate([np.ones(nb), -np.ones(nJ)]), nb), vars_, lb=0.0,
                    index=p.HB.tolist())
    with PauseGC():
        m.cone = pe.Constraint(m.J, rule=lambda mdl, j: pe.quicksum(mdl.wc[j, q] ** 2 for q in range(d))
                               - 2.0 * mdl.t[j] * mdl.lam[j] <= 0)
        m.tau_def = pe.Constraint(expr=0.5 * pe.quicksum(m.w[q] ** 2 for q in range(d)) - m.tau <= 0)


def _box(m, p: HullPlan, cols: dict, d: int) -> None:
    """``wbox_lo``/``wbox_hi``: |w^j_k| <= W lambda_j."""
    nJ, W = p.J.size, p.bounds["W"]
    k = np.arange(nJ)
    cc = (cols["wc"] + k[:, None] * d + np.arange(d)[None, :]).ravel()
    cl = np.repeat(cols["lam"] + k, d)
    rows = np.concatenate([np.arange(nJ * d)] * 2)
    add_linear_rows(m, "wbox_lo", _mat(cols, rows, np.concatenate([cc, cl]),
                                       np.concatenate([np.ones(nJ * d), np.full(nJ * d, W)]), nJ * d),
                    cols["vars"], lb=0.0)
    add_linear_rows(m, "wbox_hi", _mat(cols, rows, np.concatenate([cc, cl]),
                                       np.concatenate([np.ones(nJ * d), np.full(nJ * d, -W)]), nJ * d),
                    cols["vars"], ub=0.0)


def decode(model) -> dict:
    """Learned classifier: w, b, slacks and the designated witness (row) of every positive bag."""
    rec = model_info(model)
    d = rec.meta["n_features"]
    bags = rec.bags
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
    removed = rec.meta["removed"]
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
    rec = model_info(model)
    bags, meta = rec.bags, rec.meta
    w = np.asarray(w, dtype=float)
    d = w.size
    s = bags.X @ w + b
    ptr = bags.bag_ptr
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
    """Starting values from :func:`milopt.mil.bigm.incumbent` (for a model built cold)."""
    rec = model_info(model)
    inc = incumbent(rec.bags, rec.meta["C"], rec.meta["class_weight"])
    set_start(model, inc["w"], inc["b"])


def model_size_estimate(bags: Bags) -> dict:
    """Variables and linear nonzeros of the hull model (no build): the copies dominate."""
    pos = bags.y[bags.bag_index] == 1
    P = int(pos.sum())
    d = bags.n_features
    return {"disjuncts": P, "copy_variables": P * d, "link_rows": int((bags.y == 1).sum()) * d,
            "nonzeros_approx": 3 * P * d + bags.n_instances * (d + 2)}
