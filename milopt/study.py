"""Kent & Yu simulation study (``milopt study kent-yu``), reduced by default, the paper's with ``full=True``.

S. Kent and M. Yu, "Non-convex SVM for cancer diagnosis based on morphologic features of tumor
microenvironment", §3.  On the four scenarios of Table 1 (:func:`milopt.data.generators.kent_yu`,
``variant="paper"``) they compare seven methods (§3.2) by the test AUROC of the bag labels: for
every setting of groups {20, 50} × instances per group {3, 6} × samples per instance
{20, 50, 100} (12 settings) and every scenario, 100 training data sets, each with a test set
of 500 groups; C and the Gaussian width are chosen by a 5-fold cross-validated grid search
(§3.3).  For every (scenario, setting, replicate) this module generates the training and test
sets, chooses (C, γ) by K-fold CV over bags (mean validation AUROC), refits on the whole
training set and scores the test set.  Ranks (1 = best of the methods run) are taken within
every data set, as in the paper's Figure 4.

Methods (``METHODS``, §3.2):

* ``mismm-miqp``: Algorithm 2 — Nyström features of the RBF point kernel from 240 landmarks
  drawn almost uniformly per group, ``misvm_bigm`` (eq. 5) on SCIP with a time limit, warm
  started from Algorithm 1 on the same features; (C, γ) are those chosen by the CV of
  ``mismm-heuristic`` (same objective; one MIQP per data set instead of one per grid point and
  fold — the paper cross-validates it too).
* ``mismm-heuristic``: Algorithm 1 (eq. 3 dual, eq. 4 intercept) with the SMM kernel, started
  from a random selector (Algorithm 1, line 2; ``init`` changes the start of every MI method).
* ``sismm``: SVM on instances with the group label copied (SMM kernel); group score = max.
* ``misvm-univ1``, ``misvm-univ1-univ2``, ``misvm-univ1-cor``, ``misvm-univ1-univ2-cor``: the
  paper's four "mi-svm" variants — Andrews et al.'s MI-SVM alternation (started, as Andrews
  and ``mildsvm::misvm``, from the positive bags' means) with an RBF kernel on summary features of the
  samples: φ_univ1 = (mean, sd), φ_univ2 = (skewness, kurtosis, Q1, Q3), φ_cor = pairwise
  correlations (20, 60, 65 and 105 features for 10 covariates, §3.3).  The old names
  ``misvm-univ2`` and ``misvm-cor`` are accepted for the second and third.

C is weighted inversely to the number of positive groups and of negative instances (§3.3;
``class_weight="kent-yu"``: positive groups C, negative slacks C·n⁺/n⁻, the same ratio).  Sample
points are standardised with training statistics; summary features likewise.  Kernel matrices
are computed once per (data set, width) and sliced for the folds; test kernels only against
support instances, in float32.
"""
from __future__ import annotations

import itertools
import os
import sys
import time

import numpy as np

from milopt.errors import InvalidParameterError

METHODS = ("mismm-miqp", "mismm-heuristic", "sismm", "misvm-univ1", "misvm-univ1-univ2", "misvm-univ1-cor",
           "misvm-univ1-univ2-cor")
ALIASES = {"misvm-univ2": "misvm-univ1-univ2", "misvm-cor": "misvm-univ1-cor"}
#: summary features of the mi-svm variants: (univariate statistics, with correlations)
SUMMARY = {"misvm-univ1": ("univ1", False), "misvm-univ1-univ2": ("univ2", False),
           "misvm-univ1-cor": ("univ1", True), "misvm-univ1-univ2-cor": ("univ2", True)}
SCENARIO_NAMES = {1: "1 t vs normal", 2: "2 covariance", 3: "3 mean", 4: "4 large cov."}
#: the paper's grid of data sizes (§3.1): groups x instances per group x samples per instance
PAPER_SETTINGS = tuple(itertools.product((20, 50), (3, 6), (20, 50, 100)))
#: default start of mi-smm (heuristic) in the study (Algorithm 1, line 2: a random selector)
STUDY_INIT = "random"
#: default start of the mi-svm variants: Andrews et al.'s (positive bags represented by their
#: means), as the authors' ``mildsvm::misvm`` that produced the paper's mi-svm results
MISVM_INIT = "centroid"


def _rows(ptr, ids):
    """Instance (or point) rows of the groups ``ids`` given offsets ``ptr``; returns rows, new ptr."""
    ids = np.asarray(ids, dtype=np.int64)
    sizes = ptr[ids + 1] - ptr[ids]
    starts = ptr[ids]
    rows = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes) + np.arange(int(sizes.sum()))
    return rows, np.concatenate(([0], np.cumsum(sizes)))


def _auc(y, s):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if np.unique(y).size == 2 else float("nan")


def _fit_scores(kind, K_tr, bags_tr, C, rs, init=STUDY_INIT):
    """Fit on a training kernel; returns dual coefficients (α_i y_i per instance), b and the
    number of Algorithm 1 alternations (0 for the SVM)."""
    from sklearn.svm import SVC

    from milopt.algorithms.mi_heuristics import misvm_alternate

    if kind == "sil":
        clf = SVC(C=C, kernel="precomputed", class_weight="balanced", tol=1e-3).fit(K_tr, bags_tr.instance_bag_y)
        coef = np.zeros(bags_tr.n_instances)
        coef[clf.support_] = clf.dual_coef_[0]
        return coef, float(clf.intercept_[0]), 0
    res = misvm_alternate(K_tr, bags_tr, C=C, class_weight="kent-yu", slack="bag", init=init, restarts=1,
                          max_iter=50, tol=1e-3, random_state=rs)
    return res["alpha"] * res["y"], res["b"], res["iterations"]


def _cv_select(kind, kernels, bags, Cs, folds, seed, init=STUDY_INIT):
    """(C, gamma index) with the best mean validation AUROC; kernels: list of (n, n) instance kernels."""
    from milopt.metrics import bag_folds
    from milopt.segments import segment_max

    splits = list(bag_folds(bags, folds, seed))
    best, best_key = -np.inf, (Cs[0], 0)
    for gi, K in enumerate(kernels):
        for C in Cs:
            aucs = []
            for tr, va in splits:
                rtr, _ = _rows(bags.bag_ptr, tr)
                rva, pva = _rows(bags.bag_ptr, va)
                btr = bags.subset(tr)
                coef, b, _ = _fit_scores(kind, K[np.ix_(rtr, rtr)], btr, C, seed, init)
                s = K[np.ix_(rva, rtr)] @ coef + b
                aucs.append(_auc(bags.y[va], segment_max(s, pva)))
            m = float(np.nanmean(aucs))
            if m > best:
                best, best_key = m, (C, gi)
    return best_key, best


def _one_task(scenario, setting, rep, cfg):
    """All methods on one (scenario, setting, replicate): list of result rows."""
    from threadpoolctl import threadpool_limits
    from sklearn.preprocessing import StandardScaler

    from milopt.data.bags import Bags
    from milopt.data.generators import kent_yu
    from milopt.features.kernels import kernel_matrix, mean_embedding_kernel
    from milopt.features.summary import summary_features
    from milopt.segments import segment_max

    out = []
    n_groups, n_inst, n_samp = setting
    k_set = cfg["settings"].index(tuple(setting))
    seed = ((int(cfg["seed"]) * 100 + k_set) * 10 + scenario) * 100_000 + rep
    base = {"scenario": scenario, "bags": n_groups, "instances": n_inst, "samples": n_samp, "replicate": rep}
    with threadpool_limits(1):
        tr = kent_yu(scenario, bags=n_groups, instances=n_inst, samples=n_samp, variant=cfg["variant"], seed=seed)
        te = kent_yu(scenario, bags=cfg["test_bags"], instances=n_inst, samples=n_samp, variant=cfg["variant"],
                     seed=seed + 50_000)
        sc = StandardScaler().fit(tr.samples)
        S_tr, S_te = sc.transform(tr.samples), sc.transform(te.samples)
        p = S_tr.shape[1]
        gammas = [g / p for g in cfg["gamma_factors"]]
        methods = cfg["methods"]

        def test_auc_smm(coef, b, gamma):
            nz = np.flatnonzero(coef)
            prow, pptr = _rows(tr.sample_ptr, nz)
            Kt = mean_embedding_kernel(S_te, te.sample_ptr, S_tr[prow], pptr, gamma=gamma, dtype=np.float32)
            s = Kt @ coef[nz] + b
            return _auc(te.y, segment_max(s, te.bag_ptr))

        smm = [m for m in methods if m in ("mismm-heuristic", "sismm", "mismm-miqp")]
        if smm:
            t0 = time.perf_counter()
            Ks = [mean_embedding_kernel(S_tr, tr.sample_ptr, gamma=g) for g in gammas]
            t_k = time.perf_counter() - t0
            chosen = {}
            for name, kind in (("mismm-heuristic", "mi"), ("sismm", "sil")):
                if name not in methods and not (name == "mismm-heuristic" and "mismm-miqp" in methods):
                    continue
                t0 = time.perf_counter()
                (C, gi), cv_auc = _cv_select(kind, Ks, tr, cfg["Cs"], cfg["folds"], seed, cfg["init"])
                coef, b, n_alt = _fit_scores(kind, Ks[gi], tr, C, seed, cfg["init"])
                sec = time.perf_counter() - t0 + t_k
                chosen[name] = (C, gi)
                if name in methods:
                    out.append({**base, "method": name, "test_auc": test_auc_smm(coef, b, gammas[gi]),
                                "cv_auc": cv_auc, "C": C, "gamma": gammas[gi], "seconds": sec, "alternations": n_alt})
            if "mismm-miqp" in methods:
                from milopt.estimators.heuristics import MISMMMIQP

                C, gi = chosen["mismm-heuristic"]
                t0 = time.perf_counter()
                est = MISMMMIQP(C=C, gamma=gammas[gi] * 1.0, m=cfg["landmarks"], time_limit=cfg["miqp_time_limit"],
                                init=cfg["init"], scale_samples=False, random_state=seed)
                trs = Bags(X=tr.X, bag_index=tr.bag_index, y=tr.y, samples=S_tr, sample_ptr=tr.sample_ptr)
                tes = Bags(X=te.X, bag_index=te.bag_index, y=te.y, samples=S_te, sample_ptr=te.sample_ptr)
                est.fit(trs)
                info = est.fit_info_
                out.append({**base, "method": "mismm-miqp",
                            "test_auc": _auc(te.y, est.decision_function(tes)), "cv_auc": float("nan"), "C": C,
                            "gamma": gammas[gi], "seconds": time.perf_counter() - t0,
                            "miqp_gap": info["gap"], "miqp_from": info["solution_from"],
                            "miqp_improvement": info["heuristic_objective"] - info["objective"]})
        for name in [m for m in methods if m in SUMMARY]:
            stats, cor = SUMMARY[name]
            t0 = time.perf_counter()
            F_tr, _ = summary_features(tr.samples, tr.sample_ptr, stats, cor)
            F_te, _ = summary_features(te.samples, te.sample_ptr, stats, cor)
            fs = StandardScaler().fit(F_tr)
            F_tr, F_te = fs.transform(F_tr), fs.transform(F_te)
            gs = [g / F_tr.shape[1] for g in cfg["gamma_factors"]]
            Kf = [kernel_matrix(F_tr, None, "rbf", g) for g in gs]
            (C, gi), cv_auc = _cv_select("mi", Kf, tr, cfg["Cs"], cfg["folds"], seed, cfg["misvm_init"])
            coef, b, n_alt = _fit_scores("mi", Kf[gi], tr, C, seed, cfg["misvm_init"])
            s = kernel_matrix(F_te, F_tr, "rbf", gs[gi]) @ coef + b
            out.append({**base, "method": name,
                        "test_auc": _auc(te.y, segment_max(s, te.bag_ptr)), "cv_auc": cv_auc, "C": C,
                        "gamma": gs[gi], "seconds": time.perf_counter() - t0, "alternations": n_alt})
    return out


def kent_yu_study(out_dir="kent-yu-study", replicates=None, bags=50, instances=3, samples=50, test_bags=500,
                  folds=5, Cs=(1.0, 10.0, 100.0), gamma_factors=(0.5, 1.0, 2.0), scenarios=(1, 2, 3, 4),
                  methods=METHODS, landmarks=240, miqp_time_limit=None, settings=None, variant="paper", full=False,
                  init=STUDY_INIT, misvm_init=MISVM_INIT, quick=False, n_jobs=2, seed=0, verbose=True) -> dict:
    """Run the Kent & Yu study; write ``results.csv``, ``summary.csv`` and ``auroc.png``.

    Parameters
    ----------
    out_dir : str
        Output folder (created).
    replicates : int, optional
        Data sets per scenario and setting (paper: 100; default 10, or 100 with ``full``).
    bags, instances, samples : int
        The single training setting of the reduced study (default 50 groups × 3 instances ×
        50 samples, the setting of the paper's Figure 3); ignored when ``settings`` or ``full``.
    test_bags : int
        Groups in the independent test set of every data set (paper: 500).
    folds : int
        CV folds for choosing C and the RBF width (paper: 5).
    Cs : tuple of float
        Cost grid (not given in the paper; the authors' simulation code uses 1, 10, 100).
    gamma_factors : tuple of float
        RBF widths γ in exp(-γ‖x-y‖²) as multiples of 1/(number of features); γ = 1/(2σ²) of the
        paper's Gaussian kernel.  The authors' code uses γ = 2^{-1,0,1}/10 for 10 covariates.
    scenarios, methods : which to run (``methods`` accepts the old names ``misvm-univ2`` and
        ``misvm-cor``).
    landmarks : int
        Nyström landmarks of ``mismm-miqp`` (paper: m = r = 240).
    miqp_time_limit : float, optional
        Seconds per MIQP (default 20; 200 with ``full``, the authors' code; the paper gives a
        limit only for the collagen data, 10 minutes).
    settings : list of (groups, instances, samples), optional
        Training sizes to run (default: the single one above; ``full``: the paper's 12).
    variant : {'paper', 'mildsvm'}
        Generator variant (Table 1 or the R package's).
    init : {'random', 'centroid', 'sil', 'first'}
        Start of Algorithm 1 for ``mismm-heuristic`` and the warm start of ``mismm-miqp``
        (default the paper's random selector, Algorithm 1 line 2).
    misvm_init : {'centroid', 'random', 'sil', 'first'}
        Start of the mi-svm variants (default Andrews et al.'s centroid start, which the
        authors' ``mildsvm::misvm`` uses: "initial selection ... as mean within each bag").
    full : bool
        The paper's protocol: 100 replicates of each of the 12 settings, 200 s MIQPs (far too
        big for a laptop: 4,800 data sets × 7 methods).
    quick : bool
        A fast smoke run: 2 replicates, 100 test groups, 3 folds, C in {1, 10}, one width, 5 s MIQPs.
    n_jobs : int
        Parallel data sets (joblib).
    seed : int

    Returns
    -------
    dict with the summary table (mean and sd of test AUROC per scenario and method, mean rank),
    file paths and settings.
    """
    import pandas as pd
    from joblib import Parallel, delayed

    methods = tuple(ALIASES.get(m, m) for m in methods)
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise InvalidParameterError(f"methods: unknown {bad}; available: {', '.join(METHODS)}")
    if replicates is None:
        replicates = 100 if full else 10
    if not (isinstance(replicates, (int, np.integer)) and replicates >= 1):
        raise InvalidParameterError(f"replicates: expected a positive integer, got {replicates!r}")
    if miqp_time_limit is None:
        miqp_time_limit = 200.0 if full else 20.0
    if settings is None:
        settings = PAPER_SETTINGS if full else ((bags, instances, samples),)
    settings = tuple(tuple(int(v) for v in st) for st in settings)
    if any(len(st) != 3 or min(st) < 1 for st in settings):
        raise InvalidParameterError(f"settings: expected (groups, instances, samples) triples of positive integers, "
                                    f"got {settings!r}")
    for key, val in (("init", init), ("misvm_init", misvm_init)):
        if val not in ("random", "centroid", "sil", "first"):
            raise InvalidParameterError(f"{key}: expected random, centroid, sil or first, got {val!r}")
    if variant not in ("paper", "mildsvm"):
        raise InvalidParameterError(f"variant: expected 'paper' or 'mildsvm', got {variant!r}")
    if quick:
        replicates = min(replicates, 2)
        test_bags, folds, Cs, gamma_factors, miqp_time_limit = 100, 3, (1.0, 10.0), (1.0,), 5.0
    cfg = {"settings": list(settings), "test_bags": test_bags, "folds": folds,
           "Cs": tuple(float(c) for c in Cs), "gamma_factors": tuple(float(g) for g in gamma_factors),
           "methods": tuple(methods), "landmarks": landmarks, "miqp_time_limit": float(miqp_time_limit),
           "variant": variant, "init": init, "misvm_init": misvm_init, "seed": seed}
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    tasks = [(sc, st, r) for r in range(replicates) for st in settings for sc in scenarios]
    partial = os.path.join(out_dir, "results.partial.csv")
    rows_all = []
    gen = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(delayed(_one_task)(sc, st, r, cfg)
                                                                   for sc, st, r in tasks)
    for k, rows in enumerate(gen, 1):      # keep what is done even if the run is interrupted
        rows_all.extend(rows)
        pd.DataFrame(rows_all).to_csv(partial, index=False)
        if verbose:
            print(f"[kent-yu study] {k}/{len(tasks)} data sets done, {time.perf_counter() - t0:.0f} s", flush=True,
                  file=sys.stderr)      # progress on stderr: stdout carries the --json result
    df = pd.DataFrame(rows_all)
    out = summarize_study(df, out_dir, methods, scenarios)
    if os.path.exists(partial):
        os.remove(partial)
    return {**out, "seconds": time.perf_counter() - t0,
            "settings": {**cfg, "replicates": replicates, "scenarios": list(scenarios), "full": bool(full)}}


def summarize_study(df, out_dir, methods=METHODS, scenarios=(1, 2, 3, 4)) -> dict:
    """Write results.csv, summary.csv and auroc.png for a table of per-run rows (also usable
    on ``results.partial.csv`` of an interrupted run)."""
    import pandas as pd

    methods = [ALIASES.get(m, m) for m in methods]
    df = df.copy()
    df["method"] = df["method"].replace(ALIASES)
    methods = [m for m in methods if m in set(df["method"])]
    scenarios = [s for s in scenarios if s in set(df["scenario"])]
    for col, val in (("bags", 50), ("instances", 3), ("samples", 50)):   # rows of older runs
        if col not in df:
            df[col] = val
    df["scenario_name"] = df["scenario"].map(SCENARIO_NAMES)
    csv = os.path.join(out_dir, "results.csv")
    df.to_csv(csv, index=False)
    # ranks within every data set (scenario, setting, replicate), as the paper's Figure 4
    df["rank"] = df.groupby(["scenario", "bags", "instances", "samples", "replicate"])["test_auc"].rank(
        ascending=False)
    summ = (df.groupby(["scenario", "method"])
              .agg(auc_mean=("test_auc", "mean"), auc_sd=("test_auc", "std"), rank_mean=("rank", "mean"),
                   seconds_mean=("seconds", "mean"), n=("test_auc", "size"))
              .reset_index())
    overall = df.groupby("method").agg(auc_mean=("test_auc", "mean"), rank_mean=("rank", "mean")).reset_index()
    overall["scenario"] = 0
    summ = pd.concat([summ, overall], ignore_index=True)
    scsv = os.path.join(out_dir, "summary.csv")
    summ.to_csv(scsv, index=False)
    png = os.path.join(out_dir, "auroc.png")
    _plot(df, png, list(methods), list(scenarios))
    wide = summ[summ.scenario > 0].pivot(index="method", columns="scenario", values="auc_mean").reindex(list(methods))
    return {"results_csv": csv, "summary_csv": scsv, "plot": png,
            "auroc_mean": {m: {int(s): float(v) for s, v in row.items()} for m, row in wide.iterrows()},
            "mean_rank": {r.method: float(r.rank_mean) for r in overall.itertuples()}}


def _plot(df, path, methods, scenarios):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(scenarios), figsize=(4 * len(scenarios), 4), sharey=True, squeeze=False)
    for ax, s in zip(axes[0], scenarios):
        data = [df[(df.scenario == s) & (df.method == m)]["test_auc"].dropna().values for m in methods]
        ax.boxplot(data, showmeans=True)
        ax.set_xticks(range(1, len(methods) + 1))
        ax.set_xticklabels(methods, rotation=60, ha="right", fontsize=8)
        ax.set_title(f"scenario {SCENARIO_NAMES.get(s, s)}")
        ax.axhline(0.5, color="grey", lw=0.5, ls=":")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("test AUROC")
    fig.suptitle("Reduced Kent & Yu simulation: test AUROC per method and scenario")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
