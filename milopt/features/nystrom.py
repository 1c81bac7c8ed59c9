"""Nyström feature maps with stratified landmark sampling (Kent & Yu, Algorithm 2).

Landmarks :math:`Z = (z_1..z_m)` are sample points; with :math:`K_{mm} = U \\Lambda U^\\top`
(eigenvalues below ``tol * max`` dropped, keeping rank ``r``), the map

.. math:: \\varphi(x) = \\Lambda_r^{-1/2} U_r^\\top k(Z, x)

satisfies :math:`\\varphi(z_a)^\\top \\varphi(z_b) = (U_r \\Lambda_r U_r^\\top)_{ab} = K(z_a, z_b)`
exactly on the landmarks when :math:`K_{mm}` has full rank, and approximates ``k`` elsewhere.
The feature of a distributional instance is the mean of the mapped points of its sample, so
that inner products of instance features approximate the kernel mean embedding kernel.

**Stratified sampling** (:func:`stratified_sample`): Kent & Yu (§2.4.1, Algorithm 2 line 2)
take the landmarks as a stratified sub-sample "ensuring each slide-level group is represented
almost uniformly": every group (bag) gets ⌊m/G⌋ or ⌈m/G⌉ landmarks whatever its size (as the
authors' ``mildsvm::bag_instance_sampling``), spread in the same way over the group's
instances when instance ids are given, and drawn uniformly without replacement inside an
instance.  A group (or instance) with fewer points than its share gives all of them and the
rest is shared evenly among the others (water-filling), so the landmarks stay distinct.
``m`` is raised to the number of groups so that every group is represented.
"""
from __future__ import annotations

import numpy as np

from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.features.kernels import check_kernel, kernel_matrix


def _balanced_quota(cap, total: int, rng) -> np.ndarray:
    """Integer quotas q ≤ cap with Σq = min(total, Σcap), as equal as the caps allow: the
    water level L is the largest with Σ min(cap, L) ≤ total; the remainder goes one each to
    randomly chosen units with cap > L."""
    cap = np.asarray(cap, dtype=np.int64)
    total = int(min(total, cap.sum()))
    lo, hi = 0, int(cap.max(initial=0))
    while lo < hi:                                    # largest L with sum(min(cap, L)) <= total
        mid = (lo + hi + 1) // 2
        if np.minimum(cap, mid).sum() <= total:
            lo = mid
        else:
            hi = mid - 1
    q = np.minimum(cap, lo)
    r = total - int(q.sum())
    if r > 0:
        q[rng.choice(np.flatnonzero(cap > lo), size=r, replace=False)] += 1
    return q


def _pick_within(units, quota, rng) -> np.ndarray:
    """For unit ids ``units`` (per point, 0..U-1) take ``quota[u]`` points of every unit u
    uniformly without replacement (random keys, rank within unit)."""
    n = units.size
    order = np.lexsort((rng.random(n), units))
    u_sorted = units[order]
    starts = np.flatnonzero(np.r_[True, u_sorted[1:] != u_sorted[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, n]))
    rank = np.arange(n) - first
    return order[rank < quota[u_sorted]]


def stratified_sample(groups, m: int, random_state=None, subgroups=None) -> np.ndarray:
    """Indices of ``min(max(m, n_groups), n_points)`` distinct points spread almost uniformly
    over the groups (Kent & Yu, Algorithm 2 line 2).

    Parameters
    ----------
    groups : array of int (n_points,)
        Group (bag) of every point.
    m : int
        Requested number of landmarks; raised to the number of groups when smaller.
    random_state : int or Generator
    subgroups : array of int (n_points,), optional
        Instance of every point: inside a group the landmarks are spread evenly over its
        instances too.

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
    gid = np.unique(groups, return_inverse=True)[1].ravel()
    gsize = np.bincount(gid)
    m_eff = min(max(int(m), gsize.size), n)
    q_group = _balanced_quota(gsize, m_eff, rng)
    if subgroups is None:
        return np.sort(_pick_within(gid, q_group, rng))
    subgroups = np.asarray(subgroups)
    if subgroups.shape != groups.shape:
        raise InvalidDataError("subgroups: expected one instance id per point")
    # instances are numbered within (group, instance) pairs; quotas spread over a group's instances
    pair = np.unique(np.column_stack([gid, np.unique(subgroups, return_inverse=True)[1]]), axis=0,
                     return_inverse=True)[1].ravel()
    psize = np.bincount(pair)
    pgroup = np.zeros(psize.size, dtype=np.int64)
    pgroup[pair] = gid
    q_inst = np.zeros(psize.size, dtype=np.int64)
    order = np.argsort(pgroup, kind="stable")
    bounds = np.searchsorted(pgroup[order], np.arange(gsize.size + 1))
    for g in np.flatnonzero(q_group):          # one small allocation per represented group
        members = order[bounds[g]:bounds[g + 1]]
        q_inst[members] = _balanced_quota(psize[members], int(q_group[g]), rng)
    return np.sort(_pick_within(pair, q_inst, rng))


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
    """Nyström map from a stratified sample of the sample points of ``bags`` (every bag, and
    inside a bag every instance, represented almost uniformly)."""
    if bags.samples is None:
        raise InvalidDataError("samples: the Nyström map of the mean embedding needs distributional instances")
    sizes = np.diff(bags.sample_ptr)
    point_bag = np.repeat(bags.bag_index, sizes)
    point_inst = np.repeat(np.arange(bags.n_instances), sizes)
    idx = stratified_sample(point_bag, m, random_state, subgroups=point_inst)
    nm = NystromMap(kernel, gamma, rank=rank).fit(bags.samples[idx])
    nm.sample_index_ = idx
    return nm
