"""The options of the MI-SVM branch and bound, declared once (typed, with bounds and help).

:data:`PARAMS` are the ``--set`` keys of ``milopt solve misvm-bigm --solver bnb`` (beside the
formulation's own keys) and the keyword arguments of :func:`milopt.algorithms.bnb.solve_bags`;
:data:`LIMITS` are the search's own limits.  The engine takes its keys (:data:`ENGINE_KEYS`) as
keyword arguments, the search a :class:`SearchOptions` built from the same declarations.
"""
from milopt.params import Bool, Choice, Float, Int, ParamSet, Str

__all__ = ["ENGINE_KEYS", "LIMITS", "PARAMS", "SEARCH_KEYS", "SearchOptions", "engine_options"]

#: the options of the branch and bound, typed, with bounds and help (``--set`` keys of ``--solver bnb``)
PARAMS = ParamSet(
    restarts=Int(8, "starts of the MI-SVM alternating heuristic before the search (0: none)", ge=0),
    seed=Int(0, "seed of the random heuristic starts", ge=0),
    node_limit=Int(None, "stop after this many nodes", ge=1),
    tol=Float(1e-4, "KKT tolerance of the coordinate-descent node QPs", gt=0, lt=1),
    qp=Choice("auto", ("auto", "ipm", "smo"),
              "node QP solver: auto (the active-set method warm-started from the parent's multipliers; where it "
              "fails, and at the root, the interior point on small effective sets, else the coordinate descent), "
              "interior point only, or warm-started coordinate descent only"),
    branching=Choice("product", ("lookahead", "product", "multibag", "pseudocost", "strong"),
                     "bag to branch on: largest weakest-child look-ahead gain, its product with the mean gain, "
                     "the product rule with bounds from all unresolved bags at once (multibag), the product of "
                     "the gains corrected by the realised gains of evaluated children (pseudocost), "
                     "or strong branching (the children's node QPs of the strong_bags best bags by product "
                     "score solved, the bag of largest product of their bound gains chosen)"),
    strong_bags=Int(4, "branching=strong: bags whose children's node QPs are solved to choose among", ge=1),
    strong_depth=Int(None, "branching=strong: only at nodes of depth below this (deeper: the product rule; none: "
                           "everywhere)", ge=1),
    newton=Bool(True, "projected Newton-step look-ahead besides the pair step (with the interior-point node QP's "
                      "last Newton matrix, or one built on the free multipliers)"),
    pair_bags=Int(3, "two-level look-ahead: children's bounds from joint Newton steps with the candidates of this "
                     "many other unresolved bags (those of largest single gain; 0: off)", ge=0),
    anneal=Int(12, "deterministic-annealing runs (smoothed MI-SVM, L-BFGS; linear kernel) before the search",
               ge=0),
    start_share=Float(0.9, "largest share of the time limit spent on starting heuristics (they follow one "
                           "schedule whatever the limit, and are cut only at this share of it)", ge=0, le=1),
    swap_starts=Int(3, "distinct best starts polished by the witness-swap search before the search", ge=0),
    swap=Bool(True, "1-opt witness-swap local search on every new incumbent"),
    kick_seconds=Float(10.0, "seconds of iterated local search (random witness kicks, then the alternation) from "
                             "the best start, interleaved with the search in one-second slices (with workers: in a "
                             "worker beside it)", ge=0),
    kick_patience=Int(200, "the starts' iterated local search inside the search ends, the rest of its kick_seconds "
                           "unused, after this many kicks in a row without a better incumbent; the kick_every rounds "
                           "stop after two in a row that found nothing, until the tree improves the incumbent "
                           "(0: neither stops early)", ge=0),
    kick_size=Int(3, "largest number of bags kicked at once by the iterated local search", ge=1),
    kick_every=Int(100, "a one-second round of the iterated local search from the incumbent after k nodes, the "
                        "interval doubling after each round that finds nothing (0: never)", ge=0),
    dive_every=Int(0, "run the alternation from the relaxation of every k-th node (0: only on improvement)",
                   ge=0),
    heuristic_share=Float(0.1, "largest share of the elapsed time spent in primal heuristics during the search",
                          ge=0, le=1),
    log_every=Float(5.0, "seconds between two progress lines of --verbose", gt=0),
    workers=Int(1, "processes evaluating open nodes in parallel (1: serial)", ge=1),
    batch=Int(0, "open nodes evaluated per parallel round (0: 8 per worker)", ge=0),
    scheduler=Str(None, "evaluate open nodes on a dask.distributed cluster: 'local' (a LocalCluster of `workers` "
                        "processes) or a scheduler address such as tcp://host:8786 (none: forked processes)"),
)

#: the search's own limits and reporting: keywords of :meth:`MISVMBranchAndBound.solve` and fields
#: of :class:`SearchOptions`, not ``--set`` keys (the command's ``--time-limit``, ``--gap`` and
#: ``--verbose`` set them)
LIMITS = ParamSet(
    time_limit=Float(None, "wall seconds for the search (none: no limit)", gt=0),
    mip_gap=Float(1e-4, "stop when (UB - LB) / max(|UB|, 1e-10) is at most this relative gap", ge=0),
    abs_gap=Float(1e-9, "... or when UB - LB is at most this absolute gap", ge=0),
    verbose=Bool(False, "progress lines (time, nodes, open, incumbent, bound, gap) every log_every seconds"),
    history_every=Float(0.5, "seconds between two entries of the recorded history", gt=0),
)

#: the keys of :data:`PARAMS` that the search itself reads (the others configure the engine, see
#: :func:`engine_options`, or the starting heuristics of ``solve_bags``)
SEARCH_KEYS = ("node_limit", "seed", "swap", "kick_patience", "kick_size", "kick_every", "dive_every",
               "heuristic_share", "log_every", "workers", "batch", "scheduler")

#: the keys of :data:`PARAMS` that configure the engine (node QP, look-ahead, branching rule), and
#: the keyword argument of :class:`MISVMBranchAndBound` each one is
ENGINE_KEYS = {"tol": "tol", "qp": "qp", "branching": "branching", "newton": "newton_gains",
               "pair_bags": "pair_bags", "strong_bags": "strong_bags",
               "strong_depth": "strong_depth"}

_SEARCH = ParamSet({k: PARAMS[k] for k in SEARCH_KEYS}, LIMITS)


class SearchOptions:
    """The options of one run of :meth:`MISVMBranchAndBound.solve`, validated and read-only.

    Its fields are the keys :data:`SEARCH_KEYS` of :data:`PARAMS` and the keys of
    :data:`LIMITS`, with their declared defaults; a value is checked by its declaration
    (``SearchOptions(node_limit=0)`` raises ``InvalidParameterError`` naming the key).
    :meth:`from_options` takes them from a resolved dict of :data:`PARAMS` (what ``solve_bags``
    and ``--set`` produce).
    """

    __slots__ = tuple(_SEARCH)

    def __init__(self, **values):
        for k, v in _SEARCH.resolve(values, "bnb search options").items():
            object.__setattr__(self, k, v)

    @classmethod
    def from_options(cls, options=None, **limits):
        """The search's keys of ``options`` (a dict of :data:`PARAMS` keys; the others are
        ignored) with ``limits`` (keys of :data:`LIMITS`, or overrides)."""
        options = options or {}
        return cls(**{**{k: options[k] for k in SEARCH_KEYS if k in options}, **limits})

    def replace(self, **changes):
        """A copy with ``changes`` (validated)."""
        return SearchOptions(**{**self.as_dict(), **changes})

    def as_dict(self):
        """``{key: value}`` of every field."""
        return {k: getattr(self, k) for k in self.__slots__}

    def __setattr__(self, name, value):
        raise AttributeError("SearchOptions is read-only: use replace(...)")

    def __repr__(self):
        return "SearchOptions(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


def engine_options(options=None):
    """The keyword arguments of :class:`MISVMBranchAndBound` from the engine's keys
    (:data:`ENGINE_KEYS`) of a dict of :data:`PARAMS` keys (the others ignored), validated, with
    their defaults."""
    o = PARAMS.resolve({k: v for k, v in (options or {}).items() if k in ENGINE_KEYS}, "bnb options")
    return {arg: o[k] for k, arg in ENGINE_KEYS.items()}
