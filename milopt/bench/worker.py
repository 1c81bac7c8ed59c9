"""The process side of one benchmark run.

A run executes in a child process (forked from a pre-loaded fork server, or started as
``python -m milopt.bench.worker TASK.json RESULT.json``).  The child

* becomes the leader of its own process group (the parent kills the whole group on timeout),
* asks the kernel to kill it when its parent dies (``PR_SET_PDEATHSIG``; Linux), so that an
  interrupted bench leaves no solver running,
* sends its stdout/stderr (solver logs) to a file, never to a pipe (a full pipe blocks SCIP),
* imports the configuration's plugin modules, runs :func:`execute` -- which calls
  :func:`milopt.runner.run_solve` or :func:`milopt.runner.run_fit` -- and writes a JSON
  payload ``{"ok": true, "result": ...}`` or ``{"ok": false, "error_type", "error", "traceback"}``.
"""
from __future__ import annotations

import json
import os
import sys
import traceback


def execute(spec: dict) -> dict:
    """Run one run's specification in this process; returns the runner's dictionary."""
    from milopt import runner

    if spec["kind"] == "solve":
        kw = dict(time_limit=spec.get("time_limit"), gap=spec.get("gap"), params=dict(spec.get("params") or {}),
                  seed=spec.get("seed", 0))
        if spec.get("threads") is not None:
            kw["threads"] = int(spec["threads"])
        if spec.get("options"):
            kw["options"] = dict(spec["options"])
        return solve_verified(spec, **kw)
    if spec["kind"] == "fit":
        return runner.run_fit(spec["method"], spec["data"], params=dict(spec.get("params") or {}),
                              cv=int(spec["folds"]), seed=int(spec.get("seed", 0)), fold=int(spec["fold"]))
    raise ValueError(f"unknown run kind {spec.get('kind')!r}")


def scip_trajectory(log: str, limit: int = 400) -> list:
    """``[[seconds, dual bound, primal bound], ...]`` from the display lines of a SCIP log
    (primal None before the first incumbent); at most ``limit`` points (evenly thinned, the
    last kept)."""
    import re

    cols, out = None, []
    for line in (log or "").splitlines():
        if "|" not in line:
            continue
        raw = line.split("|")
        parts = [p.strip() for p in raw]
        if parts[0].endswith("time") and "dualbound" in parts:
            cols = {name: k for k, name in enumerate(parts)}
            continue
        if cols is None or len(parts) != len(cols):
            continue
        # the time column is right-aligned in a field of 5+ characters, optionally after the
        # heuristic's letter ("t 0.1s", "  12.3s"); a line broken where the captured log was
        # cut into chunks ("0s|...") is skipped, and so is any point that goes back in time
        m = re.match(r"^[A-Za-z*]?\s*(\d+(?:\.\d+)?)s$", raw[0])
        if not m or len(raw[0]) < 5 or (out and float(m.group(1)) < out[-1][0]):
            continue

        def num(txt):
            try:
                return float(txt)
            except ValueError:
                return None

        out.append([float(m.group(1)), num(parts[cols["dualbound"]]), num(parts[cols["primalbound"]])])
    if len(out) > limit:
        keep = sorted(set(int(round(k)) for k in [i * (len(out) - 1) / (limit - 1) for i in range(limit)]))
        out = [out[k] for k in keep]
    return out


def solve_verified(spec: dict, *, time_limit=None, gap=None, params=None, seed=0, threads=None, options=None) -> dict:
    """Build the run's model, solve it within the run's time limit, verify the answer.

    The time limit bounds build and solve together: the solver receives what is left of it
    after the build.  The returned dict is :func:`milopt.runner.run_solve`'s (``SolveResult``
    fields, model size, data, build seconds, sense) plus ``verification``
    (:func:`milopt.bench.verify.verify_model`), ``run_time`` (build + solve seconds) and,
    ``trajectory`` (``[[seconds, dual bound or None, incumbent], ...]`` in the order found): the
    incumbents a backend recorded itself (``extra["trajectory"]``), else for SCIP on integer
    problems its display lines (the log is written with ``display/freq = 50``).
    """
    import time

    from milopt.bench.verify import verify_model
    from milopt.runner import _prepare, data_info, objective_sense
    from milopt.solvers.pipeline import build_and_solve

    t0 = time.perf_counter()
    backend = spec.get("backend", spec["solver"])
    form, typed, loader = _prepare(spec["formulation"], spec["data"], params, None)
    trace = False

    def scip_display(model, cls):  # SCIP on integer problems: its display lines give the trajectory
        nonlocal trace
        trace = backend == "scip" and cls.startswith("MI")
        opts = dict(options or {})
        if trace:
            opts.setdefault("display/freq", 50)
        return {"verbose": trace, "options": opts}

    # a formulation that computed a start while building (misvm-bigm warm_start) hands it on
    run = build_and_solve(form, loader, typed, backend, time_limit=None if time_limit is None else float(time_limit),
                          t_start=t0, warm_start=None, mip_gap=gap, threads=threads, before_solve=scip_display)
    res, model = run.result, run.model
    out = res.to_dict(log=False)
    size = out["extra"].pop("model_size", None) or run.model_size()  # the driver's extraction, else measured
    out.update({"formulation": spec["formulation"], "params": typed, "model_size": size, "data": data_info(run.bags),
                "build_seconds": run.build_seconds, "sense": objective_sense(model),
                "run_time": time.perf_counter() - t0, "solver_time_limit": run.solver_time_limit,
                "warm_start": run.warm_start})
    # the incumbents the backend recorded as it found them (seconds on the solver's clock,
    # objective), else those read from SCIP's display lines; [t, dual bound or None, incumbent]
    found = (res.extra or {}).get("trajectory")
    if found:
        out["trajectory"] = [[float(t), None, float(v)] for t, v in found]
    elif trace:
        out["trajectory"] = scip_trajectory(res.log)
    if res.ok:
        try:
            out["verification"] = verify_model(model, res.objective)
        except Exception as exc:  # noqa: BLE001 - the run still has its result; the report says why
            out["verification"] = {"verified": False, "reason": f"verification failed: {type(exc).__name__}: {exc}"}
    return out


def _die_with_parent(expected_ppid: int) -> None:
    from milopt.processes import child_init

    child_init(expected_ppid)


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _write(path: str, payload: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(payload, fh, default=_default, allow_nan=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _default(o):
    try:
        import numpy as np

        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def run_task(task: dict, result_path: str) -> None:
    """Import plugins, execute, write the payload (never raises)."""
    try:
        from milopt.bench.config import import_plugins

        import_plugins(task.get("imports", ()))
        res = execute(task["spec"])
        res.pop("history", None)
        payload = {"ok": True, "result": res}
    except BaseException as exc:  # noqa: BLE001 - everything is recorded
        payload = {"ok": False, "error_type": type(exc).__name__, "error": str(exc).strip().splitlines()[0]
                   if str(exc).strip() else type(exc).__name__,
                   "traceback": traceback.format_exc()[-4000:]}
    try:
        _write(result_path, payload)
    except Exception:  # pragma: no cover
        traceback.print_exc()


def _release_forkserver_alive_fd() -> None:
    """Close this child's copy of the fork server's "alive" pipe.

    multiprocessing hands every fork-server child the write end of the pipe whose EOF tells
    the fork server that the bench process is gone.  While a child holds it, the fork server
    outlives a killed bench, and so would the child (its parent is the fork server).  Closed,
    the bench's death ends the fork server, whose death ends this child (``PR_SET_PDEATHSIG``).
    """
    try:
        from multiprocessing import forkserver

        fs = forkserver._forkserver
        fd = getattr(fs, "_forkserver_alive_fd", None)
        if fd is not None:
            os.close(fd)
            fs._forkserver_alive_fd = None
    except Exception:  # pragma: no cover - private API changed: the hard limit still applies
        pass


def _private_tmpdir(folder: str) -> None:
    """Temporary files of the run (solver logs, option files) go to the run's folder, which
    the bench removes when the run ends, also when it had to kill the run."""
    import tempfile

    os.environ["TMPDIR"] = tempfile.tempdir = folder


def child_main(task: dict, result_path: str, log_path: str) -> None:
    """Entry point of a fork-server child (see module docstring)."""
    _release_forkserver_alive_fd()
    ppid = os.getppid()
    try:
        os.setsid()
    except OSError:  # pragma: no cover
        pass
    if ppid == 1:
        os._exit(70)
    _die_with_parent(ppid)
    _private_tmpdir(os.path.dirname(result_path))
    _redirect_output(log_path)
    run_task(task, result_path)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip atexit handlers of libraries inherited from the fork server


def main(argv=None) -> int:
    """``python -m milopt.bench.worker TASK.json RESULT.json`` (stdout/stderr set by the parent)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m milopt.bench.worker TASK.json RESULT.json", file=sys.stderr)
        return 2
    ppid = int(os.environ.get("MILOPT_BENCH_PARENT", os.getppid()))
    _die_with_parent(ppid)
    _private_tmpdir(os.path.dirname(os.path.abspath(argv[1])))
    with open(argv[0]) as fh:
        task = json.load(fh)
    run_task(task, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
