r"""DC-MIL: the SVM-based MIL error function as a difference of convex functions (DC),
and DCPCA, its proximal bundle method: Pyomo-free mathematics shared by the method
(:mod:`milopt.algorithms.dcmil`) and the models (``dcmil-dca``, ``dcmil-direction``).

Papers
------
* A. Astorino, A. Fuduli, G. Giallombardo, G. Miglionico, "SVM-based multiple instance
  classification via DC optimization", *Algorithms* 12(12):249, 2019 (the model, eqs. 1–3, and
  the use of DCPCA with θ = 0.7, η = 0.7, m = 0.01, σ = 0.01, ε = 0.95).
* M. Gaudioso, G. Giallombardo, G. Miglionico, A. M. Bagirov, "Minimizing nonsmooth DC functions
  via successive DC piecewise-affine approximations", *J. Global Optim.* 71:37–55, 2018 (DCPCA).

The error function
------------------
With bags :math:`J_i^+` (positive) and :math:`J_i^-` (negative), :math:`z = (w, b)` and the
bag score :math:`h_i(z) = \max_{j \in J_i}(w^\top x_j + b)` (convex, piecewise affine):

.. math::

    f(z) = \tfrac12\lVert w\rVert^2 + C\sum_{i \in P}\max\{0, 1 - h_i(z)\}
           + C\sum_{i \in N}\max\{0, 1 + h_i(z)\}.

The positive-bag term is nonconvex.  Using :math:`\max\{0, 1 - h\} = \max\{1, h\} - h`:

.. math::

    f_1(z) = \tfrac12\lVert w\rVert^2 + C\sum_{i \in P}\max\{1, h_i(z)\}
             + C\sum_{i \in N}\max\{0, 1 + h_i(z)\},\qquad
    f_2(z) = C\sum_{i \in P} h_i(z),

both convex, :math:`f = f_1 - f_2`.  One subgradient of each comes from the arg-max instance
:math:`j_i` of every bag (``milopt.segments.segment_argmax``; no loop over bags):
:math:`g^{(1)} = (w, 0) + C\sum_{i \in P, h_i > 1}(x_{j_i}, 1) + C\sum_{i \in N, h_i > -1}(x_{j_i}, 1)`,
:math:`g^{(2)} = C\sum_{i \in P}(x_{j_i}, 1)`.

DCPCA (Astorino et al., Algorithm 1 and §4; docs/dcmil.md)
-----------------------------------------------------------
Around a stability centre :math:`z` two bundles are kept,
:math:`\mathcal B_1 = \{(g^{(1)}_i, \alpha^{(1)}_i)\}_{i\in I}` and
:math:`\mathcal B_2 = \{(g^{(2)}_l, \alpha^{(2)}_l)\}_{l\in L}`, with linearisation errors
:math:`\alpha_i = f_k(z) - f_k(z_i) - g_i^\top(z - z_i) \ge 0`.  The search direction solves

.. math::

    \text{QP}(I):\ \min_{d, v}\ v + \tfrac12\lVert d\rVert^2\quad
    \text{s.t. } v \ge (g^{(1)}_i - g^{(2)})^\top d - \alpha^{(1)}_i,\ i \in I,

with :math:`g^{(2)}` the subgradient of :math:`f_2` at the centre (:math:`\alpha^{(2)} = 0`;
the paper forces :math:`L(0)` to be this singleton); ``b2="all"`` (an option, not the paper's)
instead minimises the difference of the two cutting-plane models,
:math:`\max_i(g^{(1)\top}_i d - \alpha^{(1)}_i) - \max_l(g^{(2)\top}_l d - \alpha^{(2)}_l)
= \min_l\max_i[\dots]` (an upper bound of eq. 10's :math:`\Gamma_k = \max_i\min_l[\dots]`), plus
:math:`\tfrac12\lVert d\rVert^2`, by solving one QP per :math:`l \in L` (constraints shifted by
:math:`+\alpha^{(2)}_l`) and keeping the best.  QP(I)
is solved through its dual over the unit simplex (eqs. 11-12),
:math:`\min_{\lambda\in\Delta}\ \tfrac12\lVert\sum_i\lambda_i a_i\rVert^2 + \sum_i\lambda_i\alpha_i`,
:math:`a_i = g_i^{(1)} - g^{(2)}`, by an exact primal active-set method
(:func:`milopt.qp.qp_simplex.simplex_qp`);
:math:`\bar d = -\sum_i\lambda_i a_i` and :math:`\bar v = \max_i(a_i^\top\bar d - \alpha_i)`.

Main iteration (Algorithm 1; step numbers in brackets): solve QP(I) [1]; stop when
:math:`|\bar v| \le \theta` [2-3]; line search from :math:`t = 1` [5]: if
:math:`f(z + t\bar d) - f(z) \le m t \bar v` [6] make a *serious step* [7-12] (move the centre,
update all linearisation errors, drop :math:`\mathcal B_1` entries with
:math:`\alpha^{(1)} > \varepsilon`, add the new subgradients with :math:`\alpha = 0`);
otherwise, while :math:`t\lVert\bar d\rVert > \eta`, set :math:`t \leftarrow \sigma t` and test
again [13-14]; once :math:`t\lVert\bar d\rVert \le \eta` make a *null step* [16-18]: add
:math:`(g^{(1)}(z + t\bar d),\ f_1(z) - f_1(z + t\bar d) + t\,g^{(1)\top}_+\bar d)` to
:math:`\mathcal B_1`, keep the centre.  §4: the bundle is restarted (to the subgradients at
the centre) when its size exceeds ``bundle_size`` (100) *and* a new stability centre is
obtained, i.e. only at a serious step (each bundle on its own size); null steps may grow
:math:`\mathcal B_1` beyond the threshold until then.
The run stops when the function-evaluation budget is spent (§4: 500 evaluations for the
medium-size problems, 200 for the large ones; ``max_fev="auto"`` picks 200 for data with more
than :data:`LARGE_FEATURES` features — the paper's large problems are the TST text sets with
66,552 features, its medium ones have at most 230).

:func:`dcpca_iterate` runs the iteration above and returns the iterate, the bundles, the
counters and why it stopped (``criticality``, ``budget`` or ``max_iter``);
:func:`milopt.algorithms.dcmil.dcpca` checks the parameters, times it and reports a
``SolveResult``; ``dcmil-direction`` builds QP(I) from the bundle it leaves.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from milopt.qp.qp_simplex import simplex_qp
from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, InvalidParameterError, positive_number
from milopt.segments import segment_argmax

__all__ = ["DCMILObjective", "f", "f1", "f2", "subgradient_f1", "subgradient_f2", "starting_point",
           "solve_direction", "dcpca_iterate", "DCPCARun", "DCPCA_DEFAULTS", "BUDGETS", "LARGE_FEATURES",
           "resolve_budget", "bundle_after"]

#: defaults of the paper (Astorino et al. 2019, Section 4)
DCPCA_DEFAULTS = dict(theta=0.7, eta=0.7, m=0.01, sigma=0.01, eps=0.95, max_fev="auto", bundle_size=100)
#: function-evaluation budgets of §4 (medium-size and large-size problems)
BUDGETS = {"medium": 500, "large": 200}
#: ``max_fev="auto"``: the large-problem budget above this many features (the paper's large
#: problems, TST1-TST10, have 66,552 features; its medium ones, Elephant/Fox/Tiger/MUSK, ≤ 230)
LARGE_FEATURES = 10_000


def resolve_budget(max_fev, n_features: int) -> int:
    """The function-evaluation budget: an integer, 'medium' (500), 'large' (200) or 'auto'
    (200 when ``n_features`` > :data:`LARGE_FEATURES`, else 500)."""
    if isinstance(max_fev, str):
        key = max_fev.strip().lower()
        if key == "auto":
            return BUDGETS["large"] if n_features > LARGE_FEATURES else BUDGETS["medium"]
        if key in BUDGETS:
            return BUDGETS[key]
        try:
            max_fev = int(key)
        except ValueError:
            raise InvalidParameterError(f"max_fev: expected a positive integer, 'auto', 'medium' (500) or "
                                        f"'large' (200), got {max_fev!r}") from None
    if isinstance(max_fev, bool) or not isinstance(max_fev, (int, np.integer, float)) or int(max_fev) != max_fev \
            or int(max_fev) < 1:
        raise InvalidParameterError(f"max_fev: expected a positive integer, 'auto', 'medium' (500) or 'large' (200), "
                                    f"got {max_fev!r}")
    return int(max_fev)


# --------------------------------------------------------------------------------------------
# the objective, vectorised over bags
# --------------------------------------------------------------------------------------------
@dataclass
class _Eval:
    """Values at one point (cached so that subgradients need no extra product X w)."""

    z: np.ndarray
    h: np.ndarray      # bag scores max_j (w x_j + b)
    arg: np.ndarray    # arg-max instance row of each bag
    f1: float
    f2: float

    @property
    def f(self) -> float:
        return self.f1 - self.f2


class DCMILObjective:
    """f = f1 − f2 of Astorino et al. (2019) for binary bags and cost C, with evaluation counters.

    Parameters
    ----------
    bags : Bags
        Binary MIL data (labels 0/1).
    C : float
        Misclassification cost (> 0).

    Attributes
    ----------
    nF, nG1, nG2 : int
        Function evaluations (each gives f, f1 and f2) and subgradient evaluations of f1, f2.
    """

    def __init__(self, bags: Bags, C: float = 1.0):
        if not isinstance(bags, Bags):
            raise InvalidDataError(f"bags: expected milopt.Bags, got {type(bags).__name__}")
        if bags.n_classes > 2:
            raise InvalidDataError("dcmil: binary bag labels (0/1) are required")
        C = positive_number("C", C)
        pos = bags.y == 1
        if not pos.any() or pos.all():
            raise InvalidDataError("dcmil: both positive and negative bags are required")
        self.bags = bags
        self.C = C
        self.X = np.ascontiguousarray(bags.X, dtype=float)
        self.ptr = bags.bag_ptr
        self.pos = pos
        self.n = self.X.shape[1] + 1
        self.nF = self.nG1 = self.nG2 = 0

    # values ---------------------------------------------------------------------------------
    def evaluate(self, z, count: bool = True) -> _Eval:
        """f1, f2 (hence f) at z = (w, b); counts one function evaluation."""
        z = np.asarray(z, dtype=float)
        if z.shape != (self.n,):
            raise InvalidParameterError(f"z: expected shape ({self.n},) = (w, b), got {z.shape}")
        w, b = z[:-1], z[-1]
        s = self.X @ w + b
        arg = segment_argmax(s, self.ptr)
        h = s[arg]
        hp, hn = h[self.pos], h[~self.pos]
        q = 0.5 * float(w @ w)
        f1v = q + self.C * (np.maximum(1.0, hp).sum() + np.maximum(0.0, 1.0 + hn).sum())
        f2v = self.C * hp.sum()
        if count:
            self.nF += 1
        return _Eval(z, h, arg, float(f1v), float(f2v))

    # subgradients ---------------------------------------------------------------------------
    def _sum_rows(self, rows) -> np.ndarray:
        g = np.empty(self.n)
        g[:-1] = self.X[rows].sum(axis=0) if rows.size else 0.0
        g[-1] = rows.size
        return g

    def subgradient1(self, e: _Eval) -> np.ndarray:
        """One subgradient of f1 at ``e.z`` (arg-max instances of active bag terms)."""
        self.nG1 += 1
        act = np.where(self.pos, e.h > 1.0, e.h > -1.0)
        g = self.C * self._sum_rows(e.arg[act])
        g[:-1] += e.z[:-1]
        return g

    def subgradient2(self, e: _Eval) -> np.ndarray:
        """One subgradient of f2 at ``e.z``."""
        self.nG2 += 1
        return self.C * self._sum_rows(e.arg[self.pos])


def _obj(bags, C):
    return DCMILObjective(bags, C)


def _z(w, b):
    return np.append(np.asarray(w, dtype=float), float(b))


def f(bags: Bags, w, b, C: float = 1.0) -> float:
    """The MIL error function f(w, b)."""
    return _obj(bags, C).evaluate(_z(w, b)).f


def f1(bags: Bags, w, b, C: float = 1.0) -> float:
    """First DC component f1(w, b) (convex)."""
    return _obj(bags, C).evaluate(_z(w, b)).f1


def f2(bags: Bags, w, b, C: float = 1.0) -> float:
    """Second DC component f2(w, b) (convex)."""
    return _obj(bags, C).evaluate(_z(w, b)).f2


def subgradient_f1(bags: Bags, w, b, C: float = 1.0) -> np.ndarray:
    """One subgradient of f1 at (w, b), as a vector (g_w, g_b)."""
    o = _obj(bags, C)
    return o.subgradient1(o.evaluate(_z(w, b)))


def subgradient_f2(bags: Bags, w, b, C: float = 1.0) -> np.ndarray:
    """One subgradient of f2 at (w, b), as a vector (g_w, g_b)."""
    o = _obj(bags, C)
    return o.subgradient2(o.evaluate(_z(w, b)))


def starting_point(bags: Bags, margin: float = 1.0) -> np.ndarray:
    """The paper's start: w0 = barycentre of positive-bag instances − barycentre of negative-bag
    instances; b0 the smallest intercept giving every positive bag a score ≥ ``margin``
    (so every positive bag is classified positive and its hinge term is zero)."""
    X, pos_inst = bags.X, bags.instance_bag_y == 1
    w0 = X[pos_inst].mean(axis=0) - X[~pos_inst].mean(axis=0)
    s = X @ w0
    h = s[segment_argmax(s, bags.bag_ptr)]
    b0 = margin - float(h[bags.y == 1].min())
    return np.append(w0, b0)



# --------------------------------------------------------------------------------------------
# QP(I): the search direction from the bundle (its dual over the unit simplex)
# --------------------------------------------------------------------------------------------
def solve_direction(G1, alpha1, g2, alpha2: float = 0.0, x0=None):
    r"""Solve QP(I) for the bundle (G1 rows = g_i^(1), alpha1) and one f2 subgradient g2.

    Returns ``(d, v, lam, info)`` with :math:`d = -\sum\lambda_i(g_i^{(1)} - g^{(2)})`,
    :math:`v = \max_i[(g_i^{(1)} - g^{(2)})^\top d - \alpha_i^{(1)}] + \alpha^{(2)}` (the model's
    predicted change) and ``info['objective']`` = v + ½‖d‖² (equal to minus the dual optimum).
    """
    A = np.asarray(G1, dtype=float) - np.asarray(g2, dtype=float)[None, :]
    al = np.asarray(alpha1, dtype=float) - float(alpha2)
    Q = A @ A.T
    lam, info = simplex_qp(Q, al, x0=x0)
    d = -(lam @ A)
    v = float(np.max(A @ d - al))
    info = dict(info)
    info["objective"] = v + 0.5 * float(d @ d)
    info["dual"] = -0.5 * float(d @ d) - float(lam @ al)
    return d, v, lam, info



# --------------------------------------------------------------------------------------------
# the DCPCA iteration (Algorithm 1)
# --------------------------------------------------------------------------------------------
@dataclass
class DCPCARun:
    """Where a DCPCA run stopped: the stability centre, its values, the bundles and the counters."""

    z: np.ndarray
    centre: "_Eval"
    f0: float
    stop: str                      # 'criticality' (|v| <= theta), 'budget' (max_fev spent) or 'max_iter'
    iterations: int
    v: float | None
    d: np.ndarray | None
    G1: list
    A1: list
    G2: list
    A2: list
    serious: int = 0
    null: int = 0
    restarts: int = 0
    max_bundle: int = 1
    history: list = field(default_factory=list)


def _line_search(obj: "DCMILObjective", ec: "_Eval", d, v: float, nd: float, m: float, eta: float, sigma: float,
                 max_fev: int):
    """Steps 5-15 of Algorithm 1 from t = 1: ``(evaluation at z + t d, t, 'serious' | 'null' | 'budget')``."""
    t = 1.0
    while True:
        et = obj.evaluate(ec.z + t * d)
        if et.f - ec.f <= m * t * v:           # step 6: descent test
            return et, t, "serious"
        if t * nd <= eta:                       # step 13 fails: null step
            return et, t, "null"
        if obj.nF >= max_fev:                   # budget spent inside the line search
            return et, t, "budget"
        t *= sigma                              # step 14


def dcpca_iterate(obj: "DCMILObjective", z, *, theta: float, eta: float, m: float, sigma: float, eps: float,
                  max_fev: int, bundle_size: int, b2: str = "current", max_iter: int | None = None,
                  history: bool = True) -> DCPCARun:
    """Algorithm 1 of Astorino et al. (2019) from ``z`` on ``obj`` (module docstring); parameters as
    :func:`milopt.algorithms.dcmil.dcpca` (already checked; ``max_fev`` an integer)."""
    z = np.asarray(z, dtype=float).copy()
    ec = obj.evaluate(z)
    g1 = obj.subgradient1(ec)
    g2 = obj.subgradient2(ec)
    G1, A1 = [g1], [0.0]
    G2, A2 = [g2], [0.0]
    f0 = ec.f
    serious = null = restarts = 0
    max_bundle = 1
    hist = []
    stop = "budget"
    v = d = None
    lam_prev = None
    it = 0
    while True:
        it += 1
        if max_iter is not None and it > max_iter:
            stop = "max_iter"
            break
        G1a, A1a = np.asarray(G1), np.asarray(A1)
        # step 1: QP(I)
        if b2 == "current":
            x0 = lam_prev if lam_prev is not None and lam_prev.size == len(A1) else None
            d, v, lam, qinfo = solve_direction(G1a, A1a, G2[0], 0.0, x0=x0)
            lam_prev = lam
        else:
            best = None
            for l in range(len(G2)):
                res = solve_direction(G1a, A1a, G2[l], A2[l])
                if best is None or res[3]["objective"] < best[3]["objective"]:
                    best = res
            d, v, lam, qinfo = best
            lam_prev = None
        nd = float(np.linalg.norm(d))
        rec = {"iteration": it, "f": ec.f, "v": v, "norm_d": nd, "bundle1": len(G1), "bundle2": len(G2),
               "nF": obj.nF, "qp_iterations": qinfo["iterations"]}
        # steps 2-3: stopping test
        if abs(v) <= theta:
            stop = "criticality"
            rec["step"] = "stop"
            hist.append(rec)
            break
        if obj.nF >= max_fev:
            stop = "budget"
            rec["step"] = "budget"
            hist.append(rec)
            break
        et, t, step = _line_search(obj, ec, d, v, nd, m, eta, sigma, max_fev)    # steps 5-15
        rec["t"] = t
        rec["step"] = step
        if step == "budget":
            stop = "budget"
            hist.append(rec)
            break
        if step == "serious":                       # steps 7-12
            serious += 1
            dz = et.z - ec.z
            # step 9: linearisation errors at the new centre
            A1a = A1a + (et.f1 - ec.f1) - G1a @ dz
            A2a = np.asarray(A2) + (et.f2 - ec.f2) - np.asarray(G2) @ dz
            np.maximum(A1a, 0.0, out=A1a)
            np.maximum(A2a, 0.0, out=A2a)
            ec, z = et, et.z
            gp1, gp2 = obj.subgradient1(ec), obj.subgradient2(ec)      # step 8
            keep = A1a <= eps                                           # step 10
            G1 = [gp1] + [g for g, k in zip(G1, keep) if k]
            A1 = [0.0] + A1a[keep].tolist()
            # step 11; the centre's f2 subgradient first (QP(I) uses G2[0])
            G2 = [gp2] + list(G2)
            A2 = [0.0] + A2a.tolist()
            lam_prev = None
            # §4: a bundle that exceeds its size is restarted when a new stability centre is obtained
            rec["bundle1_new"], rec["bundle2_new"] = len(G1), len(G2)
            rec["restart"] = []
            if len(G1) > bundle_size:
                G1, A1 = [gp1], [0.0]
                rec["restart"].append(1)
                restarts += 1
            if len(G2) > bundle_size:
                G2, A2 = [gp2], [0.0]
                rec["restart"].append(2)
        else:                                       # steps 16-18: null step at z + t d
            null += 1
            gp1 = obj.subgradient1(et)
            alpha = max(0.0, ec.f1 - et.f1 + t * float(gp1 @ d))
            G1.append(gp1)
            A1.append(alpha)
            if lam_prev is not None:
                lam_prev = np.append(lam_prev, 0.0)
        max_bundle = max(max_bundle, len(G1))
        rec["f_new"] = ec.f
        if history:
            hist.append(rec)
    return DCPCARun(z=z, centre=ec, f0=f0, stop=stop, iterations=it, v=v, d=d, G1=G1, A1=A1, G2=G2, A2=A2,
                    serious=serious, null=null, restarts=restarts, max_bundle=max_bundle, history=hist)


def bundle_after(bags: Bags, C: float = 1.0, iterations: int = 0):
    """DCPCA's bundle ``(G1, alpha1, g2)`` at the paper's starting point after ``iterations`` main
    iterations with the paper's parameters (no stopping test; the ``auto`` evaluation budget)."""
    if int(iterations) < 0:
        raise InvalidParameterError(f"iterations: expected >= 0, got {iterations}")
    obj = DCMILObjective(bags, C)
    p = dict(DCPCA_DEFAULTS, theta=0.0)
    p["max_fev"] = resolve_budget(p["max_fev"], obj.n - 1)
    run = dcpca_iterate(obj, starting_point(bags), max_iter=int(iterations), history=False, **p)
    return np.asarray(run.G1), np.asarray(run.A1), np.asarray(run.G2[0])
