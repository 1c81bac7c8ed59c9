"""The :class:`Bags` container: multiple-instance data in one flat, vectorisable layout.

Instances are stored as one matrix ``X`` (n_instances x n_features), grouped contiguously by
bag: bag ``j`` owns rows ``bag_ptr[j]:bag_ptr[j+1]`` and ``bag_index[i]`` is the bag of row
``i``.  Segment operations over bags (max, argmax, sums) are then single numpy calls
(:mod:`milopt.segments`).  Constructors reorder instances stably by bag, so any input order is
accepted.

Optional per-instance data:

* ``instance_y`` -- true instance labels (0/1), when known (generators, digits);
* ``coords`` -- instance coordinates (n_instances x c), used by the batch methods of
  Vural et al. to build the within-batch similarity;
* ``samples`` / ``sample_ptr`` -- distributional instances: instance ``i`` is the sample of
  points ``samples[sample_ptr[i]:sample_ptr[i+1]]`` (Kent & Yu); ``X`` then holds the sample
  means unless given.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from milopt.errors import InvalidDataError


def _is_float(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _as_float_matrix(X, name="X") -> np.ndarray:
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(
            f"{name}: expected a numeric matrix, got values that are not numbers ({exc}); "
            "convert or drop non-numeric columns") from None
    if A.ndim == 1:
        A = A.reshape(-1, 1)
    if A.ndim != 2:
        raise InvalidDataError(f"{name}: expected a 2-D array (instances x features), got shape {A.shape}")
    return A


def _plain(v):
    """Plain Python value(s) for messages: 1 rather than np.int64(1), a list rather than array([...])."""
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v.item() if isinstance(v, np.generic) else v


def normalise_labels(y, name="y") -> np.ndarray:
    """Map bag labels to integers: {-1, 1} and {0, 1} become {0, 1}; other integer classes kept.

    Raises :class:`InvalidDataError` for NaN or non-integer labels.
    """
    arr = np.asarray(y)
    if arr.dtype.kind in "OUS":
        try:
            arr = arr.astype(np.float64)
        except ValueError:
            bad = [v for v in _plain(arr.ravel()) if not _is_float(v)][:5]
            raise InvalidDataError(f"{name}: labels must be numeric (0/1, -1/1 or class ids), got {bad}") from None
    arr = np.asarray(arr, dtype=np.float64).ravel()
    if arr.size and not np.all(np.isfinite(arr)):
        raise InvalidDataError(f"{name}: labels contain NaN or infinite values; every bag needs a label")
    if arr.size and not np.all(arr == np.round(arr)):
        raise InvalidDataError(f"{name}: labels must be integers (0/1, -1/1 or class ids 0..K-1), got "
                               f"{_plain(np.unique(arr)[:6])}")
    if arr.size and np.max(np.abs(arr)) >= 2 ** 31:
        raise InvalidDataError(f"{name}: labels must be 0/1, -1/1 or small class ids, got {_plain(np.max(np.abs(arr)))}")
    out = arr.astype(np.int64)
    vals = set(np.unique(out).tolist())
    if vals <= {-1, 1} and -1 in vals:
        out = (out > 0).astype(np.int64)
    elif -1 in vals or any(v < 0 for v in vals):
        raise InvalidDataError(f"{name}: negative class ids {sorted(vals)}; use 0/1, -1/1 or 0..K-1")
    return out


@dataclass(frozen=True, eq=False)
class Bags:
    """Multiple-instance data set.

    Parameters
    ----------
    X : ndarray, shape (n_instances, n_features)
        Instances, grouped contiguously by bag.
    bag_index : ndarray of int, shape (n_instances,)
        Bag (0..n_bags-1) of each instance; non-decreasing.
    y : ndarray of int, shape (n_bags,)
        Bag labels: 0/1 for binary MIL, 0..K-1 for multi-class MIL.
    instance_y : ndarray of int, shape (n_instances,), optional
        True instance labels when known.
    coords : ndarray, shape (n_instances, c), optional
        Instance coordinates (batch methods).
    samples : ndarray, shape (n_points, p), optional
        Points of distributional instances; instance i owns rows sample_ptr[i]:sample_ptr[i+1].
    sample_ptr : ndarray of int, shape (n_instances + 1,), optional
    bag_names : ndarray, shape (n_bags,), optional
        Original bag identifiers.
    name : str
        Data-set name (for reports).
    """

    X: np.ndarray
    bag_index: np.ndarray
    y: np.ndarray
    instance_y: np.ndarray | None = None
    coords: np.ndarray | None = None
    samples: np.ndarray | None = None
    sample_ptr: np.ndarray | None = None
    bag_names: np.ndarray | None = None
    name: str = "bags"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        X = _as_float_matrix(self.X)
        bi = np.asarray(self.bag_index)
        if bi.ndim != 1 or bi.shape[0] != X.shape[0]:
            raise InvalidDataError(
                f"bag_index: expected one bag id per instance ({X.shape[0]}), got shape {bi.shape}")
        bi = bi.astype(np.int64)
        y = normalise_labels(self.y, "y (bag labels)")
        nb = y.shape[0]
        if X.shape[0] == 0:
            raise InvalidDataError("X: the data set has no instances; give at least one bag with one instance")
        if not np.all(np.isfinite(X)):
            r, c = np.argwhere(~np.isfinite(X))[0]
            raise InvalidDataError(
                f"X: feature {c} of instance {r} is NaN or infinite; impute or drop it before fitting")
        if bi.size and (bi.min() < 0 or bi.max() >= nb):
            raise InvalidDataError(f"bag_index: ids must lie in 0..{nb - 1} (one label per bag), got range {bi.min()}..{bi.max()}")
        if np.any(np.diff(bi) < 0):
            raise InvalidDataError("bag_index: instances must be grouped by bag in increasing order; "
                                   "build Bags with Bags.from_arrays / from_frame / from_instances, which sort")
        counts = np.bincount(bi, minlength=nb)
        if np.any(counts == 0):
            empty = np.flatnonzero(counts == 0)[:5].tolist()
            raise InvalidDataError(f"bags {empty} are empty; every bag needs at least one instance (drop empty bags)")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "bag_index", bi)
        object.__setattr__(self, "y", y)
        if self.instance_y is not None:
            iy = normalise_labels(self.instance_y, "instance_y")
            if iy.shape[0] != X.shape[0]:
                raise InvalidDataError(f"instance_y: expected {X.shape[0]} labels, got {iy.shape[0]}")
            object.__setattr__(self, "instance_y", iy)
        if self.coords is not None:
            C = _as_float_matrix(self.coords, "coords")
            if C.shape[0] != X.shape[0]:
                raise InvalidDataError(f"coords: expected {X.shape[0]} rows (one per instance), got {C.shape[0]}")
            if not np.all(np.isfinite(C)):
                raise InvalidDataError("coords: contain NaN or infinite values")
            object.__setattr__(self, "coords", C)
        if self.samples is not None:
            S = _as_float_matrix(self.samples, "samples")
            sp = np.asarray(self.sample_ptr, dtype=np.int64) if self.sample_ptr is not None else None
            if sp is None or sp.shape != (X.shape[0] + 1,) or sp[0] != 0 or sp[-1] != S.shape[0] or np.any(np.diff(sp) <= 0):
                raise InvalidDataError("sample_ptr: expected n_instances+1 increasing offsets from 0 to len(samples), "
                                       "every instance with at least one point")
            object.__setattr__(self, "samples", S)
            object.__setattr__(self, "sample_ptr", sp)
        if self.bag_names is None:
            object.__setattr__(self, "bag_names", np.arange(nb))
        else:
            bn = np.asarray(self.bag_names)
            if bn.shape[0] != nb:
                raise InvalidDataError(f"bag_names: expected {nb} names, got {bn.shape[0]}")
            object.__setattr__(self, "bag_names", bn)

    # ------------------------------------------------------------------ sizes
    @property
    def n_bags(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_instances(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        return int(self.y.max()) + 1

    @property
    def bag_ptr(self) -> np.ndarray:
        """Offsets (n_bags + 1): bag j owns rows bag_ptr[j]:bag_ptr[j+1]."""
        ptr = np.zeros(self.n_bags + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.bag_index, minlength=self.n_bags), out=ptr[1:])
        return ptr

    @property
    def bag_sizes(self) -> np.ndarray:
        return np.bincount(self.bag_index, minlength=self.n_bags)

    @property
    def positive_bags(self) -> int:
        return int(np.sum(self.y == 1))

    @property
    def y_pm(self) -> np.ndarray:
        """Binary bag labels as -1/+1."""
        return np.where(self.y == 1, 1.0, -1.0)

    @property
    def instance_bag_y(self) -> np.ndarray:
        """Each instance's bag label (0/1), shape (n_instances,)."""
        return self.y[self.bag_index]

    # sklearn indexing protocol: a Bags object behaves as a sequence of bags.
    @property
    def shape(self):
        return (self.n_bags,)

    def __len__(self) -> int:
        return self.n_bags

    def __getitem__(self, key):
        if isinstance(key, tuple):
            key = key[0]
        idx = np.arange(self.n_bags)[key]
        return self.subset(np.atleast_1d(idx))

    def __repr__(self) -> str:
        extra = [k for k in ("instance_y", "coords", "samples") if getattr(self, k) is not None]
        return (f"Bags(name={self.name!r}, bags={self.n_bags}, positive_bags={self.positive_bags}, "
                f"instances={self.n_instances}, features={self.n_features}"
                + (f", with={extra}" if extra else "") + ")")

    # ---------------------------------------------------------------- derive
    def subset(self, bag_ids) -> "Bags":
        """The bags ``bag_ids`` (in that order), re-indexed 0..len-1."""
        ids = np.asarray(bag_ids, dtype=np.int64).ravel()
        ptr = self.bag_ptr
        sizes = ptr[ids + 1] - ptr[ids]
        starts = ptr[ids]
        # instance rows of the chosen bags, vectorised (no loop over bags)
        offs = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        rows = np.arange(int(sizes.sum())) + offs
        new_bi = np.repeat(np.arange(ids.size), sizes)
        samples = sample_ptr = None
        if self.samples is not None:
            sp = self.sample_ptr
            ssz = sp[rows + 1] - sp[rows]
            soffs = np.repeat(sp[rows] - np.concatenate(([0], np.cumsum(ssz)[:-1])), ssz)
            srows = np.arange(int(ssz.sum())) + soffs
            samples = self.samples[srows]
            sample_ptr = np.concatenate(([0], np.cumsum(ssz)))
        return Bags(X=self.X[rows], bag_index=new_bi, y=self.y[ids],
                    instance_y=None if self.instance_y is None else self.instance_y[rows],
                    coords=None if self.coords is None else self.coords[rows],
                    samples=samples, sample_ptr=sample_ptr,
                    bag_names=self.bag_names[ids], name=self.name, meta=dict(self.meta))

    def with_X(self, X) -> "Bags":
        """Same bags with a new instance matrix (e.g. standardised or mapped features)."""
        X = _as_float_matrix(X)
        if X.shape[0] != self.n_instances:
            raise InvalidDataError(f"with_X: expected {self.n_instances} rows, got {X.shape[0]}")
        return replace(self, X=X)

    def with_labels(self, y) -> "Bags":
        return replace(self, y=y)

    # ----------------------------------------------------------- constructors
    @classmethod
    def from_arrays(cls, bags: Sequence[Any], y, *, instance_y=None, coords=None, samples=None,
                    bag_names=None, name="bags") -> "Bags":
        """From a list of per-bag instance arrays (each n_j x d) and bag labels.

        ``instance_y`` and ``coords``, when given, are lists aligned with ``bags``. ``samples``
        is a list (per bag) of lists (per instance) of point arrays.
        """
        bags = list(bags)
        if len(bags) == 0:
            raise InvalidDataError("bags: the list is empty; give at least one bag")
        y = np.asarray(y).ravel()
        if y.shape[0] != len(bags):
            raise InvalidDataError(f"y: expected one label per bag ({len(bags)}), got {y.shape[0]}")
        mats = []
        d = None
        for j, b in enumerate(bags):
            try:
                B = np.asarray(b, dtype=np.float64)
            except (TypeError, ValueError):
                raise InvalidDataError(f"bag {j}: features must be numeric") from None
            if B.ndim == 1:
                B = B.reshape(1, -1) if B.size else B.reshape(0, 0)
            if B.shape[0] == 0:
                raise InvalidDataError(f"bag {j} is empty; every bag needs at least one instance (drop it)")
            if d is None:
                d = B.shape[1]
            elif B.shape[1] != d:
                raise InvalidDataError(f"bag {j}: has {B.shape[1]} features, bag 0 has {d}; all instances need the same features")
            mats.append(B)
        sizes = np.array([m.shape[0] for m in mats])
        X = np.vstack(mats)
        bi = np.repeat(np.arange(len(mats)), sizes)
        iy = None if instance_y is None else np.concatenate([np.asarray(v).ravel() for v in instance_y])
        C = None if coords is None else np.vstack([np.asarray(c, dtype=float).reshape(sizes[k], -1) for k, c in enumerate(coords)])
        S = sp = None
        if samples is not None:
            pts = [np.asarray(p, dtype=float) for bag in samples for p in bag]
            if len(pts) != X.shape[0]:
                raise InvalidDataError(f"samples: expected one point set per instance ({X.shape[0]}), got {len(pts)}")
            pts = [p.reshape(-1, 1) if p.ndim == 1 else p for p in pts]
            S = np.vstack(pts)
            sp = np.concatenate(([0], np.cumsum([p.shape[0] for p in pts])))
        return cls(X=X, bag_index=bi, y=y, instance_y=iy, coords=C, samples=S, sample_ptr=sp,
                   bag_names=bag_names, name=name)

    @classmethod
    def from_instances(cls, X, bag_ids, bag_labels_per_instance=None, *, bag_labels=None, instance_y=None,
                       coords=None, name="bags") -> "Bags":
        """From flat per-instance arrays: features, bag id of each instance (any hashable),
        and either the bag label repeated on each instance or a mapping ``bag_labels``.

        Instances are reordered stably by bag (bags in order of first appearance).  A bag whose
        instances carry different labels is refused.
        """
        X = _as_float_matrix(X)
        ids = np.asarray(bag_ids).ravel()
        if ids.shape[0] != X.shape[0]:
            raise InvalidDataError(f"bag ids: expected {X.shape[0]} (one per instance), got {ids.shape[0]}")
        if X.shape[0] == 0:
            raise InvalidDataError("X: no instances")
        uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        order_of_bags = np.argsort(first, kind="stable")
        rank = np.empty_like(order_of_bags)
        rank[order_of_bags] = np.arange(order_of_bags.size)
        bi = rank[inv]
        perm = np.argsort(bi, kind="stable")
        names = uniq[order_of_bags]
        if bag_labels_per_instance is not None:
            lab = normalise_labels(bag_labels_per_instance, "bag label column")
            if lab.shape[0] != X.shape[0]:
                raise InvalidDataError("bag label column: expected one value per instance")
            nb = names.size
            lo = np.full(nb, np.iinfo(np.int64).max)
            hi = np.full(nb, np.iinfo(np.int64).min)
            np.minimum.at(lo, bi, lab)
            np.maximum.at(hi, bi, lab)
            mixed = np.flatnonzero(lo != hi)
            if mixed.size:
                raise InvalidDataError(
                    f"bag {_plain(names[mixed[0]])!r} has instances with different bag labels ({lo[mixed[0]]} and "
                    f"{hi[mixed[0]]}); every instance row must repeat its bag's label")
            y = lo
        elif bag_labels is not None:
            try:
                y = np.array([bag_labels[n] for n in names])
            except KeyError as exc:
                raise InvalidDataError(f"bag_labels: no label for bag {_plain(exc.args[0])!r}") from None
        else:
            raise InvalidDataError("give bag labels: a per-instance label column or a bag_labels mapping")
        return cls(X=X[perm], bag_index=bi[perm], y=y,
                   instance_y=None if instance_y is None else np.asarray(instance_y)[perm],
                   coords=None if coords is None else _as_float_matrix(coords, "coords")[perm],
                   bag_names=names, name=name)

    @classmethod
    def from_frame(cls, df, *, bag="bag_id", label="label", features=None, instance_label=None,
                   coords=None, name="bags") -> "Bags":
        """From a long pandas frame with one row per instance.

        Parameters
        ----------
        df : pandas.DataFrame
        bag, label : str
            Columns of the bag id and the bag label (repeated on each row).
        features : list of str, optional
            Feature columns (default: every other column).
        instance_label, coords : str / list of str, optional
        """
        missing = [c for c in [bag, label] + list(features or []) if c not in df.columns]
        if missing:
            raise InvalidDataError(f"frame: columns {missing} not found; available: {list(df.columns)[:10]}")
        coord_cols = [coords] if isinstance(coords, str) else list(coords or [])
        if features is None:
            skip = {bag, label, instance_label, *coord_cols}
            features = [c for c in df.columns if c not in skip]
        feats = df[list(features)]
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        bad = [c for c in feats.columns if not is_numeric_dtype(feats[c]) or is_bool_dtype(feats[c])]
        if bad:
            raise InvalidDataError(f"frame: feature columns {bad[:5]} are not numeric; convert or drop them")
        return cls.from_instances(
            feats.to_numpy(dtype=np.float64), df[bag].to_numpy(), df[label].to_numpy(),
            instance_y=None if instance_label is None else df[instance_label].to_numpy(),
            coords=None if not coord_cols else df[coord_cols].to_numpy(dtype=np.float64), name=name)

    def to_frame(self):
        """Long pandas frame, one row per instance: ``label, bag_id[, coord0..], f0..f{d-1}[, instance_label]``.

        The columns are in the order of the headerless MIL CSV (label, bag id, features), and
        :func:`milopt.load` reads the frame back (by column name), as it reads
        :meth:`to_csv`'s file: ``load(bags.to_frame())`` gives the same bags.
        """
        import pandas as pd

        cols = {"label": self.y[self.bag_index], "bag_id": self.bag_names[self.bag_index]}
        if self.coords is not None:
            for k in range(self.coords.shape[1]):
                cols[f"coord{k}"] = self.coords[:, k]
        for k in range(self.n_features):
            cols[f"f{k}"] = self.X[:, k]
        if self.instance_y is not None:
            cols["instance_label"] = self.instance_y
        return pd.DataFrame(cols)

    def to_csv(self, path, *, header: bool = True) -> None:
        """Write the bags as a MIL CSV (``.gz`` compresses): with ``header=True`` the columns of
        :meth:`to_frame` under a header row; with ``header=False`` the headerless layout
        ``label, bag_id, features...`` (coordinates, if any, as the first feature columns: read
        back with ``coords=K``; instance labels are then not written).  Floats are written
        with full precision, so :func:`milopt.load` returns the same numbers."""
        df = self.to_frame()
        if not header and "instance_label" in df:
            df = df.drop(columns="instance_label")
        df.to_csv(path, header=header, index=False, float_format=None)
