"""VGPMIL / G-VGPMIL on MUSK1, MUSK2 (held-out bags) and digit bags (instance labels known).

Protocol: 5 stratified 80/20 splits of the bags (``StratifiedShuffleSplit``, seeds 0–4);
features standardised with training statistics; every hyper-parameter choice (length scale,
number of epochs by early stopping) uses the training bags only (inner 80/20 split of them);
AUC and accuracy are measured on the held-out 20 %.

Rows:
* ``default``   -- the estimator's defaults (inner validation, early stopping, refit), M varied;
* ``converged`` -- ``early_stopping=False``: coordinate ascent to convergence (the model's own optimum);
* ``elbo-kernel`` -- (``--kernel-learning``) converged, (v, l) learned by maximising 𝒥(λ) of eq. 29.

Usage::

    python benchmarks/vgpmil_musk.py                 # everything (M = 50, 100, 200 and digit bags)
    python benchmarks/vgpmil_musk.py --quick         # M = 200 only (default and converged rows), no digits
    python benchmarks/vgpmil_musk.py --out results.csv
    python benchmarks/vgpmil_musk.py --quick --kernel-learning   # + ELBO-learned kernel rows (slow)
    python benchmarks/vgpmil_musk.py --quick --set H=1e12 emax=exact   # any estimator parameter
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import StratifiedShuffleSplit

import milopt
from milopt.metrics import standardize
from milopt.estimators.vgpmil import VGPMILClassifier


def splits(bags, seeds):
    for seed in seeds:
        sss = StratifiedShuffleSplit(n_splits=1, test_size=0.2, random_state=seed)
        tr, te = next(sss.split(np.zeros(bags.n_bags), bags.y))
        yield seed, standardize(bags.subset(tr), bags.subset(te))


def run_musk(names, Ms, thetas, seeds, converged, kernel_learning=False, params=None):
    params = params or {}
    rows = []
    for name in names:
        bags = milopt.load(name)
        data = list(splits(bags, seeds))
        variants = [("default", {})]
        if converged:
            variants.append(("converged", {"early_stopping": False}))
        if kernel_learning:
            variants.append(("elbo-kernel", {"early_stopping": False, "learn_kernel": True, "max_iter": 30}))
        for theta in thetas:
            for M in Ms:
                for vname, extra in variants:
                    if vname != "default" and M != max(Ms):
                        continue
                    for seed, (Btr, Bte) in data:
                        est = VGPMILClassifier(theta=theta, n_inducing=M, random_state=seed, **{**params, **extra})
                        t0 = time.perf_counter()
                        est.fit(Btr)
                        fit_s = time.perf_counter() - t0
                        score = est.decision_function(Bte)
                        rows.append({"data": name, "method": "g-vgpmil" if theta == "gamma" else "vgpmil",
                                     "variant": vname, "M": M, "seed": seed,
                                     "bag_auc": roc_auc_score(Bte.y, score),
                                     "bag_accuracy": accuracy_score(Bte.y, est.predict(Bte)),
                                     "fit_seconds": fit_s, "epochs": est.n_epochs_,
                                     "lengthscale": est.lengthscale_})
                        print(f"  {name} {rows[-1]['method']:8s} {vname:9s} M={M:3d} seed={seed} "
                              f"AUC={rows[-1]['bag_auc']:.3f} acc={rows[-1]['bag_accuracy']:.3f} "
                              f"{fit_s:.2f}s epochs={est.n_epochs_}", flush=True)
    return pd.DataFrame(rows)


def run_digits(thetas, seeds, M=100, params=None):
    params = params or {}
    rows = []
    for seed in seeds:
        tr = milopt.load(f"gen:digits?bags=200&seed={seed}")
        te = milopt.load(f"gen:digits?bags=200&seed={seed + 100}")
        tr, te = standardize(tr, te)
        for theta in thetas:
            for vname, extra in [("default", {}), ("converged", {"early_stopping": False})]:
                est = VGPMILClassifier(theta=theta, n_inducing=M, random_state=seed, **{**params, **extra})
                t0 = time.perf_counter()
                est.fit(tr)
                fit_s = time.perf_counter() - t0
                p = est.predict_instances(te)
                rows.append({"method": "g-vgpmil" if theta == "gamma" else "vgpmil", "variant": vname, "seed": seed,
                             "instance_auc": roc_auc_score(te.instance_y, p),
                             "instance_f1": f1_score(te.instance_y, (p > 0.5).astype(int)),
                             "bag_auc": roc_auc_score(te.y, est.decision_function(te)),
                             "bag_accuracy": accuracy_score(te.y, est.predict(te)),
                             "bag_f1": f1_score(te.y, est.predict(te)), "fit_seconds": fit_s})
    return pd.DataFrame(rows)


def trace_witnesses(name, seed, theta, epochs, params):
    """Training-bag diagnostics of one split after a given number of epochs (run to that epoch).

    For every positive training bag the witness is its instance of largest π_n; printed: the
    median latent mean μ at the witnesses, the median π at the witnesses, the training-bag AUC of
    max_n μ_n, the held-out bag AUC, and the ELBO."""
    from milopt.algorithms.vgpmil import fit_vgpmil, inducing_points, median_sq_distance
    from milopt.segments import segment_argmax, segment_max

    bags = milopt.load(name)
    _, (Btr, Bte) = next(iter(splits(bags, [seed])))
    est = VGPMILClassifier(theta=theta, **params)
    l = 0.25 * median_sq_distance(Btr.X, random_state=seed)
    Z = inducing_points(Btr.X, int(est.n_inducing), "kmeans", seed)
    print(f"\n# {name} split {seed}, {theta}, {params}: epoch, witness mu (median), witness pi (median), "
          "train AUC of max mu, held-out AUC, ELBO")
    for it in epochs:
        post, pi, res = fit_vgpmil(Btr.X, Btr.bag_ptr, Btr.y, Z=Z, lengthscale=l, max_iter=it, tol=0.0, theta=theta,
                                   H=float(est.H), variance=float(est.variance), emax=est.emax,
                                   damping=float(est.damping), pi_init=est.pi_init, mean=est._mean(),
                                   random_state=seed)
        mu, _ = post.latent(Btr.X)
        w = segment_argmax(pi, Btr.bag_ptr)[Btr.y == 1]
        p_te = post.instance_proba(Bte.X)[0]
        print(f"{it:4d} {np.median(mu[w]):7.2f} {np.median(pi[w]):6.3f} "
              f"{roc_auc_score(Btr.y, segment_max(mu, Btr.bag_ptr)):6.3f} "
              f"{roc_auc_score(Bte.y, segment_max(p_te, Bte.bag_ptr)):6.3f} {res.history[-1]['elbo']:9.1f}", flush=True)


def full_musk2_fit(repeats=3):
    bags = standardize(milopt.load("musk2"))
    times = []
    for r in range(repeats):
        est = VGPMILClassifier(theta="gamma", random_state=r)
        t0 = time.perf_counter()
        est.fit(bags)
        times.append(time.perf_counter() - t0)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="M = 200 only, no digit bags")
    ap.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                    help="estimator parameters for every row, e.g. --set H=1e12 emax=exact")
    ap.add_argument("--no-full-fit", action="store_true", help="skip the timing of full MUSK2 fits")
    ap.add_argument("--trace", metavar="SEED", type=int,
                    help="only print the per-epoch witness diagnostics of split SEED (first --data, --theta)")
    ap.add_argument("--theta", default=None, choices=["pg", "gamma"], help="only this GSM")
    ap.add_argument("--data", nargs="*", default=["musk1", "musk2"])
    ap.add_argument("--out", help="write the per-split table as CSV")
    ap.add_argument("--kernel-learning", action="store_true",
                    help="add rows with (v, l) learned by maximising the ELBO (30 epochs, no early stopping; slow)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    seeds = range(5)
    thetas = [args.theta] if args.theta else ["pg", "gamma"]
    Ms = [200] if args.quick else [50, 100, 200]
    t0 = time.perf_counter()
    params = {}
    for kv in args.set:
        k, _, v = kv.partition("=")
        try:
            params[k] = float(v) if k not in ("emax", "pi_init", "kernel_bound", "bag_rule", "predict_method") else v
        except ValueError:
            params[k] = v
    print("# command: python benchmarks/vgpmil_musk.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    if args.trace is not None:
        trace_witnesses(args.data[0], args.trace, thetas[0], [1, 10, 30, 100, 300], params)
        return
    df = run_musk(args.data, Ms, thetas, seeds, converged=True, kernel_learning=args.kernel_learning, params=params)
    pd.set_option("display.width", 200)
    if df.empty:                      # --data with no names: digit bags only
        args.no_full_fit = True
    else:
        summarise(df)
    if not args.quick:
        print("\n# Digit bags (gen:digits, 200 training / 200 test bags, seeds 0-4; instance labels known), M = 100")
        dg = run_digits(thetas, seeds, params=params)
        print(dg.groupby(["method", "variant"]).mean(numeric_only=True).drop(columns="seed").round(3).to_string())
    if not args.no_full_fit:
        print("\n# Full MUSK2 fit (102 bags, 6,598 instances), g-vgpmil defaults")
        times = full_musk2_fit()
        print(f"seconds per fit: {', '.join(f'{t:.2f}' for t in times)} (max {max(times):.2f})")
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f} s")
    if args.out:
        df.to_csv(args.out, index=False)


def summarise(df):
    print("\n# Held-out bag AUC / accuracy, 5 stratified 80/20 splits (seeds 0-4), mean ± std")
    g = df.groupby(["data", "method", "variant", "M"])
    summ = pd.DataFrame({
        "bag_auc": g.bag_auc.mean().round(3), "auc_std": g.bag_auc.std().round(3),
        "bag_accuracy": g.bag_accuracy.mean().round(3), "fit_seconds": g.fit_seconds.mean().round(2),
        "max_fit_seconds": g.fit_seconds.max().round(2), "epochs": g.epochs.mean().round(1)})
    print(summ.to_string())


if __name__ == "__main__":
    main()
