"""Imported once by the bench's fork server so that each run's child starts without import costs."""
import contextlib

with contextlib.suppress(Exception):
    import numpy  # noqa: F401
    import scipy.sparse  # noqa: F401
    import pyomo.environ  # noqa: F401
    import milopt.runner  # noqa: F401
    import milopt.metrics  # noqa: F401
    import milopt.solvers.driver  # noqa: F401
    import milopt.solvers.extract  # noqa: F401
with contextlib.suppress(Exception):
    import milopt.models

    milopt.models.available()
with contextlib.suppress(Exception):
    from milopt.estimators.registry import methods

    methods()
with contextlib.suppress(Exception):
    import sklearn.svm  # noqa: F401
    import sklearn.model_selection  # noqa: F401
with contextlib.suppress(Exception):
    import highspy  # noqa: F401
with contextlib.suppress(Exception):
    import pyscipopt  # noqa: F401
with contextlib.suppress(Exception):
    import pyomo.contrib.solver.solvers.highs  # noqa: F401
with contextlib.suppress(Exception):
    import pyomo.contrib.solver.solvers.scip.scip_direct  # noqa: F401
