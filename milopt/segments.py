"""Vectorised segment operations over bags (instances grouped contiguously by bag).

All functions take ``ptr`` = :attr:`milopt.data.Bags.bag_ptr` (n_bags + 1 offsets) and work on
the first axis, without any Python loop over bags.
"""
from __future__ import annotations

import numpy as np


def segment_max(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Maximum of ``values`` over each bag; ``values`` may be (n,) or (n, k)."""
    return np.maximum.reduceat(values, ptr[:-1], axis=0)


def segment_sum(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each bag; ``values`` may be (n,) or (n, k)."""
    return np.add.reduceat(values, ptr[:-1], axis=0)


def segment_mean(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Mean of ``values`` over each bag (bags are non-empty)."""
    sizes = np.diff(ptr)
    s = segment_sum(values, ptr)
    return s / (sizes if s.ndim == 1 else sizes[:, None])


def segment_argmax(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Global row index of the (first) maximum of 1-D ``values`` within each bag."""
    values = np.asarray(values)
    sizes = np.diff(ptr)
    bag = np.repeat(np.arange(sizes.size), sizes)
    mx = segment_max(values, ptr)
    is_max = values >= mx[bag]
    # first True per bag: smallest row index among maxima
    rows = np.arange(values.shape[0])
    cand = np.where(is_max, rows, values.shape[0])
    return np.minimum.reduceat(cand, ptr[:-1])


def expand(bag_values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Repeat per-bag values onto their instances."""
    return np.repeat(bag_values, np.diff(ptr), axis=0)
