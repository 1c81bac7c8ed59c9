r"""Kernel MI-SVM as a big-M mixed-integer QP in the representer form (Andrews et al. 2002; Kent & Yu, eqs. 1 and 5).

MI-SVM (Andrews, Tsochantaridis & Hofmann, NIPS 2002; with one slack per bag as in Kent & Yu's
problem (1), the non-convex SVM in a feature space) with a kernel
:math:`K(x, x') = \langle\phi(x), \phi(x')\rangle` seeks :math:`f(x) = \langle w, \phi(x)\rangle + b`
in the feature space of K.  By the representer theorem an optimal w lies in the span of the
training instances, :math:`w = \sum_j \beta_j \phi(z_j)`, so that
:math:`f(z_i) = (K\beta)_i + b` and :math:`\lVert w\rVert^2 = \beta^\top K \beta`.  Substituting
into the big-M model of Kent & Yu (eq. 5, ``milopt/models/misvm_bigm.py``) gives, over
:math:`\beta \in \mathbb{R}^n`, b, one slack per bag and one binary per positive-bag instance,

.. math::

    \min_{\beta, b, \xi, \zeta}\; & \tfrac12 \beta^\top K \beta + \sum_I C_I \xi_I \\
    \text{s.t.}\; & -((K\beta)_i + b) \ge 1 - \xi_I, && i \in I,\ Y_I = -1, \\
    & (K\beta)_i + b \ge 1 - \xi_I - L_{I,i}\,\zeta_{I,i}, && i \in I,\ Y_I = +1, \\
    & \textstyle\sum_{i \in I} \zeta_{I,i} \le |I| - 1, && Y_I = +1, \\
    & \xi_I \ge 0,\ \zeta_{I,i} \in \{0, 1\}.

The objective's Hessian is the Gram matrix K (positive semidefinite, so the continuous
relaxation is a convex QP); it is held as a matrix (``add_quadratic_objective``),
so export writes the ``β`` block of the QUADOBJ section straight from K.  The margin rows are
dense in β (row i holds the row i of K).  With the linear kernel :math:`K = ZZ^\top` the model
has the optimum of ``misvm-bigm`` (w = Zᵀβ).  (Kent & Yu note that eq. 5 cannot take a kernel whose
feature map is not a finite vector and approximate the map by Nyström features; the representer
form needs no approximation, at the price of n dense margin rows and an n × n Hessian.)

**Equivalence.**  Every (β, b) gives the point :math:`w = \sum_j \beta_j\phi(z_j)` of the
feature-space problem with the same scores and the same norm.  Conversely, writing
:math:`w = w_\parallel + w_\perp` (the part in the span of the :math:`\phi(z_j)` and the rest),
:math:`w_\perp` changes no score and only adds :math:`\tfrac12\lVert w_\perp\rVert^2`, so the
feature-space optimum has :math:`w_\perp = 0` and is reached by some β.  A singular K makes β
non-unique, never the optimum value.

**A provably valid big-M.**  The trivial points :math:`\beta = 0,\ b \in \{-1, 0, 1\}` bound the
optimum by :math:`F_0 = \min(\sum_I C_I,\ 2\sum_{Y_I=+1} C_I,\ 2\sum_{Y_I=-1} C_I)`; a better
feasible objective F (the kernel MI-SVM alternation with ``warm_start``, or ``upper_bound``)
replaces it.  At any point with objective at most F, :math:`\tfrac12\lVert w\rVert^2 \le F`, so
:math:`\lVert w\rVert \le W = \sqrt{2F}`.  In a positive bag whose witness is *j*,
:math:`f(z_j) \ge 1 - \xi_I`, and by Cauchy–Schwarz in the feature space

.. math::

    f(z_i) = f(z_j) + \langle w, \phi(z_i) - \phi(z_j)\rangle
    \ge 1 - \xi_I - W\, d_K(z_i, z_j), \qquad
    d_K(z_i, z_j) = \sqrt{K_{ii} + K_{jj} - 2K_{ij}} .

The witness is not known, so :math:`L_{I,i} = W \max_{j \in I} d_K(z_i, z_j)` (the largest
feature-space distance from :math:`z_i` to an instance of its bag, computed exactly from the
bag's block of K) keeps every solution of objective at most F feasible, among them every
optimum.  For the RBF kernel :math:`d_K \le \sqrt2`, so :math:`L \le 2\sqrt{F}`.

**Two forms of the same model** (``form``).  ``matrix`` (default) is the model above: the
variables β, dense margin rows K and the Hessian K (the QUADOBJ section of an export is the
upper triangle of K).  ``factor`` writes K through its eigen-decomposition
:math:`K = V\Lambda V^\top` as :math:`K = \Phi\Phi^\top` with :math:`\Phi = V_r\Lambda_r^{1/2}`
(the r eigenvalues above :math:`10^{-12}\lambda_{\max}`; the empirical kernel map) and uses
:math:`u = \Phi^\top\beta \in \mathbb{R}^r` as variables: scores :math:`\Phi u + b`, objective
:math:`\tfrac12\lVert u\rVert^2 + \sum_I C_I\xi_I` -- the linear model ``misvm-bigm`` on the
features Φ, with the same valid big-M.  The two have the same optimum up to the dropped
eigenvalues (every score changes by at most :math:`10^{-12}\lambda_{\max}\lVert\beta\rVert^2`
in the square); β is recovered as :math:`\beta = V_r\Lambda_r^{-1/2}u`.  Solvers that handle a
diagonal Hessian better than a dense one (SCIP) prove the factor form much faster
(docs/misvm_kernel_bigm.md).

**Kernels** (``kernel``): ``linear`` :math:`x^\top x'`; ``rbf``
:math:`\exp(-\gamma\lVert x - x'\rVert^2)`; ``poly`` :math:`(\gamma\, x^\top x' + c_0)^{p}`
(``degree`` p, ``coef0`` :math:`c_0 \ge 0`); γ defaults to 1 / n_features (``gamma=auto``);
``precomputed``: the Gram matrix of the training instances in the data's instance order, given
as ``gram=FILE.npy`` (or an array from Python).  ``milopt solve`` standardises the features
first (as for every formulation).
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp
from pyomo.common.gc_manager import PauseGC

from milopt.data.bags import Bags
from milopt.errors import InvalidDataError, InvalidParameterError
from milopt.features.kernels import kernel_matrix
from milopt.mil.bigm import start_slacks, trivial_upper_bound
from milopt.models._linear import add_linear_rows, add_quadratic_objective, var_list
from milopt.models.info import MILModel
from milopt.models.info import info as model_info
from milopt.numerics import bag_costs, bag_slacks
from milopt.params import Bool, Choice, Float, Int, ParamSet, Str, parse_bool
from milopt.segments import segment_argmax

KERNELS = ("linear", "rbf", "poly", "precomputed")
FORMS = ("matrix", "factor")
#: eigenvalues of K below this share of the largest are dropped by form="factor"
FACTOR_RTOL = 1e-12

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    C=Float(1.0, "misclassification cost", gt=0),
    class_weight=Choice("kent-yu", ("kent-yu", "balanced", "none"), "kent-yu | balanced | none (as misvm-bigm)"),
    kernel=Choice("rbf", KERNELS, "rbf: exp(-gamma |x-y|^2) | poly: (gamma x.y + coef0)^degree | linear: x.y | "
                  "precomputed: the Gram matrix given by gram=FILE.npy"),
    gamma=Float("auto", "rbf and poly scale gamma (auto: 1 / n_features)", gt=0, choices=("auto",)),
    degree=Int(2, "degree of the poly kernel", ge=1),
    coef0=Float(1.0, "constant of the poly kernel (>= 0 keeps it positive semidefinite)", ge=0),
    gram=Str(None, "kernel=precomputed: a .npy file holding the (n, n) Gram matrix of the instances in data order"),
    form=Choice("matrix", FORMS, "matrix (variables beta, Hessian K) | factor (u = Phi' beta with K = Phi Phi', "
                "Hessian I: misvm-bigm on the empirical kernel map)"),
    big_m=Float("valid", "valid (provable, per instance: sqrt(2F) x largest feature-space distance in the bag) "
                "| a number", gt=0, choices=("valid",)),
    warm_start=Bool(True, "start from the kernel MI-SVM alternation; its objective F tightens the big-M "
                          "(default of milopt solve; false: trivial bound only)"),
    upper_bound=Float(None, "objective of a known feasible point (tightens the big-M)", finite=False),
)

#: problem class of the model :func:`build` returns (solvers are chosen by it)
PROBLEM_CLASS = "MIQP"


# ----------------------------------------------------------------------------- kernel
def gram_matrix(X, Y=None, kernel="rbf", gamma="auto", degree=2, coef0=1.0) -> np.ndarray:
    r"""Kernel matrix :math:`K(x_i, y_j)` between the rows of ``X`` and ``Y`` (``Y = X`` by default).

    Parameters
    ----------
    X : ndarray (n, d)
    Y : ndarray (m, d), optional
    kernel : {'linear', 'rbf', 'poly'}
    gamma : float or 'auto'
        RBF width / poly scale; ``'auto'`` or None is 1 / d.
    degree : int
    coef0 : float

    Returns
    -------
    ndarray (n, m)
    """
    X = np.asarray(X, dtype=float)
    Y = X if Y is None else np.asarray(Y, dtype=float)
    d = X.shape[1]
    g = 1.0 / max(d, 1) if gamma is None or (isinstance(gamma, str) and gamma == "auto") else float(gamma)
    if kernel == "linear":
        return kernel_matrix(X, Y, "linear")
    if kernel == "rbf":
        return kernel_matrix(X, Y, "rbf", g)
    if kernel == "poly":
        return (g * (X @ Y.T) + float(coef0)) ** int(degree)
    raise InvalidParameterError(f"kernel: expected one of linear, rbf, poly (or precomputed with gram=), got {kernel!r}")


def _load_gram(gram, n: int) -> np.ndarray:
    """The precomputed Gram matrix (array or ``.npy`` path), checked: square n × n, finite, symmetric."""
    if gram is None:
        raise InvalidParameterError("gram: kernel=precomputed needs the Gram matrix; pass gram=FILE.npy "
                                    "(an (n, n) array in the data's instance order)")
    if isinstance(gram, str):
        try:
            K = np.load(gram, allow_pickle=False)
        except (OSError, ValueError) as exc:
            shown = gram if len(gram) <= 80 else gram[:77] + "..."
            raise InvalidParameterError(f"gram: cannot read {shown!r} as a .npy array ({type(exc).__name__}); save "
                                        "the matrix with numpy.save") from None
    else:
        K = gram
    K = np.asarray(K, dtype=float)
    if K.shape != (n, n):
        raise InvalidDataError(f"gram: expected an ({n}, {n}) matrix (one row and column per instance), got shape "
                               f"{K.shape}")
    if not np.all(np.isfinite(K)):
        raise InvalidDataError("gram: the Gram matrix has non-finite entries; recompute it")
    if not np.allclose(K, K.T, rtol=1e-8, atol=1e-10 * max(1.0, float(np.abs(K).max()))):
        raise InvalidDataError("gram: the Gram matrix is not symmetric; pass a kernel matrix K(z_i, z_j)")
    return 0.5 * (K + K.T)


def training_gram(bags: Bags, kernel="rbf", gamma="auto", degree=2, coef0=1.0, gram=None) -> np.ndarray:
    """The Gram matrix of the model for ``bags`` (the kernel of the parameters, or the precomputed one)."""
    kernel = str(kernel).lower()
    if kernel not in KERNELS:
        raise InvalidParameterError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "precomputed":
        return _load_gram(gram, bags.n_instances)
    return gram_matrix(bags.X, None, kernel, gamma, degree, coef0)


def kernel_big_m(K: np.ndarray, bag_ptr: np.ndarray, F: float) -> np.ndarray:
    r"""Valid big-M :math:`L_{I,i} = \sqrt{2F}\max_{j\in I} \sqrt{K_{ii} + K_{jj} - 2K_{ij}}` (module docstring).

    Vectorised over bags of equal size (one batched gather per size)."""
    ptr = np.asarray(bag_ptr, dtype=np.int64)
    n = ptr[-1]
    diag = np.diag(K)
    out = np.zeros(n)
    sizes = np.diff(ptr)
    for s in np.unique(sizes):
        if s < 2:
            continue
        starts = ptr[:-1][sizes == s]
        idx = starts[:, None] + np.arange(s)[None, :]                    # (bags, s)
        blk = K[idx[:, :, None], idx[:, None, :]]                         # (bags, s, s)
        dg = diag[idx]
        d2 = dg[:, :, None] + dg[:, None, :] - 2.0 * blk
        out[idx] = np.sqrt(np.maximum(d2, 0.0).max(axis=2))
    return np.sqrt(2.0 * max(float(F), 0.0)) * out


def kernel_factor(K: np.ndarray):
    """(Φ, λ): K ≈ ΦΦᵀ with Φ = V_r Λ_r^{1/2} over the eigenvalues above ``FACTOR_RTOL`` · λ_max."""
    lam, V = np.linalg.eigh(K)
    top = max(float(lam[-1]), 0.0)
    keep = lam > FACTOR_RTOL * top if top > 0 else np.zeros(lam.size, dtype=bool)
    if not keep.any():
        keep[-1] = True
        lam = np.maximum(lam, 1.0)          # K = 0: one dummy column (scores do not depend on it)
    lam_r = lam[keep]
    return V[:, keep] * np.sqrt(lam_r), lam_r


def objective_of(bags: Bags, K: np.ndarray, costs: np.ndarray, coef, b) -> float:
    """½ βᵀKβ + Σ C_I ξ_I at (β, b) with the slacks at their minimum (best witness per positive bag)."""
    coef = np.asarray(coef, dtype=float)
    s = K @ coef + float(b)
    return float(0.5 * coef @ (K @ coef) + costs @ bag_slacks(bags, s))


def incumbent(bags: Bags, K: np.ndarray, costs: np.ndarray, C=1.0, class_weight="kent-yu") -> dict | None:
    """A feasible point from the kernel MI-SVM alternation (Andrews et al.; centroid start) or the
    best trivial point; ``{coef, b, objective, source}``."""
    from milopt.mil.alternation import misvm_alternate

    n = bags.n_instances
    cands = [(np.zeros(n), float(b0), "trivial") for b0 in (-1.0, 0.0, 1.0)]
    if np.any(bags.y == 1) and np.any(bags.y != 1):
        try:
            h = misvm_alternate(K, bags, C=C, class_weight=class_weight, slack="bag", init="centroid")
            cands.append((h["alpha"] * h["y"], float(h["b"]), "alternation"))
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):   # a failed start is only a missing incumbent
            pass
    objs = [objective_of(bags, K, costs, c, b) for c, b, _ in cands]
    k = int(np.argmin(objs))
    return {"coef": cands[k][0], "b": cands[k][1], "objective": float(objs[k]), "source": cands[k][2]}


# ----------------------------------------------------------------------------- the build
def build(bags: Bags, C: float = 1.0, class_weight="kent-yu", kernel="rbf", gamma="auto", degree=2, coef0=1.0,
          gram=None, form="matrix", big_m="valid", warm_start: bool = False, upper_bound: float | None = None,
          **unused) -> MILModel:
    """Build the kernel MI-SVM big-M MIQP for ``bags`` (binary labels).

    Parameters
    ----------
    bags : Bags
        Binary MIL data (labels 0/1).
    C, class_weight : as ``misvm-bigm`` (costs :func:`milopt.numerics.bag_costs`).
    kernel : {'rbf', 'poly', 'linear', 'precomputed'}
    gamma : float or 'auto'
        RBF width / poly scale (``auto``: 1 / n_features).
    degree, coef0 : poly kernel :math:`(\\gamma x^\\top x' + c_0)^{degree}`.
    gram : str or ndarray, optional
        ``kernel='precomputed'``: the (n, n) Gram matrix of the instances (data order), or a
        ``.npy`` file holding it.
    form : {'matrix', 'factor'}
        Variables β with Hessian K, or u = Φᵀβ with K = ΦΦᵀ and Hessian I (module docstring).
    big_m : 'valid' or float
        The provably valid per-instance bound (module docstring) or a user constant (no guarantee).
    warm_start : bool
        Run the kernel MI-SVM alternation first: its objective F tightens the big-M and its point
        is the model's starting values (``ModelInfo.start``).  ``milopt solve`` defaults to true.
    upper_bound : float, optional
        Objective of a known feasible point (tightens the valid big-M).

    Returns
    -------
    MILModel
        Components ``beta`` (``u`` for form='factor'), ``b, xi, zeta, margin, witness, obj``;
        ``ModelInfo.meta`` holds ``K``, ``form``, ``Phi`` and ``lam`` (factor), ``K``
        (the Gram matrix), ``kernel``, ``gamma``, ``degree``, ``coef0``, ``big_m`` (n,),
        ``costs``, ``upper_bound`` F, ``incumbent``, ``C``, ``class_weight``, ``norm`` ('l2').

    Raises
    ------
    InvalidParameterError
        Bad kernel or parameter, non-binary labels, unknown keys.
    """
    if unused:
        raise InvalidParameterError(f"misvm-kernel-bigm: unknown parameter(s) {sorted(unused)}; accepted: "
                                    f"{sorted(PARAMS)}")
    if bags.n_classes > 2:
        raise InvalidParameterError("misvm-kernel-bigm: binary bag labels (0/1) are required")
    warm_start = parse_bool("warm_start", warm_start)
    kernel = str(kernel).lower()
    form = str(form).lower()
    if form not in FORMS:
        raise InvalidParameterError(f"form: expected 'matrix' or 'factor', got {form!r}")
    K = training_gram(bags, kernel, gamma, degree, coef0, gram)
    n = bags.n_instances
    costs = bag_costs(bags, C, class_weight)
    F = trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(float(upper_bound)):
        F = min(F, float(upper_bound))
    inc = incumbent(bags, K, costs, C, class_weight) if warm_start else None
    if inc is not None:
        F = min(F, inc["objective"])
    if isinstance(big_m, str):
        if big_m != "valid":
            raise InvalidParameterError(f"big_m: expected 'valid' or a positive number, got {big_m!r}")
        L = kernel_big_m(K, bags.bag_ptr, F)
    else:
        L = np.full(n, float(big_m))
    ypos = bags.y == 1
    sizes = np.diff(bags.bag_ptr)
    zrows = np.flatnonzero(ypos[bags.bag_index] & (sizes[bags.bag_index] >= 2))
    nz = zrows.size
    G, lam = kernel_factor(K) if form == "factor" else (K, None)   # scores G c + b (c = u or beta)
    m = MILModel(name="misvm_kernel_bigm")
    _assemble(m, bags, K, G, L, zrows, costs, form)

    info = m._milopt
    info.problem_class = "MIQP" if nz else "QP"
    info.features = ()
    info.bags = bags
    info.meta = {"K": K, "form": form, "Phi": G if form == "factor" else None, "lam": lam, "kernel": kernel, "gamma": (1.0 / max(bags.n_features, 1)
                                                     if gamma is None or gamma == "auto" else float(gamma))
                 if kernel in ("rbf", "poly") else None,
                 "degree": int(degree), "coef0": float(coef0), "big_m": L, "costs": costs, "C": float(C),
                 "class_weight": class_weight, "norm": "l2", "upper_bound": float(F), "instances": n,
                 "n_features": bags.n_features,
                 "incumbent": None if inc is None else inc["objective"],
                 "incumbent_source": None if inc is None else inc["source"]}
    if inc is not None:
        warm_start_point(m, inc["coef"], inc["b"])
        info.start = True
    return m


def _assemble(m, bags: Bags, K, G, L, zrows, costs, form: str) -> None:
    """Variables (``beta`` or ``u``, ``b``, ``xi``, ``zeta``), the ``margin`` and ``witness`` rows and
    the matrix objective of :func:`build`: scores G c + b with G = K, c = β (Hessian K) or
    G = Φ, c = u (Hessian I)."""
    n, B, nz, r = bags.n_instances, bags.n_bags, zrows.size, G.shape[1]
    with PauseGC():
        m.N = pe.RangeSet(0, r - 1)
        m.BAGS = pe.RangeSet(0, B - 1)
        coefs = pe.Var(m.N, initialize=0.0)
        if form == "factor":
            m.u = coefs
        else:
            m.beta = coefs
        m.b = pe.Var(initialize=0.0)
        m.xi = pe.Var(m.BAGS, domain=pe.NonNegativeReals, initialize=1.0)
        m.ZETA = pe.Set(initialize=zrows.tolist(), ordered=True)
        m.zeta = pe.Var(m.ZETA, domain=pe.Binary, initialize=0)
        V = var_list(coefs, m.b, m.xi, m.zeta)
    # margin: sign_i ((G c)_i + b) + xi_I + L_i zeta_i >= 1
    sign = np.where((bags.y == 1)[bags.bag_index], 1.0, -1.0)
    XI = sp.csr_matrix((np.ones(n), (np.arange(n), bags.bag_index)), shape=(n, B))
    Z = sp.csr_matrix((L[zrows], (zrows, np.arange(nz))), shape=(n, nz))
    A = sp.hstack([sp.csr_matrix(G * sign[:, None]), sp.csr_matrix(sign[:, None]), XI, Z], format="csr")
    add_linear_rows(m, "margin", A, V, lb=1.0)
    # witness: sum of zeta over a positive bag <= |I| - 1
    zb = bags.bag_index[zrows]
    cbags = np.unique(zb)
    Acard = sp.csr_matrix((np.ones(nz), (np.searchsorted(cbags, zb), r + 1 + B + np.arange(nz))),
                          shape=(cbags.size, len(V)))
    add_linear_rows(m, "witness", Acard, V, ub=np.diff(bags.bag_ptr)[cbags] - 1.0, index=cbags.tolist())
    # objective ½ βᵀKβ (or ½‖u‖²) + Σ C_I ξ_I, held as matrices over (β or u, ξ)
    H = sp.identity(r, format="csr") if form == "factor" else sp.csr_matrix(K)
    Q = sp.block_diag([H, sp.csr_matrix((B, B))], format="csr")
    add_quadratic_objective(m, "obj", var_list(coefs, m.xi), c=np.concatenate([np.zeros(r), costs]), Q=Q)


def problem_class(**unused):
    """(problem class, features): always a MIQP (a QP when no positive bag has two instances)."""
    return "MIQP", ()


# ----------------------------------------------------------------------------- solutions
def warm_start_point(model, coef, b) -> None:
    """Load a feasible point from (β, b): slacks at their minimum, ζ = 0 on the best instance of
    each positive bag (larger slacks where a smaller-than-valid big-M needs them)."""
    rec = model_info(model)
    bags, meta = rec.bags, rec.meta
    K = meta["K"]
    coef = np.asarray(coef, dtype=float)
    var = _coef_var(model)
    vals = meta["Phi"].T @ coef if meta.get("form") == "factor" else coef      # u = Phi' beta
    for i, v in enumerate(vals.tolist()):
        var[i].value = v
    model.b.value = float(b)
    s = K @ coef + float(b)
    zi = np.fromiter(model.ZETA, dtype=np.int64, count=len(model.ZETA))
    xi, zeta, _ = start_slacks(s, bags, zi, meta["big_m"])
    for I in model.BAGS:
        model.xi[I].value = float(xi[I])
    for k, i in enumerate(zi.tolist()):
        model.zeta[i].value = int(zeta[k])


def _coef_var(model):
    """The coefficient variables: ``beta`` (form='matrix') or ``u`` (form='factor')."""
    return model.u if model_info(model).meta.get("form") == "factor" else model.beta


def beta_of(model) -> np.ndarray:
    r"""β at the model's current values (form='factor': :math:`\beta = V_r\Lambda_r^{-1/2}u = \Phi\Lambda_r^{-1}u`)."""
    meta = model_info(model).meta
    var = _coef_var(model)
    c = np.array([pe.value(var[i], exception=False) or 0.0 for i in model.N])
    return meta["Phi"] @ (c / meta["lam"]) if meta.get("form") == "factor" else c


def default_start(model) -> None:
    """Warm start for a model built with ``warm_start=False``: the point of ``incumbent``."""
    rec = model_info(model)
    meta = rec.meta
    inc = incumbent(rec.bags, meta["K"], meta["costs"], meta["C"], meta["class_weight"])
    warm_start_point(model, inc["coef"], inc["b"])


def model_objective(model) -> float:
    """½ βᵀKβ (½‖u‖² for form='factor') + Σ C_I ξ_I at the model's current values (numpy; no Pyomo
    expression is built)."""
    rec = model_info(model)
    K, costs = rec.meta["K"], rec.meta["costs"]
    var = _coef_var(model)
    c = np.array([pe.value(var[i], exception=False) or 0.0 for i in model.N])
    xi = np.array([pe.value(model.xi[I], exception=False) or 0.0 for I in model.BAGS])
    reg = 0.5 * c @ c if rec.meta.get("form") == "factor" else 0.5 * c @ (K @ c)
    return float(reg + costs @ xi)


def decode(model) -> dict:
    """Learned classifier: dual coefficients ``coef`` (β), ``b``, slacks, the witness of each
    positive bag, and what :func:`predict` needs (the kernel, its parameters and the support
    instances: rows with β ≠ 0)."""
    rec = model_info(model)
    meta, bags = rec.meta, rec.bags
    K = meta["K"]
    beta = beta_of(model)
    b = float(pe.value(model.b, exception=False) or 0.0)
    xi = np.array([pe.value(model.xi[I], exception=False) or 0.0 for I in model.BAGS])
    scores = K @ beta + b
    free = np.ones(bags.n_instances, dtype=bool)
    for i in model.ZETA:
        v = model.zeta[i].value
        free[i] = v is None or v < 0.5
    arg = segment_argmax(np.where(free, scores, -np.inf), bags.bag_ptr)
    pos = np.flatnonzero(bags.y == 1)
    sv = np.flatnonzero(np.abs(beta) > 1e-12 * max(1.0, float(np.abs(beta).max(initial=0.0))))
    return {"coef": beta, "b": b, "xi": xi, "witnesses": dict(zip(pos.tolist(), arg[pos].tolist())),
            "scores": scores, "kernel": meta["kernel"], "gamma": meta["gamma"], "degree": meta["degree"],
            "coef0": meta["coef0"], "support": sv,
            "support_X": None if meta["kernel"] == "precomputed" else bags.X[sv], "support_coef": beta[sv]}


def predict(solution: dict, bags: Bags) -> np.ndarray:
    """Instance scores :math:`f(x) = \\sum_j \\beta_j K(z_j, x) + b` on new bags (same feature scaling
    as training).  A precomputed kernel cannot be evaluated on new instances."""
    if solution.get("kernel") == "precomputed":
        raise InvalidParameterError("misvm-kernel-bigm: a precomputed kernel cannot score new bags; use "
                                    "kernel=rbf, poly or linear to predict")
    Kt = gram_matrix(bags.X, solution["support_X"], solution["kernel"], solution["gamma"], solution["degree"],
                     solution["coef0"])
    return Kt @ np.asarray(solution["support_coef"], dtype=float) + float(solution["b"])
