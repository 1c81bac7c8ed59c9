"""The state of one run of the MI-SVM branch and bound, in one object (:class:`SearchState`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .nodes import NodeQueue


@dataclass
class Incumbent:
    """The best point found: its MI-SVM objective ``value``, the point as dual coefficients
    (``coef``) or primal weights (``w``), the intercept ``b``, where it came from (``source``)
    and when (``time``, seconds from the search's start)."""

    value: float = math.inf
    coef: object = None
    w: object = None
    b: float = 0.0
    source: str = ""
    time: float | None = None


@dataclass
class SearchState:
    """Everything a search changes as it runs.

    The incumbent and its ``trajectory`` ((seconds, Φ) of every improvement, in the order
    found); the open nodes (``queue``) and ``closed_bound``, the smallest bound of the nodes
    closed so far (with the queue's smallest bound, the proof's lower bound); the counters
    (``nodes`` evaluated, QP ``iterations``, ``closed`` nodes, node QPs solved by the active-set
    method / handed on after it failed, node QPs solved by strong branching); the root's bound;
    the time spent in primal heuristics; the iterated local search's schedule (``kicks`` run,
    ``next_kick`` at that node count, ``kick_gap`` the current interval, ``pending`` a round
    running in a worker; ``early``: the starts' local search interleaved with a serial search,
    :func:`.heuristics.interleaved_kick`; ``kick_idle``: its kicks since the incumbent last
    improved, ``kick_mark`` that incumbent, ``kick_slices`` its slices so far; ``round_idle``:
    the periodic rounds in a row that did not improve it); ``trajectory_cpu``: the process CPU
    seconds of each trajectory entry; the recorded ``history`` and when it and the log were last written.
    """

    queue: NodeQueue = field(default_factory=NodeQueue)
    incumbent: Incumbent = field(default_factory=Incumbent)
    trajectory: list = field(default_factory=list)
    trajectory_cpu: list = field(default_factory=list)
    closed_bound: float = math.inf
    nodes: int = 0
    iterations: int = 0
    closed: int = 0
    active_set_solves: int = 0
    active_set_fallbacks: int = 0
    strong_qps: int = 0
    root_bound: float | None = None
    heuristic_seconds: float = 0.0
    kicks: int = 0
    next_kick: int = 0
    kick_gap: int = 0
    pending: object = None
    early: list = field(default_factory=lambda: [0.0, 0.0, 0, 0.0, None])
    kick_idle: int = 0
    round_idle: int = 0
    kick_slices: int = 0
    kick_mark: float = math.inf
    history: list = field(default_factory=list)
    last_history: float = -math.inf
    last_log: float = -math.inf

    def close(self, bound):
        """A node (or a ruled-out candidate) closed with ``bound``: it joins the proof."""
        self.closed_bound = min(self.closed_bound, bound)
