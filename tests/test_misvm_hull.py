"""misvm-hull: same optimum as brute force / big-M, relaxation never weaker than big-M's."""
import numpy as np
import pyomo.environ as pe
import pytest

from milopt.mil import bigm
from milopt.models import misvm_bigm, misvm_hull
from milopt.solvers import Termination, solve

from test_misvm_strength import brute_force, tiny


@pytest.mark.scip
@pytest.mark.parametrize("seed", [0, 1, 2, 4])
@pytest.mark.parametrize("perspective", [True, False])
def test_hull_optimum_equals_brute_force(seed, perspective):
    bags = tiny(seed, extra=seed == 4)
    best, _, _ = brute_force(bags)
    m = misvm_hull.build(bags, perspective=perspective, reduce=seed == 4, warm_start=seed % 2 == 0)
    r = solve(m, "scip", mip_gap=1e-9, warm_start=bool(getattr(m, "_milopt_start", False)))
    assert r.termination == Termination.OPTIMAL
    assert r.objective == pytest.approx(best, rel=1e-5, abs=1e-5)
    sol = misvm_hull.decode(m)
    assert misvm_bigm.objective_value(bags, sol["w"], sol["b"]) == pytest.approx(best, rel=1e-5, abs=1e-5)
    s = bags.X @ sol["w"] + sol["b"]
    for I, j in sol["witnesses"].items():
        assert bags.bag_index[j] == I and s[j] >= 1 - sol["xi"][I] - 1e-5


def _relaxation(model, solver="scip"):
    pe.TransformationFactory("core.relax_integer_vars").apply_to(model)
    r = solve(model, solver)
    assert r.termination == Termination.OPTIMAL
    return r.objective


@pytest.mark.scip
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_hull_relaxation_is_at_least_big_m_relaxation(seed):
    bags = tiny(seed, d=3)
    F = bigm.incumbent(bags)["objective"]
    best, _, _ = brute_force(bags)
    plain = _relaxation(misvm_bigm.build(bags, upper_bound=F))
    strong = _relaxation(misvm_bigm.build(bags, upper_bound=F, strengthen="bounds"))
    box = _relaxation(misvm_hull.build(bags, upper_bound=F, perspective=False))
    persp = _relaxation(misvm_hull.build(bags, upper_bound=F, perspective=True))
    tol = 1e-6
    assert plain <= strong + tol <= box + 2 * tol
    assert strong <= persp + tol
    assert persp <= best + 1e-5 and box <= best + 1e-5


def test_hull_model_size_and_warm_start_feasible():
    bags = tiny(2, extra=True)
    m = misvm_hull.build(bags, warm_start=True)
    sizes = np.diff(bags.bag_ptr)
    P = int(np.sum((bags.y == 1) & (sizes >= 2)) and np.sum(sizes[(bags.y == 1) & (sizes >= 2)]))
    assert m._milopt_meta["disjuncts"] == P
    assert len(m.wc) == P * bags.n_features
    for v in m.component_data_objects(pe.Var):
        assert v.lb is None or v.value >= v.lb - 1e-9
        assert v.ub is None or v.value <= v.ub + 1e-9
    for c in m.component_data_objects(pe.Constraint, active=True):
        val = pe.value(c.body)
        assert c.lower is None or val >= pe.value(c.lower) - 1e-7, c.name
        assert c.upper is None or val <= pe.value(c.upper) + 1e-7, c.name
    assert pe.value(m.obj) == pytest.approx(m._milopt_meta["incumbent"], rel=1e-6, abs=1e-9)


def test_hull_is_registered_and_refuses_bad_input():
    from milopt import models
    from milopt.errors import InvalidParameterError

    assert models.get("misvm-hull") is misvm_hull
    with pytest.raises(InvalidParameterError, match="perspective"):
        misvm_hull.build(tiny(0), perspective="yes please")
    with pytest.raises(InvalidParameterError, match="unknown"):
        misvm_hull.build(tiny(0), big_m=3)
    assert misvm_hull.problem_class(perspective=False)[0] == "MIQP"
