"""Batch classification (Vural et al. 2009): LPs, BatchPSVM, estimators, CAD generator, FROC."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import milopt
from milopt.algorithms.batchpsvm import BatchPSVMSystem, fit_batchpsvm
from milopt.data.bags import Bags
from milopt.data.gen_cad import cad
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.estimators.batch import (BatchProbClassifier, BatchPSVMClassifier, BatchSVMClassifier,
                                     LearnedThetaBatchPSVM)
from milopt.froc import froc_curve, froc_table, instance_auc, lesion_ids, sensitivity_at
from milopt.metrics import evaluate, standardize
from milopt.models import batchprob_lp, batchsvm_lp


@pytest.fixture(scope="module")
def small():
    b = cad(images=8, features=6, informative=3, candidates=16, per_lesion=3, lesions=1.0, seed=3)
    return standardize(b)


@pytest.fixture(scope="module")
def medium():
    b = cad(images=20, features=15, candidates=40, seed=5)
    return standardize(b)


# ---------------------------------------------------------------- generator
def test_generator_label_rule_2d_and_3d():
    for dim in (2, 3):
        b = milopt.load(f"gen:cad?images=12&features=20&dim={dim}&seed=7")
        assert b.coords.shape == (b.n_instances, dim)
        assert 15 <= b.n_features <= 75
        centers, limg, r = b.meta["lesion_centers"], b.meta["lesion_image"], b.meta["radius"]
        # documented rule: positive iff within `radius` of a lesion centre of its own image
        dist = np.full(b.n_instances, np.inf)
        for k in range(centers.shape[0]):
            rows = b.bag_index == limg[k]
            dist[rows] = np.minimum(dist[rows], np.linalg.norm(b.coords[rows] - centers[k], axis=1))
        np.testing.assert_array_equal(b.instance_y, (dist <= r).astype(int))
        # image label = has a lesion = max of candidate labels
        np.testing.assert_array_equal(b.y, np.bincount(limg, minlength=b.n_bags).clip(0, 1))
        np.testing.assert_array_equal(b.y, np.maximum.reduceat(b.instance_y, b.bag_ptr[:-1]))
        assert 0 < b.y.sum() < b.n_bags
        # lesions have several candidates each
        lid = lesion_ids(b)
        assert np.all(np.bincount(lid[lid >= 0]) >= 2)


def test_generator_seeded_and_sizes():
    a = cad(images=30, features=40, seed=11)
    b = cad(images=30, features=40, seed=11)
    c = cad(images=30, features=40, seed=12)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.coords, b.coords)
    assert not np.array_equal(a.instance_y.sum(), c.instance_y.sum()) or not np.allclose(a.X[:5], c.X[:5])
    assert a.n_instances > 1000 and a.n_bags == 30
    with pytest.raises(InvalidParameterError, match="dim"):
        cad(dim=4)


def test_lesion_ids_follow_subsets():
    b = cad(images=10, features=15, seed=2)
    sub = b.subset([7, 2, 5])
    lid = lesion_ids(sub)
    full = lesion_ids(b)
    ptr = b.bag_ptr
    expect = np.concatenate([full[ptr[j]:ptr[j + 1]] for j in (7, 2, 5)])
    np.testing.assert_array_equal(lid, expect)


# ---------------------------------------------------------------- similarity / operators
def _dense_R(b, alpha, thresholded, distance="euclidean"):
    C = b.coords
    D2 = ((C[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    S = np.sqrt(D2) if distance == "euclidean" else D2
    R = np.exp(-alpha * S)
    if thresholded:
        R = (R >= np.exp(-4.0) * (1 - 1e-12)).astype(float)
    same = b.bag_index[:, None] == b.bag_index[None, :]
    R = np.where(same, R, 0.0)
    np.fill_diagonal(R, 0.0)
    return R


@pytest.mark.parametrize("thresholded", [True, False])
@pytest.mark.parametrize("distance", ["euclidean", "squared", "sqeuclidean"])
def test_similarity_matches_bruteforce(small, thresholded, distance):
    alpha = 0.5 if distance == "euclidean" else 0.1
    R = batchsvm_lp.similarity(small, alpha, thresholded, distance).toarray()
    np.testing.assert_allclose(R, _dense_R(small, alpha, thresholded, distance), atol=1e-12)
    assert R.sum() > 0


def test_squared_distance_is_section_5_1_1(small):
    """distance=squared: s(p,q) = exp(-|r_p - r_q|^2 / zeta^2), zeta^2 = 1/alpha; s* = [s >= e^-4] (eq. 13)."""
    zeta2 = 9.0
    C, bi = small.coords, small.bag_index
    Rc = batchsvm_lp.similarity(small, 1.0 / zeta2, False, "squared").toarray()
    Rt = batchsvm_lp.similarity(small, 1.0 / zeta2, True, "squared").toarray()
    for p, q in [(0, 1), (0, 2), (3, 5)]:
        if bi[p] == bi[q]:
            s = np.exp(-np.sum((C[p] - C[q]) ** 2) / zeta2)
            assert Rc[p, q] == pytest.approx(s, rel=1e-12)
    # thresholded: neighbours within Euclidean distance 2 zeta (= sqrt(4 zeta^2))
    D = np.sqrt(((C[:, None] - C[None]) ** 2).sum(-1))
    same = (bi[:, None] == bi[None, :]) & ~np.eye(len(C), dtype=bool)
    np.testing.assert_array_equal(Rt > 0, same & (D <= 2 * np.sqrt(zeta2) * (1 + 1e-12)))
    with pytest.raises(InvalidParameterError, match="squared"):
        batchsvm_lp.similarity(small, 0.5, True, "manhattan")


def test_posterior_operator_equals_explicit_inverse(small):
    alpha, sigma = 0.5, 0.7
    V = batchprob_lp.posterior_operator(small, alpha, sigma).toarray()
    ptr = small.bag_ptr
    for j in range(small.n_bags):
        s = slice(ptr[j], ptr[j + 1])
        C = small.coords[s]
        R = np.exp(-alpha * np.sqrt(((C[:, None] - C[None]) ** 2).sum(-1)))
        ref = np.linalg.solve(R + sigma ** 2 * np.eye(len(C)), R)             # (R + s2 I)^-1 R
        np.testing.assert_allclose(V[s, s], ref, atol=1e-10)
        # the formula as printed, with explicit inverses (loses digits when R is ill-conditioned)
        printed = np.linalg.inv(np.linalg.inv(R) * sigma ** 2 + np.eye(len(C)))
        np.testing.assert_allclose(V[s, s], printed, atol=1e-9 * np.linalg.cond(R))
    # no coupling across batches
    same = small.bag_index[:, None] == small.bag_index[None, :]
    assert np.all(V[~same] == 0)


def test_posterior_operator_singular_R():
    # duplicate coordinates make R singular: V is still defined (eigen form), symmetric, eigenvalues in [0, 1)
    C = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    b = Bags(X=np.eye(4), bag_index=np.zeros(4, int), y=[1], instance_y=[1, 1, 0, 0], coords=C)
    V, info = batchprob_lp.posterior_operator(b, 1.0, 0.5, return_info=True)
    V = V.toarray()
    np.testing.assert_allclose(V, V.T, atol=1e-12)
    ev = np.linalg.eigvalsh(V)
    assert ev.min() > -1e-12 and ev.max() < 1
    np.testing.assert_allclose(V[0], V[1], atol=1e-12)   # duplicates are treated identically
    with pytest.raises(InvalidParameterError, match="sigma"):
        batchprob_lp.posterior_operator(b, 1.0, 0.0)


# ---------------------------------------------------------------- LPs
def _l1_svm_linprog(X, d, nu, costs=None):
    """Independent 1-norm SVM (eq. 1) with w = p - q split, solved by scipy.optimize.linprog."""
    from scipy.optimize import linprog

    m, n = X.shape
    c = np.full(m, nu) if costs is None else costs
    # variables: p (n), q (n), gamma+ , gamma-, xi (m)
    obj = np.concatenate([np.ones(n), np.ones(n), [0, 0], c])
    DX = X * d[:, None]
    A = np.hstack([-DX, DX, d[:, None], -d[:, None], -np.eye(m)])     # -(D(Xw - e gamma) + xi) <= -1
    res = linprog(obj, A_ub=A, b_ub=-np.ones(m), bounds=[(0, None)] * (2 * n + 2 + m), method="highs-ipm")
    assert res.status == 0
    return res.fun


def test_batchsvm_lp_theta0_is_1norm_svm(small):
    from milopt.solvers import solve

    m = batchsvm_lp.build(small, nu=0.5, theta=0.0)
    r = solve(m, "highs")
    assert r.ok
    d = np.where(small.instance_y == 1, 1.0, -1.0)
    ref = _l1_svm_linprog(small.X, d, 0.5)
    assert r.objective == pytest.approx(ref, rel=1e-6, abs=1e-6)
    # and the decoded (w, gamma) attains it
    sol = batchsvm_lp.decode(m)
    P = sp.identity(small.n_instances)
    assert batchsvm_lp.objective_value(small, sol["w"], sol["gamma"], P, 0.5) == pytest.approx(ref, rel=1e-6)
    assert np.allclose(np.abs(sol["w"]), sol["v"], atol=1e-7)


def test_batchsvm_lp_theta_equals_transformed_svm(small):
    """With θ > 0 the LP is the 1-norm SVM on rows P B, P e (checked against linprog)."""
    from scipy.optimize import linprog

    from milopt.solvers import solve

    theta, alpha = 0.7, 0.5
    m = batchsvm_lp.build(small, nu=1.0, theta=theta, alpha=alpha)
    r = solve(m, "highs")
    P = theta * _dense_R(small, alpha, True) + np.eye(small.n_instances)
    d = np.where(small.instance_y == 1, 1.0, -1.0)
    X, e = P @ small.X, P @ np.ones(small.n_instances)
    mm, n = X.shape
    obj = np.concatenate([np.ones(2 * n), [0, 0], np.ones(mm)])
    A = np.hstack([-X * d[:, None], X * d[:, None], (d * e)[:, None], -(d * e)[:, None], -np.eye(mm)])
    ref = linprog(obj, A_ub=A, b_ub=-np.ones(mm), bounds=[(0, None)] * (2 * n + 2 + mm), method="highs-ipm")
    assert r.objective == pytest.approx(ref.fun, rel=1e-6)


def test_lp_needs_coords_unless_theta0():
    from milopt.data.generators import digits

    b = digits(bags=10, seed=0)
    with pytest.raises(InvalidDataError, match="batch method needs coordinates"):
        batchsvm_lp.build(b, theta=1.0)
    with pytest.raises(InvalidDataError, match="coords=K"):
        batchprob_lp.build(b)
    m = batchsvm_lp.build(b, theta=0.0)           # plain 1-norm SVM, instance labels of digits
    assert m._milopt_meta["labels"] == "instance_y"
    nb = b.with_X(b.X)
    object.__setattr__(nb, "instance_y", None)
    assert batchsvm_lp.build(nb, theta=0.0)._milopt_meta["labels"] == "bag label copied to instances"
    with pytest.raises(InvalidParameterError, match="unknown parameter"):
        batchsvm_lp.build(b, theta=0.0, C=1)
    with pytest.raises(InvalidDataError, match="batch method needs coordinates"):
        BatchSVMClassifier(theta=1.0).fit(b)
    with pytest.raises(InvalidDataError, match="coordinates"):
        BatchPSVMClassifier(theta=0.5).fit(b)
    assert BatchPSVMClassifier(theta=0.0).fit(b).predict_instances(b).shape == (b.n_instances,)


@pytest.mark.scip
def test_lps_highs_and_scip_agree(small):
    from milopt.solvers import solve

    for mod, kw in ((batchsvm_lp, {"theta": 1.0}), (batchsvm_lp, {"theta": 0.5, "thresholded": False}),
                    (batchprob_lp, {"sigma": 0.5})):
        a = solve(mod.build(small, **kw), "highs")
        b = solve(mod.build(small, **kw), "scip")
        assert a.ok and b.ok
        assert a.objective == pytest.approx(b.objective, rel=1e-6, abs=1e-6)


# ---------------------------------------------------------------- BatchPSVM
def _psvm_reference(X, d, nu, c=None):
    """Fung & Mangasarian PSVM: (I/nu + E'CE) z = E'C d, E = [X, -e] (dense, independent)."""
    m = X.shape[0]
    E = np.hstack([X, -np.ones((m, 1))])
    C = np.eye(m) if c is None else np.diag(c)
    return np.linalg.solve(np.eye(E.shape[1]) / nu + E.T @ C @ E, E.T @ C @ d)


def test_batchpsvm_theta0_equals_psvm(medium):
    d = np.where(medium.instance_y == 1, 1.0, -1.0)
    R = batchsvm_lp.similarity(medium, 0.5, True)
    w, g, th, res = fit_batchpsvm(medium.X, d, R, nu=0.3, theta=0.0)
    z = _psvm_reference(medium.X, d, 0.3)
    np.testing.assert_allclose(np.append(w, g), z, rtol=1e-8, atol=1e-10)
    # estimators: batchpsvm with theta=0 == psvm, same instance scores
    a = BatchPSVMClassifier(theta=0.0, class_weight="none", nu=0.3, append_coords=False).fit(medium)
    b = BatchPSVMClassifier(theta=0.0, class_weight="none", nu=0.3, append_coords=False).fit(medium.with_X(medium.X))
    np.testing.assert_allclose(a.predict_instances(medium), b.predict_instances(medium))
    np.testing.assert_allclose(a.coef_, z[:-1], rtol=1e-8, atol=1e-10)
    spec = milopt.estimators.registry.get_method("psvm")
    c = spec.make({"nu": 0.3, "class_weight": "none", "append_coords": "false"}).fit(medium)
    np.testing.assert_allclose(c.predict_instances(medium), a.predict_instances(medium))


@pytest.mark.parametrize("weighted", [False, True])
def test_batchpsvm_gradient_vanishes(medium, weighted):
    d = np.where(medium.instance_y == 1, 1.0, -1.0)
    R = batchsvm_lp.similarity(medium, 0.5, False)
    c = batchsvm_lp.class_costs(d, 1.0, "balanced") if weighted else np.ones(d.size)
    theta, nu = 0.8, 2.0
    w, g, _, _ = fit_batchpsvm(medium.X, d, R, nu=nu, theta=theta, weights=c)
    z = np.append(w, g)
    # independent gradient of eq. 6 with a dense P = theta R + I
    E = np.hstack([medium.X, -np.ones((medium.n_instances, 1))])
    P = theta * R.toarray() + np.eye(medium.n_instances)
    grad = nu * (P @ E).T @ (c * (P @ E @ z - d)) + z
    assert np.abs(grad).max() < 1e-8 * max(1.0, np.abs(E.T @ d).max())
    # and it is the minimiser: perturbations increase the objective
    S = BatchPSVMSystem(medium.X, d, R, nu, c)
    f0 = S.objective(z, theta)
    rng = np.random.default_rng(0)
    for _ in range(5):
        assert S.objective(z + 1e-3 * rng.standard_normal(z.size), theta) > f0


def test_learned_theta_decreases_objective_monotonically(medium):
    d = np.where(medium.instance_y == 1, 1.0, -1.0)
    R = batchsvm_lp.similarity(medium, 0.5, True)
    w, g, th, res = fit_batchpsvm(medium.X, d, R, nu=1.0, theta=0.0, learn_theta=True, tol=1e-8, max_iter=500,
                                  weights=batchsvm_lp.class_costs(d, 1.0, "balanced"))
    seq = [res.history[0]["objective"]]
    for h in res.history[1:]:
        seq += [h["objective_after_theta"], h["objective"]]
    seq = np.array(seq)
    assert np.all(np.diff(seq) <= 1e-9 * np.abs(seq[:-1]) + 1e-12)
    assert seq[-1] < seq[0]
    assert res.iterations >= 1 and str(res.termination) == "converged"
    # at convergence theta is the closed-form minimiser for the final (w, gamma)
    S = BatchPSVMSystem(medium.X, d, R, 1.0, batchsvm_lp.class_costs(d, 1.0, "balanced"))
    assert S.theta_update(np.append(w, g))[0] == pytest.approx(th, rel=1e-5, abs=1e-7)
    est = LearnedThetaBatchPSVM().fit(medium)
    assert est.fit_info_["iterations"] == len(est.result_.history) - 1
    assert est.theta_ != 0.0


def _j7_dense(X, d, R, nu, c, w, gamma, theta):
    """Eq. 7 written out with a dense P = θR + I (independent of BatchPSVMSystem)."""
    P = theta * R + np.eye(X.shape[0])
    r = P @ (X @ w - gamma) - d
    return 0.5 * nu * np.sum(c * r * r) + 0.5 * (w @ w + gamma * gamma + theta * theta)


@pytest.mark.parametrize("weighted,nu,thresholded", [(False, 0.05, True), (True, 1.0, True), (True, 0.3, False)])
def test_learned_theta_is_stationary_point_of_eq7(medium, weighted, nu, thresholded):
    """The learned (w, γ, θ) zeroes the gradient of eq. 7 in all three (analytic and finite differences)."""
    X = medium.X
    d = np.where(medium.instance_y == 1, 1.0, -1.0)
    Rs = batchsvm_lp.similarity(medium, 0.5, thresholded)
    R = Rs.toarray()
    c = batchsvm_lp.class_costs(d, 1.0, "balanced") if weighted else np.ones(d.size)
    w, g, th, res = fit_batchpsvm(X, d, Rs, nu=nu, theta=0.0, learn_theta=True, tol=1e-12, max_iter=5000,
                                  weights=c)
    assert str(res.termination) == "converged"
    # the reported objective is eq. 7 (with the θ²/2 term)
    assert res.objective == pytest.approx(_j7_dense(X, d, R, nu, c, w, g, th), rel=1e-10)
    # analytic gradient of eq. 7, written independently with dense matrices
    P = th * R + np.eye(X.shape[0])
    r = P @ (X @ w - g) - d
    grad_w = nu * X.T @ (P.T @ (c * r)) + w
    grad_g = -nu * np.sum(P.T @ (c * r)) + g
    grad_t = nu * (R @ (X @ w - g)) @ (c * r) + th
    scale = nu * np.abs(X.T @ (c * d)).max() + 1.0
    assert np.abs(grad_w).max() < 1e-6 * scale
    assert abs(grad_g) < 1e-6 * scale
    assert abs(grad_t) < 1e-6 * scale
    # central finite differences of the dense eq. 7 in every coordinate
    x0 = np.concatenate([w, [g, th]])
    f = lambda x: _j7_dense(X, d, R, nu, c, x[:-2], x[-2], x[-1])  # noqa: E731
    h = 1e-5
    fd = np.array([(f(x0 + h * e) - f(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)])
    assert np.abs(fd).max() < 1e-4 * scale
    # the θ step without the θ²/2 term of eq. 7 (eq. 6 minimised over θ) is NOT stationary for eq. 7
    w0, g0, th0, _ = fit_batchpsvm(X, d, Rs, nu=nu, theta=0.0, learn_theta=True, tol=1e-12, max_iter=5000,
                                   weights=c, theta_penalty=0.0)
    P0 = th0 * R + np.eye(X.shape[0])
    r0 = P0 @ (X @ w0 - g0) - d
    grad_t0 = nu * (R @ (X @ w0 - g0)) @ (c * r0) + th0
    assert abs(grad_t0) > 1e-3 and abs(th0) > abs(th)
    # and the system's own θ gradient agrees with the dense one
    S = BatchPSVMSystem(X, d, Rs, nu, c)
    assert S.theta_gradient(np.append(w, g), th) == pytest.approx(grad_t, abs=1e-8 * scale)
    # eq. 7 is only bi-convex: check the learned θ against the profile min_z J_7(z, θ) on a grid
    grid = np.linspace(-2.0, 4.0, 241)
    prof = np.array([S.objective(S.solve(t), t, 1.0) for t in grid])
    assert prof.min() >= res.objective * (1 - 1e-9)


# ---------------------------------------------------------------- estimators / prediction
def test_batch_prediction_with_R_zero_is_instancewise(small):
    for est in (BatchSVMClassifier(theta=1.0, alpha=0.5), BatchPSVMClassifier(theta=1.0, alpha=0.5)):
        est.fit(small)
        f = est.pre_scores(small)
        s = est.predict_instances(small)
        assert not np.allclose(f, s)                       # neighbours matter on these data
        est.set_params(alpha=1e6)                          # neighbourhood radius 4e-6: R = 0
        np.testing.assert_allclose(est.predict_instances(small), f)
        est.theta_ = 0.0
        np.testing.assert_allclose(est.predict_instances(small), f)
    p = BatchProbClassifier(alpha=1e6, sigma=0.5).fit(small)   # R = I: V = I / (1 + sigma^2)
    np.testing.assert_allclose(p.predict_instances(small), p.pre_scores(small) / 1.25, rtol=1e-9)


def test_batch_prediction_rule_eq5(small):
    est = BatchSVMClassifier(theta=0.6, alpha=0.5, thresholded=False).fit(small)
    f = small.X @ est.coef_ - est.gamma_
    P = 0.6 * _dense_R(small, 0.5, False) + np.eye(small.n_instances)
    np.testing.assert_allclose(est.predict_instances(small), P @ f, atol=1e-10)
    # bag score is the max of the batch-wise instance scores; predict thresholds it
    s = est.decision_function(small)
    np.testing.assert_allclose(s, np.maximum.reduceat(P @ f, small.bag_ptr[:-1]))
    assert set(np.unique(est.predict(small))) <= {0, 1}


def test_batch_methods_beat_baselines_on_generator():
    b = cad(images=24, features=20, seed=21)
    tr, te = standardize(b.subset(np.arange(0, 24, 2)), b.subset(np.arange(1, 24, 2)))
    psvm = BatchPSVMClassifier(theta=0.0).fit(tr).score(te)
    bpsvm = BatchPSVMClassifier(theta=1.0).fit(tr).score(te)
    assert bpsvm > psvm + 0.02


def test_gridsearch_tunes_theta_over_batches(medium):
    from sklearn.model_selection import GridSearchCV

    gs = GridSearchCV(BatchPSVMClassifier(), {"theta": [0.0, 0.5, 1.0], "alpha": [0.5]}, cv=3)
    gs.fit(medium, medium.y)
    assert gs.best_params_["theta"] in (0.0, 0.5, 1.0)
    assert np.isfinite(gs.best_score_)


def test_evaluate_reports_instance_metrics(small):
    est = BatchPSVMClassifier(theta=0.5).fit(small)
    out = evaluate(est, small)
    assert "instance_auc" in out and "bag_auc" in out
    assert out["instance_auc"] == pytest.approx(instance_auc(small, est.predict_instances(small)))
    assert out["instance_auc"] == pytest.approx(est.score(small))


def test_registry_and_pickle(small):
    import pickle

    from milopt.estimators.registry import methods

    ms = methods()
    for name in ("batchsvm", "batchsvm-cont", "batchprob", "psvm", "batchpsvm", "batchpsvm-learned"):
        assert name in ms
    assert ms["batchsvm"].needs == ("coords",) and ms["psvm"].needs == ()
    assert ms["batchsvm-cont"].make().thresholded is False
    est = ms["batchpsvm"].make({"theta": 0.5}).fit(small)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(est.predict_instances(small), est2.predict_instances(small))


# ---------------------------------------------------------------- FROC
def test_froc_monotone_and_limits(medium):
    rng = np.random.default_rng(0)
    scores = medium.instance_y + rng.standard_normal(medium.n_instances)
    c = froc_curve(medium, scores)
    assert np.all(np.diff(c["false_marks_per_image"]) >= 0)
    assert np.all(np.diff(c["sensitivity"]) >= 0)
    assert c["sensitivity"].iloc[0] == 0 and c["sensitivity"].iloc[-1] == 1
    n_neg = int((medium.instance_y == 0).sum())
    assert c["false_marks_per_image"].iloc[-1] == pytest.approx(n_neg / medium.n_bags)
    # perfect scores: all lesions found before any false mark
    p = froc_curve(medium, medium.instance_y.astype(float))
    assert sensitivity_at(p, 0.0) == 1.0
    t = froc_table(medium, scores, points=(1, 2, 6))
    assert list(t["false_marks_per_image"]) == [1, 2, 6]
    assert np.all(np.diff(t["sensitivity"]) >= 0)


def test_froc_counts_lesions_not_candidates():
    # one image, lesion 0 has 3 candidates, lesion 1 has 1; two negatives
    X = np.zeros((6, 1))
    b = Bags(X=X, bag_index=np.zeros(6, int), y=[1], instance_y=[1, 1, 1, 1, 0, 0], coords=np.zeros((6, 2)),
             meta={"lesion_id": np.array([0, 0, 0, 1, -1, -1]), "lesion_ptr": np.array([0, 6])})
    s = np.array([0.9, 0.1, 0.1, 0.2, 0.5, 0.0])
    c = froc_curve(b, s)
    # at threshold 0.9: lesion 0 found (1 of 2), no false mark; at 0.5: one false mark
    assert sensitivity_at(c, 0.0) == 0.5
    assert sensitivity_at(c, 1.0) == 1.0
    img = froc_curve(b, s, unit="image")
    assert sensitivity_at(img, 0.0) == 1.0
    with pytest.raises(InvalidDataError, match="scores"):
        froc_curve(b, s[:3])


def test_csv_with_coordinate_columns(tmp_path):
    """A headerless MIL CSV whose first K feature columns are coordinates (``load(path, coords=K)``,
    CLI ``--set coords=K``): no instance labels, so the bag label is copied to the instances."""
    import pandas as pd

    b = cad(images=8, features=15, candidates=20, seed=4)
    lab = b.y[b.bag_index]
    df = pd.DataFrame(np.column_stack([lab, b.bag_index, b.coords, b.X]))
    path = tmp_path / "cad.csv"
    df.to_csv(path, header=False, index=False)
    c = milopt.load(str(path), coords=2)
    assert c.coords.shape == (b.n_instances, 2) and c.n_features == 15 and c.instance_y is None
    est = BatchPSVMClassifier(theta=0.5).fit(c)
    assert est.labels_source_ == "bag label copied to instances"
    np.testing.assert_allclose(est.predict_instances(c), est.predict_instances(b.with_X(b.X)))
    with pytest.raises(InvalidDataError, match="coordinates"):
        BatchPSVMClassifier(theta=0.5).fit(milopt.load(str(path)))


# ---------------------------------------------------------------- paper protocol (Section 5.2)
def test_baselines_get_coordinates_appended(medium):
    """SVM/PSVM baselines see the (standardised) coordinates as features; the batch methods do not."""
    n, dim = medium.n_features, medium.coords.shape[1]
    psvm = BatchPSVMClassifier(theta=0.0, nu=0.3).fit(medium)
    assert psvm.coords_appended_ and psvm.coef_.shape == (n + dim,) and psvm.fit_info_["coords_appended"]
    # equals a PSVM fitted by hand on [X, standardised coords]
    Cs = (medium.coords - medium.coords.mean(0)) / medium.coords.std(0)
    ref = BatchPSVMClassifier(theta=0.0, nu=0.3, append_coords=False).fit(medium.with_X(np.hstack([medium.X, Cs])))
    np.testing.assert_allclose(psvm.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(psvm.predict_instances(medium),
                               ref.predict_instances(medium.with_X(np.hstack([medium.X, Cs]))), rtol=1e-9, atol=1e-12)
    # switched off, and never for a batch method (θ ≠ 0, learned θ, BatchProb)
    assert BatchPSVMClassifier(theta=0.0, append_coords="false").fit(medium).coef_.shape == (n,)
    for est in (BatchPSVMClassifier(theta=0.5), LearnedThetaBatchPSVM()):
        assert est.fit(medium).coef_.shape == (n,) and not est.coords_appended_
    # the 1-norm SVM LP baseline too
    svm = BatchSVMClassifier(theta=0.0, nu=0.5).fit(medium)
    assert svm.coef_.shape == (n + dim,)
    # prediction needs the coordinates then; data without coordinates: nothing appended
    nocoord = Bags(X=medium.X, bag_index=medium.bag_index, y=medium.y, instance_y=medium.instance_y)
    with pytest.raises(InvalidDataError, match="coordinates"):
        psvm.predict_instances(nocoord)
    assert BatchPSVMClassifier(theta=0.0).fit(nocoord).coef_.shape == (n,)
    with pytest.raises(InvalidDataError, match="coordinates"):
        BatchPSVMClassifier(theta=0.0, append_coords=True).fit(nocoord)
    with pytest.raises(InvalidParameterError, match="append_coords"):
        BatchPSVMClassifier(theta=0.0, append_coords="maybe").fit(medium)


def test_froc_per_patient_and_per_lesion(medium):
    """Per-patient (image) FROC: a positive image counts as found when one of its positive candidates is marked."""
    s = BatchPSVMClassifier(theta=0.5).fit(medium).predict_instances(medium)
    img = froc_curve(medium, s, unit="image")
    les = froc_curve(medium, s, unit="lesion")
    n_pos_img = int(medium.y.sum())
    assert img["detected"].iloc[-1] == n_pos_img
    np.testing.assert_array_equal(img["false_marks_per_image"], les["false_marks_per_image"])
    # brute force at a few thresholds
    for t in np.quantile(s, [0.5, 0.9, 0.99]):
        marked = (s >= t) & (medium.instance_y == 1)
        found = np.unique(medium.bag_index[marked]).size
        row = img[img.threshold <= t].iloc[0]
        assert row["sensitivity"] == pytest.approx(found / n_pos_img)
    # an image is found exactly when one of its lesions is: count the images of the detected lesions
    lid = lesion_ids(medium)
    pos = lid >= 0
    _, first, inv = np.unique(lid[pos], return_index=True, return_inverse=True)
    lesion_image = medium.bag_index[pos][first]
    t = float(np.quantile(s, 0.95))
    lmax = np.full(lesion_image.size, -np.inf)
    np.maximum.at(lmax, inv, s[pos])
    row = img[img.threshold <= t].iloc[0]
    assert row["detected"] == np.unique(lesion_image[lmax >= t]).size
