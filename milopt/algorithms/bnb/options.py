"""The options of the MI-SVM branch and bound, declared once (typed, with bounds and help).

They are the ``--set`` keys of ``milopt solve misvm-bigm --solver bnb`` (beside the
formulation's own keys) and the keyword arguments of :func:`milopt.algorithms.bnb.solve_bags`.
"""
from milopt.params import Bool, Choice, Float, Int, ParamSet, Str

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
    branching=Choice("product", ("lookahead", "product"),
                     "bag to branch on: largest weakest-child look-ahead gain, or its product with the mean gain"),
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
