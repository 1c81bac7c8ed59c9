"""The branching rules of the search by name: the option ``branching`` picks one.

A new rule is one class (a :class:`~.branching.BranchingRule`) in its own module and one entry
here; ``tests/test_bnb_search.py`` proves every registered rule against brute force.
"""
from .branching import LookaheadBranching, ProductBranching
from .multibag import MultibagBranching
from .pseudocost import PseudocostBranching
from .strong import StrongBranching

#: name (option ``branching``) -> factory of the rule, called with the engine's options
#: ``strong_bags`` and ``strong_depth``
RULES = {
    "lookahead": lambda **_: LookaheadBranching(),
    "product": lambda **_: ProductBranching(),
    "multibag": lambda **_: MultibagBranching(),
    "pseudocost": lambda **_: PseudocostBranching(),
    "strong": lambda strong_bags=4, strong_depth=None, **_: StrongBranching(strong_bags, strong_depth),
}
