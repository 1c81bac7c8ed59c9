"""Nodes of the witness-selection tree and the open-node queue (best bound first)."""
from __future__ import annotations

import heapq
import math


class Node:
    """An open node: the witnesses fixed so far and the data for its relaxation.

    Attributes
    ----------
    bound : float
        A valid lower bound of min{P(s) : s agrees with the node}.
    wit : ndarray of int
        Witness row per positive bag (-1: unresolved).
    alpha : ndarray
        Multipliers of the parent's relaxation (shared by siblings; warm start).
    depth : int
    add : int
        The row this node added to the effective set (-1 at the root).
    out : ndarray of bool or None
        Instances ruled out as witnesses below this node (reduced-cost fixing: their
        look-ahead bound at an ancestor reached the incumbent); None: none.
    """

    __slots__ = ("add", "alpha", "bound", "depth", "out", "wit")

    def __init__(self, bound, wit, alpha, depth, add, out=None):
        self.bound = bound
        self.wit = wit
        self.alpha = alpha
        self.depth = depth
        self.add = add
        self.out = out


class NodeQueue:
    """Best-bound priority queue (ties: deeper first, then first created)."""

    def __init__(self):
        self.heap = []
        self.counter = 0

    def __len__(self):
        return len(self.heap)

    def push(self, node):
        self.counter += 1
        heapq.heappush(self.heap, (node.bound, -node.depth, self.counter, node))

    def pop(self):
        return heapq.heappop(self.heap)[3]

    def min_bound(self):
        return self.heap[0][0] if self.heap else math.inf
