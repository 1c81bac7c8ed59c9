"""Interrupts, time limits, exit codes, messages and results a user can trust."""
import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from milopt.cli import main
from milopt.data import Bags
from milopt.errors import InvalidDataError
from milopt.solvers.result import SolutionStatus, SolveResult, Termination

SMALL = "gen:digits?bags=10&max_size=4&seed=1"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def milopt_cmd(*argv):
    return [sys.executable, "-c", "import sys; from milopt.cli import main; sys.exit(main())", *argv]


def popen(*argv, **kw):
    # SIGINT must not be ignored in the child (it would be if the test runs in a background job)
    return subprocess.Popen(milopt_cmd(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


# ------------------------------------------------------------------ Ctrl-C
def _interrupt_after_progress(p, delay):
    line = p.stderr.readline()
    assert "fold 1/" in line, line
    time.sleep(delay)
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    return out, line + err, time.perf_counter() - t0


@pytest.mark.scip
def test_ctrl_c_during_cv_with_scip_stops_the_command():
    # fold 1 solves MUSK1's big-M MIQP for up to 60 s: the signal lands while SCIP (which installs
    # its own SIGINT handler) is solving; before, the fold was recorded as interrupted and the
    # other folds ran, exit 0
    p = popen("fit", "misvm-miqp", "--data", "musk1", "--cv", "3", "--set", "time_limit=60", "--progress")
    out, err, waited = _interrupt_after_progress(p, 8.0)
    assert p.returncode == 130, (out, err)
    assert out == ""                      # no table: an interrupted fold never counts
    lines = [ln for ln in err.splitlines() if not ln.startswith("milopt: fold")]
    assert lines == ["milopt: interrupted"], err
    assert waited < 30


@pytest.mark.slow
@pytest.mark.scip
def test_ctrl_c_during_solve_exits_nonzero():
    p = popen("solve", "misvm-bigm", "--data", "musk2", "--solver", "scip", "--time-limit", "120")
    time.sleep(15.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (out, err)
    lines = err.strip().splitlines()
    if "termination: interrupted" in out:  # SCIP had a solution: printed first, then one line
        assert len(lines) == 1 and lines[0].startswith("milopt: interrupted; the result above"), err
    else:                                   # interrupted before SCIP found one
        assert out == "" and lines == ["milopt: interrupted"], (out, err)


def _register_fake(name, termination, raise_exc=None):
    from milopt.solvers.backend import Backend, Capabilities, RawResult
    from milopt.solvers.driver import _BACKENDS, register_backend

    def solve_matrix(mf, opts):
        if raise_exc is not None:
            raise raise_exc
        return RawResult(termination=termination)

    register_backend(Backend(name=name, module="numpy", solve_matrix=solve_matrix, version=lambda: "0",
                             caps=Capabilities(classes=frozenset({"LP", "QP", "MILP", "MIQP"}))))
    return lambda: _BACKENDS.pop(name, None)


def test_a_solver_that_reports_interrupted_raises_keyboard_interrupt():
    import pyomo.environ as pe

    from milopt.solvers import solve

    undo = _register_fake("fake-interrupted", Termination.INTERRUPTED)
    try:
        m = pe.ConcreteModel()
        m.x = pe.Var(bounds=(0, 1))
        m.o = pe.Objective(expr=m.x)
        with pytest.raises(KeyboardInterrupt):
            solve(m, "fake-interrupted")
    finally:
        undo()


# ------------------------------------------------------------- exit codes
def test_solve_exits_nonzero_when_the_solver_failed(capsys):
    undo = _register_fake("fake-broken", Termination.ERROR, raise_exc=RuntimeError("the solver crashed"))
    try:
        code, out, err = run(capsys, "solve", "misvm-bigm", "--data", SMALL, "--solver", "fake-broken")
    finally:
        undo()
    assert code == 1
    assert "termination: error" in out
    assert err.strip().splitlines() == ["milopt: error: fake-broken ended with termination error "
                                        "(RuntimeError: the solver crashed)"]


@pytest.mark.parametrize("k", ["0", "1", "-3"])
def test_cv_below_two_is_refused(capsys, k):
    code, out, err = run(capsys, "fit", "misvm-heuristic", "--data", SMALL, "--cv", k)
    assert code == 2 and out == ""
    assert f"--cv {k}" in err and "K >= 2" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------- time limits
def test_budget_spent_before_the_solver_starts_is_a_time_limit_status():
    from milopt.runner import run_solve

    res = run_solve("misvm-bigm", SMALL, "scip", time_limit=1e-4)
    assert res["termination"] == "time_limit" and res["status"] == "none" and res["objective"] is None


def test_the_time_limit_covers_build_and_hand_off():
    from milopt.runner import run_solve

    t0 = time.perf_counter()
    res = run_solve("misvm-dual-qp", "musk1", "ipopt", time_limit=2.0, params={"kernel": "rbf"})
    wall = time.perf_counter() - t0
    assert wall <= 2.0 * 1.1 + 1.5, res   # 1.5 s: imports on first use and a loaded machine
    assert res["termination"] in ("optimal", "time_limit")


def test_matrix_objective_is_extracted_without_building_the_expression():
    from milopt.data import load
    from milopt.metrics import standardize
    from milopt.models import misvm_dual_qp as mod
    from milopt.solvers.extract import extract

    b = standardize(load("musk1"))
    t0 = time.perf_counter()
    m = mod.build(b, kernel="rbf", form="matrix")
    mf = extract(m)
    assert time.perf_counter() - t0 < 20
    assert m.obj.__dict__.get("_milopt_built") is None       # the Pyomo expression was never built
    meta = m._milopt_meta
    n = meta["E"].size
    Q = mf.Q.toarray()
    np.testing.assert_allclose(Q, -(meta["K"] * np.outer(meta["y"], meta["y"])), atol=1e-12)
    assert np.all(mf.c == 1.0) and mf.sense == -1 and Q.shape == (n, n)


def test_matrix_objective_matches_the_expression_and_drops_its_cache_when_replaced():
    import pyomo.environ as pe

    from milopt.models._linear import add_quadratic_objective, quadratic_expression, var_list
    from milopt.solvers.extract import extract

    Q = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1.0]])

    def model(matrix):
        m = pe.ConcreteModel()
        m.x = pe.Var(range(3), bounds=(-5, 5))
        if matrix:
            add_quadratic_objective(m, "obj", var_list(m.x), c=[1, -1, 0.5], Q=Q, c0=3.0)
        else:
            m.obj = pe.Objective(expr=quadratic_expression([1, -1, 0.5], Q, var_list(m.x), 3.0))
        m.con = pe.Constraint(expr=m.x[0] + m.x[2] >= 1)
        m.x[1].fix(2.0)
        return m

    a, b = extract(model(True)), extract(model(False))
    np.testing.assert_allclose(a.c, b.c)
    np.testing.assert_allclose(a.Q.toarray(), b.Q.toarray())
    assert a.c0 == pytest.approx(b.c0)
    m = model(True)
    m.x[1].unfix()
    m.x[0].value, m.x[1].value, m.x[2].value = 1.0, 2.0, 0.0
    assert pe.value(m.obj) == pytest.approx(3 + 1 - 2 + 0.5 * np.array([1, 2, 0]) @ Q @ np.array([1, 2, 0]))
    m.obj.expr = m.x[0]
    from milopt.models.matrices import matrix_of

    assert matrix_of(m.obj) is None
    assert extract(m).Q is None


# ------------------------------------------------------ silent wrong answers
def test_estimators_predict_the_callers_labels():
    from milopt.data import load
    from milopt.estimators.registry import get_method

    b = load("gen:digits?bags=20&seed=1")
    arrays = [b.X[b.bag_ptr[j]:b.bag_ptr[j + 1]] for j in range(b.n_bags)]
    ypm = np.where(b.y == 1, 1, -1)
    est = get_method("misvm-heuristic").make({}, 0).fit(arrays, ypm)
    pred = est.predict(arrays)
    assert list(est.classes_) == [-1, 1] and set(pred.tolist()) <= {-1, 1}
    assert est.score(arrays, ypm) == pytest.approx(np.mean(pred == ypm))
    # fitted on the 0/1 labels of a Bags object, predictions are 0/1
    est2 = get_method("misvm-heuristic").make({}, 0).fit(b)
    assert set(est2.predict(b).tolist()) <= {0, 1}
    assert est2.score(b) == pytest.approx(np.mean(est2.predict(b) == b.y))


def test_predict_before_fit_is_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    from milopt.data import load
    from milopt.estimators.registry import methods

    b = load(SMALL)
    for name, spec in sorted(methods().items()):
        with pytest.raises(NotFittedError):
            spec.make({}, 0).predict(b)


# --------------------------------------------------- tracebacks -> one line
def one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("milopt: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_data_a_directory_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "fit", "misvm-heuristic", "--data", str(tmp_path))
    assert code == 2 and "is a directory" in one_error_line(err)


def test_output_under_a_regular_file_is_one_line(capsys, tmp_path):
    f = tmp_path / "plain"
    f.write_text("x")
    code, _, err = run(capsys, "export", "misvm-bigm", "--data", SMALL, "-o", str(f / "sub" / "m.mps"))
    assert code == 2 and "is a regular file" in one_error_line(err)


def huge_csv(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    X[:, 1] *= 1e300
    b = Bags.from_arrays([X[2 * i:2 * i + 2] for i in range(6)], [0, 1, 0, 1, 0, 1])
    path = tmp_path / "huge.csv"
    b.to_csv(path)
    return path


def test_export_of_huge_values_without_scaling_is_one_line(capsys, tmp_path):
    path = huge_csv(tmp_path)
    with np.errstate(all="ignore"):
        code, _, err = run(capsys, "export", "misvm-bigm", "--data", str(path), "--set", "scale=false",
                           "-o", str(tmp_path / "m.mps"))
    assert code == 2 and "rescale" in one_error_line(err)


def test_overflow_while_scaling_names_the_column(capsys, tmp_path):
    path = huge_csv(tmp_path)
    code, _, err = run(capsys, "fit", "misvm-heuristic", "--data", str(path))
    line = one_error_line(err)
    assert code == 2 and "feature column 1" in line and "overflow" in line


def test_load_accepts_a_dataframe():
    import milopt

    b = milopt.load("gen:digits?bags=10&seed=2")
    back = milopt.load(b.to_frame())
    np.testing.assert_array_equal(back.X, b.X)
    np.testing.assert_array_equal(back.y, b.y)


# ------------------------------------------------ messages naming the key
@pytest.mark.parametrize("item", ["max_iter=abc", "C=abc", "restarts=1.5x"])
def test_bad_set_value_names_the_key(capsys, item):
    code, _, err = run(capsys, "fit", "misvm-heuristic", "--data", SMALL, "--set", item)
    line = one_error_line(err)
    key, value = item.split("=")
    assert code == 2 and key in line and value in line


def test_time_limit_text_names_the_key(capsys):
    code, _, err = run(capsys, "fit", "misvm-miqp", "--data", SMALL, "--set", "time_limit=abc")
    line = one_error_line(err)
    assert code == 2 and "time_limit" in line and "abc" in line


def test_messages_show_plain_values():
    with pytest.raises(InvalidDataError) as e:
        Bags.from_instances(np.zeros((3, 2)), [1, 1, 2], [0, 1, 1])
    assert "np.int64" not in str(e.value) and "bag 1 " in str(e.value)
    with pytest.raises(InvalidDataError) as e:
        Bags.from_arrays([np.zeros((1, 2)), np.zeros((1, 2))], np.array(["a", 1], dtype=object))
    assert "array(" not in str(e.value) and "dtype" not in str(e.value)


# ------------------------------------------------------------------ results
def test_result_clips_bound_noise_and_gap():
    r = SolveResult(solver="x", termination=Termination.TIME_LIMIT, status=SolutionStatus.FEASIBLE, objective=4.0,
                    bound=-1e-9, gap=1.00000000000153)
    assert r.bound == 0.0 and r.gap == 1.0
    r = SolveResult(solver="x", termination=Termination.TIME_LIMIT, status=SolutionStatus.FEASIBLE, objective=4.0,
                    bound=-2.0, gap=1.5)
    assert r.bound == -2.0 and r.gap == 1.5           # opposite signs: a gap above 1 is real


def test_ipopt_wall_time_limit_has_a_message():
    pytest.importorskip("cyipopt")
    from milopt.data import load
    from milopt.metrics import standardize
    from milopt.models import misvm_dual_qp as mod
    from milopt.solvers import solve

    m = mod.build(standardize(load("musk1")), kernel="rbf")
    r = solve(m, "ipopt", options={"max_wall_time": 1e-6})
    assert r.extra["ipopt_status"] == -5 and r.termination == Termination.TIME_LIMIT
    assert "Maximum_WallTime_Exceeded" in r.extra["ipopt_message"]


# ---------------------------------------------------------- honest output
def test_fit_json_lists_the_parameters_used_and_std(capsys):
    code, out, err = run(capsys, "fit", "misvm-heuristic", "--data", SMALL, "--cv", "2", "--json")
    assert code == 0, err
    res = json.loads(out)
    from milopt.estimators.registry import get_method

    defaults = get_method("misvm-heuristic").make({}, 0).get_params()
    assert set(defaults) <= set(res["params"])
    assert res["params"]["C"] == defaults["C"]
    assert set(res["std"]) >= {"bag_accuracy", "bag_auc"}
    assert err == ""  # stderr is not a terminal here: no progress lines


def test_fit_table_shows_termination_and_gap_and_progress(capsys):
    code, out, err = run(capsys, "fit", "misvm-miqp", "--data", SMALL, "--cv", "2", "--time-limit", "3", "--progress")
    assert code == 0, err
    assert "termination / gap" in out and "±" in out
    assert "terminations:" in out
    assert "milopt: fold 1/2" in err and "milopt: fold 2/2" in err
    code, out, err = run(capsys, "fit", "misvm-miqp", "--data", SMALL, "--cv", "2", "--time-limit", "3", "--progress",
                         "--quiet")
    assert "milopt: fold" not in err  # --quiet silences progress; warnings about the result still print


def test_time_limit_spelled_both_ways_on_both_commands(capsys):
    code, out, err = run(capsys, "solve", "misvm-bigm", "--data", SMALL, "--solver", "scip", "--set", "time_limit=20",
                         "--json")
    assert code == 0, err
    code, out, err = run(capsys, "fit", "misvm-miqp", "--data", SMALL, "--time-limit", "5", "--json")
    assert code == 0, err
    assert json.loads(out)["params"]["time_limit"] == 5.0
    code, _, err = run(capsys, "solve", "misvm-bigm", "--data", SMALL, "--solver", "scip", "--set", "time_limit=20",
                       "--time-limit", "10")
    assert code == 2 and "disagree" in one_error_line(err)
