"""Every method with its defaults on data it has never seen: a robustness table over regimes.

For each method and each regime (a seeded generator setting, or a shipped data set), a
stratified K-fold over bags (features standardised with the training folds' statistics, as
``milopt fit --cv K``); per held-out fold:

* ``ba``      -- bag balanced accuracy of ``predict`` with the method's defaults (``threshold=auto``,
  the decision rule chosen on the training bags; see ``milopt.estimators.base.MILClassifier``);
* ``ba_zero`` -- the same model's balanced accuracy with the margin rule, score > 0
  (``threshold=zero``, the rule before decision rules followed the scores; no extra fit);
* ``auc``     -- bag AUC of ``decision_function`` (does not depend on the rule);
* ``one_class`` -- folds whose held-out bags were all predicted one class, and ``bad_one_class``
  those among them with a bag AUC >= 0.75 (a model that ranks the bags well but calls every
  bag one class: the failure the decision rule has to prevent);
* ``ba_tuned`` -- nested CV: on the training bags of the fold, an inner stratified 3-fold
  (each inner fold standardised on its own training part, as ``milopt fit --tune`` does) over
  a small grid of the method's main key (``GRIDS``, the default among the values); each grid
  point is scored by the best balanced accuracy reachable on its inner out-of-fold bag scores,
  the best point is refitted on the whole training fold with the method's decision rule
  (``threshold=auto``; the default fit itself when the default wins) and evaluated on the
  held-out bags.

Targets: no fold with ``bad_one_class``; ``ba`` within 3 points of ``ba_tuned`` in every cell.
With ``--repeats R`` every cell runs R K-fold splits (split seeds ``seed``, ..., ``seed + R - 1``;
the model seeds stay ``seed``), and the table gives beside tuned - auto its standard error over
the folds, so that a gap can be read against the noise of the nested-CV choice.  ``chosen_C``
in a row: the C that a ``C='auto'`` default chose on the training bags.

Usage::

    python benchmarks/robustness.py --quick           # 3 folds, the generator regimes (no MUSK)
    python benchmarks/robustness.py                   # 5 folds, every regime incl. MUSK1 and MUSK2
    python benchmarks/robustness.py --methods sil vgpmil --regimes imbalance-1:20 --jobs 2
    python benchmarks/robustness.py --no-tune         # defaults only (no nested CV)
    python benchmarks/robustness.py --quick --repeats 3 --methods sil --rows rows.jsonl
    python benchmarks/robustness.py --quick --no-tune --set C=1 --methods sil   # a former default
    python benchmarks/robustness.py --table rows.jsonl --repeat 0              # one split's table
    python benchmarks/robustness.py --table rows.jsonl --against rows_C1.jsonl # defaults against C=1 rows
    python benchmarks/robustness.py --rules rows.jsonl        # decision rules compared on the recorded scores
    python benchmarks/robustness.py --quick --repeats 3 --from-repeat 1 --rows rows.jsonl  # add splits 1, 2

Cells run in parallel with joblib (``--jobs``, default 2); each prints one row as it ends.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

#: the methods and their defaults (``milopt fit NAME``)
METHODS = ("sil", "misvm-heuristic", "mi-svm-heuristic", "pdmisvm", "dcmil", "vgpmil", "g-vgpmil")

#: regime -> (DATA, what it tests); digits bags: a positive bag holds a 9
REGIMES = {
    "base": ("gen:digits?bags=60&seed=1", "60 bags of 2-8 digits, half positive"),
    "few-bags-many-features": ("gen:digits?bags=30&noise_features=300&seed=2",
                               "30 bags, 64 pixel + 300 noise features"),
    "imbalance-1:20": ("gen:digits?bags=168&positive_fraction=0.0476&seed=3", "8 positive bags of 168"),
    "large-bags": ("gen:digits?bags=40&min_size=30&max_size=60&seed=4", "40 bags of 30-60 instances"),
    "noise-features": ("gen:digits?bags=60&noise_features=64&seed=5", "64 pixel + 64 noise features"),
    "witness-1%": ("gen:digits?bags=40&min_size=50&max_size=100&witness_rate=0.01&seed=6",
                   "one positive instance in a bag of 50-100"),
    "witness-50%": ("gen:digits?bags=60&min_size=4&max_size=10&witness_rate=0.5&seed=7",
                    "half of a positive bag's instances positive"),
    "musk1": ("musk1", "MUSK1: 92 bags, 166 features"),
    "musk2": ("musk2", "MUSK2: 102 bags, up to 1,044 instances per bag"),
}
QUICK_REGIMES = ("base", "few-bags-many-features", "imbalance-1:20", "large-bags", "noise-features", "witness-1%",
                 "witness-50%")

#: nested-CV grid of each method's main key
GRIDS = {
    "sil": {"C": [0.1, 1.0, 10.0]},
    "misvm-heuristic": {"C": [0.1, 1.0, 10.0]},
    "mi-svm-heuristic": {"C": [0.1, 1.0, 10.0]},
    "pdmisvm": {"C": [0.1, 1.0, 10.0]},
    "dcmil": {"C": [0.125, 1.0, 8.0]},
    "vgpmil": {"lengthscale_grid": [0.125, 0.25, 0.5]},
    "g-vgpmil": {"lengthscale_grid": [0.125, 0.25, 0.5]},
}

AUC_GOOD = 0.75


def _quiet():
    from milopt.errors import DegenerateModelWarning

    from sklearn.exceptions import ConvergenceWarning

    warnings.simplefilter("ignore", DegenerateModelWarning)
    warnings.simplefilter("ignore", ConvergenceWarning)     # k-means on duplicate digit images
    warnings.simplefilter("ignore", RuntimeWarning)


def _scores(est, B):
    return np.asarray(est.decision_function(B), dtype=float).ravel()


def _ba(y, pred) -> float:
    from sklearn.metrics import balanced_accuracy_score

    return float(balanced_accuracy_score(y, pred))


def _auc(y, s) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if np.unique(y).size == 2 else float("nan")


def _labels(est, B) -> np.ndarray:
    pred = np.asarray(est.predict(B))
    return np.searchsorted(np.asarray(est.classes_), pred)


def tune(method, Btr, grid, seed=0, folds=3):
    """Nested-CV choice on the training bags ``Btr``: the grid point whose inner out-of-fold bag
    scores reach the best balanced accuracy, and that threshold -> (params, threshold, inner BA)."""
    from sklearn.model_selection import StratifiedKFold

    from milopt.estimators.registry import get_method
    from milopt.metrics import balanced_threshold, standardize

    spec = get_method(method)
    key, values = next(iter(grid.items()))
    k = int(min(folds, np.bincount(Btr.y, minlength=2).min()))
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    best = (-np.inf, None, 0.0)
    for v in values:
        oof = np.empty(Btr.n_bags)
        for tr, te in skf.split(np.zeros(Btr.n_bags), Btr.y):
            Bi, Bo = Btr.subset(tr), Btr.subset(te)
            if spec.scale:                             # each inner fold standardised on its own training part
                Bi, Bo = standardize(Bi, Bo)
            est = spec.make({key: v, "threshold": "zero"}, seed).fit(Bi)
            oof[te] = _scores(est, Bo)
        t, ba = balanced_threshold(oof, Btr.y)
        if ba > best[0] + 1e-12:
            best = (ba, {key: v}, t)
    return best[1], best[2], best[0]


def _record(est, Btr, Bte, s) -> dict:
    """What a decision rule chooses on and what it is judged on, so that rules can be compared
    without refitting (the fitted model does not depend on the rule): the training bags' labels
    and the final model's scores of them (``train``), the inner models' pooled out-of-fold scores
    in the final model's scale (``inner``; None under the training rule), and the held-out bags'
    labels and scores."""
    inner = getattr(est, "inner_scores_", None)
    return {"y_train": Btr.y.tolist(), "train": _scores(est, Btr).tolist(),
            "inner": None if inner is None else np.asarray(inner, dtype=float).tolist(),
            "y_test": Bte.y.tolist(), "test": np.asarray(s, dtype=float).tolist()}


def run_fold(method, data, k, fold, seed=0, do_tune=True, repeat=0, params=None, record=True) -> dict:
    """One held-out fold of one cell: defaults (auto and zero rules) and nested-CV tuned;
    ``repeat`` r splits the bags with the seed ``seed + r`` (the model seeds stay ``seed``);
    ``params``: values replacing defaults (for a test of the decision rule at a fixed C);
    ``record``: add the bag scores of :func:`_record` (``scores``, and ``tuned_scores`` when the
    tuned model is another fit)."""
    import milopt
    from milopt.estimators.registry import get_method
    from milopt.metrics import bag_folds, standardize

    with warnings.catch_warnings():
        _quiet()
        bags = milopt.load(data)
        tr, te = list(bag_folds(bags, k, seed + repeat))[fold]
        spec = get_method(method)
        Btr, Bte = bags.subset(tr), bags.subset(te)
        if spec.scale:
            Btr, Bte = standardize(Btr, Bte)
        t0 = time.perf_counter()
        est = spec.make(dict(params or {}), seed).fit(Btr)
        fit_s = time.perf_counter() - t0
        s = _scores(est, Bte)
        pred = _labels(est, Bte)
        row = {"method": method, "repeat": repeat, "fold": fold, "ba": _ba(Bte.y, pred), "ba_zero": _ba(Bte.y, (s > 0).astype(int)),
               "auc": _auc(Bte.y, s), "one_class": int(np.unique(pred).size == 1),
               "one_class_zero": int(np.unique(s > 0).size == 1), "rule": est.decision_rule_,
               "threshold": float(est.threshold_), "how": getattr(est, "threshold_how_", None), "fit_seconds": fit_s}
        row["bad_one_class"] = int(row["one_class"] and row["auc"] >= AUC_GOOD)
        if "chosen_C" in est.fit_info_:
            row["chosen_C"] = est.fit_info_["chosen_C"]
        if record:
            row["scores"] = _record(est, Btr, Bte, s)
        if do_tune and method in GRIDS:
            params, _, _ = tune(method, Btr, GRIDS[method], seed)
            if all(np.atleast_1d(spec.params[k].default).tolist() == [v] for k, v in params.items()):
                row["ba_tuned"] = row["ba"]            # the defaults won: the same fit
            else:
                tuned = spec.make(params, seed).fit(Btr)
                row["ba_tuned"] = _ba(Bte.y, _labels(tuned, Bte))
                if record:
                    row["tuned_scores"] = _record(tuned, Btr, Bte, _scores(tuned, Bte))
            row["tuned"] = params
    return row


def summarise(regime, method, rows) -> dict:
    """The cell: means over folds and counts of one-class folds; ``gap_se``: the standard error of
    the mean of tuned - auto over the folds (and repeats), the spread of the per-fold differences
    over the square root of their number (folds of one repeat share bags, so it is a rough scale
    of the noise, not a test)."""
    def mean(key):
        v = [r[key] for r in rows if key in r and np.isfinite(r[key])]
        return float(np.mean(v)) if v else float("nan")

    out = {"regime": regime, "method": method, "folds": len(rows), "ba": mean("ba"), "ba_zero": mean("ba_zero"),
           "auc": mean("auc"), "ba_tuned": mean("ba_tuned"),
           "one_class": sum(r["one_class"] for r in rows), "bad_one_class": sum(r["bad_one_class"] for r in rows),
           "one_class_zero": sum(r["one_class_zero"] for r in rows), "fit_seconds": mean("fit_seconds"),
           "rule": ", ".join(sorted({r["rule"] for r in rows}))}
    out["gap"] = out["ba_tuned"] - out["ba"]
    d = np.array([r["ba_tuned"] - r["ba"] for r in rows if np.isfinite(r.get("ba_tuned", np.nan))])
    out["gap_se"] = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
    return out


def run(methods, regimes, k, seed=0, jobs=2, do_tune=True, echo=print, rows_out=None, repeats=1, params=None,
        first_repeat=0):
    """Every (method, regime) cell over the K-fold splits ``first_repeat``, ..., ``repeats - 1``;
    returns the list of summaries.  ``rows_out``: a file to which each fold's row is appended
    (JSON lines) as soon as it is measured."""
    import json

    from joblib import Parallel, delayed

    tasks = [(m, r, f, q) for r in regimes for m in methods for q in range(first_repeat, repeats) for f in range(k)]

    def one(m, r, f, q):
        return r, run_fold(m, REGIMES[r][0], k, f, seed, do_tune, q, params)

    cells = {}
    for r, row in Parallel(n_jobs=jobs, verbose=0, return_as="generator_unordered")(
            delayed(one)(m, r, f, q) for m, r, f, q in tasks):
        cells.setdefault((r, row["method"]), []).append(row)
        if rows_out is not None:
            with open(rows_out, "a") as fh:
                fh.write(json.dumps({"regime": r, **row}) + "\n")
    out = [summarise(r, m, rows) for (r, m), rows in cells.items()]
    for c in out:
        echo(_line(c))
    return out


HEADER = ("| regime | method | BA (auto) | BA (zero) | BA tuned | tuned - auto (s.e.) | AUC | one-class folds (auto) | "
          "of them AUC >= 0.75 | one-class folds (zero) | fit s |\n|---|---|---|---|---|---|---|---|---|---|---|")


def _line(c) -> str:
    f = c["folds"]
    return (f"| {c['regime']} | {c['method']} | {c['ba']:.3f} | {c['ba_zero']:.3f} | {c['ba_tuned']:.3f} | "
            f"{c['gap']:+.3f}{_se(c)} | {c['auc']:.3f} | {c['one_class']} of {f} | {c['bad_one_class']} | "
            f"{c['one_class_zero']} of {f} | {c['fit_seconds']:.2f} |")


def _se(c) -> str:
    return f" ({c['gap_se']:.3f})" if np.isfinite(c.get("gap_se", np.nan)) else ""


def print_table(path, repeat=None) -> int:
    """The table of the fold rows in ``path`` (JSON lines of ``--rows``) and its verdict;
    ``repeat``: only the rows of that split."""
    cells = {c: [r for (q, _), r in rows.items() if repeat is None or q == repeat] for c, rows in _cells(path).items()}
    cells = {c: rows for c, rows in cells.items() if rows}
    print(HEADER)
    order = sorted(cells, key=lambda c: (list(REGIMES).index(c[0]), METHODS.index(c[1])))
    out = [summarise(r, m, cells[(r, m)]) for r, m in order]
    for c in out:
        print(_line(c))
    print("\n" + verdict(out))
    return 0


def _cells(path) -> dict:
    """{(regime, method): {(repeat, fold): row}} of a ``--rows`` file."""
    import json

    cells = {}
    with open(path) as fh:
        for row in map(json.loads, fh):
            cells.setdefault((row["regime"], row["method"]), {})[(row.get("repeat", 0), row["fold"])] = row
    return cells


def print_against(path, other) -> int:
    """The defaults of ``path`` against another setting's rows ``other`` (e.g. ``--no-tune --set
    C=1``, a former default) on the same folds, per cell: both balanced accuracies and the tuned
    one, the paired differences with the standard error of their mean, the C a ``C='auto'``
    default chose, both AUCs and the one-class folds at a fold AUC >= 0.75 of each."""
    from milopt.params import AUTO_C_GRID as AUTO_C_VALUES

    mine, theirs = _cells(path), _cells(other)
    print("| regime | method | BA | BA (other) | BA tuned | BA - other (s.e.) | tuned - BA (s.e.) | C chosen: "
          + " / ".join(f"{c:g}" for c in AUTO_C_VALUES) + " | AUC / other | one-class at AUC >= 0.75 / other |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    means = []
    for cell in sorted(set(mine) & set(theirs), key=lambda c: (list(REGIMES).index(c[0]), METHODS.index(c[1]))):
        keys = sorted(set(mine[cell]) & set(theirs[cell]))
        a, b = [mine[cell][k] for k in keys], [theirs[cell][k] for k in keys]

        def m(rows, key):
            return float(np.nanmean([r.get(key, np.nan) for r in rows]))

        def diff(x, y):
            d = np.asarray(x) - np.asarray(y)
            return f"{d.mean():+.3f} ({d.std(ddof=1) / np.sqrt(d.size):.3f})" if d.size > 1 else f"{d.mean():+.3f}"

        chosen = [r.get("chosen_C") for r in a]
        means.append((m(a, "ba"), m(b, "ba")))
        print(f"| {cell[0]} | {cell[1]} | {m(a, 'ba'):.3f} | {m(b, 'ba'):.3f} | {m(a, 'ba_tuned'):.3f} | "
              f"{diff([r['ba'] for r in a], [r['ba'] for r in b])} | "
              f"{diff([r.get('ba_tuned', np.nan) for r in a], [r['ba'] for r in a])} | "
              f"{' / '.join(str(chosen.count(c)) for c in AUTO_C_VALUES)} | {m(a, 'auc'):.3f} / {m(b, 'auc'):.3f} | "
              f"{sum(r['bad_one_class'] for r in a)} / {sum(r['bad_one_class'] for r in b)} |")
    if means:
        print(f"\n{len(means)} cells: mean BA {np.mean([x for x, _ in means]):.3f}, other {np.mean([y for _, y in means]):.3f}")
    return 0


def verdict(cells) -> str:
    """The targets over the cells: one-class folds at a good AUC; cells where tuned beats the
    defaults by more than 3 points, and those among them beyond noise (more than two standard
    errors of tuned - auto); the mean balanced accuracies."""
    bad = sum(c["bad_one_class"] for c in cells)
    far = [c for c in cells if np.isfinite(c["gap"]) and c["gap"] > 0.03]
    beyond = [c for c in far if np.isfinite(c.get("gap_se", np.nan)) and c["gap"] > 2 * c["gap_se"]]

    def names(cs):
        return ": " + ", ".join(f"{c['method']}@{c['regime']} ({c['gap']:+.3f})" for c in cs) if cs else ""

    return (f"{len(cells)} cells, {sum(c['folds'] for c in cells)} held-out folds: {bad} one-class folds with AUC >= "
            f"{AUC_GOOD} (zero rule: {sum(c['one_class_zero'] for c in cells)} one-class folds); {len(far)} cells "
            f"where tuned beats defaults by more than 3 points{names(far)}; of them {len(beyond)} by more than two "
            f"standard errors{names(beyond)}\nmean BA: auto {np.nanmean([c['ba'] for c in cells]):.3f}, zero "
            f"{np.nanmean([c['ba_zero'] for c in cells]):.3f}, tuned {np.nanmean([c['ba_tuned'] for c in cells]):.3f}")


# ------------------------------------------------------------------ decision rules compared offline
def _grid_cut(s, y, value):
    """The candidate cuts (below, between and above the distinct scores) and ``value`` of each."""
    u = np.unique(s)
    cand = np.concatenate(([u[0] - 1.0], 0.5 * (u[:-1] + u[1:]), [u[-1] + 1.0]))
    return cand, np.array([value(s[y == 1] > c, s[y == 0] > c) for c in cand])


def _cut_best(s, y):
    from milopt.metrics import balanced_threshold

    return balanced_threshold(s, y)[0]


def _cut_shrunk_median(s, y):
    from milopt.metrics import shrunk_threshold

    return shrunk_threshold(s, y)[0]


def _cut_shrunk_mean(s, y):
    from milopt.metrics import balanced_threshold, shrunk_threshold

    m0, m1 = float(np.mean(s[y == 0])), float(np.mean(s[y == 1]))
    if shrunk_threshold(s, y)[1] == "midpoint":          # the same test of a signal
        return 0.5 * (m0 + m1)
    return float(np.clip(balanced_threshold(s, y)[0], m0, m1)) if m1 > m0 else 0.5 * (m0 + m1)


def _cut_equal_error(s, y):
    cand, d = _grid_cut(s, y, lambda tp, fp: abs(np.mean(fp) - (1.0 - np.mean(tp))))
    top = cand[d <= d.min() + 1e-12]
    return 0.5 * (top.min() + top.max())


def _cut_plateau(s, y):
    cand, ba = _grid_cut(s, y, lambda tp, fp: 0.5 * (np.mean(tp) + 1.0 - np.mean(fp)))
    top = np.flatnonzero(ba >= ba.max() - 1e-12)
    runs = np.split(top, np.flatnonzero(np.diff(top) > 1) + 1)        # runs of adjacent maximal cuts
    u = np.unique(s)
    lo = [u[r[0] - 1] if r[0] > 0 else u[0] - 1.0 for r in runs]
    hi = [u[r[-1]] if r[-1] < u.size else u[-1] + 1.0 for r in runs]
    i = int(np.argmax(np.subtract(hi, lo)))
    return 0.5 * (lo[i] + hi[i])


def _cut_smoothed(s, y):
    from scipy.special import expit

    h = max(1.06 * float(np.std(s)) * s.size ** -0.2, 1e-12)          # Silverman's bandwidth
    grid = np.linspace(s.min(), s.max(), 401)
    ba = [0.5 * (expit((s[y == 1] - c) / h).mean() + expit((c - s[y == 0]) / h).mean()) for c in grid]
    return float(grid[int(np.argmax(ba))])


#: decision rules compared on the recorded scores (``--rules``): the cut each makes on the
#: scores the ``auto`` rule chooses on (the inner models' pooled held-out scores; the training
#: bags' own scores when there are none or they rank worse than chance beyond noise)
RULES = {"best (before)": _cut_best, "shrunk, medians (adopted)": _cut_shrunk_median,
         "shrunk, means": _cut_shrunk_mean, "equal error rate": _cut_equal_error,
         "widest plateau of best BA": _cut_plateau, "smoothed BA": _cut_smoothed}


def rule_ba(rec, cut) -> tuple[float, int]:
    """(held-out balanced accuracy, one class?) of the cut ``cut`` on a fold's recorded scores."""
    from milopt.estimators.base import _ranks

    y = np.asarray(rec["y_train"])
    s = None if rec["inner"] is None else np.asarray(rec["inner"], dtype=float)
    if s is None or not _ranks(s, y):
        s = np.asarray(rec["train"], dtype=float)
    t = cut(s, y)
    yt, pred = np.asarray(rec["y_test"]), np.asarray(rec["test"], dtype=float) > t
    return 0.5 * (pred[yt == 1].mean() + (~pred[yt == 0]).mean()), int(np.unique(pred).size == 1)


def compare_rules(path) -> int:
    """Every rule of :data:`RULES` on the fold rows of ``path`` that record their scores (the
    fitted models do not depend on the rule, so no refit): one-class folds, of them at a fold
    AUC >= 0.75, the mean balanced accuracy of the cells with the defaults and tuned (the tuned
    fit cut by the same rule), and the cells where tuned beats the defaults by more than 3 points."""
    import json

    rows = [r for r in map(json.loads, open(path)) if "scores" in r]
    print(f"{len(rows)} fold rows, {len({(r['regime'], r['method']) for r in rows})} cells\n")
    print("| rule | one-class folds | of them AUC >= 0.75 | mean BA | mean BA tuned | cells > 3 points below tuned |\n"
          "|---|---|---|---|---|---|")
    for name, cut in RULES.items():
        cells, one, bad = {}, 0, 0
        for r in rows:
            ba, oc = rule_ba(r["scores"], cut)
            tb = rule_ba(r["tuned_scores"], cut)[0] if "tuned_scores" in r else ba
            one, bad = one + oc, bad + int(oc and r["auc"] >= AUC_GOOD)
            cells.setdefault((r["regime"], r["method"]), []).append((ba, tb))
        m = {c: np.mean(v, axis=0) for c, v in cells.items()}
        far = [f"{c[1]}@{c[0]} ({t - b:+.3f})" for c, (b, t) in m.items() if t - b > 0.03]
        print(f"| {name} | {one} | {bad} | {np.mean([b for b, _ in m.values()]):.3f} | "
              f"{np.mean([t for _, t in m.values()]):.3f} | {len(far)}{': ' + ', '.join(far) if far else ''} |")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 folds, generator regimes only")
    ap.add_argument("--folds", type=int, default=None)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--regimes", nargs="+", default=None, choices=list(REGIMES))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="K-fold splits per cell (split seeds seed, seed+1, ...)")
    ap.add_argument("--from-repeat", type=int, default=0, metavar="R",
                    help="run only the splits R, ..., repeats - 1 (the earlier ones are in a --rows file already)")
    ap.add_argument("--no-tune", action="store_true", help="defaults only")
    ap.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                    help="replace defaults (e.g. C=1 for the figures before a default changed)")
    ap.add_argument("--rows", default=None, help="append every fold's row to this file (JSON lines) as it ends")
    ap.add_argument("--table", default=None, metavar="ROWS", help="print the table of a --rows file and stop")
    ap.add_argument("--repeat", type=int, default=None, help="with --table: only the rows of this split")
    ap.add_argument("--against", default=None, metavar="ROWS",
                    help="with --table: the defaults against another setting's rows on the same folds")
    ap.add_argument("--rules", default=None, metavar="ROWS",
                    help="compare decision rules on the bag scores recorded in a --rows file and stop")
    a = ap.parse_args(argv)
    if a.table:
        return print_against(a.table, a.against) if a.against else print_table(a.table, a.repeat)
    if a.rules:
        return compare_rules(a.rules)
    k = a.folds or (3 if a.quick else 5)
    regimes = a.regimes or (list(QUICK_REGIMES) if a.quick else list(REGIMES))
    t0 = time.perf_counter()
    print(HEADER)
    from milopt.params import coerce

    params = {kv.partition("=")[0]: coerce(kv.partition("=")[2]) for kv in a.set}
    cells = run(a.methods, regimes, k, a.seed, a.jobs, not a.no_tune, echo=lambda s: None, rows_out=a.rows,
                repeats=a.repeats, params=params, first_repeat=a.from_repeat)
    for c in sorted(cells, key=lambda c: (list(REGIMES).index(c["regime"]), METHODS.index(c["method"]))):
        print(_line(c))
    print("\n" + verdict(cells) + f"\n{k}-fold x {a.repeats}, seed {a.seed}, {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
