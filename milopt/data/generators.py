"""Seeded generators of MIL data.

``kent_yu``
    The four simulation scenarios of Kent & Yu ("Non-convex SVM for multiple instance
    learning with distributional instances", Table 1), following their data generator
    ``mildsvm::generate_mild_df`` and the scenario settings of their simulation code
    (repository ``skent259/mildsvm-sims``, ``sim/dataset-parameters.R``).  Each bag has
    ``instances`` distributional instances; each instance is a sample of ``samples`` points
    in ``features`` = 10 dimensions.  Instance labels are Bernoulli(``p_positive`` = 0.15),
    the bag label is their maximum.  Every instance first draws its own mean
    (N(prior mean, ``sd_of_mean``² = 0.5²) per coordinate) and, where the scenario says so,
    its own covariance (Wishart with expectation the prior covariance); its points are then
    i.i.d. from that distribution.  Coordinates outside the class's "important" set follow
    the remainder distribution N(mean ~ N(0, 0.5²), I).

    1. ``t`` (tail difference): coordinates 1-5; positive instances multivariate Student-t,
       3 degrees of freedom, covariance I; negative instances normal, covariance I.
    2. ``cov`` (covariance difference): positive instances: coordinates 1-2 with prior
       covariance [[1, -0.5], [-0.5, 1]]; negative: coordinates 2-3 with [[1, 0.5], [0.5, 1]];
       covariances sampled per instance (Wishart, df 2 for the important block, 8 for the
       remainder).
    3. ``mean`` (mean difference): coordinates 1-5, prior mean 0.3 for positive instances and
       0 for negative ones, covariance I.
    4. ``largecov`` (alias ``block``; correlation-block difference): positive instances have
       the equicorrelated covariance 0.5 I + 0.5 11ᵀ on coordinates 1-5, negative instances on
       coordinates 6-10; covariances sampled per instance (Wishart, df 5).

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
                     "t": "t", "cov": "cov", "mean": "mean", "largecov": "largecov", "block": "largecov"}


def _check_pos_int(name, value, minimum=1):
    if not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameterError(f"{name}: expected an integer >= {minimum}, got {value!r}")


def _wishart_sqrt(rng, n, scale, df):
    """n square-root factors A (n, d, df) with A Aᵀ ~ Wishart(df, scale) / df (mean ``scale``)."""
    Lc = np.linalg.cholesky(scale)
    G = rng.standard_normal((n, scale.shape[0], int(df)))
    return np.einsum("ij,njk->nik", Lc, G) / np.sqrt(df)


def _draw(rng, n_inst, samples, dim, mean, sd_of_mean, cov=None, wishart_df=None, t_df=None):
    """Samples (n_inst, samples, dim) of instance distributions as generate_mild_df."""
    mu = mean + sd_of_mean * rng.standard_normal((n_inst, 1, dim))
    Z = rng.standard_normal((n_inst, samples, dim if wishart_df is None else int(wishart_df)))
    if wishart_df is not None:                      # per-instance covariance A Aᵀ
        A = _wishart_sqrt(rng, n_inst, cov, wishart_df)
        Z = np.einsum("nsk,ndk->nsd", Z, A)
    elif cov is not None:
        Z = Z @ np.linalg.cholesky(cov).T
    if t_df is not None:                            # multivariate t with covariance as given
        chi = rng.chisquare(t_df, size=(n_inst, samples, 1))
        Z = Z / np.sqrt(chi / t_df) * np.sqrt((t_df - 2.0) / t_df)
    return mu + Z


def kent_yu(scenario=1, bags=50, instances=3, samples=50, features=10, p_positive=0.15, sd_of_mean=0.5,
            seed=0) -> Bags:
    """Kent & Yu simulation scenario (1 t, 2 cov, 3 mean, 4 largecov); see module docstring.

    Parameters
    ----------
    scenario : 1..4 or 't' | 'cov' | 'mean' | 'largecov'
    bags, instances, samples : int
        Groups, instances per group, points per instance.
    features : int
        Total covariates (10 in the paper; at least 10 for scenario 4, 5 for 1 and 3, 3 for 2).
    p_positive : float
        Probability that an instance is positive.
    sd_of_mean : float
        Standard deviation of the per-instance means around their prior.
    seed : int
    """
    if scenario not in KENT_YU_SCENARIOS:
        raise InvalidParameterError(f"scenario: expected 1..4 or one of t/cov/mean/largecov, got {scenario!r}")
    kind = KENT_YU_SCENARIOS[scenario]
    for n, v in (("bags", bags), ("instances", instances), ("samples", samples), ("features", features)):
        _check_pos_int(n, v)
    if bags < 2:
        raise InvalidParameterError("bags: need at least 2 bags (both classes)")
    if not 0 < p_positive < 1:
        raise InvalidParameterError(f"p_positive: expected a probability in (0, 1), got {p_positive}")
    need = {"t": 5, "cov": 3, "mean": 5, "largecov": 10}[kind]
    if features < need:
        raise InvalidParameterError(f"features: scenario {kind} needs at least {need} covariates, got {features}")
    if kind == "largecov" and samples < 2:
        raise InvalidParameterError("samples: need at least 2 points per instance")
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
    eq5 = np.full((5, 5), 0.5) + 0.5 * np.eye(5)
    # (important coordinates, prior mean, covariance, wishart df, t df) for positive / negative
    spec = {
        "t": ((np.arange(5), 0.0, np.eye(5), None, 3.0), (np.arange(5), 0.0, np.eye(5), None, None), None),
        "cov": ((np.arange(0, 2), 0.0, np.array([[1.0, -0.5], [-0.5, 1.0]]), 2, None),
                (np.arange(1, 3), 0.0, np.array([[1.0, 0.5], [0.5, 1.0]]), 2, None), 8),
        "mean": ((np.arange(5), 0.3, np.eye(5), None, None), (np.arange(5), 0.0, np.eye(5), None, None), None),
        "largecov": ((np.arange(5), 0.0, eq5, 5, None), (np.arange(5, 10), 0.0, eq5, 5, None), 5),
    }[kind]
    Z = np.empty((n_inst, samples, p))
    for lab, (imp, mean, cov, wdf, tdf) in ((1, spec[0]), (0, spec[1])):
        rows = np.flatnonzero(inst_y == lab)
        if rows.size == 0:
            continue
        rem = np.setdiff1d(np.arange(p), imp)
        block = _draw(rng, rows.size, samples, imp.size, mean, sd_of_mean, cov, wdf, tdf)
        Z[np.ix_(rows, np.arange(samples), imp)] = block
        if rem.size:
            rdf = spec[2]
            Zr = _draw(rng, rows.size, samples, rem.size, 0.0, sd_of_mean, np.eye(rem.size),
                       rdf if rdf is not None else None, None)
            Z[np.ix_(rows, np.arange(samples), rem)] = Zr
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
