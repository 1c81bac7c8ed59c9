"""Registry of data generators reachable as ``gen:NAME?key=value&...``.

A generator module calls :func:`register_generator` at import time; the module must be listed
in :data:`GENERATOR_MODULES` (or imported before use) so that ``load`` finds it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from milopt.errors import InvalidParameterError
from milopt.params import coerce
from milopt.plugins import import_all

GENERATOR_MODULES = [
    "milopt.data.generators",
    "milopt.data.gen_multiclass",
    "milopt.data.gen_cad",
    "milopt.data.gen_subset",
]


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator: ``gen:NAME?key=value&...`` calls ``func(**params)``; ``doc`` is its
    line in ``milopt list``."""

    name: str
    func: Callable
    doc: str


_GENERATORS: dict[str, GeneratorSpec] = {}


def register_generator(name: str, func: Callable, doc: str = "") -> Callable:
    """Make ``func(**params) -> Bags`` loadable as ``gen:NAME?key=value&...``; ``doc`` (default:
    the first line of ``func``'s docstring) is its line in ``milopt list``.  Returns ``func``."""
    _GENERATORS[name] = GeneratorSpec(name, func, doc or (func.__doc__ or "").strip().split("\n")[0])
    return func


def _import_all():
    import_all(GENERATOR_MODULES)


def generators() -> dict[str, GeneratorSpec]:
    """Every registered generator, ``name -> GeneratorSpec`` (the built-in modules imported first)."""
    _import_all()
    return dict(_GENERATORS)


def generate(spec: str):
    """Build the data set of ``gen:NAME?k=v&...`` (the leading ``gen:`` is optional)."""
    from urllib.parse import parse_qsl

    body = spec[4:] if spec.startswith("gen:") else spec
    name, _, query = body.partition("?")
    gens = generators()
    if name not in gens:
        raise InvalidParameterError(f"unknown generator {name!r}; available: {', '.join(sorted(gens))}")
    func = gens[name].func
    params = {k: coerce(v) for k, v in parse_qsl(query, keep_blank_values=True)}
    sig = inspect.signature(func)
    accepts_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    unknown = [k for k in params if k not in sig.parameters] if not accepts_kw else []
    if unknown:
        keys = [k for k in sig.parameters]
        raise InvalidParameterError(f"generator {name!r}: unknown key(s) {unknown}; accepted keys: {keys}")
    bags = func(**params)
    return bags
