"""Seeded generators of MIL data.

``kent_yu``
    The four simulation scenarios of Kent & Yu ("Non-convex SVM for multiple instance
    learning with distributional instances", Table 1).  Each bag has ``instances``
    distributional instances; each instance is a sample of ``samples`` points in
    ``features`` dimensions.  Instance labels are Bernoulli(``p_positive``) (0.15 as the
    paper), the bag label is their maximum.  Negative instances draw their points from
    N(0, I); positive instances from a distribution that differs by:

    1. ``t``      -- multivariate Student-t with ``df`` = 3 degrees of freedom, scaled to
       unit variance (same first two moments: only the tails differ);
    2. ``cov``    -- N(0, Σ) with Σ = 1 on the diagonal and ``rho`` = 0.5 off it
       (a covariance difference);
    3. ``mean``   -- N(δ·1, I) with δ = ``shift`` = 0.5 (a mean difference);
    4. ``largecov`` -- N(0, ``scale``² I) with scale = 2 (a large covariance difference).

    The instance matrix ``X`` holds the sample means; ``samples`` keeps every point.

``digits``
    Bags built from scikit-learn's 8x8 digits (64 features): each bag draws 2..``max_size``
    images; an instance is positive when its digit is ``target`` (default 9); bag label is
    the maximum of its instance labels.  Half of the bags are forced positive.
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.data.registry import register_generator
from milopt.errors import InvalidParameterError

KENT_YU_SCENARIOS = {1: "t", 2: "cov", 3: "mean", 4: "largecov",
                     "t": "t", "cov": "cov", "mean": "mean", "largecov": "largecov"}


def _check_pos_int(name, value, minimum=1):
    if not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameterError(f"{name}: expected an integer >= {minimum}, got {value!r}")


def kent_yu(scenario=1, bags=50, instances=3, samples=50, features=5, p_positive=0.15, df=3.0,
            rho=0.5, shift=0.5, scale=2.0, seed=0) -> Bags:
    """Kent & Yu simulation scenario (1 t, 2 cov, 3 mean, 4 largecov); see module docstring."""
    if scenario not in KENT_YU_SCENARIOS:
        raise InvalidParameterError(f"scenario: expected 1..4 or one of t/cov/mean/largecov, got {scenario!r}")
    kind = KENT_YU_SCENARIOS[scenario]
    for n, v in (("bags", bags), ("instances", instances), ("samples", samples), ("features", features)):
        _check_pos_int(n, v)
    if bags < 2:
        raise InvalidParameterError("bags: need at least 2 bags (both classes)")
    if not 0 < p_positive < 1:
        raise InvalidParameterError(f"p_positive: expected a probability in (0, 1), got {p_positive}")
    rng = np.random.default_rng(seed)
    n_inst = bags * instances
    inst_y = (rng.random(n_inst) < p_positive).astype(np.int64)
    bag_index = np.repeat(np.arange(bags), instances)
    y = np.zeros(bags, dtype=np.int64)
    np.maximum.at(y, bag_index, inst_y)
    # make sure both classes are present (bag labels stay the max of instance labels)
    if y.max() == 0:
        inst_y[0] = 1
    elif y.min() == 1:
        inst_y[:instances] = 0
    y = np.zeros(bags, dtype=np.int64)
    np.maximum.at(y, bag_index, inst_y)
    p = features
    Z = rng.standard_normal((n_inst, samples, p))
    pos = inst_y == 1
    if kind == "t":
        # t = Z / sqrt(chi2_df / df), rescaled to unit variance: sqrt((df-2)/df)
        chi = rng.chisquare(df, size=(n_inst, samples, 1))
        T = Z / np.sqrt(chi / df) * np.sqrt((df - 2.0) / df)
        Z = np.where(pos[:, None, None], T, Z)
    elif kind == "cov":
        Sigma = np.full((p, p), rho) + (1 - rho) * np.eye(p)
        Lc = np.linalg.cholesky(Sigma)
        Z = np.where(pos[:, None, None], Z @ Lc.T, Z)
    elif kind == "mean":
        Z = Z + np.where(pos, shift, 0.0)[:, None, None]
    else:  # largecov
        Z = Z * np.where(pos, scale, 1.0)[:, None, None]
    S = Z.reshape(n_inst * samples, p)
    sample_ptr = np.arange(n_inst + 1) * samples
    X = Z.mean(axis=1)
    return Bags(X=X, bag_index=bag_index, y=y, instance_y=inst_y, samples=S, sample_ptr=sample_ptr,
                name=f"kent-yu-{kind}", meta={"generator": "kent-yu", "scenario": kind, "seed": seed})


def digits(bags=100, min_size=2, max_size=8, target=9, positive_fraction=0.5, seed=0) -> Bags:
    """Bags of scikit-learn digits; instance positive when its digit equals ``target``."""
    from sklearn.datasets import load_digits

    _check_pos_int("bags", bags, 2)
    _check_pos_int("min_size", min_size)
    if max_size < min_size:
        raise InvalidParameterError(f"max_size: must be >= min_size ({min_size}), got {max_size}")
    if target not in range(10):
        raise InvalidParameterError(f"target: a digit 0..9, got {target!r}")
    data = load_digits()
    Xall = data.data / 16.0
    lab = data.target
    rng = np.random.default_rng(seed)
    pos_pool = np.flatnonzero(lab == target)
    neg_pool = np.flatnonzero(lab != target)
    sizes = rng.integers(min_size, max_size + 1, size=bags)
    y = np.zeros(bags, dtype=np.int64)
    y[rng.permutation(bags)[: int(round(positive_fraction * bags))]] = 1
    total = int(sizes.sum())
    rows = rng.choice(neg_pool, size=total, replace=True)
    bag_index = np.repeat(np.arange(bags), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    # positive bags: 1..ceil(size/3) positives at the start of the bag, then shuffled within bag
    n_pos = np.where(y == 1, 1 + rng.integers(0, np.maximum(1, sizes // 3), size=bags), 0)
    within = np.arange(total) - np.repeat(starts, sizes)
    is_pos = within < np.repeat(n_pos, sizes)
    rows[is_pos] = rng.choice(pos_pool, size=int(is_pos.sum()), replace=True)
    # shuffle inside bags: sort by (bag, random key)
    order = np.lexsort((rng.random(total), bag_index))
    rows = rows[order]
    inst_y = (lab[rows] == target).astype(np.int64)
    return Bags(X=Xall[rows], bag_index=bag_index, y=y, instance_y=inst_y, name="digits",
                meta={"generator": "digits", "target": target, "seed": seed})


register_generator("kent-yu", kent_yu, "Kent & Yu simulation scenarios (distributional instances): "
                   "scenario=1..4, bags, instances, samples, features, seed")
register_generator("digits", digits, "bags of sklearn digits with true instance labels: bags, min_size, "
                   "max_size, target, seed")
