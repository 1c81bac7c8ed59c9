"""Every solve of a formulation goes through ``milopt.solvers.pipeline``: the formulation
estimators, BatchSVM / BatchProb, mi-SMM's MIQP and DC-MIL's DCA (its re-solves included) get
the pipeline's time budget (the build counts) and its early refusal of a solver that cannot
take the model."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError, NoSolutionError, UnsupportedProblemError
from milopt.solvers.result import Termination


def _bags(seed=0, n_bags=12, d=3):
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for i in range(n_bags):
        y = i % 2
        X = rng.normal(size=(int(rng.integers(2, 5)), d))
        if y:
            X[0] += 1.5
        Xs.append(X)
        ys.append(y)
    return Bags.from_arrays(Xs, ys)


def _cad():
    from milopt.data.gen_cad import cad
    from milopt.metrics import standardize

    return standardize(cad(images=8, features=6, informative=3, candidates=16, per_lesion=3, lesions=1.0, seed=3))


def _fit_batchsvm(**kw):
    from milopt.estimators.batch import BatchSVMClassifier

    return BatchSVMClassifier(theta=0.6, **kw).fit(_cad())


def _fit_batchprob(**kw):
    from milopt.estimators.batch import BatchProbClassifier

    return BatchProbClassifier(sigma=0.5, class_weight="balanced", **kw).fit(_cad())


def _fit_mismm(**kw):
    from milopt.data.generators import kent_yu
    from milopt.estimators.heuristics import MISMMMIQP

    kw.setdefault("time_limit", 10)
    return MISMMMIQP(C=1.0, m=20, **kw).fit(kent_yu(3, bags=12, instances=2, samples=5, seed=1))


def _fit_dca(**kw):
    from milopt.algorithms.dcmil import dca

    return dca(_bags(3), C=2.0, max_iter=5, **kw)


PATHS = [pytest.param(_fit_batchsvm, marks=pytest.mark.highs, id="batchsvm"),
         pytest.param(_fit_batchprob, marks=pytest.mark.highs, id="batchprob"),
         pytest.param(_fit_mismm, marks=pytest.mark.scip, id="mismm-miqp"),
         pytest.param(_fit_dca, marks=pytest.mark.highs, id="dca")]


@pytest.fixture
def solver_calls(monkeypatch):
    """Every solver run, with whether it was started from inside the pipeline's solve stage."""
    from milopt.solvers import isolation, pipeline

    inside = []
    calls = []
    solve_built, run_backend = pipeline.solve_built, isolation.run_backend

    def staged(*a, **k):
        inside.append(True)
        try:
            return solve_built(*a, **k)
        finally:
            inside.pop()

    def run(*a, **k):
        calls.append(bool(inside))
        return run_backend(*a, **k)

    monkeypatch.setattr(pipeline, "solve_built", staged)
    monkeypatch.setattr(isolation, "run_backend", run)
    return calls


@pytest.mark.parametrize("fit", PATHS)
def test_every_solve_goes_through_the_pipeline(fit, solver_calls):
    fit()
    assert solver_calls and all(solver_calls), "a solver was started outside milopt.solvers.pipeline"


@pytest.mark.parametrize("fit", PATHS)
def test_the_time_limit_counts_the_build(fit, solver_calls):
    """Less than the least solver time left after building: the solver is never started."""
    from milopt.solvers.budget import MIN_SOLVER_SECONDS

    tl = MIN_SOLVER_SECONDS / 5
    ctx = pytest.raises(NoSolutionError, match="time_limit") if fit in (_fit_batchsvm, _fit_batchprob) \
        else contextlib.nullcontext()
    with ctx:
        out = fit(time_limit=tl)
    assert solver_calls == []
    if fit is _fit_mismm:   # the heuristic's solution is kept
        assert out.fit_info_["termination"] == "time_limit" and out.fit_info_["solution_from"] == "heuristic"
    if fit is _fit_dca:     # the start is returned, no subproblem solved
        assert out.termination == Termination.TIME_LIMIT and len(out.history) == 0 and out.objective == out.extra["f0"]


@pytest.mark.highs
def test_a_solver_that_cannot_take_the_model_is_refused_before_the_start(monkeypatch):
    from milopt.data.generators import kent_yu
    from milopt.estimators.heuristics import MISMMMIQP
    from milopt.solvers import pipeline

    started = []
    monkeypatch.setattr(pipeline, "apply_start", lambda *a, **k: started.append(a) or (False, 0.0))
    with pytest.raises(UnsupportedProblemError, match="highs cannot solve MIQP problems"):
        MISMMMIQP(m=20, solver="highs").fit(kent_yu(3, bags=12, instances=2, samples=5, seed=1))
    assert started == []


@pytest.mark.highs
def test_solve_built_resolves_the_same_model_after_a_change():
    """DCA's step: change the linearisation in place and solve again, no rebuild; the result is
    the one of a model built with the new linearisation."""
    from milopt.mil.dcmil import DCMILObjective, starting_point
    from milopt.models import formulation
    from milopt.solvers.pipeline import build_and_solve, solve_built

    bags = _bags(5)
    obj = DCMILObjective(bags, 2.0)
    z = starting_point(bags)
    g2 = obj.subgradient2(obj.evaluate(z))
    g2b = g2 + np.linspace(-0.3, 0.3, g2.size)
    form = formulation("dcmil-dca")
    built = []
    make = form.make_model

    def counting(*a, **k):
        built.append(1)
        return make(*a, **k)

    form.make_model = counting
    try:
        run = build_and_solve(form, bags, {"C": 2.0}, "highs", build_kw={"g2": g2, "z0": z}, warm_start=False)
        form.helper("set_linearisation")(run.model, g2b)
        again = solve_built(form, run.model, "highs", time_limit=60)
        fresh = build_and_solve(form, bags, {"C": 2.0}, "highs", build_kw={"g2": g2b, "z0": z}, warm_start=False)
    finally:
        del form.make_model
    assert len(built) == 2 and again.model is run.model and again.stage == "solved"
    assert again.result.objective == pytest.approx(fresh.result.objective, rel=1e-7, abs=1e-9)
    assert again.solve_seconds > 0


def test_formulation_helpers_are_explicit():
    from milopt.models import formulation

    f = formulation("dcmil-dca")
    assert f.helper("set_linearisation") is f.module.set_linearisation
    with pytest.raises(AttributeError):
        f.set_linearisation   # no forwarding to the module
    with pytest.raises(InvalidParameterError, match="dcmil-dca: its module defines no function 'nothing'"):
        f.helper("nothing")


def test_one_reading_of_a_time_limit():
    import milopt.params
    from milopt.algorithms.dcmil import dca

    assert not hasattr(milopt.params, "parse_seconds")
    for bad in (0, -1, "x", float("nan"), True):
        with pytest.raises(InvalidParameterError, match="time_limit: expected seconds > 0"):
            dca(_bags(), time_limit=bad)
