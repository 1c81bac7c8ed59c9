r"""The primal heuristics the MI-SVM search runs on the way, behind one protocol, :class:`PrimalHeuristic`.

Each turns instance scores (a node relaxation's, or the incumbent's) into a feasible point
(w, b) — dual coefficients and an intercept — that the search scores by the exact MI-SVM
objective Φ(w, b*) before it may become the incumbent (:meth:`.search.Search.offer`), so no
heuristic can affect the lower bound.  The implementations wrap the algorithms of
:mod:`.heuristics`: :class:`Alternation` (the MI-SVM alternation of Andrews, Tsochantaridis &
Hofmann 2002 from the scores), :class:`SwapSearch` (1-opt witness swaps) and
:class:`KickSearch` (iterated local search).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol


class PrimalHeuristic(Protocol):
    """``run(eng, scores, deadline)``: a point ``(coef, b)`` from the instance scores ``scores``
    (K coef of some point), or None when it finds nothing."""

    def run(self, eng, scores, deadline):
        ...


class Alternation:
    """The alternation started from the scores, by a callable ``scores -> (coef, b) | None``
    (the ``heuristic`` of :meth:`.search.MISVMBranchAndBound.solve`)."""

    def __init__(self, fn):
        self.fn = fn

    def run(self, eng, scores, deadline=math.inf):
        r = self.fn(scores)
        return None if r is None else (r[0], r[1])


class SwapSearch:
    """The 1-opt witness-swap search (:func:`.heuristics.swap_search`) from the scores."""

    def run(self, eng, scores, deadline):
        from .heuristics import swap_search

        s = swap_search(eng, scores, deadline)
        return None if s is None else (s[1], s[2])


class KickSearch:
    """The iterated local search (:func:`.heuristics.kick_search`, at most ``kick`` bags kicked
    at once) from the scores, seeded."""

    def __init__(self, kick=3):
        self.kick = int(kick)

    def run(self, eng, scores, deadline, seed=0):
        from .heuristics import kick_search

        s = kick_search(eng, scores, deadline, seed=seed, kick=self.kick)
        return None if s is None else (s[1], s[2])


@dataclass
class Starts:
    """Known points offered before the search: ``dual`` (coef, b) pairs, with ``times`` (when
    each was found, seconds relative to the search's start; negative: before it), ``primal``
    (w, b) pairs (linear kernel); ``swap``: run the swap search from the best of them first;
    ``first_kick``: seconds of iterated local search from the best start, overlapped with the
    search (with a worker pool, in a worker from its beginning; serial, in slices interleaved
    with as much node time, :func:`.heuristics.interleaved_kick`)."""

    dual: list = field(default_factory=list)
    times: list | None = None
    primal: list = field(default_factory=list)
    swap: bool = False
    first_kick: float = 0.0

    #: the keywords of :meth:`.search.MISVMBranchAndBound.solve` that earlier versions took for these fields
    KEYWORDS = {"incumbents": "dual", "incumbent_times": "times", "primal_incumbents": "primal",
                "start_swap": "swap", "first_kick": "first_kick"}
