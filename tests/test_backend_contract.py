"""The solver layer's skeleton: one backend contract, the matrix-form rewrites, the checked
``optimal``, the time budget.

A new backend is one file: :data:`PLUGIN` (SciPy's ``milp`` behind :class:`Backend`'s hooks) is
written to a temporary folder, imported, registered, and passes the same contract tests as the
built-in backends.
"""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from milopt.errors import InvalidParameterError
from milopt.matrix import INF, MatrixForm, QuadRow
from milopt.solvers import rewrites as rw
from milopt.solvers.backend import SolveOptions
from milopt.solvers.budget import MAX_SECONDS, MIN_SOLVER_SECONDS, TimeBudget, parse_time_limit
from milopt.solvers.driver import backends, register_backend
from milopt.solvers.result import Termination, finish

#: a whole backend in one file: SciPy's HiGHS-based ``milp`` for LP and MILP
PLUGIN = '''
"""scipy-milp: LP and MILP through scipy.optimize.milp, filling in the Backend skeleton."""
import numpy as np
import scipy
import scipy.sparse as sp

from milopt.solvers import rewrites as rw
from milopt.solvers.backend import About, Backend, Capabilities, Outcome
from milopt.solvers.result import Termination as T

#: scipy.optimize.milp's status codes
STATUS_MAP = {0: T.OPTIMAL, 1: T.ITERATION_LIMIT, 2: T.INFEASIBLE, 3: T.UNBOUNDED, 4: T.ERROR}
OPTIONS = ("disp", "presolve", "node_limit", "mip_rel_gap")


class ScipyMilp(Backend):
    name = "scipy-milp"
    module = "scipy"
    caps = Capabilities(classes=frozenset({"LP", "MILP"}))
    about = About(description="LP and MILP through scipy.optimize.milp (a one-file backend)")
    status_map = STATUS_MAP
    rewrites = (rw.DROP_FREE_ROWS, rw.MINIMISE)        # milp minimises and wants no free rows
    option_hint = "a scipy.optimize.milp option, e.g. presolve=false"

    def version(self):
        return scipy.__version__

    def open(self, mf, opts):
        return {"options": {}}

    def build(self, s, mf, opts, incumbents):
        s["mf"] = mf

    def set_common(self, s, mf, opts):
        if opts.mip_gap is not None:
            s["options"]["mip_rel_gap"] = float(opts.mip_gap)

    def set_option(self, s, name, value):
        if name not in OPTIONS:
            raise KeyError(name)
        s["options"][name] = value

    def option_names(self, s):
        return list(OPTIONS)

    def set_time_limit(self, s, seconds):
        s["options"]["time_limit"] = seconds

    def optimize(self, s, mf, opts, extra):
        from scipy.optimize import Bounds, LinearConstraint, milp

        cons = [LinearConstraint(sp.csr_matrix(mf.A), mf.row_lb, mf.row_ub)] if mf.A.shape[0] else []
        s["r"] = milp(mf.c, integrality=np.asarray(mf.integrality, int), bounds=Bounds(mf.col_lb, mf.col_ub),
                      constraints=cons, options=s["options"])

    def outcome(self, s, mf, extra):
        r = s["r"]
        has = r.x is not None
        bound = getattr(r, "mip_dual_bound", None) if mf.is_mip() else None
        return Outcome(code=int(r.status), x=np.asarray(r.x, float) if has else None,
                       objective=float(r.fun) + mf.c0 if has else None,
                       bound=None if bound is None else float(bound) + mf.c0,
                       nodes=getattr(r, "mip_node_count", None), status_text=str(r.message), extra=extra)


BACKEND = ScipyMilp()
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    path = tmp_path_factory.mktemp("backend") / "scipy_milp.py"
    path.write_text(textwrap.dedent(PLUGIN))
    spec = importlib.util.spec_from_file_location("scipy_milp_plugin", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return register_backend(mod.BACKEND)


def _form(c, A, lo, hi, lb, ub, integ=None, sense=1, c0=0.0, Q=None, **kw):
    A = sp.csr_matrix(np.atleast_2d(np.asarray(A, float)))
    n = A.shape[1]
    return MatrixForm(c=np.asarray(c, float), c0=c0, Q=Q, A=A, row_lb=np.asarray(lo, float), row_ub=np.asarray(hi, float),
                      col_lb=np.asarray(lb, float), col_ub=np.asarray(ub, float),
                      integrality=np.zeros(n, bool) if integ is None else np.asarray(integ, bool),
                      col_names=[f"x{j}" for j in range(n)], row_names=[f"r{i}" for i in range(A.shape[0])],
                      sense=sense, **kw)


def every_row_kind():
    """max x0 + 2 x1 + x2 + 3 over rows of every kind: an equality, <=, >=, a range and a free
    row; x0 in [0, 4], x1 free above 0, x2 in [-1, 1].  Optimum 15.5 at (3.5, 4, 1)."""
    A = [[1, 1, 0], [0, 1, 0], [1, 0, 0], [1, -1, 0], [1, 1, 1], [0, 0, 1]]
    lo = [-INF, -INF, 0, -2, -INF, -1]
    hi = [7.5, 4, INF, 0.5, INF, 1]
    return _form([1, 2, 1], A, lo, hi, [0, 0, -1], [4, INF, 1], sense=-1, c0=3.0)


def knapsack():
    """max 5a + 4b + 3c s.t. 2a + 3b + c <= 5, 4a + b + 2c <= 11, binaries: optimum 9 at (1, 1, 0)."""
    return _form([5, 4, 3], [[2, 3, 1], [4, 1, 2]], [-INF, -INF], [5, 11], [0] * 3, [1] * 3, integ=[1, 1, 1], sense=-1)


def _contract_backends():
    names = [n for n, b in backends().items() if b.available() and not b.takes_model and "LP" in b.classes]
    return names + ["scipy-milp"]


def _solve(name, plugin, mf, **kw):
    b = plugin if name == "scipy-milp" else backends()[name]
    if b.cannot_take(mf, SolveOptions())[0]:
        pytest.skip(f"{name} cannot take this model here (licence)")
    raw = b.solve_matrix(mf, SolveOptions(problem_class=mf.problem_class(), time_limit=60, **kw))
    return raw, finish(name, "", mf.problem_class(), raw.termination, raw.x is not None, raw.objective, raw.bound, 0.0)


@pytest.mark.parametrize("name", _contract_backends())
def test_contract_lp_with_every_row_kind(name, plugin):
    mf = every_row_kind()
    raw, res = _solve(name, plugin, mf)
    assert res.termination == Termination.OPTIMAL and res.objective == pytest.approx(15.5, abs=1e-6)
    assert res.bound == pytest.approx(15.5, abs=1e-6)                       # set by result.finish
    assert max(mf.violation(raw.x).values()) <= 1e-6
    assert "build_seconds" in raw.extra and "solve_seconds" in raw.extra


@pytest.mark.parametrize("name", [n for n in _contract_backends() if n not in ("ipopt",)])
def test_contract_milp(name, plugin):
    if name != "scipy-milp" and "MILP" not in backends()[name].classes:
        pytest.skip("no MILP")
    raw, res = _solve(name, plugin, knapsack())
    assert res.termination == Termination.OPTIMAL and res.objective == pytest.approx(9.0, abs=1e-6)
    np.testing.assert_allclose(raw.x, [1, 1, 0], atol=1e-6)
    if raw.trajectory:   # improving in the model's sense (maximisation: non-decreasing)
        vals = [v for _, v in raw.trajectory]
        assert all(b >= a - 1e-9 for a, b in zip(vals, vals[1:])) and vals[-1] == pytest.approx(9.0)


@pytest.mark.parametrize("name", _contract_backends())
def test_contract_native_option_errors_are_one_line(name, plugin):
    with pytest.raises(InvalidParameterError) as e:
        _solve(name, plugin, every_row_kind(), options={"no_such_option_xyz": 1})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{name} option no_such_option_xyz=1") and "give " in msg


def test_a_misspelt_native_option_gets_suggestions(plugin):
    with pytest.raises(InvalidParameterError, match="did you mean presolve"):
        _solve("scipy-milp", plugin, knapsack(), options={"presolv": False})
    with pytest.raises(InvalidParameterError, match="did you mean time_limit"):
        _solve("highs", plugin, knapsack(), options={"time_limt": 1.0})


def test_the_solver_gets_what_is_left_of_the_budget(plugin, monkeypatch):
    seen = []
    monkeypatch.setattr(type(plugin), "set_time_limit", lambda self, s, seconds: seen.append(seconds))
    budget = TimeBudget(100.0, t0=TimeBudget().t0 - 40.0)        # 40 s already spent on the command
    plugin.solve_matrix(knapsack(), SolveOptions(budget=budget))
    assert len(seen) == 1 and 59.0 < seen[0] <= 60.0


def test_the_plugin_solves_through_the_driver(plugin):
    import pyomo.environ as pe

    from milopt.solvers import solve

    m = pe.ConcreteModel()
    m.x = pe.Var([0, 1, 2], domain=pe.Binary)
    m.c1 = pe.Constraint(expr=2 * m.x[0] + 3 * m.x[1] + m.x[2] <= 5)
    m.c2 = pe.Constraint(expr=4 * m.x[0] + m.x[1] + 2 * m.x[2] <= 11)
    m.o = pe.Objective(expr=5 * m.x[0] + 4 * m.x[1] + 3 * m.x[2], sense=pe.maximize)
    r = solve(m, "scipy-milp", time_limit=30)
    assert r.termination == Termination.OPTIMAL and r.objective == pytest.approx(9.0) and r.problem_class == "MILP"
    assert [round(m.x[i].value) for i in range(3)] == [1, 1, 0]


# ------------------------------------------------------------------ rewrites
def _random_points(mf, k=200, seed=0):
    rng = np.random.default_rng(seed)
    lb = np.where(np.isfinite(mf.col_lb), mf.col_lb, -5.0)
    ub = np.where(np.isfinite(mf.col_ub), mf.col_ub, 5.0)
    return [rng.uniform(lb, ub) for _ in range(k)] + [np.array([3.5, 4.0, 1.0])]


def _feasible(mf, x, tol=1e-9):
    v = mf.violation(x)
    return all(val <= tol for key, val in v.items() if key != "integrality")


def quadratic_and_indicator_form():
    mf = every_row_kind()
    q = [QuadRow("ball", np.array([0]), np.array([1.0]), np.array([1, 2]), np.array([1, 2]), np.array([1.0, 1.0]), 1.0, 30.0),
         QuadRow("eq", np.array([], int), np.array([]), np.array([0]), np.array([2]), np.array([1.0]), 0.5, 0.5),
         QuadRow("free", np.array([1]), np.array([1.0]), np.array([1]), np.array([1]), np.array([1.0]))]
    return MatrixForm(**{**mf.__dict__, "qrows": q, "ind_binary": np.array([2, 2]), "ind_active": np.array([1, 0], np.int8),
                         "ind_A": sp.csr_matrix(np.array([[1.0, 1, 0], [0, 1, 0]])), "ind_lb": np.array([1.0, -INF]),
                         "ind_ub": np.array([6.0, INF]), "ind_names": ["i0", "i1"]})


@pytest.mark.parametrize("step", [rw.DROP_FREE_ROWS, rw.SPLIT_RANGES, rw.ONE_SIDED_INDICATORS, rw.ONE_SIDED_QUADRATIC,
                                  rw.QUADRATIC_LE, rw.MINIMISE, rw.finite_bounds(1e20, rows=True)],
                         ids=lambda s: s.name)
def test_each_rewrite_states_the_same_problem(step):
    mf = quadratic_and_indicator_form()
    out = step(mf)
    assert out.n_cols == mf.n_cols
    for x in _random_points(mf):
        assert _feasible(out, x) == _feasible(mf, x)
        assert out.sense * out.objective_value(x) == pytest.approx(mf.sense * mf.objective_value(x))
    if step is rw.DROP_FREE_ROWS:
        assert out.A.shape[0] == mf.A.shape[0] - 1
    if step is rw.SPLIT_RANGES:
        ranged = np.isfinite(out.row_lb) & np.isfinite(out.row_ub) & (out.row_lb < out.row_ub)
        assert not ranged.any() and out.A.shape[0] == mf.A.shape[0] + 1 and "r3_up" in out.row_names
    if step is rw.ONE_SIDED_INDICATORS:
        assert out.n_indicators == 2 and not np.any(np.isfinite(out.ind_lb) & np.isfinite(out.ind_ub))
    if step is rw.ONE_SIDED_QUADRATIC:
        assert [(q.name, q.lb, q.ub) for q in out.qrows] == [("ball", -INF, 30.0), ("ball_lo", 1.0, INF),
                                                            ("eq", 0.5, 0.5)]
    if step is rw.QUADRATIC_LE:
        assert all(q.lb == -INF for q in out.qrows) and len(out.qrows) == 4
    if step is rw.MINIMISE:
        assert out.sense == 1 and mf.sense == -1
    if step.name.startswith("finite_bounds"):
        assert np.all(np.isfinite(out.col_ub)) and np.all(np.isfinite(out.row_lb))


def test_minimise_is_undone_on_the_result():
    from milopt.solvers.backend import RawResult

    out, undo = rw.rewrite(every_row_kind(), (rw.DROP_FREE_ROWS, rw.MINIMISE))
    assert out.sense == 1
    raw = undo(RawResult(termination=Termination.OPTIMAL, objective=-14.5, bound=-14.6, trajectory=[(0.1, -14.5)]))
    assert (raw.objective, raw.bound, raw.trajectory) == (14.5, 14.6, [(0.1, 14.5)])
    same, undo2 = rw.rewrite(knapsack().__class__(**{**knapsack().__dict__, "sense": 1}), (rw.MINIMISE,))
    assert undo2(RawResult(termination=Termination.OPTIMAL, objective=3.0)).objective == 3.0


def test_problem_class_counts_sos_and_indicators_as_mixed_integer():
    mf = quadratic_and_indicator_form()
    assert mf.problem_class() == "MIQCQP" and mf.features() == ("INDICATOR",)
    assert every_row_kind().problem_class() == "LP" and knapsack().problem_class() == "MILP"
    assert list(knapsack().binary()) == [True] * 3
    fixed = _form([1, 1], [[1, 1]], [-INF], [2], [1, 0], [1, 1], integ=[1, 1])
    assert list(fixed.binary()) == [False, True]                   # a 0/1 column fixed at 1 is not binary


# ------------------------------------------------------------------ optimal that is checked
def free_column_qp(scale=30.0, seed=0):
    r"""min v + ½‖d‖² s.t. v ≥ aᵀd − α (d, v free): the optimum is −½‖a‖² − α.  The column v has
    no curvature: HiGHS's QP regularisation (1e-7 by default) stops its active-set method short
    (the dcmil-direction case)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, scale, 166)
    n = a.size + 1
    mf = _form(np.r_[np.zeros(a.size), 1.0], np.r_[-a, 1.0][None, :], [-3.0], [INF], np.full(n, -INF), np.full(n, INF),
               Q=sp.diags(np.r_[np.ones(a.size), 0.0]).tocsc())
    return mf, -0.5 * float(a @ a) - 3.0


def _driver_solve(mf, **kw):
    """The driver's path for a matrix form (finish included)."""
    from milopt.solvers.driver import get_backend

    b = get_backend("highs")
    raw = b.solve_matrix(mf, SolveOptions(problem_class=mf.problem_class(), **kw))
    return raw, finish("highs", "", mf.problem_class(), raw.termination, raw.x is not None, raw.objective, raw.bound, 0.0)


def test_highs_qp_that_stops_short_is_polished_to_the_proven_optimum():
    mf, best = free_column_qp()
    raw, res = _driver_solve(mf)
    check = raw.extra["optimality_check"]
    assert not check["first_answer"]["passed"]            # HiGHS's own answer fails the check ...
    assert check["passed"] and res.termination == Termination.OPTIMAL      # ... the polished one passes
    assert res.objective == pytest.approx(best, rel=1e-9)


def test_highs_qp_whose_check_fails_is_not_called_optimal():
    mf, best = free_column_qp()
    raw, res = _driver_solve(mf, options={"qp_regularization_value": 1e-7})    # no polishing allowed
    assert res.termination == Termination.CONVERGED and res.status.name == "FEASIBLE"
    assert res.bound is None and math.isinf(res.gap) and not raw.extra["optimality_check"]["passed"]
    assert res.objective > best + 1.0                     # short of the optimum: rightly not proven


def test_kkt_check_on_a_small_qp_with_exact_multipliers():
    from milopt.solvers.certify import kkt

    # min ½(x0² + x1²) - x0 - x1  s.t. x0 + x1 <= 1 (y <= 0 in HiGHS's sign), x >= 0: x = (½, ½), y = -½
    mf = _form([-1, -1], [[1, 1]], [-INF], [1], [0, 0], [INF, INF], Q=sp.eye(2, format="csc"))
    good = kkt(mf, [0.5, 0.5], [-0.5])
    assert good["passed"] and good["dual_bound"] == pytest.approx(-0.75)
    bad = kkt(mf, [0.5, 0.5], [0.5])                       # wrong sign: asks for a lower side that is infinite
    assert not bad["passed"] and bad["dual_infeasibility"] > 0.1


@pytest.mark.slow
def test_dcmil_direction_on_musk2_is_the_optimum_or_not_optimal():
    """The reported case: HiGHS said optimal at −66780.83; Ipopt and CPLEX find −66792.44."""
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "solve", "dcmil-direction", "--data", "musk2",
                        "--solver", "highs", "--json"], capture_output=True, text=True, timeout=600)
    import json

    out = json.loads(r.stdout)
    assert out["termination"] != "optimal" or out["objective"] == pytest.approx(-66792.44, abs=0.01)


# ------------------------------------------------------------------ one time budget
@pytest.mark.parametrize("bad", [0, -1, "abc", float("nan"), float("inf"), True, 1e12])
def test_time_limits_are_read_in_one_place(bad):
    with pytest.raises(InvalidParameterError) as e:
        parse_time_limit(bad, "--time-limit")
    assert str(e.value).startswith("--time-limit: ") and "\n" not in str(e.value)


def test_time_budget_counts_from_its_start_with_one_floor():
    assert parse_time_limit("2.5") == 2.5 and parse_time_limit(None) is None and parse_time_limit(MAX_SECONDS)
    b = TimeBudget(10.0, t0=TimeBudget().t0 - 9.99)
    assert b.remaining() == MIN_SOLVER_SECONDS and b.spent()
    assert TimeBudget(None).remaining() is None and not TimeBudget(None).spent()
    import pickle

    c = pickle.loads(pickle.dumps(TimeBudget(5.0)))
    assert c.limit == 5.0 and 4.0 < c.remaining() <= 5.0


def test_a_limit_beyond_the_platform_is_refused_before_loading_data(tmp_path):
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "solve", "misvm-bigm", "--data",
                        str(tmp_path / "missing.csv"), "--solver", "highs", "--time-limit", "1e12"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "--time-limit: 1e+12 s is beyond" in r.stderr


@pytest.mark.parametrize("name", ["highs", "ipopt"])
def test_a_maximisation_qp_is_checked_in_its_own_sense(name, plugin):
    """max x0 + 2 x1 - ½‖x‖² s.t. x0 + x1 = 1, x >= 0: the optimum 1.5 at (0, 1)."""
    mf = _form([1, 2], [[1, 1]], [1], [1], [0, 0], [INF, INF], sense=-1, Q=-sp.eye(2, format="csc"))
    raw, res = _solve(name, plugin, mf)
    check = raw.extra["optimality_check"]
    assert res.termination == Termination.OPTIMAL and res.objective == pytest.approx(1.5, abs=1e-6)
    assert check["passed"] and check["dual_bound"] == pytest.approx(1.5, abs=1e-5)
