r"""
A new formulation in one file
=============================

A formulation is a builder (data → Pyomo model), a decoder (solved model → classifier) and a
declaration of its parameters.  Registered from a plugin file, it is at once a citizen of
every command: ``milopt list`` shows it, ``milopt solve`` solves it with any suitable solver,
``milopt export`` writes it to ``.mps`` / ``.lp``, ``milopt fit`` cross-validates it and bench
configurations take it.

This example writes **mi-SVM** (Andrews, Tsochantaridis & Hofmann 2002, the mixed-integer
program of their Section 2) with the 1-norm regulariser of Vural et al. as a big-M MILP —
milopt ships only mi-SVM's alternating heuristic (``mi-svm-heuristic``) — with a big-M that is
provably valid.  Each instance :math:`i` of a positive bag gets a binary label :math:`u_i`
(1: positive), at least one per positive bag:

.. math::

    \min_{w, b, \xi, u}\; & \lVert w\rVert_1 + C \textstyle\sum_i \xi_i \\
    \text{s.t.}\; & -(w^\top x_i + b) \ge 1 - \xi_i, && i \text{ in a negative bag}, \\
    & w^\top x_i + b \ge 1 - \xi_i - M^+_i (1 - u_i), && i \text{ in a positive bag}, \\
    & -(w^\top x_i + b) \ge 1 - \xi_i - M^-_i u_i, && i \text{ in a positive bag}, \\
    & \textstyle\sum_{i \in I} u_i \ge 1, && I \text{ a positive bag}, \\
    & \xi \ge 0,\ u_i \in \{0, 1\}.

**Valid big-M.**  The points :math:`w = 0, b = \mp 1` are feasible with objectives
:math:`2C\,|\{I: Y_I = +1\}|` and :math:`2C\,|\{i: Y_i = -1\}|`; let :math:`F_0` be the smaller.
An optimum has :math:`\lVert w\rVert_1 \le F_0` and :math:`\xi_i \le F_0 / C`, and by Hölder
:math:`|w^\top (x_i - x_j)| \le F_0 \lVert x_i - x_j\rVert_\infty`.  If :math:`u_i = 0`, some
:math:`j` of the bag has :math:`w^\top x_j + b \ge 1 - F_0/C`, so :math:`M^+_i = F_0/C + F_0
\max_{j \in I}\lVert x_i - x_j\rVert_\infty` suffices.  If :math:`u_i = 1`, every negative
instance :math:`k` has :math:`w^\top x_k + b \le F_0/C - 1`, so :math:`M^-_i = F_0/C + F_0
\min_k \lVert x_i - x_k\rVert_\infty` suffices.  Neither cuts off an optimal solution.
(With :math:`\tfrac12\lVert w\rVert^2` instead, the same argument gives
:math:`W = \sqrt{2F_0}` and Euclidean distances: an MIQP, for SCIP.)
"""

# %%
# The plugin file
# ---------------
# Everything the formulation needs, in one file: the builder, the decoder, the parameter
# declaration (:class:`milopt.params.ParamSet`: typed, with bounds and a help line, the same
# declaration ``--set`` parses and ``milopt list`` prints) and one call to
# :func:`milopt.models.register_formulation`.  The problem class ("MILP") is declared so that
# ``milopt solve`` refuses a solver that cannot take it before building anything.
import subprocess
import sys
import tempfile
from pathlib import Path

PLUGIN = r'''
"""mi-SVM (Andrews et al. 2002), 1-norm, as a big-M MILP with a provably valid big-M."""
import numpy as np
import pyomo.environ as pe
from scipy.spatial.distance import cdist

from milopt.models import Formulation, register_formulation
from milopt.params import Float, ParamSet

PARAMS = ParamSet(C=Float(1.0, "cost of an instance slack", gt=0))


def big_m(bags, C):
    """M+ and M- of every instance of a positive bag (the docstring's bounds)."""
    X, y, ptr = bags.X, bags.instance_bag_y, bags.bag_ptr
    F0 = min(2 * C * int(np.sum(bags.y == 1)), 2 * C * int(np.sum(y != 1)))
    far = np.zeros(len(X))                    # largest inf-norm distance within the bag
    for lo, hi in zip(ptr[:-1], ptr[1:]):
        far[lo:hi] = cdist(X[lo:hi], X[lo:hi], "chebyshev").max(axis=1)
    pos = np.flatnonzero(y == 1)
    near_neg = cdist(X[pos], X[y != 1], "chebyshev").min(axis=1)
    return pos, F0 / C + F0 * far[pos], F0 / C + F0 * near_neg


def build(bags, C=1.0):
    X, y, ptr = bags.X, bags.instance_bag_y, bags.bag_ptr
    pos, m_plus, m_minus = big_m(bags, C)
    neg = np.flatnonzero(y != 1)
    m = pe.ConcreteModel(name="mi_svm_bigm")
    m.F = pe.RangeSet(0, X.shape[1] - 1)
    m.N = pe.RangeSet(0, len(X) - 1)
    m.w = pe.Var(m.F, initialize=0.0)
    m.v = pe.Var(m.F, domain=pe.NonNegativeReals)          # v >= |w|
    m.b = pe.Var(initialize=0.0)
    m.xi = pe.Var(m.N, domain=pe.NonNegativeReals)
    m.u = pe.Var(pos.tolist(), domain=pe.Binary)
    score = {i: sum(float(X[i, k]) * m.w[k] for k in m.F) + m.b for i in range(len(X))}
    m.negative = pe.Constraint(neg.tolist(), rule=lambda m, i: -score[i] >= 1 - m.xi[i])
    mp, mm = dict(zip(pos.tolist(), m_plus)), dict(zip(pos.tolist(), m_minus))
    m.as_positive = pe.Constraint(pos.tolist(), rule=lambda m, i: score[i] >= 1 - m.xi[i] - mp[i] * (1 - m.u[i]))
    m.as_negative = pe.Constraint(pos.tolist(), rule=lambda m, i: -score[i] >= 1 - m.xi[i] - mm[i] * m.u[i])
    bags_pos = [j for j in range(bags.n_bags) if bags.y[j] == 1]
    m.one_positive = pe.Constraint(bags_pos, rule=lambda m, j: sum(m.u[i] for i in range(ptr[j], ptr[j + 1])) >= 1)
    m.v_pos = pe.Constraint(m.F, rule=lambda m, k: m.v[k] >= m.w[k])
    m.v_neg = pe.Constraint(m.F, rule=lambda m, k: m.v[k] >= -m.w[k])
    m.obj = pe.Objective(expr=sum(m.v[k] for k in m.F) + C * sum(m.xi[i] for i in m.N))
    return m


def decode(model):
    w = np.array([pe.value(model.w[k]) for k in model.F])
    labels = {i: round(pe.value(model.u[i])) for i in model.u}
    return {"w": w, "b": float(pe.value(model.b)), "instance_labels": labels}


register_formulation(Formulation("mi-svm-bigm", build, decode, PARAMS, "MILP",
                                 doc="mi-SVM (Andrews et al. 2002), 1-norm, as a big-M MILP, valid big-M (plugin)"))
'''

plugin = Path(tempfile.mkdtemp(prefix="milopt-plugin-")) / "mi_svm_plugin.py"
plugin.write_text(PLUGIN)

# %%
# On the command line
# -------------------
# ``milopt --plugin FILE COMMAND ...`` loads the file before anything is looked up by name
# (so do the environment variable ``MILOPT_PLUGINS`` and a bench configuration's ``imports``).
# Here the commands run in child processes, as a shell would run them.
data = "gen:subset?data=musk1&bags=6&seed=0"


def milopt_cli(*args):
    cmd = [sys.executable, "-m", "milopt.cli", "--plugin", str(plugin), *args]
    print("$ milopt --plugin mi_svm_plugin.py", " ".join(f"'{a}'" if "&" in a else a for a in args))
    out = subprocess.run(cmd, capture_output=True, text=True)
    print(out.stdout.strip())
    assert out.returncode == 0, out.stderr


milopt_cli("list", "mi-svm-bigm")
milopt_cli("solve", "mi-svm-bigm", "--data", data, "--solver", "highs", "--set", "C=1")
lp = plugin.with_name("mi_svm_musk6.lp")
milopt_cli("export", "mi-svm-bigm", "--data", data, "-o", str(lp))
print(lp.read_text().splitlines()[0], "...", f"({lp.stat().st_size:,} bytes)")

# %%
# A solver that cannot take a MILP (Ipopt solves continuous problems) is refused from the
# declared class, before the build, with one line and a non-zero exit status:
out = subprocess.run([sys.executable, "-m", "milopt.cli", "--plugin", str(plugin), "solve", "mi-svm-bigm",
                      "--data", data, "--solver", "ipopt"], capture_output=True, text=True)
print("exit status", out.returncode, "|", out.stderr.strip().splitlines()[-1])

# %%
# In Python
# ---------
# :func:`milopt.plugins.load` imports the same file; the registry then hands the formulation out
# by name, and it builds, solves and exports like a built-in one.
import matplotlib.pyplot as plt
import numpy as np

import milopt
from milopt.models import formulation
from milopt.numerics import standardize
from milopt.plugins import load as load_plugin
from milopt.solvers import export, solve

mod = load_plugin(str(plugin))
form = formulation("mi-svm-bigm")
bags = standardize(milopt.load(data))       # milopt solve standardises the features too
model = form.build(bags, C=1.0)
result = solve(model, "scip")             # the other MILP solver installed
sol = form.decode(model)
print(result.termination, f"objective {result.objective:.6f}, bound {result.bound:.6f}")
print("exported:", export(model, plugin.with_name("again.mps")))

# %%
# The optimum labels at least one instance of every positive bag positive.  Left: instance
# scores :math:`w^\top x_i + b` by bag, coloured by the chosen label.  Right: how loose the
# valid big-M is — each :math:`M^+_i` of an instance labelled negative against the smallest value
# the optimum needs, :math:`1 - \xi_i - (w^\top x_i + b)`: the distance a tighter bound could gain.
scores = bags.X @ sol["w"] + sol["b"]
pos, m_plus, m_minus = mod.big_m(bags, 1.0)
u = np.array([sol["instance_labels"][i] for i in pos])
xi = np.array([model.xi[i].value for i in range(bags.n_instances)])
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
bag_of = np.repeat(np.arange(bags.n_bags), np.diff(bags.bag_ptr))
neg = bags.instance_bag_y != 1
ax.scatter(bag_of[neg], scores[neg], color="C0", label="negative bag")
ax.scatter(bag_of[pos][u == 1], scores[pos][u == 1], color="C3", label="positive bag, u = 1")
ax.scatter(bag_of[pos][u == 0], scores[pos][u == 0], facecolor="none", edgecolor="C3", label="positive bag, u = 0")
ax.axhline(0, color="k", lw=0.5)
ax.set_xlabel("bag")
ax.set_ylabel(r"$w^\top x_i + b$")
ax.legend(fontsize=8)
need = 1 - xi[pos] - scores[pos]
ax2.scatter(need[u == 0], m_plus[u == 0], color="C3")
lim = [0, 1.05 * m_plus.max()]
ax2.plot(lim, lim, color="0.6", lw=0.8)
ax2.set_xlabel(r"needed: $1 - \xi_i - (w^\top x_i + b)$")
ax2.set_ylabel(r"valid big-M $M^+_i$")
ax2.set_title("big-M rows of instances labelled negative", fontsize=10)
fig.tight_layout()
plt.show()
