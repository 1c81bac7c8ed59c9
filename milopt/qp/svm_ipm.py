r"""Primal-dual interior-point method for the grouped-slack SVM dual (dense kernel).

The same problem as :mod:`milopt.qp.svm_dcd` (Kent & Yu eq. 3):

.. math::

    \min_\alpha \tfrac12 \alpha^\top Q \alpha - \mathbf 1^\top\alpha \quad
    \text{s.t. } y^\top\alpha = 0,\ A\alpha + s = c,\ \alpha \ge 0,\ s \ge 0,

with :math:`Q = yy^\top \circ K` and :math:`A` the group incidence matrix.  Mehrotra's
predictor-corrector; every Newton step eliminates the bound multipliers and solves
:math:`(Q + Z X^{-1} + A^\top \Lambda S^{-1} A)\,\Delta\alpha + y\,\Delta\nu = r` by one dense
Cholesky factorisation (the group term is constant on each group's diagonal block) and one
Schur complement for the equality (with the linear kernel given by its factor, K = V Vᵀ,
the Woodbury identity replaces the n × n factorisation by a d × d one: :class:`_LowRankNewton`).
~20-30 factorisations of an n × n matrix, no loop over
instances: the method of choice for the kernel subproblems of a few thousand instances or
less; its optimum is exact to ``tol`` (used as the reference of the SMO path in the tests).
The multiplier of :math:`y^\top\alpha = 0` is the intercept b.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
from scipy.linalg.lapack import dpotrf as _potrf, dpotrs as _potrs

from milopt.errors import NoSolutionError

__all__ = ["solve_group_dual_ipm", "solve_group_dual_ipm_lowrank"]


def solve_group_dual_ipm(K, y, groups, caps, tol=1e-9, max_iter=100):
    """Solve the grouped-slack SVM dual by an interior-point method (BLAS limited to one
    thread: small dense factorisations lose badly to thread oversubscription on a shared
    machine -- measured 14x slower on 2 loaded cores)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _ipm(K, y, groups, caps, tol, max_iter)


def solve_group_dual_ipm_lowrank(V, y, groups, caps, tol=1e-9, max_iter=100):
    """:func:`solve_group_dual_ipm` for the linear kernel K = V Vᵀ given by its factor V (n × d),
    without forming K (one thread, as there)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _ipm_lowrank(V, y, groups, caps, tol, max_iter)


class _DenseNewton:
    r"""Newton systems of the IPM with the dense matrix :math:`Q = yy^\top\circ K`: one Cholesky
    factorisation of the n × n matrix :math:`M = Q + \mathrm{diag}(\delta) + A^\top W A`
    per iteration (n³/3 flops)."""

    def __init__(self, K, y, g):
        self.Q = np.asarray(K, dtype=float) * np.outer(y, y)
        self.g = g
        # the group term is constant on each group's block: add it to the entries of groups
        # with more than one member only (flat indices), the diagonal separately
        n = g.size
        multi = np.bincount(g)[g] > 1
        rows = np.flatnonzero(multi)
        same = g[rows][:, None] == g[rows][None, :]
        ri, ci = np.nonzero(same)
        self.flat = rows[ri] * n + rows[ci]
        self.flat_g = g[rows[ri]]
        self.diag_flat = np.arange(n) * (n + 1)
        self.single = ~multi

    def qmul(self, a):
        return self.Q @ a

    def factor(self, delta, w):
        M = self.Q.copy()
        n = M.shape[0]
        flat = M.reshape(-1)
        flat[self.flat] += w[self.flat_g]
        flat[self.diag_flat] += delta + np.where(self.single, w[self.g], 0.0)
        reg = 0.0
        while True:   # late iterations can lose definiteness to rounding: regularise minimally
            # LAPACK directly (no copies, no finiteness checks: M is built from finite iterates)
            L, info = _potrf(M, lower=1, clean=0, overwrite_a=0)
            if info == 0:
                break
            if info < 0:
                raise NoSolutionError("svm-ipm: invalid Newton matrix; try the smo solver")
            reg = 1e-12 * (np.trace(M) / n) if reg == 0.0 else reg * 100.0
            if reg > 1e-2 * np.trace(M) / n:
                raise NoSolutionError("svm-ipm: Newton matrix not positive definite; try the smo solver") from None
            M[np.diag_indices(n)] += reg

        def solve(r):
            x, info = _potrs(L, r, lower=1)
            return x

        return solve


class _LowRankNewton:
    r"""Newton systems of the IPM for the linear kernel :math:`K = VV^\top` (V: n × d, d < n).

    With :math:`U = \mathrm{diag}(y) V`, :math:`M = B + UU^\top` where
    :math:`B = \mathrm{diag}(\delta) + A^\top W A` is block diagonal (one block
    :math:`\mathrm{diag}(\delta_g) + w_g \mathbf 1\mathbf 1^\top` per group, inverted in closed form by
    Sherman–Morrison).  By the Woodbury identity

    .. math::

        M^{-1} r = B^{-1} r - B^{-1} U\,(I_d + U^\top B^{-1} U)^{-1}\,U^\top B^{-1} r,

    one d × d Cholesky factorisation and one n × d × d product per iteration (n d² flops instead
    of n³/3), and K is never formed.  The solution is formed as :math:`B^{-1}(r - U p)` with
    :math:`(I_d + U^\top B^{-1} U)p = U^\top B^{-1} r`, so that the difference is taken at the
    scale of r, which stays accurate when δ spans many decades.  For node QPs on data with fewer
    features than effective instances (MUSK2: d = 166, n ≈ 5,600).
    """

    #: the Woodbury solves lose accuracy as the Newton matrix becomes singular (condition 1e15
    #: and beyond, late in the method), even with iterative refinement: the method then stops at
    #: its last iterate (``converged`` False) instead of stepping along an inaccurate direction;
    #: any iterate, made dual feasible, still gives a valid bound (weak duality), a slightly
    #: weaker one
    inaccurate = False

    def __init__(self, V, y, g, G):
        import scipy.sparse as sp

        self.U = np.asarray(V, dtype=float) * np.asarray(y, dtype=float)[:, None]
        self.g, self.G = g, G
        n = g.size
        self.A = sp.csr_matrix((np.ones(n), (g, np.arange(n))), shape=(G, n))   # group incidence

    def qmul(self, a):
        return self.U @ (self.U.T @ a)

    def factor(self, delta, w):
        g, G, U = self.g, self.G, self.U
        dinv = 1.0 / delta
        # group block g: (diag(δ_g) + w_g 11ᵀ)⁻¹ = D⁻¹ − ρ_g D⁻¹11ᵀD⁻¹ with ρ_g = w_g / (1 + w_g Σ_g δ⁻¹)
        rho = w / (1.0 + w * np.bincount(g, weights=dinv, minlength=G))

        def binv(r):
            # D⁻¹(r − ρ_g 1ᵀD⁻¹r): the group correction is subtracted at the scale of r
            if r.ndim == 2:
                sums = self.A @ (dinv[:, None] * r)
                return dinv[:, None] * (r - (rho[:, None] * sums)[g])
            return dinv * (r - (rho * np.bincount(g, weights=dinv * r, minlength=G))[g])

        C = U.T @ binv(U)
        C[np.diag_indices(C.shape[0])] += 1.0
        cf = sla.cho_factor(C, lower=True, check_finite=False)

        def once(r):
            # x = B⁻¹(r − U p): the difference is taken at the scale of r, before the (possibly
            # huge) B⁻¹ is applied, not as B⁻¹r − (B⁻¹U) p (which cancels catastrophically when
            # δ spans many decades late in the method)
            p = sla.cho_solve(cf, U.T @ binv(r), check_finite=False)
            return binv(r - U @ p)

        def solve(r):
            # iterative refinement with the exact product M x (O(n d) each); the most accurate
            # iterate is kept (refinement diverges when M is too ill-conditioned)
            scale = np.abs(r).max()
            x = once(r)
            best, best_x = math.inf, x
            for _ in range(4):
                res = r - (delta * x + (w * np.bincount(g, weights=x, minlength=G))[g] + U @ (U.T @ x))
                err = np.abs(res).max()
                if not err < best:
                    break
                best, best_x = err, x
                if err <= 1e-14 * scale:
                    break
                x = x + once(res)
            if not best <= 1e-3 * max(scale, 1e-300):
                self.inaccurate = True
            return best_x

        return solve


def _ipm(K, y, groups, caps, tol=1e-9, max_iter=100, rd_tol=1e-7, stop=None):
    """Solve the grouped-slack SVM dual by an interior-point method.

    Parameters
    ----------
    K : ndarray (n, n) kernel matrix of the effective instances
    y : ndarray (n,) labels ±1
    groups : ndarray of int (n,) group ids 0..G-1 (any order)
    caps : ndarray (G,) group costs
    tol : float
        Relative tolerance on complementarity and residuals.
    rd_tol : float
        Relative tolerance on the dual residual Qα − 1 + yν + Aᵀλ − z.
    stop : callable(alpha, Qalpha) -> bool, optional
        Checked at every iteration from the fourth on: True ends the method early
        (``converged`` False), e.g. once a dual-feasible projection of α is good enough.

    Returns
    -------
    dict: alpha, b (equality multiplier, intercept), iterations, dual (objective value of the
    maximisation form), converged, newton (the solver r ↦ M⁻¹r of the last Newton matrix
    M = Q + diag(z/α) + Aᵀ diag(λ/s) A, or None; near the optimum M⁻¹ acts on the free
    multipliers as the inverse of the reduced Hessian).
    """
    y = np.asarray(y, dtype=float)
    g = np.asarray(groups, dtype=np.int64)
    return _mehrotra(_DenseNewton(K, y, g), y, g, caps, tol, max_iter, rd_tol, stop)


def _ipm_lowrank(V, y, groups, caps, tol=1e-9, max_iter=100):
    """:func:`_ipm` for K = V Vᵀ (V: n × d), by :class:`_LowRankNewton`."""
    y = np.asarray(y, dtype=float)
    g = np.asarray(groups, dtype=np.int64)
    c = np.asarray(caps, dtype=float)
    return _mehrotra(_LowRankNewton(V, y, g, c.size), y, g, c, tol, max_iter)


def _mehrotra(lin, y, g, caps, tol, max_iter, rd_tol=1e-7, stop=None):
    """Mehrotra's predictor-corrector on the grouped-slack SVM dual; ``lin`` gives Q α and the
    solver of the eliminated Newton system (dense or low-rank)."""
    c = np.asarray(caps, dtype=float)
    n, G = y.size, c.size
    sizes = np.bincount(g, minlength=G).astype(float)
    Aop = lambda a: np.bincount(g, weights=a, minlength=G)  # noqa: E731
    alpha = 0.5 * c[g] / sizes[g]
    s = c - Aop(alpha)
    z = np.ones(n)
    lam = np.ones(G)
    nu = 0.0
    scale = max(1.0, float(np.abs(c).max()))
    m = n + G
    it = 0
    converged = False
    msolve = None
    for it in range(1, max_iter + 1):
        Qa = lin.qmul(alpha)
        rd = Qa - 1.0 + y * nu + lam[g] - z
        re = float(y @ alpha)
        rc = Aop(alpha) + s - c
        mu = (alpha @ z + s @ lam) / m
        if (mu < tol * scale and np.abs(rd).max() < rd_tol * (1 + np.abs(Qa).max())
                and abs(re) < 1e-9 * scale * n and np.abs(rc).max() < 1e-9 * scale):
            converged = True
            break
        if stop is not None and it > 3 and stop(alpha, Qa):
            break
        dz_a = z / alpha
        w = lam / s
        msolve = lin.factor(dz_a, w)
        v = msolve(y)
        yv = float(y @ v)

        def newton(r_az, r_sl):
            rhs = -rd - (r_sl / s + w * rc)[g] + r_az / alpha
            u = msolve(rhs)
            dnu = (float(y @ u) + re) / yv
            da = u - v * dnu
            dz = r_az / alpha - dz_a * da
            ds = -rc - Aop(da)
            dl = r_sl / s - w * ds
            return da, dz, ds, dl, dnu

        def step(x, dx):
            neg = dx < 0
            return min(1.0, float(np.min(-x[neg] / dx[neg]))) if neg.any() else 1.0

        # predictor
        da, dz, ds, dl, dnu = newton(-alpha * z, -s * lam)
        if getattr(lin, "inaccurate", False):
            break   # the Newton directions lost their accuracy: keep the current iterate
        ap = min(step(alpha, da), step(s, ds))
        ad = min(step(z, dz), step(lam, dl))
        mu_aff = ((alpha + ap * da) @ (z + ad * dz) + (s + ap * ds) @ (lam + ad * dl)) / m
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0  # mu underflows to 0 with caps near 1e-308
        # corrector
        da, dz, ds, dl, dnu = newton(sigma * mu - alpha * z - da * dz, sigma * mu - s * lam - ds * dl)
        if getattr(lin, "inaccurate", False):
            break
        ap = 0.99 * min(step(alpha, da), step(s, ds))
        ad = 0.99 * min(step(z, dz), step(lam, dl))
        alpha = alpha + ap * da
        s = s + ap * ds
        z = z + ad * dz
        lam = lam + ad * dl
        nu = nu + ad * dnu
        if not np.all(np.isfinite(alpha)):
            raise NoSolutionError("svm-ipm: numerical failure (non-finite iterate); try the smo solver")
    dual = float(alpha.sum() - 0.5 * alpha @ lin.qmul(alpha))
    return {"alpha": alpha, "b": float(nu), "iterations": it, "dual": dual, "converged": converged,
            "slack": s, "lam": lam, "newton": msolve}
