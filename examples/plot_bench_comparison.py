r"""
Compare solvers with ``milopt bench``
=====================================

``milopt bench CONFIG.toml`` runs every combination of formulations, data sets and solvers
that a configuration lists, each run in its own process with a hard time limit, appends one
row per run to ``runs.csv`` (durable and resumable), and ``milopt report DIR`` turns the table
into shifted geometric means, Dolan–Moré performance profiles and a Markdown summary.

This example compares, on three small stratified subsets of MUSK1:

* the MI-SVM big-M MIQP (Kent & Yu, eq. 5) solved by SCIP and by milopt's branch and bound
  ``bnb``;
* its 1-norm variant, a MILP, solved by HiGHS and by SCIP.

The command-line equivalent of the two Python calls below::

    milopt bench gallery.toml --out bench-gallery
    milopt report bench-gallery
"""

# %%
# The configuration
# -----------------
# A TOML file: top-level defaults (time limit per run, parallel jobs, data sets), then one
# ``[[solve]]`` entry per formulation with its solvers and parameters (lists are grids).
import tempfile
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from milopt.bench import run_bench, write_report

work = Path(tempfile.mkdtemp(prefix="milopt-bench-"))
config = work / "gallery.toml"
config.write_text(textwrap.dedent("""\
    name = "gallery"
    time_limit = 15.0   # seconds per run, bounding build and solve
    jobs = 2            # runs at once
    isolation = "subprocess"   # each run: a fresh `python -m milopt.bench.worker` (see below)
    data = ["gen:subset?data=musk1&bags=6&seed=0",
            "gen:subset?data=musk1&bags=9&seed=1",
            "gen:subset?data=musk1&bags=12&seed=2"]

    [solvers.scip]
    threads = 1

    [[solve]]           # MIQP: the big-M model of Kent & Yu (eq. 5)
    formulation = "misvm-bigm"
    solvers = ["scip", "bnb"]

    [[solve]]           # MILP: its 1-norm variant
    formulation = "misvm-bigm"
    params = { norm = "l1" }
    solvers = ["highs", "scip"]
    """))
print(config.read_text())

# %%
# Run
# ---
# :func:`milopt.bench.run_bench` is ``milopt bench``.  Every run is a process of its own, killed
# at ``kill_after`` seconds if it overruns.  By default (``isolation = "auto"``) the runs are
# forked from a :mod:`multiprocessing` fork server that imported milopt once; that server
# imports the calling script again, so a script using the default must keep all of its code
# under ``if __name__ == "__main__":``.  This page sets ``isolation = "subprocess"`` instead:
# each run starts a fresh interpreter (2–3 s more per run), and the script needs no guard.
# ``milopt bench`` on the command line needs neither.
out = work / "bench-gallery"
summary = run_bench(config, out, progress=False)
print({k: summary[k] for k in ("total", "executed", "failures")}, f"{summary['seconds']:.1f} s")

# %%
# The table of runs
# -----------------
# One row per run (``runs.csv``, documented in the bench page): the problem, the solver, the
# outcome and termination, objective, bound, gap and the time charged.
runs = pd.read_csv(out / "runs.csv")
runs["bags"] = runs["data"].str.extract(r"bags=(\d+)").astype(int)
print(runs[["formulation", "params", "bags", "solver", "termination", "objective", "bound", "gap", "time"]]
      .sort_values(["params", "bags", "solver"]).to_string(index=False))

# %%
# The report
# ----------
# :func:`milopt.bench.write_report` is ``milopt report``.  A run counts as *solved* when it is
# proven optimal, its solution verifies against the model (feasible within :math:`10^{-6}`,
# objective recomputed) and agrees with the best known value; unsolved runs are charged the
# time limit.  ``sgm_time``: shifted geometric mean of the time (shift 10 s).
report = write_report(out)
table = pd.DataFrame(report["summary"])
print(table[["contender", "runs", "solved", "time_limit", "sgm_time", "mean_gap"]].to_string(index=False))
print("files:", sorted(Path(f).name for f in report["files"].values()))

# %%
# Performance profile
# -------------------
# Dolan & Moré (2002): for each solver, the share of problems it solved within a factor
# :math:`\tau` of the fastest solver on that problem.  A solver not given a problem (HiGHS on
# the MIQPs, bnb on the MILPs) fails on it, so the curves end below one.  The report draws the
# same profile into ``profile_solve.png``; here it is recomputed from ``runs.csv``.
solved = runs[runs["outcome"].eq("ok") & runs["termination"].eq("optimal")]
best = solved.groupby("problem")["time"].min()
problems = runs["problem"].unique()
taus = np.logspace(0, np.log10(64), 200)
colour = {s: f"C{k}" for k, s in enumerate(sorted(runs["solver"].unique()))}
fig, ax = plt.subplots(figsize=(6, 4))
for solver, g in solved.groupby("solver"):
    ratios = (g.set_index("problem")["time"] / best.reindex(g["problem"]).values).values
    rho = [(ratios <= t).sum() / len(problems) for t in taus]
    ax.step(taus, rho, where="post", color=colour[solver], label=solver)
ax.set_xscale("log", base=2)
ax.set_ylim(0, 1.02)
ax.set_xlabel(r"$\tau$ (time / best time on the problem)")
ax.set_ylabel(r"share of the problems solved within $\tau$")
ax.set_title(f"performance profile, {len(problems)} problems")
ax.legend()
fig.tight_layout()

# %%
# And time against problem size, per formulation: each point one run, hollow when the run
# was not proven optimal in the time limit.
fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), sharey=True)
for ax, (params, g) in zip(axes, runs.groupby("params")):
    for solver, h in g.groupby("solver"):
        opt = h["termination"].eq("optimal")
        ax.plot(h["bags"], h["time"], "-", color=colour[solver], alpha=0.4, label=solver)
        ax.scatter(h["bags"][opt], h["time"][opt], color=colour[solver])
        ax.scatter(h["bags"][~opt], h["time"][~opt], facecolor="none", edgecolor=colour[solver])
    ax.set_title("MILP (norm = l1)" if "l1" in params else "MIQP (norm = l2)")
    ax.set_xlabel("bags")
    ax.legend()
axes[0].set_ylabel("seconds (charged)")
fig.tight_layout()
plt.show()
