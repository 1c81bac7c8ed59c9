r"""
Native algorithms at scale: pdMISVM and VGPMIL
==============================================

The exact formulations need a MIQP solver and stay small; milopt's native algorithms are plain
numpy and scale with the data.  This example times two of them on generated data:

* **pdMISVM** (Seo, Brand et al. 2022): the multi-class MI-SVM of Andrews et al. solved by a
  multi-block ADMM (:mod:`milopt.algorithms.pdmisvm`); its cost per iteration is a few passes
  over the instance matrix, so the time grows linearly with the number of bags.  Fitted here
  on up to :math:`10^4` bags (about 55,000 instances).
* **VGPMIL** (Haußmann et al. 2017): a sparse variational Gaussian-process MIL classifier
  (:mod:`milopt.algorithms.vgpmil`), with :math:`M = 200` inducing points; its epochs cost
  :math:`O(n M^2)` for *n* instances.

The data come from the generator ``gen:multiclass`` (``milopt list`` describes it): a bag of
class *c* holds 1 to 10 instances, one of them a *key* instance drawn around the class
prototype, the rest background noise shared by all classes.  The command-line equivalent of
the largest pdMISVM fit, with 5-fold cross-validation instead of a held-out set::

    milopt fit pdmisvm --data 'gen:multiclass?classes=3&bags=10000&features=20&seed=0' --cv 5

The figures below are wall-clock times of one process on the machine that built this page;
the CPU time of the process is printed next to them (on a machine shared with other jobs the
wall time is the larger).
"""

# sphinx_gallery_thumbnail_number = 2

# %%
# Data: one draw, split by bag
# ----------------------------
# One generated set of 12,000 bags; the last 2,000 are held out.  The class prototypes are
# drawn from the seed, so training and test bags must come from the same draw.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import roc_auc_score

import milopt

pool = milopt.load("gen:multiclass?classes=3&bags=12000&features=20&seed=0")
test = pool.subset(np.arange(10_000, 12_000))
print(pool.n_bags, "bags,", pool.n_instances, "instances,", pool.n_features, "features, classes",
      np.unique(pool.y))


def timed_fit(est, bags):
    """Fit; return the estimator, wall seconds and CPU seconds of this process."""
    w0, c0 = time.perf_counter(), time.process_time()
    est.fit(bags, bags.y)
    return est, time.perf_counter() - w0, time.process_time() - c0


# %%
# pdMISVM against the number of bags
# ----------------------------------
# ``milopt.estimator("pdmisvm")`` is the estimator of ``milopt fit pdmisvm`` (features
# standardised with training statistics, the exact W update, stopping at a relative residual of
# :math:`10^{-6}`).
pd_rows = []
for n in (1_000, 10_000):
    train = pool.subset(np.arange(n))
    est, wall, cpu = timed_fit(milopt.estimator("pdmisvm"), train)
    info = est[-1].fit_info_
    acc = np.mean(est.predict(test) == test.y)
    pd_rows.append((n, train.n_instances, wall, cpu, info["iterations"], acc))
    print(f"pdMISVM {n:6d} bags ({train.n_instances:6d} instances): {wall:5.1f} s wall, {cpu:5.1f} s CPU, "
          f"{info['iterations']} iterations ({info['termination']}), held-out accuracy {acc:.3f}")

# %%
# The ADMM's history: one record per iteration (objective, residual, seconds since the call).
# The objective of the 10^4-bag fit against time:
hist = est[-1].history_
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot([h["time"] for h in hist], [h["objective"] for h in hist])
ax.set_yscale("log")
ax.set_xlabel("seconds")
ax.set_ylabel("pdMISVM objective (eq. 1)")
ax.set_title(f"pdMISVM on {pd_rows[-1][0]:,} bags: {len(hist)} ADMM iterations")
fig.tight_layout()

# %%
# VGPMIL against the number of bags
# ---------------------------------
# VGPMIL is a binary MIL classifier: a bag is positive when one of its instances is.  Here the
# positive bags are those of class 2 (their key instance is the only instance of its kind); the
# bags of classes 0 and 1 are negative.  With its defaults, VGPMIL holds out a fifth of the
# training bags, stops on their AUC and refits on all of them.
binary = pool.with_labels((pool.y == 2).astype(int))
binary_test = binary.subset(np.arange(10_000, 12_000))
vg_rows = []
for n in (250, 500, 1_000):
    train = binary.subset(np.arange(n))
    est, wall, cpu = timed_fit(milopt.estimator("vgpmil"), train)
    res = est[-1].result_
    auc = roc_auc_score(binary_test.y, est.decision_function(binary_test))
    vg_rows.append((n, train.n_instances, wall, cpu, res.iterations, auc))
    print(f"VGPMIL  {n:6d} bags ({train.n_instances:6d} instances): {wall:5.1f} s wall, {cpu:5.1f} s CPU, "
          f"{res.iterations} epochs ({res.termination}), held-out AUC {auc:.3f}")

# %%
# Time against the number of bags
# -------------------------------
# Both axes logarithmic: a slope of one is linear growth (for pdMISVM the slope between its two
# sizes).  The numbers next to the points are
# the held-out accuracy (pdMISVM, three classes) and AUC (VGPMIL, binary).
fig, ax = plt.subplots(figsize=(6, 4))
for rows, label, colour, what in ((pd_rows, "pdMISVM (exact W update)", "C0", "acc"),
                                  (vg_rows, "VGPMIL (M = 200)", "C1", "AUC")):
    n = np.array([r[0] for r in rows])
    wall = np.array([r[2] for r in rows])
    cpu = np.array([r[3] for r in rows])
    ax.loglog(n, wall, "o-", color=colour, label=f"{label}: wall")
    ax.loglog(n, cpu, "s--", color=colour, alpha=0.6, label=f"{label}: CPU")
    for r in rows:
        ax.annotate(f"{what} {r[5]:.2f}", (r[0], r[2]), xytext=(4, 4), textcoords="offset points", fontsize=8)
    slope = np.polyfit(np.log(n), np.log(cpu), 1)[0]
    print(f"{label}: log-log slope of CPU time against bags {slope:.2f}")
ax.set_xlabel("training bags")
ax.set_ylabel("seconds per fit")
ax.legend(fontsize=8)
ax.set_title("native MIL algorithms: time against data size")
fig.tight_layout()
plt.show()
