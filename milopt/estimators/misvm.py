"""MI-SVM estimator solved exactly as a mixed-integer program (``milopt fit misvm-miqp``)."""
from __future__ import annotations

import time

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError, positive_number
from milopt.estimators.base import MILClassifier
from milopt.estimators.registry import register_method


def sil_start(bags: Bags, C: float = 1.0, random_state=0):
    """Cheap feasible point: a linear SVM on instances with bag labels copied (liblinear)."""
    from sklearn.svm import LinearSVC

    y = bags.instance_bag_y
    clf = LinearSVC(C=C, loss="squared_hinge", dual=False, max_iter=2000, random_state=random_state,
                    class_weight="balanced").fit(bags.X, y)
    return clf.coef_.ravel().copy(), float(clf.intercept_[0])


class MISVMClassifier(MILClassifier):
    """MI-SVM (one witness per positive bag; Andrews et al. 2002) as Kent & Yu's big-M MIQP.

    Parameters
    ----------
    C : float
        Bag slack cost.
    method : {'miqp'}
        ``miqp``: the ``misvm_bigm`` model through the solver driver.
    solver : str
        Backend name (must handle MIQP; ``scip`` by default).
    time_limit : float
        Seconds per solve; the incumbent is used when it is hit.
    mip_gap : float, optional
    class_weight : {'kent-yu', 'balanced', 'none'}
    big_m : 'valid' | 'mildsvm' | float
    warm_start : bool
        Start from a linear SVM on instances (also tightens the valid big-M with its objective).
    threads : int, optional
    random_state : int
    """

    def __init__(self, C=1.0, method="miqp", solver="scip", time_limit=60.0, mip_gap=None, class_weight="kent-yu",
                 big_m="valid", warm_start=True, threads=None, random_state=0):
        self.C = C
        self.method = method
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.class_weight = class_weight
        self.big_m = big_m
        self.warm_start = warm_start
        self.threads = threads
        self.random_state = random_state

    def _fit(self, bags: Bags):
        from milopt.models import misvm_bigm as mod
        from milopt.solvers import solve

        if self.method != "miqp":
            raise InvalidParameterError(f"method: expected 'miqp', got {self.method!r} "
                                        "(the alternating heuristic is milopt fit misvm-heuristic)")
        positive_number("C", self.C)
        t_start = time.perf_counter()  # time_limit covers the start, the build and the solve
        ub = None
        start = None
        if self.warm_start:
            start = sil_start(bags, C=self.C, random_state=self.random_state)
            ub = mod.objective_value(bags, start[0], start[1], self.C, self.class_weight)
        model = mod.build(bags, C=self.C, class_weight=self.class_weight, big_m=self.big_m, upper_bound=ub)
        if start is not None:
            mod.warm_start(model, *start)
        limit, res = self.time_limit, None
        if limit is not None:
            from milopt.solvers.budget import remaining_or_expired

            limit, res = remaining_or_expired(float(limit), t_start, self.solver)
        if res is None:
            res = solve(model, self.solver, time_limit=limit, mip_gap=self.mip_gap, threads=self.threads,
                        warm_start=start is not None)
        if res.ok:
            sol = mod.decode(model)
            self.coef_, self.intercept_ = sol["w"], sol["b"]
            self.witnesses_ = sol["witnesses"]
        elif start is not None:
            self.coef_, self.intercept_ = start
            self.witnesses_ = {}
        else:
            from milopt.errors import NoSolutionError

            raise NoSolutionError(f"{self.solver} found no solution in {self.time_limit} s "
                                  f"({res.termination}); raise time_limit or enable warm_start")
        self.result_ = res
        self.fit_info_ = {"objective": res.objective if res.objective is not None else float("nan"),
                          "bound": res.bound if res.bound is not None else float("nan"),
                          "gap": res.gap, "termination": str(res.termination), "solve_seconds": res.wall_time}
        return self

    def predict_instances(self, bags) -> np.ndarray:
        bags = self._check_input(bags)
        return bags.X @ self.coef_ + self.intercept_


register_method("misvm-miqp", MISVMClassifier, fixed={"method": "miqp"},
                doc="MI-SVM as Kent & Yu's big-M MIQP (misvm_bigm) through the solver driver")
