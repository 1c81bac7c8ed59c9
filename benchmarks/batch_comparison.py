"""Batch-wise vs instance-wise classifiers on CAD-like data (Vural et al. 2009, Tables 2-3, 5; Figs. 3-5 in shape).

Vural, Fung, Krishnapuram, Dy, Rao, "Using local dependencies within batches to improve large
margin classifiers", JMLR 10 (2009).  For each data seed, ``gen:cad`` images are split into
training and test images (stratified by image label, half each; the paper uses a fixed
train/test split of patients, Section 5.3); features are standardised with training
statistics.  Methods (Section 5):

* ``SVM``            1-norm SVM LP (eq. 1; BatchSVM with θ = 0) on features + coordinates, ν by CV
* ``BatchSVM``       LP of eq. 4 with thresholded R (eq. 13), (ν, θ) by CV
* ``BatchSVM_cont``  same with continuous R, (ν, θ) by CV
* ``BatchProb``      LP of eq. 12, (ν, σ) by CV
* ``PSVM``           proximal SVM on features + coordinates, ν by CV
* ``BatchPSVM``      eq. 6, θ by CV (ν from PSVM)
* ``BatchPSVM-learned``  eq. 7, θ learned (ν from PSVM)

Protocol as in Section 5: the SVM and PSVM baselines get the candidates' coordinates
(standardised) appended to their features (Section 5.2, the estimators' ``append_coords=auto``);
the similarity is the paper's s(p, q) = exp(-|r_p - r_q|^2 / ζ^2) (``--distance squared``,
Section 5.1.1) with ζ^2 = 1/α, α = 1/16 so that the thresholded neighbourhood (eq. 13,
s >= e^-4) has radius 2ζ = 8 = the generator's lesion diameter (``--distance euclidean`` uses
exp(-α|r_p - r_q|) with α = 0.5, the same radius 4/α).  Reduced against the paper: K-fold CV
with ``--cv`` folds (the paper: 10-fold patient CV, Section 5.1.2), α fixed rather than tuned,
small grids.  Class weights ``balanced`` by default (``--class-weight``; not in the paper:
the unweighted 1-norm SVM LP returns w = 0 on these data).

CV: ``GridSearchCV`` over training images (stratified K-fold by image), scored by instance
AUC (the estimators' ``score``).  LPs are solved by HiGHS through the driver.

Reported on the test images: instance AUC, FROC sensitivity per lesion and per patient
(image; the paper's curve, Section 5.2) at 2 and 6 false marks per image, training seconds
(final fit with the chosen parameters), testing seconds (batch-wise prediction of the test
images), CV seconds; θ chosen by CV vs learned (eq. 7), and the θ and iteration count of the
alternation without eq. 7's θ²/2 term, for comparison.  Plots (Agg) go to ``--out``: FROC
curves per lesion and per patient, ROC curves, and BatchPSVM's CV AUC against θ with the
learned θ marked.

    python benchmarks/batch_comparison.py [--images 60] [--features 30] [--dim 2] [--seeds 0,1,2] [--cv 3]
                                          [--distance squared] [--class-weight balanced]
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
from milopt.algorithms.batchpsvm import fit_batchpsvm  # noqa: E402
from milopt.estimators.batch import (BatchProbClassifier, BatchPSVMClassifier, BatchSVMClassifier,  # noqa: E402
                                     LearnedThetaBatchPSVM)
from milopt.models import batchsvm_lp  # noqa: E402
from milopt.froc import froc_curve, instance_auc, plot_froc, sensitivity_at  # noqa: E402
from milopt.metrics import standardize  # noqa: E402

ALPHA = {"squared": 1.0 / 16.0, "euclidean": 0.5}      # thresholded radius 8 either way
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
    rows, curves, pcurves, rocs = [], {}, {}, {}
    theta_info = {}
    A = ALPHA[args.distance]
    kw = {"distance": args.distance, "class_weight": args.class_weight}

    def finish(name, est, params, cv_s):
        est.set_params(**params)
        t0 = time.perf_counter()
        est.fit(train)
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        s = est.predict_instances(test)
        pred_s = time.perf_counter() - t0
        c = froc_curve(test, s)
        pc = froc_curve(test, s, unit="image")
        curves[name] = c
        pcurves[name] = pc
        from sklearn.metrics import roc_curve

        rocs[name] = roc_curve(test.instance_y, s)[:2]
        row = {"seed": seed, "method": name, "auc": instance_auc(test, s),
               "sens@2": float(sensitivity_at(c, 2.0)), "sens@6": float(sensitivity_at(c, 6.0)),
               "psens@2": float(sensitivity_at(pc, 2.0)), "psens@6": float(sensitivity_at(pc, 6.0)),
               "train_s": fit_s, "test_s": pred_s, "cv_s": cv_s,
               "theta": getattr(est, "theta_", np.nan), "coords_appended": bool(est.coords_appended_),
               "params": ", ".join(f"{k}={v}" for k, v in params.items())}
        rows.append(row)
        print(f"  seed {seed} {name:18s} AUC {row['auc']:.3f}  lesion sens@2 {row['sens@2']:.3f} @6 {row['sens@6']:.3f}"
              f"  patient sens@2 {row['psens@2']:.3f} @6 {row['psens@6']:.3f}"
              f"  train {fit_s:6.2f}s  test {pred_s:.3f}s  [{row['params']}]", flush=True)
        return est

    print(f"seed {seed}: {bags}; train {train.n_instances} candidates in {train.n_bags} images "
          f"({int(train.instance_y.sum())} positive), test {test.n_instances} in {test.n_bags}", flush=True)
    # 1-norm SVM (theta = 0)
    p, cv_s, _ = tune(BatchSVMClassifier(theta=0.0, **kw), {"nu": NU_LP}, train, args.cv, seed)
    finish("SVM", BatchSVMClassifier(theta=0.0, **kw), p, cv_s)
    p, cv_s, _ = tune(BatchSVMClassifier(alpha=A, **kw), {"nu": NU_LP, "theta": THETA_LP}, train, args.cv, seed)
    finish("BatchSVM", BatchSVMClassifier(alpha=A, **kw), p, cv_s)
    p, cv_s, _ = tune(BatchSVMClassifier(alpha=A, thresholded=False, **kw), {"nu": NU_LP, "theta": THETA_LP}, train,
                      args.cv, seed)
    finish("BatchSVM_cont", BatchSVMClassifier(alpha=A, thresholded=False, **kw), p, cv_s)
    p, cv_s, _ = tune(BatchProbClassifier(alpha=A, **kw), {"nu": NU_LP, "sigma": SIGMA}, train, args.cv, seed)
    finish("BatchProb", BatchProbClassifier(alpha=A, **kw), p, cv_s)
    p, cv_s, _ = tune(BatchPSVMClassifier(theta=0.0, **kw), {"nu": NU_PSVM}, train, args.cv, seed)
    nu = p["nu"]
    finish("PSVM", BatchPSVMClassifier(theta=0.0, **kw), p, cv_s)
    p, cv_s, res = tune(BatchPSVMClassifier(alpha=A, nu=nu, **kw), {"theta": THETA_PSVM}, train, args.cv, seed)
    finish("BatchPSVM", BatchPSVMClassifier(alpha=A, nu=nu, **kw), p, cv_s)
    theta_info["cv_theta"] = p["theta"]
    theta_info["cv_curve"] = (np.array(THETA_PSVM), res["mean_test_score"])
    est = finish("BatchPSVM-learned", LearnedThetaBatchPSVM(alpha=A, nu=nu, **kw), {"nu": nu}, 0.0)
    theta_info["nu"] = nu
    theta_info["learned_theta"] = est.theta_
    theta_info["iterations"] = est.fit_info_["iterations"]
    theta_info["iterations_1e-3"] = _iters_to(est.result_.history, 1e-3)
    theta_info["iterations_1e-2"] = _iters_to(est.result_.history, 1e-2)
    theta_info["theta_converged"] = est.fit_info_["theta_converged"]
    theta_info["rate"] = _rate(est.result_.history)
    rows[-1]["iterations"] = est.fit_info_["iterations"]
    # the same alternation without eq. 7's θ²/2 term (eq. 6 minimised over θ as well)
    d, _ = batchsvm_lp.training_labels(train)
    R = batchsvm_lp.similarity(train, A, True, args.distance)
    wts = batchsvm_lp.class_costs(d, 1.0, args.class_weight)
    w0, g0, th0, r0 = fit_batchpsvm(train.X, d, R, nu=nu, theta=0.0, learn_theta=True, max_iter=500, tol=1e-6,
                                    weights=wts, theta_penalty=0.0)
    theta_info["theta_no_penalty"] = th0
    theta_info["iterations_no_penalty"] = int(r0.iterations)
    f0 = np.asarray(batchsvm_lp.batch_operator(test, th0, A, True, args.distance) @ (test.X @ w0 - g0)).ravel()
    theta_info["auc_no_penalty"] = instance_auc(test, f0)
    theta_info["auc_learned"] = rows[-1]["auc"]
    return rows, (curves, pcurves), rocs, theta_info, test


def _iters_to(hist, tol):
    """Iterations until θ first moved by less than ``tol`` (relative) -- a looser stopping rule."""
    th_seq = np.array([h["theta"] for h in hist])
    rel = np.abs(np.diff(th_seq)) / (1.0 + np.abs(th_seq[:-1]))
    return int(np.argmax(rel <= tol) + 1) if np.any(rel <= tol) else len(rel)


def _rate(hist):
    """Median ratio |Δθ_{k+1}| / |Δθ_k| of successive θ steps: the linear rate of the alternation
    (iterations per decade of tolerance = 1 / log10(1 / rate))."""
    d = np.abs(np.diff([h["theta"] for h in hist]))
    d = d[d > 0]
    return float(np.median(d[1:] / d[:-1])) if d.size > 2 else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=60)
    ap.add_argument("--features", type=int, default=30)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--cv", type=int, default=3)
    ap.add_argument("--distance", default="squared", choices=["squared", "euclidean"])
    ap.add_argument("--class-weight", default="balanced", choices=["balanced", "none"])
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
        thetas.append({"seed": seed, "nu": th["nu"], "theta_cv": th["cv_theta"], "theta_learned": th["learned_theta"],
                       "iterations (tol 1e-6)": th["iterations"],
                       "iterations (tol 1e-3)": th["iterations_1e-3"], "iterations (tol 1e-2)": th["iterations_1e-2"],
                       "theta converged": th["theta_converged"], "rate": th["rate"], "AUC learned": th["auc_learned"],
                       "theta without θ²/2": th["theta_no_penalty"],
                       "iterations without θ²/2": th["iterations_no_penalty"],
                       "AUC without θ²/2": th["auc_no_penalty"]})
        if k == 0:   # figures for the first seed
            lcurves, pcurves = curves
            plot_froc(lcurves, os.path.join(args.out, "froc.png"),
                      title=f"FROC per lesion, gen:cad images={args.images} features={args.features} "
                            f"seed={seed} (test)")
            plot_froc(pcurves, os.path.join(args.out, "froc_patient.png"), unit="image",
                      title=f"FROC per patient, gen:cad images={args.images} features={args.features} "
                            f"seed={seed} (test)")
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
    metr = ["auc", "sens@2", "sens@6", "psens@2", "psens@6"]
    summ = df.groupby("method")[metr + ["train_s", "test_s", "cv_s"]].agg(["mean", "std"])
    summ = summ.reindex(order)
    pd.set_option("display.width", 250)
    print(f"\nMean (std) over seeds {seeds}; gen:cad images={args.images} features={args.features} dim={args.dim} "
          f"distance={args.distance} class_weight={args.class_weight} cv={args.cv}")
    print("sens = FROC sensitivity per lesion, psens = per patient (image), at 2 and 6 false marks per image")
    flat = pd.DataFrame({c: summ[(c, "mean")].map(lambda v: f"{v:.3f}") + " (" + summ[(c, "std")].map(
        lambda v: f"{v:.3f}") + ")" for c in metr})
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
    print("\nθ chosen by CV vs learned by eq. 7 (BatchPSVM; paper Table 5), and the alternation without θ²/2:")
    print(pd.DataFrame(thetas).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nfigures and results.csv in {args.out}")
    return df


if __name__ == "__main__":
    main()
