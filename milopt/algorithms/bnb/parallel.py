"""Node relaxations of a batch of open nodes solved in worker processes (one machine).

The master pops the ``batch`` best open nodes, the workers (forked with a copy of the search
engine: kernel matrix, labels, costs) solve their relaxations and compute their look-ahead
bounds (:meth:`MISVMBranchAndBound.evaluate`), and the master books the results in order:
incumbents, closing, children.  Periodic dives (the alternation from a node's relaxed
scores) run in the workers with the node; the witness-swap search from a new incumbent runs in
the master.  Nothing in the proof changes: every node's bound is computed
exactly as in the serial search; the incumbent a worker uses to decide closing is the one at
the start of the round (possibly larger than the current one), which closes fewer nodes,
never a wrong one.  The global lower bound is still the minimum over open and closed nodes.
A batch may evaluate nodes that the serial search would have pruned after a better incumbent,
so node counts differ from the serial run.
"""
from __future__ import annotations

import multiprocessing as mp
import signal

_ENGINE = None


def _init():
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the master's to handle
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # noqa: BLE001
        pass


def _evaluate(args):
    node, incumbent, eps, deadline, dive = args
    return _ENGINE.evaluate(node, incumbent, eps, deadline, dive)


class NodePool:
    """``workers`` forked processes evaluating nodes of ``engine``."""

    def __init__(self, engine, workers):
        global _ENGINE
        _ENGINE = engine
        ctx = mp.get_context("fork")
        self.pool = ctx.Pool(int(workers), initializer=_init)

    def evaluate(self, nodes, incumbent, eps, deadline, dives=None):
        """Results of :meth:`MISVMBranchAndBound.evaluate` for ``nodes``, in order."""
        if not nodes:
            return []
        dives = dives or [False] * len(nodes)
        return self.pool.map(_evaluate, [(nd, incumbent, eps, deadline, dv) for nd, dv in zip(nodes, dives)],
                             chunksize=1)

    def close(self):
        self.pool.terminate()
        self.pool.join()
