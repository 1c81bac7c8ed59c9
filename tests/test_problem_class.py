"""The problem class is computed in one place, from the matrix form; what a formulation declares
(known before building, for refusing a solver early) is a hint checked here against it."""
from __future__ import annotations

import pytest

from milopt.data import load
from milopt.models import formulation, names
from milopt.models.info import info
from milopt.numerics import standardize
from milopt.solvers.driver import classify
from milopt.solvers.extract import extract

DATA = "gen:subset?data=musk1&bags=6&seed=0"
#: the batch formulations read instance coordinates
COORDS = "gen:cad?images=8&features=10&candidates=10&seed=0"


@pytest.fixture(scope="module")
def data():
    return {"plain": standardize(load(DATA)), "coords": load(COORDS)}


@pytest.mark.parametrize("name", names())
def test_declared_class_is_the_computed_one(name, data):
    form = formulation(name)
    bags = data["coords" if name.startswith("batch") else "plain"]
    declared = form.problem_class()
    model = form.build(bags)
    mf = extract(model)
    computed = (mf.problem_class(), mf.features())
    assert classify(model) == computed
    if declared is not None:
        assert declared == computed, f"{name}: declares {declared}, its model is {computed}"
    rec = info(model)
    if rec.problem_class is not None:   # what the builder recorded (used for backends that take the model)
        assert (rec.problem_class, tuple(rec.features)) == computed
