"""Data: the :class:`Bags` container, loading, generators."""
from milopt.data.bags import Bags, normalise_labels
from milopt.data.loading import check_both_classes, datasets, load, read_mil_csv
from milopt.data.registry import GeneratorSpec, generate, generators, register_generator

__all__ = ["Bags", "normalise_labels", "load", "read_mil_csv", "datasets", "generate", "generators",
           "register_generator", "check_both_classes", "GeneratorSpec"]
