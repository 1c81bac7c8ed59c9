"""The backend and file-format recipes of docs/architecture.md, each followed to the letter.

Each test writes one new file into a temporary folder -- a matrix-form backend, a writer of a
file format -- loads it as a plugin (``milopt --plugin FILE``) in a fresh process, and uses it
through the public command with no other edit.  (The formulation recipe is followed by
``tests/test_layers.py``: one module written into ``milopt/models/``.)
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

DATA = "gen:digits?bags=12&max_size=4&seed=0"

#: a backend written as one function: one module, ``BACKEND = Backend(..., solve_matrix=...)``
BACKEND_PLUGIN = '''
"""linprog-mf: linear programs through scipy.optimize.linprog, from the matrix form."""
import numpy as np
import scipy
import scipy.sparse as sp

from milopt.params import Int, ParamSet
from milopt.solvers.backend import About, Backend, Capabilities, RawResult, map_status
from milopt.solvers.driver import register_backend
from milopt.solvers.result import Termination

#: scipy.optimize.linprog's status codes
STATUS_MAP = {0: Termination.OPTIMAL, 1: Termination.ITERATION_LIMIT, 2: Termination.INFEASIBLE,
              3: Termination.UNBOUNDED, 4: Termination.ERROR}


def solve_matrix(mf, opts):
    from scipy.optimize import linprog

    A = sp.csr_matrix(mf.A)
    lb, ub = np.asarray(mf.row_lb, float), np.asarray(mf.row_ub, float)
    eq = lb == ub
    up, lo = np.isfinite(ub) & ~eq, np.isfinite(lb) & ~eq
    A_ub, b_ub = sp.vstack([A[up], -A[lo]]).tocsr(), np.concatenate([ub[up], -lb[lo]])
    bounds = [(None if not np.isfinite(l) else l, None if not np.isfinite(u) else u)
              for l, u in zip(mf.col_lb, mf.col_ub)]
    options = {k: v for k, v in dict(opts.options).items() if v is not None}
    if opts.seconds_left() is not None:
        options.setdefault("time_limit", opts.seconds_left())
    r = linprog(mf.sense * np.asarray(mf.c, float), A_ub=A_ub if A_ub.shape[0] else None,
                b_ub=b_ub if A_ub.shape[0] else None, A_eq=A[eq] if eq.any() else None,
                b_eq=lb[eq] if eq.any() else None, bounds=bounds, method="highs", options=options)
    term = map_status(STATUS_MAP, r.status)
    x = np.asarray(r.x, float) if r.x is not None and term == Termination.OPTIMAL else None
    obj = None if x is None else float(np.asarray(mf.c, float) @ x + mf.c0)
    return RawResult(termination=term, x=x, objective=obj, bound=obj, iterations=int(getattr(r, "nit", 0) or 0),
                     status_text=str(r.message))


BACKEND = Backend(name="linprog-mf", module="scipy", version=lambda: scipy.__version__, solve_matrix=solve_matrix,
                  caps=Capabilities(classes=frozenset({"LP"})), status_map=STATUS_MAP,
                  about=About(description="scipy linprog from the matrix form"),
                  params=ParamSet(maxiter=Int(None, "simplex iterations", ge=1)))
register_backend(BACKEND)
'''

#: a file format: one writer ``chunks(mf) -> iterable of bytes``, registered with milopt.io
FORMAT_PLUGIN = '''
"""The .npz format: the matrix form's arrays in one numpy archive."""
import io

import numpy as np
import scipy.sparse as sp

from milopt.io import register_format


def npz_chunks(mf):
    A = sp.csr_matrix(mf.A)
    buf = io.BytesIO()
    np.savez(buf, c=mf.c, c0=mf.c0, A_data=A.data, A_indices=A.indices, A_indptr=A.indptr, A_shape=A.shape,
             row_lb=mf.row_lb, row_ub=mf.row_ub, col_lb=mf.col_lb, col_ub=mf.col_ub, sense=mf.sense)
    return [buf.getvalue()]


register_format("npz", npz_chunks)
'''


def _cli(plugin, *args, ok=True):
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "--plugin", str(plugin), *args, "--json"],
                       capture_output=True, text=True, timeout=600)
    if ok:
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    return r


@pytest.fixture(scope="module")
def backend_plugin(tmp_path_factory):
    p = tmp_path_factory.mktemp("backend") / "linprog_mf.py"
    p.write_text(textwrap.dedent(BACKEND_PLUGIN))
    return p


@pytest.fixture(scope="module")
def format_plugin(tmp_path_factory):
    p = tmp_path_factory.mktemp("format") / "npz_format.py"
    p.write_text(textwrap.dedent(FORMAT_PLUGIN))
    return p


def test_matrix_backend_plugin_is_listed(backend_plugin):
    out = _cli(backend_plugin, "list")
    assert out["solvers"]["linprog-mf"]["installed"] and out["solvers"]["linprog-mf"]["classes"] == ["LP"]


def test_matrix_backend_plugin_solves_a_builtin_formulation(backend_plugin):
    """batchsvm-lp with theta=0 (a 1-norm SVM LP) through the new backend and through HiGHS."""
    a = _cli(backend_plugin, "solve", "batchsvm-lp", "--data", DATA, "--solver", "linprog-mf", "--set", "theta=0")
    b = _cli(backend_plugin, "solve", "batchsvm-lp", "--data", DATA, "--solver", "highs", "--set", "theta=0")
    assert a["solver"] == "linprog-mf" and a["status"] == "optimal" and a["termination"] == "optimal"
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-6)
    assert a["model_size"] == b["model_size"]
    # what the backend does not declare is refused before building
    r = _cli(backend_plugin, "solve", "misvm-bigm", "--data", DATA, "--solver", "linprog-mf", ok=False)
    assert r.returncode == 2 and "linprog-mf cannot solve MIQP" in r.stderr


def test_matrix_backend_plugin_status_map_is_used(backend_plugin):
    """linprog's status 1 (iteration limit, from the backend's declared option maxiter=1) reaches
    the result through the backend's status map."""
    out = _cli(backend_plugin, "solve", "batchsvm-lp", "--data", DATA, "--solver", "linprog-mf", "--set", "theta=0",
               "--set", "maxiter=1")
    assert out["termination"] == "iteration_limit" and out["status"] == "none"


def test_format_plugin_exports(format_plugin, tmp_path):
    """``milopt export F.npz`` (and ``.npz.gz``) with the registered writer: the archive holds the
    same matrices that the built-in MPS writer writes (read back through HiGHS)."""
    import gzip

    import highspy
    import scipy.sparse as sp

    f = tmp_path / "m.npz"
    out = _cli(format_plugin, "export", "batchsvm-lp", "--data", DATA, "--set", "theta=0", "-o", str(f))
    assert out["file"] == str(f) and out["bytes"] == f.stat().st_size > 0
    z = np.load(f)
    A = sp.csr_matrix((z["A_data"], z["A_indices"], z["A_indptr"]), shape=tuple(z["A_shape"]))
    assert A.shape == (out["model_size"]["constraints"], out["model_size"]["variables"])
    m = tmp_path / "m.mps"
    _cli(format_plugin, "export", "batchsvm-lp", "--data", DATA, "--set", "theta=0", "-o", str(m))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(m))
    lp = h.getLp()
    assert np.allclose(np.sort(np.asarray(lp.col_cost_)), np.sort(z["c"]))
    assert lp.a_matrix_.value_.__len__() == A.nnz
    g = tmp_path / "m.npz.gz"
    out = _cli(format_plugin, "export", "batchsvm-lp", "--data", DATA, "--set", "theta=0", "-o", str(g))
    assert gzip.decompress(g.read_bytes()) == f.read_bytes()
    # without the plugin the suffix is refused with the list of formats
    r = subprocess.run([sys.executable, "-m", "milopt.cli", "export", "batchsvm-lp", "--data", DATA, "--set",
                        "theta=0", "-o", str(tmp_path / "x.npz")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and ".mps or .lp" in r.stderr

