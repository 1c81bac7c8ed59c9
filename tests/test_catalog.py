"""Cross-backend checks over the whole formulation catalogue.

For every formulation in ``milopt.models.available()`` (and the ``misvm-bigm`` variants
``norm=l1``, ``disjunction=sos1|indicator`` and their combinations), built on a tiny seeded data set with instance
coordinates and instance labels (so that the batch models can use it too):

* every installed backend that handles the model's class (and features) reaches the same
  optimum: |Δ| <= 1e-5 relative (1e-6 absolute).  This includes Ipopt against HiGHS and SCIP
  on every LP/QP, and HiGHS against SCIP on the 1-norm MILP;
* the ``.mps`` and ``.lp`` exports re-read by SCIP (``readProblem``) and by HiGHS
  (``readModel``) reach the same optimum (same tolerance).  HiGHS cannot solve an MIQP: the
  integer columns of the re-read file are fixed at the in-memory optimum and made continuous,
  and the resulting QP optimum must equal the MIQP optimum.  SOS models are written by Pyomo's
  writers (highspy has no SOS), indicator models by SCIP's writers (``scip-native``); HiGHS
  cannot represent either, so only SCIP re-reads them.

The data are deliberately tiny (8 bags x <= 3 instances x 3 features): the whole module runs
in a few seconds.
"""
from __future__ import annotations

import functools

import highspy
import numpy as np
import pyscipopt
import pytest

from milopt import models
from milopt.data.bags import Bags
from milopt.errors import LicenceLimitError
from milopt.solvers import classify, installed, solve
from milopt.io.names import clean_names
from milopt.solvers import export

pytestmark = [pytest.mark.highs, pytest.mark.scip, pytest.mark.ipopt]

REL, ABS = 1e-5, 1e-6

VARIANTS = {"misvm-bigm": [{}, {"norm": "l1"}, {"disjunction": "sos1"}, {"norm": "l1", "disjunction": "sos1"},
                          {"disjunction": "indicator"}, {"norm": "l1", "disjunction": "indicator"}],
            "misvm-hull": [{}, {"perspective": False}]}


def tiny_bags(seed: int = 0) -> Bags:
    """8 bags (4 positive) of 2-3 instances, 3 features, 2-D coordinates, instance labels."""
    rng = np.random.default_rng(seed)
    X, y, iy, co = [], [], [], []
    for j in range(8):
        k = 2 if j in (3, 6) else 3
        x = rng.normal(size=(k, 3))
        lab = np.zeros(k, dtype=int)
        if j < 4:
            x[0, 0] += 2.0
            lab[0] = 1
        X.append(x)
        y.append(int(j < 4))
        iy.append(lab)
        co.append(rng.uniform(0, 3, size=(k, 2)))
    return Bags.from_arrays(X, y, instance_y=iy, coords=co, name="tiny")


def cases():
    out = []
    for name in models.available():
        for params in VARIANTS.get(name, [{}]):
            tag = name + ("" if not params else "[" + ",".join(f"{k}={v}" for k, v in params.items()) + "]")
            out.append(pytest.param(name, tuple(sorted(params.items())), id=tag))
    return out


@functools.lru_cache(maxsize=None)
def solved(name: str, params: tuple):
    """(model, class, features, {solver: SolveResult}) with every capable installed backend."""
    mod = models.get(name)
    m = mod.build(tiny_bags(), **dict(params))
    cls, feats = classify(m)
    results = {}
    for s in installed(cls, feats):
        try:
            results[s] = solve(m, s, mip_gap=1e-9, time_limit=60)
        except LicenceLimitError:  # over a free edition's size limit: that solver cannot take it
            continue
    # leave the model holding the reference solution (first backend) for the export checks
    ref = next(iter(results))
    if len(results) > 1:
        solve(m, ref, mip_gap=1e-9, time_limit=60)
    return m, cls, feats, results


@pytest.mark.parametrize("name,params", cases())
def test_backends_agree(name, params):
    m, cls, feats, results = solved(name, params)
    assert results, f"no installed backend handles {cls} {feats}"
    for s, r in results.items():
        assert r.ok and r.status.name == "OPTIMAL", f"{s}: {r.termination}"
    objs = {s: r.objective for s, r in results.items()}
    ref = next(iter(objs.values()))
    for s, v in objs.items():
        assert v == pytest.approx(ref, rel=REL, abs=ABS), objs
    # the intended comparisons actually happened
    if cls in ("LP", "QP"):
        assert {"highs", "ipopt", "scip"} <= set(results), set(results)
    if cls == "MILP" and not feats:
        assert {"highs", "scip"} <= set(results), set(results)


def _scip_optimum(path) -> float:
    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    s.setParam("limits/gap", 1e-9)
    s.setParam("limits/time", 60)
    s.optimize()
    assert s.getStatus() == "optimal", s.getStatus()
    return s.getObjVal()


def _highs_optimum(path, model, cls) -> float:
    from milopt.solvers.highs_backend import new_highs

    h = new_highs()
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    if cls in ("MIQP", "MIQCQP"):
        # HiGHS cannot solve MIQP: fix the integer columns at the in-memory optimum
        vs = list(model.component_data_objects(ctype=_var(), active=True))
        values = dict(zip(clean_names([v.name for v in vs], "C"), (v.value for v in vs)))
        lp = h.getLp()
        for j, (nm, t) in enumerate(zip(lp.col_names_, lp.integrality_)):
            if t != highspy.HighsVarType.kContinuous:
                val = float(round(values[nm]))
                h.changeColBounds(j, val, val)
                h.changeColIntegrality(j, highspy.HighsVarType.kContinuous)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.modelStatusToString(h.getModelStatus())
    return h.getInfo().objective_function_value


def _var():
    import pyomo.environ as pe

    return pe.Var


@pytest.mark.parametrize("fmt", [".mps", ".lp"])
@pytest.mark.parametrize("name,params", cases())
def test_export_reread_reaches_optimum(name, params, fmt, tmp_path):
    m, cls, feats, results = solved(name, params)
    ref = next(iter(results.values())).objective
    path = tmp_path / f"model{fmt}"
    export(m, path)
    assert _scip_optimum(path) == pytest.approx(ref, rel=REL, abs=ABS)
    if "SOS" in feats or "INDICATOR" in feats:
        return  # HiGHS has no SOS or indicator constraints (documented in the module docstring)
    if "QC" in cls:
        return  # HiGHS reads no quadratic constraints (QCMATRIX sections); SCIP's re-read is the check
    assert _highs_optimum(path, m, cls) == pytest.approx(ref, rel=REL, abs=ABS)


def test_ipopt_refused_for_integer_models():
    from milopt.errors import UnsupportedProblemError

    m = models.get("misvm-bigm").build(tiny_bags())
    with pytest.raises(UnsupportedProblemError, match="ipopt cannot solve MIQP.*scip"):
        solve(m, "ipopt")
    m = models.get("misvm-bigm").build(tiny_bags(), norm="l1")
    with pytest.raises(UnsupportedProblemError, match="ipopt cannot solve MILP"):
        solve(m, "ipopt")


def test_highs_refused_for_sos():
    from milopt.errors import UnsupportedProblemError

    m = models.get("misvm-bigm").build(tiny_bags(), norm="l1", disjunction="sos1")
    with pytest.raises(UnsupportedProblemError, match="highs cannot solve MILP with SOS.*scip"):
        solve(m, "highs")


def test_extract_follows_modifications_after_build(monkeypatch):
    """The cached-matrix fast path of extract() notices rows replaced, deactivated or added and
    variables fixed after build; the result is solved by HiGHS from the matrices and compared
    with Pyomo's own HiGHS interface, which reads the expressions."""
    import pyomo.environ as pe

    import importlib

    E = importlib.import_module("milopt.solvers.extract")

    m = models.get("misvm-bigm").build(tiny_bags(), norm="l1")
    seen = []
    orig = E._rows_generic
    monkeypatch.setattr(E, "_rows_generic", lambda cons, cols, q: (seen.extend(c.name for c in cons), orig(cons, cols, q))[1])
    base = E.extract(m)
    assert seen == []  # untouched model: every row from the cached matrices
    n_rows = base.A.shape[0]
    m.margin[0].deactivate()
    m.margin[1].set_value(m.margin[1].body >= 0.5)
    m.w[0].fix(0.1)
    m.zeta[next(iter(m.ZETA))].fix(1)
    m.extra = pe.Constraint(expr=pe.inequality(-0.3, m.b + m.w[1], 0.2))
    mf = E.extract(m)
    assert sorted(seen) == ["extra", "margin[1]"]
    assert mf.A.shape[0] == n_rows  # -1 deactivated, +1 added
    assert "w[0]" not in mf.col_names  # fixed: substituted
    from milopt.solvers.highs_backend import to_highs

    h = to_highs(mf)
    h.run()
    ref = solve(m, "highs", mip_gap=1e-9)
    assert ref.ok
    assert h.getInfo().objective_function_value == pytest.approx(ref.objective, rel=REL, abs=ABS)


def _l1_brute_force(bags, C=1.0):
    """min over every witness selection of the 1-norm SVM LP with that selection (scipy linprog)."""
    import itertools

    from scipy.optimize import linprog

    from milopt.models.misvm_bigm import bag_costs

    X, d, B = bags.X, bags.n_features, bags.n_bags
    costs = bag_costs(bags, C)
    ptr = bags.bag_ptr
    pos = np.flatnonzero(bags.y == 1)
    neg_rows = np.flatnonzero(bags.y[bags.bag_index] == 0)
    nv = 2 * d + 1 + B  # w, b, xi, v
    c = np.concatenate([np.zeros(d + 1), costs, np.ones(d)])
    best = np.inf
    for sel in itertools.product(*[range(ptr[I], ptr[I + 1]) for I in pos]):
        rows = np.concatenate([neg_rows, np.array(sel)])
        sgn = np.where(bags.y[bags.bag_index[rows]] == 1, 1.0, -1.0)
        A = np.zeros((rows.size + 2 * d, nv))
        A[:rows.size, :d] = -sgn[:, None] * X[rows]
        A[:rows.size, d] = -sgn
        A[np.arange(rows.size), d + 1 + bags.bag_index[rows]] = -1.0
        k = np.arange(d)
        A[rows.size + k, k] = 1.0
        A[rows.size + k, d + 1 + B + k] = -1.0
        A[rows.size + d + k, k] = -1.0
        A[rows.size + d + k, d + 1 + B + k] = -1.0
        bub = np.concatenate([-np.ones(rows.size), np.zeros(2 * d)])
        bounds = [(None, None)] * (d + 1) + [(0, None)] * (B + d)
        r = linprog(c, A_ub=A, b_ub=bub, bounds=bounds, method="highs")
        best = min(best, r.fun)
    return best


def test_l1_and_sos1_variants_equal_brute_force_minimum():
    """The L1 MILP (valid Hölder big-M and SOS1 form) reaches the minimum over all witness
    selections of the 1-norm SVM LP; the SOS1 form of the ½‖w‖² model equals its big-M form."""
    bags = tiny_bags(1)
    best = _l1_brute_force(bags)
    mod = models.get("misvm-bigm")
    for params, solver in (({"norm": "l1"}, "highs"), ({"norm": "l1"}, "scip"),
                           ({"norm": "l1", "disjunction": "sos1"}, "scip")):
        m = mod.build(bags, **params)
        r = solve(m, solver, mip_gap=1e-9)
        assert r.objective == pytest.approx(best, rel=REL, abs=ABS), (params, solver)
        sol = mod.decode(m)
        assert mod.objective_value(bags, sol["w"], sol["b"], norm="l1") == pytest.approx(best, rel=1e-4, abs=1e-5)
    a = solve(mod.build(bags), "scip", mip_gap=1e-9).objective
    b = solve(mod.build(bags, disjunction="sos1"), "scip", mip_gap=1e-9).objective
    assert a == pytest.approx(b, rel=REL, abs=ABS)


def test_l1_big_m_is_valid_and_tight():
    """L1 big-M: F0 · max_j ||z_i - z_j||_inf, never below the violation a non-witness needs."""
    from milopt.mil.bigm import linf_spread, trivial_upper_bound, valid_big_m
    from milopt.numerics import bag_costs

    bags = tiny_bags(2)
    costs = bag_costs(bags, 1.0)
    L = valid_big_m(bags, costs, norm="l1")
    ptr = bags.bag_ptr
    for I in range(bags.n_bags):
        Z = bags.X[ptr[I]:ptr[I + 1]]
        spread = np.abs(Z[:, None, :] - Z[None, :, :]).max(axis=2).max(axis=1)
        np.testing.assert_allclose(linf_spread(bags)[ptr[I]:ptr[I + 1]], spread)
    np.testing.assert_allclose(L, trivial_upper_bound(costs, bags.y) * linf_spread(bags))
    m = models.get("misvm-bigm").build(bags, norm="l1")
    solve(m, "highs", mip_gap=1e-9)
    sol = models.get("misvm-bigm").decode(m)
    s = bags.X @ sol["w"] + sol["b"]
    need = 1 - sol["xi"][bags.bag_index] - s
    inpos = bags.y[bags.bag_index] == 1
    assert np.all(L[inpos] >= need[inpos] - 1e-6)


def test_indicator_form_equals_big_m_and_only_scip_native_takes_it():
    from milopt.errors import UnsupportedProblemError

    mod = models.get("misvm-bigm")
    bags = tiny_bags(1)
    for norm in ("l2", "l1"):
        big = solve(mod.build(bags, norm=norm), "scip", mip_gap=1e-9).objective
        m = mod.build(bags, norm=norm, disjunction="indicator")
        assert not m.margin_ind.active and len(m.margin_ind) == len(m.zeta)
        r = solve(m, "scip-native", mip_gap=1e-9)
        assert r.extra["indicator_constraints"] == len(m.zeta)
        assert r.objective == pytest.approx(big, rel=REL, abs=ABS)
        sol = mod.decode(m)
        assert mod.objective_value(bags, sol["w"], sol["b"], norm=norm) == pytest.approx(big, rel=1e-4, abs=1e-5)
    for s in ("highs", "ipopt"):
        with pytest.raises(UnsupportedProblemError, match="INDICATOR.*scip"):
            solve(m, s)


def test_models_pickle_and_clone_keep_the_fast_path(monkeypatch):
    import importlib
    import pickle

    E = importlib.import_module("milopt.solvers.extract")
    m = models.get("misvm-bigm").build(tiny_bags(), norm="l1")
    ref = E.extract(m)
    seen = []
    orig = E._rows_generic
    monkeypatch.setattr(E, "_rows_generic", lambda cons, cols, q: (seen.extend(cons), orig(cons, cols, q))[1])
    for copy in (pickle.loads(pickle.dumps(m)), m.clone()):
        mf = E.extract(copy)
        assert seen == []
        assert mf.col_names == ref.col_names and (mf.A != ref.A).nnz == 0
        assert all(v.parent_block() is copy for v in mf.variables)


def test_scip_native_statuses_and_warm_start():
    import pyomo.environ as pe

    from milopt.solvers import Termination

    mod = models.get("misvm-bigm")
    bags = tiny_bags(1)
    m = mod.build(bags, disjunction="indicator")
    mod.warm_start(m, np.zeros(bags.n_features), -1.0)  # the trivial feasible point w = 0, b = -1
    r = solve(m, "scip-native", warm_start=True, options={"limits/nodes": 1})
    assert r.ok and r.objective <= mod.objective_value(bags, np.zeros(bags.n_features), -1.0) + 1e-9
    r = solve(m, "scip-native", time_limit=1e-3)
    assert r.termination == Termination.TIME_LIMIT
    inf = pe.ConcreteModel()
    inf.x = pe.Var(domain=pe.Binary)
    inf.c = pe.Constraint(expr=inf.x >= 2)
    inf.o = pe.Objective(expr=inf.x)
    r = solve(inf, "scip-native")
    assert r.termination == Termination.INFEASIBLE and not r.ok
