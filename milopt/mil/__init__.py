"""Pyomo-free mathematics of support-vector MIL shared by the models, the algorithms and the solvers.

The layer between the data / numerical kernels and the models (docs/architecture.md): nothing
here imports Pyomo, a model, an algorithm module or the solver driver, so a formulation can
compute its bounds and starting points and a native method its iterations with the same code.

* :mod:`milopt.mil.alternation`: the MI-SVM alternating heuristic (Andrews et al. 2002;
  Kent & Yu, Algorithm 1) and its step; the incumbent of ``misvm-bigm`` / ``misvm-hull``.
* :mod:`milopt.mil.bigm`: valid big-M values, incumbent bounds, bag reduction for MI-SVM.
* :mod:`milopt.mil.dcmil`: the DC-MIL error function, QP(I) and the DCPCA iteration
  (Astorino et al. 2019).

The MI-SVM slack costs, slack structure, objective and intercept live in :mod:`milopt.numerics`.
Importing this package imports nothing.
"""
