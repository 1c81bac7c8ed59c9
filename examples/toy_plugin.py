r"""An example milopt plugin: one formulation, one fit method and one solver backend.

Load it with ``milopt --plugin examples/toy_plugin.py COMMAND ...``, with
``MILOPT_PLUGINS=examples/toy_plugin.py``, or from a bench configuration
(``imports = ["toy_plugin.py"]``).  Nothing else in milopt needs to change: after loading,

* ``milopt list`` shows the formulation ``sil-l1-lp``, the method ``centroid-svm`` and the
  backend ``scipy-lp``;
* ``milopt solve sil-l1-lp --data musk1 --solver scipy-lp``, ``milopt export sil-l1-lp ...``;
* ``milopt fit sil-l1-lp --data musk1 --cv 5`` (the generic formulation estimator) and
  ``milopt fit centroid-svm --data musk1 --cv 5``;
* ``milopt bench`` with ``[[solve]] formulation = "sil-l1-lp"`` / ``[[fit]] method = "centroid-svm"``.

**Formulation** ``sil-l1-lp``: the 1-norm SVM of Fung & Mangasarian / Vural et al. (eq. 1) on
the instances, each instance carrying its bag's label :math:`y_i \in \{-1, +1\}`:

.. math::

    \min_{w, b, \xi, v}\; \sum_k v_k + C \sum_i \xi_i \quad\text{s.t.}\quad
    y_i (w^\top x_i + b) + \xi_i \ge 1,\ -v \le w \le v,\ \xi \ge 0.

**Method** ``centroid-svm``: a linear SVM on the bag centroids (scikit-learn's ``LinearSVC``).

**Backend** ``scipy-lp``: LPs through ``scipy.optimize.linprog`` (HiGHS inside SciPy) on the
matrix form that :func:`milopt.solvers.extract` returns.
"""
from __future__ import annotations

import numpy as np

from milopt.estimators.base import MILClassifier
from milopt.estimators.registry import register_method
from milopt.models import Formulation, register_formulation
from milopt.params import Float, ParamSet
from milopt.solvers.backend import About, Backend, Capabilities, RawResult
from milopt.solvers.driver import register_backend
from milopt.solvers.result import Termination

# --------------------------------------------------------------------- formulation
PARAMS = ParamSet(C=Float(1.0, "cost of an instance slack", gt=0))


def build(bags, C=1.0):
    import pyomo.environ as pe
    import scipy.sparse as sp

    from milopt.models._linear import add_linear_rows, var_list

    X = bags.X
    n, d = X.shape
    y = np.where(bags.instance_bag_y == 1, 1.0, -1.0)
    m = pe.ConcreteModel(name="sil_l1_lp")
    m.F = pe.RangeSet(0, d - 1)
    m.N = pe.RangeSet(0, n - 1)
    m.w = pe.Var(m.F, initialize=0.0)
    m.b = pe.Var(initialize=0.0)
    m.xi = pe.Var(m.N, domain=pe.NonNegativeReals)
    m.v = pe.Var(m.F, domain=pe.NonNegativeReals)
    vars_ = var_list(m.w, m.b, m.xi, m.v)
    # y_i (x_i w + b) + xi_i >= 1
    A = sp.hstack([sp.csr_matrix(X * y[:, None]), sp.csr_matrix(y[:, None]), sp.identity(n, format="csr"),
                   sp.csr_matrix((n, d))], format="csr")
    add_linear_rows(m, "margin", A, vars_, lb=1.0)
    eye = sp.identity(d, format="csr")
    zero = sp.csr_matrix((d, 1 + n))
    add_linear_rows(m, "v_pos", sp.hstack([-eye, zero, eye], format="csr"), vars_, lb=0.0)  # v - w >= 0
    add_linear_rows(m, "v_neg", sp.hstack([eye, zero, eye], format="csr"), vars_, lb=0.0)  # v + w >= 0
    m.obj = pe.Objective(expr=pe.quicksum(m.v[k] for k in m.F) + float(C) * pe.quicksum(m.xi[i] for i in m.N))
    m._milopt_class = "LP"
    return m


def decode(model):
    import pyomo.environ as pe

    w = np.array([pe.value(model.w[k]) for k in model.F])
    return {"w": w, "b": float(pe.value(model.b))}


register_formulation(Formulation(
    "sil-l1-lp", build, decode, PARAMS, "LP",
    doc="1-norm SVM LP on instances with bag labels copied (example plugin)"))


# --------------------------------------------------------------------- method
class CentroidSVM(MILClassifier):
    """Linear SVM on bag centroids; a bag's score is its centroid's decision value."""

    param_spec = ParamSet(C=Float(1.0, "SVM cost", gt=0))

    def __init__(self, C=1.0, random_state=0):
        self.C = C
        self.random_state = random_state

    def _fit(self, bags):
        from sklearn.svm import LinearSVC

        from milopt.segments import segment_mean

        Z = segment_mean(bags.X, bags.bag_ptr)
        svm = LinearSVC(C=self.C, dual=False, random_state=self.random_state).fit(Z, bags.y)
        self.coef_, self.intercept_ = svm.coef_.ravel(), float(svm.intercept_[0])
        return self

    def predict_instances(self, bags):
        bags = self._check_input(bags)
        return bags.X @ self.coef_ + self.intercept_

    def decision_function(self, bags):
        from milopt.segments import segment_mean

        bags = self._check_input(bags)
        return segment_mean(bags.X, bags.bag_ptr) @ self.coef_ + self.intercept_


register_method("centroid-svm", CentroidSVM, doc="linear SVM on bag centroids (example plugin)")


# --------------------------------------------------------------------- backend
def _scipy_version():
    import scipy

    return scipy.__version__


def _solve_scipy_lp(mf, opts):
    """The LP of the matrix form ``mf`` through linprog; a :class:`RawResult` in ``mf``'s columns
    (the driver extracts the form, refuses non-LPs and loads the solution back)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    lo, hi = mf.row_lb, mf.row_ub
    ub_rows, lb_rows = np.isfinite(hi), np.isfinite(lo)
    A_ub = sp.vstack([mf.A[ub_rows], -mf.A[lb_rows]], format="csr")
    b_ub = np.concatenate([hi[ub_rows], -lo[lb_rows]])
    bounds = [(None if not np.isfinite(a) else a, None if not np.isfinite(b) else b)
              for a, b in zip(mf.col_lb, mf.col_ub)]
    left = opts.seconds_left()  # what is left of the command's time budget
    r = linprog(mf.sense * mf.c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs",
                options={} if left is None else {"time_limit": left})
    term = {0: Termination.OPTIMAL, 1: Termination.ITERATION_LIMIT, 2: Termination.INFEASIBLE,
            3: Termination.UNBOUNDED}.get(r.status, Termination.ERROR)
    has = r.x is not None and r.status in (0, 1)
    return RawResult(termination=term, x=np.asarray(r.x, dtype=float) if has else None,
                     objective=mf.sense * r.fun + mf.c0 if has else None, iterations=getattr(r, "nit", None),
                     log=str(r.message), status_text=str(r.message))


register_backend(Backend(name="scipy-lp", module="scipy", version=_scipy_version, solve_matrix=_solve_scipy_lp,
                         caps=Capabilities(classes=frozenset({"LP"})),
                         about=About(description="LP through scipy.optimize.linprog (example plugin)")))
