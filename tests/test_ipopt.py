"""The Ipopt (cyipopt) backend: optimum, statuses, options, solution loading, refusals."""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import pytest

from milopt.errors import UnsupportedProblemError
from milopt.solvers import SolutionStatus, Termination, solve

pytestmark = pytest.mark.ipopt
pytest.importorskip("cyipopt")


def projection_qp(p, lb=0.0, total=1.0, sense=pe.minimize):
    """min ½‖x - p‖² s.t. Σx = total, x >= lb: the projection on a simplex (closed form known)."""
    m = pe.ConcreteModel()
    n = len(p)
    m.x = pe.Var(range(n), bounds=(lb, None))
    m.sum = pe.Constraint(expr=sum(m.x[i] for i in range(n)) == total)
    sgn = 1 if sense == pe.minimize else -1
    m.obj = pe.Objective(expr=sgn * 0.5 * sum((m.x[i] - p[i]) ** 2 for i in range(n)), sense=sense)
    return m


def simplex_projection(p, total=1.0):
    u = np.sort(p)[::-1]
    css = np.cumsum(u) - total
    k = np.nonzero(u - css / np.arange(1, len(p) + 1) > 0)[0][-1]
    return np.maximum(p - css[k] / (k + 1), 0.0)


def test_qp_optimum_matches_closed_form_and_loads_values():
    p = np.array([0.9, 0.4, -0.3, 0.2, 0.05])
    m = projection_qp(p)
    r = solve(m, "ipopt")
    assert r.termination == Termination.OPTIMAL and r.status == SolutionStatus.OPTIMAL
    x = np.array([m.x[i].value for i in range(len(p))])
    ref = simplex_projection(p)
    np.testing.assert_allclose(x, ref, atol=1e-6)
    assert r.objective == pytest.approx(0.5 * np.sum((ref - p) ** 2), abs=1e-7)
    assert r.gap == 0 and r.bound == r.objective
    assert r.iterations and r.iterations > 0 and len(r.history) == r.iterations + 1
    assert r.solver == "ipopt" and "3.14" in r.solver_version
    assert r.extra["mu_strategy"] == "adaptive"


def test_maximisation_sense():
    p = np.array([0.9, 0.4, -0.3])
    m = projection_qp(p, sense=pe.maximize)  # max -½‖x-p‖²
    r = solve(m, "ipopt")
    assert r.objective == pytest.approx(-0.5 * np.sum((simplex_projection(p) - p) ** 2), abs=1e-7)


def test_lp_and_agreement_with_highs():
    rng = np.random.default_rng(3)
    n, k = 12, 7
    A = rng.uniform(0.1, 1.0, size=(k, n))
    c = rng.uniform(0.5, 2.0, size=n)
    m = pe.ConcreteModel()
    m.x = pe.Var(range(n), domain=pe.NonNegativeReals)
    m.rows = pe.Constraint(range(k), rule=lambda mm, i: sum(A[i, j] * mm.x[j] for j in range(n)) >= 1.0)
    m.obj = pe.Objective(expr=sum(c[j] * m.x[j] for j in range(n)) + 3.0)
    rh = solve(m, "highs")
    ri = solve(m, "ipopt")
    assert ri.problem_class == "LP"
    assert ri.objective == pytest.approx(rh.objective, rel=1e-6)


def test_infeasible_is_a_status():
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, 1))
    m.y = pe.Var(bounds=(0, 1))
    m.c = pe.Constraint(expr=m.x + m.y >= 3)
    m.obj = pe.Objective(expr=m.x ** 2 + m.y)
    r = solve(m, "ipopt")
    assert r.termination == Termination.INFEASIBLE and r.status == SolutionStatus.NONE and r.objective is None


def test_iteration_limit_returns_status_and_native_options():
    m = projection_qp(np.linspace(-1, 1, 30))
    r = solve(m, "ipopt", options={"max_iter": 1})
    assert r.termination == Termination.ITERATION_LIMIT
    assert r.status in (SolutionStatus.NONE, SolutionStatus.FEASIBLE)
    if r.status == SolutionStatus.FEASIBLE:
        assert r.extra["max_violation"] <= 1e-6


def test_time_limit_is_passed():
    # large enough that Ipopt cannot finish within the 0.01 s it is given at the least
    m = projection_qp(np.linspace(-1, 1, 20000))
    r = solve(m, "ipopt", time_limit=1e-4)
    assert r.termination == Termination.TIME_LIMIT
    # Ipopt stopped at the limit it was given, or (on a loaded machine, where even its set-up
    # outlasts the grace period) milopt stopped the solver process: a time limit either way
    stopped_by_milopt = "did not stop at its time limit" in str(r.extra.get("message", ""))
    assert stopped_by_milopt or "max_wall_time" in r.log or r.extra.get("ipopt_status") == -5, (r.log, r.extra)


def test_quiet_by_default(capfd):
    solve(projection_qp(np.array([0.3, 0.1])), "ipopt")
    out = capfd.readouterr()
    assert "Ipopt" not in out.out and "EXIT" not in out.out


def test_fixed_variables_are_substituted():
    p = np.array([0.9, 0.4, -0.3])
    m = projection_qp(p)
    m.x[0].fix(0.5)
    r = solve(m, "ipopt")
    assert r.ok and m.x[0].value == 0.5
    assert sum(m.x[i].value for i in range(3)) == pytest.approx(1.0, abs=1e-7)


def test_integer_model_refused():
    m = pe.ConcreteModel()
    m.z = pe.Var(domain=pe.Binary)
    m.x = pe.Var()
    m.c = pe.Constraint(expr=m.x >= m.z)
    m.obj = pe.Objective(expr=m.x ** 2 - m.z)
    with pytest.raises(UnsupportedProblemError, match="ipopt cannot solve MIQP"):
        solve(m, "ipopt")
