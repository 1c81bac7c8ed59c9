"""Data: the :class:`Bags` container, loading, generators.

``milopt.data.generators`` is always the function :func:`~milopt.data.generators` (the names of
the registered generators), also after the module of the built-in generators has been imported
(``from milopt.data.generators import kent_yu`` imports from the module).
"""
import sys
import types

from milopt.data.bags import Bags, normalise_labels
from milopt.data.loading import check_both_classes, datasets, load, read_mil_csv
from milopt.data.registry import GeneratorSpec, generate, generators, register_generator

__all__ = ["Bags", "normalise_labels", "load", "read_mil_csv", "datasets", "generate", "generators",
           "register_generator", "check_both_classes", "GeneratorSpec"]


class _Package(types.ModuleType):
    """Importing a submodule binds it as an attribute of its package; the submodule
    ``generators`` has the name of a function of the package, and the package keeps the function."""

    def __setattr__(self, name, value):
        if name == "generators" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
