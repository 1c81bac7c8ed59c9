"""``bnb``: the driver backend of milopt's exact MI-SVM branch and bound (a thin adapter).

The algorithm lives in :mod:`milopt.algorithms.bnb` (search, bounds, heuristics, parallel
node evaluation; proofs and figures in docs/exact_misvm.md).  This module only takes a
``misvm-bigm`` model (norm l2) or a ``misvm-kernel-bigm`` model from the driver, reads its data,
costs and (kernel model) Gram matrix, hands the declared options
(:data:`milopt.algorithms.bnb.PARAMS`, reachable as ``--set key=value``) to
:func:`milopt.algorithms.bnb.solve_bags` (``kernel=K`` for the kernel model), writes the solution
(w, b, ξ, ζ; or β, b, ξ, ζ) back into the model and returns the driver's
:class:`~milopt.solvers.result.SolveResult`.

Ctrl-C during the search returns termination ``interrupted`` with the incumbent loaded into
the model and the proven bound (``extra["interrupted_with_solution"]`` is true).

Inside :func:`c_path`, successive solves of ``misvm-bigm`` models on the same bags form a path
of C (:func:`milopt.algorithms.bnb.solve_c_path`): each starts from the previous solve's point
with the short start schedule :data:`milopt.algorithms.bnb.PATH_STEP`.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import sys
import time
from dataclasses import replace

import numpy as np

from milopt.algorithms.bnb import PARAMS, PATH_STEP, solve_bags
from milopt.errors import UnsupportedProblemError
from milopt.solvers.backend import About, Backend, Capabilities

_PATH = contextvars.ContextVar("milopt_bnb_c_path", default=None)


@contextlib.contextmanager
def c_path():
    """Solve the ``misvm-bigm`` models of the block (norm l2) as one path of C.

    The first bnb solve runs as usual; every later one on the same bags (the same instances,
    bags and labels: the grid of C on one training set, as ``milopt fit --tune C=...`` solves it
    inside each fold) gets the previous solve's (w, b) as a start (its Φ at the new costs is a
    valid incumbent) and the short start schedule :data:`milopt.algorithms.bnb.PATH_STEP` over
    the options not given explicitly.  The certified optimum does not depend on the starts;
    the path costs less.  Solves on other bags start a new path.  Yields a dict counting the
    ``solves`` and the ``warm`` (warm-started) ones.
    """
    box = {"key": None, "start": None, "solves": 0, "warm": 0}
    token = _PATH.set(box)
    try:
        yield box
    finally:
        _PATH.reset(token)


def _bags_key(bags) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in (bags.X, bags.bag_ptr, bags.y):
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _version():
    from milopt._version import __version__

    return f"milopt {__version__}"


def _refuse(msg):
    raise UnsupportedProblemError(msg)


def _run(model, opts):
    """Driver backend: solve a ``misvm-bigm`` model (norm=l2) or a ``misvm-kernel-bigm`` model by
    branch and bound."""
    from milopt.models import misvm_bigm as mod
    from milopt.models.info import info

    mi = info(model)
    meta, bags = mi.meta, mi.bags
    name = getattr(model, "name", "")
    if name not in ("misvm_bigm", "misvm_kernel_bigm") or not meta or bags is None:
        _refuse(f"bnb solves MI-SVM only (formulations misvm-bigm and misvm-kernel-bigm); model {model.name!r} is "
                "not one: use --solver scip")
    if name == "misvm_kernel_bigm":
        from milopt.models import misvm_kernel_bigm as kmod

        return _finish(model, opts, kmod, meta, bags, kernel=meta["K"])
    if meta.get("norm", "l2") != "l2":
        _refuse("bnb solves misvm-bigm with norm=l2 only (its node QPs are SVM duals); use --solver highs or scip "
                "for norm=l1")
    return _finish(model, opts, mod, meta, bags)


def _finish(model, opts, mod, meta, bags, kernel=None):
    """Run :func:`solve_bags` on the model's data and load its solution (``kernel``: the Gram
    matrix of a ``misvm-kernel-bigm`` model; the solution is then β = coef)."""
    import pyomo.environ as pe

    from milopt.solvers.driver import finish
    from milopt.solvers.result import Termination

    t_start = time.perf_counter()
    o = PARAMS.resolve(opts.options or {}, "bnb options")
    starts = []
    if opts.warm_start and kernel is None:
        d = meta["n_features"]
        wv = [pe.value(model.w[k], exception=False) for k in range(d)]
        if all(v is not None for v in wv):
            starts.append((np.array(wv, dtype=float), float(pe.value(model.b, exception=False) or 0.0)))
    gap = opts.mip_gap
    gap = 1e-4 if gap is None else float(gap)
    path, key = _PATH.get(), None
    if path is not None and kernel is None:
        key = _bags_key(bags)
        if path["key"] == key and path["start"] is not None:    # the next C of a path: its previous point
            starts.append(path["start"])
            o = {**o, **{k: v for k, v in PATH_STEP.items() if k not in (opts.options or {})}}
            path["warm"] += 1
    log = _Tee(sys.stderr) if opts.verbose else None   # the progress lines: on stderr and in result.log
    out = solve_bags(bags, C=meta["C"], class_weight=meta["class_weight"], costs=np.asarray(meta["costs"]),
                     time_limit=opts.seconds_left(), mip_gap=gap, starts=starts, kernel=kernel,
                     verbose=bool(opts.verbose), log=log, **o)
    if key is not None:
        path["solves"] += 1
        path["key"] = key
        path["start"] = None if out["w"] is None else (np.asarray(out["w"], dtype=float), float(out["b"]))
    if kernel is None:
        mod.warm_start(model, out["w"], out["b"])        # load w, b, ξ, ζ (witness = best instance)
        obj_model = float(pe.value(model.obj))
    else:
        mod.warm_start_point(model, out["coef"], out["b"])   # load β, b, ξ, ζ
        obj_model = mod.model_objective(model)     # numpy: the n^2-term Pyomo expression is never built
    term = {"optimal": Termination.OPTIMAL, "time_limit": Termination.TIME_LIMIT,
            "iteration_limit": Termination.ITERATION_LIMIT,
            "interrupted": Termination.INTERRUPTED}[out["termination"]]
    extra = {"root_bound": out["root_bound"], "open_nodes": out["open_nodes"], "closed_nodes": out["closed_nodes"],
             "active_set_solves": out["active_set_solves"], "active_set_fallbacks": out["active_set_fallbacks"],
             "heuristic_seconds": out["heuristic_seconds"], "mi_objective": out["objective"],
             "incumbent_source": out["incumbent_source"], "incumbent_time": out["incumbent_time"],
             "heuristic_search_seconds": out["heuristic_search_seconds"], "mip_gap": gap,
             "options": {k: v for k, v in o.items()},
             # every improving incumbent (seconds from the call's start, MI-SVM objective), as found
             "trajectory": [(float(t), float(v)) for t, v in out.get("trajectory", ())],
             # the same on the process's CPU clock (seconds of CPU since the call began)
             "trajectory_cpu": [(float(t), float(v)) for t, v in out.get("trajectory_cpu", ())]}
    if out["termination"] == "interrupted":
        extra["interrupted_with_solution"] = True
    if abs(obj_model - out["objective"]) > 1e-6 * max(1.0, abs(obj_model)):
        extra["note"] = ("the model's objective at the loaded point differs from the MI-SVM objective "
                         "(a big-M smaller than valid restricts the model)")
    res = finish("bnb", _version(), opts.problem_class or "MIQP", term, True, obj_model, out["bound"],
                 time.perf_counter() - t_start, iterations=out["iterations"], nodes=out["nodes"], extra=extra,
                 log=log.getvalue() if log is not None else "")
    return replace(res, history=tuple(out["history"]))


class _Tee(io.StringIO):
    """A text stream that keeps what is written and passes it on to ``stream`` (stderr)."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    def write(self, text):
        try:
            self._stream.write(text)
        except (OSError, ValueError):  # stderr closed (a pipe gone): the log is still kept
            pass
        return super().write(text)

    def flush(self):
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass


class BnbBackend(Backend):
    """The driver backend of milopt's branch and bound (takes the model: it needs its data)."""

    name = "bnb"
    module = "numpy"
    takes_model = True
    caps = Capabilities(classes=frozenset({"MIQP", "QP"}), generic=False,
                        formulations=("misvm-bigm", "misvm-kernel-bigm"))
    about = About(description="milopt's branch and bound over witness selections for MI-SVM (misvm-bigm with l2; "
                              "misvm-kernel-bigm with any kernel)")
    params = PARAMS     # declared native options: `--set key=value` reaches them (milopt.runner)

    def version(self):
        return _version()

    def solve_model(self, model, opts):
        return _run(model, opts)


BACKEND = BnbBackend()
