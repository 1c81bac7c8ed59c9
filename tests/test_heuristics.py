"""MI-SVM / mi-SVM heuristics and the SMM / Nyström estimators."""
import itertools
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from milopt.algorithms.mi_heuristics import mi_svm_alternate, misvm_alternate, slack_structure
from milopt.qp.svm_ipm import solve_group_dual_ipm
from milopt.data.bags import Bags
from milopt.data.generators import kent_yu
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.estimators.registry import get_method
from milopt.features import kernel_matrix, mean_embedding_kernel


def tiny(seed=0, n_bags=6, sizes=(3, 2, 3, 2, 2, 3), d=2):
    rng = np.random.default_rng(seed)
    y = np.array([1, 0] * (n_bags // 2))
    arrays = [rng.normal(size=(s, d)) + (0.7 if lab else 0.0) for s, lab in zip(sizes, y)]
    return Bags.from_arrays(arrays, y)


def selection_value(K, bags, wit, C, class_weight, slack):
    y, g, caps = slack_structure(bags, C, class_weight, slack)
    act = y < 0
    act[list(wit)] = True
    E = np.flatnonzero(act)
    gi, ginv = np.unique(g[E], return_inverse=True)
    return solve_group_dual_ipm(K[np.ix_(E, E)], y[E], ginv, caps[gi], tol=1e-10)["dual"]


def all_selections(bags):
    pos = np.flatnonzero(bags.y == 1)
    ranges = [range(bags.bag_ptr[I], bags.bag_ptr[I + 1]) for I in pos]
    return list(itertools.product(*ranges))


@pytest.mark.parametrize("slack", ["bag", "instance"])
@pytest.mark.parametrize("kernel,gamma", [("linear", None), ("rbf", 0.8)])
@pytest.mark.parametrize("solver", ["ipm", "smo"])
def test_objective_never_increases(slack, kernel, gamma, solver):
    b = kent_yu(3, bags=24, instances=4, samples=3, seed=4)
    K = kernel_matrix(b.X, None, kernel, gamma)
    res = misvm_alternate(K, b, C=5.0, slack=slack, init="random", restarts=3, random_state=1, solver=solver,
                          tol=1e-6 if solver == "ipm" else 1e-4)
    for start in range(3):
        obj = [h["objective"] for h in res["history"] if h["start"] == start and h["accepted"]]
        assert len(obj) >= 1
        assert np.all(np.diff(obj) <= 1e-7 * max(1.0, abs(obj[0]))), obj
        # P(s_{t+1}) <= Phi(w_t, b_t) <= P(s_t)
        hs = [h for h in res["history"] if h["start"] == start and h["accepted"]]
        for h0, h1 in zip(hs, hs[1:]):
            assert h0["mi_objective"] <= h0["objective"] + 1e-7
            # the subproblem is solved to a tolerance: its computed P exceeds the subproblem's optimum by
            # at most the duality gap P - D, so the certified value is P - gap (exact solve: gap = 0)
            assert h1["gap"] >= 0.0
            assert h1["objective"] - h1["gap"] <= h0["mi_objective"] + 1e-9 * max(1.0, abs(h0["objective"]))
    assert res["objective"] == pytest.approx(min(h["objective"] for h in res["history"] if h["accepted"]), rel=1e-9)


def test_mi_svm_objective_never_increases():
    b = kent_yu(3, bags=30, instances=4, samples=3, seed=2)
    K = kernel_matrix(b.X, None, "rbf", 0.5)
    res = mi_svm_alternate(K, b, C=2.0, tol=1e-6, class_weight="none")
    obj = [h["objective"] for h in res["history"]]
    assert np.all(np.diff(obj) <= 1e-6 * max(1.0, obj[0])), obj
    lab = res["labels"]
    pos_bags = np.flatnonzero(b.y == 1)
    assert all((lab[b.bag_ptr[I]:b.bag_ptr[I + 1]] > 0).any() for I in pos_bags)
    assert np.all(lab[b.instance_bag_y == 0] < 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_started_at_the_best_enumerated_selection_it_stays_there(seed):
    b = tiny(seed)
    K = kernel_matrix(b.X, None, "linear")
    sels = all_selections(b)
    vals = np.array([selection_value(K, b, s, 1.0, "kent-yu", "bag") for s in sels])
    best = sels[int(np.argmin(vals))]
    scores = np.zeros(b.n_instances)
    scores[list(best)] = 1.0
    res = misvm_alternate(K, b, C=1.0, slack="bag", init_scores=scores, solver="ipm", tol=1e-8)
    assert res["objective"] == pytest.approx(vals.min(), rel=1e-6, abs=1e-9)
    assert tuple(res["witnesses"]) == best or res["objective"] <= vals.min() + 1e-8
    # from any start the heuristic ends at an enumerated value, never below the global minimum
    res = misvm_alternate(K, b, C=1.0, slack="bag", init="random", restarts=4, random_state=seed, solver="ipm", tol=1e-8)
    assert res["objective"] >= vals.min() - 1e-7
    assert np.min(np.abs(vals - res["objective"])) < 1e-6 * max(1.0, vals.min())


@pytest.mark.scip
@pytest.mark.parametrize("seed", [0, 3])
def test_heuristic_is_at_least_the_miqp_optimum(seed):
    from milopt.models import misvm_bigm
    from milopt.solvers import solve

    b = tiny(seed)
    K = kernel_matrix(b.X, None, "linear")
    m = misvm_bigm.build(b, C=1.0, class_weight="kent-yu")
    r = solve(m, "scip", time_limit=60)
    assert r.ok
    vals = [selection_value(K, b, s, 1.0, "kent-yu", "bag") for s in all_selections(b)]
    assert r.objective == pytest.approx(min(vals), rel=1e-5, abs=1e-7)       # MIQP = global optimum
    for start in range(3):
        res = misvm_alternate(K, b, C=1.0, slack="bag", init="random", restarts=1, random_state=start,
                              solver="ipm", tol=1e-8)
        assert res["objective"] >= r.objective - 1e-6 * max(1.0, r.objective)


def test_estimators_fit_predict_and_follow_sklearn_conventions():
    from milopt.estimators.heuristics import MiSVMHeuristic, MISVMHeuristic, SILClassifier

    b = kent_yu(3, bags=30, instances=3, samples=4, seed=0)
    for est in (SILClassifier(C=1.0), MISVMHeuristic(C=1.0, slack="bag"), MISVMHeuristic(kernel="rbf", gamma=0.2),
                MiSVMHeuristic(C=1.0)):
        est.fit(b)
        s = est.decision_function(b)
        assert s.shape == (b.n_bags,) and np.all(np.isfinite(s))
        assert set(np.unique(est.predict(b))) <= {0, 1}
        c = clone(est)
        assert c.get_params() == est.get_params()
        again = pickle.loads(pickle.dumps(est))
        np.testing.assert_allclose(again.decision_function(b), s)
    # the linear MI-SVM decision function equals the primal w of its dual solution
    est = MISVMHeuristic(C=1.0, slack="instance", solver="libsvm").fit(b)
    assert est.coef_.shape == (b.n_features,)


def test_smm_estimators_need_samples_and_agree_with_point_masses():
    from milopt.estimators.heuristics import MISMMHeuristic, MISVMHeuristic, SISMMClassifier

    b = kent_yu(1, bags=20, instances=3, samples=5, seed=3)
    plain = Bags(X=b.X, bag_index=b.bag_index, y=b.y)
    for name in ("mismm-heuristic", "sismm", "mismm-miqp", "misvm-summary"):
        spec = get_method(name)
        assert "samples" in spec.needs and spec.scale is False
        with pytest.raises(InvalidDataError, match="samples"):
            spec.make({}).fit(plain)
    # distributions that are point masses: mi-SMM = MI-SVM with the RBF kernel on the points
    pm = Bags(X=b.X, bag_index=b.bag_index, y=b.y, samples=np.repeat(b.X, 2, axis=0),
              sample_ptr=np.arange(b.n_instances + 1) * 2)
    a = MISMMHeuristic(gamma=0.3, scale_samples=False, init="first").fit(pm)
    c = MISVMHeuristic(kernel="rbf", gamma=0.3, slack="bag", init="first", class_weight="kent-yu", scale_C=False,
                       restarts=1).fit(pm)
    np.testing.assert_allclose(a.decision_function(pm), c.decision_function(pm), atol=1e-6)
    s = SISMMClassifier(gamma=0.3).fit(b)
    assert np.all(np.isfinite(s.decision_function(b)))


@pytest.mark.scip
def test_mismm_miqp_runs_warm_started_and_never_worse_than_its_heuristic():
    from milopt.estimators.heuristics import MISMMMIQP

    b = kent_yu(3, bags=12, instances=2, samples=5, seed=1)
    est = MISMMMIQP(C=1.0, m=20, time_limit=10).fit(b)
    info = est.fit_info_
    assert info["objective"] <= info["heuristic_objective"] + 1e-7
    assert info["landmarks"] >= b.n_bags
    assert np.all(np.isfinite(est.decision_function(b)))


def test_bad_parameters_are_refused():
    b = kent_yu(3, bags=10, instances=2, samples=3, seed=0)
    K = kernel_matrix(b.X, None, "linear")
    with pytest.raises(InvalidParameterError, match="slack"):
        misvm_alternate(K, b, slack="group")
    with pytest.raises(InvalidParameterError, match="restarts"):
        misvm_alternate(K, b, restarts=0)
    with pytest.raises(InvalidParameterError, match="libsvm"):
        misvm_alternate(K, b, slack="bag", solver="libsvm")
    with pytest.raises(InvalidParameterError, match="unknown key"):
        get_method("misvm-heuristic").make({"Cee": 1})
    spec = get_method("misvm-heuristic")
    assert {"C", "kernel", "gamma", "slack", "restarts", "max_iter"} <= set(spec.keys())


@pytest.mark.parametrize("cw", ["kent-yu", "balanced", "none"])
def test_slack_costs_match_misvm_bigm(cw):
    from milopt.algorithms.mi_heuristics import slack_costs
    from milopt.models.misvm_bigm import bag_costs

    b = tiny(1)
    np.testing.assert_allclose(slack_costs(b, 3.0, cw)[0], bag_costs(b, 3.0, cw))


def test_smm_kernel_path_matches_explicit_kernel():
    b = kent_yu(2, bags=8, instances=2, samples=4, seed=0)
    K = mean_embedding_kernel(b.samples, b.sample_ptr, gamma=0.2)
    assert K.shape == (16, 16) and np.allclose(K, K.T)


def test_kent_yu_study_writes_table_and_plot(tmp_path):
    import pandas as pd

    from milopt.study import kent_yu_study

    res = kent_yu_study(out_dir=str(tmp_path), replicates=1, bags=16, instances=2, samples=6, test_bags=12, folds=2,
                        Cs=(1.0,), gamma_factors=(1.0,), scenarios=(3,),
                        methods=("mismm-heuristic", "sismm", "misvm-univ1"), n_jobs=1, verbose=False)
    df = pd.read_csv(res["results_csv"])
    assert set(df.method) == {"mismm-heuristic", "sismm", "misvm-univ1"} and df.test_auc.between(0, 1).all()
    assert (tmp_path / "auroc.png").stat().st_size > 1000 and (tmp_path / "summary.csv").exists()
    assert set(res["auroc_mean"]) == {"mismm-heuristic", "sismm", "misvm-univ1"}
    with pytest.raises(InvalidParameterError, match="methods"):
        kent_yu_study(out_dir=str(tmp_path), methods=("svm",))


def test_kent_yu_study_has_the_papers_seven_methods_and_grid(tmp_path):
    import pandas as pd

    from milopt import study

    assert len(study.METHODS) == 7 and {"misvm-univ1", "misvm-univ1-univ2", "misvm-univ1-cor",
                                        "misvm-univ1-univ2-cor"} <= set(study.METHODS)
    # §3.1: groups {20, 50} x instances {3, 6} x samples {20, 50, 100}
    assert sorted(study.PAPER_SETTINGS) == sorted((g, i, s) for g in (20, 50) for i in (3, 6) for s in (20, 50, 100))
    assert study.STUDY_INIT == "random" and study.MISVM_INIT == "centroid"   # Algorithm 1 line 2; Andrews
    res = study.kent_yu_study(out_dir=str(tmp_path), replicates=1, settings=[(12, 2, 6), (14, 3, 5)], test_bags=12,
                              folds=2, Cs=(1.0,), gamma_factors=(1.0,), scenarios=(2,),
                              methods=("misvm-univ1-univ2-cor", "misvm-cor"), n_jobs=1, verbose=False)
    df = pd.read_csv(res["results_csv"])
    assert set(df.method) == {"misvm-univ1-univ2-cor", "misvm-univ1-cor"}
    assert set(zip(df.bags, df.instances, df.samples)) == {(12, 2, 6), (14, 3, 5)}
    assert res["settings"]["variant"] == "paper" and res["settings"]["replicates"] == 1


def _many_negative_instances(seed=0, n_pos=8, n_neg=12, shift=2.0):
    """Bags shaped like MUSK2: few positive bags, negative bags of many instances."""
    rng = np.random.default_rng(seed)
    u = np.array([1.0, 0.5, 0.0])
    arrays, y = [], []
    for i in range(n_pos + n_neg):
        lab = int(i < n_pos)
        Xb = rng.normal(size=(int(rng.integers(20, 40)) if not lab else 4, 3))
        if lab:
            Xb[0] += shift * u
        arrays.append(Xb)
        y.append(lab)
    return Bags.from_arrays(arrays, np.array(y))


def test_scale_C_divides_by_the_bags_under_balanced_weights():
    """scale_C: C / n_bags with balanced bag weights (each class costs C/2 in total), C / (negative
    instances + positive bags) otherwise (the misvm package's convention)."""
    from milopt.estimators.heuristics import MISVMHeuristic

    b = _many_negative_instances()
    n_eff = int(np.sum(b.instance_bag_y == 0) + b.positive_bags)
    for cw, count in (("balanced", b.n_bags), ("none", n_eff), ("kent-yu", n_eff)):
        scaled = MISVMHeuristic(C=3.0, class_weight=cw, threshold="zero", restarts=1).fit(b)
        direct = MISVMHeuristic(C=3.0 / count, class_weight=cw, scale_C=False, threshold="zero", restarts=1).fit(b)
        np.testing.assert_allclose(scaled.decision_function(b), direct.decision_function(b), atol=1e-8)


def test_balanced_scale_C_is_not_all_slacks_at_their_caps():
    """With the effective-set count and balanced weights, both classes' caps total the same tiny
    amount and every slack group is at its cap (w a difference of weighted means, b undetermined);
    the bag count leaves groups free."""
    b = _many_negative_instances(shift=6.0)
    n_eff = int(np.sum(b.instance_bag_y == 0) + b.positive_bags)

    def groups_at_cap(C):
        r = misvm_alternate(None, b, C=C, class_weight="balanced", slack="bag", restarts=1, X=b.X, solver="ipm")
        y, groups, caps = slack_structure(b, C, "balanced", "bag")
        return np.bincount(groups, weights=r["alpha"], minlength=caps.size) >= caps * (1 - 1e-3)

    assert groups_at_cap(1.0 / n_eff).all()
    assert not groups_at_cap(1.0 / b.n_bags).all()
