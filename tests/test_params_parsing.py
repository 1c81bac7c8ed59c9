"""Parsing details of the one parameter declaration (:mod:`milopt.params`) and of ``--set``."""
import pytest

from milopt.errors import InvalidParameterError
from milopt.params import Param
from milopt.runner import parse_sets


def test_ints_are_integers():
    out = Param("ints", None, "sizes", ge=0).parse("1, 2,3", "sizes")
    assert out == [1, 2, 3] and all(type(v) is int for v in out)


def test_a_type_failure_names_the_bound():
    with pytest.raises(InvalidParameterError, match=r"^n: expected an integer >= 1, got 'abc'$"):
        Param("int", None, "n", ge=1).parse("abc", "n")
    with pytest.raises(InvalidParameterError, match=r"^C: expected a number > 0, got 'x'$"):
        Param("float", None, "C", gt=0).parse("x", "C")


def test_a_key_set_twice_with_two_values_is_refused():
    assert parse_sets(["C=1", "C=1"]) == {"C": "1"}
    with pytest.raises(InvalidParameterError, match=r"--set C: given twice \(C=1, C=2\); give it once"):
        parse_sets(["C=1", "C=2"])
