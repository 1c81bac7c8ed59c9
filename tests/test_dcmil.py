"""DC-MIL: DC decomposition, subgradients, the QP(I) dual solver, DCPCA, DCA, the estimator."""
from __future__ import annotations

import numpy as np
import pytest

from milopt.algorithms import dcmil as alg
from milopt.qp.qp_simplex import simplex_qp
from milopt.data.bags import Bags
from milopt.mil import dcmil as dc
from milopt.errors import InvalidDataError, InvalidParameterError


def random_bags(seed=0, n_bags=16, d=4, max_size=5, shift=1.5):
    """Random bags: each positive bag has one instance shifted along the first axis."""
    rng = np.random.default_rng(seed)
    arrays, y = [], []
    for i in range(n_bags):
        k = int(rng.integers(1, max_size + 1))
        Xb = rng.normal(size=(k, d))
        lab = i % 2
        if lab:
            Xb[rng.integers(k), 0] += shift
        arrays.append(Xb)
        y.append(lab)
    return Bags.from_arrays(arrays, np.array(y))


def reference_f(bags, w, b, C):
    """f, f1, f2 by an explicit loop over bags (independent of the vectorised code)."""
    f = f1 = f2 = 0.0
    for i in range(bags.n_bags):
        s = bags.X[bags.bag_ptr[i]:bags.bag_ptr[i + 1]] @ w + b
        h = s.max()
        if bags.y[i] == 1:
            f += C * max(0.0, 1.0 - h)
            f1 += C * max(1.0, h)
            f2 += C * h
        else:
            f += C * max(0.0, 1.0 + h)
            f1 += C * max(0.0, 1.0 + h)
    q = 0.5 * float(w @ w)
    return f + q, f1 + q, f2


# ----------------------------------------------------------------------------- decomposition
@pytest.mark.parametrize("seed", range(5))
def test_f1_minus_f2_equals_f(seed):
    rng = np.random.default_rng(seed)
    bags = random_bags(seed, n_bags=12, d=3)
    C = float(2.0 ** rng.integers(-3, 4))
    for _ in range(20):
        w, b = rng.normal(scale=2, size=3), float(rng.normal(scale=2))
        fr, f1r, f2r = reference_f(bags, w, b, C)
        assert dc.f(bags, w, b, C) == pytest.approx(fr, rel=1e-12, abs=1e-12)
        assert dc.f1(bags, w, b, C) - dc.f2(bags, w, b, C) == pytest.approx(fr, rel=1e-12, abs=1e-12)
        assert dc.f1(bags, w, b, C) == pytest.approx(f1r, rel=1e-12)
        assert dc.f2(bags, w, b, C) == pytest.approx(f2r, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_subgradient_inequalities(seed):
    rng = np.random.default_rng(100 + seed)
    bags = random_bags(seed, n_bags=14, d=4)
    C = 1.7
    obj = dc.DCMILObjective(bags, C)
    for _ in range(30):
        z = rng.normal(scale=2, size=5)
        ez = obj.evaluate(z)
        g1, g2 = obj.subgradient1(ez), obj.subgradient2(ez)
        for _ in range(10):
            y = z + rng.normal(scale=rng.choice([1e-3, 0.3, 3.0]), size=5)
            ey = obj.evaluate(y)
            assert ey.f1 >= ez.f1 + g1 @ (y - z) - 1e-9 * max(1, abs(ey.f1))
            assert ey.f2 >= ez.f2 + g2 @ (y - z) - 1e-9 * max(1, abs(ey.f2))


def test_subgradient_is_gradient_where_smooth():
    rng = np.random.default_rng(3)
    bags = random_bags(1, n_bags=10, d=3)
    obj = dc.DCMILObjective(bags, 0.8)
    z = rng.normal(size=4)
    e = obj.evaluate(z)
    g1 = obj.subgradient1(e)
    h = 1e-7
    num = np.array([(obj.evaluate(z + h * np.eye(4)[k]).f1 - obj.evaluate(z - h * np.eye(4)[k]).f1) / (2 * h)
                    for k in range(4)])
    np.testing.assert_allclose(g1, num, rtol=1e-5, atol=1e-5)


def test_starting_point_classifies_every_positive_bag_positive():
    bags = random_bags(4, n_bags=20)
    z0 = dc.starting_point(bags)
    s = bags.X @ z0[:-1] + z0[-1]
    from milopt.segments import segment_max

    h = segment_max(s, bags.bag_ptr)
    assert np.all(h[bags.y == 1] >= 1.0 - 1e-12)
    assert h[bags.y == 1].min() == pytest.approx(1.0)
    pos = bags.instance_bag_y == 1
    np.testing.assert_allclose(z0[:-1], bags.X[pos].mean(0) - bags.X[~pos].mean(0))


# ----------------------------------------------------------------------------- QP(I)
def _brute_simplex_qp(Q, c):
    """Reference: scipy SLSQP from many starts (small k only)."""
    from scipy.optimize import minimize

    k = c.size
    best = np.inf
    for s in range(2):
        x0 = np.random.default_rng(s).dirichlet(np.ones(k))
        r = minimize(lambda x: 0.5 * x @ Q @ x + c @ x, x0, jac=lambda x: Q @ x + c, method="SLSQP",
                     bounds=[(0, 1)] * k, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                     options={"ftol": 1e-14, "maxiter": 500})
        best = min(best, r.fun)
    return best


@pytest.mark.parametrize("k,n,rank", [(6, 4, None), (12, 3, None), (20, 30, 2), (9, 9, 1)])
def test_simplex_qp_kkt_and_reference(k, n, rank):
    rng = np.random.default_rng(k * 7 + n)
    A = rng.normal(size=(k, n))
    if rank is not None:  # affinely dependent points: singular Q
        A = rng.normal(size=(k, rank)) @ rng.normal(size=(rank, n))
    c = rng.random(k)
    Q = A @ A.T
    x, info = simplex_qp(Q, c)
    assert info["converged"]
    assert x.min() >= 0 and x.sum() == pytest.approx(1.0)
    g = Q @ x + c
    mu = g[x > 1e-12].mean()
    assert np.all(g >= mu - 1e-8 * max(1, np.abs(g).max()))           # dual feasibility
    assert np.all(np.abs(g[x > 1e-9] - mu) <= 1e-8 * max(1, np.abs(g).max()))  # complementarity
    val = 0.5 * x @ Q @ x + c @ x
    assert val <= _brute_simplex_qp(Q, c) + 1e-8
    # warm start from another simplex point gives the same optimum
    x2, _ = simplex_qp(Q, c, x0=rng.dirichlet(np.ones(k)))
    assert 0.5 * x2 @ Q @ x2 + c @ x2 == pytest.approx(val, rel=1e-9, abs=1e-10)


@pytest.mark.highs
@pytest.mark.parametrize("seed", range(3))
def test_direction_dual_matches_pyomo_model_highs(seed):
    from milopt.models import dcmil_direction as mod
    from milopt.solvers import solve

    rng = np.random.default_rng(seed)
    k, n = 4 + 5 * seed, 6
    G1 = rng.normal(size=(k, n)) * 3
    a1 = np.abs(rng.normal(size=k))
    a1[0] = 0.0
    g2 = rng.normal(size=n)
    d, v, lam, info = dc.solve_direction(G1, a1, g2)
    model = mod.build(G1=G1, alpha1=a1, g2=g2)
    res = solve(model, "highs")
    assert res.ok
    sol = mod.decode(model)
    assert res.objective == pytest.approx(info["objective"], rel=1e-6, abs=1e-7)
    assert info["objective"] == pytest.approx(info["dual"], rel=1e-9, abs=1e-9)   # strong duality
    np.testing.assert_allclose(sol["d"], d, rtol=1e-4, atol=1e-5)
    assert sol["v"] == pytest.approx(v, rel=1e-5, abs=1e-6)


@pytest.mark.highs
def test_direction_model_on_dcpca_bundle_highs():
    """QP(I) from a real DCPCA bundle (after some iterations, with null-step cuts)."""
    from milopt.models import dcmil_direction as mod
    from milopt.solvers import solve

    bags = random_bags(7, n_bags=30, d=5)
    r = alg.dcpca(bags, C=2.0, max_iter=12, theta=0.0, keep_bundle=True)
    G1, A1, g2 = r.extra["bundle"]
    assert G1.shape[0] >= 2
    d, v, lam, info = dc.solve_direction(G1, A1, g2)
    model = mod.build(G1=G1, alpha1=A1, g2=g2)
    res = solve(model, "highs")
    assert res.objective == pytest.approx(info["objective"], rel=1e-6, abs=1e-6)


# ----------------------------------------------------------------------------- DCPCA
def test_dcpca_serious_steps_decrease_f_armijo():
    bags = random_bags(11, n_bags=40, d=5)
    r = alg.dcpca(bags, C=4.0, theta=1e-3, max_fev=300)
    ser = [h for h in r.history if h.get("step") == "serious"]
    assert r.extra["serious"] == len(ser) > 0
    for h in ser:
        assert h["f_new"] < h["f"]
        assert h["f_new"] - h["f"] <= 0.01 * h["t"] * h["v"] + 1e-12   # Armijo test
    fs = [h["f"] for h in r.history]
    assert all(b <= a + 1e-12 for a, b in zip(fs, fs[1:]))
    assert r.objective <= r.extra["f0"]
    ex = r.extra
    assert ex["nF"] <= 300 and ex["nG1"] >= ex["serious"] + 1 and ex["nG2"] == ex["serious"] + 1
    assert ex["null"] + ex["serious"] + 1 >= len(r.history) - 1


def separable_toy(n_bags=24, seed=0):
    """2-D bags: each positive bag has a witness at (1, 0); every other instance is at (-1, s)
    with s in {-1, 0, 1}.  Every zero-error hyperplane has w_1 >= 1, so min f = 1/2 for C >= 1
    (attained at w = (1, 0), b = 0)."""
    rng = np.random.default_rng(seed)
    arrays, y = [], []
    for i in range(n_bags):
        k = int(rng.integers(1, 4))
        Xb = np.column_stack([-np.ones(k), rng.choice([-1.0, 0.0, 1.0], size=k)])
        lab = i % 2
        if lab:
            Xb = np.vstack([Xb, [1.0, 0.0]])
            Xb = Xb[rng.permutation(len(Xb))]
        arrays.append(Xb)
        y.append(lab)
    return Bags.from_arrays(arrays, np.array(y))


def test_dcpca_separable_toy_reaches_minimum_and_classifies():
    bags = separable_toy()
    assert dc.f(bags, [1.0, 0.0], 0.0, 10.0) == pytest.approx(0.5)
    r = alg.dcpca(bags, C=10.0, theta=1e-6, max_fev=2000)
    assert r.objective <= 0.5 + 5e-3
    assert r.objective >= 0.5 - 1e-9          # 1/2 is the minimum
    w, b = np.asarray(r.extra["w"]), r.extra["b"]
    from milopt.segments import segment_max

    pred = segment_max(bags.X @ w + b, bags.bag_ptr) > 0
    assert np.array_equal(pred.astype(int), bags.y)


def test_dcpca_b2_all_variant_runs_and_descends():
    bags = random_bags(5, n_bags=16, d=3)
    r = alg.dcpca(bags, C=2.0, b2="all", max_fev=40)
    assert r.objective <= r.extra["f0"]
    assert r.extra["b2"] == "all"


def test_dcpca_budget_and_result_fields():
    bags = random_bags(2, n_bags=30, d=4)
    r = alg.dcpca(bags, C=8.0, theta=0.0, max_fev=25)
    assert str(r.termination) == "iteration_limit" and r.ok
    assert r.extra["nF"] <= 25
    assert r.solver == "dcpca" and r.problem_class == "native"
    d = r.to_dict()
    for key in ("nF", "nG1", "nG2", "serious", "null", "criticality", "cpu_seconds"):
        assert key in d["extra"]


def test_dcpca_null_steps_and_bundle_restart_follow_algorithm_1():
    """Algorithm 1 steps 13-18 and §4: a null step only once t‖d‖ ≤ η, keeping the centre and
    adding one B1 element; the bundles restart only at a serious step (new stability centre)
    whose bundle exceeds the threshold, never after a null step."""
    bags = random_bags(11, n_bags=40, d=5)
    size = 4
    r = alg.dcpca(bags, C=4.0, theta=1e-3, eta=0.7, max_fev=400, bundle_size=size)
    hs = [h for h in r.history if h.get("step") in ("serious", "null")]
    nulls = [h for h in hs if h["step"] == "null"]
    assert nulls and r.extra["restarts"] > 0
    for h in nulls:
        assert h["t"] * h["norm_d"] <= 0.7 + 1e-12 and h["f_new"] == h["f"]
    seen_restarts = 0
    for h0, h1 in zip(r.history, r.history[1:]):
        if h0.get("step") == "null":          # B1 grows by one, B2 unchanged, no restart
            assert "restart" not in h0
            assert h1["bundle1"] == h0["bundle1"] + 1 and h1["bundle2"] == h0["bundle2"]
        elif h0.get("step") == "serious":     # B2 grows by one; a bundle beyond the size restarts
            assert h0["bundle2_new"] == h0["bundle2"] + 1 and h0["bundle1_new"] <= h0["bundle1"] + 1
            for k in (1, 2):
                if h0[f"bundle{k}_new"] > size:
                    assert k in h0["restart"] and h1[f"bundle{k}"] == 1
                else:
                    assert k not in h0["restart"] and h1[f"bundle{k}"] == h0[f"bundle{k}_new"]
            seen_restarts += 1 in h0["restart"]
    assert seen_restarts == r.extra["restarts"]
    # null steps may grow B1 beyond the threshold until the next serious step
    assert r.extra["max_bundle"] > size
    assert max(h["bundle1"] for h in r.history) == r.extra["max_bundle"]


def test_dcpca_budget_auto_is_500_medium_200_large():
    assert dc.resolve_budget("auto", 166) == 500 and dc.resolve_budget("auto", 66552) == 200
    assert dc.resolve_budget("large", 5) == 200 and dc.resolve_budget("medium", 10**5) == 500
    assert dc.resolve_budget("300", 5) == 300 and dc.resolve_budget(42, 5) == 42
    for bad in ("lots", 0, -3, 2.5, True):
        with pytest.raises(InvalidParameterError, match="max_fev"):
            dc.resolve_budget(bad, 5)
    rng = np.random.default_rng(0)
    big = Bags.from_arrays([rng.normal(size=(2, dc.LARGE_FEATURES + 1)) for _ in range(6)],
                           np.array([0, 1] * 3))
    r = alg.dcpca(big, C=1.0, theta=0.0)
    assert r.extra["max_fev"] == 200 and r.extra["nF"] <= 200
    r = alg.dcpca(random_bags(2, n_bags=30, d=4), C=8.0, theta=0.0)
    assert r.extra["max_fev"] == 500 and r.extra["nF"] <= 500


def test_bad_parameters_raise_clear_errors():
    bags = random_bags(0)
    with pytest.raises(InvalidParameterError, match="sigma"):
        alg.dcpca(bags, sigma=1.5)
    with pytest.raises(InvalidParameterError, match="C"):
        alg.dcpca(bags, C=-1)
    with pytest.raises(InvalidParameterError, match="z0"):
        alg.dcpca(bags, z0=np.zeros(2))
    with pytest.raises(InvalidParameterError, match="b2"):
        alg.dcpca(bags, b2="some")
    with pytest.raises(InvalidDataError):
        dc.DCMILObjective(Bags.from_arrays([np.zeros((2, 2)), np.ones((1, 2))], [1, 1]), 1.0)


# ----------------------------------------------------------------------------- DCA
@pytest.mark.highs
def test_dca_subproblem_does_not_increase_f_highs():
    from milopt.models import dcmil_dca as mod
    from milopt.solvers import solve

    rng = np.random.default_rng(0)
    bags = random_bags(9, n_bags=20, d=4)
    obj = dc.DCMILObjective(bags, 2.0)
    for z in [dc.starting_point(bags), rng.normal(size=5), rng.normal(size=5)]:
        e = obj.evaluate(z)
        model = mod.build(bags, C=2.0, z0=z)
        res = solve(model, "highs")
        assert res.ok
        sol = mod.decode(model)
        assert sol["f"] <= e.f + 1e-7 * max(1, abs(e.f))
        # the subproblem optimum is f1 - <g2, z> at its solution; at z it equals f(z) - f2 offset
        g2 = obj.subgradient2(e)
        assert res.objective == pytest.approx(sol["f1"] - g2 @ np.append(sol["w"], sol["b"]), rel=1e-6, abs=1e-6)


@pytest.mark.highs
def test_dca_updates_objective_in_place_and_descends():
    bags = random_bags(12, n_bags=20, d=4)
    r = alg.dca(bags, C=2.0, max_iter=8)
    fs = [r.extra["f0"]] + [h["f"] for h in r.history]
    assert all(b <= a + 1e-7 * max(1, abs(a)) for a, b in zip(fs, fs[1:]))
    assert r.objective <= r.extra["f0"]


@pytest.mark.ipopt
def test_dca_with_ipopt_descends_where_highs_fails():
    """gen:kent-yu unstandardised: HiGHS's QP stops with 'Non-convex' (a convex QP); Ipopt solves it."""
    import milopt
    from milopt.solvers.driver import installed

    if "ipopt" not in installed():
        pytest.skip("ipopt backend not installed")
    bags = milopt.load("gen:kent-yu?bags=20&seed=1")
    r = alg.dca(bags, C=1.0, solver="ipopt", max_iter=5)
    assert r.ok and r.objective < r.extra["f0"]


@pytest.mark.highs
def test_dcpca_vs_dca_fraction_on_random_problems(capsys):
    """DCPCA's final f <= DCA's from the same start: report the fraction (need not be all)."""
    wins = 0
    n = 6
    for seed in range(n):
        bags = random_bags(50 + seed, n_bags=20, d=4, shift=1.0)
        C = 2.0
        rp = alg.dcpca(bags, C=C)
        rd = alg.dca(bags, C=C, max_iter=30)
        assert rp.extra["f0"] == pytest.approx(rd.extra["f0"])  # same start
        wins += rp.objective <= rd.objective * (1 + 1e-6) + 1e-9
    with capsys.disabled():
        print(f"\n[dcmil] DCPCA final f <= DCA final f on {wins}/{n} random problems")
    assert wins >= 1


# ----------------------------------------------------------------------------- estimator / registry
def test_estimator_api_and_registry():
    from sklearn.base import clone

    from milopt.estimators.dcmil import DCMILClassifier
    from milopt.estimators.registry import get_method

    bags = separable_toy(seed=1)
    est = DCMILClassifier(C=10.0, theta=1e-6, max_fev=2000).fit(bags)
    assert est.score(bags) == 1.0
    assert est.fit_info_["nF"] > 0 and "criticality" in est.fit_info_
    assert clone(est).get_params()["C"] == 10.0
    assert isinstance(get_method("dcmil").make({"C": 2.0}), DCMILClassifier)
    assert get_method("dcmil-dca").make().method == "dca"
    with pytest.raises(InvalidParameterError, match="method"):
        DCMILClassifier(method="nope").fit(bags)


def test_estimator_inner_cv_selects_from_grid():
    from milopt.estimators.dcmil import DCMILClassifier

    bags = random_bags(21, n_bags=24, d=3, shift=2.5)
    est = DCMILClassifier(inner_cv=True, C_grid=[0.25, 4.0], inner_folds=3, max_fev=100).fit(bags, bags.y)
    assert est.C_ in (0.25, 4.0)
    assert len(est.cv_results_["mean_test_score"]) == 2
    assert est.fit_info_["C"] == est.C_
    with pytest.raises(InvalidParameterError, match="inner_folds"):
        DCMILClassifier(inner_cv=True, inner_folds=100).fit(bags)


def test_inner_splits_repeated_and_leave_one_bag_out():
    from sklearn.model_selection import StratifiedKFold
    from milopt.estimators.dcmil import inner_splits

    y = np.array([0] * 11 + [1] * 9)
    sp = inner_splits(y, 3, repeats=2, seed=4)
    assert len(sp) == 6
    single = list(StratifiedKFold(n_splits=3, shuffle=True, random_state=4).split(np.zeros(20), y))
    for (a, b), (c, d) in zip(sp[:3], single):     # repetition 0 is the single partition
        assert np.array_equal(a, c) and np.array_equal(b, d)
    for rep in range(2):
        held = np.sort(np.concatenate([te for _, te in sp[3 * rep: 3 * rep + 3]]))
        assert np.array_equal(held, np.arange(20))   # each repetition partitions the bags
        assert all(3 <= int(y[te].sum()) <= 3 for _, te in sp[3 * rep: 3 * rep + 3])   # stratified
    assert not all(np.array_equal(sp[i][1], sp[i + 3][1]) for i in range(3))    # reshuffled
    loo = inner_splits(y, "loo")
    assert len(loo) == 20 and all(te.size == 1 and tr.size == 19 for tr, te in loo)
    with pytest.raises(InvalidParameterError, match="inner_folds"):
        inner_splits(y, 10)
    with pytest.raises(InvalidParameterError, match="inner_folds"):
        inner_splits(y, "loocv")


def test_estimator_inner_cv_repeats_average_all_splits():
    from milopt.estimators.dcmil import DCMILClassifier, inner_splits

    bags = random_bags(22, n_bags=24, d=3, shift=2.5)
    grid = [0.25, 4.0]
    est = DCMILClassifier(inner_cv=True, C_grid=grid, inner_folds=3, inner_repeats=2, max_fev=100).fit(bags)
    means = []
    for C in grid:       # the criterion: mean sign-rule accuracy over the 6 held-out folds
        acc = []
        for tr, te in inner_splits(bags.y, 3, 2, 0):
            m = DCMILClassifier(C=C, max_fev=100, threshold="zero").fit(bags.subset(tr))
            acc.append(m.score(bags.subset(te)))
        means.append(np.mean(acc))
    assert np.allclose(est.cv_results_["mean_test_score"], means)
    assert est.C_ == grid[int(np.argmax(means))]
    loo = DCMILClassifier(inner_cv=True, C_grid=grid, inner_folds="loo", max_fev=50).fit(bags)
    assert loo.C_ in grid


def test_estimator_inner_cv_standardises_each_inner_fold_of_standardised_bags():
    """Bags standardised on themselves (as ``milopt fit`` gives a training fold): each inner fold
    is standardised again on its training part before the fit it scores."""
    from milopt.estimators.dcmil import DCMILClassifier, inner_splits
    from milopt.numerics import standardize

    bags = standardize(random_bags(23, n_bags=24, d=3, shift=2.5))
    grid = [0.25, 4.0]
    est = DCMILClassifier(inner_cv=True, C_grid=grid, inner_folds=3, inner_repeats=1, max_fev=100).fit(bags)
    again, plain = [], []
    for C in grid:
        a, p = [], []
        for tr, te in inner_splits(bags.y, 3, 1, 0):
            Btr, Bte = standardize(bags.subset(tr), bags.subset(te))
            a.append(DCMILClassifier(C=C, max_fev=100, threshold="zero").fit(Btr).score(Bte))
            p.append(DCMILClassifier(C=C, max_fev=100, threshold="zero").fit(bags.subset(tr)).score(bags.subset(te)))
        again.append(np.mean(a))
        plain.append(np.mean(p))
    assert np.allclose(est.cv_results_["mean_test_score"], again) and not np.allclose(again, plain)
    refit = DCMILClassifier(C=est.C_, max_fev=100, threshold="zero").fit(bags)
    np.testing.assert_allclose(est.coef_, refit.coef_)
