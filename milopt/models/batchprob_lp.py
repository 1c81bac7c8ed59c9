r"""BatchProb: the probabilistic batch LP (Vural et al., JMLR 2009, eqs. 8--12).

Vural, V., Fung, G., Krishnapuram, B., Dy, J. G. and Rao, B. "Using local dependencies within
batches to improve large margin classifiers." JMLR 10 (2009) 183--206.

The probabilistic view: in batch :math:`j` the unknown "true" classifier outputs :math:`u^j`
have a Gaussian prior whose covariance encodes spatial proximity (eq. 8),
:math:`u^j \sim N(0, R^j)` with :math:`R^j_{pq} = \exp(-\alpha S_{pq})` (unit diagonal), and
the linear pre-classifier values :math:`z^j = B^j w - e\gamma` are noisy observations of them,
:math:`z^j \mid u^j \sim N(u^j, \sigma^2 I)`.  The posterior mean of :math:`u^j` is

.. math::

    E[u^j \mid z^j] = V^j z^j, \qquad
    V^j = \bigl((R^j)^{-1}\sigma^2 + I\bigr)^{-1} = R^j (R^j + \sigma^2 I)^{-1},

and the batch-wise rule (eq. 11) classifies with :math:`\operatorname{sign}(V^j(B^jw - e\gamma))`.
Training replaces :math:`(\theta R^j + I)` in the BatchSVM LP by :math:`V^j` (eq. 12):

.. math::

    \min_{w,\gamma,\xi,v}\; \nu\, e^\top\xi + e^\top v \quad \text{s.t.}\quad
    D^j V^j (B^j w - e\gamma) + \xi^j \ge e,\ \xi \ge 0,\ v \ge w \ge -v.

**Computing V without an inverse.**  :math:`R^j` is a kernel matrix (exponential of a distance:
positive semi-definite), so :math:`R^j = Q \Lambda Q^\top` and
:math:`V^j = Q\,\operatorname{diag}\bigl(\lambda_i / (\lambda_i + \sigma^2)\bigr)\,Q^\top`.
This needs neither :math:`(R^j)^{-1}` (which does not exist when two candidates share a
location, and is badly conditioned when they are close) nor any other inverse; the
eigen-decompositions of all batches of one size are computed in one stacked call.  **Documented
regularisation:** rounding can make tiny eigenvalues of :math:`R^j` slightly negative; they are
clipped at 0 (the projection of :math:`R^j` onto the PSD cone), so :math:`V^j` always has its
eigenvalues in :math:`[0, 1)`.  :math:`\sigma` must be positive (σ → 0 gives V → I on the range
of R).  This is the continuous limit of singular R: duplicate coordinates simply average their
candidates' values.

**Written to a grid.** LAPACK's eigen-decomposition differs in its last bits between library
versions, so the LP uses :math:`V^j` rounded to a multiple of :math:`2^{-24}` (entries in
:math:`[0, 1)`; absolute change below :math:`3\cdot 10^{-8}`): the model's numbers, and the bytes
of its ``.mps``, are then the same with every numpy / SciPy / LAPACK in the supported ranges
(:func:`posterior_operator` itself returns the unrounded operator).

Labels and the missing-coordinates rule are those of :mod:`milopt.models.batchsvm_lp`
(instance labels when present, otherwise the bag label copied; coordinates required).
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.params import Choice, Float, ParamSet
from milopt.models.batchsvm_lp import (_distance_fn, build_lp, check_positive, decode as _decode,
                                       require_coords)

#: problem class of the model :func:`build` returns (solvers are chosen by it)
PROBLEM_CLASS = "LP"

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    nu=Float(1.0, "cost of the slacks (nu e'xi)", gt=0),
    alpha=Float(0.5, "decay of the prior covariance R_pq = exp(-alpha S_pq)", gt=0),
    sigma=Float(1.0, "noise standard deviation of the pre-classifier values", gt=0),
    distance=Choice("euclidean", ("euclidean", "squared", "sqeuclidean"), "S_pq: euclidean | squared (alias sqeuclidean)"),
    class_weight=Choice("none", ("none", "balanced"), "none (eq. 12) | balanced"),
)


def _posterior_blocks(C, ptr, sizes, s, alpha, sigma, dist, rows, cols, vals, stats):
    """V blocks of all batches of size ``s`` (one stacked eigen-decomposition)."""
    ids = np.flatnonzero(sizes == s)
    idx = ptr[ids][:, None] + np.arange(s)[None, :]          # (k, s) instance rows
    Cb = C[idx]                                               # (k, s, c)
    diff = Cb[:, :, None, :] - Cb[:, None, :, :]             # exact zeros on the diagonal
    R = np.exp(-alpha * dist(np.einsum("kpqc,kpqc->kpq", diff, diff)))
    lam, Q = np.linalg.eigh(R)
    stats["min_eigenvalue"] = min(stats["min_eigenvalue"], float(lam.min()))
    neg = lam < 0
    stats["clipped_eigenvalues"] += int(neg.sum())
    lam = np.where(neg, 0.0, lam)
    shrink = lam / (lam + sigma * sigma)
    V = (Q * shrink[:, None, :]) @ np.swapaxes(Q, 1, 2)
    rows.append(np.repeat(idx, s, axis=1).ravel())
    cols.append(np.tile(idx, (1, s)).ravel())
    vals.append(V.ravel())


def posterior_operator(bags: Bags, alpha: float = 0.5, sigma: float = 1.0, distance: str = "euclidean",
                       return_info: bool = False):
    """V = blockdiag(R^j (R^j + sigma^2 I)^{-1}) as a sparse matrix (dense blocks).

    Parameters
    ----------
    bags : Bags
        With ``coords``.
    alpha, sigma : float
        Prior decay and observation noise.
    distance : {'euclidean', 'squared'}
    return_info : bool
        Also return a dict with the number of clipped eigenvalues and the smallest eigenvalue.

    Notes
    -----
    Batches of equal size are processed together by one stacked ``numpy.linalg.eigh``; the
    loop runs over distinct batch sizes, not over instances.
    """
    C = require_coords(bags)
    alpha = check_positive("alpha", alpha)
    sigma = check_positive("sigma", sigma)
    dist = _distance_fn(distance)
    ptr = bags.bag_ptr
    sizes = np.diff(ptr)
    n = bags.n_instances
    rows, cols, vals = [], [], []
    stats = {"clipped_eigenvalues": 0, "min_eigenvalue": np.inf}
    # the blocks are small: multi-threaded BLAS only adds overhead (measured 20-40x slower on a
    # loaded 2-core machine), so LAPACK runs single-threaded here
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        for s in np.unique(sizes):
            _posterior_blocks(C, ptr, sizes, s, alpha, sigma, dist, rows, cols, vals, stats)

    V = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    if return_info:
        return V, stats
    return V


def build(bags: Bags, nu: float = 1.0, alpha: float = 0.5, sigma: float = 1.0, distance: str = "euclidean",
          class_weight="none", **unused) -> pe.ConcreteModel:
    """Build the BatchProb LP (eq. 12).

    Parameters
    ----------
    bags : Bags
        Binary data with ``coords`` (required); ``instance_y`` used as labels when present.
    nu : float
        Slack cost ν.
    alpha : float
        Prior covariance decay α.
    sigma : float
        Observation noise σ (> 0).
    distance : {'euclidean', 'squared'}
    class_weight : {'none', 'balanced'}
    """
    if unused:
        raise InvalidParameterError(f"batchprob-lp: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)}")
    require_coords(bags)
    V, info = posterior_operator(bags, alpha, sigma, distance, return_info=True)
    V.data = np.round(V.data * 2.0 ** 24) / 2.0 ** 24     # the grid of the module docstring: byte-stable
    return build_lp(bags, V, nu, class_weight, "batchprob_lp",
                    {"alpha": float(alpha), "sigma": float(sigma), "distance": distance, **info})


def decode(model) -> dict:
    """Learned classifier: w, gamma, slacks xi, bound v, and alpha/sigma."""
    return _decode(model)
