"""The reader matrix: every formulation, written by milopt to ``.mps`` and ``.lp`` (plain and
``.gz``), is read back by every installed solver that reads its class, and each reaches the
optimum ``milopt solve`` finds in memory.

Data: 8 bags of MUSK1 (a stratified subset), the first 10 features (4 for the hull models, whose
size grows with features × witnesses) plus one all-zero feature (a column with no matrix entry,
the case foreign writers got wrong), standardised; the batch LPs on generated CAD images (they
need coordinates).  HiGHS reads
the classes it solves (LP, MILP, QP); SCIP reads everything; CPLEX, Gurobi and Xpress (their free
editions, when installed) read the plain files of instances within their size limits.
docs/file_format.md shows the matrix and names this test as its evidence.
"""
from __future__ import annotations

import gzip
import shutil
from dataclasses import replace

import numpy as np
import pytest

from milopt.data import load
from milopt.models import formulation
from milopt.numerics import standardize
from milopt.solvers import export, solve

#: formulation, --set parameters: every formulation and the variants that change the file's sections
CASES = [
    ("misvm-bigm", {}),                                   # MIQP
    ("misvm-bigm", {"norm": "l1"}),                      # MILP
    ("misvm-bigm", {"disjunction": "sos1"}),             # MIQP + SOS1
    ("misvm-bigm", {"disjunction": "indicator"}),        # MIQP + indicators
    ("misvm-hull", {}),                                   # MIQCQP (rotated cones)
    ("misvm-hull", {"perspective": False}),               # MIQP
    ("misvm-dual-qp", {}),                                # QP
    ("batchsvm-lp", {}),                                  # LP (on data with coordinates: gen:cad)
    ("batchprob-lp", {}),                                 # LP
    ("dcmil-dca", {}),                                    # QP
    ("dcmil-direction", {}),                              # QP
]
IDS = [f + "".join(f"-{k}={v}" for k, v in p.items()) for f, p in CASES]
#: what HiGHS solves
HIGHS_CLASSES = {"LP", "MILP", "QP"}
REL, ABS = 2e-5, 1e-6


def _with_zero_feature(b, keep=10):
    X = np.hstack([b.X[:, :keep], np.zeros((b.n_instances, 1))])
    return standardize(replace(b, X=X))


@pytest.fixture(scope="module")
def bags():
    musk = load("gen:subset?data=musk1&bags=8&seed=0")
    return {"musk": _with_zero_feature(musk), "hull": _with_zero_feature(musk, keep=4),
            "cad": standardize(load("gen:cad?images=4&candidates=6&seed=0"))}


_CACHE = {}


def reference(bags, name, params):
    """(model, in-memory optimum) of one case, solved by SCIP to a 1e-9 gap."""
    key = (name, tuple(sorted(params.items())))
    if key not in _CACHE:
        form = formulation(name)
        kind = "cad" if name.startswith("batch") else "hull" if name == "misvm-hull" else "musk"
        model = form.build(bags[kind], **params)  # the hull model on 4 features (+1 constant): SCIP's time
        r = solve(model, "scip", mip_gap=1e-9, time_limit=120)
        assert r.termination == "optimal", (name, params, r.termination)
        _CACHE[key] = (model, r.objective, r.problem_class)
    return _CACHE[key]


def plain_copy(path, tmp_path):
    if path.suffix != ".gz":
        return path
    out = tmp_path / path.name[:-3]
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def read_scip(path) -> float:
    import pyscipopt

    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    s.setParam("limits/gap", 1e-9)
    s.optimize()
    assert s.getStatus() == "optimal"
    return s.getObjVal()


def read_highs(path) -> float:
    import highspy

    from milopt.solvers.highs_backend import new_highs

    h = new_highs()
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


def read_cplex(path) -> float:
    cplex = pytest.importorskip("cplex")
    c = cplex.Cplex()
    for stream in (c.set_log_stream, c.set_results_stream, c.set_warning_stream, c.set_error_stream):
        stream(None)
    c.read(str(path))
    c.parameters.mip.tolerances.mipgap.set(1e-9)
    c.parameters.threads.set(1)
    c.solve()
    return c.solution.get_objective_value()


def read_gurobi(path) -> float:
    gp = pytest.importorskip("gurobipy")
    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.start()
    m = gp.read(str(path), env=env)
    m.Params.MIPGap = 1e-9
    m.Params.Threads = 1
    m.optimize()
    assert m.Status == gp.GRB.OPTIMAL
    return m.ObjVal


def read_xpress(path) -> float:
    xp = pytest.importorskip("xpress")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the community licence announces itself
        p = xp.problem()
    p.setControl("outputlog", 0)
    (p.readProb if hasattr(p, "readProb") else p.read)(str(path))
    p.setControl("miprelstop", 1e-9)
    p.setControl("threads", 1)
    p.optimize()
    return p.attributes.objval


COMMERCIAL = {"cplex": read_cplex, "gurobi": read_gurobi, "xpress": read_xpress}


@pytest.mark.scip
@pytest.mark.parametrize("suffix", [".mps", ".lp", ".mps.gz", ".lp.gz"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_scip_and_highs_read_every_file(bags, tmp_path, case, suffix):
    name, params = case
    model, best, cls = reference(bags, name, params)
    path = tmp_path / f"model{suffix}"
    size = export(model, path)
    assert size["problem_class"] == cls
    assert read_scip(path) == pytest.approx(best, rel=REL, abs=ABS)
    if cls in HIGHS_CLASSES:
        assert read_highs(plain_copy(path, tmp_path)) == pytest.approx(best, rel=REL, abs=ABS)


def _within_free_limits(reader, size) -> bool:
    n, m = size["variables"], size["constraints"]
    if reader == "cplex":
        return n <= 1000 and m <= 1000
    if reader == "gurobi":
        return n <= 200 if size["quadratic_nonzeros"] else n <= 2000 and m <= 2000
    return n + m <= (200 if size["quadratic_nonzeros"] else 5000)  # xpress community licence


@pytest.mark.cplex  # the CI job that installs the CPLEX community edition runs these
@pytest.mark.parametrize("reader", sorted(COMMERCIAL))
@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_commercial_readers(bags, tmp_path, case, suffix, reader):
    pytest.importorskip({"cplex": "cplex", "gurobi": "gurobipy", "xpress": "xpress"}[reader])
    name, params = case
    model, best, cls = reference(bags, name, params)
    path = tmp_path / f"model{suffix}"
    size = export(model, path)
    if not _within_free_limits(reader, size):
        pytest.skip(f"{size['variables']} columns, {size['constraints']} rows: beyond {reader}'s free edition")
    try:
        got = COMMERCIAL[reader](path)
    except Exception as exc:  # a licence refusal is a skip, any other error a failure
        if any(w in str(exc).lower() for w in ("licen", "size limit", "restricted", "community")):
            pytest.skip(f"{reader}: {exc}")
        raise
    assert got == pytest.approx(best, rel=REL, abs=ABS)


@pytest.mark.parametrize("fmt", [".mps", ".lp"])
def test_export_json_is_one_document_on_stdout(tmp_path, fmt):
    """``milopt export ... --json`` in a real process: stdout is exactly one JSON document for
    every formulation (native banners, e.g. HiGHS's, go to stderr)."""
    import json
    import subprocess
    import sys

    data = {"batchsvm-lp": "gen:cad?images=4&candidates=6&seed=0", "batchprob-lp": "gen:cad?images=4&candidates=6&seed=0"}
    names = sorted({f for f, _ in CASES})
    code = ("import sys, milopt.cli\n"
            "from milopt.solvers.highs_backend import new_highs\n"
            "new_highs()  # a HiGHS object created in the process: its banner must not reach stdout\n"
            "sys.exit(milopt.cli.main(sys.argv[1:]))\n")
    for name in names:
        out = tmp_path / f"{name}{fmt}"
        r = subprocess.run([sys.executable, "-c", code, "export", name, "--data",
                            data.get(name, "gen:subset?data=musk1&bags=6&seed=0"), "-o", str(out), "--json"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (name, r.stderr[-500:])
        doc = json.loads(r.stdout)
        assert doc["file"].endswith(fmt) and doc["model_size"]["variables"] > 0, name
