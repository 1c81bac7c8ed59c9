"""The matrices a builder attaches (:mod:`milopt.models.matrices`) say what the Pyomo model says.

Extraction reads a block of rows and a matrix objective from the records the builder attached
(fast); ``extract(model, matrices=False)`` reads the same model through Pyomo's expressions
alone.  For every built-in formulation, and the variants that change its rows, both readings
give the same matrix form: same columns (by name, in the same order), rows, bounds,
coefficients, objective, integrality, SOS sets and indicator rows.
"""
import numpy as np
import pyomo.environ as pe
import pytest
import scipy.sparse as sp

from milopt.data import load
from milopt.models import catalogue, formulation
from milopt.models.matrices import ObjectiveMatrix, RowMatrix, attach, matrix_of
from milopt.numerics import standardize
from milopt.solvers.extract import extract

#: formulation, parameters: every built-in formulation and the variants that change its rows
CASES = [
    ("misvm-bigm", {}),
    ("misvm-bigm", {"norm": "l1"}),
    ("misvm-bigm", {"disjunction": "sos1"}),
    ("misvm-bigm", {"disjunction": "indicator"}),
    ("misvm-kernel-bigm", {}),
    ("misvm-hull", {}),
    ("misvm-hull", {"perspective": False}),
    ("misvm-dual-qp", {}),
    ("batchsvm-lp", {}),
    ("batchprob-lp", {}),
    ("dcmil-dca", {}),
    ("dcmil-direction", {}),
]
IDS = [f + "".join(f"-{k}={v}" for k, v in p.items()) for f, p in CASES]


@pytest.fixture(scope="module")
def bags():
    musk = load("gen:subset?data=musk1&bags=6&seed=0")
    return {"musk": standardize(musk), "cad": standardize(load("gen:cad?images=4&candidates=6&seed=0"))}


def _build(bags, name, params):
    kind = "cad" if name.startswith("batch") else "musk"
    return formulation(name).build(bags[kind], **params)


def _dense(M):
    return None if M is None else (M.toarray() if sp.issparse(M) else np.asarray(M))


def _qrow(q, to):
    terms = sorted((min(to[i], to[j]), max(to[i], to[j]), v) for i, j, v in zip(q.qi, q.qj, q.qv))
    lin = sorted((to[j], v) for j, v in zip(q.lin_idx, q.lin_val))
    return q.name, q.lb, q.ub, lin, terms


def assert_same_form(a, b):
    """Two matrix forms of one model are equal: the same columns (b's are put in a's order, the
    order columns are first met differs between the readings), the same rows in the same order."""
    assert sorted(a.col_names) == sorted(b.col_names) and len(set(a.col_names)) == len(a.col_names)
    where = {name: k for k, name in enumerate(b.col_names)}
    p = np.array([where[name] for name in a.col_names], dtype=np.int64)   # b's column of a's column k
    to_a = np.empty_like(p)
    to_a[p] = np.arange(p.size)                                          # a's column of b's column j
    assert a.row_names == b.row_names
    np.testing.assert_array_equal(a.integrality, b.integrality[p])
    np.testing.assert_array_equal(a.col_lb, b.col_lb[p])
    np.testing.assert_array_equal(a.col_ub, b.col_ub[p])
    np.testing.assert_allclose(a.row_lb, b.row_lb, rtol=1e-12, atol=0)
    np.testing.assert_allclose(a.row_ub, b.row_ub, rtol=1e-12, atol=0)
    np.testing.assert_allclose(_dense(a.A), _dense(b.A)[:, p], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.c, b.c[p], rtol=1e-12, atol=1e-15)
    assert a.c0 == pytest.approx(b.c0, rel=1e-12, abs=1e-15)
    Qa = np.zeros((p.size, p.size)) if a.Q is None else _dense(a.Q)
    Qb = np.zeros((p.size, p.size)) if b.Q is None else _dense(b.Q)[np.ix_(p, p)]
    np.testing.assert_allclose(Qa, Qb, rtol=1e-12, atol=1e-15)
    assert a.sense == b.sense
    assert [(s.name, s.level, list(s.idx)) for s in a.sos] == [(s.name, s.level, list(to_a[s.idx])) for s in b.sos]
    assert [_qrow(q, np.arange(p.size)) for q in a.qrows] == [_qrow(q, to_a) for q in b.qrows]
    np.testing.assert_array_equal(a.ind_binary, to_a[b.ind_binary])
    np.testing.assert_array_equal(a.ind_active, b.ind_active)
    assert a.ind_names == b.ind_names
    assert (a.ind_A is None) == (b.ind_A is None)
    if a.ind_A is not None:
        np.testing.assert_allclose(_dense(a.ind_A), _dense(b.ind_A)[:, p])


def test_every_builtin_formulation_is_covered():
    assert {name for name, _ in CASES} == set(catalogue())


@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_attached_matrices_read_as_the_pyomo_walk(bags, name, params):
    model = _build(bags, name, params)
    records = [matrix_of(c) for c in model.component_objects((pe.Constraint, pe.Objective), descend_into=True)]
    assert any(isinstance(r, (RowMatrix, ObjectiveMatrix)) for r in records), "no matrices attached"
    assert_same_form(extract(model), extract(model, matrices=False))


def test_a_wrong_record_is_seen(bags):
    """The comparison can fail: a record whose matrix differs from the rows is caught."""
    model = _build(bags, "misvm-bigm", {})
    comp = next(c for c in model.component_objects(pe.Constraint) if isinstance(matrix_of(c), RowMatrix))
    rec = matrix_of(comp)
    attach(comp, RowMatrix(A=rec.A * 2.0, variables=rec.variables, lb=rec.lb, ub=rec.ub, datas=rec.datas,
                           exprs=rec.exprs))
    with pytest.raises(AssertionError):
        assert_same_form(extract(model), extract(model, matrices=False))


def test_attach_takes_records_only():
    m = pe.ConcreteModel()
    m.x = pe.Var()
    m.c = pe.Constraint(expr=m.x >= 0)
    with pytest.raises(TypeError, match="RowMatrix or an ObjectiveMatrix"):
        attach(m.c, {"A": None})
    assert matrix_of(m.c) is None


def test_extraction_alone_reads_the_records():
    """Only the extraction reads the records (and the objective that keeps its own); the
    attribute that holds them is named in one module; the former cache attributes are gone."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readers, holders = set(), set()
    for f in sorted((root / "milopt").rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        rel = f.relative_to(root).as_posix()
        if "matrix_of(" in text:
            readers.add(rel)
        if "_milopt_matrix" in text:
            holders.add(rel)
        assert "_milopt_rows" not in text and "_milopt_quad" not in text, rel
    assert readers == {"milopt/solvers/extract.py", "milopt/models/_linear.py", "milopt/models/matrices.py"}
    assert holders == {"milopt/models/matrices.py"}


def test_verification_reads_indicator_rows_from_the_model(bags):
    """The bench's verification of a Pyomo model walks the indicator rows themselves (no record)."""
    from milopt.bench.verify import _special_violation
    from milopt.models.info import info

    model = _build(bags, "misvm-bigm", {"disjunction": "indicator"})
    for v in model.component_data_objects(pe.Var):
        v.set_value(0.0, skip_validation=True)
    blocks = info(model).indicators
    assert blocks
    for blk in blocks:
        for z in blk["binaries"]:
            z.set_value(float(blk["active_value"]), skip_validation=True)
    worst, where = _special_violation(model)
    assert worst > 0.5 and where.startswith("indicator ")
    for blk in blocks:
        for z in blk["binaries"]:
            z.set_value(1.0 - float(blk["active_value"]), skip_validation=True)
    assert _special_violation(model)[0] == 0.0
