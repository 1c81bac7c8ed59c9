"""Kernels on vectors and on distributions (kernel mean embedding / support measure machine).

* :func:`check_kernel` validates a kernel name and its parameter (clear errors).
* :func:`kernel_matrix` -- linear ``x·y`` or RBF ``exp(-gamma ||x - y||^2)`` (kernlab/mildsvm
  convention: ``gamma`` is mildsvm's ``sigma``).
* :func:`mean_embedding_kernel` -- for distributional instances (instance *i* is a sample
  ``P_i`` of points), the support measure machine kernel of Muandet et al. (2012) used by
  Kent & Yu: :math:`K(P_i, Q_j) = \\frac{1}{n_i m_j}\\sum_{x \\in P_i}\\sum_{y \\in Q_j} k(x, y)`,
  computed blockwise: point-kernel blocks of at most ``max_block`` entries are reduced onto
  instances with segment sums, so memory stays bounded whatever the sample sizes.
"""
from __future__ import annotations

import numbers

import numpy as np

from milopt.errors import InvalidDataError, InvalidParameterError

KERNELS = ("linear", "rbf")


def check_kernel(kernel, gamma=None, n_features: int | None = None, X=None) -> tuple[str, float | None]:
    r"""Validate ``kernel`` and its parameter; returns ``(kernel, gamma)`` with gamma resolved.

    Parameters
    ----------
    kernel : {'linear', 'rbf'}
    gamma : float or 'scale' or 'auto' or None
        RBF width (positive, finite) of ``exp(-gamma ||x - y||^2)``.  ``None`` (the default of
        every estimator) and ``'scale'`` mean scikit-learn's ``gamma='scale'``,
        :math:`1 / (p \operatorname{Var}(X))` over all entries of the training matrix ``X``
        (:math:`p` features), so that :math:`\gamma\,E\|x - y\|^2 = 2` whatever the scale of
        the features; ``'auto'`` means ``1 / n_features`` (mildsvm's ``sigma = 1/p``).  On
        standardised features (``milopt fit`` standardises by default) the two agree, except
        that constant features, which standardisation leaves at 0, do not count under
        ``'scale'``.  Ignored for the linear kernel.
    n_features : int, optional
        Needed to resolve ``'auto'`` (and ``'scale'`` without ``X``).
    X : array (n, p), optional
        Training instances (or sample points) for ``'scale'``; without them ``'scale'`` is
        ``'auto'``.
    """
    if not isinstance(kernel, str) or kernel.lower() not in KERNELS:
        raise InvalidParameterError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")
    kernel = kernel.lower()
    if kernel == "linear":
        return kernel, None
    if gamma is None or (isinstance(gamma, str) and gamma in ("auto", "scale")):
        if n_features is None and X is None:
            raise InvalidParameterError(f"gamma: {gamma or 'scale'!r} needs the data; pass a positive float")
        p = max(int(n_features if n_features is not None else np.shape(X)[1]), 1)
        if gamma != "auto" and X is not None:
            v = float(np.var(X))
            if np.isfinite(v) and v > 0:
                return kernel, 1.0 / (p * v)
        return kernel, 1.0 / p
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise InvalidParameterError(f"gamma: expected a positive number, 'scale' or 'auto' for the rbf kernel, "
                                    f"got {gamma!r}")
    g = float(gamma)
    if not (np.isfinite(g) and g > 0):
        raise InvalidParameterError(f"gamma: the rbf width must be positive and finite, got {gamma!r} "
                                    "(try gamma=scale, i.e. 1/(n_features * X.var()))")
    return kernel, g


def sq_distances(X, Y, xx=None, yy=None):
    """Squared Euclidean distances between the rows of ``X`` and ``Y`` (clipped at 0)."""
    xx = np.einsum("ij,ij->i", X, X) if xx is None else xx
    yy = np.einsum("ij,ij->i", Y, Y) if yy is None else yy
    D = xx[:, None] + yy[None, :] - 2.0 * (X @ Y.T)
    np.maximum(D, 0.0, out=D)
    return D


def kernel_matrix(X, Y=None, kernel="linear", gamma=None) -> np.ndarray:
    """Kernel matrix between the rows of ``X`` (n, p) and ``Y`` (m, p) (``Y = X`` by default)."""
    X = np.asarray(X, dtype=float)
    Y = X if Y is None else np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise InvalidDataError(f"kernel_matrix: expected 2-D arrays with equal columns, got {X.shape} and {Y.shape}")
    kernel, gamma = check_kernel(kernel, gamma, X.shape[1])
    if kernel == "linear":
        return X @ Y.T
    D = sq_distances(X, Y)
    np.multiply(D, -gamma, out=D)
    return np.exp(D, out=D)


def _check_ptr(S, ptr, name):
    S = np.asarray(S, dtype=float)
    ptr = np.asarray(ptr, dtype=np.int64)
    if S.ndim != 2 or ptr.ndim != 1 or ptr[0] != 0 or ptr[-1] != S.shape[0] or np.any(np.diff(ptr) <= 0):
        raise InvalidDataError(f"{name}: expected points (n, p) and offsets from 0 to n with non-empty samples")
    return S, ptr


def mean_embedding_kernel(S, ptr, S2=None, ptr2=None, kernel="rbf", gamma=None,
                          max_block: int = 4_000_000, dtype=np.float64) -> np.ndarray:
    """Kernel between distributions: mean of ``k(x, y)`` over all pairs of their points.

    Parameters
    ----------
    S : ndarray (n_points, p)
        Points of the first set of distributions; distribution *i* owns ``S[ptr[i]:ptr[i+1]]``.
    ptr : ndarray of int (n_dist + 1,)
    S2, ptr2 : optional
        Second set (default: the first).
    kernel, gamma : see :func:`check_kernel`.
    max_block : int
        Largest number of point-kernel entries held in memory at once.
    dtype : numpy float type
        Precision of the point-kernel blocks (``float32`` halves time and memory; the
        reductions onto distributions are accumulated in float64).

    Returns
    -------
    K : ndarray (n_dist, n_dist2)
    """
    S, ptr = _check_ptr(S, ptr, "samples")
    if S2 is None:
        S2, ptr2 = S, ptr
    else:
        S2, ptr2 = _check_ptr(S2, ptr2, "samples (second set)")
    if S.shape[1] != S2.shape[1]:
        raise InvalidDataError(f"samples: {S.shape[1]} vs {S2.shape[1]} features")
    kernel, gamma = check_kernel(kernel, gamma, S.shape[1])
    n1, n2 = ptr.size - 1, ptr2.size - 1
    sz1, sz2 = np.diff(ptr), np.diff(ptr2)
    if kernel == "linear":  # mean embedding of the linear kernel = inner product of the means
        M1 = np.add.reduceat(S, ptr[:-1], axis=0) / sz1[:, None]
        M2 = np.add.reduceat(S2, ptr2[:-1], axis=0) / sz2[:, None]
        return M1 @ M2.T
    S = S.astype(dtype, copy=False)
    S2 = S2.astype(dtype, copy=False)
    yy = np.einsum("ij,ij->i", S2, S2)
    out = np.empty((n1, n2))
    rows_per_block = max(1, int(max_block // max(S2.shape[0], 1)))
    i = 0
    while i < n1:  # blocks of whole distributions (a loop over memory blocks, not over instances)
        j = int(np.searchsorted(ptr, ptr[i] + rows_per_block, side="right")) - 1
        j = min(max(j, i + 1), n1)
        Sb = S[ptr[i]:ptr[j]]
        D = sq_distances(Sb, S2, None, yy)
        np.multiply(D, D.dtype.type(-gamma), out=D)
        np.exp(D, out=D)
        Kb = np.add.reduceat(D, ptr2[:-1], axis=1, dtype=np.float64)   # (points in block, n2)
        Kb = np.add.reduceat(Kb, ptr[i:j] - ptr[i], axis=0)  # (j - i, n2)
        out[i:j] = Kb / sz1[i:j, None] / sz2[None, :]
        i = j
    return out


def instance_kernel(bags, bags2=None, kernel="linear", gamma=None, distributional=False, **kw) -> np.ndarray:
    """Instance kernel of :class:`~milopt.data.Bags` (vectors, or mean embeddings of samples)."""
    b2 = bags if bags2 is None else bags2
    if distributional:
        for b in (bags, b2):
            if b.samples is None:
                raise InvalidDataError("samples: this method needs distributional instances (per-instance samples, "
                                       "e.g. gen:kent-yu); the data has none")
        return mean_embedding_kernel(bags.samples, bags.sample_ptr, b2.samples, b2.sample_ptr,
                                     kernel=kernel, gamma=gamma, **kw)
    return kernel_matrix(bags.X, b2.X, kernel, gamma)
