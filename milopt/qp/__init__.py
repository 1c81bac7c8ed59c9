"""SVM dual and QP solvers: numpy-only, below the MIL mathematics.

The quadratic programmes the MIL methods reduce to, solved with numpy / LAPACK alone (no Pyomo,
no solver backend; the active-set method's loop is compiled by numba); the lowest numerical layer of milopt (docs/architecture.md): these modules
import nothing of milopt but :mod:`milopt.errors`, and :mod:`milopt.mil`, the models' bounds and
the native algorithms call them.

* :mod:`milopt.qp.svm_dcd`: the group-constrained SVM dual of MI-SVM (Kent & Yu eq. 3) by
  SMO-type two-coordinate descent (second-order working set, Fan, Chen & Lin 2005), warm started.
* :mod:`milopt.qp.svm_ipm`: the same dual by a dense primal-dual interior point, and its
  low-rank (Woodbury) variant.
* :mod:`milopt.qp.svm_active_set`: the same dual by a warm-started primal-dual active set
  (Hintermüller, Ito & Kunisch 2002).
* :mod:`milopt.qp.qp_simplex`: a convex QP over the unit simplex (DC-MIL's QP(I),
  Astorino et al. 2019).

Importing this package imports nothing.
"""
