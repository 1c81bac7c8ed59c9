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
import signal
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
        return runner.run_solve(spec["formulation"], spec["data"], spec.get("backend", spec["solver"]), **kw)
    if spec["kind"] == "fit":
        return runner.run_fit(spec["method"], spec["data"], params=dict(spec.get("params") or {}),
                              cv=int(spec["folds"]), seed=int(spec.get("seed", 0)), fold=int(spec["fold"]))
    raise ValueError(f"unknown run kind {spec.get('kind')!r}")


def _die_with_parent(expected_ppid: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # pragma: no cover - non-Linux
        pass
    if os.getppid() != expected_ppid:  # the parent died before prctl took effect
        os._exit(70)


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
    with open(argv[0]) as fh:
        task = json.load(fh)
    run_task(task, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
