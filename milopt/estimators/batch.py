r"""Batch-wise classifiers of Vural et al. (JMLR 2009): BatchSVM, BatchSVM_cont, BatchProb, PSVM, BatchPSVM.

V. Vural, G. Fung, B. Krishnapuram, J. G. Dy, B. Rao, "Using local dependencies within batches to
improve large margin classifiers", JMLR 10 (2009); equation and section numbers refer to it.
PSVM: G. Fung, O. L. Mangasarian, "Proximal support vector machine classifiers", KDD 2001.

``milopt fit`` names (all need instance coordinates ``Bags.coords`` except ``psvm`` and
``svm-l1``; the CLI refuses the others on data without coordinates before fitting):

============================  ==========================================================
``batchsvm``                  BatchSVM LP (eq. 4) with the thresholded R of eq. 13, HiGHS
``batchsvm-cont``             BatchSVM LP with continuous R_pq = exp(-α S_pq)
``batchprob``                 BatchProb LP (eq. 12) with V = R(R + σ²I)^{-1}
``psvm``                      proximal SVM (Fung & Mangasarian), θ = 0
``batchpsvm``                 BatchPSVM (eq. 6), one linear system for given θ
``batchpsvm-learned``         BatchPSVM with θ learned by the alternating algorithm (eq. 7)
``svm-l1``                    1-norm SVM LP (eq. 1 = BatchSVM with θ = 0), no coordinates
============================  ==========================================================

**Batch classification.**  A bag is a *batch* (an image); every instance (candidate) has a
label.  Training uses ``Bags.instance_y`` when present; data without instance labels (MUSK)
use the bag label copied to every instance.  Prediction is batch-wise: with the linear
pre-classifier :math:`f = Bw - e\gamma`, an instance's score is
:math:`((\theta R^j + I) f^j)_p` (eq. 5; BatchSVM/BatchPSVM) or :math:`(V^j f^j)_p` (eq. 11;
BatchProb), computed from the coordinates of the batch being predicted.
``predict_instances`` returns these scores; ``decision_function``/``predict`` give bag
(image) scores and labels, the image score being the maximum of its batch-wise candidate
scores (an image is flagged when any candidate is marked); ``score`` returns the
**instance-level AUC** when instance labels exist (so that ``GridSearchCV`` tunes θ, α, σ
for the candidate-level task), bag accuracy otherwise.

**Coordinates as features for the baselines (Section 5.2).**  The paper gives its SVM and
PSVM baselines the candidates' coordinates as extra features ("to make fair comparisons ...
we added the spatial locations ... to the feature vectors"), while the batch methods use them
only through R.  ``append_coords="auto"`` (default) does the same: a model that does not use R
(θ = 0 and θ not learned: ``svm-l1``, ``psvm``, ``batchsvm``/``batchpsvm`` with ``theta=0``)
appends the coordinates, standardised with the training images' mean and standard
deviation, to the features when the data have coordinates; ``true`` forces it (coordinates
then required), ``false`` never appends.  ``coef_`` then has the coordinate weights last.

**Class weights** (not in the paper).  ``class_weight="none"`` (default) is eqs. 4, 6, 7 and 12
as printed.  CAD data are very imbalanced (a few per cent positive candidates), and then the
unweighted 1-norm SVM LP can return w = 0 (measured on ``gen:cad`` with θ = 0: every candidate
negative); ``class_weight="balanced"`` weights the slack costs / squared residuals by
m / (2 m_class).
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, NoSolutionError
from milopt.estimators.base import MILClassifier, as_bags
from milopt.estimators.registry import register_method
from milopt.params import Float, Param, ParamSet

__all__ = ["BatchSVMClassifier", "BatchProbClassifier", "BatchPSVMClassifier", "LearnedThetaBatchPSVM"]


def _models():
    from milopt.models import batchprob_lp, batchsvm_lp

    return batchsvm_lp, batchprob_lp


#: ``append_coords``: auto, true or false (see :class:`BatchSVMClassifier`)
_APPEND = Param("bool", "auto", choices=("auto",))


class _declared:
    """Class attribute ``param_spec`` of a batch estimator: the declarations of ``keys`` by the
    LP module ``which`` (``"svm"``: batchsvm_lp, ``"prob"``: batchprob_lp; read when first
    needed) with ``append_coords`` and ``extra``."""

    def __init__(self, which: str, keys, **extra):
        self.which, self.keys, self.extra, self.spec = which, tuple(keys), extra, None

    def __get__(self, obj, cls):
        if self.spec is None:
            svm, prob = _models()
            mod = svm if self.which == "svm" else prob
            self.spec = ParamSet({k: mod.PARAMS[k] for k in self.keys}, self.extra, append_coords=_APPEND)
        return self.spec


class _BatchClassifier(MILClassifier):
    """Shared machinery: linear pre-classifier + batch operator at prediction time."""

    instance_threshold_ = 0.0
    #: LPs and linear systems through a solver: ``threshold='auto'`` chooses on the training scores
    threshold_rule = "training"

    def _needs_coords(self) -> bool:
        return True

    def _check_coords(self, bags: Bags, what: str):
        if self._needs_coords() and bags.coords is None:
            M, _ = _models()
            raise InvalidDataError(f"{type(self).__name__} ({what}): {M.NO_COORDS_MSG}")

    def _operator(self, bags: Bags):  # pragma: no cover - abstract
        raise NotImplementedError

    def _uses_R(self) -> bool:
        return True

    def _decide_append(self, bags: Bags) -> bool:
        mode = getattr(self, "append_coords", False)     # declared: auto, true or false
        if isinstance(mode, str):                         # auto: the paper's baselines (Section 5.2)
            return (not self._uses_R()) and bags.coords is not None
        if mode and bags.coords is None:
            M, _ = _models()
            raise InvalidDataError(f"{type(self).__name__} (append_coords=true): {M.NO_COORDS_MSG}")
        return bool(mode)

    def _fit_features(self, bags: Bags) -> Bags:
        """Training bags with the standardised coordinates appended when ``append_coords`` says so."""
        self.coords_appended_ = self._decide_append(bags)
        if not self.coords_appended_:
            return bags
        C = np.asarray(bags.coords, dtype=float)
        self.coord_mean_ = C.mean(axis=0)
        sd = C.std(axis=0)
        self.coord_scale_ = np.where(sd > 0, sd, 1.0)
        return bags.with_X(np.hstack([bags.X, (C - self.coord_mean_) / self.coord_scale_]))

    def _features(self, bags: Bags) -> np.ndarray:
        if not getattr(self, "coords_appended_", False):
            return bags.X
        if bags.coords is None:
            M, _ = _models()
            raise InvalidDataError(f"{type(self).__name__} (predict; fitted with coordinates appended to the "
                                   f"features): {M.NO_COORDS_MSG}")
        return np.hstack([bags.X, (np.asarray(bags.coords, dtype=float) - self.coord_mean_) / self.coord_scale_])

    def pre_scores(self, bags) -> np.ndarray:
        """Instance-wise pre-classifier values f = X w - γ (no batch information)."""
        bags = self._check_input(bags)
        return self._features(bags) @ self.coef_ - self.gamma_

    def predict_instances(self, bags) -> np.ndarray:
        """Batch-wise instance scores (eq. 5 / eq. 11): the batch operator applied to f."""
        bags = self._check_input(bags)
        self._check_coords(bags, "predict")
        f = self._features(bags) @ self.coef_ - self.gamma_
        return np.asarray(self._operator(bags) @ f).ravel()

    def predict_instance_labels(self, bags) -> np.ndarray:
        """0/1 instance labels from the batch-wise scores."""
        return (self.predict_instances(bags) > self.instance_threshold_).astype(int)

    def _check_degenerate(self, bags: Bags) -> None:
        """Batch classifiers are candidate detectors: with instance labels, the degenerate-model
        check is on the training instances (every candidate one class, or one score)."""
        if bags.instance_y is None:
            return super()._check_degenerate(bags)
        import warnings

        from milopt.errors import DegenerateModelWarning
        from milopt.metrics import degenerate

        s = self.predict_instances(bags)
        why = degenerate((s > self.instance_threshold_).astype(int), s, np.array([0, 1]), unit="instance")
        self.degenerate_ = why
        if why:
            warnings.warn(f"{type(self).__name__}: degenerate model: {why} on the training bags; its predictions "
                          "carry no information (try class_weight='balanced' or another nu)", DegenerateModelWarning,
                          stacklevel=3)

    def score(self, bags, y=None):
        """Instance-level AUC when ``bags.instance_y`` exists, else bag accuracy."""
        bags = as_bags(bags, y)
        if bags.instance_y is not None and np.unique(bags.instance_y).size == 2:
            from sklearn.metrics import roc_auc_score

            return float(roc_auc_score(bags.instance_y, self.predict_instances(bags)))
        return super().score(bags)

    @property
    def intercept_(self) -> float:
        return -self.gamma_


# --------------------------------------------------------------------------- LPs
class BatchSVMClassifier(_BatchClassifier):
    """BatchSVM (Vural et al. eq. 4/5): the 1-norm SVM LP with batch constraints, solved by the driver.

    Parameters
    ----------
    nu : float
        Slack cost ν.
    theta : float
        Neighbour weight θ; 0 gives the plain 1-norm SVM (no coordinates needed).
    alpha : float
        Similarity decay α (thresholded: neighbours within distance 4/α).
    thresholded : bool
        R of eq. 13 (0/1) or continuous exp(-α S) (BatchSVM_cont).
    distance : {'euclidean', 'squared'}
        S_pq: Euclidean distance (Section 3.2) or its square (``squared``, alias
        ``sqeuclidean``: the similarity exp(-α‖r_p - r_q‖²) of Section 5.1.1, ζ² = 1/α).
    class_weight : {'none', 'balanced'}
    solver : str
        LP backend (``highs`` default; ``scip`` works too).
    time_limit : float
        Seconds for building and solving the LP (``milopt.solvers.pipeline.build_and_solve``).
    append_coords : {'auto', True, False}
        Append the (standardised) coordinates to the features; ``auto``: only when θ = 0
        (the paper's SVM baseline, Section 5.2) and the data have coordinates.
    """

    param_spec = _declared("svm", ("nu", "theta", "alpha", "thresholded", "distance", "class_weight"))

    def __init__(self, nu=1.0, theta=1.0, alpha=0.5, thresholded=True, distance="euclidean",
                 class_weight="none", solver="highs", time_limit=120.0, append_coords="auto", threshold="auto"):
        self.nu = nu
        self.theta = theta
        self.alpha = alpha
        self.thresholded = thresholded
        self.distance = distance
        self.class_weight = class_weight
        self.solver = solver
        self.time_limit = time_limit
        self.append_coords = append_coords
        self.threshold = threshold

    def _needs_coords(self) -> bool:
        return float(self.theta_ if hasattr(self, "theta_") else self.theta) != 0.0

    def _uses_R(self) -> bool:
        return float(self.theta) != 0.0

    def _problem(self) -> tuple[str, dict]:
        """The formulation this estimator solves and its parameters."""
        return "batchsvm-lp", dict(nu=self.nu, theta=self.theta, alpha=self.alpha, thresholded=self.thresholded,
                                   distance=self.distance, class_weight=self.class_weight)

    def _fit(self, bags: Bags):
        from milopt.models import formulation
        from milopt.solvers.pipeline import build_and_solve

        self._check_coords(bags, "fit")
        name, params = self._problem()
        form = formulation(name)
        run = build_and_solve(form, self._fit_features(bags), form.validate(params), self.solver,
                              time_limit=self.time_limit, warm_start=False)  # T covers the build and the solve
        res = run.result
        if not res.ok:
            raise NoSolutionError(f"{self.solver} returned no solution for the batch LP ({res.termination}); "
                                  "raise time_limit")
        sol = form.decode(run.model)
        self.coef_ = sol["w"]
        self.gamma_ = sol["gamma"]
        self._store_params()
        self.result_ = res
        self.labels_source_ = sol["labels"]
        self.fit_info_ = {"objective": res.objective, "termination": str(res.termination),
                          "solve_seconds": run.solve_seconds, "build_seconds": run.build_seconds,
                          "nonzero_weights": int(np.sum(np.abs(self.coef_) > 1e-9)), "labels": sol["labels"],
                          "coords_appended": bool(self.coords_appended_)}
        return self

    def _store_params(self):
        self.theta_ = float(self.theta)

    def _operator(self, bags: Bags):
        M, _ = _models()
        return M.batch_operator(bags, self.theta_, self.alpha, self.thresholded, self.distance)


class BatchProbClassifier(BatchSVMClassifier):
    """BatchProb (Vural et al. eq. 12/11): the LP with V = R(R + σ²I)^{-1}, solved by the driver.

    Parameters
    ----------
    nu : float
        Slack cost ν.
    alpha : float
        Prior covariance decay α of R = exp(-α S) (unit diagonal).
    sigma : float
        Observation noise σ > 0 (small σ: trust the neighbours more).
    distance, class_weight, solver, time_limit, append_coords : see :class:`BatchSVMClassifier`
        (``append_coords="auto"`` never appends here: BatchProb always uses R).
    """

    param_spec = _declared("prob", ("nu", "alpha", "sigma", "distance", "class_weight"))

    def __init__(self, nu=1.0, alpha=0.5, sigma=1.0, distance="euclidean", class_weight="none", solver="highs",
                 time_limit=120.0, append_coords="auto", threshold="auto"):
        self.nu = nu
        self.alpha = alpha
        self.sigma = sigma
        self.distance = distance
        self.class_weight = class_weight
        self.solver = solver
        self.time_limit = time_limit
        self.append_coords = append_coords
        self.threshold = threshold

    def _needs_coords(self) -> bool:
        return True

    def _uses_R(self) -> bool:
        return True

    def _problem(self) -> tuple[str, dict]:
        return "batchprob-lp", dict(nu=self.nu, alpha=self.alpha, sigma=self.sigma, distance=self.distance,
                                    class_weight=self.class_weight)

    def _store_params(self):
        pass

    def _operator(self, bags: Bags):
        _, Q = _models()
        return Q.posterior_operator(bags, self.alpha, self.sigma, self.distance)


# --------------------------------------------------------------------------- proximal
class BatchPSVMClassifier(_BatchClassifier):
    """BatchPSVM (eq. 6) / PSVM (θ = 0) / BatchPSVM with learned θ (eq. 7), one linear system per θ.

    Parameters
    ----------
    nu : float
        Weight ν of the squared residuals.
    theta : float
        θ (``learn_theta=False``) or the starting θ of the alternating algorithm.
    alpha : float
        Similarity decay α.
    thresholded : bool
        R of eq. 13 (0/1) or continuous.
    distance : {'euclidean', 'squared'}
        See :class:`BatchSVMClassifier`.
    class_weight : {'none', 'balanced'}
        Residual weights (see module docstring).
    learn_theta : bool
        Learn θ by alternating minimisation of eq. 7 (Section 3.3 / Appendix A.2).
    max_iter : int
        Alternations at most.
    tol : float
        Convergence tolerance on θ (relative).
    append_coords : {'auto', True, False}
        See :class:`BatchSVMClassifier` (``auto``: the PSVM baseline, θ = 0 and not learned).
    """

    # θ of eq. 7 may be any finite number (the LP's θ >= 0 does not apply)
    param_spec = _declared("svm", ("nu", "distance", "class_weight"), theta=Float(1.0))

    def __init__(self, nu=1.0, theta=1.0, alpha=0.5, thresholded=True, distance="euclidean", class_weight="none",
                 learn_theta=False, max_iter=500, tol=1e-6, append_coords="auto", threshold="auto"):
        self.nu = nu
        self.theta = theta
        self.alpha = alpha
        self.thresholded = thresholded
        self.distance = distance
        self.class_weight = class_weight
        self.learn_theta = learn_theta
        self.max_iter = max_iter
        self.tol = tol
        self.append_coords = append_coords
        self.threshold = threshold

    def _needs_coords(self) -> bool:
        if hasattr(self, "theta_"):
            return self.theta_ != 0.0
        return bool(self.learn_theta) or float(self.theta) != 0.0

    def _uses_R(self) -> bool:
        return bool(self.learn_theta) or float(self.theta) != 0.0

    def _fit(self, bags: Bags):
        from milopt.algorithms.batchpsvm import fit_batchpsvm

        M, _ = _models()
        self._check_coords(bags, "fit")
        fb = self._fit_features(bags)
        d, src = M.training_labels(bags)
        weights = M.class_costs(d, 1.0, self.class_weight)
        R = None
        if self._needs_coords():
            R = M.similarity(bags, self.alpha, self.thresholded, self.distance)
        w, gamma, theta, res = fit_batchpsvm(fb.X, d, R, nu=float(self.nu),
                                             theta=float(self.theta), learn_theta=bool(self.learn_theta),
                                             max_iter=self.max_iter, tol=self.tol, weights=weights)
        self.coef_, self.gamma_, self.theta_ = w, gamma, float(theta)
        self.result_ = res
        self.labels_source_ = src
        self.fit_info_ = {"objective": res.objective, "theta": self.theta_, "iterations": int(res.iterations or 0),
                          "termination": str(res.termination), "solve_seconds": res.wall_time, "labels": src,
                          "coords_appended": bool(self.coords_appended_)}
        if self.learn_theta:  # the θ loop: how many updates, and whether it met tol or hit max_iter
            ex = res.extra
            self.fit_info_.update({"theta_iterations": int(ex["theta_iterations"]),
                                   "theta_converged": bool(ex["theta_converged"]),
                                   "theta_step": float(ex["theta_step"])})
        return self

    def _operator(self, bags: Bags):
        M, _ = _models()
        return M.batch_operator(bags, self.theta_, self.alpha, self.thresholded, self.distance)


class LearnedThetaBatchPSVM(BatchPSVMClassifier):
    """BatchPSVM with θ learned (eq. 7); ``theta`` is the starting value (0: start from PSVM)."""

    def __init__(self, nu=1.0, theta=0.0, alpha=0.5, thresholded=True, distance="euclidean", class_weight="none",
                 learn_theta=True, max_iter=500, tol=1e-6, append_coords="auto", threshold="auto"):
        super().__init__(nu=nu, theta=theta, alpha=alpha, thresholded=thresholded, distance=distance,
                         class_weight=class_weight, learn_theta=learn_theta, max_iter=max_iter, tol=tol,
                         append_coords=append_coords, threshold=threshold)


register_method("batchsvm", BatchSVMClassifier, fixed={"thresholded": True}, needs=("coords",),
                doc="BatchSVM (Vural et al. 2009, eq. 4): 1-norm SVM LP with thresholded neighbour constraints "
                    "(HiGHS); theta=0 is the 1-norm SVM")
register_method("svm-l1", BatchSVMClassifier, fixed={"theta": 0.0},
                doc="1-norm SVM LP on instances (Vural et al. eq. 1 = BatchSVM with theta=0); instance labels, "
                    "or bag labels copied to instances; no coordinates needed")
register_method("batchsvm-cont", BatchSVMClassifier, fixed={"thresholded": False}, needs=("coords",),
                doc="BatchSVM_cont: BatchSVM LP with continuous R = exp(-alpha S)")
register_method("batchprob", BatchProbClassifier, needs=("coords",),
                doc="BatchProb (Vural et al. eq. 12): LP with the Gaussian-posterior operator V = R(R+sigma^2 I)^-1")
register_method("psvm", BatchPSVMClassifier, fixed={"theta": 0.0, "learn_theta": False},
                doc="proximal SVM (Fung & Mangasarian 2001) on instances: one linear system")
register_method("batchpsvm", BatchPSVMClassifier, fixed={"learn_theta": False}, needs=("coords",),
                doc="BatchPSVM (Vural et al. eq. 6) for a given theta: one linear system")
register_method("batchpsvm-learned", LearnedThetaBatchPSVM, fixed={"learn_theta": True}, needs=("coords",),
                doc="BatchPSVM with theta learned by alternating minimisation (eq. 7)")
