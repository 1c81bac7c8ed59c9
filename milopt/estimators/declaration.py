"""The typed declaration of an estimator's constructor parameters, read by both doors.

:func:`declaration` gives, per estimator class, the :class:`~milopt.params.ParamSet` of every
constructor key: the class attribute ``param_spec`` where given, else the shared :data:`COMMON`
declaration of a conventional name (``C``, ``time_limit``, ``max_iter``, ...), else inferred
from the constructor's default.  ``MILClassifier.fit`` checks its values against it, and
``milopt fit NAME --set`` validates against it (less the keys the method name fixes), so the
Python API and the command line accept and refuse the same values with the same message;
:func:`check_rules` applies the rules between keys a class declares.
"""
from __future__ import annotations

from milopt.features.kernels import KERNELS
from milopt.params import THRESHOLD, TIME_LIMIT, Bool, Choice, Float, Int, ParamSet

__all__ = ["COMMON", "declaration", "check_rules"]

#: declarations shared by every method that has a constructor parameter of that name (the
#: estimator's own default is kept)
COMMON = ParamSet(
    C=Float(1.0, "misclassification cost", gt=0),
    nu=Float(1.0, "cost of the slacks", gt=0),
    time_limit=TIME_LIMIT,
    mip_gap=Float(None, "relative gap at which branch and bound stops", ge=0, lt=1),
    tol=Float(1e-3, "stopping tolerance", gt=0),
    max_iter=Int(50, "maximum number of iterations", ge=1),
    restarts=Int(1, "random restarts", ge=1, le=1000),
    threads=Int(None, "solver threads", ge=1),
    random_state=Int(0, "seed", none=True),
    warm_start=Bool(True, "start the solver from a cheap feasible point"),
    scale_samples=Bool(True, "standardise the samples of distributional instances"),
    distributional=Bool(False, "instances are samples (kernel mean embeddings)"),
    threshold=THRESHOLD,
    kernel=Choice("rbf", KERNELS),
    gamma=Float("scale", gt=0, choices=("scale", "auto"), none=True),
)


def _declared(cls) -> ParamSet:
    own = ParamSet.coerce_spec(getattr(cls, "param_spec", None))
    return ParamSet(COMMON, own)


_DECLARATIONS: dict = {}


def declaration(cls) -> ParamSet:
    """The typed declaration of every constructor parameter of the estimator class ``cls``.

    The class attribute ``param_spec`` where given, else the shared :data:`COMMON` declaration
    of a conventional name, else inferred from the constructor's default; the default is the
    constructor's, and a key declared without help text is described from the class
    docstring's Parameters section.  It is what ``milopt fit NAME --set`` validates (less the
    keys the method name fixes) and what ``MILClassifier.fit``
    checks the constructor's values against, so the
    command line and the Python API accept and refuse the same values with the same message.
    Computed once per class.

    Parameters
    ----------
    cls : type
        A :class:`~milopt.estimators.base.MILClassifier` subclass.

    Returns
    -------
    ParamSet
        ``{key: Param}`` in the constructor's order."""
    ps = _DECLARATIONS.get(cls)
    if ps is None:
        ps = ParamSet.from_signature(cls.__init__, declared=_declared(cls))
        sig_defaults = _signature_defaults(cls)
        docs = None
        for k, p in ps.items():
            fix_default = k in sig_defaults and p.default != sig_defaults[k]
            if not fix_default and p.help:
                continue
            q = p.with_default(sig_defaults[k]) if fix_default else p.named(k)
            if not q.help:
                docs = _docstring_params(cls) if docs is None else docs
                q.help = docs.get(k, "")
            dict.__setitem__(ps, k, q)
        _DECLARATIONS[cls] = ps
    return ParamSet(ps)


def check_rules(cls, values: dict) -> None:
    """Apply the rules between keys that the estimator class ``cls`` declares (its class attribute
    ``param_rules``: functions of the dict of every typed constructor value that raise
    :class:`~milopt.errors.InvalidParameterError` with one line when two values cannot go
    together, e.g. ``summary`` with ``distributional=True``).  Read by ``milopt fit`` before
    loading data and by ``MILClassifier.fit`` before any work, after the keys themselves."""
    for rule in getattr(cls, "param_rules", ()):
        rule(values)


def _numpydoc_params(doc: str) -> dict:
    """``{name: (type, description)}`` of a numpydoc ``Parameters`` section (names listed
    together, ``a, b : float``, share their entry)."""
    import inspect
    import re

    lines = inspect.cleandoc(doc or "").splitlines()
    out = {}
    try:
        start = next(i for i, ln in enumerate(lines[:-1]) if ln.strip() == "Parameters" and
                     set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        return out
    names, typ, desc = [], "", []

    def flush():
        text = " ".join(d.strip() for d in desc if d.strip())
        for n in names:
            out.setdefault(n, (typ, text))

    for ln in lines[start + 2:]:
        if ln.strip() and not ln.startswith(" ") and len(ln.strip()) > 0:
            if re.fullmatch(r"-{3,}", ln.strip()):     # the next section's underline: stop
                names = names[:0] if not desc else names
                break
            flush()
            head, _, typ = ln.partition(" : ")
            names = [n.strip() for n in head.split(",") if n.strip()]
            typ, desc = typ.strip(), []
            if not re.fullmatch(r"[A-Za-z_][\w, ]*", head.strip()):   # a section title (Attributes, ...)
                names = []
                break
        else:
            desc.append(ln)
    flush()
    return out


def _first_sentence(text: str) -> str:

    depth, cut = 0, len(text)
    for i, ch in enumerate(text):   # the first ". " outside parentheses ends the sentence
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "." and depth <= 0 and (i + 1 == len(text) or text[i + 1].isspace()) \
                and not text[:i].lower().endswith(("eq", "eqs", "e.g", "i.e", "et al", "cf", "sec", "fig")):
            cut = i
            break
    return text[:cut].strip()


def _docstring_params(cls) -> dict:
    """Help text per constructor key from the numpydoc ``Parameters`` sections of ``cls``, its
    bases and the other classes of its module (for entries that say "see OtherClass"): the
    first sentence of the description, else the accepted values given as the type."""
    import re
    import sys

    found: dict = {}
    classes = [c for c in cls.__mro__ if c.__doc__]
    mod = sys.modules.get(cls.__module__)
    if mod is not None:
        classes += [c for c in vars(mod).values() if isinstance(c, type) and c.__doc__ and c not in classes]
    for c in classes:
        for name, (typ, desc) in _numpydoc_params(c.__doc__).items():
            text = _first_sentence(desc) if desc and not desc.lower().startswith("see ") else ""
            if not text and typ and not typ.lower().startswith("see "):
                text = typ
            if text and name not in found:
                text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)     # reST roles and literals read as plain text
                found[name] = text.replace("``", "")
    return found


def _signature_defaults(cls) -> dict:
    import inspect

    return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
            if p.default is not p.empty}
