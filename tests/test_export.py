"""Export round trips: files re-read by HiGHS and SCIP match the model and reach its optimum."""
import highspy
import numpy as np
import pyscipopt
import pytest

from milopt.data import load
from milopt.metrics import standardize
from milopt.models import misvm_bigm
from milopt.solvers import export, solve
from milopt.solvers.extract import extract


@pytest.fixture(scope="module")
def solved():
    bags = standardize(load("gen:digits?bags=10&seed=2"))
    m = misvm_bigm.build(bags, C=1.0)
    r = solve(m, "scip", mip_gap=1e-9)
    assert r.ok
    return m, r


def read_highs(path):
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    return h


@pytest.mark.parametrize("suffix", [".mps", ".lp", ".mps.gz", ".lp.gz"])
def test_round_trip(solved, tmp_path, suffix):
    m, r = solved
    mf = extract(m)
    size = export(m, tmp_path / f"model{suffix}")
    path = tmp_path / f"model{suffix}"
    if suffix.endswith(".gz"):
        import gzip, shutil
        plain = tmp_path / f"plain{suffix[:-3]}"
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        path = plain
    h = read_highs(path)
    assert h.getNumCol() == size["variables"] == mf.c.size
    assert h.getNumRow() == size["constraints"]
    assert h.getNumNz() == size["nonzeros"]
    integ = h.getLp().integrality_
    assert sum(1 for t in integ if t != highspy.HighsVarType.kContinuous) == size["binaries"]
    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    # SCIP moves a quadratic objective into one extra variable and constraint (epigraph)
    assert s.getNVars() == size["variables"] + 1
    assert s.getNConss() == size["constraints"] + 1
    assert s.getNBinVars() + s.getNIntVars() == size["binaries"]
    s.setParam("limits/gap", 1e-9)
    s.optimize()
    assert s.getObjVal() == pytest.approx(r.objective, rel=1e-5, abs=1e-7)
    # HiGHS cannot solve MIQP: fix the binaries at the in-memory optimum, then it solves the QP
    import re

    names = h.getLp().col_names_
    for j, name in enumerate(names):
        hit = re.fullmatch(r"zeta[\W_]?(\d+)[\W_]?", name)
        if hit:
            v = round(m.zeta[int(hit.group(1))].value)
            h.changeColBounds(j, v, v)
            h.changeColIntegrality(j, highspy.HighsVarType.kContinuous)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(r.objective, rel=1e-5, abs=1e-7)


def test_lp_file_has_no_spaced_power(solved, tmp_path):
    m, _ = solved
    export(m, tmp_path / "m.lp")
    assert " ^ 2" not in (tmp_path / "m.lp").read_text()


def test_export_rejects_bad_suffix(solved, tmp_path):
    from milopt.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=".mps or .lp"):
        export(solved[0], tmp_path / "m.txt")


def test_extract_matches_model_values(solved):
    m, r = solved
    mf = extract(m)
    x = np.array([v.value for v in mf.variables])
    obj = mf.c @ x + 0.5 * x @ (mf.Q @ x) + mf.c0
    assert obj == pytest.approx(r.objective, rel=1e-4)  # SCIP's objective uses an epigraph variable
    Ax = mf.A @ x
    assert np.all(Ax >= mf.row_lb - 1e-6) and np.all(Ax <= mf.row_ub + 1e-6)
