"""Keep Pyomo's import from pulling in ``scipy.stats``.

Pyomo registers a finaliser for SciPy (``pyomo.common.dependencies._finalize_scipy``) that
imports ``scipy.stats``, ``scipy.integrate`` and ``scipy.spatial`` as soon as *any* code
imports ``scipy``; ``milopt export`` only needs ``scipy.sparse``, and those submodules cost
about 1.5 s of a 6 s command.  This hook runs once, right after Pyomo's dependency module is
imported, and removes that finaliser when SciPy is not imported yet.  SciPy's submodules stay
importable on first use (``scipy.stats`` is imported lazily by SciPy itself), so nothing Pyomo
does is lost; it only stops paying for what the command does not use.
"""
from __future__ import annotations

import sys

_TARGET = "pyomo.common.dependencies"


def _drop_scipy_finaliser(dep) -> None:
    if "scipy" in sys.modules:
        return
    finder = getattr(dep, "DeferredImportCallbackFinder", None)
    callbacks = getattr(finder, "_callbacks", None)
    if not isinstance(callbacks, dict):
        return
    for indicator in callbacks.pop("scipy", []):
        indicator._callback = None


class _Loader:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _drop_scipy_finaliser(module)


class _Finder:
    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                spec.loader = _Loader(spec.loader)
                sys.meta_path.remove(self)
                return spec
        return None


def install() -> None:
    """Arrange for the finaliser to be dropped (now, if Pyomo is already imported)."""
    if _TARGET in sys.modules:
        _drop_scipy_finaliser(sys.modules[_TARGET])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
