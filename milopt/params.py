"""Typed parameter declarations, validated in one place.

Every formulation and every fit method declares its parameters once, as a :class:`ParamSet`
of :class:`Param` (type, default, bounds or choices, help).  The same declaration serves

* ``--set key=value`` on the command line and the parameters of a bench configuration
  (strings are parsed to the declared type),
* the estimators' constructor arguments and the formulation builders (values are checked),
* ``milopt list`` and the parameter tables of the docs (:meth:`ParamSet.table`).

Errors are one line naming the key, what was expected and what was received::

    max_iter: expected an integer, got 'abc'
    C: expected a number > 0, got -1.0
    misvm-bigm: unknown key(s) ['Cc']; accepted keys: C, class_weight, big_m, norm, disjunction

Booleans accept ``true/false, yes/no, on/off, 1/0``; lists accept a comma-separated string
(``0.1,1,10``) or a sequence; ``none``/``null`` gives ``None`` where the parameter allows it.
"""
from __future__ import annotations

import inspect
import math
import numbers
import threading

from milopt.errors import InvalidParameterError

__all__ = ["Param", "ParamSet", "Float", "Int", "Bool", "Str", "Choice", "Floats", "Any", "parse_bool",
           "parse_time_limit", "MAX_SECONDS", "parse_list", "coerce", "shown", "THRESHOLD", "TIME_LIMIT", "AUTO_C", "AUTO_C_GRID"]

TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0")
NONE = ("none", "null")

_PYTYPE = {"float": float, "int": int, "bool": bool, "str": str, "choice": str, "floats": list, "ints": list,
           "seconds": float, "any": object}


def _is_number(v) -> bool:
    """A real number (Python's or numpy's), not a boolean."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and type(v).__name__ != "bool_"


def shown(value):
    """The value an error message shows: the same for a Python value and its command-line spelling.

    A string that reads as a number, a boolean or none (``'-1'``, ``'2.5'``, ``'true'``,
    ``'none'``) is shown as that value, and numpy scalars as Python numbers, so that
    ``--set C=-1`` and ``C=-1`` are refused with the same line (``C: expected a number > 0, got
    -1``); any other string is shown quoted (``got 'abc'``)."""
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        if low in NONE:
            return None
        for typ in (int, float):
            try:
                return typ(value.strip())
            except ValueError:
                pass
        return value
    if _is_number(value):
        return int(value) if isinstance(value, numbers.Integral) else float(value)
    return value


def parse_bool(name: str, value) -> bool:
    """``value`` as a bool (``true/false, yes/no, on/off, 1/0``, numpy booleans), else one clear error."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    if _is_number(value) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in TRUE:
            return True
        if low in FALSE:
            return False
    raise InvalidParameterError(f"{name}: expected true or false, got {shown(value)!r}")



#: the longest time limit accepted: the platform's largest timeout (``threading.TIMEOUT_MAX``,
#: about 292 years on 64-bit Linux)
MAX_SECONDS = float(threading.TIMEOUT_MAX)


def parse_time_limit(value, name: str = "time_limit") -> float | None:
    """A time limit as float seconds in (0, :data:`MAX_SECONDS`], None for None; else one
    :class:`~milopt.errors.InvalidParameterError` line naming ``name``, the value and the fix
    (``time_limit: expected seconds > 0, got 0``).

    The one reading of a time limit: ``--time-limit``, ``--set time_limit``, ``time_limit=`` in
    Python and the ``seconds`` kind of a declaration all call it (also importable as
    :func:`milopt.solvers.budget.parse_time_limit`)."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not (v > 0 and math.isfinite(v)):
        raise InvalidParameterError(f"{name}: expected seconds > 0, got {shown(value)!r}")
    if v > MAX_SECONDS:
        raise InvalidParameterError(f"{name}: {v:g} s is beyond what this platform can wait for "
                                    f"(at most {MAX_SECONDS:.4g} s); give a smaller limit, or none for no limit")
    return v


def parse_list(name: str, value, item=float) -> list:
    """A comma-separated string or a sequence as a list of ``item`` (float or int)."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    elif _is_number(value):
        parts = [value]
    else:
        raise InvalidParameterError(f"{name}: expected a comma-separated list, got {shown(value)!r}")
    kind = "int" if item is int else "float"
    return [Param(kind)._scalar(f"{name}", p) for p in parts]


def coerce(value):
    """Type a value whose declaration is unknown: bool, None, int, float, else the string."""
    if not isinstance(value, str):
        return value
    low = value.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in NONE:
        return None
    for typ in (int, float):
        try:
            return typ(value)
        except ValueError:
            pass
    return value


class Param:
    """One parameter: kind, default, bounds or choices, help.

    Parameters
    ----------
    kind : {'float', 'int', 'bool', 'str', 'choice', 'floats', 'ints', 'seconds', 'any'}
        ``choice`` takes one of ``choices``; ``float``/``int`` may also take one of ``choices``
        (e.g. ``big_m``: 'valid', 'mildsvm' or a number); ``floats``/``ints`` are lists;
        ``seconds`` is a time limit, checked by :func:`parse_time_limit`.
    default : object
        Value used when the key is not given.
    help : str
        One line for ``milopt list`` and the docs.
    gt, ge, lt, le : float, optional
        Bounds for numbers (and for every item of a list).
    choices : tuple of str, optional
    none : bool
        Whether ``None`` is allowed (always when the default is ``None``).
    finite : bool
        Numbers must be finite (default).
    objects : tuple of type, optional
        Python objects accepted as they are besides the declared values (e.g. a likelihood
        object where the command line names one); the estimator checks them.  The command line
        cannot give them, so they never make the two disagree.

    Notes
    -----
    For code written against the former ``PARAMS = {name: (type, default, help)}`` contract,
    ``param[0]``, ``param[1]``, ``param[2]`` give the Python type, the default and the help.
    """

    __slots__ = ("name", "kind", "default", "help", "gt", "ge", "lt", "le", "choices", "none", "finite", "objects")

    def __init__(self, kind: str = "any", default=None, help: str = "", *, gt=None, ge=None, lt=None, le=None,
                 choices=None, none: bool = False, finite: bool = True, objects=(), name: str = ""):
        if kind not in _PYTYPE:
            raise ValueError(f"Param kind must be one of {sorted(_PYTYPE)}, got {kind!r}")
        self.name, self.kind, self.default, self.help = name, kind, default, help
        self.gt, self.ge, self.lt, self.le = gt, ge, lt, le
        self.choices = tuple(choices) if choices else ()
        self.none = bool(none) or default is None
        self.finite = finite
        self.objects = tuple(objects)

    # legacy (type, default, help) view
    def __getitem__(self, i):
        return (_PYTYPE[self.kind], self.default, self.help)[i]

    def __iter__(self):
        return iter((_PYTYPE[self.kind], self.default, self.help))

    def __len__(self):
        return 3

    def __repr__(self):
        return f"Param({self.name!r}, {self.describe()}, default={self.default!r})"

    def named(self, name: str) -> "Param":
        p = Param.__new__(Param)
        for s in Param.__slots__:
            setattr(p, s, getattr(self, s))
        p.name = name
        return p

    def with_default(self, default) -> "Param":
        """This declaration with another default (a constructor's own default for a shared key)."""
        p = self.named(self.name)
        p.default = default
        p.none = p.none or default is None
        return p

    # ------------------------------------------------------------ description
    def _bounds(self) -> str:
        parts = []
        for op, v in ((">", self.gt), (">=", self.ge), ("<", self.lt), ("<=", self.le)):
            if v is not None:
                parts.append(f"{op} {v:g}")
        return " and ".join(parts)

    def _item(self) -> str:
        """What one number of this parameter accepts, e.g. 'an integer >= 1'."""
        b = self._bounds()
        out = "an integer" if self.kind in ("int", "ints") else "a number"
        return f"{out} {b}" if b else out

    def describe(self) -> str:
        """What the parameter accepts, e.g. 'a number > 0', 'one of l2, l1'."""
        b = self._bounds()
        choices = ", ".join(self.choices)
        if self.kind == "choice":
            out = f"one of {choices}"
        elif self.kind in ("float", "int"):
            out = "a number" if self.kind == "float" else "an integer"
            if b:
                out += f" {b}"
            if self.choices:
                out = f"{choices} or {out}"
        elif self.kind == "bool":
            out = "true or false" if not self.choices else f"{choices}, true or false"
        elif self.kind in ("floats", "ints"):
            out = f"a comma-separated list of {'numbers' if self.kind == 'floats' else 'integers'}"
            if b:
                out += f" {b}"
        elif self.kind == "str":
            out = "a string"
        elif self.kind == "seconds":
            out = "seconds > 0"
        else:
            out = "a value"
        return out

    # ------------------------------------------------------------ parsing
    def _fail(self, name, value, what=None):
        raise InvalidParameterError(f"{name}: expected {what or self.describe()}, got {shown(value)!r}")

    def _scalar(self, name, value):
        if self.kind in ("int", "ints"):
            if _is_number(value) and float(value).is_integer():
                v = int(value)
            elif isinstance(value, str):
                try:
                    v = int(value.strip())
                except ValueError:
                    try:
                        f = float(value)
                    except ValueError:
                        f = math.nan
                    if not f.is_integer():
                        self._fail(name, value, self._item())
                    v = int(f)
            else:
                self._fail(name, value, self._item())
        else:
            if _is_number(value):
                v = float(value)
            elif isinstance(value, str):
                try:
                    v = float(value.strip())
                except ValueError:
                    self._fail(name, value, self._item())
            else:
                self._fail(name, value, self._item())
            if self.finite and not math.isfinite(v):
                self._fail(name, value, "a finite number")
        if ((self.gt is not None and not v > self.gt) or (self.ge is not None and not v >= self.ge)
                or (self.lt is not None and not v < self.lt) or (self.le is not None and not v <= self.le)):
            self._fail(name, value)
        return v

    def parse(self, value, name: str | None = None):
        """``value`` (a Python value or a command-line string) as the declared type."""
        name = name or self.name
        if self.objects and isinstance(value, self.objects):
            return value
        if self.choices and isinstance(value, str):  # a choice may be a word such as 'none'
            low = value.strip().lower()
            for c in self.choices:
                if low == str(c).lower():
                    return c
        if value is None:
            if self.none:
                return None
            self._fail(name, value)
        if isinstance(value, str) and value.strip().lower() in NONE and self.kind != "str":
            low = value.strip().lower()
            if self.none:
                return None
            if self.kind == "any":  # e.g. class_weight='none': a word, not a missing value
                return low
            if not any(str(c).lower() == low for c in self.choices):
                self._fail(name, value)
        if self.kind == "bool":
            try:
                return parse_bool(name, value)
            except InvalidParameterError:
                if self.choices:
                    self._fail(name, value)
                raise
        if self.kind == "seconds":
            try:
                return parse_time_limit(value, name)
            except InvalidParameterError:
                self._fail(name, value)
        if self.kind in ("float", "int"):
            if self.choices and isinstance(value, str):
                low = value.strip().lower()
                for c in self.choices:
                    if low == c.lower():
                        return c
            try:
                return self._scalar(name, value)
            except InvalidParameterError:
                if self.choices:
                    self._fail(name, value)
                raise
        if self.kind == "choice":
            if isinstance(value, str):
                low = value.strip().lower()
                for c in self.choices:
                    if low == str(c).lower():
                        return c
            elif value in self.choices:
                return value
            self._fail(name, value)
        if self.kind in ("floats", "ints"):
            items = parse_list(name, value, int if self.kind == "ints" else float)
            return [self._scalar(name, v) for v in items]
        if self.kind == "str":
            return value if isinstance(value, str) else str(value)
        return coerce(value)


# short constructors: Float(1.0, "cost", gt=0), Choice("l2", ("l2", "l1"), "norm"), ...
def Float(default=None, help="", **kw) -> Param:
    """A :class:`Param` for a real number; ``kw``: the checks of :class:`Param` (``gt``, ``ge``, ``lt``, ``le``, ``choices``, ``none``, ``finite``)."""
    return Param("float", default, help, **kw)


def Int(default=None, help="", **kw) -> Param:
    """A :class:`Param` for an integer; ``kw``: the checks of :class:`Param` (``gt``, ``ge``, ``lt``, ``le``, ``choices``, ``none``, ``finite``)."""
    return Param("int", default, help, **kw)


def Bool(default=False, help="", **kw) -> Param:
    """A :class:`Param` for a boolean; ``kw``: the checks of :class:`Param` (``gt``, ``ge``, ``lt``, ``le``, ``choices``, ``none``, ``finite``)."""
    return Param("bool", default, help, **kw)


def Str(default=None, help="", **kw) -> Param:
    """A :class:`Param` for a string; ``kw``: the checks of :class:`Param` (``gt``, ``ge``, ``lt``, ``le``, ``choices``, ``none``, ``finite``)."""
    return Param("str", default, help, **kw)


def Choice(default, choices, help="", **kw) -> Param:
    """A :class:`Param` taking one of ``choices`` (strings)."""
    return Param("choice", default, help, choices=choices, **kw)


def Floats(default=None, help="", **kw) -> Param:
    """A :class:`Param` for a list of numbers; ``kw``: the checks of :class:`Param` (``gt``, ``ge``, ``lt``, ``le``, ``choices``, ``none``, ``finite``)."""
    return Param("floats", default, help, **kw)


def Any(default=None, help="", **kw) -> Param:
    """A :class:`Param` for a value of any type (numbers parsed, strings kept); ``kw``: the checks of :class:`Param` (``gt``, ``ge``, ``lt``, ``le``, ``choices``, ``none``, ``finite``)."""
    return Param("any", default, help, **kw)


class ParamSet(dict):
    """Ordered ``name -> Param``: the one declaration of a formulation's or a method's keys.

    ``ParamSet(C=Float(1.0, "cost", gt=0), norm=Choice("l2", ("l2", "l1")))``.  A legacy
    dict ``{name: (type, default, help)}`` is accepted by :meth:`coerce_spec`.
    """

    def __init__(self, *args, **params):
        super().__init__()
        for src in args + (params,):
            for k, p in dict(src).items():
                self[k] = p if isinstance(p, Param) else _from_tuple(p)
        for k in list(self):
            if self[k].name != k:
                dict.__setitem__(self, k, self[k].named(k))

    def __setitem__(self, k, p):
        p = p if isinstance(p, Param) else _from_tuple(p)
        super().__setitem__(k, p if p.name == k else p.named(k))

    @classmethod
    def coerce_spec(cls, spec) -> "ParamSet":
        """A ParamSet from a ParamSet, a legacy ``{name: (type, default, help)}`` dict, or None."""
        if isinstance(spec, ParamSet):
            return spec
        return cls(spec or {})

    @classmethod
    def from_signature(cls, func, skip=(), declared=None) -> "ParamSet":
        """Declarations inferred from a constructor's signature (type from the default),
        overridden by ``declared`` where given."""
        declared = ParamSet.coerce_spec(declared)
        out = cls()
        for p in inspect.signature(func).parameters.values():
            if p.name in ("self",) or p.name in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.name in declared:
                out[p.name] = declared[p.name]
                continue
            d = None if p.default is p.empty else p.default
            out[p.name] = Param(_kind_of(d), d)
        return out

    def defaults(self) -> dict:
        return {k: p.default for k, p in self.items()}

    def check_keys(self, values, where: str, extra=()) -> None:
        unknown = [k for k in values if k not in self and k not in extra]
        if unknown:
            from milopt.errors import did_you_mean

            raise InvalidParameterError(f"{where}: unknown key(s) {unknown}"
                                        f"{did_you_mean(unknown, list(self) + list(extra))}; accepted keys: "
                                        f"{', '.join(list(self) + list(extra))}")

    def validate(self, values: dict | None, where: str = "parameters", extra=()) -> dict:
        """Typed copy of ``values`` (only the given keys); unknown keys and bad values raise
        :class:`InvalidParameterError` naming the key."""
        values = dict(values or {})
        self.check_keys(values, where, extra)
        return {k: (self[k].parse(v, k) if k in self else v) for k, v in values.items()}

    def resolve(self, values: dict | None, where: str = "parameters") -> dict:
        """Defaults completed by the validated ``values``: the parameters actually used."""
        return {**self.defaults(), **self.validate(values, where)}

    def help(self) -> dict:
        return {k: p.help for k, p in self.items()}

    def summary(self) -> dict:
        """JSON-ready ``{key: {"default", "accepts", "help"}}`` (``milopt list --json``)."""
        return {k: {"default": p.default, "accepts": p.describe(), "help": p.help} for k, p in self.items()}

    def table(self) -> str:
        """Markdown table of the parameters (key, accepts, default, meaning)."""
        rows = ["| key | accepts | default | meaning |", "|---|---|---|---|"]
        for k, p in self.items():
            rows.append(f"| `{k}` | {p.describe()} | `{p.default!r}` | {p.help} |")
        return "\n".join(rows)


def _kind_of(default) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, str):
        return "any"  # a string default may stand for a number too (e.g. gamma='scale')
    return "any"


def _from_tuple(t) -> Param:
    typ, default, *rest = tuple(t)
    help_ = rest[0] if rest else ""
    kind = {float: "float", int: "int", bool: "bool", str: "str", list: "floats"}.get(typ, "any")
    if kind == "str" and default is None:
        kind = "any"
    return Param(kind, default, help_)


#: The time limit of every fit method and solver setting, declared once (``--set time_limit=...``,
#: ``milopt list``, the estimators' ``time_limit`` argument): seconds > 0, or none for no limit;
#: checked by :func:`parse_time_limit`, as ``--time-limit``.  Its default here is none (no limit);
#: an estimator's own default is its constructor's (``Param.with_default``): 60 s for the
#: formulation estimators (:data:`milopt.estimators.formulation.SOLVER_PARAMS`, ``misvm-miqp``),
#: 30 s for ``mismm-miqp``, 120 s for the batch LPs -- a solver on a hard instance may search
#: for hours, and a fit must end -- and none for the native methods, which stop by their
#: iteration limits.
TIME_LIMIT = Param("seconds", None, "seconds per solve (none: no limit); the best point found is used when it "
                   "is hit", name="time_limit")

#: The bag decision rule of every fit method, declared once: ``milopt fit METHOD --set
#: threshold=...``, ``milopt list``, ``--tune`` and the estimators' ``threshold`` argument all read
#: this declaration.  ``auto``: a bag threshold on the decision scores chosen on the training
#: bags by the method's rule (:meth:`milopt.estimators.base.MILClassifier.threshold_rule`);
#: ``zero``: the model's own rule (score > 0); a number: score > that number.
THRESHOLD = Param("float", "auto", "bag decision rule: auto (a threshold chosen on the training bags by the "
                  "method's rule), zero (score > 0, the model's own rule) or a number (score > it)",
                  choices=("auto", "zero"), name="threshold")

#: The values ``C='auto'`` chooses among (``MILClassifier._choose_C``):
#: the grid of the robustness suite's nested cross-validation, two decades around 1.
AUTO_C_GRID = (0.1, 1.0, 10.0)

#: ``C`` of the methods whose default is ``'auto'`` (``sil``, ``mi-svm-heuristic``, ``pdmisvm``): a positive
#: number, or ``auto``, the value of :data:`AUTO_C_GRID` whose inner models (the decision rule's
#: inner folds) score their held-out bags best; ``milopt fit --json`` reports it as ``chosen_C``.
AUTO_C = Param("float", "auto", "misclassification cost: a number > 0, or auto (chosen among 0.1, 1, 10 on the "
               "held-out bag scores of the decision rule's inner folds)", gt=0, choices=("auto",), name="C")
