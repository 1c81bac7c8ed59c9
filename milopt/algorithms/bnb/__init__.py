"""Exact MI-SVM by branch and bound over witness selections (the ``bnb`` backend's algorithm).

Modules: :mod:`.search` (the tree search), :mod:`.bounds` (objective, dual bounds and
look-ahead), :mod:`.nodes` (nodes and queue), :mod:`.heuristics` (incumbents),
:mod:`.parallel` (node relaxations in worker processes), :mod:`.options` (the declared
options), :mod:`.api` (:func:`solve_bags`, :func:`solve_c_path`).  Proofs and figures: docs/exact_misvm.md.
"""
from .api import solve_bags, solve_c_path
from .bounds import mi_objective_best_b
from .options import PARAMS
from .search import MISVMBranchAndBound

__all__ = ["MISVMBranchAndBound", "PARAMS", "mi_objective_best_b", "solve_bags", "solve_c_path"]
