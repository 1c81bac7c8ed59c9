r"""
Certify an MI-SVM optimum with branch and bound
===============================================

MI-SVM (Andrews, Tsochantaridis & Hofmann 2002) asks for a linear classifier and one *witness*
instance per positive bag; written as the big-M mixed-integer QP of Kent & Yu (eq. 5) it is
hard for general MIQP solvers.  milopt's own branch and bound over witness selections
(``bnb``, :mod:`milopt.algorithms.bnb`) bounds each node by a convex SVM dual QP and ends with
a *proof*: no selection of witnesses has an objective below the bound it reports.

This example solves the big-M MIQP on 40 whole bags of MUSK1 (193 instances, 166 features),
prints bnb's log, and plots its incumbent and bound over time from what the returned
:class:`~milopt.solvers.SolveResult` carries: ``extra["trajectory"]`` (every improving incumbent,
seconds from the start of the call) and ``history`` (the search's lower and upper bounds).

The command-line equivalent::

    milopt solve misvm-bigm --data 'gen:subset?data=musk1&bags=40&seed=0' --solver bnb \
        --set restarts=0 anneal=0 kick_seconds=0

(Without the three ``--set`` keys, bnb first runs its starting heuristics, which on these 40
bags find the optimum before the search starts; switched off here, the search finds its
incumbents itself, which makes a more instructive picture.)
"""

# %%
# Build the model
# ---------------
# The formulation registry gives the builder; the model is a Pyomo ``ConcreteModel`` that any
# MIQP backend (SCIP, CPLEX, Gurobi, ...) would also take.
import contextlib
import sys

import matplotlib.pyplot as plt
import numpy as np

import milopt
from milopt.models import formulation
from milopt.numerics import standardize
from milopt.solvers import solve

bags = standardize(milopt.load("gen:subset?data=musk1&bags=40&seed=0"))
model = formulation("misvm-bigm").build(bags, C=1.0)
print(bags.n_bags, "bags,", int(bags.y.sum()), "positive;", bags.n_instances, "instances")

# %%
# Solve with ``bnb`` and keep the log
# -----------------------------------
# ``options`` are bnb's own keys (declared in ``milopt.algorithms.bnb.options``): no starting heuristics
# (``restarts``: MI-SVM alternation starts, ``anneal``: deterministic annealing runs,
# ``kick_seconds``: iterated local search), and a progress line every half second.
# ``verbose=True`` prints the progress lines on stderr; they are shown here.
with contextlib.redirect_stderr(sys.stdout):
    result = solve(model, "bnb", verbose=True,
                   options={"restarts": 0, "anneal": 0, "kick_seconds": 0, "log_every": 0.5})

# %%
# The result: ``optimal`` is reserved for a proof (the bound equals the objective within the
# relative gap tolerance, :math:`10^{-4}` by default).
print("termination:", result.termination)
print(f"objective {result.objective:.6f}  bound {result.bound:.6f}  gap {result.gap:.1e}")
print(f"{result.nodes} nodes, {result.wall_time:.1f} s; root bound {result.extra['root_bound']:.6f}; "
      f"{len(result.extra['trajectory'])} improving incumbents")
assert result.termination == "optimal" and result.bound <= result.objective

# %%
# Incumbent and bound over time
# -----------------------------
# The trajectory is on the clock of the whole call; the history's times start with the search,
# after any starting heuristics, so they are shifted by ``heuristic_seconds``.  The incumbent
# falls from a trivial point to the optimum as the search dives; the lower bound rises from the
# root relaxation until it meets the incumbent: that meeting is the proof.
heur = result.extra["heuristic_seconds"]
traj = np.array(result.extra["trajectory"])                       # (seconds, objective)
hist = result.history
t_hist = np.array([heur + h["time"] for h in hist])
lower = np.array([h["lower"] for h in hist])
upper = np.array([h["upper"] for h in hist])
end = result.wall_time

t_inc = np.append(traj[:, 0], end)
v_inc = np.append(traj[:, 1], traj[-1, 1])
t_bnd = np.concatenate([[heur], t_hist, [end]])
v_bnd = np.concatenate([[lower[0]], lower, [result.bound]])

fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
ax.step(t_inc, v_inc, where="post", color="C3", label="incumbent (objective of the best point)")
ax.step(t_bnd, v_bnd, where="post", color="C0", label="lower bound (search)")
ax.axhline(result.objective, color="k", lw=0.5, ls=":")
ax.set_yscale("log")
ax.set_ylabel("MI-SVM objective")
ax.set_title(f"bnb on 40 MUSK1 bags: proven optimal, {result.nodes} nodes")
ax.legend(loc="upper right")

gap = np.abs(upper - lower) / np.abs(upper)
ax2.semilogy(t_hist, np.maximum(gap, 1e-6), "o-", color="C2")
ax2.annotate(f"gap {gap[-1]:.0e}: proof", (t_hist[-1], 1e-6), xytext=(-80, 20), textcoords="offset points",
             arrowprops={"arrowstyle": "->"})
ax2.axhline(1e-4, color="k", lw=0.5, ls="--")
ax2.text(0.02, 1.5e-4, "gap tolerance", transform=ax2.get_yaxis_transform())
ax2.set_xlabel("seconds from the start of the call")
ax2.set_ylabel("relative gap")
fig.tight_layout()

# %%
# The classifier
# --------------
# The solution is loaded into the model's variables; :func:`decode` reads :math:`(w, b)`.  Its
# bag scores (the largest instance score of each bag) separate the two classes of the
# training bags up to the slacks the optimum pays for.
sol = formulation("misvm-bigm").decode(model)
scores = np.maximum.reduceat(bags.X @ sol["w"] + sol["b"], bags.bag_ptr[:-1])
fig, ax = plt.subplots(figsize=(7, 2.8))
for label, colour in ((0, "C0"), (1, "C3")):
    s = scores[bags.y == label]
    ax.scatter(s, np.full(s.size, label) + np.random.default_rng(0).uniform(-0.15, 0.15, s.size), color=colour)
ax.axvline(0, color="k", lw=0.5)
ax.set_yticks([0, 1], ["negative bags", "positive bags"])
ax.set_xlabel(r"bag score $\max_{i \in I} w^\top x_i + b$")
fig.tight_layout()
plt.show()
