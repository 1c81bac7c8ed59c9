"""The small family of exceptions milopt raises.

Every message names the argument, what was expected, what was received, and how to fix it.
"""

__all__ = ["MiloptError", "InvalidDataError", "InvalidParameterError", "SolverUnavailableError",
           "UnsupportedProblemError", "LicenceLimitError", "NoSolutionError", "DegenerateModelWarning",
           "positive_number"]


class MiloptError(Exception):
    """Base class of every error milopt raises on purpose."""


class InvalidDataError(MiloptError, ValueError):
    """The data (bags, labels, features, coordinates, samples) is malformed."""


class InvalidParameterError(MiloptError, ValueError):
    """A parameter (hyper-parameter, option, CLI key) is out of range or unknown."""


class SolverUnavailableError(MiloptError):
    """The solver is unknown or not installed."""


class UnsupportedProblemError(MiloptError):
    """The solver cannot handle the problem class (e.g. an MIQP sent to an LP/QP solver)."""


class LicenceLimitError(UnsupportedProblemError):
    """The instance exceeds the installed solver licence's size limit (a free edition)."""


class NoSolutionError(MiloptError):
    """A solve ended without a usable solution and the caller asked for one."""


def positive_number(name: str, value) -> float:
    """``value`` as a positive finite float, or :class:`InvalidParameterError` naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name}: expected a positive number, got {value!r}") from None
    if not (v > 0 and v < float("inf")):
        raise InvalidParameterError(f"{name}: expected a positive finite number, got {value!r}")
    return v


class DegenerateModelWarning(UserWarning):
    """A fitted model gives every bag the same class, or every bag the same score.

    Such a model carries no information about the bags (its accuracy is the share of one class,
    its balanced accuracy 0.5); it usually means an unsuitable cost ``C`` or class weighting.
    ``milopt fit`` reports it on stderr and in the ``warnings`` field of ``--json``."""
