"""Running a backend's solve where milopt can stop it: a child process with a hard deadline.

A native solver can hang or abort the process it runs in (docs/solvers.md, "Hazards": SCIP 10
dead-locking in ``free()`` inside its sub-NLP heuristic, or aborting with ``munmap_chunk():
invalid pointer``).  Code in C that never returns cannot be stopped from the same process, so
an *isolated* backend's ``solve_matrix`` runs in a forked child:

* the child receives the matrix form by fork (no copy, no pickling), sends every improving
  solution (seconds, objective, x) to the parent as it is found, then the final
  :class:`~milopt.solvers.backend.RawResult`;
* the parent waits until the deadline (the time limit of the whole call plus a grace period for
  the solver to stop on its own); past it the child is killed and the result is
  ``time_limit`` with the last incumbent received (status feasible) or none;
* a child that dies (a signal, an abort) gives ``error`` with the signal and the last lines the
  solver wrote;
* a signal that ends the parent (Ctrl-C, SIGTERM, SIGHUP: a :class:`KeyboardInterrupt`, see
  :mod:`milopt.processes`) is passed on to the child as SIGINT, on which the solver stops by
  itself (SCIP catches it); the parent waits at most :data:`STOP_SECONDS` for the child's result
  (termination ``interrupted`` with the solver's best solution and bound), else takes the last
  incumbent received; the child is killed either way, and without any solution the interrupt
  is re-raised;
* the child dies with the parent (:func:`milopt.processes.child_init`): a parent killed even by
  SIGKILL leaves no solver running.

The solver's own output (stdout and stderr of the child) goes to a temporary file unless
``verbose``; its tail is kept in the result's log when the child fails.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import re
import shutil
import signal
import tempfile
import time

from milopt.solvers.backend import RawResult, SolveOptions, quiet_stdout
from milopt.solvers.result import Termination

#: what glibc prints when it finds the heap corrupted (the process then aborts or dead-locks)
_HEAP_FAULT = re.compile(r"(munmap_chunk\(\)|free\(\)|malloc\(\)|double free|corrupted size)[^\n]*")

#: seconds the child has, after the parent is interrupted, to stop and send its result
STOP_SECONDS = 3.0
#: seconds granted past the time limit for a solver to stop by itself before it is killed
GRACE_SECONDS = 2.0
#: and as a fraction of the time limit (whichever is larger)
GRACE_FRACTION = 0.05


def grace(time_limit: float | None) -> float:
    return GRACE_SECONDS if time_limit is None else max(GRACE_SECONDS, GRACE_FRACTION * float(time_limit))


def run_backend(backend, mf, opts: SolveOptions, *, isolate: bool) -> RawResult:
    """``backend.solve_matrix(mf, opts)``, isolated in a child process when ``isolate``.

    The deadline is the one of the command's :class:`~milopt.solvers.budget.TimeBudget`
    (``opts.budget``).  A solver failure is a status (``error``); bad input -- a native option
    the solver refuses (:class:`~milopt.errors.InvalidParameterError`) -- and a licence limit
    are raised, so the command reports them as such (exit status 2 for bad input)."""
    if not isolate or not _fork_available():
        with quiet_stdout():
            try:
                return backend.solve_matrix(mf, opts)
            except Exception as exc:
                if _is_raised(exc):
                    raise
                return RawResult(termination=Termination.ERROR, log=f"{type(exc).__name__}: {exc}",
                                 extra={"error": f"{type(exc).__name__}: {exc}"})
    return _run_child(backend, mf, opts, None if opts.budget is None else opts.budget.deadline)


def _is_raised(exc) -> bool:
    """Errors that are not the solver's failure: a licence limit, a refused parameter."""
    from milopt.errors import InvalidParameterError, LicenceLimitError

    return isinstance(exc, (LicenceLimitError, InvalidParameterError))


def _fork_available() -> bool:
    return "fork" in mp.get_all_start_methods()


def _child(backend, mf, opts, conn, logpath, verbose, parent):
    from milopt.processes import child_init

    child_init(parent)  # dies with the parent
    # own output: to the log file unless verbose (then to the parent's stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides about Ctrl-C (the solver may catch it)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    import faulthandler

    faulthandler.disable()  # a crash in native code is reported by the parent, from the exit signal
    # the solver's own temporary files go to the folder the parent removes (also after a kill)
    os.environ["TMPDIR"] = tempfile.tempdir = os.path.dirname(logpath)
    fd = os.open(logpath, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd if not verbose else 2, 1)
    if not verbose:
        os.dup2(fd, 2)
    os.close(fd)

    def on_incumbent(t, obj, x):
        try:
            conn.send(("incumbent", float(t), float(obj), x))
        except Exception:
            pass

    o = SolveOptions(**{**opts.__dict__, "on_incumbent": on_incumbent})
    try:
        raw = backend.solve_matrix(mf, o)
        conn.send(("result", raw))
    except BaseException as exc:  # everything goes back as a status
        conn.send(("exception", exc if _is_raised(exc) else None, f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()
        os._exit(0)


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 8192))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _run_child(backend, mf, opts: SolveOptions, deadline: float | None) -> RawResult:
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    folder = tempfile.mkdtemp(prefix="milopt-solver-")   # the child's log and temporary files
    logpath = os.path.join(folder, "solver.log")
    os.close(os.open(logpath, os.O_WRONLY | os.O_CREAT, 0o600))
    hard = None if deadline is None else deadline + grace(opts.time_limit)
    last = None  # (t, obj, x) of the last incumbent received
    trajectory = []
    proc = ctx.Process(target=_child, args=(backend, mf.without_variables(), opts, send, logpath, bool(opts.verbose),
                                            os.getpid()), daemon=True)
    interrupt = None
    try:
        proc.start()
        send.close()
        outcome = None
        while outcome is None:
            wait = 0.5 if hard is None else max(0.0, min(0.5, hard - time.perf_counter()))
            if recv.poll(wait):
                try:
                    msg = recv.recv()
                except (EOFError, OSError):
                    msg = None
                if msg is None:  # the child closed the pipe: it died or exited
                    proc.join(2.0)
                    outcome = ("died",)
                elif msg[0] == "incumbent":
                    last = msg[1:]
                    trajectory.append((msg[1], msg[2]))
                else:
                    outcome = msg
            elif not proc.is_alive() and not recv.poll(0):
                outcome = ("died",)
            elif hard is not None and time.perf_counter() >= hard:
                outcome = ("killed",)
    except KeyboardInterrupt as exc:
        interrupt = exc
        outcome, last = _stop_child(proc, recv, last, trajectory)
    finally:
        if proc.is_alive():
            _kill(proc)
        recv.close()
    try:
        if interrupt is not None:
            return _interrupted(outcome, last, trajectory, interrupt, backend.name)
        if outcome[0] == "result":
            raw = outcome[1]
            if not raw.trajectory:
                raw.trajectory = trajectory
            return raw
        if outcome[0] == "exception":
            if outcome[1] is not None:
                raise outcome[1]
            return RawResult(termination=Termination.ERROR, log=outcome[2], extra={"error": outcome[2]})
        tail = _tail(logpath)
        if outcome[0] == "killed" and _HEAP_FAULT.search(tail):
            msg = (f"{backend.name} hung after a memory fault in native code ({_HEAP_FAULT.search(tail).group(0)}); "
                   f"milopt stopped it {grace(opts.time_limit):.1f} s past the time limit")
            term = Termination.ERROR
        elif outcome[0] == "killed":
            msg = (f"{backend.name} did not stop at its time limit; milopt stopped it "
                   f"{grace(opts.time_limit):.1f} s past the limit")
            term = Termination.TIME_LIMIT
        else:
            code = proc.exitcode
            what = f"signal {-code} ({signal.Signals(-code).name})" if code is not None and code < 0 else f"exit code {code}"
            msg = f"{backend.name} ended the solver process abnormally ({what})"
            term = Termination.ERROR
        extra = {"error" if term == Termination.ERROR else "message": msg, "solver_output_tail": tail}
        if last is None:
            return RawResult(termination=term, log=tail, trajectory=trajectory, extra=extra)
        return RawResult(termination=term if term == Termination.TIME_LIMIT else Termination.ERROR, x=last[2],
                         objective=last[1], log=tail, trajectory=trajectory, extra=extra)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stop_child(proc, recv, last, trajectory):
    """After an interrupt of the parent: SIGINT to the child (the solver stops itself), then at
    most :data:`STOP_SECONDS` for its result; the incumbents that arrive meanwhile are kept.
    Returns (outcome or None, last incumbent).  A second interrupt stops the wait."""
    try:
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGINT)
        t_end = time.perf_counter() + STOP_SECONDS
        while time.perf_counter() < t_end:
            if not recv.poll(max(0.0, min(0.2, t_end - time.perf_counter()))):
                if not proc.is_alive() and not recv.poll(0):
                    break
                continue
            try:
                msg = recv.recv()
            except (EOFError, OSError):
                break
            if msg[0] == "incumbent":
                last = msg[1:]
                trajectory.append((msg[1], msg[2]))
            else:
                return msg, last
    except (KeyboardInterrupt, OSError):
        pass
    return None, last


def _interrupted(outcome, last, trajectory, exc, name) -> RawResult:
    """The result of an interrupted isolated solve: the solver's own (it stopped on SIGINT),
    else the last incumbent received; no solution at all re-raises the interrupt."""
    if outcome is not None and outcome[0] == "result" and outcome[1].x is not None:
        raw = outcome[1]
        raw.termination = Termination.INTERRUPTED
        if not raw.trajectory:
            raw.trajectory = trajectory
        return raw
    if last is None:
        raise exc
    msg = f"{name} was interrupted; the solution is the last incumbent it reported"
    return RawResult(termination=Termination.INTERRUPTED, x=last[2], objective=last[1], trajectory=trajectory,
                     extra={"message": msg})


def _kill(proc) -> None:
    try:
        proc.kill()
    except Exception:
        pass
    proc.join(2.0)
