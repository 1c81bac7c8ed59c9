r"""Pyomo-free bounds for the MI-SVM mixed-integer programs (``misvm-bigm``, ``misvm-hull``).

MI-SVM (Andrews et al. 2002; the MIP of Kent & Yu, eq. 5) with per-bag costs :math:`C_I`
(:func:`milopt.numerics.bag_costs`):
:math:`\min \tfrac12\lVert w\rVert^2 + \sum_I C_I \xi_I` (or :math:`\lVert w\rVert_1 + \dots`) such
that every negative-bag instance and at least one instance (the witness) of every positive bag
meets its margin row.  Everything here bounds the solutions of objective at most some known
value :math:`F` (proofs in docs/misvm_bigm.md):

* :func:`trivial_upper_bound`: :math:`F_0 = \min(\sum_I C_I,\ 2\sum_{Y_I=+1} C_I,\ 2\sum_{Y_I=-1} C_I)`,
  the best of the feasible points :math:`w = 0,\ b \in \{-1, 0, 1\}`;
* :func:`incumbent`: a cheaper-than-exact feasible point and its objective (trivial points,
  a single-instance SVM, the MI-SVM alternation), a smaller :math:`F`;
* :func:`valid_big_m`: :math:`L_{I,i} = \sqrt{2F}(\lVert z_i - c_I\rVert + \max_k \lVert z_k - c_I\rVert)`
  (l2; :math:`F \max_{j\in I}\lVert z_i - z_j\rVert_\infty` for l1), which never cuts off an
  optimum, against mildsvm's unproven :func:`mildsvm_big_m`;
* :func:`incumbent_bounds`: bounds on :math:`w, b, \xi` and on every score, and the smaller big-M
  :math:`\min(T D_i, 1 - lo_i)`;
* :func:`hull_interior`: instances inside the convex hull of the rest of their bag (their
  score never exceeds the bag's maximum, so they may be dropped).
"""
from __future__ import annotations

import numpy as np

from milopt.data.bags import Bags
from milopt.mil.alternation import misvm_alternate
from milopt.numerics import misvm_objective, sil_start
from milopt.segments import expand, segment_argmax, segment_max, segment_mean

__all__ = ["trivial_upper_bound", "valid_big_m", "linf_spread", "mildsvm_big_m", "incumbent", "known_bound",
           "pair_diameter", "incumbent_bounds", "hull_interior"]


def trivial_upper_bound(costs: np.ndarray, y: np.ndarray) -> float:
    """Objective of the best of the trivial feasible points w = 0, b in {-1, 0, 1}."""
    pos = y == 1
    return float(min(costs.sum(), 2 * costs[pos].sum(), 2 * costs[~pos].sum()))


def valid_big_m(bags: Bags, costs: np.ndarray, upper_bound: float | None = None, norm: str = "l2") -> np.ndarray:
    r"""Per-instance provably valid L_{I,i} (module docstring), shape (n_instances,).

    ``norm="l2"``: :math:`\sqrt{2F_0}(\lVert z_i - c_I\rVert + \max_k \lVert z_k - c_I\rVert)`;
    ``norm="l1"``: :math:`F_0 \max_{j\in I} \lVert z_i - z_j\rVert_\infty`.
    """
    F0 = trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(upper_bound):
        F0 = min(F0, float(upper_bound))
    if norm == "l1":
        return F0 * linf_spread(bags)
    W = np.sqrt(2.0 * F0)
    ptr = bags.bag_ptr
    cent = segment_mean(bags.X, ptr)
    dist = np.linalg.norm(bags.X - expand(cent, ptr), axis=1)
    return W * (dist + expand(segment_max(dist, ptr), ptr))


def linf_spread(bags: Bags) -> np.ndarray:
    r""":math:`\max_{j \in I} \lVert z_i - z_j \rVert_\infty` for every instance i of bag I, shape (n_instances,)."""
    ptr = bags.bag_ptr
    X = bags.X
    lo = expand(np.minimum.reduceat(X, ptr[:-1], axis=0), ptr)
    hi = expand(np.maximum.reduceat(X, ptr[:-1], axis=0), ptr)
    return np.maximum(X - lo, hi - X).max(axis=1)


def mildsvm_big_m(bags: Bags) -> float:
    """mildsvm's ``L = 100 * sum over columns of mean |x|`` (no validity guarantee)."""
    return float(100.0 * np.abs(bags.X).mean(axis=0).sum())


def incumbent(bags: Bags, C: float = 1.0, class_weight="kent-yu", norm: str = "l2", random_state=0) -> dict:
    r"""A cheap feasible point of MI-SVM and its objective F (an upper bound on the optimum).

    Candidates: the trivial points :math:`w = 0,\ b \in \{-1, 0, 1\}`; a linear SVM on the
    instances with the bag labels copied (:func:`milopt.numerics.sil_start`); and, for
    ``norm="l2"``, the MI-SVM alternating heuristic of Andrews et al. (bag-slack form,
    :func:`milopt.mil.alternation.misvm_alternate`, linear kernel) started from that
    SVM's witnesses.  The lowest objective (:func:`milopt.numerics.misvm_objective`) is returned.

    Returns
    -------
    dict: ``w`` (d,), ``b``, ``objective`` F, ``source`` ('trivial', 'sil' or 'alternation').
    """
    norm = str(norm).lower()
    d = bags.n_features
    cands = [(np.zeros(d), float(b0), "trivial") for b0 in (-1.0, 0.0, 1.0)]
    w, b = sil_start(bags, C=C, random_state=random_state)
    cands.append((w, float(b), "sil"))
    if norm == "l2" and np.any(bags.y == 1) and np.any(bags.y != 1):
        h = misvm_alternate(None, bags, C=C, class_weight=class_weight, slack="bag", init_scores=bags.X @ w + b,
                            X=bags.X, random_state=random_state)
        cands.append((bags.X.T @ (h["alpha"] * h["y"]), float(h["b"]), "alternation"))
    objs = [misvm_objective(bags, cw, cb, C, class_weight, norm) for cw, cb, _ in cands]
    k = int(np.argmin(objs))
    return {"w": np.asarray(cands[k][0], dtype=float), "b": cands[k][1], "objective": float(objs[k]),
            "source": cands[k][2]}


def known_bound(bags: Bags, costs: np.ndarray, C: float = 1.0, class_weight="kent-yu", norm: str = "l2",
                upper_bound: float | None = None, with_incumbent: bool = False):
    """``(incumbent or None, F)``: the best known objective F of a feasible point -- the trivial
    bound, a given ``upper_bound``, and (``with_incumbent``) the objective of :func:`incumbent`,
    whichever is smallest."""
    inc = incumbent(bags, C, class_weight, norm) if with_incumbent else None
    F = trivial_upper_bound(costs, bags.y)
    if upper_bound is not None and np.isfinite(upper_bound):
        F = min(F, float(upper_bound))
    if inc is not None:
        F = min(F, inc["objective"])
    return inc, float(F)


def _dual_norm(norm):
    """Norm of data vectors paired with the regulariser's norm of w (Cauchy-Schwarz / Hoelder)."""
    return (lambda V: np.linalg.norm(V, axis=-1)) if norm == "l2" else (lambda V: np.abs(V).max(axis=-1))


def _best_t(F, S, a, norm):
    r""":math:`\max_{0 \le t \le T} \; (F - r(t))/S + a\,t` with :math:`r(t) = t^2/2,\ T = \sqrt{2F}`
    (l2) or :math:`r(t) = t,\ T = F` (l1); ``a`` may be an array."""
    a = np.asarray(a, dtype=float)
    if norm == "l2":
        t = np.clip(S * a, 0.0, np.sqrt(2.0 * F))
        return (F - 0.5 * t * t) / S + a * t
    T = F
    return np.maximum(F / S, a * T)  # linear in t: an endpoint


def pair_diameter(bags: Bags, norm: str = "l2", mask=None) -> np.ndarray:
    r""":math:`D_i = \max_{j \in I} \lVert z_i - z_j \rVert` (2-norm, or the ∞-norm for l1) over the
    instances j of i's bag (those in ``mask`` when given), shape (n_instances,); exact, by bag
    (a duplicate of every other instance has :math:`D_i = 0`, not a rounding residue)."""
    X, ptr = bags.X, bags.bag_ptr
    out = np.zeros(bags.n_instances)
    keep = np.ones(bags.n_instances, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    for I in range(bags.n_bags):
        s, e = ptr[I], ptr[I + 1]
        Z = X[s:e]
        Zk = Z[keep[s:e]]
        if Zk.shape[0] == 0:
            continue
        if norm == "l2":
            # Gram expansion for the farthest j, then that distance from the difference itself
            # (exact 0 for duplicates); the expansion's own value counts only above its rounding
            zz, kk = (Z * Z).sum(1), (Zk * Zk).sum(1)
            sq = zz[:, None] + kk[None, :] - 2.0 * Z @ Zk.T
            far = sq.argmax(axis=1)
            exact = np.linalg.norm(Z - Zk[far], axis=1)
            err = 8.0 * np.finfo(float).eps * (zz + kk.max())
            out[s:e] = np.maximum(exact, np.sqrt(np.maximum(sq[np.arange(Z.shape[0]), far] - err, 0.0)))
        else:
            out[s:e] = np.maximum(Z - Zk.min(axis=0), Zk.max(axis=0) - Z).max(axis=1)
    return out


def incumbent_bounds(bags: Bags, costs: np.ndarray, F: float, norm: str = "l2", mask=None) -> dict:
    r"""Bounds every solution with objective :math:`\le F` satisfies (proofs in docs/misvm_bigm.md, "Strengthening").

    With :math:`t = \lVert w\rVert` (2-norm for l2, 1-norm for l1), :math:`r(t)` the regulariser
    and :math:`\lVert\cdot\rVert_*` its dual norm on data vectors:

    * :math:`r(t) \le F`: :math:`|w_k| \le T` (:math:`T = \sqrt{2F}` or :math:`F`);
    * :math:`0 \le \xi_I \le F / C_I`;
    * negative bags, averaged with weights :math:`C_I / S^-` (:math:`S^- = \sum_{Y_I=-1} C_I`):
      :math:`b + w^\top g^- \le (F - r(t))/S^- - 1`, so
      :math:`b \le -1 + \max_{0\le t\le T} [(F - r(t))/S^- + t \lVert g^-\rVert_*]`; the same with
      one negative bag (its mean, :math:`S = C_I`); the smallest is kept;
    * positive bags, their witnesses averaged likewise: :math:`b + w^\top z_i \ge 1 -
      \max_{0\le t\le T}[(F - r(t))/S^+ + t (\bar\rho^+ + \lVert z_i - g^+\rVert_*)]` =: ``lo_i``
      for every instance, where :math:`\bar\rho^+ = \sum C_I \rho_I / S^+`,
      :math:`\rho_I = \max_{j\in I}\lVert z_j - c_I\rVert_*`; at :math:`z_i = 0` this bounds b;
    * the big-M: :math:`L_{I,i} = \min(T D_i,\ 1 - lo_i)` with the exact bag diameter :math:`D_i`.

    ``mask``: instances kept by ``reduce`` (removed ones are ignored in bag means and diameters).

    Returns
    -------
    dict: ``W`` (T), ``b_lo``, ``b_hi``, ``xi_hi`` (B,), ``lo`` (n,), ``L`` (n,), ``F``.
    """
    X, ptr = bags.X, bags.bag_ptr
    n = bags.n_instances
    keep = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    F = float(F) * (1.0 + 1e-9) + 1e-12  # a hair of slack for the rounding of F itself
    dn = _dual_norm(norm)
    T = np.sqrt(2.0 * F) if norm == "l2" else F
    pos = bags.y == 1
    cnt = np.add.reduceat(keep.astype(float), ptr[:-1])
    cent = np.add.reduceat(X * keep[:, None], ptr[:-1], axis=0) / np.maximum(cnt, 1.0)[:, None]
    rad = np.zeros(bags.n_bags)
    dev = dn(X - expand(cent, ptr))
    np.maximum.at(rad, bags.bag_index[keep], dev[keep])
    # b <= ... from negative bags
    b_hi = np.inf
    if np.any(~pos):
        Sn = costs[~pos].sum()
        gn = (costs[~pos, None] * cent[~pos]).sum(0) / Sn
        b_hi = -1.0 + float(_best_t(F, Sn, dn(gn), norm))
        b_hi = min(b_hi, float(np.min(-1.0 + _best_t(F, costs[~pos], dn(cent[~pos]), norm))))
    # w z_i + b >= lo_i from the witnesses of positive bags
    lo = np.full(n, -np.inf)
    b_lo = -np.inf
    if np.any(pos):
        Sp = costs[pos].sum()
        gp = (costs[pos, None] * cent[pos]).sum(0) / Sp
        rbar = float((costs[pos] * rad[pos]).sum() / Sp)
        lo = 1.0 - _best_t(F, Sp, rbar + dn(X - gp), norm)
        b_lo = 1.0 - float(_best_t(F, Sp, rbar + dn(gp), norm))
        # one positive bag at a time: b + w z_i >= 1 - (F - r)/C_I - t (||z_i - c_I|| + rho_I) for i in I
        own = 1.0 - _best_t(F, expand(costs, ptr), expand(rad, ptr) + dev, norm)
        lo = np.where(pos[bags.bag_index], np.maximum(lo, own), lo)
        b_lo = max(b_lo, float(np.max(1.0 - _best_t(F, costs[pos], rad[pos] + dn(cent[pos]), norm))))
    xi_hi = F / costs
    D = pair_diameter(bags, norm, mask=keep)
    L = np.maximum(np.minimum(T * D, 1.0 - lo), 0.0)
    return {"W": float(T), "b_lo": float(b_lo), "b_hi": float(b_hi), "xi_hi": xi_hi, "lo": lo, "L": L, "F": F}


def hull_interior(bags: Bags, tol: float = 1e-9) -> np.ndarray:
    r"""Instances that lie in the convex hull of the *other* instances of their bag (exact duplicates
    included; of a group of duplicates the first is kept), removed one after the other, so that the
    kept instances of a bag have the same convex hull as the whole bag.  Boolean mask (n,).

    A bag whose instances are affinely independent has no such instance (no LP is solved);
    otherwise membership is decided by the feasibility LP
    :math:`z_i = \sum_{j \ne i} \lambda_j z_j,\ \sum_j \lambda_j = 1,\ \lambda \ge 0` (HiGHS)."""
    from scipy.optimize import linprog

    X, ptr = bags.X, bags.bag_ptr
    out = np.zeros(bags.n_instances, dtype=bool)
    for I in range(bags.n_bags):
        s, e = int(ptr[I]), int(ptr[I + 1])
        if e - s < 2:
            continue
        Z = X[s:e]
        # exact duplicates first
        _, first = np.unique(Z, axis=0, return_index=True)
        dup = np.ones(e - s, dtype=bool)
        dup[first] = False
        out[s:e] |= dup
        idx = np.flatnonzero(~dup)
        if idx.size < 3:
            continue
        Zu = Z[idx]
        if np.linalg.matrix_rank(Zu[1:] - Zu[0]) == idx.size - 1:
            continue  # affinely independent: every point is a vertex
        alive = np.ones(idx.size, dtype=bool)
        scale = max(1.0, float(np.abs(Zu).max()))
        for k in range(idx.size):
            others = np.flatnonzero(alive & (np.arange(idx.size) != k))
            if others.size < 2:
                break
            A = np.vstack([Zu[others].T / scale, np.ones(others.size)])
            rhs = np.concatenate([Zu[k] / scale, [1.0]])
            r = linprog(np.zeros(others.size), A_eq=A, b_eq=rhs, bounds=(0, None), method="highs")
            if r.status == 0 and np.abs(A @ r.x - rhs).max() <= 1e-7:
                alive[k] = False
        out[s + idx[~alive]] = True
    return out


def start_slacks(scores: np.ndarray, bags: Bags, zi: np.ndarray, big_m: np.ndarray | None,
                 removed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The cheapest big-M slacks of a point with instance scores f_i = w·z_i + b.

    ζ_i = 0 on the best-scoring instance of each positive bag (the witness; instances in
    ``removed`` never are) and 1 elsewhere (``zi``: the instances that carry a ζ); the bag slacks
    are :math:`\xi_I = [1 - \max_{i\in I} f_i]_+` (positive bags) and
    :math:`[1 + \max_{i\in I} f_i]_+` (negative bags), raised where a non-witness row
    :math:`f_i \ge 1 - \xi_I - L_i` would be violated by a big-M L smaller than valid
    (``big_m``; None: released instances need no slack, as with indicator constraints).

    Returns (ξ per bag, ζ per entry of ``zi``, the witness index per bag).
    """
    ptr = bags.bag_ptr
    s = np.asarray(scores, dtype=float)
    arg = segment_argmax(s if removed is None or not removed.any() else np.where(removed, -np.inf, s), ptr)
    pos = bags.y == 1
    xi = np.where(pos, np.maximum(0.0, 1.0 - s[arg]), np.maximum(0.0, 1.0 + segment_max(s, ptr)))
    zeta = (zi != arg[bags.bag_index[zi]]).astype(int)
    if big_m is not None:
        need = np.zeros(bags.n_bags)
        nw = zeta == 1
        np.maximum.at(need, bags.bag_index[zi[nw]], 1.0 - s[zi[nw]] - big_m[zi[nw]])
        xi = np.maximum(xi, need)
    return xi, zeta, arg
