r"""DC-MIL: the SVM-based MIL error function as a difference of convex functions, minimised by
DCPCA (a proximal bundle method for DC functions) or by the plain DC algorithm (DCA).

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
:math:`j_i` of every bag (:func:`milopt.segments.segment_argmax`; no loop over bags):
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
:math:`a_i = g_i^{(1)} - g^{(2)}`, by an exact primal active-set method (:func:`simplex_qp`);
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
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, InvalidParameterError, positive_number
from milopt.segments import segment_argmax

__all__ = ["DCMILObjective", "f", "f1", "f2", "subgradient_f1", "subgradient_f2", "starting_point",
           "simplex_qp", "solve_direction", "dcpca", "dca", "DCPCA_DEFAULTS", "resolve_budget"]

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
# QP(I) through its dual over the unit simplex: an exact primal active-set method
# --------------------------------------------------------------------------------------------
def _nullspace_ones(m: int) -> np.ndarray:
    """Orthonormal basis (m x m-1) of {p : sum(p) = 0} (a Householder reflector)."""
    u = -np.full(m, 1.0 / math.sqrt(m))
    u[0] += 1.0
    nu = np.linalg.norm(u)
    if nu < 1e-15:  # m == 1
        return np.zeros((m, 0))
    u /= nu
    H = np.eye(m) - 2.0 * np.outer(u, u)
    return H[:, 1:]


def simplex_qp(Q, c, x0=None, tol: float = 1e-11, max_iter: int | None = None):
    r"""Minimise :math:`\tfrac12 x^\top Q x + c^\top x` over the unit simplex, exactly.

    A primal active-set method: on the current support F it takes the exact minimiser of the
    objective over :math:`\{x_F : \sum x_F = 1\}` (an eigen-decomposition of the reduced Hessian
    handles a singular Q: a zero-curvature descent direction is followed to the boundary), drops
    the blocking index when a step leaves the simplex, and adds the index with the most negative
    reduced cost :math:`(Qx + c)_j - \mu` until the KKT conditions hold.  Finite termination (no
    tolerance-driven inner iterations): the result is the optimum up to rounding.

    Parameters
    ----------
    Q : (k, k) symmetric positive semidefinite array
    c : (k,) array
    x0 : (k,) array on the simplex, optional
        Warm start (its support is the initial working set).
    tol : float
        Relative tolerance on reduced costs and curvature.

    Returns
    -------
    x : (k,) array
    info : dict
        ``iterations``, ``kkt`` (most negative reduced cost at exit, ≥ −tol·scale when optimal),
        ``converged``.
    """
    Q = np.asarray(Q, dtype=float)
    c = np.asarray(c, dtype=float)
    k = c.size
    if Q.shape != (k, k):
        raise InvalidParameterError(f"simplex_qp: Q must be {k}x{k}, got {Q.shape}")
    scale = max(float(np.abs(np.diag(Q)).max(initial=0.0)), float(np.abs(c).max(initial=0.0)), 1e-300)
    if x0 is not None and np.asarray(x0).shape == (k,) and np.all(np.asarray(x0) >= 0) and abs(np.sum(x0) - 1) < 1e-9:
        x = np.asarray(x0, dtype=float).copy()
        x /= x.sum()
    else:
        x = np.zeros(k)
        x[int(np.argmin(0.5 * np.diag(Q) + c))] = 1.0
    F = x > 0
    max_iter = max_iter or 50 * k + 100
    it = 0
    kkt = -np.inf
    converged = False
    while it < max_iter:
        it += 1
        g = Q @ x + c
        idx = np.flatnonzero(F)
        p = None
        ray = False
        if idx.size > 1:
            m_ = idx.size
            # orthonormal basis of {sum p = 0} by a Householder reflector R = I - 2uu' (first
            # column of R is the normalised ones vector): Z = R[:, 1:], Z'QZ in O(m^2)
            u = -np.full(m_, 1.0 / math.sqrt(m_))
            u[0] += 1.0
            u /= np.linalg.norm(u)
            Qf = Q[np.ix_(idx, idx)]
            Qu = Qf @ u
            uQu = float(u @ Qu)
            M = Qf - 2.0 * np.outer(u, Qu) - 2.0 * np.outer(Qu, u) + 4.0 * uQu * np.outer(u, u)
            H = 0.5 * (M[1:, 1:] + M[1:, 1:].T)
            gi = g[idx]
            r = (gi - 2.0 * u * float(u @ gi))[1:]

            def Zmul(y):
                yf = np.concatenate(([0.0], y))
                return yf - 2.0 * u * float(u @ yf)

            y = None
            hd = float(np.abs(np.diag(H)).max(initial=0.0))
            try:
                L = np.linalg.cholesky(H)
                if np.diag(L).min() ** 2 > 1e-9 * max(hd, 1e-300):
                    y = -np.linalg.solve(L.T, np.linalg.solve(L, r))
            except np.linalg.LinAlgError:
                y = None
            if y is not None:
                p = Zmul(y)
                if np.abs(p).max() <= 1e-13:
                    p = None
            else:
                lam, V = np.linalg.eigh(H)
                rv = V.T @ r
                zero = lam <= 1e-10 * max(float(lam.max()), 1e-300)
                gt = tol * max(1.0, float(np.abs(gi).max()))
                if np.any(zero & (np.abs(rv) > gt)):
                    # zero curvature with negative slope: follow it to the boundary (the objective
                    # decreases linearly); after an index was added to a face with nonsingular
                    # reduced Hessian this direction has a positive component on the new index
                    p = Zmul(-(V[:, zero] @ rv[zero]))
                    ray = True
                else:
                    p = Zmul(V[:, ~zero] @ (-rv[~zero] / lam[~zero]))
                    if np.abs(p).max() <= 1e-13:
                        p = None
                        if zero.any():
                            # a face with singular reduced Hessian at its minimum: slide along a
                            # null direction (objective constant) until an index leaves, to keep
                            # the working set nondegenerate
                            p = Zmul(V[:, np.flatnonzero(zero)[0]])
                            if not np.any(p < -1e-15):
                                p = -p
                            ray = True
        if p is not None:
            neg = p < -1e-15
            if not neg.any():
                if ray:
                    break  # cannot happen on the simplex (sum p = 0, p != 0)
                x[idx] += p
                continue
            steps = np.full(idx.size, np.inf)
            steps[neg] = -x[idx][neg] / p[neg]
            smax = float(steps.min())
            step = smax if ray else min(1.0, smax)
            x[idx] += step * p
            if ray or smax <= 1.0:
                block = idx[neg & (steps <= smax * (1 + 1e-12) + 1e-300)]
                x[block] = 0.0
                F[block] = False
            x[x < 0] = 0.0
            continue
        # face optimal: multiplier of sum(x) = 1 and reduced costs
        mu = float(g[idx].mean())
        red = g - mu
        red[F] = 0.0
        j = int(np.argmin(red))
        kkt = float(red[j])
        if kkt >= -tol * scale:
            converged = True
            break
        F[j] = True
    s = x.sum()
    if s > 0:
        x /= s
    return x, {"iterations": it, "kkt": kkt, "converged": converged}


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
# DCPCA
# --------------------------------------------------------------------------------------------
def _check_params(theta, eta, m, sigma, eps, max_fev, bundle_size):
    for name, v, lo, hi in (("theta", theta, 0.0, np.inf), ("eta", eta, 0.0, np.inf), ("m", m, 0.0, 1.0),
                            ("sigma", sigma, 0.0, 1.0), ("eps", eps, 0.0, np.inf)):
        if not (lo < float(v) < hi or (name in ("theta",) and float(v) == 0.0)):
            raise InvalidParameterError(f"{name}: expected a value in ({lo}, {hi}), got {v}")
    if int(bundle_size) < 2:
        raise InvalidParameterError(f"bundle_size: expected at least 2, got {bundle_size}")


def dcpca(bags: Bags, C: float = 1.0, z0=None, *, theta: float = 0.7, eta: float = 0.7, m: float = 0.01,
          sigma: float = 0.01, eps: float = 0.95, max_fev="auto", bundle_size: int = 100,
          b2: str = "current", max_iter: int | None = None, history: bool = True, keep_bundle: bool = False):
    """Minimise the DC-MIL error function by DCPCA (module docstring).

    Parameters
    ----------
    bags : Bags
        Binary training bags.
    C : float
        Cost.
    z0 : array (n_features + 1,), optional
        Start (w, b); default :func:`starting_point` (the paper's).
    theta, eta, m, sigma, eps : float
        Stopping tolerance on |v̄|, line-search length threshold for a null step, Armijo
        parameter, step reduction, B1 pruning threshold on linearisation errors (paper: 0.7, 0.7,
        0.01, 0.01, 0.95).
    max_fev : int or {'auto', 'medium', 'large'}
        Budget of function evaluations (paper §4: 500 for medium-size, 200 for large-size
        problems; 'auto' chooses by the number of features, see :func:`resolve_budget`).
    bundle_size : int
        Bundle size threshold (paper: 100): when a serious step produces a new stability
        centre and a bundle has more elements than this, that bundle restarts from the
        centre's subgradient (§4); ``extra['restarts']`` counts the restarts of B1.
    b2 : {'current', 'all'}
        'current': QP(I) with the f2 subgradient at the centre (the paper's QP(I));
        'all': one QP per element of B2, keep the best (minimises the difference of the two
        cutting-plane models; not the paper's).
    max_iter : int, optional
        Cap on main iterations (default: unlimited, the evaluation budget governs).
    history : bool
        Record one dict per main iteration.
    keep_bundle : bool
        Put the final bundle ``(G1, alpha1, g2)`` (arrays) in ``extra['bundle']``.

    Returns
    -------
    SolveResult
        solver="dcpca", problem_class="native"; ``objective`` = final f; ``extra`` holds ``w``,
        ``b``, ``nF``, ``nG1``, ``nG2``, ``serious``, ``null``, ``criticality`` (|v̄| of the last
        QP(I)), ``norm_d``, ``cpu_seconds``, ``restarts``.
    """
    from milopt.solvers.result import Termination, native

    _check_params(theta, eta, m, sigma, eps, max_fev, bundle_size)
    if b2 not in ("current", "all"):
        raise InvalidParameterError(f"b2: expected 'current' or 'all', got {b2!r}")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    obj = DCMILObjective(bags, C)
    max_fev = resolve_budget(max_fev, obj.n - 1)
    z = starting_point(bags) if z0 is None else np.asarray(z0, dtype=float).copy()
    if z.shape != (obj.n,):
        raise InvalidParameterError(f"z0: expected shape ({obj.n},), got {z.shape}")
    ec = obj.evaluate(z)
    g1 = obj.subgradient1(ec)
    g2 = obj.subgradient2(ec)
    G1, A1 = [g1], [0.0]
    G2, A2 = [g2], [0.0]
    f0 = ec.f
    serious = null = restarts = 0
    max_bundle = 1
    hist = []
    term = Termination.ITERATION_LIMIT
    v = d = None
    lam_prev = None
    it = 0
    while True:
        it += 1
        if max_iter is not None and it > max_iter:
            term = Termination.ITERATION_LIMIT
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
            term = Termination.CONVERGED       # approximate criticality (a local test, no global proof)
            rec["step"] = "stop"
            hist.append(rec)
            break
        if obj.nF >= max_fev:
            term = Termination.ITERATION_LIMIT
            rec["step"] = "budget"
            hist.append(rec)
            break
        # steps 5-15: line search
        t = 1.0
        step = None
        while True:
            et = obj.evaluate(z + t * d)
            if et.f - ec.f <= m * t * v:           # step 6: descent test
                step = "serious"
                break
            if t * nd <= eta:                       # step 13 fails: null step
                step = "null"
                break
            if obj.nF >= max_fev:                   # budget spent inside the line search
                step = "budget"
                break
            t *= sigma                              # step 14
        rec["t"] = t
        rec["step"] = step
        if step == "budget":
            term = Termination.ITERATION_LIMIT
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
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    extra = {"w": z[:-1].tolist(), "b": float(z[-1]), "nF": obj.nF, "nG1": obj.nG1, "nG2": obj.nG2,
             "serious": serious, "null": null, "restarts": restarts, "criticality": abs(v) if v is not None else None,
             "norm_d": float(np.linalg.norm(d)) if d is not None else None, "cpu_seconds": cpu, "f0": f0,
             "f1": ec.f1, "f2": ec.f2, "C": obj.C, "theta": theta, "eta": eta, "m": m, "sigma": sigma, "eps": eps,
             "max_fev": int(max_fev), "bundle_size": int(bundle_size), "b2": b2, "max_bundle": max_bundle}
    if keep_bundle:
        extra["bundle"] = (np.asarray(G1), np.asarray(A1), np.asarray(G2[0]))
    return native("dcpca", term, ec.f, wall, iterations=it, history=hist if history else (), extra=extra)


# --------------------------------------------------------------------------------------------
# DCA baseline: repeatedly solve the convex subproblem (models/dcmil_dca.py) through the driver
# --------------------------------------------------------------------------------------------
def dca(bags: Bags, C: float = 1.0, z0=None, *, solver: str = "highs", max_iter: int = 50, tol: float = 1e-6,
        time_limit: float | None = None, options: dict | None = None, history: bool = True):
    r"""The DC algorithm: :math:`z_{k+1} \in \arg\min f_1(z) - \langle g_2(z_k), z\rangle`.

    The ``dcmil_dca`` Pyomo model is built once; each iteration only updates its mutable
    linear objective coefficients (the f2 subgradient) and re-solves through
    :func:`milopt.solvers.solve`.  Stops when the decrease of f is at most
    ``tol * max(1, |f|)``, when the subgradient of f2 repeats (a fixed point), after
    ``max_iter`` subproblems, or when ``time_limit`` seconds (total) are spent.

    Returns
    -------
    SolveResult
        solver="dca+<backend>", problem_class="native"; ``extra`` as :func:`dcpca` plus
        ``subproblems`` and ``solver_seconds``.
    """
    from milopt import models

    mod = models.get("dcmil-dca")
    from milopt.solvers import solve
    from milopt.solvers.result import Termination, native

    if int(max_iter) < 1:
        raise InvalidParameterError(f"max_iter: expected at least 1, got {max_iter}")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    obj = DCMILObjective(bags, C)
    z = starting_point(bags) if z0 is None else np.asarray(z0, dtype=float).copy()
    ec = obj.evaluate(z)
    f0 = ec.f
    g2 = obj.subgradient2(ec)
    model = mod.build(bags, C=obj.C, g2=g2, z0=z)
    hist = []
    term = Termination.ITERATION_LIMIT
    solver_s = 0.0
    k = 0
    last = None
    for k in range(1, int(max_iter) + 1):
        mod.set_linearisation(model, g2)
        tl = None
        if time_limit is not None:
            tl = time_limit - (time.perf_counter() - wall0)
            if tl <= 0:
                term = Termination.TIME_LIMIT
                break
        res = solve(model, solver, time_limit=tl, options=options)
        last = res
        solver_s += res.wall_time
        if not res.ok:
            term = res.termination if res.termination != Termination.OPTIMAL else Termination.ERROR
            import warnings

            warnings.warn(f"dcmil DCA: subproblem {k} returned no solution with {solver} ({res.termination}); "
                          f"returning the last iterate (f={ec.f:.6g}). HiGHS's active-set QP can stop with "
                          "'Non-convex' on these convex semidefinite QPs (seen on unstandardised gen:kent-yu data) or "
                          "be slow on large dense ones: "
                          "try solver='ipopt' or 'scip', or standardise the features", RuntimeWarning, stacklevel=2)
            break
        sol = mod.decode(model)
        zn = np.append(sol["w"], sol["b"])
        en = obj.evaluate(zn)
        rec = {"iteration": k, "f": en.f, "f_prev": ec.f, "subproblem_objective": res.objective,
               "solver_seconds": res.wall_time, "termination": str(res.termination)}
        if history:
            hist.append(rec)
        decrease = ec.f - en.f
        # accept only non-increasing points (the subproblem is solved to a tolerance)
        if en.f <= ec.f + 1e-9 * max(1.0, abs(ec.f)):
            ec, z = en, en.z
        g2n = obj.subgradient2(ec)
        if decrease <= tol * max(1.0, abs(ec.f)) or np.array_equal(g2n, g2):
            term = Termination.CONVERGED       # a DC critical point: no proof of global optimality
            break
        g2 = g2n
        if res.termination == Termination.TIME_LIMIT:
            term = Termination.TIME_LIMIT
            break
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    extra = {"w": z[:-1].tolist(), "b": float(z[-1]), "nF": obj.nF, "nG1": obj.nG1, "nG2": obj.nG2,
             "subproblems": k, "solver_seconds": solver_s, "cpu_seconds": cpu, "f0": f0, "f1": ec.f1, "f2": ec.f2,
             "C": obj.C, "backend": solver,
             "last_subproblem": None if last is None else {"termination": str(last.termination),
                                                             "objective": last.objective}}
    return native(f"dca+{solver}", term, ec.f, wall, iterations=k, history=hist, extra=extra)
