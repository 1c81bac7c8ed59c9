r"""The node QP of the MI-SVM branch and bound behind one protocol, :class:`NodeQP`.

A node's relaxation is the SVM dual of its effective set E (negative instances and fixed
witnesses), with one cap C_I per bag:

.. math::

    \max_\alpha\; D(\alpha) = \textstyle\sum_i \alpha_i - \tfrac12 (y\circ\alpha)^\top K (y\circ\alpha)
    \quad\text{s.t.}\quad \alpha \ge 0 \text{ on } E,\;\; \textstyle\sum_{i\in I}\alpha_i \le C_I,\;\;
    y^\top\alpha = 0 .

A node QP returns multipliers that are *exactly dual feasible* (projected when the method's
iterate is not), so D(α) is a lower bound of the node by weak duality however early the method
stopped (docs/exact_misvm.md).  The implementations: the primal-dual active-set method
warm-started from the parent's multipliers (:class:`ActiveSetQP`; Hintermüller, Ito & Kunisch
2002), the dense or low-rank interior point (:class:`InteriorPointQP`) and the warm-started
two-coordinate descent (:class:`CoordinateDescentQP`; Fan, Chen & Lin 2005), chained by
:class:`FallbackQP` (the first that succeeds answers).  :func:`node_qp` builds the chain of the
option ``qp``.
"""
from __future__ import annotations

import math
import time
from typing import Protocol

import numpy as np

#: stopping tolerances of the dense interior-point node QPs (complementarity, dual residual):
#: the dual objective of the projected multipliers is then within about 1e-6 of the node's
#: optimum on MUSK1 nodes (11 % fewer iterations than 1e-10 / 1e-7); it is a valid bound either way
NODE_IPM_TOL = 1e-8
NODE_IPM_RD_TOL = 1e-4
#: dense kernel matrix up to this many instances (else rows from the features on demand); kernel
#: blocks of effective sets larger than this are not gathered for the active-set method
DENSE_MAX = 3000
#: node QPs by the interior-point method up to this many effective instances (else warm-started
#: SMO); the active-set method works on the kernel block up to this size, beyond it (linear
#: kernel) on the features
IPM_MAX = 400


class NodeQP(Protocol):
    """A node QP solver: ``solve(eng, alpha0, active, deadline, tol, target, tight)`` returns
    ``(alpha, F, iterations, newton)`` — α exactly dual feasible on the effective set
    ``active`` (zero elsewhere), F = y − K(y∘α), the method's iterations, and the dense interior
    point's last Newton solver (else None) — or None when the method failed (the next of a
    :class:`FallbackQP` then answers).  ``alpha0``: the parent's multipliers (warm start);
    ``target``: the bound that closes the node (a method may stop once it is reached);
    ``tight``: a leaf that the default accuracy cannot close."""

    def solve(self, eng, alpha0, active, deadline, tol, target=math.inf, tight=False):
        ...


def effective_groups(eng, active):
    """(rows, bags, group of each row) of the effective set ``active``, the bags numbered
    0..G-1 as the node QPs take them; bags and groups are None when the set holds one class."""
    idx = np.flatnonzero(active)
    yE = eng.y[idx]
    if not ((yE > 0).any() and (yE < 0).any()):
        return idx, None, None
    gi, ginv = np.unique(eng.bag_of[idx], return_inverse=True)
    return idx, gi, ginv


class ActiveSetQP:
    """The primal-dual active-set method warm-started from ``alpha0`` (not at the root, nor for
    a ``tight`` re-solve); None when it does not converge.  Exact up to rounding when it does;
    no Newton solver is returned (the look-ahead builds its matrix on the free multipliers).
    Counts solved / failed calls in ``eng.active_set_log``."""

    def solve(self, eng, alpha0, active, deadline, tol, target=math.inf, tight=False):
        if tight or not alpha0.any():
            return None
        r = self.warm(eng, alpha0, active)
        eng.active_set_log[0 if r is not None else 1] += 1
        return r

    #: the method's iteration limit, and the most multipliers it may free, at a node
    max_iter = 200
    max_free = IPM_MAX

    @staticmethod
    def warm(eng, alpha0, active):
        """The method from ``alpha0`` on ``active`` (also the heuristics' warm re-solve): one
        compiled call (``milopt.qp.svm_active_set._active_set_rows``) that numbers the
        effective set's bags, solves, projects and forms F.  On the kernel rows up to
        :data:`IPM_MAX` effective instances (and for every kernel), else on the features."""
        from milopt.qp import svm_active_set

        n_e = int(np.count_nonzero(active))
        use_q = bool(eng.kernel or (eng.dense and n_e <= IPM_MAX))
        if use_q and n_e > DENSE_MAX:
            return None   # a kernel block too large for the method at every node
        empty = np.zeros((1, 1))
        Q, U = (eng.signed(True), empty) if use_q else (empty, eng.signed(False))
        try:
            with np.errstate(all="ignore"):
                status, alpha, F, it = svm_active_set._active_set_rows(
                    Q, U, use_q, eng.y, eng.bag_of, eng.costs, np.ascontiguousarray(alpha0, dtype=float),
                    np.ascontiguousarray(active, dtype=bool), ActiveSetQP.max_iter, 1e-6, ActiveSetQP.max_free, 5)
        except (ValueError, FloatingPointError, ZeroDivisionError):
            return None
        if status != 0:
            return None
        return alpha, F, int(it), None


class InteriorPointQP:
    """The interior-point method (no warm start; near exact), its multipliers projected onto the
    dual feasible set.  Dense Newton systems, or with ``eng.lowrank`` the Woodbury form on the
    features.  The dense method stops early once the dual objective of its projected iterate
    reaches ``target`` (no Newton solver is then returned).  ``tight``: tolerances 1e-11 / 1e-9
    instead of :data:`NODE_IPM_TOL` / :data:`NODE_IPM_RD_TOL`.  None when it fails numerically."""

    def solve(self, eng, alpha0, active, deadline, tol, target=math.inf, tight=False):
        try:
            with np.errstate(all="ignore"):
                alpha, F, it, newton = self._solve(eng, active, target, tight)
        except (ZeroDivisionError, FloatingPointError, ValueError, np.linalg.LinAlgError):
            return None
        if np.all(np.isfinite(alpha)) and np.all(np.isfinite(F)):
            return alpha, F, it, newton
        return None

    def _solve(self, eng, active, target, tight):
        from milopt.qp.svm_ipm import _ipm, _ipm_lowrank

        idx, gi, ginv = effective_groups(eng, active)
        alpha = np.zeros(eng.n)
        if gi is None:
            # one class only: Σ y α = 0 leaves α = 0 as the only dual feasible point (w = 0)
            return alpha, eng.y.copy(), 0, None
        if eng.lowrank:
            r = _ipm_lowrank(eng.X[idx], eng.y[idx], ginv, eng.costs[gi], tol=1e-10, max_iter=200)
        else:
            KE = eng.Krows(idx, idx)
            stop = reaches(eng, target, idx, KE) if math.isfinite(target) else None
            r = _ipm(KE, eng.y[idx], ginv, eng.costs[gi], tol=1e-11 if tight else NODE_IPM_TOL, max_iter=200,
                     rd_tol=1e-9 if tight else NODE_IPM_RD_TOL, stop=stop)
        alpha[idx] = eng.project(r["alpha"], idx)
        F = eng.y - eng.Kv(eng.y * alpha)
        return alpha, F, int(r["iterations"]), (None if eng.lowrank or not r["converged"] else r.get("newton"))


def reaches(eng, target, idx, KE):
    """The interior-point method's early stop: whether the projected iterate's dual objective
    reaches ``target`` (D of the unprojected iterate, from Q a, is only a first screen: the
    projection can raise D, so a skipped check only delays the stop)."""
    yi = eng.y[idx]

    def stop(a, Qa):
        if float(a.sum() - 0.5 * a @ Qa) < target:
            return False
        p = eng.project(a, idx)
        v = p * yi
        return float(p.sum() - 0.5 * v @ (KE @ v)) >= target

    return stop


class CoordinateDescentQP:
    """The two-coordinate descent (``eng.smo``, :class:`milopt.qp.svm_dcd.GroupSVMDual`)
    warm-started from ``alpha0`` restricted to the effective set, to KKT tolerance ``tol`` or
    the deadline; every pair step keeps α feasible.  Never fails."""

    def solve(self, eng, alpha0, active, deadline, tol, target=math.inf, tight=False):
        smo = eng.smo
        alpha0 = np.where(active, alpha0, 0.0)
        smo.alpha = alpha0.copy()
        smo.active = active.copy()
        smo.gsum = np.add.reduceat(smo.alpha, smo.gptr[:-1])
        smo.F = eng.y - eng.Kv(eng.y * smo.alpha)
        smo.tol = tol
        its = 0
        while True:
            info = smo.solve()
            its += info["iterations"]
            if info["converged"] or time.perf_counter() > deadline or info["iterations"] < smo.max_iter:
                break
        return smo.alpha.copy(), smo.F.copy(), its, None


class FallbackQP:
    """The first of ``solvers`` that succeeds (the last one should never fail)."""

    def __init__(self, *solvers):
        self.solvers = solvers

    def solve(self, eng, alpha0, active, deadline, tol, target=math.inf, tight=False):
        for s in self.solvers:
            r = s.solve(eng, alpha0, active, deadline, tol, target, tight)
            if r is not None:
                return r
        return None


def node_qp(qp, auto):
    """The node QP chain: ``qp`` the cold method ('ipm' or 'smo'), ``auto`` whether the
    warm-started active-set method comes first (option ``qp=auto``); the coordinate descent
    always last."""
    chain = [ActiveSetQP()] if auto else []
    if qp == "ipm":
        chain.append(InteriorPointQP())
    chain.append(CoordinateDescentQP())
    return FallbackQP(*chain)
