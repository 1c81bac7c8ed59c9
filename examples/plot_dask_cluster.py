r"""
Bench and branch and bound on a Dask cluster
============================================

Two parts of milopt run on a `dask.distributed <https://distributed.dask.org>`_ cluster
(``pip install 'milopt[dask]'``):

* ``milopt bench CONFIG --scheduler tcp://host:8786`` submits the bench's runs to the cluster;
  each worker runs them in child processes with the same hard time limits as locally, and the
  rows come back to the submitting process, which writes ``runs.csv``.
* ``milopt solve misvm-bigm ... --solver bnb --set scheduler=tcp://host:8786 workers=N``
  evaluates the open nodes of the branch and bound on the cluster, a batch per round.

Here a :class:`~distributed.LocalCluster` of two worker processes stands in for a real
cluster: replace it with the address of a running scheduler and nothing else changes.  On a
machine with two cores shared with other jobs the point is the mechanics, not the speed-up.
"""

# %%
# Start the cluster
# -----------------
# Two worker processes with one thread each; no dashboard.  The client is used to record what
# the workers did (the task stream) and to shut the cluster down at the end.  The worker
# processes are forked: by default dask *spawns* them, which imports the calling script again,
# so that a script (unlike ``milopt bench --scheduler local`` or an interactive session) would
# have to keep all its code under ``if __name__ == "__main__":``.
import logging
import tempfile
import textwrap
from pathlib import Path

import dask
import matplotlib.pyplot as plt
import pandas as pd
from dask.distributed import Client, LocalCluster, get_task_stream

dask.config.set({"distributed.worker.multiprocessing-method": "fork"})
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                       silence_logs=logging.ERROR)
client = Client(cluster)
address = cluster.scheduler_address
print("scheduler:", address, "| workers:", len(client.scheduler_info()["workers"]))

# %%
# A bench on the cluster
# ----------------------
# Two fit methods cross-validated on MUSK1 (3 folds, each held-out fold one run): the MI-SVM
# alternating heuristic and the single-instance SVM.  ``scheduler``
# takes an address or a :class:`~distributed.Client`; the command line is
# ``milopt bench dask.toml --scheduler tcp://...``.
from milopt.bench import run_bench, write_report

work = Path(tempfile.mkdtemp(prefix="milopt-dask-"))
config = work / "dask.toml"
config.write_text(textwrap.dedent("""\
    name = "dask-gallery"
    time_limit = 30.0
    folds = 3
    data = ["musk1"]

    [[fit]]
    method = "misvm-heuristic"
    [[fit]]
    method = "sil"
    """))

with get_task_stream(client) as bench_tasks:
    summary = run_bench(config, work / "bench", scheduler=client, progress=False)
print({k: summary[k] for k in ("total", "executed", "failures")}, f"{summary['seconds']:.1f} s")
runs = pd.read_csv(work / "bench" / "runs.csv")
print(runs[["method", "fold", "outcome", "bag_accuracy", "bag_auc", "fit_seconds"]]
      .sort_values(["method", "fold"]).to_string(index=False))
report = write_report(work / "bench")
print(pd.DataFrame(report["summary"])[["contender", "runs", "sgm_time"]].to_string(index=False))

# %%
# Branch and bound on the cluster
# -------------------------------
# The same exact MI-SVM solve as in the bnb example (40 MUSK1 bags, big-M MIQP of Kent & Yu),
# with the open nodes evaluated on the cluster's two workers, 8 nodes a round (``batch``).  The
# proof is the same as a serial run's: the node bounds do not depend on where they are computed.
import milopt
from milopt.models import formulation
from milopt.numerics import standardize
from milopt.solvers import solve

bags = standardize(milopt.load("gen:subset?data=musk1&bags=40&seed=0"))
model = formulation("misvm-bigm").build(bags)
with get_task_stream(client) as bnb_tasks:
    result = solve(model, "bnb", options={"scheduler": address, "workers": 2, "batch": 8,
                                          "restarts": 0, "anneal": 0, "kick_seconds": 0})
print("termination:", result.termination)
print(f"objective {result.objective:.6f}  bound {result.bound:.6f}  gap {result.gap:.1e}  "
      f"{result.nodes} nodes in {result.wall_time:.1f} s")
assert result.termination == "optimal"

# %%
# What the workers did
# --------------------
# The task stream records every task a worker ran, with its start and end.  Top: the bench's
# runs (each one a child process started by the worker); bottom: the rounds of node
# evaluations of the branch and bound.
fig, axes = plt.subplots(2, 1, figsize=(8, 4.5))
for ax, stream, title in ((axes[0], bench_tasks, "bench runs"), (axes[1], bnb_tasks, "bnb node batches")):
    data = stream.data
    workers = sorted({t["worker"] for t in data})
    t0 = min(s["start"] for t in data for s in t["startstops"])
    for t in data:
        for s in t["startstops"]:
            if s["action"] == "compute":
                ax.barh(workers.index(t["worker"]), s["stop"] - s["start"], left=s["start"] - t0, height=0.6,
                        color="C0" if title == "bench runs" else "C2", edgecolor="white")
    ax.set_yticks(range(len(workers)), [f"worker {k + 1}" for k in range(len(workers))])
    ax.set_title(f"{title}: {len(data)} tasks", fontsize=10)
axes[1].set_xlabel("seconds")
fig.tight_layout()

# %%
# Shut down
# ---------
# Close the client, then the cluster (its worker processes exit).  With a real cluster, close
# only the client.
client.close()
cluster.close()
print("cluster closed:", cluster.status.name)
plt.show()
