"""Seeded K-class multiple-instance data at scale (``gen:multiclass?classes=K&bags=N&...``).

Each class ``c`` has a key-instance prototype :math:`\\mu_c = \\text{separation}\\cdot u_c`
(:math:`u_c` random unit vectors, seeded).  A bag of class ``c`` holds between
``min_instances`` and ``instances`` instances: ``key`` of them (at least one) are key
instances :math:`x \\sim N(\\mu_c, I)`, the rest are background :math:`x \\sim N(0, I)`
shared by every class.  Only the key instances carry class information, so the class of a bag
is decided by its key instance -- the multi-class MIL assumption of pdMISVM (Seo, Brand et
al., 2022).  ``instance_y`` marks the key instances (1) and the background (0).

Memory: the instance matrix is allocated once as float64 (what :class:`Bags` stores) and
filled in place by the generator (``standard_normal(out=...)``); no per-bag arrays and no
second copy, so 10^5 bags x 10 instances x 162 features take 1.3 GB for X plus a few MB.
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.data.registry import register_generator
from milopt.errors import InvalidParameterError


def _pos_int(name, v, minimum=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise InvalidParameterError(f"{name}: expected an integer >= {minimum}, got {v!r}")
    return int(v)


def multiclass(classes=3, bags=1000, instances=10, features=162, seed=0, min_instances=1, key=1,
               separation=3.0) -> Bags:
    """K-class MIL bags decided by a key instance (see the module docstring).

    Parameters
    ----------
    classes : int
        Number of classes K >= 2 (labels 0..K-1, balanced: bag i has class i mod K, then shuffled).
    bags : int
        Number of bags (>= classes).
    instances : int
        Largest bag size; sizes are uniform on ``min_instances..instances``.
    features : int
    seed : int
    min_instances : int
        Smallest bag size (set equal to ``instances`` for fixed-size bags).
    key : int
        Key instances per bag (capped at the bag size).
    separation : float
        Distance of each class prototype from the background mean.
    """
    K = _pos_int("classes", classes, 2)
    N = _pos_int("bags", bags, K)
    nmax = _pos_int("instances", instances)
    nmin = _pos_int("min_instances", min_instances)
    if nmin > nmax:
        raise InvalidParameterError(f"min_instances: must be <= instances ({nmax}), got {nmin}")
    d = _pos_int("features", features)
    nkey = _pos_int("key", key)
    sep = float(separation)
    if not np.isfinite(sep) or sep <= 0:
        raise InvalidParameterError(f"separation: expected a positive number, got {separation!r}")
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(N) % K).astype(np.int64)
    sizes = rng.integers(nmin, nmax + 1, size=N) if nmax > nmin else np.full(N, nmax)
    n = int(sizes.sum())
    U = rng.standard_normal((K, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    protos = sep * U
    X = np.empty((n, d), dtype=np.float64)
    rng.standard_normal(dtype=np.float64, out=X)          # background noise for every instance, in place
    ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    bag_index = np.repeat(np.arange(N, dtype=np.int64), sizes)
    # key instances: a random position in each bag, then the next ones cyclically
    kb = np.minimum(nkey, sizes)
    first = rng.integers(0, sizes)
    kbag = np.repeat(np.arange(N), kb)
    kofs = np.arange(int(kb.sum())) - np.repeat(np.cumsum(kb) - kb, kb)
    krows = ptr[kbag] + (first[kbag] + kofs) % sizes[kbag]
    inst_y = np.zeros(n, dtype=np.int64)
    inst_y[krows] = 1
    X[krows] += protos[y[kbag]]
    return Bags(X=X, bag_index=bag_index, y=y, instance_y=inst_y, name=f"multiclass-{K}",
                meta={"generator": "multiclass", "classes": K, "bags": N, "instances": nmax,
                      "min_instances": nmin, "features": d, "key": nkey, "separation": sep, "seed": seed})


register_generator("multiclass", multiclass,
                   "K-class MIL bags decided by a key instance: classes, bags, instances (max size), "
                   "min_instances, features, key, separation, seed")
