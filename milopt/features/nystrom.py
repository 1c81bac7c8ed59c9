"""Nyström feature maps with stratified landmark sampling (Kent & Yu, Algorithm 2).

Landmarks :math:`Z = (z_1..z_m)` are sample points; with :math:`K_{mm} = U \\Lambda U^\\top`
(eigenvalues below ``tol * max`` dropped, keeping rank ``r``), the map

.. math:: \\varphi(x) = \\Lambda_r^{-1/2} U_r^\\top k(Z, x)

satisfies :math:`\\varphi(z_a)^\\top \\varphi(z_b) = (U_r \\Lambda_r U_r^\\top)_{ab} = K(z_a, z_b)`
exactly on the landmarks when :math:`K_{mm}` has full rank, and approximates ``k`` elsewhere.
The feature of a distributional instance is the mean of the mapped points of its sample, so
that inner products of instance features approximate the kernel mean embedding kernel.

**Stratified sampling** (:func:`stratified_sample`): every group (bag) gets at least one
landmark; the remaining ``m - n_groups`` landmarks are drawn uniformly without replacement
from the remaining points (so larger bags get proportionally more).
"""
from __future__ import annotations

import numpy as np

from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.features.kernels import check_kernel, kernel_matrix


def stratified_sample(groups, m: int, random_state=None) -> np.ndarray:
    """Indices of ``max(m, n_groups)`` points such that every group is represented.

    Parameters
    ----------
    groups : array of int (n_points,)
        Group (bag) of every point.
    m : int
        Requested number of landmarks; raised to the number of groups when smaller.
    random_state : int or Generator

    Returns
    -------
    idx : sorted ndarray of int
    """
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.size == 0:
        raise InvalidDataError("groups: expected a non-empty 1-D array of group ids")
    if not isinstance(m, (int, np.integer)) or m < 1:
        raise InvalidParameterError(f"m: expected a positive integer number of landmarks, got {m!r}")
    rng = np.random.default_rng(random_state)
    n = groups.size
    key = rng.random(n)
    order = np.lexsort((key, groups))                 # by group, random within group
    g_sorted = groups[order]
    first = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    chosen = order[first]                              # one random point per group
    m_eff = min(max(int(m), chosen.size), n)
    if m_eff > chosen.size:
        rest = np.setdiff1d(np.arange(n), chosen, assume_unique=False)
        extra = rng.choice(rest, size=m_eff - chosen.size, replace=False)
        chosen = np.concatenate([chosen, extra])
    return np.sort(chosen)


class NystromMap:
    """Nyström feature map of an RBF or linear kernel.

    Parameters
    ----------
    kernel, gamma : see :func:`milopt.features.kernels.check_kernel`
    tol : float
        Relative eigenvalue cut-off of :math:`K_{mm}`.
    rank : int, optional
        Keep at most this many leading eigenpairs (Kent & Yu's ``r``).
    """

    def __init__(self, kernel="rbf", gamma=None, tol=1e-10, rank=None):
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.rank = rank

    def fit(self, landmarks):
        Z = np.asarray(landmarks, dtype=float)
        self.kernel_, self.gamma_ = check_kernel(self.kernel, self.gamma, Z.shape[1])
        K = kernel_matrix(Z, None, self.kernel_, self.gamma_)
        lam, U = np.linalg.eigh(K)
        lam, U = lam[::-1], U[:, ::-1]
        keep = lam > self.tol * max(lam[0], 1e-300)
        if self.rank is not None:
            keep &= np.arange(lam.size) < int(self.rank)
        self.landmarks_ = Z
        self.components_ = U[:, keep] / np.sqrt(lam[keep])   # (m, r): U_r Λ_r^{-1/2}
        self.n_components_ = int(keep.sum())
        return self

    def transform(self, X, max_block: int = 4_000_000) -> np.ndarray:
        """φ(x) for every row of ``X`` (n, p) -> (n, r), in blocks of bounded memory."""
        X = np.asarray(X, dtype=float)
        m = self.landmarks_.shape[0]
        step = max(1, max_block // max(m, 1))
        out = np.empty((X.shape[0], self.n_components_))
        for s in range(0, X.shape[0], step):
            out[s:s + step] = kernel_matrix(X[s:s + step], self.landmarks_, self.kernel_, self.gamma_) @ self.components_
        return out

    def mean_features(self, samples, sample_ptr) -> np.ndarray:
        """Instance features: mean of the mapped points of each sample (n_instances, r)."""
        ptr = np.asarray(sample_ptr, dtype=np.int64)
        Phi = self.transform(samples)
        return np.add.reduceat(Phi, ptr[:-1], axis=0) / np.diff(ptr)[:, None]


def fit_bag_nystrom(bags, m=240, rank=None, kernel="rbf", gamma=None, random_state=None) -> NystromMap:
    """Nyström map from a stratified sample of the sample points of ``bags`` (every bag represented)."""
    if bags.samples is None:
        raise InvalidDataError("samples: the Nyström map of the mean embedding needs distributional instances")
    point_bag = np.repeat(bags.bag_index, np.diff(bags.sample_ptr))
    idx = stratified_sample(point_bag, m, random_state)
    nm = NystromMap(kernel, gamma, rank=rank).fit(bags.samples[idx])
    nm.sample_index_ = idx
    return nm
