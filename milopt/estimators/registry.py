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
from milopt.estimators.declaration import COMMON, check_rules, declaration  # noqa: F401  (read by milopt fit)
from milopt.params import ParamSet
from milopt.plugins import import_all

METHOD_MODULES = [
    "milopt.estimators.misvm",
    "milopt.estimators.heuristics",
    "milopt.estimators.pdmisvm",
    "milopt.estimators.dcmil",
    "milopt.estimators.batch",
    "milopt.estimators.vgpmil",
]

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
        """The typed declaration of the method's keys: :func:`declaration` of its class, less the
        keys its name fixes."""
        return ParamSet({k: p for k, p in declaration(self.cls).items() if k not in self.fixed})

    def keys(self) -> list[str]:
        return list(self.params)

    def validate(self, params: dict | None) -> dict:
        """Typed copy of ``params`` (unknown keys and bad values raise, naming the key; so do two
        values that cannot go together, with the method's other values, :func:`check_rules`)."""
        typed = self.params.validate(params, self.name)
        if getattr(self.cls, "param_rules", ()):
            check_rules(self.cls, {**self.params.defaults(), **self.fixed, **typed})
        return typed

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
