"""pdMISVM estimator (``milopt fit pdmisvm``): multi-class MI-SVM by the multi-block ADMM.

See :mod:`milopt.algorithms.pdmisvm` and ``docs/pdmisvm.md``.
"""
from __future__ import annotations

import numpy as np

from milopt.algorithms.pdmisvm import MAX_PROX, kernel_features, kernel_matrix, pdmisvm_admm
from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.estimators.base import MILClassifier, class_weights
from milopt.estimators.registry import register_method
from milopt.params import AUTO_C, Choice, Float, Int, ParamSet

__all__ = ["PDMISVMClassifier"]

VARIANT_CHOICES = ("exact", "inexact", "kernel")

#: The settings of Seo et al. (2022), Section 4.1: exact pdMISVM with the RBF kernel (C = 1e-3,
#: mu_0 = 1e-10) and inexact pdMISVM (eqs. 13-16) with the linear kernel (C = 1e4, mu_0 = 1e-8),
#: tolerance 1e-5 for both; with Algorithm 1's closed-form T/U updates (``max_prox="paper"``).
#: The paper states neither rho, the RBF width nor an iteration budget; those keep their defaults.
PRESETS = {
    "paper-rbf": {"variant": "kernel", "kernel": "rbf", "C": 1e-3, "mu": 1e-10, "tol": 1e-5, "max_prox": "paper"},
    "paper-linear": {"variant": "inexact", "C": 1e4, "mu": 1e-8, "tol": 1e-5, "max_prox": "paper"},
}


_PRESET_KEYS = ("C", "mu", "rho", "max_iter", "tol", "variant", "kernel", "gamma", "n_components", "max_prox")


def _with_preset(values: dict) -> dict:
    """The hyper-parameters of ``values`` with their ``preset`` applied; a key the preset sets
    that was given another non-default value is refused (the rule between keys of
    :class:`PDMISVMClassifier`)."""
    import inspect

    out = {k: values[k] for k in _PRESET_KEYS}
    preset = values.get("preset")
    if preset in (None, "none", "None", ""):
        return out
    defaults = {k: v.default for k, v in inspect.signature(PDMISVMClassifier.__init__).parameters.items()}
    for k, v in PRESETS[preset].items():
        mine = out[k]
        if mine != defaults.get(k) and mine != v:
            raise InvalidParameterError(f"preset={preset} sets {k}={v!r} but {k}={mine!r} was given; drop one of them")
        out[k] = v
    return out


class PDMISVMClassifier(MILClassifier):
    """Primal-dual multi-instance SVM (Seo, Brand, Saldana Barco, Wang, "Scaling multi-instance support vector
    machine to breast cancer detection on the BreaKHis dataset", Bioinformatics 2022; Brand et al., ICDM 2021).

    K-class objective (eq. 1) solved by the multi-block ADMM of Algorithm 1; prediction by
    eq. 2 (the class with the largest maximal instance response).  Binary MIL is K = 2.

    Parameters
    ----------
    C : float or 'auto', default 'auto'
        Hinge-loss weight (> 0).  'auto': the value of :data:`milopt.params.AUTO_C_GRID`
        (0.1, 1, 10) whose models, fitted on the inner folds of the decision rule, best separate
        their held-out bags (``MILClassifier._choose_C``: 9 ADMM fits on two thirds of the bags
        besides the final one; ``fit_info_['chosen_C']``).  Why not pdMISVM.jl's C = 1: eq. 1
        sums one hinge term per bag against ||W||², so the right C moves with the number of bags
        and the margin the data allow (on MUSK2 nested CV chose C = 10 in 8 of 9 folds of three
        splits, where C = 1 scored 3.4 points below the tuned figure; docs/pdmisvm.md, "C='auto'").  With a
        ``preset`` the preset's C is used.
    mu : float, default 1e-3
        Initial ADMM penalty (> 0).
    rho : float, default 1.2
        Penalty growth per iteration, mu <- rho * mu (> 1).
    max_iter : int, default 1000
    tol : float, default 1e-6
        Stop when the sum of the Frobenius norms of the constraint residuals is below it.
    variant : {'exact', 'inexact', 'kernel'}, default 'exact'
        W update: eigendecomposed linear system, one optimal gradient step, or the kernel
        update through the Gram matrix.
    kernel : {'rbf', 'linear'}, default 'rbf'
        Kernel of the ``kernel`` variant (ignored by the linear variants).
    gamma : float or 'auto' or 'scale', default 'scale'
        RBF width in ``exp(-gamma ||x - x'||^2)``; 'scale' = 1 / (n_features * X.var()) (as
        scikit-learn; 1 / n_features on standardised features), 'auto' = 1 / n_features.
    n_components : int or None, default None
        Kernel variant: None uses the exact Gram matrix of all training instances;
        an integer uses that many Nystroem landmarks (drawn with ``random_state``).
    max_prox : {'exact', 'paper'}, default 'exact'
        T/U updates: exact block minimiser or the paper's closed form (see the docs).
    random_state : int, default 0
        Seed of the Nystroem landmarks (the ADMM itself is deterministic).
    class_weight : {'none', 'balanced'}, default 'balanced'
        Per-bag multiplier of C: 'balanced' is scikit-learn's meaning over bags,
        n_bags / (K · n_bags of the bag's class), so that each class carries the same total
        hinge weight (every weight is 1 on a balanced set); 'none' is eq. 1 as published, whose
        one unweighted hinge term per bag lets the majority class decide on imbalanced bags
        (the 1:20 regime of ``benchmarks/robustness.py``).
    preset : {None, 'paper-rbf', 'paper-linear'}, default None
        The settings of the paper's Section 4.1 (see ``PRESETS``): ``paper-rbf`` = kernel
        variant, RBF, C = 1e-3, mu = 1e-10, tol = 1e-5; ``paper-linear`` = inexact variant,
        C = 1e4, mu = 1e-8, tol = 1e-5; both with ``max_prox='paper'`` (Algorithm 1's T/U updates).
        The preset sets those keys; giving one of them a
        different non-default value as well is refused (drop the preset to tune them).

    Attributes
    ----------
    classes_ : ndarray, shape (K,)
    coef_ : ndarray, shape (K, n_features)
        Linear variants: row m is w_m.
    intercept_ : ndarray, shape (K,)
    dual_coef_ : ndarray, shape (n_support, K)
        Kernel variant: ``response_m(x) = k(x, support_) @ dual_coef_[:, m] + intercept_[m]``.
    support_ : ndarray, shape (n_support, n_features)
    result_ : SolveResult
    history_ : tuple of dict
        Per iteration: iteration, objective, residual, mu, time.
    fit_info_ : dict
    """

    # the values each key accepts, declared once (``--set`` and the constructor); help from above
    param_rules = (_with_preset,)             # a preset against a key it sets (before any work)
    param_spec = ParamSet(C=AUTO_C, mu=Float(1e-3, gt=0), rho=Float(1.2, gt=1), variant=Choice("exact", VARIANT_CHOICES),
                          n_components=Int(None, ge=1), max_prox=Choice("exact", MAX_PROX),
                          preset=Choice(None, tuple(PRESETS)), class_weight=Choice("none", ("none", "balanced"), none=True))

    def __init__(self, C="auto", mu=1e-3, rho=1.2, max_iter=1000, tol=1e-6, variant="exact", kernel="rbf",
                 gamma="scale", n_components=None, max_prox="exact", random_state=0, preset=None,
                 class_weight="balanced", threshold="auto"):
        self.C = C
        self.mu = mu
        self.rho = rho
        self.max_iter = max_iter
        self.tol = tol
        self.variant = variant
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.max_prox = max_prox
        self.random_state = random_state
        self.preset = preset
        self.class_weight = class_weight
        self.threshold = threshold

    # ------------------------------------------------------------------ fit
    def effective_params(self) -> dict:
        """The hyper-parameters the fit uses: the constructor's, with ``preset`` applied and
        ``C='auto'`` replaced by the chosen ``C_`` (1 before a fit has chosen it)."""
        p = _with_preset({k: getattr(self, k) for k in (*_PRESET_KEYS, "preset")})
        if isinstance(p["C"], str):
            p["C"] = float(getattr(self, "C_", 1.0))
        return p

    def _choose_C(self, bags: Bags):
        """``C='auto'`` as :meth:`MILClassifier._choose_C`, unless a ``preset`` sets C (its value
        is used, nothing is chosen)."""
        preset_C = PRESETS.get(self.preset, {}).get("C") if isinstance(self.preset, str) else None
        if preset_C is not None:
            self.C_ = float(preset_C)
            return None
        return super()._choose_C(bags)

    def _fit(self, bags: Bags):
        yk = np.unique(bags.y, return_inverse=True)[1]  # 0..K-1 whatever labels the caller used
        K = self.classes_.size
        X = bags.X
        p = self.effective_params()
        self.variant_, self.kernel_ = p["variant"], p["kernel"]
        kw = dict(C=p["C"], mu=p["mu"], rho=p["rho"], max_iter=p["max_iter"], tol=p["tol"], max_prox=p["max_prox"],
                  bag_weights=class_weights(bags.y, self.class_weight))
        if p["variant"] == "kernel":
            Z, support, M, g = kernel_features(X, p["kernel"], p["gamma"], p["n_components"], self.random_state)
            W, b, res = pdmisvm_admm(Z, bags.bag_ptr, yk, K, variant="exact", **kw)
            self.support_ = support
            self.dual_coef_ = M @ W
            self.gamma_ = g
            self.coef_ = self.dual_coef_.T @ support if p["kernel"] == "linear" else None
            rank = Z.shape[1]
        else:
            W, b, res = pdmisvm_admm(X, bags.bag_ptr, yk, K, variant=p["variant"], **kw)
            self.coef_ = W.T.copy()
            rank = None
        self.intercept_ = b
        self.result_ = res
        self.history_ = res.history
        self.n_iter_ = res.iterations
        self.fit_info_ = {"objective": float(res.objective), "iterations": int(res.iterations),
                          "residual": float(res.extra["residual"]), "termination": str(res.termination),
                          "solve_seconds": float(res.wall_time), "final_mu": float(res.extra["final_mu"]),
                          "preset": self.preset,
                          "params": {k: p[k] for k in ("variant", "kernel", "C", "mu", "tol", "max_prox")}}
        if rank is not None:
            self.fit_info_["kernel_rank"] = int(rank)
        return self

    # ------------------------------------------------------------- predict
    def instance_responses(self, bags) -> np.ndarray:
        """Instance responses w_m'x + b_m, shape (n_instances, K)."""
        bags = self._check_input(bags)
        if getattr(self, "variant_", self.variant) == "kernel":
            X = bags.X
            out = np.empty((X.shape[0], self.classes_.size))
            step = max(1, int(2e7 // max(self.support_.shape[0], 1)))     # bounded kernel blocks
            for s in range(0, X.shape[0], step):
                out[s:s + step] = (kernel_matrix(X[s:s + step], self.support_, self.kernel_, self.gamma_)
                                  @ self.dual_coef_)
            return out + self.intercept_
        return bags.X @ self.coef_.T + self.intercept_

    def predict_instances(self, bags) -> np.ndarray:
        """Instance importance max_m (w_m'x + b_m) (the paper's patch identification), shape (n_instances,)."""
        return self.instance_responses(bags).max(axis=1)

    def bag_responses(self, bags) -> np.ndarray:
        """max over each bag's instances of w_m'x + b_m, shape (n_bags, K)."""
        bags = self._check_input(bags)
        return np.maximum.reduceat(self.instance_responses(bags), bags.bag_ptr[:-1], axis=0)

    def decision_function(self, bags) -> np.ndarray:
        """(n_bags, K) bag responses for K > 2; for K = 2 the score response_1 - response_0."""
        S = self.bag_responses(bags)
        if S.shape[1] == 2:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, bags) -> np.ndarray:
        """K > 2: eq. 2, the class with the largest bag response (ties to the first class).  K = 2:
        response_1 - response_0 > ``threshold_`` (eq. 2 is ``threshold='zero'``; see
        :class:`~milopt.estimators.base.MILClassifier` for ``'auto'``)."""
        S = self.bag_responses(bags)  # checks that the model is fitted first
        if S.shape[1] == 2:
            return np.where(S[:, 1] - S[:, 0] > self.threshold_, self.classes_[-1], self.classes_[0])
        return self.classes_[np.argmax(S, axis=1)]


register_method("pdmisvm", PDMISVMClassifier,
                doc="pdMISVM (Seo, Brand et al. 2022): multi-class MI-SVM by multi-block ADMM; keys C, mu, rho, "
                    "max_iter, tol, variant=exact|inexact|kernel, kernel=rbf|linear, gamma, n_components, "
                    "preset=paper-rbf|paper-linear (the paper's Section 4.1 settings)")
