"""misvm_dual_qp: dual optimum = primal optimum for the same selection; the fast solvers agree."""
import numpy as np
import pyomo.environ as pe
import pytest
import scipy.sparse as sp

from milopt.algorithms.mi_heuristics import slack_structure
from milopt.qp.svm_dcd import GroupSVMDual
from milopt.qp.svm_ipm import solve_group_dual_ipm
from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.features import kernel_matrix
from milopt.models import misvm_dual_qp as mod
from milopt.models._linear import add_linear_rows, var_list
from milopt.solvers import solve


def tiny(seed=0, n_bags=8, d=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, size=n_bags)
    y = np.array([1, 0] * (n_bags // 2))
    arrays = [rng.normal(size=(s, d)) + (0.8 if lab else -0.2) for s, lab in zip(sizes, y)]
    return Bags.from_arrays(arrays, y)


def primal_qp(bags, witnesses, C, class_weight, slack):
    """Primal min ½‖w‖² + Σ_g C_g ξ_g over the effective set (linear kernel), built independently."""
    y_all, g_all, caps_all = slack_structure(bags, C, class_weight, slack)
    act = y_all < 0
    act[witnesses] = True
    E = np.flatnonzero(act)
    gE, ginv = np.unique(g_all[E], return_inverse=True)
    X, y = bags.X[E], y_all[E]
    n, d, G = E.size, X.shape[1], gE.size
    m = pe.ConcreteModel()
    m.w = pe.Var(range(d))
    m.b = pe.Var()
    m.xi = pe.Var(range(G), domain=pe.NonNegativeReals)
    A = sp.hstack([sp.csr_matrix(X * y[:, None]), sp.csr_matrix(y[:, None]),
                   sp.csr_matrix((np.ones(n), (np.arange(n), ginv)), shape=(n, G))], format="csr")
    add_linear_rows(m, "margin", A, var_list(m.w, m.b, m.xi), lb=1.0)
    caps = caps_all[gE]
    m.obj = pe.Objective(expr=0.5 * sum(m.w[k] ** 2 for k in range(d)) + sum(float(caps[g]) * m.xi[g] for g in range(G)))
    m._milopt_class = "QP"
    return m


@pytest.mark.highs
@pytest.mark.parametrize("slack", ["bag", "instance"])
@pytest.mark.parametrize("class_weight", ["kent-yu", "none"])
@pytest.mark.parametrize("form", ["matrix", "factor", "dense"])
def test_dual_optimum_equals_primal_optimum(slack, class_weight, form):
    b = tiny(1)
    wit = mod.default_witnesses(b, "first")
    m = mod.build(b, C=2.0, slack=slack, class_weight=class_weight, witnesses=wit, form=form)
    r = solve(m, "highs")
    p = primal_qp(b, wit, 2.0, class_weight, slack)
    rp = solve(p, "highs")
    assert r.ok and rp.ok
    assert r.objective == pytest.approx(rp.objective, rel=1e-5, abs=1e-7)
    # the decoded (alpha, b) is primal feasible with the same value (intercept by eq. 4)
    assert mod.primal_objective(m) == pytest.approx(rp.objective, rel=1e-4, abs=1e-6)
    dec = mod.decode(m)
    w_primal = np.array([pe.value(p.w[k]) for k in range(3)])
    np.testing.assert_allclose(dec["w"], w_primal, atol=1e-4)


@pytest.mark.highs
@pytest.mark.parametrize("slack", ["bag", "instance"])
@pytest.mark.parametrize("kernel,gamma", [("linear", None), ("rbf", 0.5)])
def test_fast_solvers_agree_with_the_pyomo_reference(slack, kernel, gamma):
    b = tiny(2, n_bags=10)
    wit = mod.default_witnesses(b, "sil")
    m = mod.build(b, C=1.0, kernel=kernel, gamma=gamma, slack=slack, witnesses=wit)
    ref = solve(m, "highs")
    assert ref.ok
    meta = m._milopt_meta
    K = kernel_matrix(b.X, None, kernel, gamma)
    y_all, g_all, caps_all = slack_structure(b, 1.0, "kent-yu", slack)
    act = y_all < 0
    act[wit] = True
    # SMO (svm_dcd) on the full instance set with the effective-set mask
    s = GroupSVMDual(K, y_all, g_all, caps_all, tol=1e-6)
    s.set_active(act)
    s.solve()
    assert s.dual_objective() == pytest.approx(ref.objective, rel=1e-5, abs=1e-7)
    assert s.primal_objective() == pytest.approx(ref.objective, rel=1e-4, abs=1e-6)
    # interior point on the effective set
    E = meta["E"]
    ipm = solve_group_dual_ipm(K[np.ix_(E, E)], meta["y"], meta["groups"], meta["caps"], tol=1e-10)
    assert ipm["dual"] == pytest.approx(ref.objective, rel=1e-6, abs=1e-8)
    # same intercept (eq. 4) up to solver tolerance
    assert s.intercept() == pytest.approx(mod.decode(m)["b"], abs=1e-3)


def test_smo_warm_start_move_reaches_the_fresh_optimum():
    b = tiny(3, n_bags=12)
    K = kernel_matrix(b.X, None, "rbf", 0.3)
    y, g, caps = slack_structure(b, 1.0, "kent-yu", "bag")
    pos = np.flatnonzero(b.y == 1)
    w1 = b.bag_ptr[:-1][pos]
    w2 = b.bag_ptr[1:][pos] - 1
    act1 = y < 0
    act1[w1] = True
    s = GroupSVMDual(K, y, g, caps, tol=1e-9)
    s.set_active(act1)
    s.solve()
    ch = w1 != w2
    s.move(w1[ch], w2[ch])
    s.solve()
    act2 = y < 0
    act2[w2] = True
    f = GroupSVMDual(K, y, g, caps, tol=1e-9)
    f.set_active(act2)
    f.solve()
    assert s.dual_objective() == pytest.approx(f.dual_objective(), rel=1e-7)


def test_cli_params_and_errors():
    b = tiny(4)
    assert set(mod.PARAMS) >= {"C", "kernel", "gamma", "slack", "witness"}
    m = mod.build(b, kernel="rbf", gamma=1.0, witness="first")
    assert m._milopt_class == "QP"
    with pytest.raises(InvalidParameterError, match="gamma"):
        mod.build(b, kernel="rbf", gamma=-1.0)
    with pytest.raises(InvalidParameterError, match="witnesses"):
        mod.build(b, witnesses=[0])
    with pytest.raises(InvalidParameterError, match="witness"):
        mod.build(b, witness="best")
    with pytest.raises(InvalidParameterError, match="unknown parameter"):
        mod.build(b, bogus=1)
