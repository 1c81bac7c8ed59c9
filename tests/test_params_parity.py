"""The Python estimators and ``milopt fit --set`` accept and refuse the same values, with the same line.

Both read one declaration per method (:func:`milopt.estimators.declaration`): the
command line types its strings with it before loading data, ``MILClassifier.fit`` checks the
constructor's values with it before any work.  For every registered method and every declared
key, values the declaration refuses are refused by both with the same message (``milopt fit``:
exit status 2 and that line on stderr), and values it accepts pass both (each then stops at the
missing data, which is checked after the parameters).
"""
from __future__ import annotations

import contextlib
import io
import math

import pytest

from milopt.cli import main
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.estimators.registry import declaration, methods

METHODS = methods()
MISSING = "/nonexistent/milopt-parity/bags.csv"     # a data file that is not there


def cli_error(name: str, key: str, text: str) -> tuple[int, str]:
    """(exit status, stderr) of ``milopt fit NAME --data MISSING --set KEY=TEXT``."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(["fit", name, "--data", MISSING, "--set", f"{key}={text}"])
    return rc, err.getvalue()


def python_error(spec, key: str, value) -> Exception:
    """What ``Estimator(KEY=value).fit(None)`` raises (the parameters are checked before the data)."""
    est = spec.cls(**{**spec.fixed, key: value})
    with pytest.raises((InvalidParameterError, InvalidDataError)) as info:
        est.fit(None)
    return info.value


def bad_values(p) -> list[tuple[str, object]]:
    """(command-line text, Python value) pairs the declaration ``p`` refuses, by its kind."""
    out = []
    if p.kind in ("float", "int"):
        out += [("abc", "abc"), ("true", True)]
        if p.kind == "int":
            out.append(("2.5", 2.5))
        elif p.finite:
            out += [("nan", math.nan), ("inf", math.inf)]
        if p.gt is not None:
            out.append((f"{p.gt:g}", p.gt))
        if p.ge is not None:
            v = p.ge - 1
            out.append((f"{v:g}", int(v) if p.kind == "int" else v))
        if p.lt is not None:
            out.append((f"{p.lt:g}", p.lt))
        if p.le is not None:
            out.append((f"{p.le + 1:g}", p.le + 1))
    elif p.kind == "bool":
        out += [("maybe", "maybe"), ("2", 2), ("-1", -1)]
    elif p.kind == "choice":
        out += [("no-such-choice", "no-such-choice"), ("123", 123)]
    elif p.kind in ("floats", "ints"):
        out += [("abc", "abc"), ("1,abc", [1, "abc"])]
        if p.gt is not None:
            out.append((f"1,{p.gt:g}", [1, p.gt]))
    elif p.kind == "seconds":
        out += [("0", 0), ("-5", -5), ("inf", math.inf), ("abc", "abc"), ("true", True)]
    if not p.none and p.kind not in ("str", "any") and "none" not in p.choices:
        out.append(("none", None))
    return out


def good_values(p) -> list[tuple[str, object]]:
    """(command-line text, Python value) pairs the declaration ``p`` accepts."""
    out = []
    if p.default is not None and not isinstance(p.default, (list, tuple)):
        out.append((str(p.default).lower() if isinstance(p.default, bool) else str(p.default), p.default))
    if p.none:
        out.append(("none", None))
    if p.kind == "bool":
        out += [("yes", True), ("0", False)]
    out += [(c.upper(), c.upper()) for c in p.choices]
    if p.kind in ("float", "int"):
        for v in (0.5, 1, 2, 10, 100):
            try:
                p.parse(v)
            except InvalidParameterError:
                continue
            out.append((str(v), v))
            break
    if p.kind in ("floats", "ints"):
        out.append(("1,2", [1, 2]))
    if p.kind == "seconds":
        out.append(("2.5", 2.5))
    return out


@pytest.mark.parametrize("name", sorted(METHODS))
def test_python_and_cli_refuse_the_same_values_with_the_same_line(name):
    spec = METHODS[name]
    checked, differ = 0, []
    for key, p in spec.params.items():
        for text, value in bad_values(p):
            with pytest.raises(InvalidParameterError) as info:
                p.parse(value, key)
            line = str(info.value)
            exc = python_error(spec, key, value)
            rc, err = cli_error(name, key, text)
            checked += 1
            if not isinstance(exc, InvalidParameterError) or str(exc) != line:
                differ.append(f"python {key}={value!r}: {exc}")
            if rc != 2 or err != f"milopt: error: {line}\n":
                differ.append(f"cli --set {key}={text}: exit {rc}: {err.strip()} (expected {line})")
    assert checked >= 5 and not differ, "\n".join(differ)


#: rules between two keys (``param_rules``, checked after the keys): a value the declaration accepts
#: may meet one with the method's other defaults (``summary=univ1`` for the SMM methods)
RULE_LINES = ("summary: not used with the SMM kernel (distributional=True)",)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_python_and_cli_accept_the_same_values(name):
    spec = METHODS[name]
    differ = []
    for key, p in spec.params.items():
        for text, value in good_values(p):
            exc = python_error(spec, key, value)
            rc, err = cli_error(name, key, text)
            if isinstance(exc, InvalidParameterError) and str(exc) in RULE_LINES:   # the same in both
                if err != f"milopt: error: {exc}\n":
                    differ.append(f"cli --set {key}={text}: {err.strip()} (expected {exc})")
                continue
            if not isinstance(exc, InvalidDataError):
                differ.append(f"python {key}={value!r}: {exc}")
            if rc != 2 or MISSING not in err:
                differ.append(f"cli --set {key}={text}: {err.strip()}")
    assert not differ, "\n".join(differ)


def test_every_method_has_one_declaration_for_python_and_cli():
    """The keys ``--set`` accepts are the constructor's, less those the method name fixes."""
    import inspect

    for name, spec in METHODS.items():
        sig = [k for k in inspect.signature(spec.cls.__init__).parameters if k != "self"]
        assert list(declaration(spec.cls)) == sig, name
        assert list(spec.params) == [k for k in sig if k not in spec.fixed], name


def test_a_string_is_typed_as_on_the_command_line():
    """``C='2'``, ``kernel='LINEAR'``, ``max_iter=10.0`` fit as ``--set C=2 kernel=LINEAR max_iter=10.0``."""
    import numpy as np

    from milopt.data.loading import load
    from milopt.estimators.heuristics import MISVMHeuristic
    from milopt.runner import run_fit

    data = "gen:multiclass?classes=2&bags=12&instances=3&features=4&seed=0"
    bags = load(data)
    est = MISVMHeuristic(C="2", kernel="LINEAR", max_iter=10.0, restarts="1").fit(bags)
    assert (est.C, est.kernel, est.max_iter, est.restarts) == (2.0, "linear", 10, 1)
    assert isinstance(est.max_iter, int)
    cli = run_fit("misvm-heuristic", data, params={"C": "2", "kernel": "LINEAR", "max_iter": "10.0", "restarts": "1",
                                                   "scale": "false"})
    assert cli["params"]["C"] == 2.0 and cli["params"]["kernel"] == "linear"
    assert cli["train"]["bag_accuracy"] == pytest.approx(float(np.mean(est.predict(bags) == bags.y)))


@pytest.mark.parametrize("item", ["C", "C:10", ""])
def test_a_set_item_without_equals_is_refused(item):
    rc, err = 0, io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(["fit", "sil", "--data", MISSING, "--set", item])
    assert rc == 2
    assert err.getvalue() == f"milopt: error: --set {item!r}: expected key=value (e.g. --set C=10)\n"


def test_one_set_parser():
    """The CLI's error reporting reads ``--set`` with the runner's parser (no second one)."""
    import argparse

    from milopt import cli

    args = argparse.Namespace(set=["C=1", "kernel = rbf"])
    assert cli._set_items(args) == [("C", "1"), ("kernel", "rbf")]
    assert cli._set_items(argparse.Namespace(set=["C"])) == []


def test_time_limit_is_declared_once():
    """``COMMON`` and the formulation estimators' solver settings share :data:`milopt.params.TIME_LIMIT`;
    only the default differs (the constructor's)."""
    from milopt.estimators.formulation import SOLVER_PARAMS
    from milopt.estimators.registry import COMMON
    from milopt.params import TIME_LIMIT

    for p in (COMMON["time_limit"], SOLVER_PARAMS["time_limit"]):
        assert (p.kind, p.describe(), p.none) == (TIME_LIMIT.kind, TIME_LIMIT.describe(), True)
    assert COMMON["time_limit"].default is None and SOLVER_PARAMS["time_limit"].default == 60.0
    for text in ("0", "-1", "inf", "abc"):
        with pytest.raises(InvalidParameterError, match="time_limit: expected seconds > 0"):
            TIME_LIMIT.parse(text)
    assert TIME_LIMIT.parse("none") is None and TIME_LIMIT.parse("2.5") == 2.5


RULES = [  # (method, Python keys, --set items, the line)
    ("sil", {"distributional": "true", "summary": "univ1"}, ["distributional=true", "summary=univ1"],
     "summary: not used with the SMM kernel (distributional=True)"),
    ("pdmisvm", {"preset": "paper-linear", "C": 5}, ["preset=paper-linear", "C=5"],
     "preset=paper-linear sets C=10000.0 but C=5.0 was given; drop one of them"),
]


@pytest.mark.parametrize("name, kw, items, line", RULES)
def test_a_rule_between_two_keys_is_checked_before_any_work_and_read_the_same(name, kw, items, line):
    """A rule between two keys: refused by ``fit`` and by ``milopt fit`` before the data, with the same line."""
    spec = METHODS[name]
    with pytest.raises(InvalidParameterError) as info:
        spec.cls(**kw).fit(None)
    assert str(info.value) == line
    err = io.StringIO()
    argv = ["fit", name, "--data", MISSING]
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv + [a for it in items for a in ("--set", it)])
    assert (rc, err.getvalue()) == (2, f"milopt: error: {line}\n")
