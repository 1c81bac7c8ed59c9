"""milopt: optimization models and algorithms for support-vector multiple-instance learning."""
__version__ = "0.1.0"

from milopt.data import Bags, load  # noqa: E402

__all__ = ["Bags", "load", "__version__"]
