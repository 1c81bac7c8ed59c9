"""Strengthening of misvm-bigm: incumbent bounds, convex-hull reduction, priorities, warm start.

Every check compares against brute force: the minimum over all witness selections of the convex
QP with that selection and no big-M (HiGHS)."""
import itertools
import json

import numpy as np
import pyomo.environ as pe
import pytest

from milopt.data import Bags
from milopt.mil import bigm
from milopt.models import misvm_bigm
from milopt.solvers import Termination, solve
from mil_helpers import selection_qp


def tiny(seed, n_pos=3, n_neg=3, d=2, extra=False):
    """Small random bags; with ``extra`` a duplicate and an interior point (midpoint) in bag 0 and a
    duplicate row in the first negative bag."""
    rng = np.random.default_rng(seed)
    arrs, y = [], []
    for k in range(n_pos):
        arrs.append(rng.normal(size=(rng.integers(2 if extra and k == 0 else 1, 4), d)) + rng.normal(0, 1.5, size=d))
        y.append(1)
    for k in range(n_neg):
        arrs.append(rng.normal(size=(rng.integers(1, 4), d)) - 0.5)
        y.append(0)
    if extra:
        a = arrs[0]
        arrs[0] = np.vstack([a, a[:1], 0.5 * (a[0] + a[1])])
        arrs[n_pos] = np.vstack([arrs[n_pos], arrs[n_pos][:1]])
    return Bags.from_arrays(arrs, y)


def brute_force(bags, C=1.0, class_weight="kent-yu"):
    costs = misvm_bigm.bag_costs(bags, C, class_weight)
    ptr = bags.bag_ptr
    choices = [range(ptr[I], ptr[I + 1]) for I in np.flatnonzero(bags.y == 1)]
    return min((selection_qp(bags, sel, costs) for sel in itertools.product(*choices)), key=lambda t: t[0])


@pytest.mark.scip
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("opts", [dict(strengthen="all"), dict(strengthen="bounds", warm_start=True),
                                  dict(strengthen="reduce"), dict(strengthen="all", warm_start=True)])
def test_strengthened_model_has_the_brute_force_optimum(seed, opts):
    bags = tiny(seed, extra=True)
    best, _, _ = brute_force(bags)
    m = misvm_bigm.build(bags, C=1.0, **opts)
    r = solve(m, "scip", mip_gap=1e-9, warm_start=bool(getattr(m, "_milopt_start", False)))
    assert r.termination == Termination.OPTIMAL
    assert r.objective == pytest.approx(best, rel=1e-5, abs=1e-6)
    sol = misvm_bigm.decode(m)
    assert misvm_bigm.objective_value(bags, sol["w"], sol["b"]) == pytest.approx(best, rel=1e-5, abs=1e-6)
    # the decoded witness of every positive bag is a kept instance whose row holds
    removed = m._milopt_meta["removed"]
    s = bags.X @ sol["w"] + sol["b"]
    for I, j in sol["witnesses"].items():
        assert not removed[j]
        assert s[j] >= 1 - sol["xi"][I] - 1e-6


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("class_weight", ["kent-yu", "none"])
def test_incumbent_bounds_hold_at_the_optimum(seed, class_weight):
    """The brute-force optimum satisfies every bound derived from an incumbent F >= optimum,
    including F equal to the optimum itself (the tightest case)."""
    bags = tiny(seed, d=3)
    C = 1.5
    best, w, b = brute_force(bags, C, class_weight)
    costs = misvm_bigm.bag_costs(bags, C, class_weight)
    s = bags.X @ w + b
    from milopt.segments import segment_max

    mx = segment_max(s, bags.bag_ptr)
    pos = bags.y == 1
    xi = np.where(pos, np.maximum(0, 1 - mx), np.maximum(0, 1 + mx))
    inc = bigm.incumbent(bags, C, class_weight)
    assert inc["objective"] >= best - 1e-7
    for F in (best, inc["objective"], bigm.trivial_upper_bound(costs, bags.y)):
        bd = bigm.incumbent_bounds(bags, costs, F)
        assert np.all(np.abs(w) <= bd["W"] + 1e-7)
        assert bd["b_lo"] - 1e-7 <= b <= bd["b_hi"] + 1e-7
        assert np.all(xi <= bd["xi_hi"] + 1e-7)
        assert np.all(s >= bd["lo"] - 1e-7)
        # L covers the release every positive-bag instance needs
        need = 1 - xi[bags.bag_index] - s
        ip = pos[bags.bag_index]
        assert np.all(bd["L"][ip] >= need[ip] - 1e-7)
        # and is never looser than the plain valid big-M with the same F
        assert np.all(bd["L"] <= bigm.valid_big_m(bags, costs, F) * (1 + 1e-8) + 1e-9)
    # the bounds are not vacuous: with F at the optimum, w and b are confined
    bd = bigm.incumbent_bounds(bags, costs, best)
    assert np.isfinite(bd["b_lo"]) and np.isfinite(bd["b_hi"])


def test_hull_interior_finds_duplicates_and_interior_points_only():
    bags = tiny(0, extra=True)
    rem = bigm.hull_interior(bags)
    ptr = bags.bag_ptr
    n0 = ptr[1] - ptr[0]
    # bag 0: the last two rows are a duplicate of row 0 and the midpoint of rows 0 and 1
    assert rem[ptr[0] + n0 - 2] and rem[ptr[0] + n0 - 1]
    # the duplicate negative row (last of the first negative bag) is removed
    neg0 = int(np.flatnonzero(bags.y == 0)[0])
    assert rem[ptr[neg0 + 1] - 1]
    # every removed point is in the convex hull of the kept points of its bag; kept ones are not
    from scipy.optimize import linprog

    for i in np.flatnonzero(rem):
        I = bags.bag_index[i]
        kept = [j for j in range(ptr[I], ptr[I + 1]) if not rem[j]]
        A = np.vstack([bags.X[kept].T, np.ones(len(kept))])
        r = linprog(np.zeros(len(kept)), A_eq=A, b_eq=np.append(bags.X[i], 1), bounds=(0, None))
        assert r.status == 0
    assert rem.sum() == 3


@pytest.mark.parametrize("value, expected", [("none", set()), ("all", {"bounds", "reduce"}),
                                             ("bounds,reduce", {"bounds", "reduce"}), ("reduce", {"reduce"}),
                                             ("bounds+reduce", {"bounds", "reduce"}), (False, set())])
def test_parse_strengthen(value, expected):
    assert set(misvm_bigm.parse_strengthen(value)) == expected


def test_bad_strengthen_and_priority_are_refused():
    from milopt.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="strengthen"):
        misvm_bigm.build(tiny(0), strengthen="tight")
    with pytest.raises(InvalidParameterError, match="branch_priority"):
        misvm_bigm.build(tiny(0), branch_priority="random")
    with pytest.raises(InvalidParameterError, match="warm_start"):
        misvm_bigm.build(tiny(0), warm_start="maybe")


def test_strengthened_model_is_smaller_and_tighter():
    bags = tiny(1, extra=True)
    plain = misvm_bigm.build(bags, upper_bound=1.0)
    strong = misvm_bigm.build(bags, upper_bound=1.0, strengthen="all")
    assert len(strong.ZETA) < len(plain.ZETA)
    assert len(strong.margin) == len(plain.margin) - 3
    L0, L1 = plain._milopt_meta["big_m"], strong._milopt_meta["big_m"]
    assert np.all(L1[list(strong.ZETA)] <= L0[list(strong.ZETA)] * (1 + 1e-8))
    assert strong.w[0].ub is not None and strong.b.lb is not None and strong.xi[0].ub is not None


def test_warm_start_point_is_feasible_in_the_strengthened_model():
    bags = tiny(2, extra=True)
    m = misvm_bigm.build(bags, warm_start=True, strengthen="all")
    assert m._milopt_start
    for v in m.component_data_objects(pe.Var):
        assert v.lb is None or v.value >= v.lb - 1e-9
        assert v.ub is None or v.value <= v.ub + 1e-9
    for c in m.component_data_objects(pe.Constraint, active=True):
        val = pe.value(c.body)
        assert c.lower is None or val >= pe.value(c.lower) - 1e-7
        assert c.upper is None or val <= pe.value(c.upper) + 1e-7
    obj = pe.value(m.obj)
    assert obj == pytest.approx(m._milopt_meta["incumbent"], rel=1e-6, abs=1e-9)


@pytest.mark.scip
def test_branch_priorities_reach_scip_native_and_keep_the_optimum():
    bags = tiny(3)
    best, _, _ = brute_force(bags)
    m = misvm_bigm.build(bags, warm_start=True, strengthen="all", branch_priority="bagsize")
    pr = m._milopt_branch_priority
    assert len(pr) == len(m.ZETA) and all(p >= 1 for _, p in pr)
    # smaller bags first; in each bag exactly one (the incumbent's witness) one step higher
    bi = bags.bag_index[[v.index() for v, _ in pr]]
    size = np.diff(bags.bag_ptr)[bi]
    p = np.array([q for _, q in pr])
    for I in np.unique(bi):
        assert np.sum(p[bi == I] == p[bi == I].max()) == 1
        assert np.all(p[bi == I] >= p[size > size[bi == I][0]].max(initial=0))
    r = solve(m, "scip-native", mip_gap=1e-9, warm_start=True)
    assert r.objective == pytest.approx(best, rel=1e-5, abs=1e-6)


def _cli(capsys, *args):
    from milopt.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.scip
def test_cli_warm_start_is_the_default_and_can_be_switched_off(capsys):
    data = "gen:digits?bags=6&seed=1"
    base = ["solve", "misvm-bigm", "--data", data, "--solver", "scip", "--time-limit", "30", "--json"]
    code, out, _ = _cli(capsys, *base)
    assert code == 0
    warm = json.loads(out)
    assert warm["warm_start"] is True and warm["warm_start_objective"] is not None
    for off in (["--no-warm-start"], ["--set", "warm_start=false"]):
        code, out, _ = _cli(capsys, *base, *off)
        assert code == 0
        cold = json.loads(out)
        assert cold["warm_start"] is False and "warm_start_objective" not in cold
        if warm["status"] == "optimal" and cold["status"] == "optimal":
            assert cold["objective"] == pytest.approx(warm["objective"], rel=1e-4, abs=1e-6)
    code, out, _ = _cli(capsys, *base, "--warm-start")  # still accepted
    assert code == 0 and json.loads(out)["warm_start"] is True
    code, _, err = _cli(capsys, *base, "--warm-start", "--set", "warm_start=false")
    assert code != 0 and "disagree" in err
