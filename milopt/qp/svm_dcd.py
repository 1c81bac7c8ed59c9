r"""Dual two-coordinate descent (SMO-type) for SVMs with *grouped* slacks.

Solves the dual of Kent & Yu's convex MI-SVM subproblem (their eq. 3) for a fixed effective
set :math:`E` (every instance of a negative bag plus one witness per positive bag):

.. math::

    \max_\alpha\; & \sum_{i\in E}\alpha_i - \tfrac12 \sum_{i,j\in E} \alpha_i\alpha_j y_i y_j K_{ij} \\
    \text{s.t.}\; & \textstyle\sum_{i\in E} y_i\alpha_i = 0,\quad \alpha_i \ge 0,\quad
    \sum_{i \in E \cap g} \alpha_i \le C_g \ \text{ for every slack group } g .

A group is a negative bag in the bag-slack form (one slack per bag) and a single instance in
Andrews' instance-slack form; a positive bag's group holds only its witness.  With
:math:`s_g = C_g - \sum_{g}\alpha_i` the group's slack, an iteration picks the most violating
pair among (a) libsvm's first-order working set, where "α_i may grow" means "its group has
slack left", and (b) an exchange inside a saturated group (raise the instance with the smallest
gradient, lower the one with the largest); both keep :math:`\sum y_i\alpha_i = 0` and the group
caps, and the exact line minimisation over the pair is closed-form.  Each step costs O(n)
vector work (selection and the gradient update with two kernel columns); nothing is rebuilt
between calls: the solver keeps α and the gradient, so a witness change in the MI-SVM
alternation is a warm start that moves one α per positive bag (:meth:`GroupSVMDual.move`).

At an optimum the intercept is recovered from the KKT conditions (Kent & Yu eq. 4), averaged
over the *free* indices (0 < α_i, group not at its cap); when there are none, the midpoint of
the interval allowed by the KKT conditions is used.
"""
from __future__ import annotations

import numpy as np

from milopt.errors import InvalidDataError, InvalidParameterError

__all__ = ["GroupSVMDual"]


class _LinearRows:
    """Rows of the linear kernel X Xᵀ computed on demand (with a small cache) instead of the
    n × n matrix: for large effective sets with few features (MUSK2: 6,598 × 166)."""

    def __init__(self, X, cache_rows=256):
        self.X = X
        self.shape = (X.shape[0], X.shape[0])
        self.cache = {}
        self.cache_rows = int(cache_rows)

    def diagonal(self):
        return np.einsum("ij,ij->i", self.X, self.X)

    def __getitem__(self, i):
        i = int(i)
        r = self.cache.get(i)
        if r is None:
            if len(self.cache) >= self.cache_rows:
                self.cache.pop(next(iter(self.cache)))
            r = self.X @ self.X[i]
            self.cache[i] = r
        return r

    def rows(self, idx):
        return self.X[np.asarray(idx)] @ self.X.T


class GroupSVMDual:
    """Dual solver over a fixed instance set with a kernel matrix computed once.

    Parameters
    ----------
    K : ndarray (n, n) or None
        Kernel matrix of all instances (only the active ones enter the problem); None with
        ``X`` for the linear kernel, whose rows are then computed on demand.
    y : ndarray (n,)
        Labels ±1.
    groups : ndarray of int (n,)
        Slack group of every instance, non-decreasing (groups contiguous).
    caps : ndarray (n_groups,)
        Cost C_g of every group's slack.
    tol : float
        Stopping tolerance on the maximal KKT violation (libsvm's ``eps``).
    max_iter : int
        Iteration limit per :meth:`solve` call.
    X : ndarray (n, d), optional
        Linear-kernel features used when ``K`` is None.
    cache_rows : int
        Kernel rows kept in the cache (``X`` mode).
    """

    def __init__(self, K, y, groups, caps, tol=1e-3, max_iter=1_000_000, X=None, cache_rows=256):
        if K is None:
            if X is None:
                raise InvalidDataError("GroupSVMDual: pass a kernel matrix K or linear features X")
            K = _LinearRows(np.asarray(X, dtype=float), cache_rows)
        else:
            K = np.asarray(K, dtype=float)
        n = K.shape[0]
        if K.shape != (n, n):
            raise InvalidDataError(f"K: expected a square kernel matrix, got {K.shape}")
        y = np.asarray(y, dtype=float)
        groups = np.asarray(groups, dtype=np.int64)
        caps = np.asarray(caps, dtype=float)
        if y.shape != (n,) or groups.shape != (n,) or not np.all(np.isin(y, (-1.0, 1.0))):
            raise InvalidDataError("y/groups: expected one label ±1 and one group id per instance")
        if n and (groups[0] != 0 or np.any(np.diff(groups) < 0) or np.any(np.diff(groups) > 1)):
            raise InvalidDataError("groups: ids must be 0..G-1, non-decreasing (groups contiguous)")
        if caps.shape != (int(groups[-1]) + 1 if n else 0,) or np.any(~(caps > 0)):
            raise InvalidParameterError("caps: expected one positive cost per group")
        if not tol > 0:
            raise InvalidParameterError(f"tol: expected a positive tolerance, got {tol}")
        self.K, self.y, self.groups, self.caps = K, y, groups, caps
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.gptr = np.concatenate(([0], np.flatnonzero(np.diff(groups)) + 1, [n])).astype(np.int64)
        self.multi = np.diff(self.gptr) > 1      # groups where exchanges are possible
        self.diag = K.diagonal().copy()
        self.alpha = np.zeros(n)
        self.F = y.copy()               # −y ∘ ∇f with ∇f = Qα − 1 (α = 0)
        self.gsum = np.zeros(caps.size)
        self.active = np.zeros(n, dtype=bool)
        self.iterations = 0

    # ------------------------------------------------------------------ state
    def set_active(self, active) -> None:
        """Change the effective set; instances leaving it must carry α = 0."""
        active = np.asarray(active, dtype=bool)
        if np.any(self.alpha[~active] > 0):
            raise InvalidParameterError("set_active: an instance with α > 0 cannot leave the effective set; "
                                        "use move() first")
        self.active = active.copy()

    def move(self, src, dst) -> None:
        """Warm start for a witness change: transfer α from instances ``src`` to ``dst`` (same groups)."""
        src = np.atleast_1d(np.asarray(src, dtype=np.int64))
        dst = np.atleast_1d(np.asarray(dst, dtype=np.int64))
        if np.any(self.groups[src] != self.groups[dst]) or np.any(self.y[src] != self.y[dst]):
            raise InvalidParameterError("move: source and destination must share group and label")
        a = self.alpha[src].copy()
        nz = a > 0
        if np.any(nz):
            s, d, a = src[nz], dst[nz], a[nz]
            # gradient update with the changed columns: Q[:, d] a − Q[:, s] a (vectorised)
            coef = self.y[d] * a
            self.F -= coef @ self.K.rows(d) - (self.y[s] * a) @ self.K.rows(s) if isinstance(self.K, _LinearRows) \
                else coef @ self.K[d] - (self.y[s] * a) @ self.K[s]
            self.alpha[s] = 0.0
            self.alpha[d] += a
            self.gsum = np.add.reduceat(self.alpha, self.gptr[:-1])
        act = self.active.copy()
        act[src] = False
        act[dst] = True
        self.active = act

    # ------------------------------------------------------------------ solve
    def _pens(self, idx=None):
        """(Re)compute the selection masks as additive penalties (0 or ∓inf) for rows ``idx``."""
        y, alpha, act = self.y, self.alpha, self.active
        if idx is None:
            idx = slice(None)
        open_ = (self.caps - self.gsum > 1e-12 * self.caps)[self.groups[idx]]
        haspos = alpha[idx] > 0
        yp, yn, a = y[idx] > 0, y[idx] < 0, act[idx]
        up = a & ((yp & open_) | (yn & haspos))
        low = a & ((yn & open_) | (yp & haspos))
        self._up[idx] = np.where(up, 0.0, -np.inf)
        self._low[idx] = np.where(low, 0.0, np.inf)

    def _refresh_group(self, g):
        s, e = int(self.gptr[g]), int(self.gptr[g + 1])
        if e - s > 8:
            self._pens(slice(s, e))
            return
        open_ = self.caps[g] - self.gsum[g] > 1e-12 * self.caps[g]
        up, low, y, alpha, act = self._up, self._low, self.y, self.alpha, self.active
        for k in range(s, e):      # a handful of scalars: cheaper than numpy calls
            if not act[k]:
                continue
            pos, has = y[k] > 0, alpha[k] > 0
            up[k] = 0.0 if ((pos and open_) or (not pos and has)) else -np.inf
            low[k] = 0.0 if ((not pos and open_) or (pos and has)) else np.inf

    def _within(self):
        """Most violating exchange inside a saturated group: (violation, group)."""
        sat = ~(self.caps - self.gsum > 1e-12 * self.caps) & self.multi
        if not sat.any():
            return -np.inf, -1
        G = -self.y * self.F
        Gmin = np.minimum.reduceat(np.where(self.active, G, np.inf), self.gptr[:-1])
        Gmax = np.maximum.reduceat(np.where(self.active & (self.alpha > 0), G, -np.inf), self.gptr[:-1])
        wg = np.where(sat, Gmax - Gmin, -np.inf)
        g = int(np.argmax(wg))
        return float(wg[g]), g

    def solve(self):
        """Run SMO steps from the current α until the KKT violation is below ``tol``.

        Returns
        -------
        dict with ``iterations`` (this call), ``violation``, ``converged``.
        """
        y, alpha, caps, gid, K, diag, gptr = self.y, self.alpha, self.caps, self.groups, self.K, self.diag, self.gptr
        F = self.F                      # F = −y ∘ ∇f  (libsvm's −y_i ∇_i f)
        n = y.size
        self._up = np.empty(n)
        self._low = np.empty(n)
        self._pens()
        it = 0
        viol = np.inf
        stalled = 0
        check_within = True
        while it < self.max_iter:
            Fu = F + self._up
            Fl = F + self._low
            i = int(np.argmax(Fu))
            j = int(np.argmin(Fl))
            gap_c = Fu[i] - Fl[j] if n else -np.inf
            if gap_c > self.tol:
                # second-order choice of j (Fan, Chen & Lin 2005): largest decrease -(F_i - F_j)^2 / a_ij
                bij = Fu[i] - Fl
                aij = np.maximum(diag[i] + diag - 2.0 * K[i], 1e-12)   # K[i]: a row (cached for X)
                j = int(np.argmin(np.where(bij > 0, -(bij * bij) / aij, np.inf)))
            if not np.isfinite(gap_c):
                gap_c = -np.inf
            exch = False
            if not gap_c > self.tol or check_within:
                gap_w, g = self._within()
                check_within = False
                if gap_w > max(gap_c, self.tol):
                    exch = True
                elif not gap_c > self.tol:
                    viol = max(gap_c, gap_w)
                    break
            if exch:
                s, e = gptr[g], gptr[g + 1]
                Gs = -y[s:e] * F[s:e]
                i = s + int(np.argmin(np.where(self.active[s:e], Gs, np.inf)))
                j = s + int(np.argmax(np.where(self.active[s:e] & (alpha[s:e] > 0), Gs, -np.inf)))
                di, dj = 1.0, -1.0
                check_within = True
            else:
                di, dj = y[i], -y[j]
            # slope of f along d = di e_i + dj e_j: di ∇_i f + dj ∇_j f with ∇f = −y F
            slope = -(di * y[i] * F[i] + dj * y[j] * F[j])
            Ki = K[i]
            curv = diag[i] + diag[j] - 2.0 * Ki[j]
            t = -slope / max(curv, 1e-12)
            if di < 0:
                t = min(t, alpha[i])
            if dj < 0:
                t = min(t, alpha[j])
            gi, gj = gid[i], gid[j]
            slack_i, slack_j = caps[gi] - self.gsum[gi], caps[gj] - self.gsum[gj]
            if gi == gj:
                net = di + dj
                if net > 0:
                    t = min(t, slack_i / net)
            else:
                if di > 0:
                    t = min(t, slack_i)
                if dj > 0:
                    t = min(t, slack_j)
            it += 1
            if not t > 0:
                stalled += 1
                if stalled > 50:
                    viol = max(gap_c, self.tol * 2)
                    break
                self.gsum = np.add.reduceat(alpha, gptr[:-1])
                self._pens()
                continue
            stalled = 0
            alpha[i] += di * t
            alpha[j] += dj * t
            for k, gk in ((i, gi), (j, gj)):
                if alpha[k] < 1e-14 * caps[gk]:
                    alpha[k] = 0.0
            self.gsum[gi] = alpha[gptr[gi]:gptr[gi + 1]].sum()
            if gj != gi:
                self.gsum[gj] = alpha[gptr[gj]:gptr[gj + 1]].sum()
            F -= (di * t * y[i]) * Ki + (dj * t * y[j]) * K[j]     # K symmetric: rows are columns
            self._refresh_group(gi)
            if gj != gi:
                self._refresh_group(gj)
        self.iterations += it
        return {"iterations": it, "violation": float(viol), "converged": bool(not viol > self.tol)}

    @property
    def G(self):
        """Gradient of f = ½ αᵀQα − Σα."""
        return -self.y * self.F

    # --------------------------------------------------------------- results
    def intercept(self) -> float:
        """b from the KKT conditions (Kent & Yu eq. 4), averaged over free indices."""
        y, alpha, act = self.y, self.alpha, self.active
        F = self.F
        open_ = (self.caps - self.gsum > 1e-9 * self.caps)[self.groups]
        free = act & (alpha > 1e-9 * self.caps[self.groups]) & open_
        if free.any():
            return float(F[free].mean())
        haspos = alpha > 0
        up = act & (((y > 0) & open_) | ((y < 0) & haspos))
        low = act & (((y < 0) & open_) | ((y > 0) & haspos))
        lo = F[up].max() if up.any() else -np.inf
        hi = F[low].min() if low.any() else np.inf
        if np.isfinite(lo) and np.isfinite(hi):
            return float(0.5 * (lo + hi))
        return float(lo if np.isfinite(lo) else hi if np.isfinite(hi) else 0.0)

    def raw_scores(self) -> np.ndarray:
        """Σ_j α_j y_j K(x_j, x_i) for every instance i (from the gradient: no extra product)."""
        return self.y - self.F

    def dual_objective(self) -> float:
        return float(self.alpha.sum() - 0.5 * self.alpha @ (self.y * self.raw_scores()))

    def norm2(self) -> float:
        """‖w‖² = αᵀQα."""
        return float(self.alpha @ (self.y * self.raw_scores()))

    def primal_objective(self, b=None) -> float:
        """½‖w‖² + Σ_g C_g ξ_g at the current α (active instances only)."""
        b = self.intercept() if b is None else b
        f = self.raw_scores() + b
        loss = np.where(self.active, np.maximum(0.0, 1.0 - self.y * f), 0.0)
        xi = np.maximum.reduceat(loss, self.gptr[:-1])
        return float(0.5 * self.norm2() + self.caps @ xi)
