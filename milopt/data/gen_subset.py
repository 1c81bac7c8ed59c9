"""``gen:subset?data=musk1&bags=8&seed=0``: a stratified subset of bags of another data set.

The instance library (``milopt export-library``) grades difficulty by taking ``bags`` whole
bags of a shipped data set (or of any data spec ``load`` accepts), positive and negative bags
in the proportion of the full set (at least one of each), drawn without replacement by
``numpy.random.default_rng(seed)`` and kept in their original order.  Every instance of a
chosen bag is kept, so a subset of MUSK2 is still a MUSK2 problem, only with fewer bags.
The same ``(data, bags, seed)`` gives the same subset on every machine.
"""
from __future__ import annotations

import numpy as np

from milopt.data.registry import register_generator
from milopt.errors import InvalidParameterError


def subset(data: str = "musk1", bags: int = 8, seed: int = 0):
    """Stratified subset of ``bags`` bags of the data set ``data`` (a shipped name or a path)."""
    from milopt.data.loading import load

    if str(data).startswith("gen:subset"):
        raise InvalidParameterError("subset: data must be a data set, not another subset")
    full = load(str(data))
    if isinstance(bags, bool) or not isinstance(bags, (int, np.integer)) or bags < 2:
        raise InvalidParameterError(f"subset: bags must be an integer >= 2, got {bags!r}")
    n = full.n_bags
    if bags > n:
        raise InvalidParameterError(f"subset: {data} has {n} bags; bags={bags} is too many")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise InvalidParameterError(f"subset: seed must be an integer, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    pos = np.flatnonzero(full.y == 1)
    neg = np.flatnonzero(full.y != 1)
    k_pos = int(round(bags * pos.size / n))
    k_pos = min(max(k_pos, 1), pos.size, bags - 1)
    k_neg = bags - k_pos
    if k_neg > neg.size:
        k_neg, k_pos = neg.size, bags - neg.size
    chosen = np.sort(np.concatenate([rng.choice(pos, k_pos, replace=False), rng.choice(neg, k_neg, replace=False)]))
    out = full.subset(chosen)
    name = f"{full.name}-b{bags}s{int(seed)}"
    meta = dict(getattr(out, "meta", {}) or {})
    meta.update({"generator": "subset", "data": str(data), "bags": int(bags), "seed": int(seed)})
    from dataclasses import replace

    return replace(out, name=name, meta=meta)


register_generator("subset", subset, "stratified subset of whole bags of a data set: data, bags, seed")
