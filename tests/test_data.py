import gzip
import hashlib

import numpy as np
import pandas as pd
import pytest

import milopt
from milopt.data import Bags, load
from milopt.data.loading import instances_dir, manifest
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.metrics import bag_folds, standardize


def test_shipped_manifest_and_sizes():
    man = manifest()
    for name in ("musk1", "musk2"):
        e = man[name]
        raw = gzip.decompress((instances_dir() / e["file"]).read_bytes())
        assert hashlib.sha256(raw).hexdigest() == e["sha256_csv"]
        b = load(name, verify=True)
        assert (b.n_bags, b.positive_bags, b.n_instances, b.n_features) == (
            e["bags"], e["positive_bags"], e["instances"], e["features"])


def test_bag_layout_and_subset():
    rng = np.random.default_rng(0)
    arrs = [rng.normal(size=(k, 3)) for k in (2, 1, 4)]
    b = Bags.from_arrays(arrs, [1, -1, 1])
    assert b.y.tolist() == [1, 0, 1]
    assert b.bag_ptr.tolist() == [0, 2, 3, 7]
    s = b.subset([2, 0])
    assert s.bag_ptr.tolist() == [0, 4, 6]
    np.testing.assert_array_equal(s.X[:4], arrs[2])
    np.testing.assert_array_equal(s.X[4:], arrs[0])
    assert len(b) == 3 and b[[1]].n_instances == 1


def test_from_instances_sorts_and_checks_mixed_labels():
    X = np.arange(12.0).reshape(6, 2)
    b = Bags.from_instances(X, ["a", "b", "a", "c", "b", "c"], [1, 0, 1, 0, 0, 0])
    assert b.bag_names.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(b.X[:2], X[[0, 2]])
    with pytest.raises(InvalidDataError, match="different bag labels"):
        Bags.from_instances(X, ["a", "b", "a", "c", "b", "c"], [1, 0, 0, 0, 0, 0])


def test_from_frame():
    df = pd.DataFrame({"bag": [3, 3, 7], "lab": [1, 1, 0], "f1": [0.1, 0.2, 0.3], "f2": [1, 2, 3]})
    b = Bags.from_frame(df, bag="bag", label="lab")
    assert b.n_bags == 2 and b.n_features == 2 and b.y.tolist() == [1, 0]
    with pytest.raises(InvalidDataError, match="not numeric"):
        Bags.from_frame(df.assign(f3=["x", "y", "z"]), bag="bag", label="lab")


@pytest.mark.parametrize("bad, msg", [
    (lambda: Bags.from_arrays([np.ones((2, 2)), np.zeros((0, 2))], [1, 0]), "empty"),
    (lambda: Bags.from_arrays([np.array([[1.0, np.nan]]), np.ones((1, 2))], [1, 0]), "NaN"),
    (lambda: Bags.from_arrays([np.ones((2, 2)), np.ones((1, 3))], [1, 0]), "features"),
    (lambda: Bags.from_arrays([np.ones((2, 2))], [1, 0]), "one label per bag"),
    (lambda: Bags.from_arrays([np.ones((2, 2))], [0.5]), "integers"),
])
def test_validation_errors(bad, msg):
    with pytest.raises(InvalidDataError, match=msg):
        bad()


@pytest.mark.parametrize("text,match", [
    ("1,1,0.5,0.2\n1,1,0.1,x\n0,2,0.3,0.3\n", "non-numeric"),
    ("1,1,0.5,0.2\n1,1,0.1,\n0,2,0.3,0.3\n", "NaN"),
    ("1,1,0.5,0.2\n0,1,0.1,0.3\n0,2,0.3,0.3\n", "different bag labels"),
    ("1,1,0.5,0.2\n1,2,0.3,0.3\n", "two classes"),
])
def test_csv_errors(tmp_path, text, match):
    p = tmp_path / "d.csv"
    p.write_text(text)
    with pytest.raises(InvalidDataError, match=match):
        load(str(p))


def test_csv_minus_one_labels_and_missing_file(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("-1,1,0.5,0.2\n1,2,0.3,0.3\n")
    assert load(str(p)).y.tolist() == [0, 1]
    with pytest.raises(InvalidDataError, match="not found"):
        load(str(tmp_path / "missing.csv"))


def test_csv_with_coordinates(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("1,1,0,0,5.0\n1,1,1,0,6.0\n0,2,3,3,1.0\n")
    b = load(str(p), coords=2)
    assert b.coords.shape == (3, 2) and b.n_features == 1


@pytest.mark.parametrize("scenario", [1, 2, 3, 4])
def test_kent_yu_generator(scenario):
    b = load(f"gen:kent-yu?scenario={scenario}&bags=30&instances=3&samples=20&features=10&seed=1")
    assert b.n_bags == 30 and b.n_instances == 90 and b.samples.shape == (90 * 20, 10)
    y_max = np.zeros(b.n_bags, int)
    np.maximum.at(y_max, b.bag_index, b.instance_y)
    np.testing.assert_array_equal(b.y, y_max)
    np.testing.assert_allclose(b.X, b.samples.reshape(90, 20, 10).mean(axis=1))
    again = load(f"gen:kent-yu?scenario={scenario}&bags=30&instances=3&samples=20&features=10&seed=1")
    np.testing.assert_array_equal(b.samples, again.samples)


def test_kent_yu_positive_rate_is_about_015():
    b = load("gen:kent-yu?scenario=3&bags=2000&instances=3&samples=2&features=10&seed=0")
    assert abs(b.instance_y.mean() - 0.15) < 0.02


def _pooled(b, lab):
    """Pooled sample points of the instances with label ``lab`` (n, 10)."""
    S = b.samples.reshape(b.n_instances, -1, b.samples.shape[1])
    return S[b.instance_y == lab].reshape(-1, b.samples.shape[1])


def test_kent_yu_paper_variant_is_table_1():
    """variant=paper (default): points i.i.d. from Table 1's distributions, no per-instance
    random means or covariances."""
    eq5 = np.full((5, 5), 0.5) + 0.5 * np.eye(5)
    # scenario 2: positive (1,2) corr -0.5, negative (2,3) corr +0.5, everything else N(0, 1)
    b = load("gen:kent-yu?scenario=2&bags=300&instances=3&samples=50&seed=0")
    assert b.meta["variant"] == "paper"
    Sp, Sn = _pooled(b, 1), _pooled(b, 0)
    Cp, Cn = np.cov(Sp.T), np.cov(Sn.T)
    Ep, En = np.eye(10), np.eye(10)
    Ep[0, 1] = Ep[1, 0] = -0.5
    En[1, 2] = En[2, 1] = 0.5
    assert np.abs(Cp - Ep).max() < 0.06 and np.abs(Cn - En).max() < 0.04
    assert np.abs(Sp.mean(0)).max() < 0.05 and np.abs(Sn.mean(0)).max() < 0.03
    # no random means: the instance means scatter like sample means of 50 i.i.d. N(0, 1) points
    assert np.var(b.X[b.instance_y == 0], axis=0).mean() == pytest.approx(1 / 50, rel=0.2)
    # scenario 4: Σ_S4 on 1-5 for positives, on 6-10 for negatives
    b = load("gen:kent-yu?scenario=4&bags=300&instances=3&samples=50&seed=1")
    Cp, Cn = np.cov(_pooled(b, 1).T), np.cov(_pooled(b, 0).T)
    assert np.abs(Cp[:5, :5] - eq5).max() < 0.08 and np.abs(Cp[5:, 5:] - np.eye(5)).max() < 0.08
    assert np.abs(Cn[5:, 5:] - eq5).max() < 0.05 and np.abs(Cn[:5, :5] - np.eye(5)).max() < 0.05
    # scenario 3: mean 0.2 on 1-5 for positives, 0 elsewhere; covariance I
    b = load("gen:kent-yu?scenario=3&bags=400&instances=3&samples=50&seed=2")
    Sp = _pooled(b, 1)
    assert np.abs(Sp.mean(0)[:5] - 0.2).max() < 0.04 and np.abs(Sp.mean(0)[5:]).max() < 0.04
    assert np.abs(np.cov(Sp.T) - np.eye(10)).max() < 0.06
    # scenario 1: t with 3 df and scale 1/3 I -> covariance I on 1-5, heavy tails
    b = load("gen:kent-yu?scenario=1&bags=400&instances=3&samples=50&seed=3")
    Sp = _pooled(b, 1)
    assert np.abs(np.diag(np.cov(Sp.T))[5:] - 1).max() < 0.06
    assert np.median(np.abs(Sp[:, :5])) < np.median(np.abs(Sp[:, 5:])) - 0.1   # t(3)·sqrt(1/3) is narrower in the bulk


def test_kent_yu_mildsvm_variant_keeps_the_r_generator():
    b = load("gen:kent-yu?scenario=3&bags=400&instances=3&samples=50&seed=2&variant=mildsvm")
    assert b.meta["variant"] == "mildsvm"
    pos = b.instance_y == 1
    d = b.X[pos].mean(0) - b.X[~pos].mean(0)
    assert np.all(np.abs(d[:5] - 0.3) < 0.12)                         # the R code's 0.3
    # random means N(0, 0.5²) per instance: instance means scatter with variance 0.25 + 1/50
    assert np.var(b.X[~pos], axis=0).mean() == pytest.approx(0.25 + 1 / 50, rel=0.2)
    with pytest.raises(InvalidParameterError, match="sd_of_mean"):
        load("gen:kent-yu?scenario=3&sd_of_mean=0.5")
    with pytest.raises(InvalidParameterError, match="variant"):
        load("gen:kent-yu?scenario=3&variant=r")
    b = load("gen:kent-yu?scenario=3&bags=400&instances=3&samples=50&seed=2&mean_shift=1.0")
    assert np.abs(_pooled(b, 1).mean(0)[:5] - 1.0).max() < 0.05


def test_digits_generator():
    b = load("gen:digits?bags=40&seed=3")
    assert b.n_features == 64 and b.instance_y is not None
    y_max = np.zeros(b.n_bags, int)
    np.maximum.at(y_max, b.bag_index, b.instance_y)
    np.testing.assert_array_equal(b.y, y_max)
    assert 0 < b.y.mean() < 1


def test_generator_errors():
    with pytest.raises(InvalidParameterError, match="unknown generator"):
        load("gen:nope")
    with pytest.raises(InvalidParameterError, match="unknown key"):
        load("gen:digits?bogus=1")
    with pytest.raises(InvalidParameterError, match="scenario"):
        load("gen:kent-yu?scenario=9")


def test_folds_and_standardize_use_training_only():
    b = load("musk1")
    folds = list(bag_folds(b, 10, seed=0))
    assert len(folds) == 10
    test_ids = np.concatenate([te for _, te in folds])
    assert sorted(test_ids.tolist()) == list(range(b.n_bags))
    tr, te = folds[0]
    Btr, Bte = standardize(b.subset(tr), b.subset(te))
    np.testing.assert_allclose(Btr.X.mean(axis=0), 0, atol=1e-9)
    assert np.abs(Bte.X.mean(axis=0)).max() > 1e-3  # test fold uses training statistics


def test_public_api():
    assert milopt.load is load and milopt.Bags is Bags
