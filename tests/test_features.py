import numpy as np
import pytest
from scipy import stats

from milopt.data.generators import kent_yu
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.features import (NystromMap, check_kernel, fit_bag_nystrom, kernel_matrix, mean_embedding_kernel,
                             stratified_sample, summary_features)


def _points(seed=0, n_inst=7, p=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=n_inst)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    return rng.normal(size=(ptr[-1], p)), ptr


@pytest.mark.parametrize("kernel,gamma", [("linear", None), ("rbf", 0.3), ("rbf", 2.0)])
def test_smm_kernel_of_point_masses_is_the_ordinary_kernel(kernel, gamma):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 4))
    reps = rng.integers(1, 5, size=9)                     # each distribution: copies of one point
    S = np.repeat(X, reps, axis=0)
    ptr = np.concatenate(([0], np.cumsum(reps)))
    np.testing.assert_allclose(mean_embedding_kernel(S, ptr, kernel=kernel, gamma=gamma),
                               kernel_matrix(X, None, kernel, gamma), atol=1e-12)


@pytest.mark.parametrize("max_block", [7, 50, 10**7])
def test_smm_kernel_matches_brute_force_whatever_the_block(max_block):
    S, ptr = _points(2)
    S2, ptr2 = _points(3, n_inst=4)
    K = mean_embedding_kernel(S, ptr, S2, ptr2, kernel="rbf", gamma=0.7, max_block=max_block)
    Kp = kernel_matrix(S, S2, "rbf", 0.7)
    ref = np.array([[Kp[ptr[i]:ptr[i + 1], ptr2[j]:ptr2[j + 1]].mean() for j in range(4)] for i in range(7)])
    np.testing.assert_allclose(K, ref, atol=1e-13)


def test_nystrom_reproduces_kernel_on_its_sample():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 3))
    nm = NystromMap("rbf", 0.5).fit(Z)
    P = nm.transform(Z)
    np.testing.assert_allclose(P @ P.T, kernel_matrix(Z, None, "rbf", 0.5), atol=1e-6)


def test_nystrom_mean_features_approximate_the_smm_kernel_with_all_points_as_landmarks():
    b = kent_yu(1, bags=4, instances=2, samples=6, seed=0)
    nm = NystromMap("rbf", 0.1).fit(b.samples)
    Phi = nm.mean_features(b.samples, b.sample_ptr)
    np.testing.assert_allclose(Phi @ Phi.T, mean_embedding_kernel(b.samples, b.sample_ptr, gamma=0.1), atol=1e-6)


def test_stratified_sampling_covers_every_bag():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(30), rng.integers(1, 40, size=30))
    for m in (1, 10, 30, 100):
        idx = stratified_sample(groups, m, random_state=m)
        assert set(groups[idx]) == set(range(30))
        assert idx.size == max(m, 30) and np.unique(idx).size == idx.size
    np.testing.assert_array_equal(stratified_sample(groups, 50, 3), stratified_sample(groups, 50, 3))
    b = kent_yu(2, bags=25, instances=3, samples=10, seed=1)
    nm = fit_bag_nystrom(b, m=30, gamma=0.1, random_state=0)
    point_bag = np.repeat(b.bag_index, np.diff(b.sample_ptr))
    assert set(point_bag[nm.sample_index_]) == set(range(25))


def test_stratified_sampling_is_almost_uniform_per_bag_not_proportional_to_size():
    """Kent & Yu Algorithm 2: each group represented almost uniformly, whatever its size."""
    rng = np.random.default_rng(0)
    sizes = np.r_[np.full(10, 10), np.full(10, 400)]          # small and large bags
    groups = np.repeat(rng.permutation(20), sizes)
    for m in (20, 45, 100, 199):
        idx = stratified_sample(groups, m, random_state=m)
        counts = np.bincount(groups[idx], minlength=20)
        assert idx.size == m and counts.max() - counts.min() <= 1, counts
    # a bag smaller than its share gives all its points; the rest is spread over the others
    idx = stratified_sample(groups, 1000, random_state=1)
    counts = np.bincount(groups[idx], minlength=20)
    small = np.bincount(groups, minlength=20) == 10
    assert idx.size == 1000 and np.all(counts[small] == 10) and counts[~small].max() - counts[~small].min() <= 1
    # inside a bag, spread evenly over its instances (instances of very different sizes)
    inst_sizes = np.tile([2, 50, 200], 6)                     # 6 bags x 3 instances
    inst = np.repeat(np.arange(18), inst_sizes)
    grp = inst // 3
    idx = stratified_sample(grp, 36, random_state=2, subgroups=inst)
    c = np.bincount(inst[idx], minlength=18)
    assert np.all(np.bincount(grp[idx]) == 6) and np.all(c == 2), c


@pytest.mark.parametrize("kernel,gamma,match", [("poly", None, "kernel"), ("rbf", 0.0, "gamma"),
                                                ("rbf", -1.0, "gamma"), ("rbf", float("nan"), "gamma"),
                                                ("rbf", float("inf"), "gamma"), ("rbf", "wide", "gamma"),
                                                (3, None, "kernel")])
def test_bad_kernel_parameters_are_refused(kernel, gamma, match):
    with pytest.raises(InvalidParameterError, match=match):
        check_kernel(kernel, gamma, 3)
    with pytest.raises(InvalidParameterError, match=match):
        kernel_matrix(np.zeros((2, 3)), None, kernel, gamma)


def test_bad_kernel_parameters_refused_by_estimators():
    from milopt.estimators.heuristics import MISMMHeuristic, MISVMHeuristic

    b = kent_yu(3, bags=10, instances=2, samples=5, seed=0)
    with pytest.raises(InvalidParameterError, match="gamma"):
        MISVMHeuristic(kernel="rbf", gamma=-2).fit(b)
    with pytest.raises(InvalidParameterError, match="kernel"):
        MISMMHeuristic(kernel="sigmoid").fit(b)


def test_auto_gamma_is_one_over_features():
    assert check_kernel("rbf", None, 8) == ("rbf", 0.125)
    assert check_kernel("rbf", "auto", 4) == ("rbf", 0.25)


def test_summary_features_match_scipy():
    S, ptr = _points(4, n_inst=5)
    S = np.vstack([S, np.random.default_rng(0).normal(size=(4, 3))])   # make every sample >= 2 points
    sizes = np.diff(ptr)
    sizes = np.maximum(sizes, 2)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    S = S[:ptr[-1]]
    F, names = summary_features(S, ptr, "univ2", cor=True)
    assert F.shape == (5, 3 * 6 + 3) and len(names) == F.shape[1]
    for i in range(5):
        P = S[ptr[i]:ptr[i + 1]]
        ref = np.concatenate([P.mean(0), P.std(0, ddof=1),
                              np.nan_to_num(stats.skew(P, axis=0)), np.nan_to_num(stats.kurtosis(P, axis=0, fisher=False)),
                              np.quantile(P, 0.25, axis=0), np.quantile(P, 0.75, axis=0)])
        np.testing.assert_allclose(F[i, :18], ref, atol=1e-10)
        C = np.corrcoef(P.T) if P.shape[0] > 2 else None
        if C is not None:
            np.testing.assert_allclose(F[i, 18:], C[np.triu_indices(3, 1)], atol=1e-10)
    with pytest.raises(InvalidParameterError, match="summary"):
        summary_features(S, ptr, "univ3")
    with pytest.raises(InvalidDataError, match="2 points"):
        summary_features(S[:3], np.array([0, 1, 3]))


def test_kent_yu_scenarios_differ_as_documented():
    # mean scenario: positive instances have larger means on coordinates 1-5 only
    b = kent_yu(3, bags=400, instances=3, samples=30, seed=0)
    pos = b.instance_y == 1
    d = b.X[pos].mean(0) - b.X[~pos].mean(0)
    assert np.all(np.abs(d[:5] - 0.2) < 0.06) and np.all(np.abs(d[5:]) < 0.06)   # Table 1: mean 0.2
    # t scenario: same covariance, heavier tails (kurtosis) for positives
    b = kent_yu(1, bags=300, instances=3, samples=50, seed=0)
    S = b.samples.reshape(b.n_instances, 50, 10) - b.X[:, None, :]
    pos = b.instance_y == 1
    k_pos = stats.kurtosis(S[pos][:, :, :5].reshape(-1), fisher=False)
    k_neg = stats.kurtosis(S[~pos][:, :, :5].reshape(-1), fisher=False)
    assert k_pos > k_neg + 1.0
    # block scenario: positives correlated on 1-5, negatives on 6-10
    b = kent_yu(4, bags=300, instances=3, samples=50, seed=0)
    S = b.samples.reshape(b.n_instances, 50, 10) - b.X[:, None, :]
    pos = b.instance_y == 1
    cp = np.corrcoef(S[pos].reshape(-1, 10).T)
    cn = np.corrcoef(S[~pos].reshape(-1, 10).T)
    assert cp[0, 1] > 0.35 and abs(cp[5, 6]) < 0.1 and cn[5, 6] > 0.35 and abs(cn[0, 1]) < 0.1
    with pytest.raises(InvalidParameterError, match="features"):
        kent_yu(4, features=6)
