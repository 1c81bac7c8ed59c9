"""Variational GP MIL estimators: ``milopt fit vgpmil`` (Pólya-Gamma) and ``milopt fit g-vgpmil`` (Gamma GSM).

See :mod:`milopt.algorithms.vgpmil` for the model and the updates, and ``docs/vgpmil.md``.
"""
from __future__ import annotations

import numpy as np

from milopt.algorithms.vgpmil import GSM, fit_vgpmil, inducing_points, make_gsm, median_sq_distance
from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.estimators.base import MILClassifier
from milopt.estimators.registry import register_method
from milopt.params import Bool, Choice, Float, Floats, Int, ParamSet, parse_bool
from milopt.solvers.result import Termination

__all__ = ["VGPMILClassifier"]


def _split_bags(y, fraction, seed):
    """Stratified split of bag ids into (fit, validation) with ``fraction`` held out."""
    from sklearn.model_selection import StratifiedShuffleSplit

    n_val = max(2, int(round(fraction * y.size)))
    sss = StratifiedShuffleSplit(n_splits=1, test_size=n_val, random_state=seed)
    return next(sss.split(np.zeros(y.size), y))


class VGPMILClassifier(MILClassifier):
    """Sparse variational Gaussian-process MIL (VGPMIL / G-VGPMIL) with calibrated probabilities.

    Parameters
    ----------
    theta : {'gamma', 'pg'}
        GSM of the likelihood: ``'pg'`` the logistic, ψ = hyperbolic secant (VGPMIL of Haußmann
        et al. 2017, in the Pólya-Gamma form PG-VGPMIL of Castro-Macías et al., §3), ``'gamma'``
        ψ(f) ∝ (β + f²/2)^{-α} (G-VGPMIL, Castro-Macías et al., eq. 38).
    alpha, beta : float
        Gamma GSM parameters (ignored for ``'pg'``). The per-instance loss
        -(y - ½)f + α log(1 + f²/(2β)) has a finite minimiser only when β ≤ 2α²; larger β
        lets ‖m‖ grow (measured: AUC 0.22 on MUSK1 with α = 0.5, β = 1).
    n_inducing : int
        Number M of inducing points (k-means centres of the training instances).
    inducing_init : {'kmeans', 'random'}
    variance : float
        Kernel variance v (4: measured on MUSK, docs/vgpmil.md; the paper starts from 0.5 and
        learns it).
    mean : {'auto', 'constant', 'zero'}
        Prior mean of the latent GP. ``'constant'``: a constant m₀ learned jointly with q(u)
        (a closed-form ascent step of the ELBO), logistic likelihood only; ``'zero'``: the paper's
        zero-mean prior (eq. 2); ``'auto'``: ``'constant'`` for ``theta='pg'``, ``'zero'``
        otherwise. With the zero mean the latent returns to 0 (p = ½) away from the training
        instances while the MIL fixed point pushes it well below 0 on them, and VGPMIL run to
        convergence ranked held-out MUSK2 bags below chance (docs/vgpmil.md). For G-VGPMIL the
        bound without log Z grows without limit as m₀ → −∞, so ``'constant'`` is refused.
    lengthscale : float or 'auto'
        Squared length scale l of v·exp(-‖x - x'‖²/(2l)). ``'auto'``: chosen among
        ``lengthscale_grid`` × (median squared distance of the training instances) by inner
        validation on the training bags.
    lengthscale_grid : tuple of float
        Multipliers of the median squared distance tried when ``lengthscale='auto'``.
    H : float
        Bag likelihood p(T_b | y_b) = H^{G_b}/(H + 1) (eq. 4); larger means the max-rule is
        enforced harder. 100 as in the paper (§6); the released code uses 10¹².
    warmup : int
        Epochs with q(y_n) fixed at the bag label (π_n = T_b) before the MIL updates of π start:
        q(u) starts from the single-instance GP fit.
    max_iter : int
        Maximum number of epochs.
    tol : float
        Relative ELBO change that ends the coordinate ascent.
    early_stopping : bool
        Early stopping as in the paper's protocol (§6: halt when the validation bag AUC has not
        improved for ``patience`` epochs), on a stratified ``validation_fraction`` of the training
        bags. ``False`` (``--set early_stopping=false``) runs the coordinate ascent to convergence
        (relative ELBO change < ``tol`` and max ``|Δπ|`` < 10⁻³, or ``max_iter`` epochs).
    validation_fraction : float
        Fraction of the training bags held out (stratified) for inner validation; 0 also disables
        it (then ``lengthscale='auto'`` takes the middle multiplier of the grid).
    patience : int
        Early stopping: epochs without improvement of the validation bag AUC.
    refit : bool
        After inner validation, refit on all training bags with the chosen length scale and the
        chosen number of epochs (otherwise keep the early-stopped model fitted on the reduced set).
    emax : {'max', 'exact'}
        E[max y_{b∖n}] in the π update (eq. 25): ``'max'`` max_{j≠n} π_j (the public VGPMIL and
        ψ-VGPMIL code), ``'exact'`` 1 − Π_{j≠n}(1 − π_j) under the factorised q(y).
    damping : float
        Step ω ∈ (0, 1] of the ``emax='max'`` π update, π ← π + ω(π' − π). ω = 1 is the public
        code's update, which oscillates with period 2 and never converges (docs/vgpmil.md).
    pi_init : {'label', 'half', 'random'}
        Start of q(y): π_n = T_b, ½T_b, or U(0, 1) draws as in Algorithm 1 (seeded).
    learn_kernel : bool
        Algorithm 1, line 8: after every epoch maximise the kernel objective over (v, l)
        (L-BFGS-B, 5 steps, analytic gradients), starting from ``variance`` and the chosen
        length scale. Off by default (measured in docs/vgpmil.md).
    kernel_bound : {'elbo', 'augmented'}
        ``'elbo'``: 𝒥(λ) of eq. 29 (E_q[log ψ], −log Z by importance sampling for ψ ≠ φ);
        ``'augmented'``: the tangent (augmented) bound at fixed q(ω) without log Z.
    bag_rule : {'max', 'noisy-or'}
        Bag probability: the largest instance probability, or 1 - Π(1 - p_n) (eqs. 34–37).
        Noisy-OR saturates on large bags (MUSK2 bags hold up to 1,044 instances: held-out AUC ≈ 0.51).
    predict_method : {'gh', 'probit', 'mc'}
        E[σ(f*)] by 32-point Gauss–Hermite, the probit approximation, or Monte Carlo.
    n_samples : int
        Monte Carlo draws for ``predict_method='mc'``.
    time_limit : float, optional
        Seconds per coordinate-ascent run (each inner-validation run and the refit); a run that
        hits it returns its current posterior with termination ``time_limit`` (``result_``).
    blas_threads : int or None
        BLAS threads during fit and predict (threadpoolctl); the matrices are small (N×M), and
        multi-threaded BLAS was ~10× slower on a loaded 2-core machine. None leaves BLAS alone.
    random_state : int
        Seeds k-means, the inner split, the median subsample and Monte Carlo predictions.
    """

    instance_threshold_ = 0.5

    # declared once: what `milopt list` shows and what `--set` / `--tune` accept (the rest is inferred
    # from the constructor's defaults); `_validate_params` re-checks values given from Python
    param_spec = ParamSet(
        theta=Choice("gamma", ("gamma", "pg"), "GSM of the likelihood: gamma (G-VGPMIL) or pg (logistic, VGPMIL)",
                     objects=(GSM, tuple)),   # from Python also a GSM or a (ψ, ψ') pair, checked by make_gsm
        alpha=Float(1.0, "Gamma GSM shape α (eq. 38)", gt=0),
        beta=Float(1.0, "Gamma GSM rate β (eq. 38)", gt=0),
        n_inducing=Int(200, "number of inducing points M", ge=1),
        inducing_init=Choice("kmeans", ("kmeans", "random"), "inducing inputs: k-means centres or a random subset"),
        variance=Float(4.0, "kernel variance v", gt=0),
        lengthscale=Float("auto", gt=0, choices=("auto",)),
        lengthscale_grid=Floats((0.25,), gt=0),
        mean=Choice("auto", ("auto", "constant", "zero"),
                    "prior mean: learned constant (logistic only), zero (paper), auto = constant for pg"),
        H=Float(100.0, "bag likelihood H^G/(H+1) (eq. 4)", gt=1, finite=False),
        warmup=Int(0, "epochs with π fixed at the bag labels", ge=0),
        max_iter=Int(500, "maximum number of epochs", ge=1),
        tol=Float(1e-5, "relative ELBO change that ends the coordinate ascent", gt=0),
        early_stopping=Bool(True, "stop on the validation bag AUC (patience epochs), as the paper's protocol"),
        validation_fraction=Float(0.2, "share of training bags held out for validation", ge=0, lt=1),
        patience=Int(10, "epochs without validation improvement", ge=1),
        refit=Bool(True, "refit on all training bags for the selected epochs"),
        emax=Choice("max", ("max", "exact"), "E[max y] in the π update (eq. 25)"),
        damping=Float(0.5, "step of the max-rule π update", gt=0, le=1),
        pi_init=Choice("label", ("label", "half", "random"), "start of q(y)"),
        learn_kernel=Bool(False, "Algorithm 1 line 8: learn (v, l) every epoch"),
        kernel_bound=Choice("elbo", ("elbo", "augmented"), "kernel objective: eq. 29 or the augmented bound"),
        bag_rule=Choice("max", ("max", "noisy-or"), "bag probability from instance probabilities"),
        predict_method=Choice("gh", ("gh", "probit", "mc"), "E[σ(f*)]: Gauss–Hermite, probit or Monte Carlo"),
        n_samples=Int(500, "Monte Carlo draws for predict_method=mc", ge=1),
        blas_threads=Int(1, "BLAS threads during fit and predict", ge=1),
    )

    def __init__(self, theta="gamma", alpha=1.0, beta=1.0, n_inducing=200, inducing_init="kmeans", variance=4.0,
                 lengthscale="auto", lengthscale_grid=(0.25,), H=100.0, warmup=0, max_iter=500, tol=1e-5,
                 early_stopping=True, validation_fraction=0.2, patience=10, refit=True, emax="max", damping=0.5,
                 pi_init="label", learn_kernel=False, kernel_bound="elbo", bag_rule="max",
                 predict_method="gh", n_samples=500, time_limit=None, blas_threads=1, random_state=0, mean="auto",
                 threshold="auto"):
        self.theta = theta
        self.alpha = alpha
        self.beta = beta
        self.n_inducing = n_inducing
        self.inducing_init = inducing_init
        self.variance = variance
        self.lengthscale = lengthscale
        self.lengthscale_grid = lengthscale_grid
        self.H = H
        self.warmup = warmup
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.refit = refit
        self.emax = emax
        self.damping = damping
        self.pi_init = pi_init
        self.learn_kernel = learn_kernel
        self.kernel_bound = kernel_bound
        self.bag_rule = bag_rule
        self.predict_method = predict_method
        self.n_samples = n_samples
        self.time_limit = time_limit
        self.blas_threads = blas_threads
        self.random_state = random_state
        self.mean = mean
        self.threshold = threshold

    # ------------------------------------------------------------------ helpers
    def _limits(self):
        from contextlib import nullcontext

        if self.blas_threads is None:
            return nullcontext()
        from threadpoolctl import threadpool_limits

        return threadpool_limits(limits=int(self.blas_threads), user_api="blas")

    def _validate_params(self):
        super()._validate_params()                           # the declared keys, before any work
        make_gsm(self.theta, self.alpha, self.beta)         # theta may also be a custom (ψ, ψ') pair

    def _core(self, X, ptr, y, Z, lengthscale, max_iter, validation=None, tol=None):
        return fit_vgpmil(X, ptr, y, Z=Z, variance=float(self.variance), lengthscale=float(lengthscale),
                          H=float(self.H), theta=self.theta, alpha=float(self.alpha), beta=float(self.beta),
                          max_iter=int(max_iter), tol=self.tol if tol is None else tol, warmup=int(self.warmup),
                          validation=validation, patience=int(self.patience), bag_rule=self.bag_rule,
                          emax=self.emax, damping=float(self.damping), pi_init=self.pi_init,
                          learn_kernel=parse_bool("learn_kernel", self.learn_kernel), kernel_bound=self.kernel_bound,
                          time_limit=self.time_limit, random_state=self.random_state, mean=self._mean())

    def _mean(self):
        if self.mean == "auto":
            return "constant" if self.theta == "pg" else "zero"
        return self.mean

    # ------------------------------------------------------------------ fit
    def _fit(self, bags: Bags):
        if bags.n_classes > 2:
            raise InvalidParameterError("VGPMIL is a binary MIL model; got more than two bag classes")
        with self._limits():
            self._fit_inner(bags)
        return self

    def _fit_inner(self, bags: Bags):
        seed = self.random_state
        med = median_sq_distance(bags.X, random_state=seed)
        M = int(self.n_inducing)
        if self.lengthscale == "auto":
            grid = self.lengthscale_grid                  # declared: multipliers > 0
            candidates = [float(f) * med for f in ([grid] if np.isscalar(grid) else grid)]
            if not candidates:
                raise InvalidParameterError("lengthscale_grid: expected positive multipliers such as 0.125,0.25,0.5; "
                                            "got none")
        else:
            candidates = [float(self.lengthscale)]
        use_val = (parse_bool("early_stopping", self.early_stopping) and float(self.validation_fraction) > 0
                   and bags.n_bags >= 10)
        selection = []
        chosen_l, chosen_epochs = candidates[len(candidates) // 2], int(self.max_iter)
        inner_model = None
        # inducing inputs: unsupervised, from all training instances, shared by the inner fits and the refit
        Z = inducing_points(bags.X, M, self.inducing_init, seed)
        if use_val:
            fit_ids, val_ids = _split_bags(bags.y, float(self.validation_fraction), seed)
            Bf, Bv = bags.subset(fit_ids), bags.subset(val_ids)
            best = (-np.inf, None)
            for l in candidates:
                post, pi, res = self._core(Bf.X, Bf.bag_ptr, Bf.y, Z, l, self.max_iter,
                                           validation=(Bv.X, Bv.bag_ptr, Bv.y))
                auc = res.extra.get("val_auc", float("nan"))
                it = int(res.extra.get("best_iteration", res.iterations))
                selection.append({"lengthscale": l, "val_auc": auc, "best_iteration": it})
                if auc > best[0] + 1e-12:
                    best = (auc, (l, it, post, pi, res))
            if best[1] is None:  # validation AUC undefined: fall back to the middle candidate, all epochs
                chosen_l = candidates[len(candidates) // 2]
            else:
                chosen_l, chosen_epochs, post, pi, res = best[1]
                inner_model = (post, pi, res)
        if use_val and not self.refit and inner_model is not None:
            post, pi, res = inner_model
        else:
            tol = 0.0 if use_val else None     # replay exactly the selected number of epochs
            post, pi, res = self._core(bags.X, bags.bag_ptr, bags.y, Z, chosen_l, chosen_epochs, tol=tol)
            if use_val and inner_model is not None and res.termination == Termination.ITERATION_LIMIT \
                    and chosen_epochs < int(self.max_iter):
                # the refit stopped at the epoch count chosen on the validation bags: early stopping,
                # not a budget (docs/statuses.md)
                from dataclasses import replace

                res = replace(res, termination=Termination.EARLY_STOPPED)
        self.posterior_ = post
        self.pi_ = pi
        self.result_ = res
        self.lengthscale_ = float(post.lengthscale)
        self.variance_ = float(post.variance)
        self.n_epochs_ = int(res.iterations)
        self.selection_ = selection
        self.fit_info_ = {"elbo": float(res.objective), "iterations": int(res.iterations),
                          "lengthscale": float(post.lengthscale), "variance": float(post.variance),
                          "lengthscale_over_median": float(post.lengthscale / med),
                          "selected_epochs": int(chosen_epochs), "in_warmup": int(chosen_epochs <= int(self.warmup)),
                          "termination": str(res.termination), "n_inducing": int(post.Z.shape[0]),
                          # early stopping: the refit replays the epochs chosen on the validation bags and
                          # reports "early_stopped" (fewer than max_iter epochs) or "iteration_limit"
                          "stopping": "early_stopping" if use_val else "convergence"}
        if selection:
            self.fit_info_["inner_val_auc"] = float(max(s["val_auc"] for s in selection))

    # ------------------------------------------------------------------ predict
    def _predict(self, bags):
        bags = self._check_input(bags)
        with self._limits():
            pb, sdb, logit, p, sd = self.posterior_.bag_proba(bags.X, bags.bag_ptr, self.predict_method,
                                                               int(self.n_samples), self.random_state)
        if self.bag_rule == "max":
            idx = _segment_argmax(p, bags.bag_ptr)
            pb, sdb = p[idx], sd[idx]
            logit = np.log(np.maximum(pb, 1e-300)) - np.log(np.maximum(1.0 - pb, 1e-300))
        return pb, sdb, logit, p, sd

    def predict_instances(self, bags) -> np.ndarray:
        """Instance probabilities p(y* = 1) = E[σ(f*)] (eqs. 30–33), shape (n_instances,)."""
        return self._predict(bags)[3]

    def predict_instances_std(self, bags) -> np.ndarray:
        """Standard deviation of σ(f*) under the predictive distribution of f*, per instance."""
        return self._predict(bags)[4]

    def predict_latent(self, bags):
        """Predictive mean and variance of the latent f* per instance -> ((n,), (n,))."""
        bags = self._check_input(bags)
        with self._limits():
            return self.posterior_.latent(bags.X)

    def predict_proba(self, bags) -> np.ndarray:
        """Bag class probabilities, shape (n_bags, 2): columns P(T=0), P(T=1)."""
        pb = self._predict(bags)[0]
        return np.column_stack([1.0 - pb, pb])

    def predict_proba_std(self, bags) -> np.ndarray:
        """Standard deviation of the bag probability P(T=1), shape (n_bags,)."""
        return self._predict(bags)[1]

    def predict_uncertainty(self, bags) -> dict:
        """All predictive quantities at once: bag and instance probabilities and their standard deviations."""
        pb, sdb, logit, p, sd = self._predict(bags)
        return {"bag_proba": pb, "bag_std": sdb, "bag_logit": logit, "instance_proba": p, "instance_std": sd}

    def decision_function(self, bags) -> np.ndarray:
        """Log-odds of the bag probability (monotone in ``predict_proba[:, 1]``, no saturation at 0/1)."""
        return self._predict(bags)[2]



def _segment_argmax(values, ptr):
    from milopt.segments import segment_argmax

    return segment_argmax(values, ptr)


register_method("vgpmil", VGPMILClassifier, fixed={"theta": "pg"},
                doc="VGPMIL (Haußmann et al. 2017): sparse variational GP MIL, Pólya-Gamma/logistic likelihood")
register_method("g-vgpmil", VGPMILClassifier, fixed={"theta": "gamma"},
                doc="G-VGPMIL (Castro-Macías et al.): ψ-VGPMIL with the Gamma GSM, inner-validated length scale")
