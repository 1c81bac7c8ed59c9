"""Property tests: every input either loads (and round-trips) or is refused with InvalidDataError /
InvalidParameterError -- never another exception."""
import io
import string

import numpy as np
import pytest

hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import milopt  # noqa: E402
from milopt.data import Bags  # noqa: E402
from milopt.errors import InvalidDataError, InvalidParameterError, MiloptError  # noqa: E402

FAST = settings(max_examples=int(__import__("os").environ.get("MILOPT_HYPOTHESIS_EXAMPLES", 60)), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def bags_strategy(draw):
    n_bags = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 4), min_size=n_bags, max_size=n_bags))
    y = draw(st.lists(st.sampled_from([0, 1]), min_size=n_bags, max_size=n_bags))
    if draw(st.booleans()):
        names = draw(st.lists(st.integers(-10**6, 10**6), min_size=n_bags, max_size=n_bags, unique=True))
    else:
        names = draw(st.lists(st.text(string.ascii_letters, min_size=1, max_size=6), min_size=n_bags,
                              max_size=n_bags, unique=True))
        names = ["b" + s for s in names]    # a name that is not a number stays a name in a CSV
    arrays = [np.array(draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=s, max_size=s)))
              for s in sizes]
    iy = None
    if draw(st.booleans()):
        iy = [np.array(draw(st.lists(st.sampled_from([0, 1]), min_size=s, max_size=s))) for s in sizes]
    # shuffle the instance rows: bag order in the file is arbitrary
    return Bags.from_arrays(arrays, y, instance_y=iy, bag_names=np.array(names, dtype=object))


def same(a: Bags, b: Bags):
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.bag_index, b.bag_index)
    assert [str(v) for v in a.bag_names] == [str(v) for v in b.bag_names]
    if a.instance_y is None:
        assert b.instance_y is None
    else:
        np.testing.assert_array_equal(a.instance_y, b.instance_y)


@FAST
@given(bags_strategy())
def test_bags_round_trip_through_frame_csv_and_parquet(tmp_path_factory, bags):
    d = tmp_path_factory.mktemp("rt")
    same(bags, milopt.load(bags.to_frame(), require_both_classes=False))
    bags.to_csv(d / "h.csv")
    same(bags, milopt.load(d / "h.csv", require_both_classes=False))
    bags.to_csv(d / "n.csv.gz", header=False)
    back = milopt.load(str(d / "n.csv.gz"), require_both_classes=False)
    np.testing.assert_array_equal(back.X, bags.X)
    np.testing.assert_array_equal(back.y, bags.y)
    bags.to_frame().to_parquet(d / "p.parquet")
    same(bags, milopt.load(str(d / "p.parquet"), require_both_classes=False))


@FAST
@given(bags_strategy(), st.randoms(use_true_random=False))
def test_row_order_does_not_matter(bags, rnd):
    df = bags.to_frame()
    perm = list(range(len(df)))
    rnd.shuffle(perm)
    import warnings

    from milopt.data.loading import SplitBagWarning

    with warnings.catch_warnings():  # a shuffled DataFrame splits bags: legal there, and warned
        warnings.simplefilter("ignore", SplitBagWarning)
        back = milopt.load(df.iloc[perm].reset_index(drop=True), require_both_classes=False)
    # same bags (in order of first appearance), each bag's instances in their shuffled order
    by_name = {str(n): j for j, n in enumerate(back.bag_names)}
    for j, n in enumerate(bags.bag_names):
        k = by_name[str(n)]
        mine = bags.X[bags.bag_ptr[j]:bags.bag_ptr[j + 1]]
        theirs = back.X[back.bag_ptr[k]:back.bag_ptr[k + 1]]
        assert sorted(map(tuple, mine.tolist())) == sorted(map(tuple, theirs.tolist()))
        assert back.y[k] == bags.y[j]


ODD = st.sampled_from(["", "nan", "NaN", "inf", "-inf", "abc", "1e400", "true", " 1", "1.5", "-1", "2", '"x,y"', "f0"])
NUM = st.one_of(st.sampled_from(["0", "1"]), st.integers(-3, 3).map(str), finite.map(repr))
CELLS = st.one_of(NUM, NUM, NUM, NUM, NUM, NUM, ODD)     # mostly numbers, some odd cells


@st.composite
def csv_text(draw):
    ncol = draw(st.one_of(st.integers(3, 6), st.integers(3, 6), st.integers(3, 6), st.integers(1, 2)))
    nrow = draw(st.integers(0, 8))
    label = st.one_of(st.sampled_from(["0", "1", "-1"]), st.sampled_from(["0", "1"]), CELLS)
    bag = st.one_of(st.integers(0, 3).map(str), st.sampled_from(["a", "b", "a"]), CELLS)
    rows = [[draw(label), draw(bag)][:ncol] + [draw(CELLS) for _ in range(ncol - 2)] for _ in range(nrow)]
    if draw(st.booleans()):
        header = draw(st.sampled_from([["label", "bag_id"], ["bag_id", "label"], ["y", "bag"], ["a", "b"]]))
        header = header + [f"f{k}" for k in range(max(0, ncol - 2))]
        if draw(st.integers(0, 3)) == 0 and len(header) > 2:
            header[-1] = header[0]        # duplicated column name
        rows = [header[:ncol]] + rows
    if draw(st.integers(0, 5)) == 0 and rows:      # ragged row
        rows[-1] = rows[-1] + ["1"]
    return "\n".join(",".join(r) for r in rows) + ("\n" if draw(st.booleans()) else "")


@FAST
@given(csv_text(), st.sampled_from([None, True, False]), st.integers(0, 2))
def test_csv_reader_loads_or_refuses_cleanly(tmp_path_factory, text, header, coords):
    p = tmp_path_factory.mktemp("csv") / "data.csv"
    p.write_text(text)
    try:
        b = milopt.load(str(p), header=header, coords=coords, require_both_classes=False)
    except InvalidDataError:
        return
    assert isinstance(b, Bags) and np.all(np.isfinite(b.X)) and b.n_bags >= 1
    # what loaded writes back and loads again identically
    b2 = milopt.load(b.to_frame(), require_both_classes=False)
    np.testing.assert_array_equal(b2.X, b.X)
    np.testing.assert_array_equal(b2.y, b.y)


@FAST
@given(st.lists(st.one_of(st.integers(-2, 2), finite, st.sampled_from([np.nan, np.inf, "a", None])), min_size=1,
                max_size=8),
       st.lists(st.one_of(st.integers(0, 3), st.sampled_from(["x", 1.5, np.nan])), min_size=1, max_size=8))
def test_frame_loader_loads_or_refuses_cleanly(feature, ids):
    import pandas as pd

    n = min(len(feature), len(ids))
    df = pd.DataFrame({"label": [k % 2 for k in range(n)], "bag_id": ids[:n], "f0": feature[:n]})
    try:
        b = milopt.load(df, require_both_classes=False)
    except InvalidDataError:
        return
    assert np.all(np.isfinite(b.X))


SET_ITEMS = st.one_of(
    st.text(max_size=12),
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["C", "max_iter", "restarts", "tol", "init", "coords", "scale",
                                                        "header", "", " ", "time_limit", "nope"]),
              st.one_of(st.text(max_size=8), st.integers(-5, 5).map(str), finite.map(repr),
                        st.sampled_from(["true", "none", "1,2", "nan", "inf", "-1", "0"]))))


@FAST
@given(st.lists(SET_ITEMS, max_size=3))
def test_set_parser_types_or_refuses(items):
    from milopt.runner import parse_sets

    try:
        out = parse_sets(items)
    except InvalidParameterError:
        return
    assert isinstance(out, dict) and all(isinstance(k, str) and k for k in out)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SET_ITEMS, min_size=1, max_size=2))
def test_cli_set_values_exit_cleanly(items):
    import contextlib

    from milopt.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["fit", "misvm-heuristic", "--data", "gen:digits?bags=8&max_size=3&seed=0",
                         "--set", *items])
        except SystemExit as exc:          # argparse refusing an item that looks like an option
            code = exc.code
    assert code in (0, 2), err.getvalue()
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) >= 1 and "Traceback" not in err.getvalue()
        assert "np.int64" not in err.getvalue() and "array(" not in err.getvalue()


def test_errors_are_milopt_errors():
    assert issubclass(InvalidDataError, MiloptError) and issubclass(InvalidDataError, ValueError)
