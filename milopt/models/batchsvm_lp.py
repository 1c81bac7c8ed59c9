r"""BatchSVM: the 1-norm SVM linear program with batch constraints (Vural et al., eq. 4).

Vural, V., Fung, G., Krishnapuram, B., Dy, J. G. and Rao, B. "Using local dependencies within
batches to improve large margin classifiers." JMLR 10 (2009) 183--206.

In *batch classification* the instances (candidates) come in batches (here: bags, e.g. the
candidate locations of one image) and every instance carries its own label.  Instances of a
batch that are close in space tend to share their label.  Let batch :math:`j` have instance
matrix :math:`B^j` (:math:`m_j \times n`), labels :math:`d^j \in \{\pm1\}^{m_j}`,
:math:`D^j = \operatorname{diag}(d^j)`, and a within-batch similarity :math:`R^j`
(:math:`m_j \times m_j`, zero diagonal) built from the instance coordinates.  BatchSVM
classifies the whole batch with the *batch-wise* rule (eq. 5)

.. math::

    \hat d^j = \operatorname{sign}\bigl((\theta R^j + I)(B^j w - e\gamma)\bigr),

i.e. an instance's score is its own pre-classifier value plus θ times the similarity-weighted
values of its neighbours, and learns :math:`(w, \gamma)` with the 1-norm SVM LP (eq. 4)

.. math::

    \min_{w,\gamma,\xi,v}\; & \nu\, e^\top \xi + e^\top v \\
    \text{s.t.}\; & D^j\bigl[(\theta R^j + I)(B^j w - e\gamma)\bigr] + \xi^j \ge e,
                     \quad \xi^j \ge 0, \qquad j = 1..k, \\
                  & v \ge w \ge -v.

θ = 0 gives the plain 1-norm SVM (eq. 1).

**The similarity** (eq. 13).  With :math:`S_{pq}` the distance between the coordinates of
instances *p* and *q* of the same batch (Euclidean by default, as defined in Section 3.2;
``distance="squared"`` uses its square, the similarity
:math:`s(p, q) = \exp(-\lVert r_p - r_q\rVert^2/\zeta^2)` with :math:`\zeta^2 = 1/\alpha` that
the paper's experiments use, Section 5.1.1), :math:`R_{pq} = \exp(-\alpha S_{pq})` for
:math:`p \ne q` and :math:`R_{pp} = 0`.  BatchSVM thresholds it (``thresholded=True``, the paper's choice):
:math:`R_{pq} = 1` when :math:`\exp(-\alpha S_{pq}) \ge e^{-4}`, i.e. when
:math:`\alpha S_{pq} \le 4`, and 0 otherwise -- a neighbourhood graph of radius
:math:`4/\alpha`.  ``thresholded=False`` keeps the continuous values (BatchSVM_cont).
Instances of different batches are never related, so :math:`R = \operatorname{blockdiag}(R^j)`
is assembled once as one scipy.sparse matrix (a k-d tree finds the neighbour pairs of the
thresholded graph; the continuous version has dense blocks).

**Labels.**  Training labels are the instance labels ``Bags.instance_y`` when present (batch
classification labels every instance).  Data without instance labels (e.g. MUSK) use the
bag label copied to each of its instances (recorded in the model's metadata).

**Without coordinates** (e.g. MUSK1/MUSK2) there is no :math:`R^j`: with ``theta=0`` the
model is the plain 1-norm SVM and is built without coordinates; any other θ raises
:class:`~milopt.errors.InvalidDataError` ("batch method needs coordinates ...").

Class weights (not in the paper; ``class_weight="balanced"``) multiply ν for each instance by
:math:`m / (2 m_{\pm})`; the default ``"none"`` is eq. 4 as printed.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.core.expr.numeric_expr import LinearExpression

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.models._linear import add_linear_rows, var_list
from milopt.models.info import MILModel
from milopt.params import Bool, Choice, Float, ParamSet, parse_bool

#: problem class of the model :func:`build` returns (solvers are chosen by it)
PROBLEM_CLASS = "LP"

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    nu=Float(1.0, "cost of the slacks (nu e'xi)", gt=0),
    theta=Float(1.0, "weight of the neighbours in the batch rule (0 = plain 1-norm SVM, no coordinates needed)", ge=0),
    alpha=Float(0.5, "decay of R_pq = exp(-alpha S_pq); thresholded: neighbours within distance 4/alpha", gt=0),
    thresholded=Bool(True, "R_pq in {0,1} (eq. 13, BatchSVM) or continuous (BatchSVM_cont)"),
    distance=Choice("euclidean", ("euclidean", "squared", "sqeuclidean"),
                    "S_pq: euclidean (Sec. 3.2) | squared (Sec. 5.1.1: exp(-alpha |r_p - r_q|^2); alias sqeuclidean)"),
    class_weight=Choice("none", ("none", "balanced"), "none (eq. 4) | balanced (nu scaled by m / (2 m_class))"),
)

#: the threshold of eq. 13: R_pq = 1 iff exp(-alpha S_pq) >= e^{-4}
THRESHOLD_LOG = 4.0

NO_COORDS_MSG = ("batch method needs coordinates: use --set coords=K (the first K feature columns of the CSV "
                 "are coordinates) or a generator with coordinates (gen:cad); theta=0 gives the plain 1-norm SVM "
                 "without coordinates")


# ----------------------------------------------------------------------------- helpers
def check_positive(name: str, value, allow_zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name}: expected a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InvalidParameterError(f"{name}: expected a {'non-negative' if allow_zero else 'positive'} finite "
                                    f"number, got {value!r}")
    return v


def check_theta(theta) -> float:
    try:
        t = float(theta)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"theta: expected a number, got {theta!r}") from None
    if not np.isfinite(t):
        raise InvalidParameterError(f"theta: expected a finite number, got {theta!r}")
    return t


def training_labels(bags: Bags) -> tuple[np.ndarray, str]:
    """±1 instance labels for training and where they came from.

    ``instance_y`` when present, otherwise each instance takes its bag's label.
    """
    if bags.n_classes > 2:
        raise InvalidDataError("batch methods: binary labels (0/1) are required")
    if bags.instance_y is not None:
        return np.where(bags.instance_y == 1, 1.0, -1.0), "instance_y"
    return np.where(bags.instance_bag_y == 1, 1.0, -1.0), "bag label copied to instances"


def require_coords(bags: Bags) -> np.ndarray:
    if bags.coords is None:
        raise InvalidDataError(NO_COORDS_MSG)
    return bags.coords


#: accepted names of the distance S_pq -> canonical name
DISTANCES = {"euclidean": "euclidean", "squared": "squared", "sqeuclidean": "squared"}


def canonical_distance(distance) -> str:
    """'euclidean' (Section 3.2) or 'squared' (Section 5.1.1; alias 'sqeuclidean')."""
    if distance not in DISTANCES:
        raise InvalidParameterError(f"distance: expected 'euclidean' or 'squared' (alias 'sqeuclidean'), "
                                    f"got {distance!r}")
    return DISTANCES[distance]


def _distance_fn(distance: str):
    if canonical_distance(distance) == "euclidean":
        return lambda sq: np.sqrt(sq)
    return lambda sq: sq


def within_batch_pairs(ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs (p, q), p != q, of instances of the same batch (vectorised).

    Memory is sum_j m_j^2: meant for the continuous (dense-block) similarity.
    """
    sizes = np.diff(ptr)
    sq = sizes * sizes
    total = int(sq.sum())
    bag = np.repeat(np.arange(sizes.size), sq)
    k = np.arange(total) - np.repeat(np.concatenate(([0], np.cumsum(sq)[:-1])), sq)
    s = sizes[bag]
    p = ptr[bag] + k // s
    q = ptr[bag] + k % s
    keep = p != q
    return p[keep], q[keep]


def similarity(bags: Bags, alpha: float = 0.5, thresholded: bool = True, distance: str = "euclidean") -> sp.csr_matrix:
    """Block-diagonal within-batch similarity R (n_instances x n_instances, zero diagonal).

    Parameters
    ----------
    bags : Bags
        Must carry ``coords``.
    alpha : float
        Decay rate: R_pq = exp(-alpha S_pq).
    thresholded : bool
        True: R_pq = 1 when alpha S_pq <= 4 (eq. 13), else 0.  False: continuous values.
    distance : {'euclidean', 'squared'}
        Definition of S_pq ('sqeuclidean' is accepted for 'squared').
    """
    C = require_coords(bags)
    alpha = check_positive("alpha", alpha)
    dist = _distance_fn(distance)
    n = bags.n_instances
    ptr = bags.bag_ptr
    if thresholded:
        from scipy.spatial import cKDTree

        # S_pq <= 4/alpha  <=>  Euclidean distance <= r
        smax = THRESHOLD_LOG / alpha
        r = smax if canonical_distance(distance) == "euclidean" else np.sqrt(smax)
        # separate batches along an extra axis so that no pair crosses batches
        span = float(np.ptp(C, axis=0).max()) if n > 1 else 0.0
        sep = (span + r) * 4.0 + 1.0
        Z = np.hstack([C, (bags.bag_index * sep)[:, None]])
        pairs = cKDTree(Z).query_pairs(r, output_type="ndarray")
        p = np.concatenate([pairs[:, 0], pairs[:, 1]]) if pairs.size else np.zeros(0, dtype=np.int64)
        q = np.concatenate([pairs[:, 1], pairs[:, 0]]) if pairs.size else np.zeros(0, dtype=np.int64)
        vals = np.ones(p.size)
    else:
        p, q = within_batch_pairs(ptr)
        diff = C[p] - C[q]
        vals = np.exp(-alpha * dist(np.einsum("ij,ij->i", diff, diff)))
    return sp.csr_matrix((vals, (p, q)), shape=(n, n))


def batch_operator(bags: Bags, theta: float = 1.0, alpha: float = 0.5, thresholded: bool = True,
                   distance: str = "euclidean") -> sp.csr_matrix:
    """P = blockdiag(theta R^j + I) as a sparse matrix; the identity when theta == 0 (no coordinates needed)."""
    theta = check_theta(theta)
    n = bags.n_instances
    eye = sp.identity(n, format="csr")
    if theta == 0.0:
        return eye
    return (theta * similarity(bags, alpha, thresholded, distance) + eye).tocsr()


def class_costs(d: np.ndarray, nu: float, class_weight="none") -> np.ndarray:
    """Per-instance slack costs."""
    nu = check_positive("nu", nu)
    if class_weight in (None, "none", "None", False):
        return np.full(d.size, nu)
    if class_weight == "balanced":
        m = d.size
        npos = max(int(np.sum(d > 0)), 1)
        nneg = max(int(np.sum(d < 0)), 1)
        return np.where(d > 0, nu * m / (2 * npos), nu * m / (2 * nneg))
    raise InvalidParameterError(f"class_weight: expected 'none' or 'balanced', got {class_weight!r}")


def build_lp(bags: Bags, P, nu: float, class_weight, name: str, meta: dict) -> MILModel:
    """The LP  min nu e'xi + e'v  s.t.  D P (B w - e gamma) + xi >= e,  -v <= w <= v,  xi >= 0.

    ``P`` is the (sparse or dense) block-diagonal operator applied to the pre-classifier values:
    theta R + I for BatchSVM, V for BatchProb.
    """
    d, label_source = training_labels(bags)
    X = bags.X
    m, n = X.shape
    costs = class_costs(d, nu, class_weight)
    P = sp.csr_matrix(P)
    PB = np.asarray(P @ X)                      # m x n, dense rows (features are dense)
    Pe = np.asarray(P.sum(axis=1)).ravel()      # P e
    DPB = PB * d[:, None]
    DPe = Pe * d

    mdl = MILModel(name=name)
    mdl.F = pe.RangeSet(0, n - 1)
    mdl.I = pe.RangeSet(0, m - 1)
    mdl.w = pe.Var(mdl.F, initialize=0.0)
    mdl.gamma = pe.Var(initialize=0.0)
    mdl.xi = pe.Var(mdl.I, domain=pe.NonNegativeReals, initialize=1.0)
    mdl.v = pe.Var(mdl.F, domain=pe.NonNegativeReals, initialize=0.0)
    vars_ = var_list(mdl.w, mdl.gamma, mdl.xi, mdl.v)
    nv = len(vars_)

    # batch rows: D P B w - D P e gamma + xi >= 1
    A = sp.hstack([sp.csr_matrix(DPB), sp.csr_matrix(-DPe[:, None]), sp.identity(m, format="csr"),
                   sp.csr_matrix((m, n))], format="csr")
    add_linear_rows(mdl, "batch", A, vars_, lb=1.0)
    # v - w >= 0 and v + w >= 0
    In = sp.identity(n, format="csr")
    Z1 = sp.csr_matrix((n, 1 + m))
    add_linear_rows(mdl, "v_upper", sp.hstack([-In, Z1, In], format="csr"), vars_, lb=0.0)
    add_linear_rows(mdl, "v_lower", sp.hstack([In, Z1, In], format="csr"), vars_, lb=0.0)

    coefs = np.concatenate([np.zeros(n + 1), costs, np.ones(n)])
    nzc = np.flatnonzero(coefs)
    mdl.obj = pe.Objective(expr=LinearExpression(constant=0.0, linear_coefs=coefs[nzc].tolist(),
                                                 linear_vars=[vars_[j] for j in nzc]), sense=pe.minimize)
    assert nv == 2 * n + 1 + m
    mdl._milopt.problem_class = PROBLEM_CLASS
    mdl._milopt.meta = {"n_features": n, "instances": m, "labels": label_source, "costs": costs, **meta}
    mdl._milopt.bags = bags
    return mdl


# ----------------------------------------------------------------------------- model
def build(bags: Bags, nu: float = 1.0, theta: float = 1.0, alpha: float = 0.5, thresholded=True,
          distance: str = "euclidean", class_weight="none", **unused) -> MILModel:
    """Build the BatchSVM LP (eq. 4) for ``bags``.

    Parameters
    ----------
    bags : Bags
        Binary data; ``coords`` needed unless ``theta == 0``; ``instance_y`` used as labels when
        present (else bag labels copied to instances).
    nu : float
        Slack cost ν.
    theta : float
        Neighbour weight θ (0: plain 1-norm SVM, eq. 1).
    alpha : float
        Similarity decay α of R_pq = exp(-α S_pq).
    thresholded : bool
        Eq. 13 0/1 neighbourhood (BatchSVM) or continuous R (BatchSVM_cont).
    distance : {'euclidean', 'squared'}
    class_weight : {'none', 'balanced'}

    Returns
    -------
    pyomo ConcreteModel with variables ``w``, ``gamma``, ``xi``, ``v``, constraints ``batch``,
    ``v_upper``, ``v_lower`` and objective ``obj``.
    """
    if unused:
        raise InvalidParameterError(f"batchsvm-lp: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)}")
    theta = check_theta(theta)
    thresholded = parse_bool("thresholded", thresholded)
    if theta != 0.0:
        require_coords(bags)
    P = batch_operator(bags, theta, alpha, thresholded, distance)
    return build_lp(bags, P, nu, class_weight, "batchsvm_lp",
                    {"theta": theta, "alpha": float(alpha), "thresholded": thresholded, "distance": distance,
                     "neighbour_pairs": int(P.nnz - bags.n_instances) if theta != 0 else 0})


def decode(model) -> dict:
    """Learned classifier: w, gamma, slacks xi, the bound v, and the LP parameters."""
    n = model._milopt.meta["n_features"]
    m = model._milopt.meta["instances"]
    w = np.array([pe.value(model.w[k], exception=False) or 0.0 for k in range(n)])
    gamma = float(pe.value(model.gamma, exception=False) or 0.0)
    xi = np.array([pe.value(model.xi[i], exception=False) or 0.0 for i in range(m)])
    v = np.array([pe.value(model.v[k], exception=False) or 0.0 for k in range(n)])
    meta = model._milopt.meta
    out = {"w": w, "gamma": gamma, "xi": xi, "v": v, "labels": meta["labels"]}
    for key in ("theta", "alpha", "thresholded", "distance", "sigma"):
        if key in meta:
            out[key] = meta[key]
    return out


def objective_value(bags: Bags, w, gamma, P, nu=1.0, class_weight="none") -> float:
    """Value of ν Σ c_i ξ_i + ‖w‖₁ at (w, γ) with optimal slacks, for the operator ``P``."""
    d, _ = training_labels(bags)
    costs = class_costs(d, nu, class_weight)
    f = np.asarray(P @ (bags.X @ np.asarray(w) - gamma)).ravel()
    xi = np.maximum(0.0, 1.0 - d * f)
    return float(np.dot(costs, xi) + np.abs(w).sum())
