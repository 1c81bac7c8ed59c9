"""Alternating MI-SVM / mi-SVM heuristics, SIL baselines, support measure machines (mi-SMM,
si-SMM) and Kent & Yu's Nyström + MIQP method, as scikit-learn style estimators.

``milopt fit`` names (keys settable with ``--set``: the constructor parameters):

=====================  ===========================================================================
``sil``                SVM on instances with the bag label copied; bag score = max (baseline)
``misvm-heuristic``    MI-SVM alternation (Andrews et al.; Kent & Yu Algorithm 1), linear or RBF
``mi-svm-heuristic``   mi-SVM alternation (Andrews et al.): instance labels imputed
``misvm-summary``      MI-SVM heuristic on summary features of distributional instances
``mismm-heuristic``    Algorithm 1 with the kernel mean embedding (SMM) kernel
``sismm``              single-instance SMM (SIL with the SMM kernel)
``mismm-miqp``         Kent & Yu Algorithm 2: stratified Nyström features + ``misvm_bigm`` on SCIP,
                       warm started from the heuristic
=====================  ===========================================================================

The SMM methods need distributional instances (``Bags.samples``, e.g. ``gen:kent-yu``) and
standardise the sample points with training statistics themselves (``scale_samples``).
"""
from __future__ import annotations

import time

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, InvalidParameterError, NoSolutionError
from milopt.estimators.base import MILClassifier
from milopt.estimators.registry import register_method
from milopt.mil.alternation import INITS, SOLVERS
from milopt.params import AUTO_C, Choice, Int, ParamSet
from milopt.features.kernels import check_kernel, kernel_matrix, mean_embedding_kernel
from milopt.features.summary import summary_features

__all__ = ["SILClassifier", "SISMMClassifier", "MISVMHeuristic", "MISMMHeuristic", "MISVMSummary",
           "MiSVMHeuristic", "MISMMMIQP"]

SUMMARY_CHOICES = (None, "none", "univ1", "univ2", "univ1+cor", "univ2+cor")

# the keys whose values these estimators restrict, declared once (``milopt fit --set`` and the
# constructors accept the same values; help text from the class docstrings)
_SUMMARY = Choice(None, SUMMARY_CHOICES[2:])
_SLACK_COSTS = ("kent-yu", "balanced", "none")                    # milopt.numerics.slack_costs


def _summary_rule(values: dict) -> None:
    """The rule between two keys (``param_rules``): summary features replace the SMM kernel."""
    if values.get("distributional") and values.get("summary") not in (None, "none"):
        raise InvalidParameterError("summary: not used with the SMM kernel (distributional=True)")


def _need_samples(bags: Bags, who: str):
    if bags.samples is None:
        raise InvalidDataError(f"{who}: needs distributional instances (a sample of points per instance, "
                               "Bags.samples), e.g. --data 'gen:kent-yu?scenario=1'; this data set has none "
                               "(use misvm-heuristic / sil for plain vectors)")


class _KernelMIL(MILClassifier):
    """Shared representation logic: vectors, summary features, or distributions (SMM kernel)."""

    distributional = False
    summary = None
    param_spec = ParamSet(summary=_SUMMARY)
    param_rules = (_summary_rule,)

    # ---------------------------------------------------------------- training side
    def _prepare(self, bags: Bags):
        """Kernel matrix of the training instances; stores what prediction needs."""
        from sklearn.preprocessing import StandardScaler

        summ = None if self.summary in (None, "none") else self.summary
        self.summary_ = summ
        self.distributional_ = bool(self.distributional)
        if self.distributional_:
            _need_samples(bags, type(self).__name__)
            S = bags.samples
            self.scaler_ = StandardScaler().fit(S) if self.scale_samples else None
            S = self.scaler_.transform(S) if self.scaler_ is not None else S
            self.kernel_, self.gamma_ = check_kernel(self.kernel, self.gamma, S.shape[1], S)
            K = mean_embedding_kernel(S, bags.sample_ptr, kernel=self.kernel_, gamma=self.gamma_)
            self._train = ("samples", S, bags.sample_ptr)
            return K, None
        if summ is not None:
            _need_samples(bags, f"summary={summ}")
            stats, cor = summ.split("+")[0], summ.endswith("+cor")
            F, _ = summary_features(bags.samples, bags.sample_ptr, stats, cor)
            self.scaler_ = StandardScaler().fit(F)
            X = self.scaler_.transform(F)
        else:
            self.scaler_ = None
            X = bags.X
        self.kernel_, self.gamma_ = check_kernel(self.kernel, self.gamma, X.shape[1], X)
        self._train = ("vectors", X, None)
        K = None if self.kernel_ == "linear" and X.shape[0] > 2500 else kernel_matrix(X, None, self.kernel_, self.gamma_)
        return K, X

    def _store(self, coef, b):
        """Keep the support (coef = α_i y_i per training instance, zeros dropped) and b."""
        coef = np.asarray(coef, dtype=float)
        nz = np.flatnonzero(coef != 0)
        kind, A, ptr = self._train
        self.intercept_ = float(b)
        self.n_support_ = int(nz.size)
        if kind == "vectors" and self.kernel_ == "linear":
            self.coef_ = A[nz].T @ coef[nz]
            self.support_ = None
        elif kind == "vectors":
            self.support_ = (A[nz], None)
            self.dual_coef_ = coef[nz]
        else:
            sizes = np.diff(ptr)[nz]
            starts = ptr[nz]
            rows = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes) + np.arange(sizes.sum())
            self.support_ = (A[rows], np.concatenate(([0], np.cumsum(sizes))))
            self.dual_coef_ = coef[nz]
        del self._train

    # -------------------------------------------------------------- prediction side
    def _represent(self, bags: Bags):
        if self.distributional_:
            _need_samples(bags, type(self).__name__)
            S = self.scaler_.transform(bags.samples) if self.scaler_ is not None else bags.samples
            return S, bags.sample_ptr
        if self.summary_ is not None:
            _need_samples(bags, f"summary={self.summary_}")
            stats, cor = self.summary_.split("+")[0], self.summary_.endswith("+cor")
            F, _ = summary_features(bags.samples, bags.sample_ptr, stats, cor)
            return self.scaler_.transform(F), None
        return bags.X, None

    def _check_input(self, bags) -> Bags:
        from sklearn.utils.validation import check_is_fitted

        from milopt.estimators.base import as_bags

        check_is_fitted(self, "intercept_")
        bags = as_bags(bags)
        if bags.n_features != self.n_features_in_:
            raise InvalidDataError(f"bags: have {bags.n_features} features, the model was fitted on {self.n_features_in_}")
        return bags

    def predict_instances(self, bags) -> np.ndarray:
        bags = self._check_input(bags)
        A, ptr = self._represent(bags)
        if getattr(self, "coef_", None) is not None and self.support_ is None:
            return A @ self.coef_ + self.intercept_
        if self.n_support_ == 0:
            return np.full(bags.n_instances, self.intercept_)
        SV, sptr = self.support_
        if self.distributional_:
            Kx = mean_embedding_kernel(A, ptr, SV, sptr, kernel=self.kernel_, gamma=self.gamma_)
        else:
            Kx = kernel_matrix(A, SV, self.kernel_, self.gamma_)
        return Kx @ self.dual_coef_ + self.intercept_


# ----------------------------------------------------------------------------- SIL
class SILClassifier(_KernelMIL):
    """Single-instance learning baseline: an SVM (libsvm) on instances with the bag label copied.

    Parameters
    ----------
    C : float or 'auto'
        Cost per unit of instance weight.  Default 'auto': the value of
        :data:`milopt.params.AUTO_C_GRID` (0.1, 1, 10) whose models, fitted on the inner folds
        of the decision rule, best separate their held-out bags
        (``MILClassifier._choose_C``; 9 extra fits on two thirds of
        the bags instead of 3).  Why not a constant: the cost is summed over instances, so the
        right C moves with the bag size and the noise, and in opposite directions across data
        (nested CV chose C = 10 in 3 of 3 folds on 60 bags of 2-8 digits, C = 0.1 in 2 of 3
        on 40 bags of 30-60; with C = 1 the held-out balanced accuracy there was 0.849 against
        0.921 tuned), docs/results.md, "Unseen data".
    kernel : {'rbf', 'linear'}
        Default 'rbf' (with gamma = 'scale', 1/(n_features · X.var()), which is 1/n_features on
        standardised features): on MUSK1 (10-fold CV, seed 0) the linear
        default scored 0.761 against 0.857 for the nested-CV figure over C with RBF, the RBF
        default 0.847 (docs/results.md, "Defaults against tuning").
    gamma : float or 'scale' or 'auto', optional
        RBF width (default 'scale' = 1/(n_features · X.var()); 'auto' = 1/n_features).
    class_weight : {'balanced', 'balanced-instances', 'none'}
        Instance cost multipliers: 'balanced' (default) is scikit-learn's meaning over bags,
        each instance weighing n_bags / (2 · n_bags of its bag's class); 'balanced-instances'
        is scikit-learn's over the instances (negative instances outnumber positive ones in
        most MIL data, so this one pushes every score up and, with the max rule, tends to call
        every bag positive); 'none': C for every instance.
    distributional : bool
        Use the SMM kernel on the instances' samples (si-SMM).
    summary : {None, 'univ1', 'univ2', 'univ1+cor', 'univ2+cor'}
        Replace instances by summary features of their samples.
    scale_samples : bool
        Standardise sample points (or summary features) with training statistics.
    tol : float
    random_state : int
    """

    param_spec = ParamSet(C=AUTO_C, summary=_SUMMARY,
                          class_weight=Choice("balanced", ("balanced", "balanced-instances", "none"), none=True))

    def __init__(self, C="auto", kernel="rbf", gamma="scale", class_weight="balanced", distributional=False, summary=None,
                 scale_samples=True, tol=1e-3, random_state=0, threshold="auto"):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.class_weight = class_weight
        self.distributional = distributional
        self.summary = summary
        self.scale_samples = scale_samples
        self.tol = tol
        self.random_state = random_state
        self.threshold = threshold

    def _fit(self, bags: Bags):
        from sklearn.svm import SVC

        from milopt.estimators.base import class_weights

        t0 = time.perf_counter()
        K, X = self._prepare(bags)
        y = bags.instance_bag_y
        cw = "balanced" if self.class_weight == "balanced-instances" else None
        sw = None
        if self.class_weight == "balanced":
            sw = class_weights(bags.y, "balanced")[bags.bag_index]
        if K is None:
            clf = SVC(C=self.C_, kernel="linear", class_weight=cw, tol=self.tol, cache_size=1000).fit(X, y,
                                                                                                    sample_weight=sw)
            coef = np.zeros(y.size)
            coef[clf.support_] = clf.dual_coef_[0]
        else:
            clf = SVC(C=self.C_, kernel="precomputed", class_weight=cw, tol=self.tol).fit(K, y, sample_weight=sw)
            coef = np.zeros(y.size)
            coef[clf.support_] = clf.dual_coef_[0]
        self._store(coef, clf.intercept_[0])
        self.fit_info_ = {"support_vectors": self.n_support_, "seconds": time.perf_counter() - t0}
        return self


class SISMMClassifier(SILClassifier):
    """si-SMM: SIL with the kernel mean embedding (support measure machine) kernel (Kent & Yu's baseline)."""

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", class_weight="balanced", distributional=True, summary=None,
                 scale_samples=True, tol=1e-3, random_state=0, threshold="auto"):
        super().__init__(C=C, kernel=kernel, gamma=gamma, class_weight=class_weight, distributional=distributional,
                         summary=summary, scale_samples=scale_samples, tol=tol, random_state=random_state,
                         threshold=threshold)


# ------------------------------------------------------------------------- MI-SVM
def _scale_count(bags: Bags, class_weight, slack: str = "bag") -> int:
    """The number C is divided by under ``scale_C``: the bags when ``class_weight='balanced'``
    weighs bag slacks (its weights n/(2 n_k) are over bags, so each class's total cost is C/2);
    otherwise the effective set, negative instances + positive bags (the misvm package)."""
    if class_weight == "balanced" and slack == "bag":
        return int(bags.n_bags)
    return int(np.sum(bags.instance_bag_y == 0) + bags.positive_bags)


class MISVMHeuristic(_KernelMIL):
    """MI-SVM by alternation (Andrews et al. 2002; Kent & Yu Algorithm 1).

    With ``class_weight='none'`` the defaults (bag slacks, ``scale_C``) are the problem the misvm
    package solves; Kent & Yu's weighting is ``class_weight='kent-yu', scale_C=False`` (the defaults of
    the mi-SMM estimators).

    Parameters
    ----------
    C : float
        Slack cost before class weighting.
    kernel : {'linear', 'rbf'}
    gamma : float, optional
        RBF width ``exp(-gamma |x-y|^2)`` (default 'scale' = 1/(n_features · X.var()), see
        :func:`milopt.features.kernels.check_kernel`; 'auto' = 1/n_features).
    slack : {'instance', 'bag'}
        One slack per negative instance (Andrews) or per negative bag (Kent & Yu).
    class_weight : {'kent-yu', 'balanced', 'none'}
        Slack costs (see :func:`milopt.algorithms.mi_heuristics.slack_costs`).
    init : {'centroid', 'sil', 'first', 'random'}
        First start's witnesses; further starts are random.
    restarts : int
        Number of starts (best objective kept; default 3: the centroid start and two random ones,
        which lifted MUSK1 at C = 10 from 0.803 to 0.836 in 10-fold CV under the former ``scale_C``
        count; with C/2 per class one start gives 0.826 and three 0.803, docs/results.md).
    max_iter : int
        Alternation limit per start.
    solver : {'auto', 'smo', 'ipm', 'libsvm'}
        Convex subproblem solver (see :func:`~milopt.algorithms.mi_heuristics.misvm_alternate`).
    tol : float
        Subproblem KKT tolerance.
    distributional : bool
        SMM kernel on the samples of distributional instances (mi-SMM).
    summary : {None, 'univ1', 'univ2', 'univ1+cor', 'univ2+cor'}
        Summary features of distributional instances (Kent & Yu's mi-SVM baselines).
    scale_samples : bool
    scale_C : bool
        Divide C by the number of samples: with ``class_weight='balanced'`` and bag slacks the
        samples are the bags (the weights' samples), so every class carries a total cost C/2
        (each bag of class k costs C/(2 n_k)); otherwise the size of the effective set (negative
        instances + positive bags), the convention of the misvm package (``scale_C=True`` there
        by default).  Why not the effective set with balanced weights: on MUSK2 (5,581 negative
        instances in 63 bags) it leaves each bag a cost of about 2·10⁻⁴; the balanced weights give
        both classes the same total, so every slack sits at its cap, w is a weighted difference of
        class means and the intercept is left undetermined (measured in docs/misvm_heuristics.md).
    random_state : int
    """

    param_spec = ParamSet(C=AUTO_C, summary=_SUMMARY, slack=Choice("bag", ("instance", "bag")),
                          class_weight=Choice("balanced", _SLACK_COSTS, none=True), init=Choice("centroid", INITS),
                          solver=Choice("auto", SOLVERS))

    def __init__(self, C=1.0, kernel="linear", gamma="scale", slack="bag", class_weight="balanced", init="centroid",
                 restarts=3, max_iter=50, solver="auto", tol=1e-3, distributional=False, summary=None,
                 scale_samples=True, scale_C=True, random_state=0, threshold="auto"):
        self.C = C
        self.scale_C = scale_C
        self.kernel = kernel
        self.gamma = gamma
        self.slack = slack
        self.class_weight = class_weight
        self.init = init
        self.restarts = restarts
        self.max_iter = max_iter
        self.solver = solver
        self.tol = tol
        self.distributional = distributional
        self.summary = summary
        self.scale_samples = scale_samples
        self.random_state = random_state
        self.threshold = threshold

    def _fit(self, bags: Bags):
        from milopt.algorithms.mi_heuristics import misvm_alternate

        if bags.n_classes > 2:
            raise InvalidParameterError("MI-SVM: binary bag labels are required")
        t0 = time.perf_counter()
        K, X = self._prepare(bags)
        C = self.C_
        if self.scale_C:
            C = C / float(_scale_count(bags, self.class_weight, self.slack))
        res = misvm_alternate(K, bags, C=C, class_weight=self.class_weight, slack=self.slack, init=self.init,
                              restarts=int(self.restarts), max_iter=int(self.max_iter), tol=self.tol,
                              random_state=self.random_state, solver=self.solver,
                              X=X if self.kernel_ == "linear" else None)
        self._store(res["alpha"] * res["y"], res["b"])
        self.witnesses_ = dict(zip(res["pos_bags"].tolist(), res["witnesses"].tolist()))
        self.history_ = res["history"]
        self.objective_ = res["objective"]
        self.fit_info_ = {"objective": res["objective"], "alternations": res["iterations"],
                          "best_start": res["best_start"], "converged": int(res["converged"]),
                          "termination": res["termination"],
                          "subproblem_solver": res["solver"], "seconds": time.perf_counter() - t0}
        return self


class MISMMHeuristic(MISVMHeuristic):
    """mi-SMM by Kent & Yu's Algorithm 1: MI-SVM alternation with the SMM (mean embedding) kernel.

    Defaults follow the paper — bag slacks (the dual eq. 3 caps Σ_{i∈I} α_i ≤ C for a negative
    group), C weighted inversely to the positive groups and negative instances (§3.3), stop when
    the selection no longer changes or after ``max_iter`` alternations — except the start: the
    paper's Algorithm 1 (line 2) starts from a random selector (``init='random'``); the default
    ``init='centroid'`` is Andrews et al.'s start, because from a random selector Algorithm 1 with
    these kernels usually stops after one alternation at that random selection (the fitted SVM
    ranks every selected instance first in its group), see docs/kent_yu_study.md."""

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", slack="bag", class_weight="kent-yu", init="centroid",
                 restarts=1, max_iter=50, solver="auto", tol=1e-3, distributional=True, summary=None,
                 scale_samples=True, scale_C=False, random_state=0, threshold="auto"):
        MISVMHeuristic.__init__(self, C=C, kernel=kernel, gamma=gamma, slack=slack, class_weight=class_weight, init=init,
                         restarts=restarts, max_iter=max_iter, solver=solver, tol=tol, distributional=distributional,
                         summary=summary, scale_samples=scale_samples, scale_C=scale_C, random_state=random_state,
                         threshold=threshold)


class MISVMSummary(MISVMHeuristic):
    """Kent & Yu's mi-SVM baselines (§3.2): Algorithm 1 on summary features of the samples
    (``init='random'`` is the paper's start; default Andrews' centroid start, as
    :class:`MISMMHeuristic`)."""

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", slack="bag", class_weight="kent-yu", init="centroid",
                 restarts=1, max_iter=50, solver="auto", tol=1e-3, distributional=False, summary="univ1",
                 scale_samples=True, scale_C=False, random_state=0, threshold="auto"):
        MISVMHeuristic.__init__(self, C=C, kernel=kernel, gamma=gamma, slack=slack, class_weight=class_weight, init=init,
                         restarts=restarts, max_iter=max_iter, solver=solver, tol=tol, distributional=distributional,
                         summary=summary, scale_samples=scale_samples, scale_C=scale_C, random_state=random_state,
                         threshold=threshold)


# ------------------------------------------------------------------------- mi-SVM
class MiSVMHeuristic(_KernelMIL):
    """mi-SVM of Andrews et al. (instance labels of positive bags imputed by alternation).

    Parameters
    ----------
    C : float or 'auto'
        Cost per unit of instance weight; default 'auto', chosen among
        :data:`milopt.params.AUTO_C_GRID` on the decision rule's inner folds, as
        :class:`SILClassifier`.  Why: with the RBF kernel at C = 1 the alternation fits its
        training bags almost exactly (bag AUC 0.95-1.0) and ranks new ones at AUC 0.63 on 60 bags of 2-8
        digits, where C = 0.1 gives 0.80 (docs/results.md, "Unseen data").
    kernel, gamma : as :class:`MISVMHeuristic`
    class_weight : {'balanced', 'none'}
    max_iter : int
    tol : float
    distributional, summary, scale_samples, random_state : as :class:`MISVMHeuristic`
    """

    param_spec = ParamSet(C=AUTO_C, summary=_SUMMARY, class_weight=Choice("balanced", ("balanced", "none"), none=True))

    def __init__(self, C="auto", kernel="rbf", gamma="scale", class_weight="balanced", max_iter=50, tol=1e-3,
                 distributional=False, summary=None, scale_samples=True, random_state=0, threshold="auto"):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.distributional = distributional
        self.summary = summary
        self.scale_samples = scale_samples
        self.random_state = random_state
        self.threshold = threshold

    def _fit(self, bags: Bags):
        from milopt.algorithms.mi_heuristics import mi_svm_alternate

        t0 = time.perf_counter()
        K, X = self._prepare(bags)
        if K is None:
            K = X @ X.T
        res = mi_svm_alternate(K, bags, C=self.C_, class_weight=self.class_weight, max_iter=int(self.max_iter),
                               tol=self.tol)
        self._store(res["coef"], res["b"])
        self.instance_labels_ = res["labels"]
        self.history_ = res["history"]
        self.objective_ = res["objective"]
        self.fit_info_ = {"objective": res["objective"], "alternations": res["iterations"],
                          "converged": int(res["converged"]), "termination": res["termination"],
                          "seconds": time.perf_counter() - t0}
        return self


# ---------------------------------------------------------------------- mi-SMM MIQP
class MISMMMIQP(MILClassifier):
    """Kent & Yu's Algorithm 2: mi-SMM through a stratified Nyström map and the big-M MIQP.

    The sample points are standardised, a Nyström map of the RBF kernel is built from ``m``
    landmarks drawn almost uniformly per bag (§2.4.1), each instance becomes the mean of its
    mapped points, and ``misvm_bigm`` is solved on those features through the solver driver,
    warm started (and its big-M tightened) with the MI-SVM heuristic's solution on the same
    features.  If the solver returns no better incumbent, the heuristic's solution is kept.

    Parameters
    ----------
    C : float
    gamma : float or 'scale' or 'auto', optional
        RBF width of the point kernel (default 'scale' = 1/(n_features · Var(points)), which is
        1/n_features on the standardised points).
    m : int
        Landmarks (raised to the number of bags so that every bag is represented).
    rank : int, optional
        Keep at most this many Nyström components.
    class_weight : {'kent-yu', 'balanced', 'none'}
    solver : str
        MIQP backend (``scip``).
    time_limit : float
        Seconds for building and solving the MIQP (after the heuristic's start).
    mip_gap : float, optional
    restarts, max_iter, init : heuristic settings for the warm start (Algorithm 1 on the
        Nyström features; the paper's Algorithm 2 has no warm start, the authors' code uses one).
    threads : int, optional
    scale_samples : bool
    random_state : int
    """

    #: solved through the MIQP driver: ``threshold='auto'`` chooses on the training scores
    threshold_rule = "training"
    param_spec = ParamSet(m=Int(240, ge=1), rank=Int(None, ge=1), class_weight=Choice("kent-yu", _SLACK_COSTS, none=True),
                          init=Choice("centroid", INITS))

    def __init__(self, C=1.0, gamma="scale", m=240, rank=None, class_weight="kent-yu", solver="scip", time_limit=30.0,
                 mip_gap=None, restarts=1, max_iter=50, threads=None, scale_samples=True, init="centroid",
                 random_state=0, threshold="auto"):
        self.C = C
        self.init = init
        self.gamma = gamma
        self.m = m
        self.rank = rank
        self.class_weight = class_weight
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.restarts = restarts
        self.max_iter = max_iter
        self.threads = threads
        self.scale_samples = scale_samples
        self.random_state = random_state
        self.threshold = threshold

    def _fit(self, bags: Bags):
        from sklearn.preprocessing import StandardScaler

        from milopt.algorithms.mi_heuristics import misvm_alternate
        from milopt.features.nystrom import NystromMap, stratified_sample
        from milopt.models import formulation
        from milopt.numerics import misvm_objective
        from milopt.solvers.pipeline import build_and_solve

        _need_samples(bags, "mismm-miqp")
        t0 = time.perf_counter()
        S = bags.samples
        self.scaler_ = StandardScaler().fit(S) if self.scale_samples else None
        S = self.scaler_.transform(S) if self.scaler_ is not None else S
        _, gamma = check_kernel("rbf", self.gamma, S.shape[1], S)
        sizes = np.diff(bags.sample_ptr)
        point_bag = np.repeat(bags.bag_index, sizes)
        idx = stratified_sample(point_bag, int(self.m), self.random_state,
                                subgroups=np.repeat(np.arange(bags.n_instances), sizes))
        self.nystrom_ = NystromMap("rbf", gamma, rank=self.rank).fit(S[idx])
        self.nystrom_.sample_index_ = idx
        Phi = self.nystrom_.mean_features(S, bags.sample_ptr)
        fb = bags.with_X(Phi)
        heur = misvm_alternate(Phi @ Phi.T, fb, C=self.C, class_weight=self.class_weight, slack="bag", init=self.init,
                               restarts=int(self.restarts), max_iter=int(self.max_iter), tol=1e-4,
                               random_state=self.random_state, X=Phi)
        w0 = Phi.T @ (heur["alpha"] * heur["y"])
        b0 = heur["b"]
        obj0 = misvm_objective(fb, w0, b0, self.C, self.class_weight)
        form = formulation("misvm-bigm")
        params = form.validate({"C": self.C, "class_weight": self.class_weight, "upper_bound": obj0,
                                "warm_start": False})
        run = build_and_solve(form, fb, params, self.solver, time_limit=self.time_limit, point=(w0, b0),
                              mip_gap=self.mip_gap, threads=self.threads)  # T covers the build and the solve
        res = run.result
        used = "heuristic"
        self.coef_, self.intercept_ = w0, float(b0)
        objective = obj0
        if res.ok:
            sol = form.decode(run.model)
            obj = misvm_objective(fb, sol["w"], sol["b"], self.C, self.class_weight)
            if obj <= obj0 + 1e-9 * max(1.0, abs(obj0)):
                self.coef_, self.intercept_, objective, used = sol["w"], float(sol["b"]), obj, "miqp"
        elif res.status is None:
            raise NoSolutionError(f"mismm-miqp: {self.solver} returned no status")
        self.result_ = res
        self.fit_info_ = {"objective": objective, "heuristic_objective": obj0,
                          "bound": res.bound if res.bound is not None else float("nan"),
                          "gap": res.gap if res.gap is not None else float("nan"),
                          "termination": str(res.termination), "solution_from": used,
                          "landmarks": int(idx.size), "components": self.nystrom_.n_components_,
                          "solve_seconds": run.solve_seconds, "seconds": time.perf_counter() - t0}
        return self

    def predict_instances(self, bags) -> np.ndarray:
        bags = self._check_input(bags)
        _need_samples(bags, "mismm-miqp")
        S = self.scaler_.transform(bags.samples) if self.scaler_ is not None else bags.samples
        return self.nystrom_.mean_features(S, bags.sample_ptr) @ self.coef_ + self.intercept_


register_method("sil", SILClassifier, doc="single-instance SVM baseline (bag label copied to instances; bag score = max)")
register_method("misvm-heuristic", MISVMHeuristic,
                doc="MI-SVM alternating heuristic (Andrews et al.; Kent & Yu Alg. 1): keys C, kernel, gamma, "
                    "slack=instance|bag, class_weight, init, restarts, max_iter, solver")
register_method("mi-svm-heuristic", MiSVMHeuristic, doc="mi-SVM (Andrews et al.): instance labels imputed by alternation")
register_method("misvm-summary", MISVMSummary, scale=False, needs=("samples",),
                doc="MI-SVM heuristic on summary features of distributional instances (summary=univ1|univ2|univ1+cor|univ2+cor)")
register_method("mismm-heuristic", MISMMHeuristic, scale=False, needs=("samples",),
                doc="mi-SMM: MI-SVM alternation with the kernel mean embedding kernel (Kent & Yu Alg. 1)")
register_method("sismm", SISMMClassifier, scale=False, needs=("samples",),
                doc="si-SMM: single-instance support measure machine (bag label copied)")
register_method("mismm-miqp", MISMMMIQP, scale=False, needs=("samples",),
                doc="mi-SMM via stratified Nystrom features + misvm_bigm MIQP (SCIP), heuristic warm start (Kent & Yu Alg. 2)")
