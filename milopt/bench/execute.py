"""Executing runs in isolated processes with a hard wall-clock limit, and their table rows.

:func:`run_isolated` starts one child process per run, waits at most ``kill_after`` seconds,
kills the child's whole process group when the limit passes (outcome ``killed``), and turns
the child's payload into one flat row (:data:`COLUMNS`).  It never raises for a failing run:
an exception inside the run is outcome ``error`` (or ``unsupported`` when the solver cannot
handle the problem class), a child that dies without a payload is ``error`` with its exit
code and the tail of its log.

Two ways to start the child:

* ``forkserver`` (default locally): children are forked from a multiprocessing fork server
  that has already imported Pyomo, scikit-learn and milopt (``milopt.bench._preload``), so a
  run starts in milliseconds instead of ~2-3 s of imports.  A run does not re-run the calling
  program's main module (multiprocessing would, as ``__mp_main__``: a script that calls
  :func:`~milopt.bench.run_bench` without an ``if __name__ == "__main__":`` guard would start
  its bench again in every run); like the ``milopt`` command, the runs see the plugins the
  configuration's ``imports`` names;
* ``subprocess``: ``python -m milopt.bench.worker``; used inside daemonic processes (Dask
  worker processes may not fork multiprocessing children) or when asked for.
"""
from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

from milopt.bench.config import instance_name, slug

#: columns of the results table, in order
COLUMNS = [
    "run_id", "kind", "problem", "instance", "contender", "data", "data_name", "bags", "positive_bags",
    "instances", "features", "formulation", "method", "params", "solver", "backend", "solver_options", "threads",
    "solver_version", "seed", "fold", "folds", "time_limit", "kill_after", "outcome", "status", "termination",
    "problem_class", "sense", "objective", "bound", "gap", "time", "wall_time", "build_seconds", "run_seconds",
    "iterations", "nodes", "variables", "binaries", "integers", "constraints", "nonzeros", "bag_accuracy",
    "bag_auc", "bag_f1", "bag_balanced_accuracy", "fit_seconds", "extra", "error", "host", "finished_at",
    "gap_limit", "verified", "max_violation", "objective_recomputed", "verify_note",
]

_FIT_STANDARD = {"bag_accuracy", "bag_auc", "bag_f1", "bag_balanced_accuracy", "fit_seconds", "objective",
                 "bound", "gap", "termination", "status", "iterations", "nodes", "fold", "train_bags",
                 "test_bags", "predict_seconds", "solver", "solver_version"}

#: name of a run's process (forked from the fork server): it tells the child not to re-run the
#: calling program's main module (``milopt.bench._preload``)
RUN_PROCESS_NAME = "milopt-bench-run"
_RUN_PROCESS = {"daemon": False, "name": RUN_PROCESS_NAME}

_CTX = None
_CTX_LOCK = threading.Lock()
#: process ids of the runs in flight (each leads its own process group)
_LIVE: set = set()
_LIVE_LOCK = threading.Lock()


#: set when the bench is stopping: no run starts any more, one that was starting is killed
_STOPPING = threading.Event()


def kill_running() -> int:
    """Kill the process group of every run in flight (an interrupted bench) and start no other;
    returns how many were killed."""
    with _LIVE_LOCK:
        _STOPPING.set()
        pids = list(_LIVE)
    for pid in pids:
        _kill_group(pid)
    return len(pids)


def _forkserver():
    global _CTX
    with _CTX_LOCK:
        if _CTX is None:
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["milopt.bench._preload"])
            _CTX = ctx
        return _CTX


def warm_up(requested: str = "auto") -> None:
    """Start the fork server (and its imports) in the background while the caller does other work."""
    if isolation_mode(requested) != "forkserver":
        return
    from multiprocessing import forkserver

    _forkserver()
    threading.Thread(target=forkserver.ensure_running, name="milopt-forkserver-warmup", daemon=True).start()


def isolation_mode(requested: str = "auto") -> str:
    """``forkserver`` or ``subprocess`` (``auto``: fork server unless this is a daemonic process)."""
    env = os.environ.get("MILOPT_BENCH_ISOLATION")
    mode = env or requested or "auto"
    if mode == "auto":
        daemon = mp.current_process().daemon
        mode = "subprocess" if daemon or sys.platform == "win32" else "forkserver"
    return mode


def _kill_group(pid: int) -> None:
    for sig in (signal.SIGKILL,):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError, OSError):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


#: folders of the runs in flight (removed by :func:`remove_run_folders` when the bench stops)
_FOLDERS: set = set()


def remove_run_folders(wait: float = 3.0) -> None:
    """After :func:`kill_running`: give the runs' threads ``wait`` seconds to clean up after
    their killed processes, then remove the folders still there (a stopping bench leaves no
    temporary file)."""
    t_end = time.monotonic() + wait
    while time.monotonic() < t_end:
        with _LIVE_LOCK:
            if not _LIVE:
                break
        time.sleep(0.05)
    with _LIVE_LOCK:
        folders = list(_FOLDERS)
    for d in folders:
        shutil.rmtree(d, ignore_errors=True)


def _register(pid: int) -> None:
    """A run's process is in flight (killed at once if the bench stopped while it started)."""
    with _LIVE_LOCK:
        _LIVE.add(pid)
        if _STOPPING.is_set():
            _kill_group(pid)


def _not_stopping() -> None:
    if _STOPPING.is_set():
        raise RuntimeError("the bench is stopping; run not started")


def _tail(path: str, n: int = 1500) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - n))
            return fh.read().decode(errors="replace").strip()
    except OSError:
        return ""


def run_isolated(task: dict) -> dict:
    """Execute one run (``Run.task()``) in its own process; returns its row (never raises)."""
    t0 = time.monotonic()
    try:
        return _run_isolated(task)
    except Exception as exc:  # could not start / wait for the process: still a row, the bench goes on
        return make_row(task, None, "error", f"harness: {type(exc).__name__}: {exc}", time.monotonic() - t0)


def _run_isolated(task: dict) -> dict:
    tmp = tempfile.mkdtemp(prefix=f"milopt-run-{task['run_id']}-")
    with _LIVE_LOCK:
        _FOLDERS.add(tmp)
    result_path = os.path.join(tmp, "result.json")
    log_path = os.path.join(tmp, "run.log")
    limit = float(task["kill_after"])
    mode = isolation_mode(task.get("isolation", "auto"))
    killed = False
    exitcode = None
    t0 = time.monotonic()
    try:
        if mode == "forkserver":
            from milopt.bench.worker import child_main

            p = _forkserver().Process(target=child_main, args=(task, result_path, log_path), **_RUN_PROCESS)
            _not_stopping()
            p.start()
            _register(p.pid)
            try:
                p.join(limit)
                if p.is_alive():
                    killed = True
                    _kill_group(p.pid)
                    p.join(10)
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(p.pid)
            exitcode = p.exitcode
            # no p.close(): multiprocessing's exit handler iterates over its children while this
            # thread runs; a Process closed under it raised "ValueError: process object is closed"
            # (an interrupted bench).  The finished child is reaped by multiprocessing itself.
        else:
            task_path = os.path.join(tmp, "task.json")
            with open(task_path, "w") as fh:
                json.dump(task, fh)
            env = dict(os.environ, MILOPT_BENCH_PARENT=str(os.getpid()))
            with open(log_path, "ab") as log:
                _not_stopping()
                proc = subprocess.Popen([sys.executable, "-m", "milopt.bench.worker", task_path, result_path],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True, env=env)
                _register(proc.pid)
                try:
                    proc.wait(limit)
                except subprocess.TimeoutExpired:
                    killed = True
                    _kill_group(proc.pid)
                    proc.wait()
                finally:
                    with _LIVE_LOCK:
                        _LIVE.discard(proc.pid)
            exitcode = proc.returncode
        run_seconds = time.monotonic() - t0
        payload = None
        if not killed and os.path.exists(result_path):
            with open(result_path) as fh:
                payload = json.load(fh)
        if killed:
            outcome, error = "killed", f"killed after the hard wall-clock limit of {limit:g} s"
        elif payload is None:
            tail = _tail(log_path).splitlines()
            outcome = "error"
            error = f"worker process exited with code {exitcode} without a result" + (
                f"; last output: {tail[-1][:300]}" if tail else "")
        elif payload["ok"]:
            outcome, error = "ok", ""
        else:
            et = payload.get("error_type", "Error")
            # a solver that cannot take the problem (its class, or past its licence's size limit)
            # was not an attempt: the report counts it apart and charges it nothing
            outcome = "unsupported" if et in ("UnsupportedProblemError", "LicenceLimitError") else "error"
            error = f"{et}: {payload.get('error', '')}"
        return make_row(task, payload.get("result") if payload and payload.get("ok") else None, outcome, error,
                        run_seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with _LIVE_LOCK:
            _FOLDERS.discard(tmp)


def _num(v):
    if v is None or isinstance(v, bool):
        return None if v is None else int(v)
    if isinstance(v, (int, float)):
        return None if isinstance(v, float) and not math.isfinite(v) else v
    try:
        f = float(v)
        return f if math.isfinite(f) else None
    except (TypeError, ValueError):
        return None


def make_row(task: dict, result: dict | None, outcome: str, error: str, run_seconds: float) -> dict:
    """Flatten a run's specification and result into one row of :data:`COLUMNS`."""
    spec = task["spec"]
    kind = spec["kind"]
    params = dict(spec.get("params") or {})
    row = dict.fromkeys(COLUMNS)
    row.update(run_id=task["run_id"], kind=kind, contender=task.get("label", ""), data=spec["data"],
               params=json.dumps(params, sort_keys=True), seed=spec.get("seed", 0),
               time_limit=spec.get("time_limit"), kill_after=task.get("kill_after"), outcome=outcome,
               error=error or "", run_seconds=round(run_seconds, 4), host=socket.gethostname(),
               finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    extra = {}
    if kind == "solve":
        inst = spec.get("instance") or instance_name(spec["formulation"], spec["data"], params)
        row.update(gap_limit=spec.get("gap"))
        row.update(formulation=spec["formulation"], solver=spec["solver"], backend=spec.get("backend"),
                   solver_options=json.dumps(spec.get("options") or {}, sort_keys=True),
                   threads=spec.get("threads"), instance=inst, problem=f"{inst}#s{spec.get('seed', 0)}")
        if result:
            d = result.get("data") or {}
            size = result.get("model_size") or {}
            row.update(data_name=d.get("name"), bags=d.get("bags"), positive_bags=d.get("positive_bags"),
                       instances=d.get("instances"), features=d.get("features"),
                       solver_version=result.get("solver_version"), status=result.get("status"),
                       termination=result.get("termination"), problem_class=result.get("problem_class"),
                       sense=result.get("sense") or "",
                       objective=_num(result.get("objective")), bound=_num(result.get("bound")),
                       gap=_num(result.get("gap")), wall_time=_num(result.get("wall_time")),
                       build_seconds=_num(result.get("build_seconds")), iterations=_num(result.get("iterations")),
                       nodes=_num(result.get("nodes")),
                       **{k: _num(size.get(k)) for k in ("variables", "binaries", "integers", "constraints",
                                                         "nonzeros")})
            row["time"] = row["wall_time"]
            ex = result.get("extra") or {}
            if isinstance(ex, dict) and ex.get("error"):
                extra["solver_error"] = str(ex["error"])[:300]
            ver = result.get("verification")
            if isinstance(ver, dict):
                row.update(verified="yes" if ver.get("verified") else "no",
                           max_violation=_num(ver.get("max_violation")),
                           objective_recomputed=_num(ver.get("objective_recomputed")),
                           verify_note=str(ver.get("reason") or "")[:300])
            if result.get("run_time") is not None:
                extra["run_time"] = _num(result.get("run_time"))
            if result.get("trajectory"):
                extra["trajectory"] = result["trajectory"]
    else:
        ds = slug(spec["data"])
        row.update(method=spec["method"], folds=spec.get("folds"), fold=spec.get("fold"),
                   instance=f"{spec['method']}.{ds}", problem=f"{ds}#f{spec.get('fold')}#s{spec.get('seed', 0)}")
        if result:
            d = result.get("data") or {}
            fr = (result.get("folds") or [result.get("train") or {}])[0]
            row.update(data_name=d.get("name"), bags=d.get("bags"), positive_bags=d.get("positive_bags"),
                       instances=d.get("instances"), features=d.get("features"),
                       termination=fr.get("termination"), status=fr.get("status"),
                       objective=_num(fr.get("objective")), bound=_num(fr.get("bound")), gap=_num(fr.get("gap")),
                       iterations=_num(fr.get("iterations")), nodes=_num(fr.get("nodes")),
                       solver=fr.get("solver"), solver_version=fr.get("solver_version"),
                       **{k: _num(fr.get(k)) for k in ("bag_accuracy", "bag_auc", "bag_f1", "bag_balanced_accuracy",
                                                       "fit_seconds")})
            row["time"] = row["fit_seconds"]
            extra.update({k: v for k, v in fr.items() if k not in _FIT_STANDARD
                          and isinstance(v, (str, int, float, bool)) and v is not None})
    if result is None:
        row["time"] = round(run_seconds, 4)
    row["extra"] = json.dumps(extra, sort_keys=True, default=str) if extra else ""
    return row


# ------------------------------------------------------------------ executors
def iter_local(tasks: list[dict], jobs: int = 1):
    """Yield rows as runs finish, ``jobs`` at a time (joblib threads; each waits on its process)."""
    if not tasks:
        return
    _STOPPING.clear()
    if jobs == 1 or len(tasks) == 1:
        for t in tasks:
            yield run_isolated(t)
        return
    from joblib import Parallel, delayed

    n = jobs if jobs > 0 else (os.cpu_count() or 1)
    yield from Parallel(n_jobs=min(n, len(tasks)), backend="threading", return_as="generator_unordered")(
        delayed(run_isolated)(t) for t in tasks)


def iter_dask(tasks: list[dict], scheduler):
    """Yield rows as runs finish on a Dask cluster (``scheduler``: address or ``Client``)."""
    try:
        from dask.distributed import Client, as_completed
    except ImportError:  # pragma: no cover
        from milopt.errors import SolverUnavailableError

        raise SolverUnavailableError("--scheduler needs dask.distributed: pip install 'milopt[dask]'") from None
    _STOPPING.clear()
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futs = client.map(run_isolated, tasks, pure=False)
        task_of = {f.key: t for f, t in zip(futs, tasks)}
        for fut in as_completed(futs):
            try:
                row = fut.result()
            except Exception as exc:  # e.g. the Dask worker died (KilledWorker): record, go on
                row = make_row(task_of[fut.key], None, "error", f"dask: {type(exc).__name__}: {exc}", 0.0)
            yield row
    finally:
        if own:
            client.close()
