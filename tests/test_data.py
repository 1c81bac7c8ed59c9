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


def test_csv_errors(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("1,1,0.5,0.2\n1,1,0.1,x\n0,2,0.3,0.3\n")
    with pytest.raises(InvalidDataError, match="non-numeric"):
        load(str(p))
    p.write_text("1,1,0.5,0.2\n1,1,0.1,\n0,2,0.3,0.3\n")
    with pytest.raises(InvalidDataError, match="NaN"):
        load(str(p))
    p.write_text("1,1,0.5,0.2\n0,1,0.1,0.3\n0,2,0.3,0.3\n")
    with pytest.raises(InvalidDataError, match="different bag labels"):
        load(str(p))
    p.write_text("1,1,0.5,0.2\n1,2,0.3,0.3\n")
    with pytest.raises(InvalidDataError, match="two classes"):
        load(str(p))
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
