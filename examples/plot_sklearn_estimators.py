r"""
milopt estimators in scikit-learn
=================================

Every method of ``milopt fit`` is a scikit-learn estimator whose samples are *bags*: ``fit``
takes a :class:`milopt.Bags` (or a list of per-bag arrays) and the bag labels,
``decision_function`` returns one score per bag, ``predict`` one label per bag.  So the usual
tools work unchanged: :class:`~sklearn.pipeline.Pipeline`, :class:`~sklearn.model_selection.GridSearchCV`,
:func:`~sklearn.model_selection.cross_val_score`, :func:`~sklearn.base.clone`.

This example holds out a third of the MUSK1 bags, tunes the MI-SVM alternating heuristic
(Andrews et al. 2002) by a grid search on the rest, compares it with the single-instance SVM
baseline and VGPMIL (Haußmann et al. 2017), and draws their ROC curves on the held-out bags.
"""

# sphinx_gallery_thumbnail_number = 2

# %%
# Bags, split by bag
# ------------------
# A split must never separate the instances of one bag: split the *bag indices*, then take
# :meth:`milopt.Bags.subset`.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import RocCurveDisplay, roc_auc_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import Pipeline

import milopt
from milopt.estimators.api import BagScaler

bags = milopt.load("musk1")
train_ids, test_ids = train_test_split(np.arange(bags.n_bags), test_size=1 / 3, stratify=bags.y,
                                       random_state=0)
train, test = bags.subset(train_ids), bags.subset(test_ids)
print(f"train: {train.n_bags} bags ({train.n_instances} instances); test: {test.n_bags} bags")

# %%
# A pipeline
# ----------
# :class:`~milopt.estimators.api.BagScaler` standardises the instance features with the
# training bags' statistics (what ``milopt fit`` does on each fold); a milopt estimator follows.
# :func:`milopt.estimator` builds the same pipeline by name, with the CLI's defaults and seed:
# ``milopt.estimator("misvm-heuristic", C=1)`` is ``milopt fit misvm-heuristic --set C=1``.
by_hand = Pipeline([("scale", BagScaler()), ("model", milopt.estimator("misvm-heuristic", scale=False))])
print(by_hand)
print(milopt.estimator("misvm-heuristic"))

# %%
# GridSearchCV over the cost C
# ----------------------------
# Stratified folds over the *bags* (the rows of a ``Bags`` are bags for scikit-learn).  The
# parameter path is ``model__C``; scoring by the area under the ROC curve of the bag scores.
cv = StratifiedKFold(4, shuffle=True, random_state=0)
grid = GridSearchCV(by_hand, {"model__C": [0.01, 0.1, 1.0, 10.0]}, cv=cv, scoring="roc_auc")
grid.fit(train, train.y)
for C, m, s in zip(grid.cv_results_["param_model__C"], grid.cv_results_["mean_test_score"],
                   grid.cv_results_["std_test_score"]):
    print(f"C = {C:<5}  AUC {m:.3f} ± {s:.3f}")
print("best:", grid.best_params_)

fig, ax = plt.subplots(figsize=(5, 3.2))
ax.errorbar(grid.cv_results_["param_model__C"].astype(float), grid.cv_results_["mean_test_score"],
            yerr=grid.cv_results_["std_test_score"], marker="o", capsize=3)
ax.set_xscale("log")
ax.set_xlabel("C")
ax.set_ylabel("4-fold AUC (training bags)")
ax.set_title("misvm-heuristic: grid search")
fig.tight_layout()

# %%
# Predictions on new bags
# -----------------------
# The refitted best pipeline scores bags it has never seen.  Two other methods, by name:
# the single-instance SVM (each instance gets its bag's label) and VGPMIL.
models = {
    f"misvm-heuristic (C={grid.best_params_['model__C']})": grid.best_estimator_,
    "sil": milopt.estimator("sil").fit(train, train.y),
    "vgpmil": milopt.estimator("vgpmil").fit(train, train.y),
}
fig, ax = plt.subplots(figsize=(5, 5))
for name, est in models.items():
    scores = est.decision_function(test)
    acc = np.mean(est.predict(test) == test.y)
    print(f"{name:28s} test AUC {roc_auc_score(test.y, scores):.3f}, accuracy {acc:.3f}")
    RocCurveDisplay.from_predictions(test.y, scores, name=name, ax=ax)
ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
ax.set_title(f"ROC on {test.n_bags} held-out MUSK1 bags")
fig.tight_layout()

# %%
# The first held-out bags: their labels, predictions and scores (a bag's score is the largest
# score of its instances for the MI-SVM).
best = grid.best_estimator_
for j, (label, pred, score) in enumerate(zip(test.y[:6], best.predict(test)[:6], best.decision_function(test)[:6])):
    print(f"bag {test_ids[j]:3d}: label {label}, predicted {pred}, score {score:+.3f}")
plt.show()
