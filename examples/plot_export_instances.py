r"""
Write instances for an external solver and read them back
==========================================================

milopt writes its models to ``.mps`` and ``.lp`` files itself (:mod:`milopt.io`), in the
dialect that CPLEX, Gurobi, Xpress, SCIP and HiGHS all read.  A solver developer can take those
files as benchmark instances without installing Pyomo or milopt.

This example builds the MI-SVM big-M model of Kent & Yu (eq. 5) in its 1-norm variant
(``norm="l1"``: a mixed-integer *linear* program, so that both HiGHS and SCIP can solve it) on
12 bags of the shipped MUSK1 data, writes it to ``.mps`` and to ``.lp``, reads each file back
with two different solvers — HiGHS through ``highspy`` and SCIP through ``pyscipopt`` — and
checks that all four optima equal the one milopt finds on the model in memory.

The command-line equivalent of the export is::

    milopt export misvm-bigm --data 'gen:subset?data=musk1&bags=12&seed=0' --set norm=l1 -o musk12.mps
"""

# %%
# The data and the model
# ----------------------
# ``gen:subset`` draws whole bags of a shipped data set, stratified by label, with a seed.
# Features are standardised as ``milopt solve`` and ``milopt export`` do.
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import milopt
from milopt.models import formulation
from milopt.numerics import standardize
from milopt.solvers import export, solve
from milopt.solvers.extract import extract

bags = standardize(milopt.load("gen:subset?data=musk1&bags=12&seed=0"))
print(bags.n_bags, "bags,", bags.n_instances, "instances,", bags.X.shape[1], "features")

model = formulation("misvm-bigm").build(bags, norm="l1")

# %%
# The model's matrix form
# -----------------------
# Every writer and every solver backend starts from one :class:`milopt.matrix.MatrixForm`,
# extracted once from the Pyomo model.  Its constraint matrix has one block of margin rows per
# instance (dense: 166 features), the rows :math:`-v \le w \le v` of the 1-norm, and one
# cardinality row per positive bag over the binaries :math:`\zeta`.
mf = extract(model)
print(f"{mf.n_cols} columns ({int(np.sum(mf.integrality))} integer), {mf.A.shape[0]} rows, {mf.A.nnz} nonzeros")

fig, ax = plt.subplots(figsize=(6, 4.5))
ax.spy(mf.A, markersize=0.3, aspect="auto")
ax.set_xlabel("column")
ax.set_ylabel("row")
ax.set_title("constraint matrix of misvm-bigm (norm=l1), 12 MUSK1 bags")
fig.tight_layout()

# %%
# Write ``.mps`` and ``.lp``
# --------------------------
# :func:`milopt.solvers.export` returns the model's size and the file written.  The bytes do
# not depend on the installed versions of Pyomo, HiGHS or SCIP.
workdir = Path(tempfile.mkdtemp(prefix="milopt-export-"))
files = {}
for suffix in (".mps", ".lp"):
    path = workdir / f"musk12{suffix}"
    info = export(model, path)
    files[suffix] = path
    print(f"{path.name}: {path.stat().st_size:,} bytes, {info['variables']} variables, "
          f"{info['constraints']} constraints, class {info['problem_class']}")

# %%
# The ``.lp`` file is plain text: the section headers, and the first lines of the first margin
# row (every column is declared, hence the zero coefficients of the objective).
lines = files[".lp"].read_text().splitlines()
start = lines.index("Subject To")
print("sections:", [ln for ln in lines if ln and not ln.startswith((" ", "\\")) and ":" not in ln])
for line in lines[start:start + 4]:
    print(line[:100] + (" ..." if len(line) > 100 else ""))


# %%
# Read the files back with two solvers
# ------------------------------------
# Each reader gets the file and nothing else; both solve to a relative gap of :math:`10^{-9}`.
def read_with_highs(path):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.run()
    return h.modelStatusToString(h.getModelStatus()), h.getInfo().objective_function_value


def read_with_scip(path):
    import locale

    import pyscipopt

    s = pyscipopt.Model()
    s.hideOutput()
    # PySCIPOpt's reader restores the numeric locale by the name locale.getlocale() gives,
    # which is wrong for C.UTF-8 in a process that called setlocale(LC_ALL, "") (as Sphinx
    # does); reading under the plain C locale avoids it
    saved = locale.setlocale(locale.LC_NUMERIC)
    locale.setlocale(locale.LC_NUMERIC, "C")
    try:
        s.readProblem(str(path))
    finally:
        locale.setlocale(locale.LC_NUMERIC, saved)
    s.setParam("limits/gap", 1e-9)
    s.optimize()
    return s.getStatus(), s.getObjVal()


readers = {"HiGHS (highspy)": read_with_highs, "SCIP (pyscipopt)": read_with_scip}
results = {}
for suffix, path in files.items():
    for who, read in readers.items():
        status, value = read(path)
        results[f"{who}\nreads {suffix}"] = value
        print(f"{who:17s} {suffix:5s} {status:8s} objective {value:.8f}")

# %%
# milopt's own solve of the model in memory (HiGHS through the driver, the same call
# ``milopt solve misvm-bigm ... --solver highs`` makes):
ref = solve(model, "highs", mip_gap=1e-9)
print(ref.termination, f"objective {ref.objective:.8f}", f"bound {ref.bound:.8f}")

# %%
# All five optima agree to the solvers' tolerances.
values = np.array(list(results.values()))
print("largest relative difference to milopt's optimum:", f"{np.max(np.abs(values - ref.objective)) / ref.objective:.1e}")
assert np.allclose(values, ref.objective, rtol=1e-6)

fig, ax = plt.subplots(figsize=(7, 3.5))
labels = ["milopt\n(in memory)"] + list(results)
ax.bar(labels, [ref.objective] + list(values), color=["C0"] + ["C1", "C2"] * 2)
ax.set_ylim(0.98 * ref.objective, 1.01 * ref.objective)
ax.set_ylabel("optimal objective")
ax.set_title("one optimum, five ways: in memory, and two files read by two solvers")
fig.tight_layout()
plt.show()
