import math

import numpy as np
import pyomo.environ as pe
import pytest

from milopt.errors import NoSolutionError, SolverUnavailableError, UnsupportedProblemError
from milopt.solvers import SolutionStatus, Termination, classify, installed, solve


def lp():
    m = pe.ConcreteModel()
    m.x = pe.Var([0, 1], bounds=(0, None))
    m.c = pe.Constraint(expr=m.x[0] + 2 * m.x[1] >= 4)
    m.o = pe.Objective(expr=3 * m.x[0] + m.x[1])
    return m


def market_split(m_rows=4, n=36, seed=0):
    """Cornuejols-Dawande market split: hard for branch and bound, usually infeasible."""
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, size=(m_rows, n))
    d = A.sum(axis=1) // 2
    m = pe.ConcreteModel()
    m.x = pe.Var(range(n), domain=pe.Binary)
    m.s = pe.Var(range(m_rows), bounds=(0, 0))  # no slack: pure feasibility
    m.c = pe.Constraint(range(m_rows), rule=lambda mm, i: sum(int(A[i, j]) * mm.x[j] for j in range(n)) == int(d[i]))
    m.o = pe.Objective(expr=sum(mm for mm in m.x.values()))
    return m


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_optimal_lp(solver):
    r = solve(lp(), solver)
    assert r.termination == Termination.OPTIMAL and r.status == SolutionStatus.OPTIMAL
    assert r.objective == pytest.approx(2.0) and r.gap == pytest.approx(0.0)
    assert r.solver == solver and r.solver_version and r.problem_class == "LP"


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_infeasible(solver):
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, 1))
    m.c = pe.Constraint(expr=m.x >= 2)
    m.o = pe.Objective(expr=m.x)
    r = solve(m, solver)
    assert r.termination in (Termination.INFEASIBLE, Termination.INFEASIBLE_OR_UNBOUNDED)
    assert r.status == SolutionStatus.NONE and r.objective is None and math.isinf(r.gap)
    with pytest.raises(NoSolutionError):
        solve(m, solver, raise_on_no_solution=True)


def test_time_limit_without_incumbent_returns_status():
    r = solve(market_split(), "scip", time_limit=1.0)
    assert r.termination in (Termination.TIME_LIMIT, Termination.INFEASIBLE)
    if r.termination == Termination.TIME_LIMIT:
        assert r.status == SolutionStatus.NONE and r.objective is None


def test_time_limit_with_incumbent_returns_it_and_gap():
    from milopt.data import load
    from milopt.metrics import standardize
    from milopt.models import misvm_bigm

    bags = standardize(load("musk1"))
    m = misvm_bigm.build(bags, C=1.0)
    misvm_bigm.warm_start(m, np.zeros(bags.n_features), -1.0)
    # the limit covers the hand-off to SCIP (seconds for MUSK1 through Pyomo): leave SCIP time
    # to read the warm start
    r = solve(m, "scip", time_limit=8.0, warm_start=True)
    assert r.termination == Termination.TIME_LIMIT
    assert r.status == SolutionStatus.FEASIBLE and r.objective is not None
    assert r.gap > 0 and r.bound <= r.objective + 1e-6
    assert r.wall_time < 8.0 * 1.1 + 1.0


def test_class_mismatch_refused_before_solving():
    m = lp()
    m.y = pe.Var(domain=pe.Binary)
    m.o.deactivate()
    m.o2 = pe.Objective(expr=m.x[0] ** 2 + m.y + m.x[1])
    assert classify(m) == ("MIQP", ())
    with pytest.raises(UnsupportedProblemError, match="highs cannot solve MIQP.*scip"):
        solve(m, "highs")
    assert "scip" in installed("MIQP")


def test_unknown_and_missing_solver():
    with pytest.raises(SolverUnavailableError, match="unknown solver 'cplexx'"):
        solve(lp(), "cplexx")
    if "gurobi" not in installed():
        with pytest.raises(SolverUnavailableError, match="not installed"):
            solve(lp(), "gurobi")


def test_highs_thread_change_in_one_process():
    r1 = solve(lp(), "highs", threads=1)
    r2 = solve(lp(), "highs", threads=2)
    assert r1.ok and r2.ok


def test_result_is_frozen_and_serialisable():
    import json

    r = solve(lp(), "highs")
    with pytest.raises(Exception):
        r.objective = 1.0
    json.dumps(r.to_dict())


def test_class_is_read_from_the_model_as_it_is_when_solved(tmp_path):
    """A quadratic row added to an LP model after building makes it a QCQP: the driver picks a
    solver that takes it (not HiGHS) and the file holds the row."""
    from milopt.data import load
    from milopt.models import formulation
    from milopt.numerics import standardize
    from milopt.solvers import export

    bags = standardize(load("gen:subset?data=musk1&bags=8&seed=0"))
    m = formulation("misvm-bigm").build(bags, norm="l1")
    for v in m.component_data_objects(pe.Var):
        if v.is_binary():
            v.fix(0 if v.index() % 2 else 1)
    assert classify(m)[0] == "LP"  # every binary fixed: continuous
    w = [m.w[0], m.w[1]]
    m.ball = pe.Constraint(expr=w[0] ** 2 + w[1] ** 2 <= 0.01)
    assert classify(m)[0] == "QCQP"
    with pytest.raises(UnsupportedProblemError, match="highs cannot solve QCQP"):
        solve(m, "highs")
    r = solve(m, "auto", time_limit=60)
    assert r.ok and r.problem_class == "QCQP" and r.solver != "highs"
    assert w[0].value ** 2 + w[1].value ** 2 <= 0.01 + 1e-6
    size = export(m, tmp_path / "m.lp")
    assert size["quadratic_constraints"] == 1 and size["problem_class"] == "QCQP"


def test_a_solver_that_crashes_or_hangs_in_native_code_gives_a_status():
    """An isolated backend whose native code aborts the process gives termination error; one
    that never returns is stopped at the time limit plus the grace period."""
    import os
    import time

    from milopt.solvers.backend import Backend, Capabilities
    from milopt.solvers.driver import register_backend

    def abort(mf, opts):
        os.abort()

    def hang(mf, opts):
        if opts.on_incumbent is not None:
            opts.on_incumbent(0.01, 2.0, np.array([2.0, 0.0]))
        while True:
            time.sleep(0.05)

    for name, fn in (("test-abort", abort), ("test-hang", hang)):
        register_backend(Backend(name=name, module="numpy", version=lambda: "0", solve_matrix=fn,
                                 caps=Capabilities(classes=frozenset({"LP"}), isolated=True)))
    r = solve(lp(), "test-abort")
    assert r.termination == Termination.ERROR and not r.ok and "SIGABRT" in r.extra["error"]
    import milopt.solvers.isolation as iso

    old = iso.GRACE_SECONDS
    iso.GRACE_SECONDS = 0.5
    try:
        t0 = time.perf_counter()
        r = solve(lp(), "test-hang", time_limit=0.5)
    finally:
        iso.GRACE_SECONDS = old
    assert time.perf_counter() - t0 < 10
    assert r.termination == Termination.TIME_LIMIT and r.ok and r.objective == pytest.approx(2.0)


@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_a_refused_native_option_is_bad_input_not_a_solver_error(solver):
    """A native option the solver refuses raises one line naming it (the command exits 2), in
    the solver's own process and in the isolated child alike."""
    from milopt.errors import InvalidParameterError

    for isolate in (False, True):
        with pytest.raises(InvalidParameterError, match="no_such_option"):
            solve(lp(), solver, options={"no_such_option": 1}, isolate=isolate)


def test_isolation_takes_the_deadline_from_the_time_budget():
    import inspect

    from milopt.solvers.isolation import run_backend

    assert "deadline" not in inspect.signature(run_backend).parameters


@pytest.mark.parametrize("first", ["import milopt.solvers.extract", "from milopt.solvers.extract import start_vector",
                                   "import milopt.solvers.driver", "pass"])
def test_the_documented_name_extract_is_always_the_function(first):
    import subprocess
    import sys

    code = (f"{first}\nimport types\nfrom milopt.solvers import extract\nimport milopt.solvers as S\n"
            "assert isinstance(extract, types.FunctionType), type(extract)\n"
            "assert S.extract is extract and extract.__name__ == 'extract'\n"
            "from milopt.solvers.extract import extract as e2, start_vector\nassert e2 is extract\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
