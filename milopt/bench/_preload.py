"""Imported once by the bench's fork server so that each run's child starts without import costs.

It also keeps a run's child (a process named ``milopt.bench.execute.RUN_PROCESS_NAME``) from
re-running the calling program's main module: multiprocessing's children import it as
``__mp_main__`` before they unpickle their target, which re-runs every statement of a script
that has no ``if __name__ == "__main__":`` guard -- a script calling ``run_bench`` would start
its bench again in each run.  A run needs nothing from it (its target is
``milopt.bench.worker.child_main``; plugins come from the configuration's ``imports``).
"""
import contextlib
from multiprocessing import process, spawn

from milopt.bench.execute import RUN_PROCESS_NAME


def _skip_main_for_runs(original):
    def fixup(*args, **kwargs):
        if process.current_process().name == RUN_PROCESS_NAME:
            return None
        return original(*args, **kwargs)

    return fixup


spawn._fixup_main_from_path = _skip_main_for_runs(spawn._fixup_main_from_path)
spawn._fixup_main_from_name = _skip_main_for_runs(spawn._fixup_main_from_name)

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
