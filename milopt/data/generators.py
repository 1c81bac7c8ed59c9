"""Seeded generators of MIL data.

``kent_yu``
    The four simulation scenarios of S. Kent and M. Yu, "Non-convex SVM for cancer diagnosis
    based on morphologic features of tumor microenvironment" (§3.1, Table 1).  Each bag
    (top-level group) has ``instances`` distributional instances; each instance is a sample of
    ``samples`` points in ``features`` = 10 dimensions.  Instance labels are i.i.d.
    Bernoulli(``p_positive`` = 0.15); the bag label is their maximum (Assumption 2.1).

    ``variant="paper"`` (default) is Table 1 exactly: the points of an instance are i.i.d. from
    the distribution of its label, the "differing components" below on the listed coordinates
    and the "remaining components" (every other coordinate) i.i.d. N(0, 1):

    1. ``t`` (Student t vs. normal): coordinates 1-5 ~ MVT(ν = 3, 0, ⅓ I₅) (covariance
       ν/(ν-2)·⅓ I = I) for positive instances, MVN(0, I₅) for negative ones.
    2. ``cov`` (covariance differences): positive: coordinates (1, 2) ~ MVN(0, [[1, -0.5],
       [-0.5, 1]]); negative: coordinates (2, 3) ~ MVN(0, [[1, 0.5], [0.5, 1]]).
    3. ``mean`` (mean differences): coordinates 1-5 ~ MVN(0.2·1, I₅) for positive instances,
       MVN(0, I₅) for negative ones.
    4. ``largecov`` (alias ``block``; large covariance differences): positive: coordinates
       1-5 ~ MVN(0, Σ_S4); negative: coordinates 6-10 ~ MVN(0, Σ_S4), Σ_S4 = 0.5 I + 0.5 11ᵀ.

    ``variant="mildsvm"`` is the generator of the authors' R package and simulation code
    (``mildsvm::generate_mild_df`` with the settings of ``mildsvm-sims``), which Table 1 does
    not describe: every instance first draws its own mean, N(prior mean, ``sd_of_mean``² =
    0.5²) per coordinate (remaining coordinates included), and in scenarios 2 and 4 its own
    covariance (Wishart with expectation the prior covariance: df 2 for the differing block
    and 8 for the remainder in scenario 2, df 5 in scenario 4); scenario 3's positive mean is
    0.3 there.  ``mean_shift`` overrides scenario 3's positive mean in either variant.

    If no bag (or every bag) comes out positive, one instance is relabelled so that both
    classes are present (bag labels stay the maximum of the instance labels); with the
    paper's sizes this has probability below 1e-4.

    The instance matrix ``X`` holds the sample means; ``samples`` keeps every point.

``digits``
    Bags built from scikit-learn's 8x8 digits (64 features): each bag draws 2..``max_size``
    images; an instance is positive when its digit is ``target`` (default 9); bag label is
    the maximum of its instance labels.  Half of the bags are forced positive
    (``positive_fraction``).  For robustness regimes: ``witness_rate`` fixes the share of
    positive instances in a positive bag (max(1, round(rate · size)) of them; default: 1 to
    ⌈size/3⌉ drawn uniformly), and ``noise_features`` appends that many uninformative features,
    i.i.d. uniform on [0, 1] like the scaled pixels.
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.data.registry import register_generator
from milopt.errors import InvalidParameterError

KENT_YU_SCENARIOS = {1: "t", 2: "cov", 3: "mean", 4: "largecov",
                     "t": "t", "cov": "cov", "mean": "mean", "largecov": "largecov", "block": "largecov"}
KENT_YU_VARIANTS = ("paper", "mildsvm")


def _check_pos_int(name, value, minimum=1):
    if not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameterError(f"{name}: expected an integer >= {minimum}, got {value!r}")


def _wishart_sqrt(rng, n, scale, df):
    """n square-root factors A (n, d, df) with A Aᵀ ~ Wishart(df, scale) / df (mean ``scale``)."""
    Lc = np.linalg.cholesky(scale)
    G = rng.standard_normal((n, scale.shape[0], int(df)))
    return np.einsum("ij,njk->nik", Lc, G) / np.sqrt(df)


def _draw(rng, n_inst, samples, dim, mean, sd_of_mean, cov=None, wishart_df=None, t_df=None):
    """Samples (n_inst, samples, dim) of instance distributions.

    Location ``mean`` (+ a per-instance N(0, sd_of_mean²) offset per coordinate when
    ``sd_of_mean`` > 0); covariance ``cov`` (per instance Wishart(df)/df around it when
    ``wishart_df``); multivariate t with ``t_df`` degrees of freedom and covariance ``cov``
    (scale matrix cov·(ν-2)/ν) when ``t_df``."""
    mu = mean + (sd_of_mean * rng.standard_normal((n_inst, 1, dim)) if sd_of_mean > 0 else 0.0)
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


def kent_yu(scenario=1, bags=50, instances=3, samples=50, features=10, p_positive=0.15, variant="paper",
            mean_shift=None, sd_of_mean=None, seed=0) -> Bags:
    """Kent & Yu simulation scenario (1 t, 2 cov, 3 mean, 4 largecov); see module docstring.

    Parameters
    ----------
    scenario : 1..4 or 't' | 'cov' | 'mean' | 'largecov'
    bags, instances, samples : int
        Groups, instances per group, points per instance (paper: {20, 50} × {3, 6} ×
        {20, 50, 100}).
    features : int
        Total covariates (10 in the paper; at least 10 for scenario 4, 5 for 1 and 3, 3 for 2).
    p_positive : float
        Probability that an instance is positive (paper: 0.15).
    variant : {'paper', 'mildsvm'}
        Table 1 exactly, or the R package's generator (per-instance random means and Wishart
        covariances; scenario 3 mean 0.3).
    mean_shift : float, optional
        Scenario 3's positive mean per coordinate (default 0.2 paper, 0.3 mildsvm).
    sd_of_mean : float, optional
        ``variant='mildsvm'`` only: standard deviation of the per-instance means around their
        prior (default 0.5).
    seed : int
    """
    if scenario not in KENT_YU_SCENARIOS:
        raise InvalidParameterError(f"scenario: expected 1..4 or one of t/cov/mean/largecov, got {scenario!r}")
    if variant not in KENT_YU_VARIANTS:
        raise InvalidParameterError(f"variant: expected 'paper' (Table 1) or 'mildsvm' (the R package's generator), "
                                    f"got {variant!r}")
    kind = KENT_YU_SCENARIOS[scenario]
    for n, v in (("bags", bags), ("instances", instances), ("samples", samples), ("features", features)):
        _check_pos_int(n, v)
    if bags < 2:
        raise InvalidParameterError("bags: need at least 2 bags (both classes)")
    if not 0 < p_positive < 1:
        raise InvalidParameterError(f"p_positive: expected a probability in (0, 1), got {p_positive}")
    if sd_of_mean is None:
        sd_of_mean = 0.5 if variant == "mildsvm" else 0.0
    elif variant == "paper" and float(sd_of_mean) != 0.0:
        raise InvalidParameterError("sd_of_mean: per-instance random means are not in the paper's Table 1; "
                                    "use variant=mildsvm to set sd_of_mean")
    if not (np.isfinite(sd_of_mean) and sd_of_mean >= 0):
        raise InvalidParameterError(f"sd_of_mean: expected a finite value >= 0, got {sd_of_mean}")
    if mean_shift is None:
        mean_shift = 0.3 if variant == "mildsvm" else 0.2
    if not np.isfinite(mean_shift):
        raise InvalidParameterError(f"mean_shift: expected a finite number, got {mean_shift}")
    need = {"t": 5, "cov": 3, "mean": 5, "largecov": 10}[kind]
    if features < need:
        raise InvalidParameterError(f"features: scenario {kind} needs at least {need} covariates, got {features}")
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
    mild = variant == "mildsvm"
    # (differing coordinates, mean, covariance, wishart df, t df) for positive / negative instances,
    # then the Wishart df of the remaining coordinates (mildsvm only)
    spec = {
        "t": ((np.arange(5), 0.0, np.eye(5), None, 3.0), (np.arange(5), 0.0, np.eye(5), None, None), None),
        "cov": ((np.arange(0, 2), 0.0, np.array([[1.0, -0.5], [-0.5, 1.0]]), 2 if mild else None, None),
                (np.arange(1, 3), 0.0, np.array([[1.0, 0.5], [0.5, 1.0]]), 2 if mild else None, None),
                8 if mild else None),
        "mean": ((np.arange(5), float(mean_shift), np.eye(5), None, None),
                 (np.arange(5), 0.0, np.eye(5), None, None), None),
        "largecov": ((np.arange(5), 0.0, eq5, 5 if mild else None, None),
                     (np.arange(5, 10), 0.0, eq5, 5 if mild else None, None), 5 if mild else None),
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
            Zr = _draw(rng, rows.size, samples, rem.size, 0.0, sd_of_mean, np.eye(rem.size), spec[2], None)
            Z[np.ix_(rows, np.arange(samples), rem)] = Zr
    S = Z.reshape(n_inst * samples, p)
    sample_ptr = np.arange(n_inst + 1) * samples
    X = Z.mean(axis=1)
    return Bags(X=X, bag_index=bag_index, y=y, instance_y=inst_y, samples=S, sample_ptr=sample_ptr,
                name=f"kent-yu-{kind}", meta={"generator": "kent-yu", "scenario": kind, "variant": variant,
                                              "seed": seed})


def digits(bags=100, min_size=2, max_size=8, target=9, positive_fraction=0.5, witness_rate=None, noise_features=0,
           seed=0) -> Bags:
    """Bags of scikit-learn digits; instance positive when its digit equals ``target``.

    Parameters
    ----------
    bags, min_size, max_size : int
        Number of bags; each bag draws its size uniformly in [min_size, max_size].
    target : int
        The positive digit.
    positive_fraction : float
        Share of positive bags (round(fraction · bags), at least 1 and at most bags - 1).
    witness_rate : float, optional
        Share of positive instances in a positive bag: max(1, round(rate · size)); default
        1 to ⌈size/3⌉ uniformly.
    noise_features : int
        Uninformative features appended, i.i.d. uniform on [0, 1].
    seed : int
    """
    from sklearn.datasets import load_digits

    _check_pos_int("bags", bags, 2)
    _check_pos_int("min_size", min_size)
    if max_size < min_size:
        raise InvalidParameterError(f"max_size: must be >= min_size ({min_size}), got {max_size}")
    if target not in range(10):
        raise InvalidParameterError(f"target: a digit 0..9, got {target!r}")
    if not 0 < float(positive_fraction) < 1:
        raise InvalidParameterError(f"positive_fraction: expected a share in (0, 1), got {positive_fraction!r}")
    if witness_rate is not None and not 0 < float(witness_rate) <= 1:
        raise InvalidParameterError(f"witness_rate: expected a share in (0, 1], got {witness_rate!r}")
    _check_pos_int("noise_features", noise_features, 0)
    data = load_digits()
    Xall = data.data / 16.0
    lab = data.target
    rng = np.random.default_rng(seed)
    pos_pool = np.flatnonzero(lab == target)
    neg_pool = np.flatnonzero(lab != target)
    sizes = rng.integers(min_size, max_size + 1, size=bags)
    y = np.zeros(bags, dtype=np.int64)
    n_pos_bags = min(max(int(round(positive_fraction * bags)), 1), bags - 1)
    y[rng.permutation(bags)[:n_pos_bags]] = 1
    total = int(sizes.sum())
    rows = rng.choice(neg_pool, size=total, replace=True)
    bag_index = np.repeat(np.arange(bags), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    # positive bags: 1..ceil(size/3) positives at the start of the bag, then shuffled within bag
    if witness_rate is None:
        n_pos = np.where(y == 1, 1 + rng.integers(0, np.maximum(1, sizes // 3), size=bags), 0)
    else:
        n_pos = np.where(y == 1, np.maximum(1, np.round(float(witness_rate) * sizes)).astype(np.int64), 0)
    within = np.arange(total) - np.repeat(starts, sizes)
    is_pos = within < np.repeat(n_pos, sizes)
    rows[is_pos] = rng.choice(pos_pool, size=int(is_pos.sum()), replace=True)
    # shuffle inside bags: sort by (bag, random key)
    order = np.lexsort((rng.random(total), bag_index))
    rows = rows[order]
    inst_y = (lab[rows] == target).astype(np.int64)
    X = Xall[rows]
    if noise_features:
        X = np.hstack([X, rng.random((total, int(noise_features)))])
    return Bags(X=X, bag_index=bag_index, y=y, instance_y=inst_y, name="digits",
                meta={"generator": "digits", "target": target, "seed": seed})


register_generator("kent-yu", kent_yu, "Kent & Yu simulation scenarios (distributional instances, Table 1): "
                   "scenario=1..4, bags, instances, samples, features, variant=paper|mildsvm, seed")
register_generator("digits", digits, "bags of sklearn digits with true instance labels: bags, min_size, "
                   "max_size, target, positive_fraction, witness_rate, noise_features, seed")
