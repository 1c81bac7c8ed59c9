"""scikit-learn-style estimators."""
from milopt.estimators.base import MILClassifier, as_bags
from milopt.estimators.declaration import declaration
from milopt.estimators.registry import MethodSpec, get_method, methods, register_method

__all__ = ["MILClassifier", "as_bags", "methods", "get_method", "register_method", "MethodSpec", "declaration"]
