"""One process tree per command: signals, the processes a command starts, and their end.

A ``milopt`` command may start processes: benchmark runs (forked from a fork server, or
``python -m milopt.bench.worker``), branch-and-bound workers (a fork pool or a dask
``LocalCluster``), the isolated child of a solver that can hang (SCIP).  Schedulers stop a job
by sending SIGTERM to it and expect its whole process tree to go (SLURM, systemd's
``KillMode=control-group``); a terminal sends SIGHUP when it closes and SIGINT on Ctrl-C.  This
module makes each of them end the command the same way:

* :func:`install` (called by the ``milopt`` command, in its main thread) turns SIGINT, SIGTERM
  and SIGHUP into :class:`Interrupted`, a :class:`KeyboardInterrupt`: every place that stops
  cleanly on Ctrl-C (a search that returns its incumbent as ``interrupted``, a bench that kills
  its runs in flight, a file writer that removes its temporary file) stops the same way on
  either signal.  The first signal is recorded (:func:`received`); the command prints whatever
  result it has and exits with status ``128 + n`` (:func:`exit_status`: 130 for SIGINT, 143 for
  SIGTERM, 129 for SIGHUP), as POSIX shells and coreutils report a signal.
* A watchdog thread is woken by every signal (``signal.set_wakeup_fd``: the interpreter writes
  the signal's number there even while the main thread is inside native code).  If the command
  has not ended :data:`STOP_SECONDS` after the first signal, or a second signal arrives, the
  watchdog kills every descendant process, removes the temporary files registered with
  :func:`temporary_file`, prints one line and ends the process with status ``128 + n``.
* Every process forked after :func:`install` starts with Ctrl-C ignored (the parent decides
  about it) and SIGTERM / SIGHUP at their defaults; :func:`child_init` (called first thing in a
  worker) asks Linux to kill the worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``), so
  that a worker whose parent is gone -- even by SIGKILL -- stops its solve.
* :func:`end_descendants` ends the processes still running under this one (the ``milopt``
  command calls it before exiting after a signal).
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

#: the signals that end a command (each exits with status 128 + its number)
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
#: seconds a command has to stop by itself after a signal before the watchdog ends it
STOP_SECONDS = 10.0

_state = {"received": None, "installed": False, "handled": False}
_IMPORTED = time.perf_counter()  # milopt imports this module first: the command's start, near enough
_temp_files: set = set()
_temp_lock = threading.Lock()


class Interrupted(KeyboardInterrupt):
    """A signal that ends the command (SIGINT, SIGTERM or SIGHUP): ``signum`` is its number.

    A :class:`KeyboardInterrupt`, so that code which stops cleanly on Ctrl-C stops the same way
    on SIGTERM and SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signal_name(signum))
        self.signum = int(signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def received() -> int | None:
    """The number of the first signal that interrupted this command (None: none did)."""
    return _state["received"]


def exit_status(signum: int | None = None) -> int:
    """``128 + n`` for signal ``n`` (default: the first one received, else SIGINT: 130)."""
    n = signum if signum is not None else received()
    return 128 + int(n if n is not None else signal.SIGINT)


def _quiet_logs() -> None:
    """After a signal the command is ending: libraries' log records about their own teardown
    (a dask cluster whose workers the signal ended, say) are not printed."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.disable(logging.ERROR)


def _handler(signum, frame):
    if _state["received"] is None:
        _state["received"] = signum
        _quiet_logs()
    if _state["handled"]:   # a second signal while stopping: the watchdog ends the process
        return
    _state["handled"] = True
    raise Interrupted(signum)


def ending() -> None:
    """The command is exiting: a signal from now on no longer raises (the watchdog still
    ends the process if the exit takes longer than :data:`STOP_SECONDS`)."""
    _state["handled"] = True


def install(stop_seconds: float | None = None) -> bool:
    """Handle SIGINT, SIGTERM and SIGHUP as :class:`Interrupted` and start the watchdog.

    Call once, from the main thread, at the start of a command; returns False (and does
    nothing) elsewhere.  ``stop_seconds`` overrides :data:`STOP_SECONDS`."""
    if _state["installed"] or threading.current_thread() is not threading.main_thread():
        return False
    import socket

    r, w = socket.socketpair()
    r.setblocking(True)
    w.setblocking(False)
    try:
        signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        r.close()
        w.close()
        return False
    for s in SIGNALS:
        # a signal ignored when the command started stays ignored (nohup's SIGHUP, SIGINT of a
        # background job of a non-interactive shell), as POSIX utilities do
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _handler)
    _state.update(installed=True, wakeup=(r, w))
    os.register_at_fork(after_in_child=_after_fork_child)
    limit = STOP_SECONDS if stop_seconds is None else float(stop_seconds)
    threading.Thread(target=_watchdog, args=(r, limit), name="milopt-signal-watchdog", daemon=True).start()
    return True


def _early_handler(signum, frame):
    os.write(2, f"milopt: interrupted by {signal_name(signum)}\n".encode())
    os._exit(exit_status(signum))


def is_command() -> bool:
    """This process is the ``milopt`` console script (not a program importing milopt, nor a
    process that multiprocessing's spawn starts from it: a dask worker re-imports the script)."""
    if os.path.basename(sys.argv[0] if sys.argv else "") not in ("milopt", "milopt.exe"):
        return False
    mp_process = sys.modules.get("multiprocessing.process")
    return not (mp_process is not None and getattr(mp_process.current_process(), "_inheriting", False))


def early() -> None:
    """While the ``milopt`` command imports its modules (nothing started, nothing written yet),
    each of the three signals ends it at once with one line and status 128 + n, instead of a
    ``KeyboardInterrupt`` traceback; :func:`install` replaces this when the command starts."""
    if threading.current_thread() is not threading.main_thread():
        return
    for s in SIGNALS:
        if signal.getsignal(s) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(s, _early_handler)


def _after_fork_child() -> None:
    """A process forked from the command: the parent handles Ctrl-C; SIGTERM / SIGHUP end it."""
    if not _state["installed"]:
        return
    _state.update(installed=False, received=None, handled=False)
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for s in SIGNALS:
            if s != signal.SIGINT:
                signal.signal(s, signal.SIG_DFL)
    except (ValueError, OSError):  # pragma: no cover - forked from a thread other than the main one
        pass
    for sock in _state.pop("wakeup", ()):
        with contextlib.suppress(OSError):
            sock.close()


def _watchdog(r, limit: float) -> None:
    first = None
    while True:
        timeout = None if first is None else max(0.001, first + limit - time.monotonic())
        r.settimeout(timeout)
        try:
            data = r.recv(64)
        except (TimeoutError, BlockingIOError):
            data = None
        except OSError:
            return
        sigs = [b for b in (data or b"") if b in SIGNALS]
        if data is not None and not sigs:
            continue
        if first is None and sigs:
            first = time.monotonic()
            if _state["received"] is None:
                _state["received"] = sigs[0]
            if len(sigs) == 1:
                continue
        # a second signal, or the command did not stop in time: end the tree now
        n = _state["received"] or (sigs[0] if sigs else signal.SIGTERM)
        why = "a second signal" if data is not None else f"it did not stop within {limit:g} s"
        hard_exit(n, f"milopt: interrupted by {signal_name(n)}; stopped at once ({why}), without a result")


def hard_exit(signum: int, message: str | None = None) -> None:
    """Kill every descendant, remove the registered temporary files, exit ``128 + signum``."""
    if os.environ.get("MILOPT_DEBUG"):  # where the command was when it did not stop
        import faulthandler

        faulthandler.dump_traceback(all_threads=True)
    end_descendants(grace=0.0)
    remove_temporary_files()
    if message:
        with contextlib.suppress(Exception):
            os.write(2, (message + "\n").encode())
    os._exit(exit_status(signum))


# ----------------------------------------------------------------------------- child processes
def begin_command() -> None:
    """Mark this process as the ``milopt`` command (its console entry point calls this first):
    from then on :func:`command_start` is its process's start."""
    _state["start"] = process_start()


def command_start() -> float | None:
    """``time.perf_counter()`` at the start of the ``milopt`` command's process, so that its time
    limit bounds its whole wall time (interpreter start-up and imports included); None in a
    program that calls :func:`milopt.cli.main` itself (its limits count from the call)."""
    return _state.get("start")


def process_start() -> float:
    """``time.perf_counter()`` at the start of this process.

    On Linux the process's start time (``/proc/self/stat``, in clock ticks since boot) is put on
    the monotonic clock; elsewhere, or if that fails, the time :mod:`milopt.processes` was
    imported (the first thing ``import milopt`` does).  Never later than that."""
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            started = int(fields[19]) / os.sysconf("SC_CLK_TCK")      # field 22: starttime
            since = time.clock_gettime(time.CLOCK_BOOTTIME) - started  # seconds this process has run
            if 0.0 <= since < 3600.0 * 24 * 365:
                return min(_IMPORTED, time.perf_counter() - since)
        except (OSError, ValueError, IndexError, AttributeError):  # pragma: no cover
            pass
    return _IMPORTED


def child_init(expected_parent: int | None = None) -> None:
    """First thing in a worker process: die with the parent.

    Asks Linux to send SIGKILL to this process when the thread that forked it ends
    (``prctl(PR_SET_PDEATHSIG)``), then checks that ``expected_parent`` (default: the current
    parent) is still the parent -- a parent that died before the request leaves the worker
    orphaned, and it exits at once.  Elsewhere than Linux only the check is made."""
    ppid = os.getppid() if expected_parent is None else int(expected_parent)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover
            pass
    if os.getppid() != ppid:
        os._exit(70)


def _children_map() -> dict:
    """parent pid -> [child pids] of every process (``/proc``; empty elsewhere)."""
    out = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; split after the last ')'
        rest = stat[stat.rfind(b")") + 2:].split()
        if len(rest) > 1:
            out.setdefault(int(rest[1]), []).append(int(e))
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Process ids of every descendant of ``pid`` (default: this process), children first."""
    kids = _children_map()
    out, todo = [], [os.getpid() if pid is None else int(pid)]
    while todo:
        p = todo.pop(0)
        for c in kids.get(p, ()):
            if c not in out:
                out.append(c)
                todo.append(c)
    return out


def _spared() -> set:
    """multiprocessing's resource tracker: it ends by itself when this process does (and then
    releases what the workers left); killing it would leak those resources."""
    try:
        from multiprocessing import resource_tracker

        pid = getattr(resource_tracker._resource_tracker, "_pid", None)
        return {pid} if pid else set()
    except Exception:  # noqa: BLE001 - private API
        return set()


def end_descendants(grace: float = 1.0) -> int:
    """End every process still running under this one: SIGTERM, then SIGKILL after ``grace``
    seconds to those left; returns how many there were."""
    spare = _spared()
    pids = [p for p in descendants() if p not in spare]
    if not pids:
        return 0
    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGTERM if grace > 0 else signal.SIGKILL)
    t_end = time.monotonic() + grace
    while grace > 0 and time.monotonic() < t_end:
        if not [p for p in pids if _alive(p)]:
            break
        time.sleep(0.05)
    for p in pids:
        if grace > 0 and _alive(p):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
    return len(pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False


# ----------------------------------------------------------------------------- temporary files
@contextlib.contextmanager
def temporary_file(path):
    """Register ``path`` (a temporary file being written, or a temporary directory) for removal
    if the process is ended by :func:`hard_exit`; the caller removes it itself on every other
    path."""
    p = os.fspath(path)
    with _temp_lock:
        _temp_files.add(p)
    try:
        yield p
    finally:
        with _temp_lock:
            _temp_files.discard(p)


def remove_temporary_files() -> None:
    with _temp_lock:
        paths = list(_temp_files)
    for p in paths:
        if os.path.isdir(p) and not os.path.islink(p):
            import shutil

            shutil.rmtree(p, ignore_errors=True)
            continue
        with contextlib.suppress(OSError):
            os.unlink(p)


@contextlib.contextmanager
def signals_blocked():
    """SIGINT, SIGTERM and SIGHUP held back (delivered on exit) in this thread: a few
    system calls that must not be cut in the middle (create a name, then rename it)."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
