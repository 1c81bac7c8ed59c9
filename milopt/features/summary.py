"""Summary features of distributional instances (Kent & Yu's mi-SVM baselines).

For every instance (a sample of points) and every coordinate:

* ``univ1``: mean, standard deviation (n - 1 denominator, as R's ``sd``);
* ``univ2``: ``univ1`` plus skewness, kurtosis (moment estimators, non-excess, as R's
  ``moments::skewness`` / ``moments::kurtosis``), first and third quartiles (linear
  interpolation, R's default type 7);
* ``cor=True`` appends the p(p-1)/2 pairwise Pearson correlations within the sample.

Everything is computed with segment reductions over all instances at once (one loop over
the p coordinates for the quartiles, none over instances).
"""
from __future__ import annotations

import numpy as np

from milopt.errors import InvalidDataError, InvalidParameterError

SUMMARIES = ("univ1", "univ2")


def _segment_quantile(v, ptr, q):
    """Quantile q (type 7) of 1-D ``v`` within each segment."""
    sizes = np.diff(ptr)
    seg = np.repeat(np.arange(sizes.size), sizes)
    order = np.lexsort((v, seg))
    vs = v[order]
    h = (sizes - 1) * q
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, sizes - 1)
    frac = h - lo
    return vs[ptr[:-1] + lo] * (1 - frac) + vs[ptr[:-1] + hi] * frac


def summary_features(samples, sample_ptr, stats="univ1", cor=False) -> tuple[np.ndarray, list[str]]:
    """Per-instance summary features; returns ``(F, names)`` with F of shape (n_instances, k)."""
    if stats not in SUMMARIES:
        raise InvalidParameterError(f"summary: expected one of {SUMMARIES}, got {stats!r}")
    S = np.asarray(samples, dtype=float)
    ptr = np.asarray(sample_ptr, dtype=np.int64)
    sizes = np.diff(ptr)
    if sizes.min() < 2:
        raise InvalidDataError("samples: summary features need at least 2 points per instance")
    p = S.shape[1]
    red = lambda A: np.add.reduceat(A, ptr[:-1], axis=0)  # noqa: E731
    n = sizes[:, None].astype(float)
    mean = red(S) / n
    C = S - np.repeat(mean, sizes, axis=0)
    m2 = red(C ** 2) / n
    sd = np.sqrt(m2 * n / (n - 1))
    cols, names = [mean, sd], [f"mean{k}" for k in range(p)] + [f"sd{k}" for k in range(p)]
    if stats == "univ2":
        with np.errstate(divide="ignore", invalid="ignore"):
            skew = np.nan_to_num(red(C ** 3) / n / m2 ** 1.5)
            kurt = np.nan_to_num(red(C ** 4) / n / m2 ** 2)
        q1 = np.column_stack([_segment_quantile(S[:, k], ptr, 0.25) for k in range(p)])
        q3 = np.column_stack([_segment_quantile(S[:, k], ptr, 0.75) for k in range(p)])
        cols += [skew, kurt, q1, q3]
        names += [f"{s}{k}" for s in ("skew", "kurt", "q25_", "q75_") for k in range(p)]
    if cor:
        I, J = np.triu_indices(p, 1)
        cov = red(C[:, I] * C[:, J])
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.nan_to_num(cov / n / np.sqrt(m2[:, I] * m2[:, J]))
        cols.append(r)
        names += [f"cor{a}_{b}" for a, b in zip(I, J)]
    return np.hstack(cols), names


def summary_bags(bags, stats="univ1", cor=False):
    """A copy of ``bags`` whose instance matrix holds the summary features of its samples."""
    if bags.samples is None:
        raise InvalidDataError("samples: summary features need distributional instances (e.g. gen:kent-yu)")
    F, _ = summary_features(bags.samples, bags.sample_ptr, stats, cor)
    return bags.with_X(F)
