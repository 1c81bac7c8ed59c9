"""One estimator for every formulation: build on the training bags, start, solve, decode.

:class:`FormulationClassifier` fits any registered :class:`~milopt.models.Formulation` whose
solution is a classifier (a ``predict`` or a linear ``w``, ``b``).  :func:`classifier_class`
gives, for one formulation, a subclass whose constructor lists the formulation's parameters
(so that ``get_params``, ``clone`` and ``GridSearchCV`` see them) next to the solver settings::

    from milopt.estimators.formulation import classifier_class
    Est = classifier_class("misvm-bigm")
    Est(C=10, norm="l1", solver="highs").fit(bags)

``milopt fit FORMULATION --set key=value`` uses the same class.
"""
from __future__ import annotations

import inspect
import time

import numpy as np

from milopt.errors import NoSolutionError
from milopt.estimators.base import MILClassifier
from milopt.params import TIME_LIMIT, Bool, Float, Int, ParamSet, Str

__all__ = ["FormulationClassifier", "classifier_class", "SOLVER_PARAMS"]

#: solver settings of every formulation estimator
SOLVER_PARAMS = ParamSet(
    solver=Str("auto", "backend name (auto: the preferred installed backend for the problem class)"),
    time_limit=TIME_LIMIT.with_default(60.0),     # a fit through a solver ends: 60 s unless set
    mip_gap=Float(None, "relative gap at which branch and bound stops", ge=0, lt=1),
    threads=Int(None, "solver threads", ge=1),
    warm_start=Bool(True, "start from the formulation's cheap feasible point (when it has one)"),
)


class formulation_params:
    """Class attribute ``param_spec`` of an estimator over a formulation: the formulation's own
    declarations of ``keys`` (one declaration, read when first needed), the solver settings and
    ``extra``."""

    def __init__(self, keys, **extra):
        self.keys, self.extra = tuple(keys), extra
        self._cache = {}

    def __get__(self, obj, cls):
        if cls not in self._cache:
            import milopt.models as models

            form = models.formulation(cls._formulation)
            self._cache[cls] = ParamSet(SOLVER_PARAMS, {k: form.params[k] for k in self.keys}, self.extra)
        return self._cache[cls]


class FormulationClassifier(MILClassifier):
    """Fit formulation ``formulation`` with the solver driver.

    Parameters
    ----------
    formulation : str
        A name from ``milopt list`` (formulations).
    params : dict, optional
        The formulation's parameters (validated against its declaration).
    solver, time_limit, mip_gap, threads, warm_start
        As :func:`milopt.solvers.solve`; ``warm_start`` uses the formulation's ``default_start``.

    Attributes
    ----------
    solution_ : dict
        The decoded solution.
    result_ : SolveResult
    fit_info_ : dict
        objective, bound, gap, termination, solve_seconds.
    """

    _formulation: str | None = None
    #: ``threshold='auto'`` chooses on the training scores: a refit per inner fold would multiply
    #: the solver time (see :class:`~milopt.estimators.base.MILClassifier`)
    threshold_rule = "training"

    def __init__(self, formulation="misvm-bigm", params=None, solver="auto", time_limit=60.0, mip_gap=None,
                 threads=None, warm_start=True, threshold="auto"):
        self.formulation = formulation
        self.params = params
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.threads = threads
        self.warm_start = warm_start
        self.threshold = threshold

    # -- hooks for subclasses -------------------------------------------------
    def _get_formulation(self):
        import milopt.models as models

        return models.formulation(self._formulation or self.formulation)

    def _model_params(self) -> dict:
        if self._formulation is None:
            return dict(self.params or {})
        return {k: getattr(self, k) for k in self._get_formulation().params}

    def _start(self, bags, typed: dict):
        """(start point or None, extra build keywords).  The default start is set on the model."""
        return None, {}

    def _fallback(self, point):
        return None

    # -- fit --------------------------------------------------------------------
    def _fit(self, bags):
        from milopt.solvers.pipeline import build_and_solve

        form = self._get_formulation()
        SOLVER_PARAMS.validate({k: getattr(self, k) for k in SOLVER_PARAMS}, type(self).__name__)
        typed = form.validate(self._model_params())
        t_start = time.perf_counter()  # time_limit covers the start, the build and the solve
        point, extra = self._start(bags, typed) if self.warm_start else (None, {})
        run = build_and_solve(form, bags, typed, self.solver, time_limit=self.time_limit, t_start=t_start,
                              warm_start=bool(self.warm_start), point=point, build_kw=extra, mip_gap=self.mip_gap,
                              threads=self.threads, refuse_early=False)
        model, res = run.model, run.result
        if res.ok:
            self.solution_ = form.decode(model)
        else:
            self.solution_ = self._fallback(point)
            if self.solution_ is None:
                raise NoSolutionError(f"{res.solver} found no solution for {form.name} in {self.time_limit} s "
                                      f"({res.termination}); raise time_limit or enable warm_start")
        if "w" in self.solution_:
            self.coef_ = np.asarray(self.solution_["w"], dtype=float)
            self.intercept_ = float(self.solution_["b"]) if "b" in self.solution_ else \
                -float(self.solution_.get("gamma", 0.0))
        self.result_ = res
        self.fit_info_ = {"objective": res.objective if res.objective is not None else float("nan"),
                          "bound": res.bound if res.bound is not None else float("nan"),
                          "gap": res.gap, "termination": str(res.termination), "solve_seconds": res.wall_time}
        return self

    def predict_instances(self, bags) -> np.ndarray:
        bags = self._check_input(bags)
        return self._get_formulation().predict(self.solution_, bags)


_CLASSES: dict[str, type] = {}


def _class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.replace("_", "-").split("-") if p) + "Classifier"


def classifier_class(form) -> type:
    """The estimator class of one formulation (its parameters are constructor arguments)."""
    import milopt.models as models

    f = form if isinstance(form, models.Formulation) else models.formulation(form)
    cname = _class_name(f.name)
    if cname in _CLASSES and _CLASSES[cname]._formulation == f.name:
        return _CLASSES[cname]
    params = [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
              for k, p in f.params.items()]
    params += [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
               for k, p in SOLVER_PARAMS.items() if k not in f.params]
    if "threshold" not in f.params:     # the bag decision rule of every method (milopt.params.THRESHOLD)
        params.append(inspect.Parameter("threshold", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="auto"))
    sig = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + params)
    defaults = {p.name: p.default for p in params}

    def __init__(self, *args, **kw):
        bound = sig.bind(self, *args, **kw)
        for k, v in {**defaults, **{k: v for k, v in bound.arguments.items() if k != "self"}}.items():
            setattr(self, k, v)

    __init__.__signature__ = sig
    doc = (f"The formulation ``{f.name}`` ({f.doc}) fitted with the solver driver.\n\n"
           f"Parameters: the formulation's ({', '.join(f.params)}) and the solver settings "
           f"({', '.join(SOLVER_PARAMS)}); see :class:`FormulationClassifier`.")
    cls = type(cname, (FormulationClassifier,), {"__init__": __init__, "__doc__": doc, "_formulation": f.name,
                                                 "__module__": __name__,
                                                 "param_spec": ParamSet(f.params, SOLVER_PARAMS)})
    _CLASSES[cname] = cls
    return cls


def __getattr__(name):  # classes made on demand (so that pickled estimators load again)
    if name.endswith("Classifier"):
        import milopt.models as models

        for n in models.names():
            if _class_name(n) == name:
                return classifier_class(n)
    raise AttributeError(name)
