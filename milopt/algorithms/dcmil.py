r"""DC-MIL (Astorino et al. 2019) as native methods: DCPCA, a proximal bundle method for DC
functions, and the plain DC algorithm (DCA).

Papers
------
* A. Astorino, A. Fuduli, G. Giallombardo, G. Miglionico, "SVM-based multiple instance
  classification via DC optimization", *Algorithms* 12(12):249, 2019 (the model, eqs. 1–3, and
  the use of DCPCA with θ = 0.7, η = 0.7, m = 0.01, σ = 0.01, ε = 0.95).
* M. Gaudioso, G. Giallombardo, G. Miglionico, A. M. Bagirov, "Minimizing nonsmooth DC functions
  via successive DC piecewise-affine approximations", *J. Global Optim.* 71:37–55, 2018 (DCPCA).

The error function :math:`f = f_1 - f_2`, its subgradients, the paper's starting point, the
search-direction problem QP(I) and the DCPCA iteration are Pyomo-free mathematics in
:mod:`milopt.mil.dcmil` (the models ``dcmil-dca`` and ``dcmil-direction`` use them too; its
docstring states them).  QP(I) is solved in its dual over the unit simplex by
:func:`milopt.qp.qp_simplex.simplex_qp`.  This module adds the methods:

* :func:`dcpca`: checks DCPCA's parameters, runs :func:`milopt.mil.dcmil.dcpca_iterate` and
  reports a ``SolveResult`` with a per-iteration history;
* :func:`dca`: :math:`z_{k+1} \in \arg\min f_1(z) - \langle g_2(z_k), z\rangle`, each convex
  subproblem being the ``dcmil-dca`` formulation solved through the solver driver (this method
  needs a solver, so it sits above :mod:`milopt.solvers`).
"""
from __future__ import annotations

import time

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.mil.dcmil import DCMILObjective, dcpca_iterate, resolve_budget, starting_point

__all__ = ["dcpca", "dca"]


def _check_params(theta, eta, m, sigma, eps, max_fev, bundle_size):
    for name, v, lo, hi in (("theta", theta, 0.0, np.inf), ("eta", eta, 0.0, np.inf), ("m", m, 0.0, 1.0),
                            ("sigma", sigma, 0.0, 1.0), ("eps", eps, 0.0, np.inf)):
        if not (lo < float(v) < hi or (name in ("theta",) and float(v) == 0.0)):
            raise InvalidParameterError(f"{name}: expected a value in ({lo}, {hi}), got {v}")
    if int(bundle_size) < 2:
        raise InvalidParameterError(f"bundle_size: expected at least 2, got {bundle_size}")


def dcpca(bags: Bags, C: float = 1.0, z0=None, *, theta: float = 0.7, eta: float = 0.7, m: float = 0.01,
          sigma: float = 0.01, eps: float = 0.95, max_fev="auto", bundle_size: int = 100,
          b2: str = "current", max_iter: int | None = None, history: bool = True, keep_bundle: bool = False):
    """Minimise the DC-MIL error function by DCPCA (:mod:`milopt.mil.dcmil`).

    Parameters
    ----------
    bags : Bags
        Binary training bags.
    C : float
        Cost.
    z0 : array (n_features + 1,), optional
        Start (w, b); default :func:`milopt.mil.dcmil.starting_point` (the paper's).
    theta, eta, m, sigma, eps : float
        Stopping tolerance on ``|v̄|``, line-search length threshold for a null step, Armijo
        parameter, step reduction, B1 pruning threshold on linearisation errors (paper: 0.7, 0.7,
        0.01, 0.01, 0.95).
    max_fev : int or {'auto', 'medium', 'large'}
        Budget of function evaluations (paper §4: 500 for medium-size, 200 for large-size
        problems; 'auto' chooses by the number of features, see :func:`resolve_budget`).
    bundle_size : int
        Bundle size threshold (paper: 100): when a serious step produces a new stability
        centre and a bundle has more elements than this, that bundle restarts from the
        centre's subgradient (§4); ``extra['restarts']`` counts the restarts of B1.
    b2 : {'current', 'all'}
        'current': QP(I) with the f2 subgradient at the centre (the paper's QP(I));
        'all': one QP per element of B2, keep the best (minimises the difference of the two
        cutting-plane models; not the paper's).
    max_iter : int, optional
        Cap on main iterations (default: unlimited, the evaluation budget governs).
    history : bool
        Record one dict per main iteration.
    keep_bundle : bool
        Put the final bundle ``(G1, alpha1, g2)`` (arrays) in ``extra['bundle']``.

    Returns
    -------
    SolveResult
        solver="dcpca", problem_class="native"; ``objective`` = final f; ``extra`` holds ``w``,
        ``b``, ``nF``, ``nG1``, ``nG2``, ``serious``, ``null``, ``criticality`` (``|v̄|`` of the last
        QP(I)), ``norm_d``, ``cpu_seconds``, ``restarts``.
    """
    from milopt.solvers.result import Termination, native

    _check_params(theta, eta, m, sigma, eps, max_fev, bundle_size)
    if b2 not in ("current", "all"):
        raise InvalidParameterError(f"b2: expected 'current' or 'all', got {b2!r}")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    obj = DCMILObjective(bags, C)
    max_fev = resolve_budget(max_fev, obj.n - 1)
    z = starting_point(bags) if z0 is None else np.asarray(z0, dtype=float).copy()
    if z.shape != (obj.n,):
        raise InvalidParameterError(f"z0: expected shape ({obj.n},), got {z.shape}")
    run = dcpca_iterate(obj, z, theta=theta, eta=eta, m=m, sigma=sigma, eps=eps, max_fev=max_fev,
                        bundle_size=bundle_size, b2=b2, max_iter=max_iter, history=history)
    # approximate criticality |v| <= theta is a local test (converged, nothing proven); the budget and
    # max_iter are limits
    term = Termination.CONVERGED if run.stop == "criticality" else Termination.ITERATION_LIMIT
    z, ec, v, d = run.z, run.centre, run.v, run.d
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    extra = {"w": z[:-1].tolist(), "b": float(z[-1]), "nF": obj.nF, "nG1": obj.nG1, "nG2": obj.nG2,
             "serious": run.serious, "null": run.null, "restarts": run.restarts,
             "criticality": abs(v) if v is not None else None,
             "norm_d": float(np.linalg.norm(d)) if d is not None else None, "cpu_seconds": cpu, "f0": run.f0,
             "f1": ec.f1, "f2": ec.f2, "C": obj.C, "theta": theta, "eta": eta, "m": m, "sigma": sigma, "eps": eps,
             "max_fev": int(max_fev), "bundle_size": int(bundle_size), "b2": b2, "max_bundle": run.max_bundle}
    if keep_bundle:
        extra["bundle"] = (np.asarray(run.G1), np.asarray(run.A1), np.asarray(run.G2[0]))
    return native("dcpca", term, ec.f, wall, iterations=run.iterations, history=run.history if history else (),
                  extra=extra)


# --------------------------------------------------------------------------------------------
# DCA baseline: repeatedly solve the convex subproblem (milopt/models/dcmil_dca.py) through the driver
# --------------------------------------------------------------------------------------------
def dca(bags: Bags, C: float = 1.0, z0=None, *, solver: str = "highs", max_iter: int = 50, tol: float = 1e-6,
        time_limit: float | None = None, options: dict | None = None, history: bool = True):
    r"""The DC algorithm: :math:`z_{k+1} \in \arg\min f_1(z) - \langle g_2(z_k), z\rangle`.

    The ``dcmil_dca`` Pyomo model is built once (``milopt.solvers.pipeline.build_and_solve``);
    each iteration only updates its mutable linear objective coefficients (the f2 subgradient)
    and re-solves it (``milopt.solvers.pipeline.solve_built``), under one time budget.
    Stops when the decrease of f is at most
    ``tol * max(1, |f|)``, when the subgradient of f2 repeats (a fixed point), after
    ``max_iter`` subproblems, or when ``time_limit`` seconds (total) are spent.

    Returns
    -------
    SolveResult
        solver="dca+<backend>", problem_class="native"; ``extra`` as :func:`dcpca` plus
        ``subproblems`` and ``solver_seconds``.
    """
    from milopt.models import formulation
    from milopt.solvers.budget import TimeBudget
    from milopt.solvers.pipeline import build_and_solve, solve_built
    from milopt.solvers.result import Termination, native

    if int(max_iter) < 1:
        raise InvalidParameterError(f"max_iter: expected at least 1, got {max_iter}")
    budget = TimeBudget(time_limit)  # the whole method, from here
    cpu0, wall0 = time.process_time(), time.perf_counter()
    obj = DCMILObjective(bags, C)
    z = starting_point(bags) if z0 is None else np.asarray(z0, dtype=float).copy()
    ec = obj.evaluate(z)
    f0 = ec.f
    g2 = obj.subgradient2(ec)
    form = formulation("dcmil-dca")
    set_linearisation = form.helper("set_linearisation")
    hist = []
    term = Termination.ITERATION_LIMIT
    solver_s = 0.0
    k = 0
    last = run = None
    for k in range(1, int(max_iter) + 1):
        if run is None:
            run = build_and_solve(form, bags, form.validate({"C": obj.C}), solver, budget=budget,
                                  build_kw={"g2": g2, "z0": z}, warm_start=False, options=options)
        else:
            set_linearisation(run.model, g2)
            run = solve_built(form, run.model, solver, budget=budget, options=options)
        if run.stage != "solved":
            term = Termination.TIME_LIMIT
            break
        res = last = run.result
        solver_s += run.solve_seconds
        if not res.ok:
            term = res.termination if res.termination != Termination.OPTIMAL else Termination.ERROR
            import warnings

            warnings.warn(f"dcmil DCA: subproblem {k} returned no solution with {solver} ({res.termination}); "
                          f"returning the last iterate (f={ec.f:.6g}). HiGHS's active-set QP can stop with "
                          "'Non-convex' on these convex semidefinite QPs (seen on unstandardised gen:kent-yu data) or "
                          "be slow on large dense ones: "
                          "try solver='ipopt' or 'scip', or standardise the features", RuntimeWarning, stacklevel=2)
            break
        sol = form.decode(run.model)
        zn = np.append(sol["w"], sol["b"])
        en = obj.evaluate(zn)
        rec = {"iteration": k, "f": en.f, "f_prev": ec.f, "subproblem_objective": res.objective,
               "solver_seconds": run.solve_seconds, "termination": str(res.termination)}
        if history:
            hist.append(rec)
        decrease = ec.f - en.f
        # accept only non-increasing points (the subproblem is solved to a tolerance)
        if en.f <= ec.f + 1e-9 * max(1.0, abs(ec.f)):
            ec, z = en, en.z
        g2n = obj.subgradient2(ec)
        if decrease <= tol * max(1.0, abs(ec.f)) or np.array_equal(g2n, g2):
            term = Termination.CONVERGED       # a DC critical point: no proof of global optimality
            break
        g2 = g2n
        if res.termination == Termination.TIME_LIMIT:
            term = Termination.TIME_LIMIT
            break
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    extra = {"w": z[:-1].tolist(), "b": float(z[-1]), "nF": obj.nF, "nG1": obj.nG1, "nG2": obj.nG2,
             "subproblems": k, "solver_seconds": solver_s, "cpu_seconds": cpu, "f0": f0, "f1": ec.f1, "f2": ec.f2,
             "C": obj.C, "backend": solver,
             "last_subproblem": None if last is None else {"termination": str(last.termination),
                                                             "objective": last.objective}}
    return native(f"dca+{solver}", term, ec.f, wall, iterations=k, history=hist, extra=extra)
