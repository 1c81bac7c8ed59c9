r"""Dual QP of the MI-SVM subproblem for a fixed witness selection (Kent & Yu eq. 3; Andrews et al.).

Kent, S. and Yu, M., "Non-convex SVM for cancer diagnosis based on morphologic features of
tumor microenvironment" (eq. 3 and eq. 4); Andrews, Tsochantaridis & Hofmann, "Support vector machines
for multiple-instance learning", NIPS 2002 (MI-SVM).

For a selection *s* of one witness per positive bag the effective set is
:math:`E = \{i : Y_{I(i)} = -1\} \cup \{s_I : Y_I = +1\}`; with labels :math:`y_i = Y_{I(i)}`,
a kernel :math:`K` (linear or RBF) and slack groups *g* (a negative bag in Kent & Yu's
bag-slack form, ``slack="bag"``; a single instance in Andrews' form, ``slack="instance"``;
a positive bag's group holds its witness only):

.. math::

    \max_{\alpha}\; & \sum_{i\in E}\alpha_i - \tfrac12\sum_{i,j\in E}\alpha_i\alpha_j y_i y_j K(x_i, x_j) \\
    \text{s.t.}\; & \textstyle\sum_{i\in E} \alpha_i y_i = 0, \\
    & 0 \le \textstyle\sum_{i \in g} \alpha_i \le C_g \ \text{ for every group } g, \qquad \alpha_i \ge 0 .

(For a witness group this is :math:`0 \le \alpha_i \le C_I`.)  By strong duality its optimum
equals the primal optimum :math:`\min \tfrac12\lVert w\rVert^2 + \sum_g C_g\xi_g` for the same
selection.  The intercept is recovered by eq. 4,
:math:`b = y_i - \sum_j \alpha_j y_j K(x_j, x_i)`, averaged over the eligible (free) indices
with :math:`\alpha_i > 0` and the group of *i* below its cap; without any free index, the
minimiser of the primal loss over b (a breakpoint of a piecewise-linear convex function).
Costs :math:`C_g` follow ``class_weight`` exactly as ``misvm_bigm`` (default ``kent-yu``).

**Witnesses** from the command line (``milopt solve misvm-dual-qp``): ``witness="sil"``
(default) takes, in every positive bag, the instance with the largest decision value of a
single-instance linear SVM (liblinear, bag labels copied to instances, balanced class
weights); ``witness="first"`` the first instance of the bag.  ``build(..., witnesses=rows)``
accepts any selection (one instance row per positive bag).

**Building** (``form``; default ``"auto"``: ``factor`` for the linear kernel, ``matrix`` for
RBF): ``"matrix"`` keeps the objective as the vector of ones and
the dense matrix :math:`Q = (yy^\top)\circ K_{EE}` (``add_quadratic_objective``):
matrix-based backends (Ipopt, SCIP native, export) read them directly, and the Pyomo
expression is only built if a Pyomo-based solver asks for it; ``"factor"`` writes :math:`\tfrac12\alpha^\top Q\alpha` as
:math:`\tfrac12\lVert u\rVert^2` with :math:`u = L^\top(y\circ\alpha)` and :math:`K_{EE} = LL^\top`
(linear kernel: :math:`L = X_E`; RBF: eigen-factor, eigenvalues below 1e-10 · max dropped),
so the model holds r extra variables and r dense linear rows added as sparse matrices, and
the objective has r square terms; ``"dense"`` writes the n(n+1)/2 products of the upper
triangle in one ``quicksum`` (what a modelling language would do; slower to build, see
docs/misvm_dual_qp.md for measured times).  Both have the same optimum.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pe
import scipy.sparse as sp

from milopt.data.bags import Bags
from milopt.errors import InvalidParameterError
from milopt.models._linear import add_linear_rows, add_quadratic_objective, var_list
from milopt.models.info import MILModel
from milopt.models.info import info as model_info
from milopt.numerics import intercept_eq4, sil_start, slack_structure
from milopt.params import Choice, Float, ParamSet
from milopt.segments import segment_argmax

#: problem class of the model :func:`build` returns (solvers are chosen by it)
PROBLEM_CLASS = "QP"

#: keys accepted from the command line (milopt.params)
PARAMS = ParamSet(
    C=Float(1.0, "misclassification cost", gt=0),
    kernel=Choice("linear", ("linear", "rbf"), "linear | rbf"),
    gamma=Float(None, "rbf width: exp(-gamma |x-y|^2); default 1/n_features", gt=0),
    class_weight=Choice("kent-yu", ("kent-yu", "balanced", "none"), "kent-yu | balanced | none (as misvm-bigm)"),
    slack=Choice("bag", ("bag", "instance"), "bag (Kent & Yu: one slack per negative bag) | instance (Andrews)"),
    witness=Choice("sil", ("sil", "first"), "sil (argmax of a SIL linear SVM) | first (first instance of each positive bag)"),
    form=Choice("auto", ("auto", "matrix", "factor", "dense"), "auto (factor for linear, matrix for rbf) | matrix "
                "(objective held as the matrix Q) | factor (u = L'(y.alpha), 1/2|u|^2) | dense (upper-triangle quicksum)"),
)


def default_witnesses(bags: Bags, rule="sil", random_state=0) -> np.ndarray:
    """Witness row of every positive bag by the documented rule (``sil`` or ``first``)."""
    pos = np.flatnonzero(bags.y == 1)
    if rule == "first":
        return bags.bag_ptr[:-1][pos].copy()
    if rule == "sil":
        w, b = sil_start(bags, C=1.0, random_state=random_state)
        return segment_argmax(bags.X @ w + b, bags.bag_ptr)[pos]
    raise InvalidParameterError(f"witness: expected 'sil' or 'first', got {rule!r}")


def build(bags: Bags, C: float = 1.0, kernel="linear", gamma=None, class_weight="kent-yu", slack="bag",
          witness="sil", witnesses=None, form="auto", **unused) -> MILModel:
    """Build the dual QP for ``bags`` and a witness selection.

    Parameters
    ----------
    bags : Bags (binary labels)
    C, class_weight : costs as in ``misvm_bigm``.
    kernel, gamma : ``linear`` or ``rbf`` (gamma > 0; default 1/n_features).
    slack : {'bag', 'instance'}
    witness : {'sil', 'first'}
        Rule used when ``witnesses`` is not given.
    witnesses : array of int, optional
        Instance row of the witness of every positive bag (in bag order).
    form : {'auto', 'matrix', 'factor', 'dense'}
        ``auto``: ``factor`` for the linear kernel (rank d), ``matrix`` for RBF.
    """
    from milopt.features.kernels import check_kernel, kernel_matrix

    if unused:
        raise InvalidParameterError(f"misvm-dual-qp: unknown parameter(s) {sorted(unused)}; accepted: {sorted(PARAMS)} "
                                    "(and witnesses)")
    if bags.n_classes > 2:
        raise InvalidParameterError("misvm-dual-qp: binary bag labels (0/1) are required")
    if form not in ("auto", "matrix", "factor", "dense"):
        raise InvalidParameterError(f"form: expected 'auto', 'matrix', 'factor' or 'dense', got {form!r}")
    kernel, gamma = check_kernel(kernel, gamma, bags.n_features)
    if form == "auto":  # low rank d << n: factor; a full-rank kernel matrix: keep it as a matrix
        form = "factor" if kernel == "linear" else "matrix"
    pos = np.flatnonzero(bags.y == 1)
    if witnesses is None:
        witnesses = default_witnesses(bags, witness)
    witnesses = np.asarray(witnesses, dtype=np.int64).ravel()
    if witnesses.size != pos.size or np.any(bags.bag_index[witnesses] != pos):
        raise InvalidParameterError(f"witnesses: expected one instance row inside each of the {pos.size} positive bags, "
                                    "in bag order")
    y_all, groups_all, caps_all = slack_structure(bags, C, class_weight, slack)
    act = y_all < 0
    act[witnesses] = True
    E = np.flatnonzero(act)
    y = y_all[E]
    gE, ginv = np.unique(groups_all[E], return_inverse=True)
    caps = caps_all[gE]
    n, G = E.size, gE.size
    KE = kernel_matrix(bags.X[E], None, kernel, gamma)

    m = MILModel(name="misvm_dual_qp")
    m.E = pe.RangeSet(0, n - 1)
    m.alpha = pe.Var(m.E, domain=pe.NonNegativeReals, initialize=0.0)
    avars = var_list(m.alpha)
    # Σ α_i y_i = 0
    add_linear_rows(m, "balance", sp.csr_matrix(y[None, :]), avars, lb=0.0, ub=0.0)
    # group caps (rows only for groups with more than one instance; singletons become bounds)
    sizes = np.bincount(ginv, minlength=G)
    single = sizes[ginv] == 1
    for i in np.flatnonzero(single):
        m.alpha[int(i)].setub(float(caps[ginv[i]]))
    multi = np.flatnonzero(sizes > 1)
    if multi.size:
        rows = np.searchsorted(multi, ginv[~single])
        A = sp.csr_matrix((np.ones(rows.size), (rows, np.flatnonzero(~single))), shape=(multi.size, n))
        add_linear_rows(m, "cap", A, avars, lb=0.0, ub=caps[multi], index=multi.tolist())
    _objective(m, form, bags.X[E] if kernel == "linear" else None, KE, y, avars)
    m._milopt.problem_class = PROBLEM_CLASS
    m._milopt.meta = {"E": E, "y": y, "groups": ginv, "caps": caps, "K": KE, "kernel": kernel, "gamma": gamma,
                      "witnesses": witnesses, "slack": slack, "C": C, "class_weight": class_weight}
    m._milopt.bags = bags
    return m


def _objective(m, form: str, XE, KE, y, avars) -> None:
    """max Σα - ½ αᵀQα with Q = (y yᵀ) ∘ K_EE written as ``form`` (module docstring): ``matrix``
    (the matrices kept by ``add_quadratic_objective``), ``factor`` (u = Lᵀ(y∘α)
    with K_EE = LLᵀ, L = X_E for the linear kernel (``XE``), else an eigen-factor) or ``dense``."""
    n = y.size
    if form == "matrix":
        negQ = np.outer(-y, y)
        negQ *= KE                                   # -Q in one n x n array (no temporaries)
        add_quadratic_objective(m, "obj", avars, c=np.ones(n), Q=negQ, sense=pe.maximize)
        return
    if form == "factor":
        if XE is not None:
            L = XE
        else:
            lam, U = np.linalg.eigh(KE)
            keep = lam > 1e-10 * max(lam.max(), 1e-300)
            L = U[:, keep] * np.sqrt(lam[keep])
        r = L.shape[1]
        m.R = pe.RangeSet(0, r - 1)
        m.u = pe.Var(m.R, initialize=0.0)
        # u_k - Σ_i L_ik y_i α_i = 0
        A = sp.hstack([sp.identity(r, format="csr"), sp.csr_matrix(-(L * y[:, None]).T)], format="csr")
        add_linear_rows(m, "factor", A, var_list(m.u, m.alpha), lb=0.0, ub=0.0)
        quad = 0.5 * pe.quicksum(m.u[k] ** 2 for k in range(r))
    else:
        Q = KE * np.outer(y, y)
        iu, ju = np.triu_indices(n)
        coef = np.where(iu == ju, 0.5, 1.0) * Q[iu, ju]
        quad = pe.quicksum(float(c) * avars[i] * avars[j] for c, i, j in zip(coef.tolist(), iu.tolist(), ju.tolist()))
    m.obj = pe.Objective(expr=pe.quicksum(avars) - quad, sense=pe.maximize)


def decode(model) -> dict:
    """α over the effective set, the intercept by eq. 4, the witnesses, and w for the linear kernel."""
    rec = model_info(model)
    meta = rec.meta
    E, y, K = meta["E"], meta["y"], meta["K"]
    alpha = np.array([pe.value(model.alpha[i], exception=False) or 0.0 for i in range(E.size)])
    alpha = np.maximum(alpha, 0.0)
    raw = K @ (alpha * y)
    b = intercept_eq4(raw, y, alpha, meta["groups"], meta["caps"], np.ones(E.size, dtype=bool), fallback=None)
    out = {"alpha": alpha, "b": b, "effective": E, "witnesses": meta["witnesses"],
           "dual_objective": float(alpha.sum() - 0.5 * alpha @ (y * raw))}
    if meta["kernel"] == "linear":
        out["w"] = rec.bags.X[E].T @ (alpha * y)
    return out


def primal_objective(model, alpha=None, b=None) -> float:
    """Primal objective ½‖w‖² + Σ_g C_g ξ_g of (α, b) on the model's effective set."""
    meta = model_info(model).meta
    y, K, groups, caps = meta["y"], meta["K"], meta["groups"], meta["caps"]
    if alpha is None or b is None:
        d = decode(model)
        alpha, b = d["alpha"], d["b"]
    raw = K @ (alpha * y)
    loss = np.maximum(0.0, 1.0 - y * (raw + b))
    xi = np.zeros(caps.size)
    np.maximum.at(xi, groups, loss)
    return float(0.5 * alpha @ (y * raw) + caps @ xi)
