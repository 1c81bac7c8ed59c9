"""Solver-agnostic driver, normalized results, export."""
from milopt.solvers.driver import Backend, backends, classify, get_backend, installed, register_backend, solve
from milopt.solvers.export import export, model_size
from milopt.solvers.result import SolutionStatus, SolveResult, Termination, relative_gap

__all__ = ["solve", "backends", "installed", "get_backend", "register_backend", "Backend", "classify",
           "SolveResult", "SolutionStatus", "Termination", "relative_gap", "export", "model_size"]
