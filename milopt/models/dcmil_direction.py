r"""DCPCA search-direction problem QP(I) (a convex QP with a tiny dense constraint matrix).

Astorino, A., Fuduli, A., Giallombardo, G., Miglionico, G. "SVM-based multiple instance
classification via DC optimization", *Algorithms* 12:249, 2019, §3: QP(I) and its dual
(eqs. 11–12), step 1 of their Algorithm 1.  DCPCA was introduced by Gaudioso, M.,
Giallombardo, G., Miglionico, G., Bagirov, A. M. "Minimizing nonsmooth DC functions via
successive DC piecewise-affine approximations", *J. Global Optim.* 71:37–55, 2018.

At a stability centre with bundle :math:`\mathcal B_1 = \{(g^{(1)}_i, \alpha^{(1)}_i)\}_{i\in I}` of
subgradients and linearisation errors of :math:`f_1` and a subgradient :math:`g^{(2)}` of
:math:`f_2` (with its error :math:`\alpha^{(2)}`, zero at the centre):

.. math::

    \text{QP}(I):\quad \min_{d, v}\ v + \tfrac12\lVert d\rVert^2 \quad
    \text{s.t.}\ v \ge (g^{(1)}_i - g^{(2)})^\top d - \alpha^{(1)}_i + \alpha^{(2)},\ i \in I.

Its dual is :math:`\min_{\lambda \in \Delta}\tfrac12\lVert\sum_i \lambda_i (g^{(1)}_i - g^{(2)})\rVert^2
+ \sum_i\lambda_i(\alpha^{(1)}_i - \alpha^{(2)})` over the unit simplex, which
``milopt.qp.qp_simplex.simplex_qp`` solves natively (for DCPCA); this model is its algebraic
counterpart (tests check that both reach the same optimum through the driver).

From the command line (``milopt solve dcmil-direction --data musk1 --solver highs``) the bundle
is DCPCA's at the paper's starting point: the initial bundle (``iterations=0``), or the bundle
after ``iterations`` main DCPCA iterations (null steps enrich it).
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.errors import InvalidParameterError
from milopt.mil.dcmil import bundle_after
from milopt.models._linear import add_linear_rows, var_list
from milopt.models.info import MILModel
from milopt.params import Float, Int, ParamSet

#: problem class of the model :func:`build` returns (solvers are chosen by it)
PROBLEM_CLASS = "QP"

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    C=Float(1.0, "misclassification cost of the DC-MIL function", gt=0),
    iterations=Int(0, "DCPCA main iterations from the paper's start before taking the bundle (0: initial bundle)",
                   ge=0),
)


def build(bags=None, C: float = 1.0, iterations: int = 0, G1=None, alpha1=None, g2=None, alpha2: float = 0.0,
          **unused) -> MILModel:
    """Build QP(I) from bundle data (``G1``, ``alpha1``, ``g2``) or, given ``bags``, from DCPCA's bundle.

    Parameters
    ----------
    bags : Bags, optional
        Used only when ``G1`` is not given: the bundle is then DCPCA's after ``iterations``
        iterations from the paper's start (:func:`milopt.mil.dcmil.bundle_after`).
    G1 : (k, n) array
        Subgradients of f1 (rows).
    alpha1 : (k,) array
        Their linearisation errors (≥ 0).
    g2 : (n,) array
        Subgradient of f2.
    alpha2 : float
        Its linearisation error (0 at the centre).
    """
    if unused:
        raise InvalidParameterError(f"dcmil-direction: unknown parameter(s) {sorted(unused)}; accepted: "
                                    f"{sorted(PARAMS)} (and G1, alpha1, g2, alpha2)")
    if G1 is None:
        if bags is None:
            raise InvalidParameterError("dcmil-direction: give bundle data (G1, alpha1, g2) or bags")
        G1, alpha1, g2 = bundle_after(bags, C, iterations)
    G1 = np.atleast_2d(np.asarray(G1, dtype=float))
    k, n = G1.shape
    alpha1 = np.zeros(k) if alpha1 is None else np.asarray(alpha1, dtype=float).ravel()
    if alpha1.shape != (k,):
        raise InvalidParameterError(f"alpha1: expected {k} linearisation errors, got {alpha1.shape}")
    if g2 is None:
        raise InvalidParameterError("g2: a subgradient of f2 is required")
    g2 = np.asarray(g2, dtype=float).ravel()
    if g2.shape != (n,):
        raise InvalidParameterError(f"g2: expected shape ({n},), got {g2.shape}")
    if not (np.all(np.isfinite(G1)) and np.all(np.isfinite(alpha1)) and np.all(np.isfinite(g2))):
        raise InvalidParameterError("dcmil-direction: bundle data must be finite")

    m = MILModel(name="dcmil_direction")
    m.N = pe.RangeSet(0, n - 1)
    m.I = pe.RangeSet(0, k - 1)
    m.d = pe.Var(m.N, initialize=0.0)
    m.v = pe.Var(initialize=0.0)
    vars_ = var_list(m.d, m.v)
    # v - (g_i - g2)' d >= -alpha_i + alpha2
    A = sp.csr_matrix(np.hstack([-(G1 - g2[None, :]), np.ones((k, 1))]))
    add_linear_rows(m, "cut", A, vars_, lb=-alpha1 + float(alpha2))
    m.obj = pe.Objective(expr=m.v + 0.5 * pe.quicksum(m.d[j] ** 2 for j in range(n)), sense=pe.minimize)
    m._milopt.problem_class = PROBLEM_CLASS
    m._milopt.meta = {"n": n, "bundle": k}
    return m


def decode(model) -> dict:
    """Direction d, predicted reduction v, and the objective v + ½‖d‖²."""
    n = model._milopt.meta["n"]
    d = np.array([pe.value(model.d[j], exception=False) or 0.0 for j in range(n)])
    v = float(pe.value(model.v, exception=False) or 0.0)
    return {"d": d, "v": v, "objective": v + 0.5 * float(d @ d), "norm_d": float(np.linalg.norm(d))}
