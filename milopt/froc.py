r"""FROC evaluation for computer-aided detection (CAD), and instance AUC.

A CAD system marks every candidate whose score reaches a threshold t.  The *free-response
ROC* (FROC) curve plots, over all thresholds,

* **sensitivity**: the fraction of lesions (``unit="lesion"``) with at least one marked
  candidate belonging to them -- or of positive images/patients (``unit="image"``) with at
  least one marked positive candidate;
* against **false marks per image**: the number of marked negative candidates divided by
  the number of images.

``unit="image"`` is the curve of Vural et al. (JMLR 2009), Section 5.2: "the y-axis is a
measure of sensitivity and the x-axis is the number of false-marks per patient (in our case,
per image is also per patient).  Sensitivity is the number of patients diagnosed as having the
disease divided by the number of patients that has the disease" -- a patient counts as
diagnosed when one of its true candidates is marked.  ``unit="lesion"`` is the usual CAD
per-lesion FROC, finer when an image holds several lesions.

Both coordinates are non-increasing in t, so the curve is monotone.  It is computed
vectorised: a lesion is detected at threshold t iff the maximum score of its candidates is
>= t; the false marks at t are counted by a binary search in the sorted negative scores.

Lesion identity comes from ``bags.meta`` as written by the CAD generator
(:func:`lesion_ids`); data without it treat each positive candidate as its own lesion
(documented fallback).
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError

__all__ = ["lesion_ids", "froc_curve", "sensitivity_at", "froc_table", "instance_auc", "plot_froc"]


def lesion_ids(bags: Bags) -> np.ndarray:
    """Lesion id of every candidate of ``bags`` (-1 for negatives).

    Uses ``meta['lesion_id']`` and ``meta['lesion_ptr']`` (flat ids over the generator's
    original images and their offsets) with ``bags.bag_names`` (original image numbers), so it
    works on any subset of images.  Without them, each positive candidate is its own lesion.
    """
    if bags.instance_y is None:
        raise InvalidDataError("FROC: instance labels (bags.instance_y) are required")
    meta = bags.meta or {}
    lid, lptr = meta.get("lesion_id"), meta.get("lesion_ptr")
    if lid is None or lptr is None:
        ids = np.full(bags.n_instances, -1, dtype=np.int64)
        pos = np.flatnonzero(bags.instance_y == 1)
        ids[pos] = np.arange(pos.size)
        return ids
    lid, lptr = np.asarray(lid), np.asarray(lptr)
    orig = np.asarray(bags.bag_names).astype(np.int64)
    sizes = lptr[orig + 1] - lptr[orig]
    if not np.array_equal(sizes, bags.bag_sizes):
        raise InvalidDataError("FROC: meta['lesion_id'] does not match these bags (sizes differ); "
                               "were images filtered or candidates removed after generation?")
    offs = np.repeat(lptr[orig] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    ids = lid[np.arange(int(sizes.sum())) + offs]
    if np.any((ids >= 0) != (bags.instance_y == 1)):
        raise InvalidDataError("FROC: lesion ids disagree with instance labels")
    return ids


def froc_curve(bags: Bags, scores, unit: str = "lesion"):
    """FROC points of instance ``scores`` on ``bags``.

    Parameters
    ----------
    bags : Bags
        With ``instance_y`` (and lesion ids in ``meta`` for ``unit='lesion'``).
    scores : ndarray (n_instances,)
        Candidate scores (higher = more suspicious).
    unit : {'lesion', 'image'}
        Sensitivity per lesion or per positive image (patient).

    Returns
    -------
    pandas.DataFrame
        Columns ``threshold``, ``false_marks_per_image``, ``sensitivity``, ``detected``,
        ``false_marks``, one row per distinct score (descending thresholds), plus a first row at
        threshold +inf (nothing marked).
    """
    import pandas as pd

    s = np.asarray(scores, dtype=float).ravel()
    if s.shape[0] != bags.n_instances:
        raise InvalidDataError(f"scores: expected {bags.n_instances} candidate scores, got {s.shape[0]}")
    if not np.all(np.isfinite(s)):
        raise InvalidDataError("scores: contain NaN or infinite values")
    if bags.instance_y is None:
        raise InvalidDataError("FROC: instance labels (bags.instance_y) are required")
    pos = bags.instance_y == 1
    if unit == "lesion":
        gid = lesion_ids(bags)
    elif unit == "image":
        gid = np.where(pos, bags.bag_index, -1)
    else:
        raise InvalidDataError(f"unit: expected 'lesion' or 'image', got {unit!r}")
    groups, inv = np.unique(gid[pos], return_inverse=True)
    n_groups = groups.size
    if n_groups == 0:
        raise InvalidDataError("FROC: no positive candidate (no lesion) in these bags")
    gmax = np.full(n_groups, -np.inf)
    np.maximum.at(gmax, inv, s[pos])
    neg = np.sort(s[~pos])
    gsorted = np.sort(gmax)
    thr = np.unique(s)[::-1]
    fm = neg.size - np.searchsorted(neg, thr, side="left")        # negatives with score >= t
    det = n_groups - np.searchsorted(gsorted, thr, side="left")   # groups with max >= t
    n_img = bags.n_bags
    thr = np.concatenate(([np.inf], thr))
    fm = np.concatenate(([0], fm))
    det = np.concatenate(([0], det))
    return pd.DataFrame({"threshold": thr, "false_marks_per_image": fm / n_img, "sensitivity": det / n_groups,
                         "detected": det, "false_marks": fm})


def sensitivity_at(curve, false_marks_per_image) -> float | np.ndarray:
    """Highest sensitivity with at most the given false marks per image (step interpolation)."""
    fm = curve["false_marks_per_image"].to_numpy()
    se = curve["sensitivity"].to_numpy()
    q = np.atleast_1d(np.asarray(false_marks_per_image, dtype=float))
    idx = np.searchsorted(fm, q, side="right") - 1     # fm is non-decreasing
    out = np.where(idx >= 0, se[np.maximum(idx, 0)], 0.0)
    return float(out[0]) if np.ndim(false_marks_per_image) == 0 else out


def froc_table(bags: Bags, scores, points=(0.5, 1, 2, 4, 6, 8), unit: str = "lesion"):
    """Sensitivity at the given false-marks-per-image operating points (pandas DataFrame)."""
    import pandas as pd

    c = froc_curve(bags, scores, unit)
    return pd.DataFrame({"false_marks_per_image": list(points), "sensitivity": sensitivity_at(c, list(points))})


def instance_auc(bags: Bags, scores) -> float:
    """ROC AUC of candidate scores against ``instance_y``."""
    from sklearn.metrics import roc_auc_score

    if bags.instance_y is None:
        raise InvalidDataError("instance AUC: instance labels (bags.instance_y) are required")
    return float(roc_auc_score(bags.instance_y, np.asarray(scores, dtype=float).ravel()))


def plot_froc(curves: dict, path=None, title="FROC", max_false_marks: float = 10.0, ax=None, unit: str = "lesion"):
    """Plot FROC curves (``{label: froc_curve DataFrame}``); saves to ``path`` when given (Agg backend).

    ``unit`` only labels the y axis ('lesion' or 'image', as the curves were computed).
    Returns the matplotlib Figure.
    """
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4.5))
    for label, c in curves.items():
        ax.step(c["false_marks_per_image"], c["sensitivity"], where="post", label=label)
    ax.set_xlim(0, max_false_marks)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("false marks per image")
    ax.set_ylabel(f"sensitivity (per {'patient (image)' if unit == 'image' else 'lesion'})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig = fig or ax.figure
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
    return fig
