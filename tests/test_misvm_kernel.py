"""Kernel MI-SVM big-M model (misvm-kernel-bigm): against misvm-bigm (linear kernel), brute force
and the branch and bound (RBF, poly), export round trips, the CLI and the estimator."""
import json
import subprocess
import sys

import numpy as np
import pyscipopt
import pytest
from test_bnb import brute_force, tiny

from milopt.data import load
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.metrics import standardize
from milopt.models import formulation, misvm_bigm
from milopt.models import misvm_kernel_bigm as kb
from milopt.solvers import export, installed, solve

FORM = formulation("misvm-kernel-bigm")


def brute_force_kernel(bags, K, costs):
    """Minimum over every witness selection of the certified kernel SVM optimum."""
    return brute_force(bags, costs, K)


@pytest.mark.scip
@pytest.mark.parametrize("seed", [0, 3])
def test_linear_kernel_equals_misvm_bigm(seed):
    bags = tiny(seed, n_pos=3, n_neg=3, d=3)
    ref = solve(misvm_bigm.build(bags), "scip", mip_gap=1e-9)
    r = solve(FORM.build(bags, kernel="linear", warm_start=False), "scip", mip_gap=1e-9)
    assert ref.termination == r.termination == "optimal"
    assert r.objective == pytest.approx(ref.objective, rel=1e-5, abs=1e-7)


@pytest.mark.scip
@pytest.mark.parametrize("form", ["matrix", "factor"])
@pytest.mark.parametrize("kernel,gamma", [("rbf", 0.5), ("poly", 1 / 3)])
def test_scip_equals_bnb_equals_brute_force(kernel, gamma, form):
    bags = tiny(31, n_pos=3, n_neg=3, d=3)
    m = FORM.build(bags, kernel=kernel, gamma=gamma, degree=2, coef0=1.0, warm_start=True, form=form)
    K = m._milopt.meta["K"]
    costs = m._milopt.meta["costs"]
    ref = brute_force_kernel(bags, K, costs)
    r = solve(m, "scip", mip_gap=1e-9)
    assert r.termination == "optimal" and r.objective == pytest.approx(ref, rel=1e-5, abs=1e-7)
    # the decoded point has the solver's objective and scores K beta + b
    sol = FORM.decode(m)
    assert kb.objective_of(bags, K, costs, sol["coef"], sol["b"]) == pytest.approx(r.objective, rel=1e-5, abs=1e-7)
    m2 = FORM.build(bags, kernel=kernel, gamma=gamma, degree=2, coef0=1.0, form=form)
    rb = solve(m2, "bnb", mip_gap=1e-7)
    assert rb.termination == "optimal" and rb.objective == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert rb.bound <= ref + 1e-7
    assert kb.model_objective(m2) == pytest.approx(rb.objective, rel=1e-6)
    np.testing.assert_allclose(FORM.predict(FORM.decode(m2), bags), FORM.decode(m2)["scores"], atol=1e-9)


def test_factor_is_the_empirical_kernel_map():
    """form='factor': Phi Phi' = K, the u block of the Hessian is I, and beta recovered from u
    gives the same scores."""
    bags = tiny(7, n_pos=3, n_neg=3, d=4)
    m = FORM.build(bags, kernel="poly", gamma=0.25, degree=3, form="factor", warm_start=True)
    meta = m._milopt.meta
    np.testing.assert_allclose(meta["Phi"] @ meta["Phi"].T, meta["K"], atol=1e-10 * np.abs(meta["K"]).max())
    assert meta["Phi"].shape[1] <= bags.n_instances
    u = np.array([m.u[i].value for i in m.N])
    beta = kb.beta_of(m)
    np.testing.assert_allclose(meta["K"] @ beta, meta["Phi"] @ u, atol=1e-8)
    with pytest.raises(InvalidParameterError, match="form"):
        FORM.build(bags, form="lowrank")


def test_big_m_is_the_feature_space_distance():
    """L_i = sqrt(2F) max_j d_K(z_i, z_j) (loops as reference), and the optimum of every tiny
    instance satisfies its margin rows with that L (a smaller L would cut it off somewhere)."""
    bags = tiny(5, n_pos=4, n_neg=3, d=2, max_size=5)
    K = kb.gram_matrix(bags.X, kernel="rbf", gamma=0.7)
    F = 1.3
    L = kb.kernel_big_m(K, bags.bag_ptr, F)
    ptr = bags.bag_ptr
    for I in range(bags.n_bags):
        for i in range(ptr[I], ptr[I + 1]):
            d = max(np.sqrt(max(K[i, i] + K[j, j] - 2 * K[i, j], 0.0)) for j in range(ptr[I], ptr[I + 1]))
            assert L[i] == pytest.approx(np.sqrt(2 * F) * d, rel=1e-12, abs=1e-14)
    # validity at the optimum: the release f(z_j) - f(z_i) needed by any non-witness is at most L
    m = FORM.build(bags, kernel="rbf", gamma=0.7)
    r = solve(m, "bnb", mip_gap=1e-8)
    sol = FORM.decode(m)
    L = m._milopt.meta["big_m"]
    s = sol["scores"]
    for I, j in sol["witnesses"].items():
        for i in range(ptr[I], ptr[I + 1]):
            assert s[j] - s[i] <= L[i] + 1e-7
    assert r.termination == "optimal"


@pytest.mark.scip
def test_precomputed_gram_equals_rbf(tmp_path):
    bags = tiny(31, n_pos=3, n_neg=3, d=3)
    K = kb.gram_matrix(bags.X, kernel="rbf", gamma=0.5)
    path = tmp_path / "K.npy"
    np.save(path, K)
    a = solve(FORM.build(bags, kernel="rbf", gamma=0.5), "bnb", mip_gap=1e-7)
    b = solve(FORM.build(bags, kernel="precomputed", gram=str(path)), "bnb", mip_gap=1e-7)
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    with pytest.raises(InvalidParameterError, match="gram"):
        FORM.build(bags, kernel="precomputed")
    with pytest.raises(InvalidDataError, match="gram"):
        kb.build(bags, kernel="precomputed", gram=K[:-1, :-1])      # an array: the module's build
    bad = K.copy()
    bad[0, 1] += 0.5
    with pytest.raises(InvalidDataError, match="symmetric"):
        kb.build(bags, kernel="precomputed", gram=bad)
    # an array from Python gives the same model as the file
    c = solve(kb.build(bags, kernel="precomputed", gram=K), "bnb", mip_gap=1e-7)
    assert c.objective == pytest.approx(a.objective, rel=1e-9)


@pytest.mark.scip
@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_export_round_trip(tmp_path, suffix):
    """The exported file (milopt's writer; Q = the Gram matrix) read by SCIP reaches the optimum."""
    bags = tiny(31, n_pos=3, n_neg=3, d=3)
    m = FORM.build(bags, kernel="rbf", gamma=0.5, warm_start=True)
    ref = solve(m, "bnb", mip_gap=1e-8)
    path = tmp_path / f"k{suffix}"
    size = export(m, path)
    n = bags.n_instances
    assert size["quadratic_nonzeros"] == n * (n + 1) // 2     # the upper triangle of a dense K
    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    s.setParam("limits/gap", 1e-9)
    s.optimize()
    assert s.getObjVal() == pytest.approx(ref.objective, rel=1e-5, abs=1e-7)


@pytest.mark.cplex
@pytest.mark.skipif("cplex" not in installed(), reason="CPLEX not installed")
def test_cplex_community_edition():
    bags = tiny(31, n_pos=3, n_neg=3, d=3)
    m = FORM.build(bags, kernel="poly", gamma=1 / 3, degree=2, coef0=1.0)
    ref = brute_force_kernel(bags, m._milopt.meta["K"], m._milopt.meta["costs"])
    r = solve(m, "cplex", mip_gap=1e-9, time_limit=60)
    assert r.termination == "optimal" and r.objective == pytest.approx(ref, rel=1e-5, abs=1e-7)


def _cli(*args):
    p = subprocess.run([sys.executable, "-m", "milopt.cli", *args], capture_output=True, text=True, timeout=300,
                       check=False)
    return p.returncode, p.stdout, p.stderr


DATA = "gen:subset?data=musk1&bags=10&seed=0"
SMALL = "gen:subset?data=musk1&bags=6&seed=0"      # 22 instances: SCIP proves it in seconds


def test_cli_solve_bnb_json_and_errors():
    code, out, err = _cli("solve", "misvm-kernel-bigm", "--data", DATA, "--solver", "bnb", "--set", "kernel=rbf",
                          "gamma=0.01", "--time-limit", "60", "--json")
    assert code == 0, err
    r = json.loads(out)                       # exactly one JSON document
    assert r["solver"] == "bnb" and r["termination"] == "optimal" and r["formulation"] == "misvm-kernel-bigm"
    assert r["bound"] <= r["objective"] + 1e-9 and r["nodes"] >= 1 and r["params"]["kernel"] == "rbf"
    code, out, err = _cli("solve", "misvm-kernel-bigm", "--data", DATA, "--solver", "bnb", "--set", "kernel=sigmoid")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "kernel" in err
    code, out, err = _cli("solve", "misvm-kernel-bigm", "--data", DATA, "--solver", "bnb", "--set", "gamma=-1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "gamma" in err


@pytest.mark.scip
def test_cli_export_then_scip(tmp_path):
    """milopt export writes the kernel model; SCIP reading the file reaches bnb's certified optimum."""
    path = tmp_path / "k.mps"
    code, out, err = _cli("export", "misvm-kernel-bigm", "--data", SMALL, "--set", "kernel=poly", "degree=2",
                          "-o", str(path), "--json")
    assert code == 0, err
    json.loads(out)
    code, out, err = _cli("solve", "misvm-kernel-bigm", "--data", SMALL, "--solver", "bnb", "--set", "kernel=poly",
                          "degree=2", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["termination"] == "optimal"
    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    s.setParam("limits/time", 120)
    s.optimize()
    assert s.getStatus() == "optimal"
    assert s.getObjVal() == pytest.approx(r["objective"], rel=1e-4)


def test_estimator_predicts_new_bags():
    """The generic estimator of the formulation (milopt fit misvm-kernel-bigm) with bnb: held-out
    scores come from K(test, support) β + b and the training scores match the model's."""
    from milopt.estimators.formulation import classifier_class

    bags = standardize(load("gen:subset?data=musk1&bags=16&seed=1"))
    idx = np.arange(bags.n_bags)
    tr, te = bags.subset(idx[::2]), bags.subset(idx[1::2])
    est = classifier_class("misvm-kernel-bigm")(kernel="rbf", gamma=0.01, class_weight="balanced", solver="bnb",
                                                time_limit=60)
    est.fit(tr)
    assert est.fit_info_["termination"] == "optimal"
    np.testing.assert_allclose(est.predict_instances(tr), est.solution_["scores"], atol=1e-8)
    s = est.predict_instances(te)
    K = kb.gram_matrix(te.X, tr.X, "rbf", 0.01)
    np.testing.assert_allclose(s, K @ est.solution_["coef"] + est.solution_["b"], atol=1e-8)
