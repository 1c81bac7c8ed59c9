"""Exact MI-SVM by branch and bound over witness selections (the ``bnb`` backend's algorithm).

Modules of this package: ``search`` (the engine and the tree search), ``state`` (the state of
one search), ``evaluate`` (node evaluation), ``qp`` (the node QPs), ``branching`` and
``strong`` (the branching rules), ``primal`` (the heuristics the search runs), ``bounds``
(objective, dual bounds and look-ahead), ``nodes`` (nodes and queue), ``heuristics``
(incumbents), ``parallel`` (node relaxations in worker processes), ``options`` (the declared
options), ``api`` (:func:`solve_bags`, :func:`solve_c_path`).  Proofs and figures: docs/exact_misvm.md.
"""
from . import api as _api
from .api import solve_bags, solve_c_path
from .bounds import mi_objective_best_b
from .options import PARAMS
from .search import MISVMBranchAndBound

#: bnb options of every step of a C path after the first (:func:`solve_c_path`; ``milopt fit
#: --tune C=...`` with the bnb solver): the previous C's certified optimum, polished at the new
#: C by the swap search, replaces the annealing runs, all alternation starts but one and the
#: starts' iterated local search; the optimum certified is the same
PATH_STEP = _api.PATH_STEP

__all__ = ["MISVMBranchAndBound", "PARAMS", "PATH_STEP", "mi_objective_best_b", "solve_bags", "solve_c_path"]
