"""milopt: optimization models and algorithms for support-vector multiple-instance learning."""
from milopt import _version

#: the version of this milopt
__version__ = _version.__version__

from milopt import _startup  # noqa: E402

_startup.install()
from milopt import processes as _processes  # noqa: E402

if _processes.is_command():  # the `milopt` command: a signal during its imports ends it quietly
    _processes.early()

from milopt.data import Bags, load  # noqa: E402


def estimator(name: str, **params):
    """The estimator of ``milopt fit NAME --set key=value`` (see :func:`milopt.estimators.api.estimator`)."""
    from milopt.estimators.api import estimator as _estimator

    return _estimator(name, **params)


__all__ = ["Bags", "load", "estimator", "__version__"]
