"""Batch-wise vs instance-wise classifiers on CAD-like data (Vural et al. 2009, Tables 2-3, 5; Figs. 3-5 in shape).

For each data seed, ``gen:cad`` images are split into training and test images (stratified by
image label, half each); features are standardised with training statistics.  Methods:

* ``SVM``            1-norm SVM LP (eq. 1; BatchSVM with θ = 0), ν by CV
* ``BatchSVM``       LP of eq. 4 with thresholded R (eq. 13), (ν, θ) by CV
* ``BatchSVM_cont``  same with continuous R, (ν, θ) by CV
* ``BatchProb``      LP of eq. 12, (ν, σ) by CV
* ``PSVM``           proximal SVM, ν by CV
* ``BatchPSVM``      eq. 6, θ by CV (ν from PSVM)
* ``BatchPSVM-learned``  eq. 7, θ learned (ν from PSVM)

CV: ``GridSearchCV`` over training images (stratified K-fold by image), scored by instance
AUC (the estimators' ``score``).  α = 0.5 (neighbourhood radius 4/α = 8 = the generator's
lesion diameter) for every batch method.  LPs are solved by HiGHS through the driver.

Reported on the test images: instance AUC, FROC sensitivity (per lesion) at 2 and 6 false
marks per image, training seconds (final fit with the chosen parameters), testing seconds
(batch-wise prediction of the test images), CV seconds; θ chosen by CV vs learned.  Plots (Agg)
go to ``--out``: FROC curves, ROC curves, AUC per method, and BatchPSVM's CV AUC against θ
with the learned θ marked.

    python benchmarks/batch_comparison.py [--images 60] [--features 30] [--dim 2] [--seeds 0,1,2] [--cv 3]
                                          [--out benchmarks/out/batch]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import milopt  # noqa: E402
from milopt.estimators.batch import (BatchProbClassifier, BatchPSVMClassifier, BatchSVMClassifier,  # noqa: E402
                                     LearnedThetaBatchPSVM)
from milopt.froc import froc_curve, instance_auc, plot_froc, sensitivity_at  # noqa: E402
from milopt.metrics import standardize  # noqa: E402

ALPHA = 0.5
NU_LP = [0.1, 1.0]
NU_PSVM = [0.01, 0.1, 1.0, 10.0]
THETA_LP = [0.25, 0.5, 1.0, 2.0]
THETA_PSVM = [0.0, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0]
SIGMA = [0.3, 1.0, 3.0]


def split(bags, seed):
    from sklearn.model_selection import train_test_split

    ids = np.arange(bags.n_bags)
    tr, te = train_test_split(ids, test_size=0.5, stratify=bags.y, random_state=seed)
    return standardize(bags.subset(np.sort(tr)), bags.subset(np.sort(te)))


def tune(est, grid, train, cv, seed):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    t0 = time.perf_counter()
    gs = GridSearchCV(est, grid, cv=StratifiedKFold(cv, shuffle=True, random_state=seed), refit=False)
    gs.fit(train, train.y)
    return gs.best_params_, time.perf_counter() - t0, gs.cv_results_


def run_seed(args, seed):
    bags = milopt.load(f"gen:cad?images={args.images}&features={args.features}&dim={args.dim}&seed={seed}")
    train, test = split(bags, seed)
    rows, curves, rocs = [], {}, {}
    theta_info = {}

    def finish(name, est, params, cv_s):
        est.set_params(**params)
        t0 = time.perf_counter()
        est.fit(train)
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        s = est.predict_instances(test)
        pred_s = time.perf_counter() - t0
        c = froc_curve(test, s)
        curves[name] = c
        from sklearn.metrics import roc_curve

        rocs[name] = roc_curve(test.instance_y, s)[:2]
        row = {"seed": seed, "method": name, "auc": instance_auc(test, s),
               "sens@2": float(sensitivity_at(c, 2.0)), "sens@6": float(sensitivity_at(c, 6.0)),
               "train_s": fit_s, "test_s": pred_s, "cv_s": cv_s,
               "theta": getattr(est, "theta_", np.nan), "params": ", ".join(f"{k}={v}" for k, v in params.items())}
        rows.append(row)
        print(f"  seed {seed} {name:18s} AUC {row['auc']:.3f}  sens@2 {row['sens@2']:.3f}  sens@6 {row['sens@6']:.3f}"
              f"  train {fit_s:6.2f}s  test {pred_s:.3f}s  [{row['params']}]", flush=True)
        return est

    print(f"seed {seed}: {bags}; train {train.n_instances} candidates in {train.n_bags} images "
          f"({int(train.instance_y.sum())} positive), test {test.n_instances} in {test.n_bags}", flush=True)
    # 1-norm SVM (theta = 0)
    p, cv_s, _ = tune(BatchSVMClassifier(theta=0.0), {"nu": NU_LP}, train, args.cv, seed)
    finish("SVM", BatchSVMClassifier(theta=0.0), p, cv_s)
    p, cv_s, _ = tune(BatchSVMClassifier(alpha=ALPHA), {"nu": NU_LP, "theta": THETA_LP}, train, args.cv, seed)
    finish("BatchSVM", BatchSVMClassifier(alpha=ALPHA), p, cv_s)
    p, cv_s, _ = tune(BatchSVMClassifier(alpha=ALPHA, thresholded=False), {"nu": NU_LP, "theta": THETA_LP}, train,
                      args.cv, seed)
    finish("BatchSVM_cont", BatchSVMClassifier(alpha=ALPHA, thresholded=False), p, cv_s)
    p, cv_s, _ = tune(BatchProbClassifier(alpha=ALPHA), {"nu": NU_LP, "sigma": SIGMA}, train, args.cv, seed)
    finish("BatchProb", BatchProbClassifier(alpha=ALPHA), p, cv_s)
    p, cv_s, _ = tune(BatchPSVMClassifier(theta=0.0), {"nu": NU_PSVM}, train, args.cv, seed)
    nu = p["nu"]
    finish("PSVM", BatchPSVMClassifier(theta=0.0), p, cv_s)
    p, cv_s, res = tune(BatchPSVMClassifier(alpha=ALPHA, nu=nu), {"theta": THETA_PSVM}, train, args.cv, seed)
    finish("BatchPSVM", BatchPSVMClassifier(alpha=ALPHA, nu=nu), p, cv_s)
    theta_info["cv_theta"] = p["theta"]
    theta_info["cv_curve"] = (np.array(THETA_PSVM), res["mean_test_score"])
    est = finish("BatchPSVM-learned", LearnedThetaBatchPSVM(alpha=ALPHA, nu=nu), {"nu": nu}, 0.0)
    theta_info["learned_theta"] = est.theta_
    theta_info["iterations"] = est.fit_info_["iterations"]
    # iterations until theta first moved by less than 1e-3 (relative) -- a looser stopping rule
    hist = est.result_.history
    th_seq = np.array([h["theta"] for h in hist])
    rel = np.abs(np.diff(th_seq)) / (1.0 + np.abs(th_seq[:-1]))
    theta_info["iterations_1e-3"] = int(np.argmax(rel <= 1e-3) + 1) if np.any(rel <= 1e-3) else len(rel)
    rows[-1]["iterations"] = est.fit_info_["iterations"]
    return rows, curves, rocs, theta_info, test


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=60)
    ap.add_argument("--features", type=int, default=30)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--cv", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "out", "batch"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    all_rows, thetas = [], []
    for k, seed in enumerate(seeds):
        rows, curves, rocs, th, test = run_seed(args, seed)
        all_rows += rows
        thetas.append({"seed": seed, "theta_cv": th["cv_theta"], "theta_learned": th["learned_theta"],
                       "iterations (tol 1e-6)": th["iterations"],
                       "iterations (tol 1e-3)": th["iterations_1e-3"]})
        if k == 0:   # figures for the first seed
            plot_froc(curves, os.path.join(args.out, "froc.png"),
                      title=f"FROC, gen:cad images={args.images} features={args.features} seed={seed} (test images)")
            fig, ax = plt.subplots(figsize=(5.5, 4.5))
            for name, (fpr, tpr) in rocs.items():
                ax.plot(fpr, tpr, label=name)
            ax.plot([0, 1], [0, 1], "k:", lw=0.8)
            ax.set_xlabel("false positive rate (candidates)")
            ax.set_ylabel("true positive rate (candidates)")
            ax.set_title("instance ROC (test images)")
            ax.legend(fontsize=8, loc="lower right")
            fig.savefig(os.path.join(args.out, "roc.png"), dpi=120, bbox_inches="tight")
            plt.close(fig)
            fig, ax = plt.subplots(figsize=(5.5, 4))
            grid, score = th["cv_curve"]
            ax.plot(grid, score, "o-", label="BatchPSVM: CV instance AUC")
            ax.axvline(th["learned_theta"], color="C3", ls="--", label=f"learned θ = {th['learned_theta']:.2f}")
            ax.axvline(th["cv_theta"], color="C2", ls=":", label=f"θ by CV = {th['cv_theta']:.2f}")
            ax.set_xscale("symlog", linthresh=0.1)
            ax.set_xlim(-0.005, grid.max() * 1.2)
            ax.set_xlabel("θ")
            ax.set_ylabel("mean CV AUC (training images)")
            ax.legend(fontsize=8)
            fig.savefig(os.path.join(args.out, "theta.png"), dpi=120, bbox_inches="tight")
            plt.close(fig)
    df = pd.DataFrame(all_rows)
    df.to_csv(os.path.join(args.out, "results.csv"), index=False)
    order = ["SVM", "BatchSVM", "BatchSVM_cont", "BatchProb", "PSVM", "BatchPSVM", "BatchPSVM-learned"]
    summ = df.groupby("method")[["auc", "sens@2", "sens@6", "train_s", "test_s", "cv_s"]].agg(["mean", "std"])
    summ = summ.reindex(order)
    pd.set_option("display.width", 200)
    print(f"\nMean (std) over seeds {seeds}; gen:cad images={args.images} features={args.features} dim={args.dim}")
    flat = pd.DataFrame({c: summ[(c, "mean")].map(lambda v: f"{v:.3f}") + " (" + summ[(c, "std")].map(
        lambda v: f"{v:.3f}") + ")" for c in ["auc", "sens@2", "sens@6"]})
    for c in ["train_s", "test_s", "cv_s"]:
        flat[c] = summ[(c, "mean")].map(lambda v: f"{v:.3f}")
    print(flat.to_string())
    wins = []
    for base, batch in (("SVM", "BatchSVM"), ("SVM", "BatchSVM_cont"), ("SVM", "BatchProb"), ("PSVM", "BatchPSVM"),
                        ("PSVM", "BatchPSVM-learned")):
        a = df[df.method == base].set_index("seed")["auc"]
        b = df[df.method == batch].set_index("seed")["auc"]
        wins.append({"baseline": base, "batch": batch, "auc_base": a.mean(), "auc_batch": b.mean(),
                     "seeds_improved": f"{int((b > a).sum())}/{len(a)}"})
    print("\nBatch vs non-batch baseline (test instance AUC):")
    print(pd.DataFrame(wins).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nθ chosen by CV vs learned (BatchPSVM; paper Table 5):")
    print(pd.DataFrame(thetas).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nfigures and results.csv in {args.out}")
    return df


if __name__ == "__main__":
    main()
