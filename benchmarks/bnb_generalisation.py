"""Does the certified MI-SVM optimum generalise better than the heuristics' local optima?

Bag-stratified K-fold cross-validation (``milopt.metrics.bag_folds``, seeded).  In every fold
the features are standardised with the training fold's statistics only, the bag costs are the
kent-yu costs of the training fold (C = 1), and the same objective

    Φ(w, b) = ½‖w‖² + Σ_{Y_I=+1} C_I [1 − max_{i∈I} s_i]_+ + Σ_{Y_I=−1} C_I [1 + max_{i∈I} s_i]_+,
    s_i = w·z_i + b

(``misvm-bigm``, Kent & Yu eq. 5; ``docs/exact_misvm.md``) is minimised by

* ``optimum``     the branch and bound ``bnb`` (``milopt.algorithms.bnb.solve_bags``) with a
                  per-fold time limit, given the heuristics' points below as starts (so its
                  incumbent is never worse than theirs): the certified optimum when it
                  terminates ``optimal``, else its best incumbent (termination and gap are
                  recorded);
* ``alternation`` the MI-SVM alternation (Andrews et al. 2002; Kent & Yu Alg. 1) from the
                  centroid start;
* ``restarts``    the best of ``--restarts`` alternations (the centroid start, then random
                  witness selections, seeded);
* ``annealing``   deterministic annealing (Gehler & Chapelle 2007; the portfolio of
                  ``milopt.algorithms.bnb.heuristics.annealing_starts``), every run's selection
                  polished by the alternation, the best kept.

Every method returns a linear (w, b); all are scored on the training fold by the one function
``milopt.numerics.misvm_objective`` (Φ at the method's own (w, b)) and on the test fold by bag
accuracy (bag score = max instance score, positive when > 0) and bag AUC (scikit-learn).

``pdmisvm`` (Seo et al. 2022, eq. 1) minimises a *different* objective (one weight vector per
class, the difference of the two classes' bag maxima in the hinge, one cost C for every bag), so
its training objective is not comparable; it is reported separately (test metrics only, bag
score = max_j (w_1·x_j + b_1) − max_j (w_0·x_j + b_0)).

Printed: one row per fold and method, then per method mean ± sd of Φ, test accuracy and AUC
and fit seconds, and the paired comparison of the optimum against each heuristic over the
folds: wins / ties / losses (the optimum's test accuracy or AUC higher / equal / lower) and the
two-sided Wilcoxon signed-rank p-value (``scipy.stats.wilcoxon``, zero differences dropped;
p = 1 when every difference is zero).  ``--json`` prints one JSON document instead.

**At a tuned C** (``--Cs 0.1,0.3,1,3``): instead of C = 1 for everyone, every method gets its
own C, chosen in each outer fold by an inner bag-stratified CV on the training fold
(``--inner`` folds, seeded, the same folds for every method) by the mean inner bag AUC (ties to
the smaller C).  Every method is fitted at every C of the grid (the branch and bound along the
path of C, each C warm-started from the previous optimum and given the heuristics' points at
that C), inside each inner fold and on the whole training fold; the method's row is its
whole-training-fold fit at its selected C, scored on the test fold by bag accuracy, balanced
accuracy and AUC.  Printed: the tuned rows, the summary at the tuned C with the paired
comparison, and the paired comparison at every fixed C of the grid (the same fits).

Data: any DATA spec of ``milopt`` (``musk1``, ``gen:...``) or ``nested:NAME:N`` (the first N
bags of the nested order of ``benchmarks/exact_frontier.py``).

Usage::

    nice python benchmarks/bnb_generalisation.py --data musk1 --time-limit 120
    nice python benchmarks/bnb_generalisation.py --data nested:musk2:40 --time-limit 60
    nice python benchmarks/bnb_generalisation.py --data 'gen:multiclass?classes=2&bags=60&seed=1' --json
    python benchmarks/bnb_generalisation.py --data musk1 --folds 10 --only 0,1 --time-limit 20   # two folds
    python benchmarks/bnb_generalisation.py --data musk1 --out musk1.json       # keep the document
    python benchmarks/bnb_generalisation.py --pool musk1.json musk2.json         # paired tests over both
    nice python benchmarks/bnb_generalisation.py --data musk1 --folds 5 --Cs 0.1,0.3,1,3 --time-limit 30
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

HEURISTICS = ("alternation", "restarts", "annealing")
METHODS = ("optimum",) + HEURISTICS


def _write(doc, a) -> bool:
    """Write ``doc`` to ``--out`` when given; print it as the one JSON document with ``--json``
    (True: nothing else is to be printed)."""
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(doc, fh, indent=1, default=float)
    if a.json:
        print(json.dumps(doc, indent=1, default=float))
    return bool(a.json)


def load_instance(spec):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance as li

    return li(spec, 0)


def _linear(bags, coef, b):
    """(w, b) of dual coefficients ``coef`` (= y ∘ α) over the instances of ``bags``."""
    return bags.X.T @ np.asarray(coef, dtype=float), float(b)


def fit_optimum(tr, costs, time_limit, seed, options, starts=()):
    from milopt.algorithms.bnb import solve_bags

    out = solve_bags(tr, costs=costs, time_limit=time_limit, seed=seed, starts=list(starts), **options)
    ub, lb = float(out["objective"]), float(out["bound"])
    gap = max(0.0, ub - lb) / max(abs(ub), 1e-10)
    return out["w"], float(out["b"]), {"termination": out["termination"], "gap": gap,
                                      "bound": out["bound"], "nodes": out["nodes"], "bnb_objective": out["objective"]}


def fit_alternation(tr, restarts, seed, C=1.0):
    from milopt.algorithms.mi_heuristics import misvm_alternate

    res = misvm_alternate(None, tr, C=C, class_weight="kent-yu", slack="bag", init="centroid",
                          restarts=int(restarts), random_state=seed, X=tr.X)
    w, b = _linear(tr, res["alpha"] * res["y"], res["b"])
    return w, b, {"termination": res["termination"], "best_start": int(res["best_start"])}


def fit_annealing(tr, costs, runs, seed):
    from threadpoolctl import threadpool_limits

    from milopt.algorithms.bnb.heuristics import alternate_selection, annealing_starts
    from milopt.algorithms.bnb.search import MISVMBranchAndBound

    with threadpool_limits(1):
        eng = MISVMBranchAndBound(tr.X, tr.bag_ptr, tr.y, costs)
        best = None
        for raw in annealing_starts(eng, math.inf, seed=seed, runs=runs):
            r = alternate_selection(eng, eng.selection_of_raw(raw), math.inf)
            if best is None or r[0] < best[0]:
                best = r
    w, b = _linear(tr, best[4], best[1])
    return w, b, {"runs": runs}


def fit_pdmisvm(tr):
    from milopt.algorithms.pdmisvm import pdmisvm_admm

    W, b, res = pdmisvm_admm(tr.X, tr.bag_ptr, np.asarray(tr.y, dtype=int), K=2, C=1.0)
    return W, b, {"termination": str(res.termination), "pdmisvm_objective": res.history[-1]["objective"]
                  if res.history else None}


def test_metrics(te, bag_scores, balanced=False):
    """Bag accuracy and bag AUC of ``bag_scores`` on ``te`` (and the balanced accuracy with
    ``balanced``)."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score

    y = np.asarray(te.y, dtype=int)
    pred = (bag_scores > 0).astype(int)
    acc = float(accuracy_score(y, pred))
    auc = float(roc_auc_score(y, bag_scores)) if np.unique(y).size == 2 else float("nan")
    if balanced:
        return acc, auc, float(balanced_accuracy_score(y, pred))
    return acc, auc


def run_fold(bags, tr_ids, te_ids, a, k):
    """Every method on one fold: a list of row dicts."""
    from milopt.metrics import standardize
    from milopt.numerics import bag_costs, misvm_objective
    from milopt.segments import segment_max

    tr, te = standardize(bags.subset(tr_ids), bags.subset(te_ids))
    costs = bag_costs(tr, 1.0, "kent-yu")
    seed = a.seed + k
    rows = []
    opts = dict(kv.split("=", 1) for kv in a.set)
    if opts:
        from milopt.params import coerce

        opts = {key: coerce(v) for key, v in opts.items()}
    points = []                 # the heuristics' (w, b): starts of the branch and bound
    fits = {"optimum": lambda: fit_optimum(tr, costs, a.time_limit, seed, opts, points),
            "alternation": lambda: fit_alternation(tr, 1, seed),
            "restarts": lambda: fit_alternation(tr, a.restarts, seed),
            "annealing": lambda: fit_annealing(tr, costs, a.anneal, seed)}
    order = [m for m in a.methods if m != "optimum"] + [m for m in a.methods if m == "optimum"]
    for m in order:
        t0 = time.perf_counter()
        w, b, info = fits[m]()
        if m != "optimum":
            points.append((w, b))
        secs = time.perf_counter() - t0
        phi = misvm_objective(tr, w, b, C=1.0, class_weight="kent-yu")
        acc, auc = test_metrics(te, segment_max(te.X @ w + b, te.bag_ptr))
        rows.append(dict(fold=k, method=m, phi=phi, accuracy=acc, auc=auc, seconds=secs, **info))
    rows.sort(key=lambda r: METHODS.index(r["method"]))
    if a.pdmisvm:
        from milopt.algorithms.pdmisvm import bag_responses

        t0 = time.perf_counter()
        W, b, info = fit_pdmisvm(tr)
        secs = time.perf_counter() - t0
        R = bag_responses(W, b, te.X, te.bag_ptr)
        acc, auc = test_metrics(te, R[:, 1] - R[:, 0])
        rows.append(dict(fold=k, method="pdmisvm", phi=None, accuracy=acc, auc=auc, seconds=secs, **info))
    return rows


def fit_grid(tr, Cs, a, seed, opts, methods):
    """Every method of ``methods`` at every C of ``Cs`` (ascending) on the training bags ``tr``
    (standardised): ``{C: {method: (w, b, info, seconds)}}``.  The heuristics run at each C;
    the branch and bound runs along the path of C (``solve_c_path``'s warm start: the previous
    C's incumbent is a start), given the heuristics' points at the same C as further starts."""
    from milopt.numerics import bag_costs

    out, prev = {}, []
    for C in Cs:
        costs = bag_costs(tr, C, "kent-yu")
        fits = {"alternation": lambda: fit_alternation(tr, 1, seed, C),
                "restarts": lambda: fit_alternation(tr, a.restarts, seed, C),
                "annealing": lambda: fit_annealing(tr, costs, a.anneal, seed)}
        res, points = {}, []
        for m in [m for m in methods if m != "optimum"]:
            t0 = time.perf_counter()
            w, b, info = fits[m]()
            res[m] = (w, b, info, time.perf_counter() - t0)
            points.append((w, b))
        if "optimum" in methods:
            t0 = time.perf_counter()
            w, b, info = fit_optimum(tr, costs, a.time_limit, seed, opts, prev + points)
            res["optimum"] = (w, b, info, time.perf_counter() - t0)
            prev = [(w, b)]
        out[C] = res
    return out


def _scored(tr, te, C, m, fit):
    """A row: Φ on the training bags at C, test accuracy, AUC and balanced accuracy."""
    from milopt.numerics import misvm_objective
    from milopt.segments import segment_max

    w, b, info, secs = fit
    phi = misvm_objective(tr, w, b, C=C, class_weight="kent-yu")
    acc, auc, bal = test_metrics(te, segment_max(te.X @ w + b, te.bag_ptr), balanced=True)
    return dict(method=m, C=C, phi=phi, accuracy=acc, auc=auc, balanced_accuracy=bal, seconds=secs, **info)


def run_fold_tuned(bags, tr_ids, te_ids, a, k, opts):
    """One outer fold with C tuned per method by an inner bag-stratified CV on the training
    fold (mean inner bag AUC, ties to the smaller C): ``(tuned rows, grid rows)``; the grid
    rows hold every method at every C fitted on the whole training fold (test metrics at fixed
    C), the tuned row of a method is its grid row at its selected C."""
    from milopt.metrics import bag_folds, standardize

    Cs = sorted(a.Cs)
    seed = a.seed + k
    trb = bags.subset(tr_ids)
    score = {m: {C: [] for C in Cs} for m in a.methods}
    for itr, iva in bag_folds(trb, a.inner, seed):
        tr, va = standardize(trb.subset(itr), trb.subset(iva))
        for C, res in fit_grid(tr, Cs, a, seed, opts, a.methods).items():
            for m, fit in res.items():
                score[m][C].append(_scored(tr, va, C, m, fit)["auc"])
    tr, te = standardize(trb, bags.subset(te_ids))
    grid = [dict(fold=k, **_scored(tr, te, C, m, fit))
            for C, res in fit_grid(tr, Cs, a, seed, opts, a.methods).items() for m, fit in res.items()]
    tuned = []
    for m in a.methods:
        inner = [float(np.nanmean(score[m][C])) for C in Cs]
        best = Cs[int(np.nanargmax(inner))]
        row = next(r for r in grid if r["method"] == m and r["C"] == best)
        tuned.append(dict(row, inner_auc=dict(zip(map(str, Cs), inner))))
    tuned.sort(key=lambda r: METHODS.index(r["method"]))
    return tuned, grid


def paired(x, y, tol=1e-12):
    """Wins / ties / losses of ``x`` over ``y`` (paired, higher is better) and the two-sided
    Wilcoxon signed-rank p-value of the differences (zero differences dropped; 1.0 when all
    are zero; NaN pairs skipped)."""
    from scipy.stats import wilcoxon

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    d = x[ok] - y[ok]
    wins, losses = int(np.sum(d > tol)), int(np.sum(d < -tol))
    ties = int(d.size - wins - losses)
    p = 1.0 if wins + losses == 0 else float(wilcoxon(d[np.abs(d) > tol]).pvalue)
    return {"wins": wins, "ties": ties, "losses": losses, "p": p, "mean_difference": float(d.mean()) if d.size else
            float("nan")}


def summarise(rows, methods):
    out = {"methods": {}, "paired": {}}
    by = {m: sorted([r for r in rows if r["method"] == m], key=lambda r: r["fold"]) for m in methods}
    for m, rs in by.items():
        s = {}
        for key in ("phi", "accuracy", "auc", "balanced_accuracy", "seconds", "C"):
            v = np.array([r[key] for r in rs if r.get(key) is not None], dtype=float)
            v = v[np.isfinite(v)]
            s[key] = (float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0) if v.size else (None, None)
        out["methods"][m] = s
    opt = by.get("optimum", [])
    if opt:
        out["proved"] = sum(r["termination"] == "optimal" for r in opt)
        out["folds"] = len(opt)
        out["gap_max"] = max(float(r["gap"]) for r in opt)
        for m in methods:
            if m == "optimum" or not by[m]:
                continue
            hs = by[m]
            rel = [(h["phi"] - o["phi"]) / max(1.0, abs(o["phi"])) for o, h in zip(opt, hs) if h["phi"] is not None]
            out["paired"][m] = {
                "accuracy": paired([o["accuracy"] for o in opt], [h["accuracy"] for h in hs]),
                "auc": paired([o["auc"] for o in opt], [h["auc"] for h in hs]),
                "phi_reached_optimum": int(sum(abs(r) <= 1e-6 for r in rel)) if rel else None,
                "phi_excess_mean": float(np.mean(rel)) if rel else None,
            }
    return out


def pooled(docs, proved_only=False):
    """Paired comparison of the optimum against every other method over the folds of several
    saved runs (``--out`` documents) together; with ``proved_only``, only the folds in which
    bnb proved optimality."""
    rows, methods = [], []
    for j, d in enumerate(docs):
        for r in d["rows"]:
            rows.append(dict(r, fold=(j, r["fold"])))
            if r["method"] not in methods:
                methods.append(r["method"])
    if proved_only:
        keep = {r["fold"] for r in rows if r["method"] == "optimum" and r["termination"] == "optimal"}
        rows = [r for r in rows if r["fold"] in keep]
    return summarise(rows, methods)


def print_pooled(paths):
    docs = []
    for p in paths:
        with open(p) as fh:
            docs.append(json.load(fh))
    print("pooled runs: " + ", ".join(f"{d['data']} ({len({r['fold'] for r in d['rows']})} folds)" for d in docs))
    for proved_only in (False, True):
        s = pooled(docs, proved_only)
        if not s.get("folds"):
            continue
        print(f"\n{'folds bnb proved optimal' if proved_only else 'all folds'}: {s['folds']}")
        print("optimum vs     accuracy W/T/L, mean difference, Wilcoxon p | AUC W/T/L, mean difference, Wilcoxon p")
        for m, p in s["paired"].items():
            ac, au = p["accuracy"], p["auc"]
            print(f"  vs {m:<12} {ac['wins']}/{ac['ties']}/{ac['losses']}, {ac['mean_difference']:+.3f}, p = {ac['p']:.3g} "
                  f"| {au['wins']}/{au['ties']}/{au['losses']}, {au['mean_difference']:+.3f}, p = {au['p']:.3g}")
    return 0


def main_tuned(a):
    """The study with C tuned per method (``--Cs``): per outer fold the tuned rows, then the
    summary at the tuned C and, for each C of the grid, the paired comparison at that fixed C."""
    from milopt.metrics import bag_folds

    bags = load_instance(a.data)
    only = {int(x) for x in a.only.split(",") if x}
    opts = {}
    if a.set:
        from milopt.params import coerce

        opts = {key: coerce(v) for key, v in (kv.split("=", 1) for kv in a.set)}
    t_start, load0 = time.time(), os.getloadavg()
    say = (lambda *x, **k: None) if a.json else (lambda *x, **k: print(*x, flush=True, **k))
    say(f"{a.data}: {bags.n_bags} bags, {a.folds} outer folds, {a.inner} inner folds (seed {a.seed}); C grid "
        f"{a.Cs}; bnb limit {a.time_limit:g} s per C; load {load0[0]:.2f}")
    say(f"{'fold':>4} {'method':<12} {'C':>6} {'test acc':>9} {'bal acc':>8} {'test AUC':>9}  inner AUC per C; note")
    rows, grid = [], []
    for k, (tr_ids, te_ids) in enumerate(bag_folds(bags, a.folds, a.seed)):
        if only and k not in only:
            continue
        tuned, g = run_fold_tuned(bags, tr_ids, te_ids, a, k, opts)
        rows += tuned
        grid += g
        for r in tuned:
            note = f"; {r['termination']}, gap {r['gap']:.2%}" if r["method"] == "optimum" else ""
            inner = " ".join(f"{v:.3f}" for v in r["inner_auc"].values())
            say(f"{k:>4} {r['method']:<12} {r['C']:>6g} {r['accuracy']:>9.3f} {r['balanced_accuracy']:>8.3f} "
                f"{r['auc']:>9.3f}  {inner}{note}")
    summ = summarise(rows, a.methods)
    at_c = {str(C): summarise([r for r in grid if r["C"] == C], a.methods) for C in sorted(a.Cs)}
    load1 = os.getloadavg()
    doc = {"data": a.data, "bags": bags.n_bags, "folds": a.folds, "inner": a.inner, "Cs": sorted(a.Cs),
           "seed": a.seed, "time_limit": a.time_limit, "restarts": a.restarts, "anneal": a.anneal,
           "bnb_options": a.set, "load_start": load0, "load_end": load1, "wall_seconds": time.time() - t_start,
           "rows": rows, "grid": grid, "summary": summ, "at_C": at_c}
    if _write(doc, a):
        return 0
    say(f"\nat the tuned C, over {len({r['fold'] for r in rows})} folds (mean ± sd; load {load0[0]:.2f} → "
        f"{load1[0]:.2f}; wall {doc['wall_seconds']:.0f} s)")
    say(f"{'method':<12} {'C':>13} {'test accuracy':>15} {'balanced acc':>15} {'test AUC':>15}")
    for m, s in summ["methods"].items():
        say(f"{m:<12} {_pm(s['C'], '.2f'):>13} {_pm(s['accuracy'], '.3f'):>15} "
            f"{_pm(s['balanced_accuracy'], '.3f'):>15} {_pm(s['auc'], '.3f'):>15}")
    for label, sm in [("tuned C", summ)] + [(f"C = {c}", v) for c, v in at_c.items()]:
        extra = f"; bnb proved {sm.get('proved')}/{sm.get('folds')}" if "proved" in sm else ""
        say(f"{label}: optimum AUC {_pm(sm['methods']['optimum']['auc'], '.3f')}{extra}" if "optimum" in
            sm["methods"] else label)
        for m, p in sm["paired"].items():
            ac, au = p["accuracy"], p["auc"]
            say(f"  optimum vs {m:<12} acc W/T/L {ac['wins']}/{ac['ties']}/{ac['losses']} (p = {ac['p']:.3g}) | "
                f"AUC W/T/L {au['wins']}/{au['ties']}/{au['losses']} (p = {au['p']:.3g}), mean AUC difference "
                f"{au['mean_difference']:+.3f}")
    return 0


def _pm(t, fmt):
    return "—" if t[0] is None else f"{t[0]:{fmt}} ± {t[1]:{fmt}}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="musk1")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0, help="seed of the folds and of the random heuristic starts")
    ap.add_argument("--time-limit", type=float, default=120.0, help="bnb wall seconds per fold")
    ap.add_argument("--restarts", type=int, default=10, help="alternation starts of 'restarts' (centroid + random)")
    ap.add_argument("--anneal", type=int, default=12, help="annealing runs of 'annealing'")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma separated subset of {','.join(METHODS)}")
    ap.add_argument("--no-pdmisvm", dest="pdmisvm", action="store_false", help="skip pdMISVM (other objective)")
    ap.add_argument("--only", default="", help="comma separated fold numbers to run (default: all)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb options (as milopt --set)")
    ap.add_argument("--Cs", default="", help="comma separated C grid: tune C per method by an inner CV over it "
                                             "(default: every method at C = 1)")
    ap.add_argument("--inner", type=int, default=3, help="inner folds of the C tuning (with --Cs)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None, help="also write the JSON document to this file")
    ap.add_argument("--pool", nargs="+", default=None, metavar="RUN.json",
                    help="instead of running: the paired comparison over the folds of saved runs (--out files) "
                         "together, all folds and the folds bnb proved")
    a = ap.parse_args(argv)
    if a.pool:
        return print_pooled(a.pool)
    a.methods = [m for m in a.methods.split(",") if m]
    a.Cs = [float(c) for c in a.Cs.split(",") if c]
    if a.Cs:
        return main_tuned(a)
    bad = [m for m in a.methods if m not in METHODS]
    if bad:
        ap.error(f"--methods: unknown {bad}; choose from {', '.join(METHODS)}")
    from milopt.metrics import bag_folds

    bags = load_instance(a.data)
    only = {int(x) for x in a.only.split(",") if x}
    folds = list(bag_folds(bags, a.folds, a.seed))
    t_start = time.time()
    load0 = os.getloadavg()
    rows = []
    if not a.json:
        print(f"{a.data}: {bags.n_bags} bags, {bags.n_instances} instances, {a.folds} folds (seed {a.seed}); "
              f"bnb limit {a.time_limit:g} s per fold; load {load0[0]:.2f}", flush=True)
        print(f"{'fold':>4} {'method':<12} {'Φ train':>11} {'test acc':>9} {'test AUC':>9} {'seconds':>8}  note",
              flush=True)
    for k, (tr_ids, te_ids) in enumerate(folds):
        if only and k not in only:
            continue
        fr = run_fold(bags, tr_ids, te_ids, a, k)
        rows += fr
        if not a.json:
            for r in fr:
                note = ""
                if r["method"] == "optimum":
                    note = f"{r['termination']}, gap {r['gap']:.2%}, {r['nodes']} nodes"
                elif r["method"] == "pdmisvm":
                    note = "own objective"
                phi = "—" if r["phi"] is None else f"{r['phi']:.6f}"
                print(f"{k:>4} {r['method']:<12} {phi:>11} {r['accuracy']:>9.3f} {r['auc']:>9.3f} "
                      f"{r['seconds']:>8.1f}  {note}", flush=True)
    methods = list(a.methods) + (["pdmisvm"] if a.pdmisvm else [])
    summ = summarise(rows, methods)
    load1 = os.getloadavg()
    doc = {"data": a.data, "bags": bags.n_bags, "instances": bags.n_instances, "folds": a.folds, "seed": a.seed,
           "time_limit": a.time_limit, "restarts": a.restarts, "anneal": a.anneal, "bnb_options": a.set,
           "load_start": load0, "load_end": load1, "wall_seconds": time.time() - t_start, "rows": rows,
           "summary": summ}
    if _write(doc, a):
        return 0
    print(f"\nsummary over {len(rows) and len({r['fold'] for r in rows})} folds "
          f"(mean ± sd; load {load0[0]:.2f} at the start, {load1[0]:.2f} at the end; "
          f"wall {doc['wall_seconds']:.0f} s)")
    print(f"{'method':<12} {'Φ train':>21} {'test accuracy':>15} {'test AUC':>15} {'seconds':>13}")
    for m, s in summ["methods"].items():
        print(f"{m:<12} {_pm(s['phi'], '.4f'):>21} {_pm(s['accuracy'], '.3f'):>15} {_pm(s['auc'], '.3f'):>15} "
              f"{_pm(s['seconds'], '.1f'):>13}")
    if "proved" in summ:
        print(f"bnb proved optimality in {summ['proved']} of {summ['folds']} folds (largest gap "
              f"{summ['gap_max']:.2%})")
        print("optimum vs heuristic: Φ reached (folds) | accuracy W/T/L, Wilcoxon p | AUC W/T/L, Wilcoxon p")
        for m, p in summ["paired"].items():
            ac, au = p["accuracy"], p["auc"]
            reach = ("own objective" if p["phi_reached_optimum"] is None else
                     f"{p['phi_reached_optimum']}/{summ['folds']} (mean excess {p['phi_excess_mean']:.2%})")
            print(f"  vs {m:<12} {reach} "
                  f"| {ac['wins']}/{ac['ties']}/{ac['losses']}, p = {ac['p']:.3g} "
                  f"| {au['wins']}/{au['ties']}/{au['losses']}, p = {au['p']:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
