r"""A seeded generator of CAD-like batch data (``gen:cad``).

Computer-aided detection (CAD) produces, for every image (a *batch*, stored as a bag), a set
of candidate locations with a feature vector each.  The real data of Vural et al., "Using local
dependencies within batches to improve large margin classifiers" (JMLR 2009, Section 5.3)
are not public; this generator has the structure their batch methods exploit.

Per image (``images`` of them), in a field :math:`[0, L]^{dim}` (``extent`` L, ``dim`` 2 or 3):

* **Lesions.**  The number of lesions is Poisson(``lesions``); each has a centre drawn
  uniformly (at least ``radius`` from the border) and a *strength* :math:`s \sim U(s_{lo}, 1)`
  shared by all its candidates (``weak`` = :math:`s_{lo}`).  A lesion produces
  :math:`2 + \text{Poisson}(\texttt{per\_lesion} - 2)` candidates placed around its centre
  (direction uniform, distance :math:`\texttt{radius}\cdot U^{1/dim}`: uniform in the ball).
* **Background candidates.**  About ``candidates`` per image, in clusters around benign
  structures (a CAD candidate generator fires several times on one structure): Poisson
  (``candidates``/``cluster``) cluster centres per image, uniform but more than 2·``radius``
  from every lesion centre (rejection sampling), each with :math:`1 + \text{Poisson}(\texttt{cluster} - 1)`
  candidates uniform in the ball of radius ``radius`` around it.  Positive and negative
  candidates thus have neighbours alike; what differs is that a lesion's neighbours share its
  label *and its strength*.  A fraction ``lookalike`` of the background candidates are
  *look-alikes*: each has features imitating a lesion candidate (its own strength drawn like
  a lesion's), but its cluster neighbours are ordinary negatives.
* **Features** (``features`` columns, the first ``informative`` of them informative): every
  candidate gets :math:`x = \mu\, s\, a + \varepsilon`, where :math:`a` is a fixed random unit
  direction over the informative columns (scaled so that ``separation`` is the mean shift of a
  strength-1 lesion candidate), :math:`s` is the lesion strength for a positive candidate, the
  look-alike strength for a look-alike, 0 otherwise, and :math:`\varepsilon \sim N(0, I)` is
  independent per candidate (``noise`` scales it).  Features alone therefore separate the
  classes only partly; the candidates of one lesion are close to each other, so pooling the
  evidence of spatial neighbours (what BatchSVM does) carries information beyond each
  candidate's own features, and it demotes isolated look-alikes.

**Label rule** (tested): a candidate is positive (``instance_y = 1``) if and only if it lies
within distance ``radius`` of a lesion centre of its own image; every lesion candidate does,
every background candidate does not.  An image (bag) is positive iff it has at least one
lesion.  Both classes of images are guaranteed (image 0 gets a lesion if none has one; the
last image loses its lesions if all have some).

Outputs: ``coords`` (n x dim), ``instance_y``, and in ``meta``: ``lesion_id`` (flat, per
candidate, -1 for negatives; lesion ids are global), ``lesion_ptr`` (offsets of the images in
that flat array, indexed by the original image number = ``bag_names``), ``lesion_centers``
(n_lesions x dim), ``lesion_image``.  :func:`milopt.froc.lesion_ids` recovers the lesion id of
every candidate of any subset of images.
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.data.registry import register_generator
from milopt.errors import InvalidParameterError


def _ball(rng, k: int, dim: int, radius: float) -> np.ndarray:
    """k points uniform in the ball of the given radius (centred at 0)."""
    g = rng.standard_normal((k, dim))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    r = radius * rng.random(k) ** (1.0 / dim)
    return g * r[:, None]


def cad(images=40, features=30, dim=2, candidates=60, cluster=4.0, lesions=1.0, per_lesion=4.0, radius=4.0, extent=100.0,
        informative=10, separation=2.0, weak=0.2, lookalike=0.1, noise=1.0, seed=0) -> Bags:
    """CAD-like images with spatially clustered positive candidates (see module docstring).

    Parameters
    ----------
    images : int
        Number of images (batches / bags), >= 2.
    features : int
        Feature columns (the paper's data: 15--75).
    dim : {2, 3}
        Dimension of the candidate coordinates.
    candidates : float
        Mean number of background (negative) candidates per image.
    cluster : float
        Mean size of a background cluster (>= 1; 1 gives isolated candidates).
    lesions : float
        Mean number of lesions per image (Poisson).
    per_lesion : float
        Mean number of candidates per lesion (>= 2).
    radius : float
        Lesion radius: candidates of a lesion lie within it; background candidates outside it.
    extent : float
        Side of the image field.
    informative : int
        Number of informative feature columns (<= features).
    separation : float
        Norm of the mean feature shift of a strength-1 lesion candidate.
    weak : float
        Lowest lesion strength (strength ~ U(weak, 1)).
    lookalike : float
        Fraction of background candidates with lesion-like features.
    noise : float
        Standard deviation of the per-candidate feature noise.
    seed : int
    """
    for name, v, lo in (("images", images, 2), ("features", features, 1), ("informative", informative, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise InvalidParameterError(f"{name}: expected an integer >= {lo}, got {v!r}")
    if dim not in (2, 3):
        raise InvalidParameterError(f"dim: expected 2 or 3, got {dim!r}")
    if informative > features:
        raise InvalidParameterError(f"informative: at most features={features}, got {informative}")
    if not cluster >= 1:
        raise InvalidParameterError(f"cluster: expected a mean cluster size >= 1, got {cluster}")
    if not per_lesion >= 2:
        raise InvalidParameterError(f"per_lesion: expected a mean >= 2 candidates per lesion, got {per_lesion}")
    for name, v in (("candidates", candidates), ("lesions", lesions), ("radius", radius), ("extent", extent),
                    ("separation", separation), ("noise", noise)):
        if not (np.isfinite(v) and v > 0):
            raise InvalidParameterError(f"{name}: expected a positive number, got {v!r}")
    if not 0 <= weak <= 1 or not 0 <= lookalike <= 1:
        raise InvalidParameterError(f"weak and lookalike: expected values in [0, 1], got {weak}, {lookalike}")
    if extent <= 4 * radius:
        raise InvalidParameterError(f"extent: must exceed 4 x radius ({4 * radius}), got {extent}")
    rng = np.random.default_rng(seed)

    # --- lesions per image (both image classes guaranteed)
    n_les = rng.poisson(lesions, size=images)
    if n_les.max() == 0:
        n_les[0] = 1
    if n_les.min() > 0:
        n_les[-1] = 0
    L = int(n_les.sum())
    les_img = np.repeat(np.arange(images), n_les)
    centers = radius + rng.random((L, dim)) * (extent - 2 * radius)
    strength = rng.uniform(weak, 1.0, size=L)
    k_les = 2 + rng.poisson(per_lesion - 2, size=L)
    les_of_pos = np.repeat(np.arange(L), k_les)
    pos_xy = centers[les_of_pos] + _ball(rng, les_of_pos.size, dim, radius * (1 - 1e-9))

    # --- background (negative) candidates: clusters around benign structures, as a CAD
    # candidate generator fires several times on one structure.  Cluster centres are redrawn
    # until they lie more than 2 radius from every lesion centre of their image, so every
    # negative candidate is farther than radius from every lesion centre.
    n_clu = rng.poisson(candidates / cluster, size=images)
    clu_img = np.repeat(np.arange(images), n_clu)
    clu_xy = radius + rng.random((clu_img.size, dim)) * (extent - 2 * radius)
    from scipy.spatial import cKDTree

    sep = 10.0 * extent
    tree = cKDTree(np.hstack([centers, (les_img * sep)[:, None]])) if L else None
    todo = np.arange(clu_img.size)
    for _ in range(1000):
        if not todo.size or tree is None:
            break
        dmin, _ = tree.query(np.hstack([clu_xy[todo], (clu_img[todo] * sep)[:, None]]))
        bad = todo[dmin <= 2 * radius]
        clu_xy[bad] = radius + rng.random((bad.size, dim)) * (extent - 2 * radius)
        todo = bad
    else:
        raise InvalidParameterError("lesions/radius: lesions cover the image field; lower lesions or radius, "
                                    "or raise extent")
    k_clu = 1 + rng.poisson(cluster - 1, size=clu_img.size)
    clu_of_bg = np.repeat(np.arange(clu_img.size), k_clu)
    bg_img = clu_img[clu_of_bg]
    bg_xy = clu_xy[clu_of_bg] + _ball(rng, clu_of_bg.size, dim, radius * (1 - 1e-9))
    is_look = rng.random(bg_img.size) < lookalike
    look_strength = np.where(is_look, rng.uniform(weak, 1.0, size=bg_img.size), 0.0)

    # --- features
    a = np.zeros(features)
    a[:informative] = rng.standard_normal(informative)
    a *= separation / np.linalg.norm(a)
    s_all = np.concatenate([strength[les_of_pos], look_strength])
    img = np.concatenate([les_img[les_of_pos], bg_img])
    xy = np.concatenate([pos_xy, bg_xy])
    lesion_id = np.concatenate([les_of_pos, np.full(bg_img.size, -1)])
    X = s_all[:, None] * a[None, :] + noise * rng.standard_normal((img.size, features))
    # group by image, shuffle inside images
    order = np.lexsort((rng.random(img.size), img))
    img, xy, X, lesion_id = img[order], xy[order], X[order], lesion_id[order]
    inst_y = (lesion_id >= 0).astype(np.int64)
    counts = np.bincount(img, minlength=images)
    if np.any(counts == 0):
        raise InvalidParameterError("candidates: some images got no candidate; raise candidates")
    y = np.zeros(images, dtype=np.int64)
    np.maximum.at(y, img, inst_y)
    ptr = np.concatenate(([0], np.cumsum(counts)))
    return Bags(X=X, bag_index=img, y=y, instance_y=inst_y, coords=xy, name=f"cad{dim}d",
                meta={"generator": "cad", "seed": seed, "lesion_id": lesion_id, "lesion_ptr": ptr,
                      "lesion_centers": centers, "lesion_image": les_img, "radius": float(radius)})


register_generator("cad", cad, "CAD-like images: candidates with 2-D/3-D coords, clustered positive lesion "
                   "candidates, look-alike negatives: images, features, dim, candidates, lesions, per_lesion, "
                   "cluster, radius, informative, separation, lookalike, noise, seed")
