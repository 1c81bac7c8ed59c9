"""Node relaxations of a batch of open nodes solved in worker processes (one machine).

The master pops the ``batch`` best open nodes, the workers (forked with a copy of the search
engine: kernel matrix, labels, costs) solve their relaxations and compute their look-ahead
bounds (:meth:`MISVMBranchAndBound.evaluate`), and the master books the results in order:
incumbents, closing, children.  Periodic dives (the alternation from a node's relaxed
scores) run in the workers with the node; the periodic rounds of the iterated local search run
in a worker while the others evaluate nodes (their result is offered when it is ready); the
witness-swap search from a new incumbent runs in the master.  Nothing in the proof changes:
every node's bound is computed exactly as in the serial search; the incumbent a worker uses to
decide closing is the one at the start of the round (possibly larger than the current one),
which closes fewer nodes, never a wrong one.  The global lower bound is still the minimum over
open and closed nodes.  A batch may evaluate nodes that the serial search would have pruned
after a better incumbent, so node counts differ from the serial run.

With ``scheduler`` (option ``scheduler``) the same batches go to a ``dask.distributed``
cluster instead (:class:`DaskNodePool`): ``local`` starts a ``LocalCluster`` of ``workers``
single-threaded processes on this machine for the search; any other value is the address of a
running scheduler (``tcp://host:8786``).  The engine is sent once to every worker
(``Client.scatter(..., broadcast=True)``), a round is cut into one contiguous chunk of nodes per
worker thread (one task each), and the results come back in the order of the batch, so the
master books them exactly as with forked processes: the proof is the same.  The deadline travels as the seconds left (monotonic clocks of other machines
differ), and a worker thread evaluates on its own copy of the engine's mutable solver state
(the large kernel matrix and features are shared, read only).  Workers of a cluster started
elsewhere should run without ``MALLOC_TRIM_THRESHOLD_`` (see :func:`local_cluster`).
"""
from __future__ import annotations

import contextlib
import copy
import math
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time

_ENGINE = None


def _init(parent=None):
    from milopt.processes import child_init

    child_init(parent)                               # a worker dies with the master (even a SIGKILLed one)
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the master's to handle
    for s in (signal.SIGTERM, signal.SIGHUP):        # SIGTERM / SIGHUP end a worker at once, silently
        signal.signal(s, signal.SIG_DFL)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # noqa: BLE001
        pass


def _evaluate(args):
    node, incumbent, eps, deadline, dive = args
    return _ENGINE.evaluate(node, incumbent, eps, deadline, dive)


def _kick(args):
    """One round of the iterated local search in a worker (:func:`.heuristics.kick_search`)."""
    from .heuristics import kick_search

    scores, seconds, seed, kick = args
    return kick_search(_ENGINE, scores, time.perf_counter() + seconds, seed=seed, kick=kick)


class Pending:
    """A local-search round running in a worker: ``ready()`` without waiting, ``get()`` its
    result (None when it failed: a failed local search is only a missing incumbent)."""

    def __init__(self, ready, get):
        self._ready, self._get = ready, get

    def ready(self):
        return self._ready()

    def get(self):
        try:
            return self._get()
        except Exception:  # noqa: BLE001
            return None


def NodePool(engine, workers, scheduler=None, timeout=30.0):
    """The pool evaluating nodes of ``engine``: ``workers`` forked processes, or a
    ``dask.distributed`` cluster when ``scheduler`` is given (``'local'`` or an address; the
    connection waits at most ``timeout`` seconds)."""
    if scheduler:
        return DaskNodePool(engine, workers, scheduler, timeout)
    return ForkNodePool(engine, workers)


class ForkNodePool:
    """``workers`` forked processes evaluating nodes of ``engine``."""

    def __init__(self, engine, workers):
        global _ENGINE
        _ENGINE = engine
        ctx = mp.get_context("fork")
        self.pool = ctx.Pool(int(workers), initializer=_init, initargs=(os.getpid(),))

    def evaluate(self, nodes, incumbent, eps, deadline, dives=None):
        """Results of :meth:`MISVMBranchAndBound.evaluate` for ``nodes``, in order."""
        if not nodes:
            return []
        dives = dives or [False] * len(nodes)
        return self.pool.map(_evaluate, [(nd, incumbent, eps, deadline, dv) for nd, dv in zip(nodes, dives)],
                             chunksize=1)

    def kick(self, scores, seconds, seed, kick):
        """Start a round of the iterated local search in a worker (:class:`Pending`): the other
        workers go on evaluating nodes meanwhile."""
        r = self.pool.apply_async(_kick, ((scores, seconds, seed, kick),))
        return Pending(r.ready, r.get)

    def close(self):
        self.pool.terminate()
        self.pool.join()


# ---------------------------------------------------------------------------- dask.distributed
_LOCAL = threading.local()


def _thread_engine(engine):
    """This thread's working copy of ``engine`` (made once per engine and thread; the last one
    is kept): the node QP state is mutated during an evaluation, so threads of one dask worker
    must not share it; the kernel matrix and features are read only and shared."""
    pair = getattr(_LOCAL, "pair", None)
    if pair is None:
        try:
            from threadpoolctl import threadpool_limits

            _LOCAL.limits = threadpool_limits(1)   # one BLAS thread per worker thread
        except Exception:  # noqa: BLE001
            pass
    if pair is None or pair[0] is not engine:
        memo = {id(a): a for a in (engine.K, engine.X, getattr(engine.smo, "K", None), getattr(engine.smo, "X", None))
                if a is not None}
        pair = _LOCAL.pair = (engine, copy.deepcopy(engine, memo))
    return pair[1]


def _evaluate_remote(engine, chunk, incumbent, eps, seconds_left):
    """Results of a chunk of ``(node, dive)`` pairs, in order (one dask task)."""
    deadline = time.perf_counter() + seconds_left if math.isfinite(seconds_left) else math.inf
    eng = _thread_engine(engine)
    return [eng.evaluate(node, incumbent, eps, deadline, dive) for node, dive in chunk]


def _kick_remote(engine, scores, seconds, seed, kick):
    from .heuristics import kick_search

    return kick_search(_thread_engine(engine), scores, time.perf_counter() + seconds, seed=seed, kick=kick)


def local_cluster(workers, local_directory=None):
    """A ``dask.distributed`` LocalCluster of ``workers`` single-threaded processes for node
    evaluation (their scratch files in ``local_directory``; default: dask's, in the temporary
    directory).

    dask's nannies start their workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which fixes glibc's
    mmap threshold at 128 KiB: every node's kernel block is then a fresh mmap (page faults), and
    node evaluation took 2.3 times the CPU seconds on MUSK1.  This cluster's workers start
    without it (the other settings of ``distributed.nanny.pre-spawn-environ``, one BLAS thread,
    are kept)."""
    import logging

    import dask
    from dask.distributed import LocalCluster

    env = {k: v for k, v in (dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {}).items()
           if k != "MALLOC_TRIM_THRESHOLD_"}
    cfg = {"distributed.nanny.pre-spawn-environ": env}
    if local_directory is not None:  # the scheduler's scratch space too
        cfg["temporary-directory"] = os.fspath(local_directory)
    with dask.config.set(cfg):
        return LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True, dashboard_address=":0",
                            silence_logs=logging.ERROR, local_directory=local_directory)


class DaskNodePool:
    """Nodes of ``engine`` evaluated on a ``dask.distributed`` cluster.

    Parameters
    ----------
    engine : MISVMBranchAndBound
    workers : int
        Worker processes of the ``LocalCluster`` started when ``scheduler`` is ``'local'``.
    scheduler : str
        ``'local'`` or the address of a running scheduler.
    """

    def __init__(self, engine, workers, scheduler, timeout=30.0):
        try:
            from dask.distributed import Client
        except ImportError:  # pragma: no cover - dask is an optional dependency
            from milopt.errors import SolverUnavailableError

            raise SolverUnavailableError("bnb scheduler: needs dask.distributed; pip install 'milopt[dask]'") from None
        self.cluster = None
        self._scratch = contextlib.ExitStack()
        if str(scheduler).lower() == "local":
            # the workers' scratch space in a directory of its own, removed by close() (and by
            # milopt.processes when a signal ends the command before close() runs)
            from milopt.processes import temporary_file

            folder = tempfile.mkdtemp(prefix="milopt-dask-")
            self._scratch.callback(shutil.rmtree, folder, ignore_errors=True)
            self._scratch.enter_context(temporary_file(folder))
            try:
                self.cluster = local_cluster(workers, local_directory=folder)
                self.client = Client(self.cluster)
            except BaseException:
                if self.cluster is not None:
                    self.cluster.close()
                self._scratch.close()
                raise
        else:
            try:
                self.client = Client(scheduler, timeout=max(1.0, float(timeout)))
            except (OSError, ValueError, TypeError) as exc:
                from milopt.errors import SolverUnavailableError

                raise SolverUnavailableError(f"bnb scheduler: cannot reach the dask scheduler {scheduler!r} "
                                             f"({exc}); start one (dask scheduler) or use scheduler=local") from None
        self.engine = self.client.scatter(engine, broadcast=True, hash=False)
        self.slots = max(1, sum(self.client.nthreads().values()))
        self.futures = []
        self.kicks = []

    def evaluate(self, nodes, incumbent, eps, deadline, dives=None):
        """Results of :meth:`MISVMBranchAndBound.evaluate` for ``nodes``, in order.  The batch is
        cut into one contiguous chunk per worker thread (one task each: a round costs one
        scheduling per thread, not per node)."""
        if not nodes:
            return []
        dives = dives or [False] * len(nodes)
        left = deadline - time.perf_counter() if math.isfinite(deadline) else math.inf
        pairs = list(zip(nodes, dives))
        k = min(len(pairs), self.slots)
        cuts = [len(pairs) * j // k for j in range(k + 1)]
        chunks = [pairs[cuts[j]:cuts[j + 1]] for j in range(k)]
        self.futures = [self.client.submit(_evaluate_remote, self.engine, c, incumbent, eps, left, pure=False)
                        for c in chunks]
        out = self.client.gather(self.futures)
        self.futures = []
        return [r for part in out for r in part]

    def kick(self, scores, seconds, seed, kick):
        """Start a round of the iterated local search on the cluster (:class:`Pending`)."""
        f = self.client.submit(_kick_remote, self.engine, scores, seconds, seed, kick, pure=False)
        self.kicks = [f]
        return Pending(f.done, f.result)

    def close(self):
        try:
            if self.futures or self.kicks:
                self.client.cancel(self.futures + self.kicks)
            self.client.close()
        finally:
            try:
                if self.cluster is not None:
                    self.cluster.close()
            finally:
                self._scratch.close()
