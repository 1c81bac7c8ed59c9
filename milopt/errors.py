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


class OutputFileError(MiloptError, OSError):
    """A file could not be written: the message names the target path and the reason
    (``cannot write model.mps: No space left on device``); ``errno`` and ``filename`` are those
    of the failing system call's target."""

    def __init__(self, path, exc: OSError):
        reason = exc.strerror or str(exc)
        super().__init__(f"cannot write {path}: {reason}")
        self.errno, self.strerror, self.filename = exc.errno, reason, str(path)

    def __str__(self):
        return self.args[0]


class NoSolutionError(MiloptError):
    """A solve ended without a usable solution and the caller asked for one."""


def did_you_mean(names, choices) -> str:
    """``" (did you mean 'misvm-bigm'?)"`` for a misspelt name (``""`` when nothing is close).

    ``names``: one name or a list of them; ``choices``: the names accepted there.  The closest
    choices by :func:`difflib.get_close_matches` (ratio >= 0.6, case ignored), at most three per
    name -- the one place every "unknown name" message of milopt gets its suggestion from."""
    import difflib

    names = [names] if isinstance(names, str) else list(names)
    choices = [str(c) for c in choices]
    low = {}
    for c in choices:
        low.setdefault(c.lower(), c)
    parts = []
    for n in names:
        near = [low[m] for m in difflib.get_close_matches(str(n).lower(), list(low), n=3, cutoff=0.6)]
        if near:
            alts = " or ".join(repr(m) for m in near)
            parts.append(alts if len(names) == 1 else f"{alts} for {str(n)!r}")
    return f" (did you mean {', '.join(parts)}?)" if parts else ""


def unknown_name(kind: str, name, choices, more: str = "") -> InvalidParameterError:
    """The error for a name that is not one of ``choices``: ``unknown formulation 'misvm-bigmm'
    (did you mean 'misvm-bigm'?); available: ...`` (``more`` is appended)."""
    choices = sorted(str(c) for c in choices)
    return InvalidParameterError(f"unknown {kind} {name!r}{did_you_mean(str(name), choices)}; available: "
                                 f"{', '.join(choices)}{more}")


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
