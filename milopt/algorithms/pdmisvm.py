r"""pdMISVM: the primal-dual multi-instance SVM solved by a multi-block ADMM.

Paper: H. Seo, L. Brand, L. Saldana Barco, H. Wang, "Scaling multi-instance support vector
machine to breast cancer detection on the BreaKHis dataset", *Bioinformatics* 38 (2022), i92 ff.
(equation and section numbers below refer to it), after L. Brand, H. Seo, L. Saldana Barco,
H. Wang, "A linear primal-dual multi-instance SVM for big data classifications", ICDM 2021.  Reference implementation: ``minds-mines/pdMISVM.jl``.

Objective (eq. 1), ``K`` classes, bag :math:`X_i` (columns = instances), :math:`Y_{im} = +1`
when bag ``i`` has class ``m`` and :math:`-1` otherwise:

.. math::

    \min_{W, b}\; \tfrac12 \sum_m \|w_m\|^2
    + C \sum_i \sum_m \Big(1 - \big[\max_j (w_m^\top x_{ij} + b_m)
      - \max_j (w_{y_i}^\top x_{ij} + b_{y_i})\big] Y_{im}\Big)_+

Decision rule (eq. 2): :math:`\hat y = \arg\max_m \max_j (w_m^\top x_j + b_m)`.

Splitting (Algorithm 1): :math:`E = Y - Q + R`, :math:`Q = \operatorname{bagmax}(T)`,
:math:`T = W^\top X + b`, :math:`R = \operatorname{bagmax}(U)`,
:math:`U = W_y^\top X + b_y` (the own-class response, repeated in each of the K rows), so that
the loss is :math:`C \sum (Y \circ E)_+`.  Scaled augmented Lagrangian with multipliers
:math:`\Lambda, \Sigma, \Theta, \Omega, \Xi` and penalty :math:`\mu`; one iteration updates
W, b, E, Q, R, T, U in that order (each an exact block minimisation), then the multipliers
(:math:`\Lambda \mathrel{+}= \mu (E - Y + Q - R)` ...), then :math:`\mu \leftarrow \rho\mu`.
The derivation of every update is in ``docs/pdmisvm.md``.

Layout: instance arrays are ``(n_instances, K)`` (C order), bag arrays ``(n_bags, K)``; bag
maxima/argmaxima are ``np.*.reduceat`` over the bag offsets (no Python loop over bags).

W update variants:

* ``exact`` -- :math:`(I/\mu + X X^\top + K X'_m X_m'^\top) w_m = \text{rhs}_m`; the matrix
  :math:`A_m = X X^\top + K X'_m X_m'^\top` never changes, so it is eigendecomposed once
  (:math:`A_m = V_m \operatorname{diag}(\lambda_m) V_m^\top`) and each iteration is
  :math:`w_m = V_m\,[(V_m^\top \text{rhs}_m) / (\lambda_m + 1/\mu)]`: one pass
  :math:`X^\top G` plus :math:`O(K d^2)`.
* ``inexact`` -- one gradient step on the same quadratic with the exact line-search step
  :math:`s_m = \|g_m\|^2 / (\|g_m\|^2 + \mu\|X^\top g_m\|^2 + \mu K \|X_m'^\top g_m\|^2)`:
  one pass :math:`X^\top G` and one pass :math:`X g`, :math:`O(N d \bar n)` per iteration.
* kernel -- :func:`kernel_features` maps the instances to coordinates ``Z`` with
  :math:`Z Z^\top` = the Gram matrix (eigendecomposition of the Gram matrix, or a Nystroem
  approximation); the exact update on ``Z`` is the paper's kernel update (eqs. 11-12),
  because every W iterate lies in the span of the mapped training instances.
"""
from __future__ import annotations

import math
import numbers
import time

import numpy as np

from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.solvers.result import Termination, native

#: W-update variants: ``exact`` (the linear system through a once-computed eigendecomposition) and
#: ``inexact`` (one gradient step with exact line search)
VARIANTS = ("exact", "inexact")
#: the bag-max proximal step (:func:`prox_bag_max`): ``exact`` minimiser or the ``paper``'s closed form
MAX_PROX = ("exact", "paper")
#: kernels of the kernel variant (through :func:`kernel_features`)
KERNELS = ("linear", "rbf")

__all__ = ["check_params", "objective", "objective_loop", "bag_responses", "prox_bag_max", "pdmisvm_admm",
           "kernel_features", "kernel_matrix", "VARIANTS", "MAX_PROX", "KERNELS"]


# ----------------------------------------------------------------------------- validation
def _real(name, value, *, lo=None, lo_open=True, hi=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise InvalidParameterError(f"{name}: expected a finite number, got {value!r}")
    v = float(value)
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise InvalidParameterError(f"{name}: must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    return v


def check_params(C=1.0, mu=1e-3, rho=1.2, max_iter=1000, tol=1e-6, variant="exact", max_prox="exact"):
    """Validate the ADMM hyper-parameters; raise :class:`InvalidParameterError` naming the fix.

    Returns
    -------
    dict with the validated values (floats / int / str).
    """
    C = _real("C", C)
    if C <= 0:
        raise InvalidParameterError(f"C: the hinge-loss weight must be > 0, got {C!r} (pdMISVM.jl default 1.0)")
    mu = _real("mu", mu)
    if mu <= 0:
        raise InvalidParameterError(f"mu: the initial ADMM penalty must be > 0, got {mu!r} (default 1e-3)")
    rho = _real("rho", rho)
    if rho <= 1:
        raise InvalidParameterError(f"rho: the penalty growth factor must be > 1 (mu <- rho*mu each iteration), "
                                    f"got {rho!r} (default 1.2)")
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise InvalidParameterError(f"max_iter: expected an integer >= 1, got {max_iter!r}")
    tol = _real("tol", tol)
    if tol <= 0:
        raise InvalidParameterError(f"tol: the residual tolerance must be > 0, got {tol!r} (default 1e-6)")
    if variant not in VARIANTS:
        raise InvalidParameterError(f"variant: expected one of {', '.join(VARIANTS)}, got {variant!r}")
    if max_prox not in MAX_PROX:
        raise InvalidParameterError(f"max_prox: expected one of {', '.join(MAX_PROX)}, got {max_prox!r}")
    return {"C": C, "mu": mu, "rho": rho, "max_iter": int(max_iter), "tol": tol, "variant": variant,
            "max_prox": max_prox}


def _check_problem(X, ptr, y, K):
    X = np.asarray(X)
    if X.ndim != 2 or X.dtype.kind != "f":
        raise InvalidDataError(f"X: expected a float matrix (instances x features), got {X.dtype} shape {X.shape}")
    ptr = np.asarray(ptr, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    if ptr.ndim != 1 or ptr.size != y.size + 1 or ptr[0] != 0 or ptr[-1] != X.shape[0] or np.any(np.diff(ptr) <= 0):
        raise InvalidDataError("ptr: expected n_bags+1 increasing offsets from 0 to n_instances (no empty bag)")
    if K is None:
        K = int(y.max()) + 1
    if y.size and (y.min() < 0 or y.max() >= K):
        raise InvalidDataError(f"y: class ids must lie in 0..{K - 1}, got {y.min()}..{y.max()}")
    if K < 2:
        raise InvalidDataError("y: pdMISVM needs at least two classes")
    return X, ptr, y, int(K)


# ----------------------------------------------------------------------------- objective
def bag_responses(W, b, X, ptr):
    """Bag responses :math:`\\max_j (w_m^\\top x_j + b_m)`, shape (n_bags, K)."""
    return np.maximum.reduceat(X @ W + b, ptr[:-1], axis=0)


def _objective_from_P(W, Pb, ptr, y, C):
    # C: a number, or one cost per bag (shape (n_bags, 1): class weights)
    n, K = Pb.shape
    starts = ptr[:-1]
    bag = np.repeat(np.arange(y.size), np.diff(ptr))
    yi = y[bag]
    Sm = np.maximum.reduceat(Pb, starts, axis=0)                       # max_j w_m'x + b_m
    Sy = np.maximum.reduceat(Pb[np.arange(n), yi], starts)             # max_j w_y'x + b_y
    Y = np.where(np.arange(K)[None, :] == y[:, None], 1.0, -1.0)
    hinge = np.maximum(1.0 - (Sm - Sy[:, None]) * Y, 0.0)
    return 0.5 * float(np.sum(W * W)) + float(np.sum(C * hinge))


def objective(W, b, X, ptr, y, C):
    """Eq. 1 for linear responses, vectorised over bags.

    Parameters
    ----------
    W : ndarray, shape (n_features, K)
    b : ndarray, shape (K,)
    X : ndarray, shape (n_instances, n_features)
    ptr : ndarray, shape (n_bags + 1,)
    y : ndarray of int, shape (n_bags,), class ids 0..K-1
    C : float
    """
    return _objective_from_P(W, X @ W + b, np.asarray(ptr), np.asarray(y), C)


def objective_loop(W, b, X, ptr, y, C):
    """Eq. 1 written literally, one bag and one class at a time (a slow reference for tests)."""
    W = np.asarray(W, dtype=float)
    K = W.shape[1]
    total = 0.0
    for m in range(K):
        total += 0.5 * float(W[:, m] @ W[:, m])
    for i in range(len(ptr) - 1):
        Xi = X[ptr[i]:ptr[i + 1]]
        yi = int(y[i])
        own = max(float(x @ W[:, yi] + b[yi]) for x in Xi)
        for m in range(K):
            resp = max(float(x @ W[:, m] + b[m]) for x in Xi)
            ym = 1.0 if m == yi else -1.0
            total += C * max(0.0, 1.0 - (resp - own) * ym)
    return total


# ----------------------------------------------------------------------------- max prox
def _seg_argmax_cols(V, starts, sizes, mx):
    """First row index of the maximum of each column within each bag, shape (n_bags, K)."""
    n = V.shape[0]
    cand = np.where(V >= np.repeat(mx, sizes, axis=0), np.arange(n)[:, None], n)
    return np.minimum.reduceat(cand, starts, axis=0)


def prox_bag_max(Phi, A, ptr, mode="exact", max_rounds=None):
    r"""Block minimiser of :math:`\tfrac12(\max_j t_j - a)^2 + \tfrac12\|t - \phi\|^2` for every bag and column.

    ``exact``: the minimiser caps the entries above a level :math:`\tau` at :math:`\tau`,
    :math:`\tau = (a + \sum_{\phi_j > \tau} \phi_j) / (1 + |\{\phi_j > \tau\}|)`; when
    :math:`a \ge \max\phi` only the (first) maximal entry moves, to :math:`(a + \max\phi)/2`.
    :math:`\tau` is found by Newton's method on the concave, increasing, piecewise-linear
    optimality function started at :math:`(a + \max\phi)/2` (monotone, finite: it stops when
    the capped set no longer changes; usually after 0-2 rounds), vectorised over all bags.
    ``paper``: the closed form of Algorithm 1 / pdMISVM.jl -- the argmax entry is set to
    :math:`(a + \max\phi)/2`, the others kept; it equals ``exact`` whenever that value is
    still >= the second largest entry.

    Parameters
    ----------
    Phi : ndarray, shape (n_instances, K)
    A : ndarray, shape (n_bags, K)
    ptr : ndarray, shape (n_bags + 1,)

    Returns
    -------
    T : ndarray, shape (n_instances, K)
    Tmax : ndarray, shape (n_bags, K)
        Bag maxima of ``T``.
    rounds : int
        Newton rounds used (0 for ``paper``).
    """
    ptr = np.asarray(ptr)
    starts = ptr[:-1]
    sizes = np.diff(ptr)
    mx = np.maximum.reduceat(Phi, starts, axis=0)
    am = _seg_argmax_cols(Phi, starts, sizes, mx)
    tau = 0.5 * (A + mx)
    cols = np.broadcast_to(np.arange(Phi.shape[1]), am.shape)
    if mode == "paper":
        T = Phi.copy()
        T[am, cols] = tau
        return T, np.maximum.reduceat(T, starts, axis=0), 0
    if max_rounds is None:
        max_rounds = int(sizes.max()) + 2
    rounds = 0
    if np.any(tau < mx):
        cnt_prev = None
        for rounds in range(1, max_rounds + 1):
            above = Phi > np.repeat(tau, sizes, axis=0)
            cnt = np.add.reduceat(above, starts, axis=0)
            if cnt_prev is not None and np.array_equal(cnt, cnt_prev):
                break
            s = np.add.reduceat(np.where(above, Phi, 0.0), starts, axis=0)
            tau = np.where(cnt > 0, (A + s) / (1.0 + cnt), tau)
            cnt_prev = cnt
    T = np.minimum(Phi, np.repeat(tau, sizes, axis=0))
    raise_ = tau >= mx                           # only the argmax moves (upwards)
    if np.any(raise_):
        T[am[raise_], cols[raise_]] = tau[raise_]
    return T, tau, rounds


# ----------------------------------------------------------------------------- kernels
def _resolve_gamma(gamma, X):
    d = X.shape[1]
    if gamma is None or gamma == "auto":
        return 1.0 / d
    if gamma == "scale":
        v = float(X.var())
        return 1.0 / (d * v) if v > 0 else 1.0 / d
    g = _real("gamma", gamma)
    if g <= 0:
        raise InvalidParameterError(f"gamma: the rbf width must be > 0, got {gamma!r} (or 'auto' = 1/n_features, 'scale')")
    return g


def kernel_matrix(A, B, kernel="rbf", gamma=1.0):
    """Linear ``A B'`` or RBF ``exp(-gamma ||a - b||^2)`` kernel matrix, shape (len(A), len(B))."""
    from milopt.features.kernels import kernel_matrix as _kernel_matrix

    return _kernel_matrix(A, B, kernel, gamma)


def kernel_features(X, kernel="rbf", gamma="auto", n_components=None, random_state=0, rel_tol=1e-10,
                    max_exact=20000):
    r"""Coordinates ``Z`` with :math:`Z Z^\top \approx` the Gram matrix, and the map for new points.

    ``n_components=None``: exact -- the Gram matrix ``G`` of all instances is eigendecomposed
    once, :math:`G = U \Lambda U^\top`, eigenvalues below ``rel_tol * max`` dropped,
    :math:`Z = U \Lambda^{1/2}` (so :math:`Z Z^\top = G`), and a new point maps to
    :math:`z(x) = \Lambda^{-1/2} U^\top k(X, x)` (exact on the training instances).
    ``n_components=r``: Nystroem with ``r`` landmark instances drawn without replacement
    (seeded): :math:`Z = k(X, L)\, U_L \Lambda_L^{-1/2}`.

    Returns
    -------
    Z : ndarray, shape (n_instances, r)
    support : ndarray, shape (s, n_features)
        Points the map is expressed in (all instances, or the landmarks).
    M : ndarray, shape (s, r)
        :math:`z(x) = k(x, \text{support})\, M`.
    gamma : float or None
    """
    if kernel not in KERNELS:
        raise InvalidParameterError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")
    g = _resolve_gamma(gamma, X) if kernel == "rbf" else None
    n = X.shape[0]
    if n_components is None or int(n_components) >= n:
        if n > max_exact:
            raise InvalidParameterError(
                f"kernel variant: the exact Gram matrix of {n} instances needs {n * n * 8 / 1e9:.1f} GB and an "
                f"O(n^3) eigendecomposition; set n_components (Nystroem landmarks, e.g. 1000)")
        support = X
    else:
        r = int(n_components)
        if r < 1:
            raise InvalidParameterError(f"n_components: expected an integer >= 1 or None, got {n_components!r}")
        rng = np.random.default_rng(random_state)
        support = X[np.sort(rng.choice(n, size=r, replace=False))]
    G = kernel_matrix(support, support, kernel, g)
    lam, U = np.linalg.eigh(G)
    keep = lam > rel_tol * max(float(lam[-1]), 1e-300)
    lam, U = lam[keep], U[:, keep]
    M = U / np.sqrt(lam)
    if support is X:
        Z = U * np.sqrt(lam)                    # = G M on the training points
    else:
        Z = kernel_matrix(X, support, kernel, g) @ M
    return np.ascontiguousarray(Z), support, M, g


# ----------------------------------------------------------------------------- ADMM
def _class_grams(X, yi, K, chunk=1 << 16):
    """Per-class Gram matrices X_m' X_m (d x d each), accumulated over row chunks."""
    d = X.shape[1]
    Gm = np.zeros((K, d, d))
    for s in range(0, X.shape[0], chunk):
        Xc, yc = X[s:s + chunk], yi[s:s + chunk]
        for m in range(K):
            Xm = Xc[yc == m]
            if Xm.shape[0]:
                Gm[m] += Xm.T @ Xm
    return Gm


def _init_W(X, yi, K):
    """Deterministic start: w_m along (mean of class-m instances - mean of all), unit norm."""
    xbar = X.mean(axis=0)
    cnt = np.bincount(yi, minlength=K).astype(float)
    import scipy.sparse as sp

    onehot = sp.csr_matrix((np.ones(yi.size), (yi, np.arange(yi.size))), shape=(K, yi.size))
    sums = np.asarray(onehot @ X)
    W = (sums / np.maximum(cnt, 1)[:, None] - xbar).T.copy()
    nrm = np.linalg.norm(W, axis=0)
    W /= np.where(nrm > 0, nrm, 1.0)
    return W


def pdmisvm_admm(X, ptr, y, K=None, *, C=1.0, mu=1e-3, rho=1.2, max_iter=1000, tol=1e-6, variant="exact",
                 max_prox="exact", W0=None, b0=None, callback=None, eig=None, bag_weights=None):
    """Run Algorithm 1 (multi-block ADMM) on flat MIL data.

    Parameters
    ----------
    X : ndarray, shape (n_instances, n_features)
        Instances grouped contiguously by bag.
    ptr : ndarray, shape (n_bags + 1,)
        Bag offsets.
    y : ndarray of int, shape (n_bags,)
        Class ids 0..K-1.
    K : int, optional
        Number of classes (default ``y.max() + 1``).
    C, mu, rho, max_iter, tol : float, float, float, int, float
        Hinge weight, initial penalty, penalty growth (mu <- rho mu), iteration budget, stop
        when the sum of the Frobenius norms of the five constraint residuals is < tol.
    variant : {'exact', 'inexact'}
        W update (see module docstring).
    max_prox : {'exact', 'paper'}
        T and U updates (see :func:`prox_bag_max`).
    W0, b0 : ndarray, optional
        Start (default: unit class-mean directions, b = 0); the auxiliary blocks start
        consistent with it (all residuals zero), multipliers at zero.
    callback : callable(iteration, W, b, record), optional
    eig : list of (eigenvalues, eigenvectors), optional
        Precomputed eigendecompositions of A_m (exact variant), e.g. reused across fits.
    bag_weights : ndarray (n_bags,), optional
        Per-bag multipliers of C (class weights: bag i's hinge terms cost C·bag_weights[i]); the
        E-update's proximal threshold becomes C·bag_weights[i]/mu row by row.  None: 1 (eq. 1).

    Returns
    -------
    W : ndarray, shape (n_features, K)
    b : ndarray, shape (K,)
    result : SolveResult
        solver "pdmisvm-admm", problem_class "native", termination CONVERGED (residual < tol) or
        ITERATION_LIMIT; ``history``: one dict per iteration with iteration, objective (eq. 1),
        residual, mu (used in that iteration), time (seconds since the call).
    """
    t0 = time.perf_counter()
    p = check_params(C, mu, rho, max_iter, tol, variant, max_prox)
    C, mu, rho, tol = p["C"], p["mu"], p["rho"], p["tol"]
    X, ptr, y, K = _check_problem(X, ptr, y, K)
    n, d = X.shape
    N = y.size
    starts = ptr[:-1]
    sizes = np.diff(ptr)
    bag = np.repeat(np.arange(N), sizes)
    yi = y[bag]
    rows = np.arange(n)
    n_own = np.bincount(yi, minlength=K).astype(float)
    Y = np.where(np.arange(K)[None, :] == y[:, None], 1.0, -1.0)
    if bag_weights is not None:
        bw = np.asarray(bag_weights, dtype=float).reshape(-1)
        if bw.shape != (N,) or not np.all(np.isfinite(bw)) or np.any(bw <= 0):
            raise InvalidParameterError(f"bag_weights: expected {N} positive finite numbers (one per bag)")
        C = C * bw[:, None]                     # (N, 1): broadcasts over the K columns

    if variant == "exact":
        if eig is None:
            Gm = _class_grams(X, yi, K)
            XtX = Gm.sum(axis=0)
            eig = []
            for m in range(K):
                lam, V = np.linalg.eigh(XtX + K * Gm[m])
                eig.append((np.maximum(lam, 0.0), V))
            del Gm, XtX
    W = _init_W(X, yi, K) if W0 is None else np.array(W0, dtype=float).reshape(d, K)
    b = np.zeros(K) if b0 is None else np.array(b0, dtype=float).reshape(K)

    P = X @ W                                   # W'X, kept in step with W
    Pb = P + b
    py = Pb[rows, yi]                           # own-class response w_y'x + b_y
    T = Pb.copy()
    U = np.repeat(py[:, None], K, axis=1)
    Tmax = np.maximum.reduceat(T, starts, axis=0)
    Umax = np.maximum.reduceat(U, starts, axis=0)
    Q = Tmax.copy()
    R = Umax.copy()
    E = Y - Q + R
    Lam = np.zeros((N, K)); Sig = np.zeros((N, K)); Omg = np.zeros((N, K))
    The = np.zeros((n, K)); Xi = np.zeros((n, K))
    setup = time.perf_counter() - t0

    history = []
    term = Termination.ITERATION_LIMIT
    res = math.inf
    it = 0
    prox_rounds = 0
    for it in range(1, p["max_iter"] + 1):
        im = 1.0 / mu
        # ---- W (per class, all classes at once)
        urow = (U + Xi * im).sum(axis=1)            # sum over the K copies of the own-class row
        if variant == "exact":
            G = T + The * im - b
            G[rows, yi] += urow - K * b[yi]
            rhs = X.T @ G
            for m in range(K):
                lam, V = eig[m]
                W[:, m] = V @ ((V.T @ rhs[:, m]) / (lam + im))
            P = X @ W
        else:
            G = T - Pb + The * im
            G[rows, yi] += urow - K * py
            g = W - mu * (X.T @ G)
            Xg = X @ g
            gg = np.einsum("ij,ij->j", g, g)
            own = np.bincount(yi, weights=Xg[rows, yi] ** 2, minlength=K)
            den = gg + mu * np.einsum("ij,ij->j", Xg, Xg) + mu * K * own
            s = np.divide(gg, den, out=np.zeros(K), where=den > 0)
            W -= g * s
            P -= Xg * s
        # ---- b
        num = (T - P + The * im).sum(axis=0)
        num += np.bincount(yi, weights=urow - K * P[rows, yi], minlength=K)
        b = num / (n + K * n_own)
        Pb = P + b
        py = Pb[rows, yi]
        # ---- E: prox of C (Y o E)_+
        S = Y - Q + R - Lam * im
        ys = Y * S
        thr = C * im
        E = np.where(ys > thr, S - Y * thr, np.where(ys >= 0.0, 0.0, S))
        # ---- Q, R
        Q = 0.5 * (Y - E + R - Lam * im + Tmax - Sig * im)
        R = 0.5 * (E - Y + Q + Lam * im + Umax - Omg * im)
        # ---- T, U: prox of the bag maximum
        T, Tmax, r1 = prox_bag_max(Pb - The * im, Q + Sig * im, ptr, max_prox)
        U, Umax, r2 = prox_bag_max(py[:, None] - Xi * im, R + Omg * im, ptr, max_prox)
        prox_rounds = max(prox_rounds, r1, r2)
        # ---- residuals and multipliers
        rE = E - Y + Q - R
        rQ = Q - Tmax
        rT = T - Pb
        rR = R - Umax
        rU = U - py[:, None]
        Lam += mu * rE
        Sig += mu * rQ
        The += mu * rT
        Omg += mu * rR
        Xi += mu * rU
        res = float(np.linalg.norm(rE) + np.linalg.norm(rQ) + np.linalg.norm(rT) + np.linalg.norm(rR)
                    + np.linalg.norm(rU))
        rec = {"iteration": it, "objective": _objective_from_P(W, Pb, ptr, y, C), "residual": res, "mu": mu,
               "time": time.perf_counter() - t0}
        history.append(rec)
        if callback is not None:
            callback(it, W, b, rec)
        if not math.isfinite(res):
            term = Termination.ERROR
            break
        if res < tol:
            term = Termination.CONVERGED
            break
        mu *= rho
    wall = time.perf_counter() - t0
    obj = history[-1]["objective"] if history else _objective_from_P(W, Pb, ptr, y, C)
    result = native(
        "pdmisvm-admm", term, obj, wall, iterations=it, history=history,
        extra={"variant": variant, "max_prox": max_prox, "C": p["C"], "class_weighted": bag_weights is not None, "mu0": p["mu"], "rho": rho, "tol": tol,
               "final_mu": mu, "residual": res, "setup_seconds": setup, "n_bags": N, "n_instances": n,
               "n_features": d, "n_classes": K, "max_prox_rounds": prox_rounds,
               "note": "termination 'converged' means the ADMM residuals met tol (a stationary point of a "
                       "non-convex problem); nothing is proven about global optimality"})
    return W, b, result
