r"""Fit loop of VGPMIL / G-VGPMIL: input checks, inducing points and coordinate ascent (Algorithm 1).

See :mod:`milopt.algorithms.vgpmil` for the model, the updates and the implementation notes.
"""
from __future__ import annotations

import math
import time

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.segments import segment_max
from milopt.solvers.result import Termination, native
from milopt.algorithms.vgpmil.elbo import _learn_kernel, median_sq_distance, rbf_kernel
from milopt.algorithms.vgpmil.link import make_gsm
from milopt.algorithms.vgpmil.posterior import VGPMILPosterior, _pi_block, _pi_update, _pi_update_max

# ---------------------------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------------------------
def _diverged(post):
    """Termination of a fit whose θ(c) or latent moments stopped being finite: ``error`` with the last
    finite posterior kept, or one clear error when there is none yet (the first epoch)."""
    if post is None:
        raise InvalidParameterError("VGPMIL: θ(c) or the latent mean is not finite in the first epoch; check theta, "
                                    "alpha, beta and the kernel variance")
    return Termination.ERROR


def _check_inputs(X, ptr, y):
    X = np.asarray(X, dtype=float)
    ptr = np.asarray(ptr, dtype=np.int64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0:
        raise InvalidDataError(f"X: expected a non-empty (n_instances, n_features) array, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise InvalidDataError("X: contains NaN or infinite values; impute or drop them before fitting")
    if ptr.ndim != 1 or ptr[0] != 0 or ptr[-1] != X.shape[0] or np.any(np.diff(ptr) <= 0):
        raise InvalidDataError("ptr: expected increasing bag offsets from 0 to n_instances with non-empty bags")
    if y.shape != (ptr.size - 1,) or not set(np.unique(y)) <= {0, 1}:
        raise InvalidDataError(f"y: expected {ptr.size - 1} bag labels in {{0, 1}}, got shape {y.shape} "
                               f"with values {np.unique(y)[:5]}")
    return X, ptr, y.astype(np.int64)


def inducing_points(X, M, init="kmeans", random_state=0):
    """M inducing inputs: k-means centres (sklearn KMeans, seeded) or a seeded random subset.

    k-means (k-means++ start, at most 50 Lloyd iterations) runs on a seeded subsample of at most
    10·M instances: on MUSK2 the full 6,598-instance k-means took most of the fit time."""
    X = np.asarray(X, dtype=float)
    M = int(min(M, X.shape[0]))
    if M < 1:
        raise InvalidParameterError(f"n_inducing: must be >= 1, got {M}")
    if init == "kmeans":
        from sklearn.cluster import KMeans

        rng = np.random.default_rng(random_state)
        Xk = X if X.shape[0] <= 10 * M else X[rng.choice(X.shape[0], 10 * M, replace=False)]
        km = KMeans(n_clusters=M, n_init=1, max_iter=50, random_state=random_state).fit(Xk)
        return km.cluster_centers_.copy()
    if init == "random":
        rng = np.random.default_rng(random_state)
        return X[rng.choice(X.shape[0], M, replace=False)].copy()
    raise InvalidParameterError(f"inducing_init: expected 'kmeans' or 'random', got {init!r}")


def fit_vgpmil(X, ptr, y, *, Z=None, n_inducing=200, inducing_init="kmeans", variance=1.0, lengthscale=None,
               H=100.0, theta="gamma", alpha=1.0, beta=1.0, max_iter=200, tol=1e-5, pi_steps=3, pi_init="label", warmup=0,
               emax="max", damping=0.5, jitter=1e-6, validation=None, patience=10, bag_rule="max", learn_kernel=False,
               kernel_steps=5, kernel_bound="elbo", logz_samples=64, blas_threads=1, time_limit=None, random_state=0,
               verbose=False, mean="zero"):
    r"""Fit (Py-/G-)VGPMIL by coordinate ascent on the ELBO.

    Parameters
    ----------
    X : (n_instances, d) array
        Instances, grouped contiguously by bag.
    ptr : (n_bags + 1,) int array
        Bag offsets.
    y : (n_bags,) array of {0, 1}
        Bag labels T_b.
    Z : (M, d) array, optional
        Inducing inputs; by default ``n_inducing`` k-means centres of X.
    variance : float
        Kernel variance v.
    lengthscale : float, optional
        Squared length scale l of exp(-‖x - x'‖²/(2l)); default: the median squared distance.
    H : float
        Bag-likelihood strength (> 1, eq. 4; the paper's 100 by default); ``np.inf`` forces E[G_b] = 1.
    theta : {'pg', 'gamma'} or GSM or (psi, dpsi)
    alpha, beta : float
        Parameters of the Gamma GSM.
    max_iter : int
        Maximum number of epochs.
    tol : float
        Stop when the relative ELBO change is below ``tol``.
    pi_steps : int
        Monotone π block updates per epoch (each is a Jacobi proposal with backtracking).
    pi_init : {'label', 'half', 'random'}
        Initial π: the bag label (π_n = T_b), ½ in positive bags and 0 in negative ones, or
        U(0, 1) draws seeded by ``random_state`` (Algorithm 1, line 2). Algorithm 1 also draws m
        and S at random; here they are not needed: the first epoch starts from θ at the prior
        c_n = √v and computes q(u) from π (eqs. 27, 26).
    emax : {'max', 'exact'}
        E[max y_{b∖n}] in eq. 25: max_{j≠n} π_j (the released VGPMIL / ψ-VGPMIL code) or
        1 − Π_{j≠n}(1 − π_j) (the expectation under the factorised q(y); monotone backtracking
        steps on the ELBO, ``pi_steps`` per epoch).
    damping : float
        Step ω ∈ (0, 1] of the ``emax='max'`` update π ← π + ω(π' − π); ω = 1 (the released code)
        oscillates with period 2.
    jitter : float
        Relative jitter added to K_ZZ's diagonal (times v) before its Cholesky factorisation.
    validation : tuple (X_val, ptr_val, y_val), optional
        Early stopping on the validation bags' AUC with ``patience`` epochs; the best epoch is kept.
    bag_rule : {'max', 'noisy-or'}
        Bag score used for the validation AUC: the largest instance probability, or 1 - Π(1 - p_n).
    learn_kernel : bool
        Algorithm 1, line 8: after every epoch, ``kernel_steps`` L-BFGS-B steps on (log v, log l)
        with analytic gradients at fixed q(u) and π; bounds 10⁻²–10² times the initial values.
        A step is kept only when it raises the objective.
    kernel_bound : {'elbo', 'augmented'}
        The objective of that step: 𝒥(λ) of eq. 29 (``elbo_objective``; −log Z by
        importance sampling with ``logz_samples`` draws for ψ ≠ φ, redrawn every epoch, seeded),
        or the augmented bound at fixed q(ω) (``kernel_objective``, no log Z).
    time_limit : float, optional
        Seconds; the current posterior is returned with termination ``time_limit``.
    random_state : int
        Seeds k-means and the median subsample.
    blas_threads : int or None
        BLAS threads while fitting (threadpoolctl); None leaves BLAS alone. The arrays are
        N×M and M×M: one thread was ~10× faster than the default on a loaded 2-core machine.

    Returns
    -------
    posterior : VGPMILPosterior
    pi : (n_instances,) array
        Final q(y_n = 1).
    result : SolveResult
        solver="vgpmil", problem_class="native", objective = ELBO of the returned epoch (the best
        validation epoch when early stopping), history with per-epoch elbo, kl, max_dpi, pi_step,
        warmup, (val_auc) and seconds.
    """
    kw = dict(Z=Z, n_inducing=n_inducing, inducing_init=inducing_init, variance=variance, lengthscale=lengthscale, H=H,
              theta=theta, alpha=alpha, beta=beta, max_iter=max_iter, tol=tol, pi_steps=pi_steps, pi_init=pi_init,
              warmup=warmup, emax=emax, damping=damping, jitter=jitter, validation=validation, patience=patience,
              bag_rule=bag_rule, learn_kernel=learn_kernel, kernel_steps=kernel_steps, kernel_bound=kernel_bound,
              logz_samples=logz_samples, time_limit=time_limit, random_state=random_state, verbose=verbose, mean=mean)
    if blas_threads is None:
        return _fit_vgpmil(X, ptr, y, **kw)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(blas_threads), user_api="blas"):
        return _fit_vgpmil(X, ptr, y, **kw)


def _check_options(H, variance, emax, damping, kernel_bound, mean, gsm):
    """One clear error for an option out of its range."""
    if not (H > 1):
        raise InvalidParameterError(f"H: the bag likelihood needs H > 1, got {H}")
    if not variance > 0:
        raise InvalidParameterError(f"variance: must be > 0, got {variance}")
    if emax not in ("max", "exact"):
        raise InvalidParameterError(f"emax: expected 'max' or 'exact', got {emax!r}")
    if not (0.0 < damping <= 1.0):
        raise InvalidParameterError(f"damping: expected a value in (0, 1], got {damping}")
    if kernel_bound not in ("elbo", "augmented"):
        raise InvalidParameterError(f"kernel_bound: expected 'elbo' or 'augmented', got {kernel_bound!r}")
    if mean not in ("zero", "constant"):
        raise InvalidParameterError(f"mean: expected 'zero' or 'constant', got {mean!r}")
    if mean == "constant" and gsm.name != "pg":
        # without log Z the bound grows without limit as m₀ → −∞ when ψ ≠ φ (e^{−f/2}ψ(f) is unbounded)
        raise InvalidParameterError("mean: 'constant' needs the logistic likelihood (theta='pg'); for other ψ the "
                                    "bound is unbounded in m₀ without log Z: use mean='zero'")


def _kernel_inputs(X, Z, n_inducing, inducing_init, lengthscale, random_state):
    """(l, Z): the length scale (default: the median squared distance) and the inducing inputs
    (default: ``n_inducing`` points of :func:`inducing_points`)."""
    if lengthscale is None:
        lengthscale = median_sq_distance(X, random_state=random_state)
    if not lengthscale > 0:
        raise InvalidParameterError(f"lengthscale: must be > 0, got {lengthscale}")
    if Z is None:
        Z = inducing_points(X, n_inducing, inducing_init, random_state)
    return lengthscale, np.asarray(Z, dtype=float)


def _initial_pi(pi_init, T_inst, random_state):
    """Initial q(y_n = 1): the bag label, ½ in positive bags, or U(0, 1) draws (Algorithm 1, line 2)."""
    if pi_init == "label":
        return T_inst.copy()
    if pi_init == "half":
        return 0.5 * T_inst
    if pi_init == "random":                                 # Algorithm 1, line 2: π_n ~ U(0, 1)
        return np.random.default_rng(random_state).uniform(0.0, 1.0, T_inst.shape[0])
    raise InvalidParameterError(f"pi_init: expected 'label', 'half' or 'random', got {pi_init!r}")


def _kernel_factors(X, Z, variance, lengthscale, jitter):
    r"""(L, B, k_nn − Q_nn): L Lᵀ = K_ZZ + jitter·v·I, B = L⁻¹K_ZX (M×N) and the conditional
    variances :math:`k_{nn} - Q_{nn}` with the actual k(x, x) = v."""
    M = Z.shape[0]
    Kzz = rbf_kernel(Z, Z, variance, lengthscale)
    Kzz[np.diag_indices(M)] += jitter * variance
    L = np.linalg.cholesky(Kzz)
    B = solve_triangular(L, rbf_kernel(Z, X, variance, lengthscale), lower=True, check_finite=False)  # M×N
    cond_var = np.maximum(variance - (B * B).sum(0), 0.0)
    return L, B, cond_var


def _update_qu(B, th, pi, mean, m0, eye):
    r"""q(u) in whitened coordinates (eq. 27): :math:`\tilde S^{-1} = I + B\Theta B^\top = R R^\top`,
    :math:`\tilde m = \tilde S B(\pi - \tfrac12)`; with ``mean='constant'`` (m̃, m₀) jointly.
    Returns (R, m̃, m₀), or None when θ(c) is not finite and positive (the fit diverged)."""
    P = eye + (B * th) @ B.T
    try:
        R = np.linalg.cholesky(P) if np.all(np.isfinite(th)) else None
    except np.linalg.LinAlgError:
        R = None
    if R is None:
        return None
    a = pi - 0.5
    if mean == "constant":
        # (m̃, m₀) jointly maximise the bound's quadratic Σ[a_n f̄_n − ½θ_n f̄_n²] − ½‖m̃‖², f̄ = Bᵀm̃ + m₀:
        # Schur complement of [[I + BΘBᵀ, BΘ1], [1ᵀΘBᵀ, 1ᵀΘ1]] (positive: 1ᵀ(Θ⁻¹ + BᵀB)⁻¹1)
        g = B @ th
        Pa = cho_solve((R, True), B @ a, check_finite=False)
        Pg = cho_solve((R, True), g, check_finite=False)
        m0 = float((a.sum() - g @ Pa) / (th.sum() - g @ Pg))
        mw = Pa - m0 * Pg
    else:
        mw = cho_solve((R, True), B @ a, check_finite=False)
    return R, mw, m0


def _update_qomega(B, R, mw, m0, cond_var, eye):
    r"""q(ω) (eq. 26): :math:`c^2 = \mathrm E[f^2] = \mu^2 + k_{nn} - Q_{nn} + b_n^\top\tilde S b_n`
    (S̃ = (R Rᵀ)⁻¹, a GEMM instead of a TRSM). Returns (S̃, μ, c)."""
    St = cho_solve((R, True), eye, check_finite=False)
    mu = B.T @ mw + m0
    s2 = cond_var + np.einsum("mn,mn->n", B, St @ B)
    return St, mu, np.sqrt(mu * mu + s2)


def _update_qy(pi, mu, T_inst, ptr, logH, y, emax, pi_steps, damping, in_warmup):
    """q(y) (eq. 25): monotone π block steps (none during the warm-up). Returns (π, max |Δπ|, step)."""
    dpi = 0.0
    step = 1.0
    for _ in range(0 if in_warmup else (1 if emax == "max" else max(1, pi_steps))):
        if emax == "max":
            new, step = _pi_update_max(pi, mu, T_inst, ptr, logH, damping)
        else:
            new, step = _pi_update(pi, mu, T_inst, ptr, logH, y)
        dpi = max(dpi, float(np.max(np.abs(new - pi))))
        pi = new
    return pi, dpi, step


def _elbo(St, mw, R, mu, c, pi, gsm, T_inst, ptr, logH, y, H):
    """(KL(q(u) ‖ p(u)), ELBO) with c tight (the θ terms cancel)."""
    M = mw.shape[0]
    kl = 0.5 * (float(np.trace(St)) + float(mw @ mw) - M + 2.0 * float(np.log(np.diag(R)).sum()))
    elbo = (-0.5 * float(mu.sum()) + float(gsm.log_psi(c).sum()) + gsm.const * mu.shape[0] - kl
            + _pi_block(pi, mu, T_inst, ptr, logH, y) - (ptr.size - 1) * math.log1p(1.0 / H))
    return kl, elbo


def _validation_auc(post, validation, bag_rule):
    """AUC of the validation bags' scores (largest instance probability or the noisy-or logit)."""
    from sklearn.metrics import roc_auc_score

    Xv, pv, yv = validation
    pb, _, logit, p_inst, _ = post.bag_proba(Xv, pv)
    score = segment_max(p_inst, np.asarray(pv)) if bag_rule == "max" else logit
    return float(roc_auc_score(yv, score)) if np.unique(yv).size == 2 else float("nan")


def _kernel_step(X, Z, L, mw, St, th, pi, variance, lengthscale, jitter, kernel_steps, bounds, gsm, kernel_bound,
                 logz_samples, seed, m0):
    """Algorithm 1, line 8: (v, l, record) after the kernel step at fixed q(u) and π, with q(u) back in
    the unwhitened coordinates m = L m̃, S = L S̃ Lᵀ (``elbo._learn_kernel``)."""
    m_u = L @ mw
    S_u = (L @ St) @ L.T
    return _learn_kernel(X, Z, m_u, 0.5 * (S_u + S_u.T), th, pi - 0.5, variance, lengthscale, jitter, kernel_steps,
                         bounds, gsm, kernel_bound, logz_samples, seed, mean=m0)


def _fit_vgpmil(X, ptr, y, *, Z, n_inducing, inducing_init, variance, lengthscale, H, theta, alpha, beta, max_iter, tol,
                pi_steps, pi_init, warmup, emax, damping, jitter, validation, patience, bag_rule, learn_kernel, kernel_steps,
                kernel_bound, logz_samples, time_limit, random_state, verbose, mean="zero"):
    """Algorithm 1: per epoch θ(c) (eq. 28), q(u) (eq. 27), q(ω) (eq. 26), q(y) (eq. 25), the ELBO,
    then the kernel step (line 8)."""
    t_start = time.perf_counter()
    X, ptr, y = _check_inputs(X, ptr, y)
    gsm = make_gsm(theta, alpha, beta)
    _check_options(H, variance, emax, damping, kernel_bound, mean, gsm)
    lengthscale, Z = _kernel_inputs(X, Z, n_inducing, inducing_init, lengthscale, random_state)
    logH = math.log(H)                                      # inf when H = inf
    T_inst = np.repeat(y, np.diff(ptr)).astype(float)
    M = Z.shape[0]
    L, B, cond_var = _kernel_factors(X, Z, variance, lengthscale, jitter)
    bounds = [(math.log(variance) - 4.6, math.log(variance) + 4.6), (math.log(lengthscale) - 4.6,
                                                                   math.log(lengthscale) + 4.6)]
    pi = _initial_pi(pi_init, T_inst, random_state)
    c = np.sqrt(np.full(X.shape[0], variance))              # prior E[f²] = v
    m0 = 0.0
    history = []
    best = None
    best_auc = -np.inf
    bad = 0
    prev = None
    termination = Termination.ITERATION_LIMIT
    eye = np.eye(M)
    it = 0
    post = None
    warmup_end = int(warmup)
    for it in range(1, max_iter + 1):
        qu = _update_qu(B, gsm.theta(c), pi, mean, m0, eye)
        if qu is None:                           # θ(c) not finite and positive: the fit diverged
            termination = _diverged(post)
            break
        R, mw, m0 = qu
        St, mu, c = _update_qomega(B, R, mw, m0, cond_var, eye)
        if not np.all(np.isfinite(c)):           # latent mean or variance not finite: the fit diverged
            termination = _diverged(post)
            break
        in_warmup = it <= warmup_end
        pi, dpi, step = _update_qy(pi, mu, T_inst, ptr, logH, y, emax, pi_steps, damping, in_warmup)
        kl, elbo = _elbo(St, mw, R, mu, c, pi, gsm, T_inst, ptr, logH, y, H)
        rec = {"iteration": it, "elbo": elbo, "objective": elbo, "kl": kl, "max_dpi": dpi, "pi_step": step, "mean": m0,
               "warmup": in_warmup, "seconds": time.perf_counter() - t_start}
        post = VGPMILPosterior(Z, float(variance), float(lengthscale), L, R, mw, jitter, m0)
        if validation is not None:
            rec["val_auc"] = auc = _validation_auc(post, validation, bag_rule)
            if auc > best_auc + 1e-12:
                best_auc, best, bad = auc, (post, pi.copy(), it), 0
            else:
                bad += 1
        history.append(rec)
        if verbose:
            print(" ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))
        if validation is not None and bad >= patience:
            termination = Termination.EARLY_STOPPED      # validation AUC stopped improving
            break
        converged = prev is not None and abs(elbo - prev) <= tol * max(1.0, abs(elbo)) and dpi < 1e-3
        if converged and in_warmup:
            warmup_end = it                 # the single-instance fit has converged: start the MIL updates
            prev = None
        elif converged:
            termination = Termination.CONVERGED          # ELBO and π stationary (a local optimum of the bound)
            break
        else:
            prev = elbo
        if time_limit is not None and time.perf_counter() - t_start > time_limit:
            termination = Termination.TIME_LIMIT
            break
        if learn_kernel and not in_warmup:
            v_new, l_new, kinfo = _kernel_step(X, Z, L, mw, St, gsm.theta(c), pi, variance, lengthscale, jitter,
                                               kernel_steps, bounds, gsm, kernel_bound, logz_samples,
                                               random_state + it, m0)
            rec.update(kinfo)
            if (v_new, l_new) != (variance, lengthscale):
                variance, lengthscale = v_new, l_new
                L, B, cond_var = _kernel_factors(X, Z, variance, lengthscale, jitter)
                prev = None                  # the bound moved: measure convergence afresh
        rec["variance"], rec["lengthscale"] = float(variance), float(lengthscale)
    return _fit_result(post, pi, it, history, best, best_auc, validation, termination, gsm, H, alpha, beta, M,
                       time.perf_counter() - t_start)


def _fit_result(post, pi, it, history, best, best_auc, validation, termination, gsm, H, alpha, beta, M, seconds):
    """(posterior, π, SolveResult): the last epoch, or the best validation epoch with early stopping."""
    extra = {"n_inducing": M, "mean": float(post.mean), "variance": float(post.variance),
             "lengthscale": float(post.lengthscale), "H": float(H), "theta": gsm.name, "alpha": float(alpha),
             "beta": float(beta)}
    objective = history[-1]["elbo"]
    if validation is not None and best is not None:
        post, pi, best_it = best
        objective = history[best_it - 1]["elbo"]
        extra.update({"best_iteration": best_it, "val_auc": best_auc, "last_iteration_elbo": history[-1]["elbo"]})
    res = native("vgpmil", termination, objective, seconds, iterations=it, history=history,
                 extra=extra, version=f"milopt-vgpmil ({gsm.name})")
    return post, pi, res
