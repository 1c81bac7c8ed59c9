"""Registry of fit methods reachable as ``milopt fit NAME``.

An estimator module calls :func:`register_method` at import time and is listed in
:data:`METHOD_MODULES`.  CLI keys (``--set key=value``) are constructor parameters of the
estimator class; ``fixed`` parameters are set by the method name itself (e.g. ``kernel``).
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field

from milopt.errors import InvalidParameterError

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
    name: str
    cls: type
    fixed: dict = field(default_factory=dict)
    doc: str = ""
    scale: bool = True          # standardise features with training statistics in CV / fit
    needs: tuple = ()           # data requirements: "coords", "samples"

    def keys(self) -> list[str]:
        sig = inspect.signature(self.cls.__init__)
        return [p for p in sig.parameters if p != "self" and p not in self.fixed]

    def make(self, params: dict | None = None, seed: int | None = None):
        params = dict(params or {})
        keys = self.keys()
        unknown = [k for k in params if k not in keys]
        if unknown:
            raise InvalidParameterError(f"{self.name}: unknown key(s) {unknown}; accepted keys: {', '.join(keys)}")
        kw = {**self.fixed, **params}
        if seed is not None and "random_state" in keys and "random_state" not in params:
            kw["random_state"] = seed
        try:
            return self.cls(**kw)
        except TypeError as exc:
            raise InvalidParameterError(f"{self.name}: {exc}") from None


_METHODS: dict[str, MethodSpec] = {}


def register_method(name: str, cls: type, *, fixed: dict | None = None, doc: str = "", scale: bool = True,
                    needs: tuple = ()) -> MethodSpec:
    spec = MethodSpec(name, cls, dict(fixed or {}), doc, scale, tuple(needs))
    _METHODS[name] = spec
    return spec


def methods() -> dict[str, MethodSpec]:
    for mod in METHOD_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    return dict(_METHODS)


def get_method(name: str) -> MethodSpec:
    ms = methods()
    if name not in ms:
        raise InvalidParameterError(f"unknown method {name!r}; available: {', '.join(sorted(ms))}")
    return ms[name]
