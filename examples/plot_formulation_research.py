r"""
Formulation research on the Python API
======================================

The formulations are Pyomo models built from :class:`milopt.Bags` by a registered builder, so a
researcher can look inside one, change it (another big-M, a valid inequality, a variant), and
hand the changed model to any solver through :func:`milopt.solvers.solve` — the driver reads
the model as it is *now*, added rows included.

This example builds the MI-SVM big-M MIQP of Kent & Yu (eq. 5) on 12 bags of MUSK1 restricted
to their first 20 features (small enough to read, and in a dimension where the formulations'
relaxations differ), changes its big-M and adds a valid inequality, then compares the root
bounds — the optimum of the continuous relaxation, binaries in :math:`[0, 1]` — of the big-M,
SOS1 and convex-hull forms against the proven optimum.
"""

# %%
# Build ``misvm-bigm``
# --------------------
import matplotlib.pyplot as plt
import numpy as np
import pyomo.environ as pe

import milopt
from milopt.models import formulation
from milopt.numerics import standardize
from milopt.solvers import model_size, solve

raw = milopt.load("gen:subset?data=musk1&bags=12&seed=0")
bags = standardize(raw.with_X(raw.X[:, :20]))
print(bags)

bigm = formulation("misvm-bigm")
print(bigm.params.table())          # the declaration `milopt list misvm-bigm` prints
model = bigm.build(bags, C=1.0)
print(model_size(model))

# %%
# Look inside
# -----------
# Variables :math:`w, b`, one slack :math:`\xi_I` per bag, one binary :math:`\zeta_{I,i}` per
# instance of a positive bag; the margin rows and one cardinality row per positive bag
# (:math:`\sum_i \zeta_{I,i} \le |I| - 1`: at least one witness).  The model records what it is
# in ``model._milopt`` (:class:`~milopt.models.info.ModelInfo`): its class, the big-M values
# :math:`L_{I,i}` it used and the incumbent objective :math:`F` that gave them.
for comp in model.component_objects((pe.Var, pe.Constraint), active=True):
    print(f"{comp.ctype.__name__:10s} {comp.name:10s} {len(comp):4d}")
j = next(iter(model.witness))
print("a cardinality row:", model.witness[j].expr)
meta = model._milopt.meta
L = np.asarray(meta["big_m"])
print(f"incumbent F = {meta['upper_bound']:.4f}; valid big-M L from {L.min():.2f} to {L.max():.2f}")

# %%
# Change the big-M, add a valid inequality
# ----------------------------------------
# ``big_m`` takes ``valid`` (the default: per instance, provably never cuts off an optimum),
# ``mildsvm`` (the R package's rule, 100 × the sum of the columns' mean absolute values, with
# no such guarantee) or a number.  A row added by hand is an ordinary Pyomo constraint: here
# :math:`\xi_I \le F / C_I` for every bag, valid for every solution at least as good as the
# incumbent (its objective is at most :math:`F` and :math:`C_I \xi_I` is one of its terms).
models = {
    "big-M, valid L": model,
    "big-M, mildsvm L": bigm.build(bags, big_m="mildsvm"),
    "big-M, L = 10": bigm.build(bags, big_m=10.0),
    "big-M + cut": bigm.build(bags),
    "SOS1": bigm.build(bags, disjunction="sos1"),
    "hull (box)": formulation("misvm-hull").build(bags, perspective=False),
}
cut = models["big-M + cut"]
costs = np.asarray(cut._milopt.meta["costs"])
F = cut._milopt.meta["upper_bound"]
cut.xi_cut = pe.Constraint(cut.BAGS, rule=lambda m, k: m.xi[k] <= F / costs[k])
print("rows with the cut:", model_size(cut)["constraints"], "(was", model_size(model)["constraints"], ")")
for name, m in models.items():
    s = model_size(m)
    print(f"{name:18s} {s['variables']:5d} variables {s['binaries']:3d} binaries {s['constraints']:6d} rows "
          f"{s['sos']:3d} SOS1  {s['problem_class']}")

# %%
# Root bounds
# -----------
# The continuous relaxation: Pyomo's transformation ``core.relax_integer_vars`` puts the
# binaries in :math:`[0, 1]`; an SOS1 set is dropped
# (its relaxation ignores it).  The relaxations are convex QPs: HiGHS for the small ones,
# Ipopt for the hull, whose copies of :math:`w` per witness make it 10 times larger.
# The reference is the optimum, proven by milopt's branch and bound.
def root_bound(m, solver):
    pe.TransformationFactory("core.relax_integer_vars").apply_to(m)
    for sos in m.component_objects(pe.SOSConstraint, active=True):
        sos.deactivate()
    r = solve(m, solver)
    assert r.termination == "optimal", r.termination
    return max(r.objective, 0.0)


exact = solve(bigm.build(bags), "bnb")
print(f"optimum {exact.objective:.6f} ({exact.termination}, bnb, {exact.nodes} nodes); "
      f"bnb's own root bound {exact.extra['root_bound']:.6f}")
bounds = {name: root_bound(m, "ipopt" if name.startswith("hull") else "highs") for name, m in models.items()}
bounds["bnb root node"] = exact.extra["root_bound"]
for name, v in bounds.items():
    print(f"{name:18s} root bound {v:.6f}  closes {100 * v / exact.objective:5.1f} % of the gap to the optimum")

fig, ax = plt.subplots(figsize=(7, 3.8))
colours = ["C0"] * 4 + ["C1", "C2", "C3"]
bars = ax.barh(list(bounds), list(bounds.values()), color=colours)
ax.bar_label(bars, fmt="%.3f", padding=3)
ax.axvline(exact.objective, color="k", ls="--", lw=1)
ax.text(1.02 * exact.objective, (len(bounds) - 1) / 2, f"optimum {exact.objective:.3f}", rotation=90, va="center")
ax.invert_yaxis()
ax.set_xlim(0, 1.25 * exact.objective)
ax.set_xlabel("lower bound at the root")
ax.set_title("MI-SVM, 12 MUSK1 bags, 20 features: root bounds")
fig.tight_layout()

# %%
# What the chart says: with a valid big-M the relaxation of the big-M form has a positive bound
# here; a *larger* big-M (mildsvm's, or 10) lets fractional :math:`\zeta` switch the margin rows
# off and the bound falls to 0; the SOS1 form, with no big-M at all, has bound 0 too (its
# relaxation ignores the sets).  The cut :math:`\xi_I \le F/C_I` is valid but does not move the bound: the
# relaxation's optimum already satisfies it.  The box hull gives exactly the big-M bound (its
# box :math:`|w^j_k| \le W\lambda_j` adds nothing the valid big-M does not already say), and
# bnb's root node — a convex SVM dual QP over the witness choices — is the strongest.
#
# The command line builds the same models: ``milopt export misvm-bigm --data ... --set
# big_m=mildsvm -o f.lp``; ``milopt list misvm-bigm`` lists every key.
plt.show()
