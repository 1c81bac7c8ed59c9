"""Plugins: Python files or modules whose import registers formulations, methods, backends,
generators.

``milopt --plugin FILE.py COMMAND ...`` (repeatable), the environment variable
``MILOPT_PLUGINS`` (paths or module names separated by ``os.pathsep``) and a bench
configuration's ``imports`` all load plugins before anything is looked up by name.  A plugin
calls the ordinary registration functions at import time:

* :func:`milopt.models.register_formulation`
* :func:`milopt.estimators.registry.register_method`
* :func:`milopt.solvers.driver.register_backend`
* :func:`milopt.data.registry.register_generator`
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from milopt.errors import InvalidParameterError

__all__ = ["load", "load_all", "import_all", "module_name", "argv_plugins", "ENV"]

#: environment variable: plugin files or modules, separated by the path separator, loaded at start
ENV = "MILOPT_PLUGINS"


def module_name(path: str) -> str:
    """The ``sys.modules`` name under which a plugin file is loaded (stable per path)."""
    return "milopt_plugin_" + hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:10]


def load(item: str):
    """Import one plugin: a ``.py`` path or a module name; returns the module (loaded once)."""
    if item.endswith(".py"):
        p = Path(item)
        if not p.is_file():
            raise InvalidParameterError(f"plugin: file {item!r} not found")
        name = module_name(item)
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, str(p.resolve()))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception:
            sys.modules.pop(name, None)
            raise
        return mod
    try:
        return importlib.import_module(item)
    except ModuleNotFoundError as exc:
        if exc.name != item:
            raise
        raise InvalidParameterError(f"plugin: module {item!r} not found (give a module name on sys.path or a "
                                    ".py file)") from None


def import_all(modules) -> None:
    """Import the modules of a built-in catalogue (their import registers them)."""
    for mod in modules:
        importlib.import_module(mod)


def load_all(items=()) -> list:
    """Load the plugins of ``MILOPT_PLUGINS`` and then ``items``."""
    env = [s for s in os.environ.get(ENV, "").split(os.pathsep) if s.strip()]
    return [load(i) for i in [*env, *items]]


def argv_plugins(argv) -> list[str]:
    """The values of every ``--plugin X`` / ``--plugin=X`` in a command line."""
    out = []
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == "--plugin" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--plugin="):
            out.append(a.split("=", 1)[1])
    return out
