"""The big-M MIQP against brute force over witness selections (checks validity of L too)."""
import itertools

import numpy as np
import pytest

from milopt.data import Bags
from milopt.mil import bigm
from milopt.models import misvm_bigm
from milopt.solvers import Termination, solve
from mil_helpers import selection_qp


def tiny(seed, n_pos=3, n_neg=3, d=2):
    rng = np.random.default_rng(seed)
    arrs, y = [], []
    for k in range(n_pos):
        arrs.append(rng.normal(size=(rng.integers(1, 4), d)) + rng.normal(0, 1.5, size=d))
        y.append(1)
    for k in range(n_neg):
        arrs.append(rng.normal(size=(rng.integers(1, 4), d)) - 0.5)
        y.append(0)
    return Bags.from_arrays(arrs, y)


@pytest.mark.scip
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("class_weight", ["kent-yu", "none"])
def test_miqp_equals_best_enumerated_selection(seed, class_weight):
    bags = tiny(seed)
    C = 2.0
    costs = misvm_bigm.bag_costs(bags, C, class_weight)
    ptr = bags.bag_ptr
    pos = np.flatnonzero(bags.y == 1)
    choices = [range(ptr[I], ptr[I + 1]) for I in pos]
    best = min(selection_qp(bags, sel, costs)[0] for sel in itertools.product(*choices))
    m = misvm_bigm.build(bags, C=C, class_weight=class_weight)
    r = solve(m, "scip", mip_gap=1e-9)
    assert r.termination == Termination.OPTIMAL
    assert r.objective == pytest.approx(best, rel=1e-5, abs=1e-6)
    sol = misvm_bigm.decode(m)
    # decoded (w, b) evaluated with optimal slacks reproduces the optimum
    assert misvm_bigm.objective_value(bags, sol["w"], sol["b"], C, class_weight) == pytest.approx(best, rel=1e-5, abs=1e-6)
    assert set(sol["witnesses"]) == set(pos.tolist())


def test_valid_big_m_dominates_actual_violation():
    """At the optimum, L_i covers the actual need 1 - xi_I - (w z_i + b) of every non-witness."""
    bags = tiny(7, n_pos=4, n_neg=4, d=3)
    m = misvm_bigm.build(bags, C=5.0)
    r = solve(m, "scip", mip_gap=1e-9)
    sol = misvm_bigm.decode(m)
    s = bags.X @ sol["w"] + sol["b"]
    L = m._milopt_meta["big_m"]
    need = 1 - sol["xi"][bags.bag_index] - s
    inpos = bags.y[bags.bag_index] == 1
    assert np.all(L[inpos] >= need[inpos] - 1e-6)
    assert r.ok


def test_model_shape_and_names():
    bags = tiny(3)
    m = misvm_bigm.build(bags)
    assert {"w", "b", "xi", "zeta", "margin", "witness", "obj"} <= {c.local_name for c in m.component_objects()}
    assert len(m.margin) == bags.n_instances
    sizes = np.diff(bags.bag_ptr)
    assert len(m.zeta) == int(np.sum(sizes[bags.y == 1][sizes[bags.y == 1] >= 2]))


def test_mildsvm_constant_and_errors():
    from milopt.errors import InvalidParameterError

    bags = tiny(1)
    L = bigm.mildsvm_big_m(bags)
    assert L == pytest.approx(100 * np.abs(bags.X).mean(axis=0).sum())
    with pytest.raises(InvalidParameterError, match="C"):
        misvm_bigm.build(bags, C=-1)
    with pytest.raises(InvalidParameterError, match="big_m"):
        misvm_bigm.build(bags, big_m="huge")
