"""Reference computations shared by the MI-SVM model tests."""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe

from milopt.solvers import Termination, solve


def selection_qp(bags, witnesses, costs):
    """(objective, w, b) of the convex MI-SVM QP with one fixed witness per positive bag (no big-M
    anywhere), built term by term as an independent reference."""
    X, bi = bags.X, bags.bag_index
    d = X.shape[1]
    m = pe.ConcreteModel()
    m.w = pe.Var(range(d))
    m.b = pe.Var()
    m.xi = pe.Var(range(bags.n_bags), bounds=(0, None))
    rows = [i for i in range(bags.n_instances) if bags.y[bi[i]] == 0] + list(witnesses)
    m.c = pe.ConstraintList()
    for i in rows:
        s = 1.0 if bags.y[bi[i]] == 1 else -1.0
        m.c.add(s * (sum(float(X[i, k]) * m.w[k] for k in range(d)) + m.b) >= 1 - m.xi[int(bi[i])])
    m.o = pe.Objective(expr=0.5 * sum(m.w[k] ** 2 for k in range(d))
                       + sum(float(costs[I]) * m.xi[I] for I in range(bags.n_bags)))
    r = solve(m, "highs")
    if r.termination != Termination.OPTIMAL:  # HiGHS's active-set QP occasionally returns 'unknown'
        r = solve(m, "scip", mip_gap=1e-12)
    assert r.termination == Termination.OPTIMAL
    return r.objective, np.array([m.w[k].value for k in range(d)]), m.b.value


def musk_like(n_bags=40, seed=0):
    """A seeded, class-balanced, standardised subset of ``n_bags`` MUSK1 bags."""
    from milopt.data import load
    from milopt.metrics import standardize

    b = load("musk1")
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(b.y == 1), np.flatnonzero(b.y == 0)
    ids = np.sort(np.r_[rng.choice(pos, n_bags // 2, replace=False), rng.choice(neg, n_bags // 2, replace=False)])
    return standardize(b.subset(ids))


def node_optimum(eng, active):
    """The certified optimum of the SVM on the rows ``active`` (the interior point's dual, and the
    primal value of its point with the best intercept within 1e-7)."""
    from milopt.qp.svm_ipm import solve_group_dual_ipm

    rows = np.flatnonzero(active)
    y = eng.y[rows]
    if np.unique(y).size < 2:
        return 0.0
    g, ginv = np.unique(eng.bag_of[rows], return_inverse=True)
    Ke = eng.K[np.ix_(rows, rows)]
    r = solve_group_dual_ipm(Ke, y, ginv, eng.costs[g], tol=1e-12)
    v = r["alpha"] * y
    raw = Ke @ v
    best = np.inf
    for b in np.r_[y - raw, 0.0]:
        xi = np.zeros(g.size)
        np.maximum.at(xi, ginv, np.maximum(0.0, 1.0 - y * (raw + b)))
        best = min(best, 0.5 * v @ raw + eng.costs[g] @ xi)
    assert best - r["dual"] <= 1e-7 * max(1.0, best)
    return best
