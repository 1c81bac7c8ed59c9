"""DC-MIL estimator: the SVM-based MIL error function minimised by DCPCA (``milopt fit dcmil``) or
by the plain DC algorithm over the ``dcmil_dca`` QP (``milopt fit dcmil-dca``).

Astorino, Fuduli, Giallombardo, Miglionico, *Algorithms* 12:249 (2019): the model (eqs. 1-3), the
DCPCA main iteration as their Algorithm 1 and the settings of their §4.  DCPCA itself was
introduced by Gaudioso, Giallombardo, Miglionico, Bagirov, *J. Global Optim.* 71:37-55 (2018)
(their reference [30]).  See docs/dcmil.md.
"""
from __future__ import annotations

import time

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError, NoSolutionError
from milopt.params import Choice, Floats, Int, ParamSet, parse_bool
from milopt.estimators.base import MILClassifier
from milopt.estimators.registry import register_method

__all__ = ["DCMILClassifier", "inner_splits"]

#: the paper's grid for C: 2^-7, ..., 2^7
C_GRID = tuple(2.0 ** k for k in range(-7, 8))


def inner_splits(y, folds=5, repeats: int = 1, seed: int | None = 0) -> list:
    """The inner cross-validation's splits of the training bags, as ``(train, test)`` index arrays.

    ``folds`` = K: ``repeats`` stratified K-fold partitions of the bags, repetition r shuffled with
    seed ``seed + r`` (so repetition 0 is the single partition of ``repeats=1``; ``seed=None``:
    unseeded); ``folds='loo'``:
    leave one bag out (every bag once; ``repeats`` is then irrelevant).  C is chosen by the mean,
    over all these splits, of the held-out bag accuracy: repeating the partition averages out the
    noise of one draw of K folds, in which neighbouring values of C often differ by one or two
    held-out bags.
    """
    from sklearn.model_selection import LeaveOneOut, StratifiedKFold

    y = np.asarray(y)
    if isinstance(folds, str):
        if folds.strip().lower() != "loo":
            raise InvalidParameterError(f"inner_folds: expected an integer >= 2 or 'loo', got {folds!r}")
        return [(tr, te) for tr, te in LeaveOneOut().split(y)]
    k, r = int(folds), int(repeats)
    counts = np.bincount(y)
    if k < 2 or counts[counts > 0].min() < k:   # at most the bags of the smallest class (data)
        raise InvalidParameterError(f"inner_folds: need 2 <= folds <= bags of the smallest class "
                                    f"({counts[counts > 0].min()}), got {folds}")
    if r < 1:
        raise InvalidParameterError(f"inner_repeats: expected an integer >= 1, got {repeats}")
    out = []
    for rep in range(r):
        skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=None if seed is None else int(seed) + rep)
        out.extend(skf.split(np.zeros(len(y)), y))
    return out


class DCMILClassifier(MILClassifier):
    """Linear MIL classifier minimising f(w, b) = ½‖w‖² + C·(bag hinge errors), a DC function.

    Parameters
    ----------
    method : {'dcpca', 'dca'}
        ``dcpca``: the native proximal bundle method for DC functions (Gaudioso et al. 2018);
        ``dca``: the DC algorithm, one convex QP (``milopt/models/dcmil_dca.py``) per iteration
        through the solver driver.
    C : float
        Cost of the bag errors (ignored when ``inner_cv``).
    inner_cv : bool
        Choose C by an inner stratified K-fold cross-validation (bag accuracy) over ``C_grid``
        (``inner_repeats`` partitions into ``inner_folds`` folds) with scikit-learn's
        ``GridSearchCV`` on this estimator, then refit on all bags; among equally accurate values
        the first of the grid wins (the smallest C of the paper's ascending grid).  Bags
        standardised with their own statistics (as ``milopt fit`` leaves each training fold) are
        standardised again in each inner fold with its training part's statistics
        (:func:`milopt.numerics.is_standardized`; the inner folds of the decision rule do the
        same).  With the features standardised and ``threshold=zero`` this is the MUSK1
        protocol of docs/dcmil.md.
    C_grid : sequence of float or str, optional
        Default: the paper's {2^-7, ..., 2^7}; a string "0.5,1,2" is accepted (command line).
    inner_folds : int or 'loo'
        Folds of the inner cross-validation; ``'loo'``: leave one bag out.
    inner_repeats : int
        Stratified partitions into ``inner_folds`` folds (differently shuffled; see
        :func:`inner_splits`); C is chosen by the mean held-out accuracy over all their folds.
        Default 3 (3 × 5 folds: the MUSK1 protocol of docs/dcmil.md); 1 is a single partition.
    theta : float
        DCPCA stopping tolerance on the criticality measure ``|v̄|`` (paper §4: 0.7).
    eta : float
        DCPCA line-search length below which a step is a null step (paper: 0.7).
    m : float
        DCPCA Armijo parameter (paper: 0.01).
    sigma : float
        DCPCA step reduction factor (paper: 0.01).
    eps : float
        DCPCA pruning threshold on the linearisation errors of the first bundle (paper: 0.95).
    max_fev : int or {'auto', 'medium', 'large'}
        DCPCA budget of function evaluations (paper: 500 for medium-size, 200 for large-size problems; 'auto'
        chooses by the number of features).
    bundle_size : int
        DCPCA bundle size above which a bundle restarts at a new stability centre (paper: 100).
    b2 : {'current', 'all'}
        DCPCA direction subproblem: 'current' (the paper's QP(I)) or 'all' (one QP per element of the
        second bundle); see :func:`milopt.algorithms.dcmil.dcpca`.
    solver : str
        Backend for the DCA subproblems (``highs`` by default; ``ipopt``, ``scip`` when installed).
    max_iter : int
        DCA: maximum number of subproblems.
    time_limit : float, optional
        DCA: total seconds.
    n_jobs : int, optional
        Parallel jobs of the inner grid search (joblib).
    random_state : int
        Seed of the inner fold split.

    Attributes
    ----------
    coef_, intercept_ : the hyperplane
    C_ : the cost used (chosen by the inner CV when asked)
    result_ : SolveResult of the final fit
    fit_info_ : dict
        objective (final f), nF, nG1, nG2, serious, null, criticality, cpu_seconds, C, ...
    """

    # the values each key accepts, declared once (``--set`` and the constructor); help from above
    param_spec = ParamSet(method=Choice("dcpca", ("dcpca", "dca")), C_grid=Floats(None, gt=0),
                          inner_folds=Int(5, ge=2, choices=("loo",)), inner_repeats=Int(3, ge=1),
                          max_fev=Int("auto", ge=1, choices=("auto", "medium", "large")),
                          bundle_size=Int(100, ge=1), b2=Choice("current", ("current", "all")))

    def __init__(self, method="dcpca", C=1.0, inner_cv=False, C_grid=None, inner_folds=5, inner_repeats=3,
                 theta=0.7, eta=0.7,
                 m=0.01, sigma=0.01, eps=0.95, max_fev="auto", bundle_size=100, b2="current", solver="highs",
                 max_iter=50, time_limit=None, n_jobs=None, random_state=0, threshold="auto"):
        self.method = method
        self.C = C
        self.inner_cv = inner_cv
        self.C_grid = C_grid
        self.inner_folds = inner_folds
        self.inner_repeats = inner_repeats
        self.theta = theta
        self.eta = eta
        self.m = m
        self.sigma = sigma
        self.eps = eps
        self.max_fev = max_fev
        self.bundle_size = bundle_size
        self.b2 = b2
        self.solver = solver
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.threshold = threshold

    # ------------------------------------------------------------------------------------
    def _fit(self, bags: Bags):
        if parse_bool("inner_cv", self.inner_cv):
            return self._fit_inner_cv(bags)
        return self._fit_one(bags, float(self.C))

    def _fit_one(self, bags: Bags, C: float):
        from milopt.algorithms import dcmil as alg

        if self.method == "dcpca":
            res = alg.dcpca(bags, C=C, theta=float(self.theta), eta=float(self.eta), m=float(self.m),
                            sigma=float(self.sigma), eps=float(self.eps), max_fev=self.max_fev,
                            bundle_size=int(self.bundle_size), b2=str(self.b2), history=False)
        else:
            res = alg.dca(bags, C=C, solver=str(self.solver), max_iter=int(self.max_iter),
                          time_limit=None if self.time_limit is None else float(self.time_limit), history=False)
        if not res.ok:
            raise NoSolutionError(f"dcmil ({self.method}) returned no solution: {res.termination}")
        self.coef_ = np.asarray(res.extra["w"], dtype=float)
        self.intercept_ = float(res.extra["b"])
        self.C_ = C
        self.result_ = res
        ex = res.extra
        info = {"objective": res.objective, "C": C, "termination": str(res.termination), "nF": ex["nF"],
                "nG1": ex["nG1"], "nG2": ex["nG2"], "cpu_seconds": ex["cpu_seconds"], "f0": ex["f0"]}
        if self.method == "dcpca":
            info.update(serious=ex["serious"], null=ex["null"], criticality=ex["criticality"], max_fev=ex["max_fev"],
                        restarts=ex["restarts"])
        else:
            info.update(subproblems=ex["subproblems"], solver_seconds=ex["solver_seconds"])
        self.fit_info_ = info
        return self

    def _fit_inner_cv(self, bags: Bags):
        from sklearn.base import clone
        from sklearn.model_selection import GridSearchCV
        from sklearn.pipeline import Pipeline

        from milopt.estimators.api import BagScaler
        from milopt.numerics import is_standardized

        grid = [float(c) for c in (C_GRID if self.C_grid is None else self.C_grid)]   # declared: costs > 0
        if not grid:
            raise InvalidParameterError("C_grid: expected positive costs (e.g. 0.5,1,2), got none")
        splits = inner_splits(bags.y, self.inner_folds, self.inner_repeats, self.random_state)
        base = clone(self).set_params(inner_cv=False, threshold="zero")
        model, key = base, "C"
        if is_standardized(bags.X):        # each inner fold standardised again on its own training part
            model, key = Pipeline([("scale", BagScaler()), ("model", base)]), "model__C"
        t0 = time.process_time()
        gs = GridSearchCV(model, {key: grid}, cv=splits, n_jobs=self.n_jobs, refit=False, error_score="raise")
        gs.fit(bags, bags.y)
        best = clone(base).set_params(C=grid[int(gs.best_index_)]).fit(bags)
        self.coef_, self.intercept_ = best.coef_, best.intercept_
        self.C_ = best.C_
        self.result_ = best.result_
        self.cv_results_ = {"C": [float(c) for c in grid],
                            "mean_test_score": gs.cv_results_["mean_test_score"].tolist()}
        self.fit_info_ = dict(best.fit_info_, inner_cv_cpu_seconds=time.process_time() - t0,
                              inner_cv_score=float(gs.best_score_))
        return self

    def _auto_rule(self) -> str:
        """``inner-cv`` for DCPCA with a given C; ``training`` for the DCA (one solver QP per
        iteration) and with ``inner_cv`` (a grid search over C in inner folds already)."""
        return "training" if self.method == "dca" or parse_bool("inner_cv", self.inner_cv) else "inner-cv"

    def predict_instances(self, bags) -> np.ndarray:
        bags = self._check_input(bags)
        return bags.X @ self.coef_ + self.intercept_


register_method("dcmil", DCMILClassifier, fixed={"method": "dcpca"},
                doc="DC-MIL (Astorino et al. 2019) by the DCPCA bundle method (native); inner_cv=true picks C")
register_method("dcmil-dca", DCMILClassifier, fixed={"method": "dca"},
                doc="DC-MIL by the plain DC algorithm: one dcmil_dca QP per iteration through the driver")
