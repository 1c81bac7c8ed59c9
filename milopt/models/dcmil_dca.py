r"""DC-MIL: the convex subproblem of one DC-algorithm (DCA) iteration (a convex QP).

Astorino, A., Fuduli, A., Giallombardo, G., Miglionico, G. "SVM-based multiple instance
classification via DC optimization", *Algorithms* 12(12):249, 2019, eqs. 1–3.

The MIL error function :math:`f = f_1 - f_2` (:mod:`milopt.mil.dcmil`) has

.. math::

    f_1(w, b) = \tfrac12\lVert w\rVert^2 + C\sum_{i \in P}\max\{1, \max_{j\in J_i}(w^\top x_j + b)\}
                + C\sum_{i \in N}\max\{0, 1 + \max_{j\in J_i}(w^\top x_j + b)\},\quad
    f_2(w, b) = C\sum_{i \in P}\max_{j\in J_i}(w^\top x_j + b).

Given a subgradient :math:`g = (g_w, g_b) \in \partial f_2(w_k, b_k)`, one DCA iteration solves
:math:`\min f_1(w, b) - g_w^\top w - g_b b`, written with epigraph variables for the inner
maxima (:math:`u_i` for positive bags, :math:`\xi_i` for negative bags):

.. math::

    \min_{w, b, u, \xi}\; & \tfrac12\lVert w\rVert^2 + C\sum_{i\in P} u_i + C\sum_{i\in N}\xi_i
        - g_w^\top w - g_b\, b \\
    \text{s.t.}\; & u_i \ge w^\top x_j + b,\ j \in J_i,\ i \in P, \qquad u_i \ge 1, \\
    & \xi_i \ge 1 + w^\top x_j + b,\ j \in J_i,\ i \in N, \qquad \xi_i \ge 0.

The linearisation :math:`g` enters only the objective, through mutable parameters ``g2w``,
``g2b``: ``set_linearisation`` updates them so a DCA run re-solves the same model.
From the command line (``milopt solve dcmil-dca --data musk1 --solver highs``) the model is built
at the paper's starting point (barycentre difference; intercept making every positive bag
positive) with the f2 subgradient there.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.core.expr.numeric_expr import LinearExpression

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.mil.dcmil import DCMILObjective, starting_point
from milopt.models._linear import add_linear_rows, var_list
from milopt.models.info import MILModel
from milopt.params import Float, ParamSet

#: problem class of the model :func:`build` returns (solvers are chosen by it)
PROBLEM_CLASS = "QP"

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(C=Float(1.0, "misclassification cost", gt=0))


def build(bags: Bags, C: float = 1.0, g2=None, z0=None, **unused) -> MILModel:
    """Build the DCA subproblem.

    Parameters
    ----------
    bags : Bags
        Binary MIL data.
    C : float
        Cost.
    g2 : array (n_features + 1,), optional
        Subgradient of f2 (default: at ``z0``).
    z0 : array (n_features + 1,), optional
        Current point (w, b) (default: the paper's starting point); used for ``g2`` and as the
        initial variable values.
    """
    if unused:
        raise InvalidParameterError(f"dcmil-dca: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)} "
                                    "(and g2, z0)")
    obj = DCMILObjective(bags, C)  # validates bags and C
    X = obj.X
    n, d = X.shape
    z0 = starting_point(bags) if z0 is None else np.asarray(z0, dtype=float)
    if z0.shape != (d + 1,):
        raise InvalidParameterError(f"z0: expected shape ({d + 1},), got {z0.shape}")
    e0 = obj.evaluate(z0)
    if g2 is None:
        g2 = obj.subgradient2(e0)
    g2 = np.asarray(g2, dtype=float)
    if g2.shape != (d + 1,):
        raise InvalidParameterError(f"g2: expected shape ({d + 1},), got {g2.shape}")
    pos = obj.pos
    P = np.flatnonzero(pos)
    N = np.flatnonzero(~pos)
    nP, nN = P.size, N.size
    bag = bags.bag_index
    inst_pos = pos[bag]
    # column of each instance's bag epigraph variable within u (positive) or xi (negative)
    rank = np.empty(bags.n_bags, dtype=int)
    rank[P] = np.arange(nP)
    rank[N] = np.arange(nN)

    m = MILModel(name="dcmil_dca")
    m.F = pe.RangeSet(0, d - 1)
    m.POS = pe.Set(initialize=P.tolist(), ordered=True)
    m.NEG = pe.Set(initialize=N.tolist(), ordered=True)
    m.w = pe.Var(m.F, initialize=dict(enumerate(z0[:-1].tolist())))
    m.b = pe.Var(initialize=float(z0[-1]))
    hp = np.maximum(1.0, e0.h[P])
    hn = np.maximum(0.0, 1.0 + e0.h[N])
    m.u = pe.Var(m.POS, bounds=(1.0, None), initialize=dict(zip(P.tolist(), hp.tolist())))
    m.xi = pe.Var(m.NEG, domain=pe.NonNegativeReals, initialize=dict(zip(N.tolist(), hn.tolist())))
    vars_ = var_list(m.w, m.b, m.u, m.xi)

    # rows: -(x_j w + b) + u_i >= 0 (positive bags);  -(x_j w + b) + xi_i >= 1 (negative bags)
    rows = np.arange(n)
    Wb = sp.csr_matrix(np.hstack([-X, -np.ones((n, 1))]))
    ip = np.flatnonzero(inst_pos)
    ineg = np.flatnonzero(~inst_pos)
    U = sp.csr_matrix((np.ones(ip.size), (ip, rank[bag[ip]])), shape=(n, nP))
    XI = sp.csr_matrix((np.ones(ineg.size), (ineg, rank[bag[ineg]])), shape=(n, nN))
    A = sp.hstack([Wb, U, XI], format="csr")
    lb = np.where(inst_pos, 0.0, 1.0)
    add_linear_rows(m, "epigraph", A, vars_, lb=lb, index=rows.tolist())

    m.C = pe.Param(initialize=float(obj.C), mutable=True)
    m.g2w = pe.Param(m.F, initialize=dict(enumerate(g2[:-1].tolist())), mutable=True)
    m.g2b = pe.Param(initialize=float(g2[-1]), mutable=True)
    lin_vars = [m.w[k] for k in range(d)] + [m.b] + [m.u[i] for i in P] + [m.xi[i] for i in N]
    lin_coefs = [-m.g2w[k] for k in range(d)] + [-m.g2b] + [m.C] * (nP + nN)
    m.obj = pe.Objective(expr=0.5 * pe.quicksum(m.w[k] ** 2 for k in range(d))
                         + LinearExpression(constant=0.0, linear_coefs=lin_coefs, linear_vars=lin_vars),
                         sense=pe.minimize)
    m._milopt.problem_class = PROBLEM_CLASS
    m._milopt.meta = {"n_features": d, "instances": n, "C": obj.C, "z0": z0}
    m._milopt.bags = bags
    return m


def set_linearisation(model, g2) -> None:
    """Replace the f2 subgradient in the objective (next DCA iteration)."""
    g2 = np.asarray(g2, dtype=float)
    d = model._milopt.meta["n_features"]
    if g2.shape != (d + 1,):
        raise InvalidParameterError(f"g2: expected shape ({d + 1},), got {g2.shape}")
    model.g2w.store_values(dict(enumerate(g2[:-1].tolist())))
    model.g2b.set_value(float(g2[-1]))


def decode(model) -> dict:
    """The point (w, b) and f, f1, f2 there (recomputed from the data, not from the epigraph)."""
    d = model._milopt.meta["n_features"]
    w = np.array([pe.value(model.w[k], exception=False) or 0.0 for k in range(d)])
    b = float(pe.value(model.b, exception=False) or 0.0)
    e = DCMILObjective(model._milopt.bags, model._milopt.meta["C"]).evaluate(np.append(w, b))
    return {"w": w, "b": b, "f": e.f, "f1": e.f1, "f2": e.f2}
