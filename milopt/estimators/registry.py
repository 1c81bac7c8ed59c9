"""Registry of fit methods reachable as ``milopt fit NAME`` and ``milopt.estimator(NAME)``.

An estimator module calls :func:`register_method` at import time; a built-in module is listed
in :data:`METHOD_MODULES`, a plugin module registers itself when it is loaded (``milopt
--plugin FILE``, a bench configuration's ``imports``).  The keys of a method (``--set
key=value``) are the constructor parameters of its class, less the ``fixed`` ones set by the
method name itself (e.g. ``kernel``); their declaration (:class:`~milopt.params.ParamSet`) is
the class attribute ``param_spec`` where given, else the shared :data:`COMMON` declarations
for conventional names (``C``, ``time_limit``, ``max_iter``, ...), else inferred from the
constructor's default.

Besides the registered methods, every formulation whose solution is a classifier can be
fitted under its own name (``milopt fit misvm-bigm --set norm=l1``): the generic
:class:`~milopt.estimators.formulation.FormulationClassifier` builds, solves and decodes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from milopt.errors import InvalidParameterError
from milopt.params import THRESHOLD, Bool, Float, Int, ParamSet
from milopt.plugins import import_all

METHOD_MODULES = [
    "milopt.estimators.misvm",
    "milopt.estimators.heuristics",
    "milopt.estimators.pdmisvm",
    "milopt.estimators.dcmil",
    "milopt.estimators.batch",
    "milopt.estimators.vgpmil",
]

#: declarations shared by every method that has a constructor parameter of that name (the
#: estimator's own default is kept)
COMMON = ParamSet(
    C=Float(1.0, "misclassification cost", gt=0),
    nu=Float(1.0, "cost of the slacks", gt=0),
    time_limit=Float(None, "seconds per solve", gt=0, finite=False),
    mip_gap=Float(None, "relative gap at which branch and bound stops", ge=0, lt=1),
    tol=Float(1e-3, "stopping tolerance", gt=0),
    max_iter=Int(50, "maximum number of iterations", ge=1),
    restarts=Int(1, "random restarts", ge=1),
    threads=Int(None, "solver threads", ge=1),
    random_state=Int(0, "seed", none=True),
    warm_start=Bool(True, "start the solver from a cheap feasible point"),
    scale_samples=Bool(True, "standardise the samples of distributional instances"),
    distributional=Bool(False, "instances are samples (kernel mean embeddings)"),
    threshold=THRESHOLD,
)


def _declared(cls) -> ParamSet:
    own = ParamSet.coerce_spec(getattr(cls, "param_spec", None))
    return ParamSet(COMMON, own)


@dataclass(frozen=True)
class MethodSpec:
    """A registered fit method (``milopt fit NAME``): its estimator class ``cls``, the
    constructor values ``fixed`` by the name, its one-line ``doc`` and the data it ``needs``."""

    name: str
    cls: type
    fixed: dict = field(default_factory=dict)
    doc: str = ""
    scale: bool = True          # standardise features with training statistics in CV / fit
    needs: tuple = ()           # data requirements: "coords", "samples"

    @property
    def params(self) -> ParamSet:
        """The typed declaration of the method's keys (defaults are the constructor's; a key
        declared without help text is described from the class docstring's Parameters section)."""
        ps = ParamSet.from_signature(self.cls.__init__, skip=self.fixed, declared=_declared(self.cls))
        sig_defaults = _signature_defaults(self.cls)
        docs = None
        for k, p in ps.items():
            fix_default = k in sig_defaults and p.default != sig_defaults[k]
            if not fix_default and p.help:
                continue
            q = p.named(k)
            if fix_default:
                q.default = sig_defaults[k]
                q.none = q.none or q.default is None
            if not q.help:
                docs = _docstring_params(self.cls) if docs is None else docs
                q.help = docs.get(k, "")
            dict.__setitem__(ps, k, q)
        return ps

    def keys(self) -> list[str]:
        return list(self.params)

    def validate(self, params: dict | None) -> dict:
        """Typed copy of ``params`` (unknown keys and bad values raise, naming the key)."""
        return self.params.validate(params, self.name)

    def resolve(self, params: dict | None, seed: int | None = None) -> dict:
        """Every constructor value the method uses: defaults completed by ``params``."""
        out = self.params.resolve(params, self.name)
        if seed is not None and "random_state" in out and "random_state" not in (params or {}):
            out["random_state"] = seed
        return out

    def make(self, params: dict | None = None, seed: int | None = None):
        """The estimator for ``params`` (validated; ``seed`` fills ``random_state`` when not set)."""
        typed = self.validate(params)
        kw = {**self.fixed, **typed}
        if seed is not None and "random_state" in self.params and "random_state" not in typed:
            kw["random_state"] = seed
        try:
            return self.cls(**kw)
        except TypeError as exc:
            raise InvalidParameterError(f"{self.name}: {exc}") from None


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


_METHODS: dict[str, MethodSpec] = {}


def register_method(name: str, cls: type, *, fixed: dict | None = None, doc: str = "", scale: bool = True,
                    needs: tuple = ()) -> MethodSpec:
    """Make ``cls`` (a :class:`~milopt.estimators.base.MILClassifier`) fittable as ``name``."""
    spec = MethodSpec(name, cls, dict(fixed or {}), doc, scale, tuple(needs))
    _METHODS[name] = spec
    return spec


def methods() -> dict[str, MethodSpec]:
    """The registered methods (imports every built-in estimator module)."""
    import_all(METHOD_MODULES)
    return dict(_METHODS)


def formulation_method(name: str) -> MethodSpec | None:
    """The generic method fitting formulation ``name``, or None when there is no such formulation."""
    import milopt.models as models

    if name not in models.names():
        return None
    from milopt.estimators.formulation import classifier_class

    f = models.formulation(name)
    cls = classifier_class(f)
    return MethodSpec(name, cls, {}, f"the formulation {name} solved by the driver, decoded as a classifier")


def get_method(name: str) -> MethodSpec:
    """The method called ``name``: a registered method, else a fittable formulation."""
    ms = methods()
    if name in ms:
        return ms[name]
    spec = formulation_method(name)
    if spec is not None:
        return spec
    from milopt.errors import did_you_mean
    from milopt.models import names as formulation_names

    raise InvalidParameterError(f"unknown method {name!r}{did_you_mean(name, [*ms, *formulation_names()])}; "
                                f"available: {', '.join(sorted(ms))} (or a formulation name from milopt list)")
