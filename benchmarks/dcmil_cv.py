"""DC-MIL figures: 10-fold CV on MUSK1 / MUSK2 with the paper's inner selection of C, next to
``dcmil-dca`` and ``misvm-heuristic`` on the same folds, and the fraction of random problems on
which DCPCA's final f is <= DCA's from the same start.

Protocol (Astorino et al. 2019): stratified 10-fold CV over bags (``milopt.metrics.bag_folds``,
seed 0), features standardised with training-fold statistics (``--scale standard``), mapped to
[0, 1] by the training fold's minimum and maximum (``--scale minmax``) or as given (``--scale
none``; the paper does not say whether it scales them), a bag called positive when its score
is positive (``--threshold zero``, the sign rule of the paper's test correctness; ``auto`` is
milopt's default rule); on each training fold C is chosen
from {2^-7, ..., 2^7} by an inner stratified CV, ``--inner-repeats`` (3) partitions into
``--inner-folds`` (5) folds or ``--inner-folds loo`` (highest mean held-out sign-rule accuracy,
ties to the smallest C: ``DCMILClassifier(inner_cv=True)``, here computed from DCPCA fits cached
under ``--cache DIR`` so that variants sharing splits reuse them) and the model is refit on the
whole training fold; every C is refit on the training fold, and its mean test accuracy over the
folds (C fixed with hindsight) is printed too.  Reported per method:
test and train bag accuracy, CPU seconds of the whole fit (inner CV included), and for the final
fit nF, nG1, nG2 (function / f1-subgradient / f2-subgradient evaluations), serious and null steps,
final f and the criticality measure |v|, and ``f/f(0)``: the final f over the value
2C·min(|P|, |N|) that w = 0 with the better of b = ±1 attains (above 1: the fit ends worse than
the trivial classifier, i.e. far from any minimiser).

``dcmil-dca`` uses, on each fold, the C that DCPCA's inner CV chose (running its own inner CV
would multiply its cost by the grid size times the inner folds); pass ``--dca-inner-cv`` to give
it its own.  ``misvm-heuristic`` (if registered) runs with its defaults.

Usage::

    python benchmarks/dcmil_cv.py --datasets musk1 musk2 --inner-folds 5 --random 20
    python benchmarks/dcmil_cv.py --datasets musk1 --folds 10 --skip dca heuristic
    python benchmarks/dcmil_cv.py --datasets musk1 --skip dca heuristic --random 0 --scale none
    python benchmarks/dcmil_cv.py --datasets musk1 --skip dca heuristic --random 0 --inner-repeats 1 --cache c/
    python benchmarks/dcmil_cv.py --datasets musk1 musk2 --subproblems highs ipopt --time-limit 300
    python benchmarks/dcmil_cv.py --assemble run1.log run2.log     # table from per-fold logs
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

import numpy as np

import milopt
from milopt.algorithms import dcmil as alg
from milopt.data.bags import Bags
from milopt.estimators.dcmil import C_GRID, DCMILClassifier, inner_splits
from milopt.estimators.registry import methods
from milopt.metrics import bag_folds, standardize
from milopt.segments import segment_max


def minmax(train: Bags, *others: Bags):
    """Map every feature to [0, 1] with the training instances' minimum and maximum (constant
    features: range 1) and apply the same map to the other sets."""
    lo, hi = train.X.min(axis=0), train.X.max(axis=0)
    rng = np.where(hi > lo, hi - lo, 1.0)
    out = tuple(b.with_X((b.X - lo) / rng) for b in (train, *others))
    return out if others else out[0]


def scale_fold(mode, train, *others):
    """The training fold and the other sets under ``--scale`` (statistics of the training fold)."""
    if mode == "standard":
        return standardize(train, *others)
    if mode == "minmax":
        return minmax(train, *others)
    return (train, *others) if others else train


def trivial_f(bags, C):
    """f at w = 0 with the better intercept b = ±1: 2C·min(|P|, |N|) (an upper bound of min f)."""
    n_pos = int((bags.y == 1).sum())
    return 2.0 * float(C) * min(n_pos, bags.n_bags - n_pos)


def _fit_eval(est, tr, te):
    t0 = time.process_time()
    w0 = time.perf_counter()
    est.fit(tr)
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    row = {"test_acc": est.score(te), "train_acc": est.score(tr), "cpu_s": cpu, "wall_s": wall}
    info = getattr(est, "fit_info_", {}) or {}
    for k in ("nF", "nG1", "nG2", "serious", "null", "objective", "criticality", "C", "subproblems",
              "termination"):
        if k in info:
            row[k] = info[k]
    return row


class FitCache:
    """DCPCA fits kept by (data, scale, outer fold, training bags, C, budget): the bag scores of the
    held-out bags and the final f, nF and stop of each fit, in one JSON file per outer fold under
    ``--cache DIR`` (in memory without it), so inner-CV variants that share splits (repetition 0
    of a repeated K-fold is the single K-fold) or a rerun reuse the fits."""

    def __init__(self, root, tag, theta=0.7):
        self.theta = float(theta)
        self.path = None if root is None else os.path.join(root, tag + ".json")
        self.data = {}
        if self.path and os.path.exists(self.path):
            with open(self.path) as fh:
                self.data = json.load(fh)
        self.new = 0

    def fit_scores(self, train: Bags, held: Bags, tr_ids, C, max_fev, train_acc=False, rescaled=False):
        key = (f"C={float(C)!r}|fev={max_fev}|" + ("" if self.theta == 0.7 else f"theta={self.theta!r}|")
               + ("rescaled|" if rescaled else "") + hashlib.sha1(np.asarray(tr_ids, np.int64).tobytes()).hexdigest()[:20])
        hit = self.data.get(key)
        if hit is None:
            res = alg.dcpca(train, C=float(C), max_fev=max_fev, theta=self.theta, history=False)
            w, b = np.asarray(res.extra["w"]), float(res.extra["b"])
            sc = segment_max(held.X @ w + b, held.bag_ptr)
            hit = {"scores": sc.tolist(), "f": res.objective, "nF": res.extra["nF"], "stop": str(res.termination),
                   "crit": res.extra["criticality"], "f_over_trivial": res.objective / trivial_f(train, C),
                   "cpu_s": res.extra["cpu_seconds"]}
            if train_acc:
                hit["train_acc"] = float(np.mean((segment_max(train.X @ w + b, train.bag_ptr) > 0) == train.y))
            self.data[key] = hit
            self.new += 1
            if self.path and self.new % 25 == 0:
                self.save()
        return hit

    def save(self):
        if self.path:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            tmp = self.path + ".tmp"
            with open(tmp, "w") as fh:
                json.dump(self.data, fh)
            os.replace(tmp, self.path)


def inner_cv_cached(tr: Bags, te: Bags, tr_ids, cache: FitCache, folds, repeats, seed, max_fev="auto",
                    scale="standard"):
    """The estimator's inner CV (``DCMILClassifier(inner_cv=True)``: the same splits, the mean held-out
    sign-rule accuracy over splits, ties to the smallest C) from cached fits, and the refit of every
    C on the training fold with its test accuracy (the fixed-C figures with hindsight).  Each inner
    fold is scaled again by ``scale`` with the statistics of its training part, as the training
    fold was (for ``standard`` what the estimator does with standardised bags).  ``folds=0``:
    no inner CV (only the refits; the 'chosen' C is then the first of the grid)."""
    splits = inner_splits(tr.y, folds, repeats, seed) if folds != 0 else []
    acc = np.empty((len(C_GRID), len(splits)))
    for s_i, (itr, ite) in enumerate(splits):
        Btr, Bte = scale_fold(scale, tr.subset(itr), tr.subset(ite))
        for c_i, C in enumerate(C_GRID):
            sc = np.asarray(cache.fit_scores(Btr, Bte, np.asarray(tr_ids)[itr], C, max_fev,
                                             rescaled=scale != "none")["scores"])
            acc[c_i, s_i] = np.mean((sc > 0).astype(int) == Bte.y)
    means = np.average(acc, axis=1) if splits else np.zeros(len(C_GRID))
    best = int(np.argmax(means))                  # the first of the best: the smallest C
    per_c = []
    for C in C_GRID:
        h = cache.fit_scores(tr, te, tr_ids, C, max_fev, train_acc=True)
        per_c.append(dict(h, C=C, test_acc=float(np.mean((np.asarray(h["scores"]) > 0).astype(int) == te.y))))
    cache.save()
    return best, means, per_c


def cross_validation(name, bags, folds, seed, inner_folds, skip, dca_inner_cv, dca_max_iter, dca_time_limit,
                     dca_solver, log, only_folds=None, threshold="zero", scale="standard", inner_repeats=1,
                     cache_dir=None, theta=0.7, max_fev="auto", inner_seed=None):
    rows = {"dcmil": [], "dcmil-dca": [], "misvm-heuristic": []}
    reg = methods()
    for f, (tr_ids, te_ids) in enumerate(bag_folds(bags, folds, seed)):
        if only_folds is not None and f not in only_folds:
            continue
        tr, te = bags.subset(tr_ids), bags.subset(te_ids)
        tr, te = scale_fold(scale, tr, te)
        if threshold == "zero":     # the paper's sign rule: the inner CV from cached DCPCA fits
            cache = FitCache(cache_dir, f"{name}-{scale}-fold{f}", theta)
            t0 = time.process_time()
            best, means, per_c = inner_cv_cached(tr, te, tr_ids, cache, inner_folds, inner_repeats,
                                                 seed if inner_seed is None else inner_seed, max_fev, scale)
            h = per_c[best]
            r = {"C": h["C"], "test_acc": h["test_acc"], "train_acc": h["train_acc"], "nF": h["nF"],
                 "objective": h["f"], "criticality": h["crit"], "termination": h["stop"],
                 "f_over_trivial": h["f_over_trivial"], "cpu_s": time.process_time() - t0,
                 "fixed_C_test": [p["test_acc"] for p in per_c], "inner_means": means.tolist(),
                 "refits": [(p["f_over_trivial"], p["stop"]) for p in per_c]}
            log(f"# {name} fold {f} inner mean accuracy by C: " + " ".join(f"{m:.3f}" for m in means))
            log(f"# {name} fold {f} test accuracy by C: " + " ".join(f"{p['test_acc']:.2f}" for p in per_c))
            log(f"# {name} fold {f} refit f by C: " + " ".join(f"{p['f']:.4g}" for p in per_c))
        else:
            est = DCMILClassifier(method="dcpca", inner_cv=True, inner_folds=inner_folds, inner_repeats=inner_repeats,
                                  random_state=seed if inner_seed is None else inner_seed, threshold=threshold)
            r = _fit_eval(est, tr, te)
            r["f_over_trivial"] = r["objective"] / trivial_f(tr, r["C"])
        rows["dcmil"].append(r)
        log(f"{name} fold {f}: dcmil C={r['C']:g} test={r['test_acc']:.3f} train={r['train_acc']:.3f} "
            f"cpu={r['cpu_s']:.1f}s nF={r['nF']} f={r['objective']:.4g} crit={r['criticality']:.3g} "
            f"f/f(0)={r['f_over_trivial']:.3g} stop={r['termination']}")
        if "dca" not in skip:
            if dca_inner_cv:
                dest = DCMILClassifier(method="dca", inner_cv=True, inner_folds=inner_folds, random_state=seed,
                                       max_iter=dca_max_iter, time_limit=dca_time_limit, solver=dca_solver,
                                       threshold=threshold)
            else:
                dest = DCMILClassifier(method="dca", C=r["C"], max_iter=dca_max_iter, time_limit=dca_time_limit,
                                       solver=dca_solver, threshold=threshold)
            rd = _fit_eval(dest, tr, te)
            rows["dcmil-dca"].append(rd)
            log(f"{name} fold {f}: dcmil-dca C={rd['C']:g} test={rd['test_acc']:.3f} train={rd['train_acc']:.3f} "
                f"cpu={rd['cpu_s']:.1f}s wall={rd['wall_s']:.1f}s subproblems={rd.get('subproblems')} "
                f"f={rd['objective']:.4g} ({rd['termination']})")
        if "heuristic" not in skip and "misvm-heuristic" in reg:
            he = reg["misvm-heuristic"].make(seed=seed)
            rh = _fit_eval(he, tr, te)
            rows["misvm-heuristic"].append(rh)
            log(f"{name} fold {f}: misvm-heuristic test={rh['test_acc']:.3f} train={rh['train_acc']:.3f} "
                f"cpu={rh['cpu_s']:.1f}s")
    return {k: v for k, v in rows.items() if v}


def random_problem(seed, n_bags=40, d=10):
    """Gaussian bags; a positive bag holds 1-2 instances shifted by 1.5 along a random direction."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    arrays, y = [], []
    for i in range(n_bags):
        k = int(rng.integers(2, 8))
        Xb = rng.normal(size=(k, d))
        lab = int(i % 2)
        if lab:
            Xb[: int(rng.integers(1, 3))] += 1.5 * u
        arrays.append(Xb)
        y.append(lab)
    return Bags.from_arrays(arrays, np.array(y))


def dcpca_vs_dca(n, solver, log, dca_time_limit=120.0):
    out = []
    for s in range(n):
        b = random_problem(1000 + s)
        C = float(2.0 ** (s % 5 - 2))
        rp = alg.dcpca(b, C=C, history=False)
        rd = alg.dca(b, C=C, solver=solver, max_iter=100, time_limit=dca_time_limit, history=False)
        out.append({"seed": s, "C": C, "f0": rp.extra["f0"], "f_dcpca": rp.objective, "f_dca": rd.objective,
                    "dcpca_cpu": rp.extra["cpu_seconds"], "dca_cpu": rd.extra["cpu_seconds"],
                    "dca_subproblems": rd.extra["subproblems"], "nF": rp.extra["nF"],
                    "dca_termination": str(rd.termination), "dcpca_termination": str(rp.termination)})
        log(f"random {s}: C={C:g} f0={rp.extra['f0']:.4g} dcpca={rp.objective:.6g} ({rp.termination}, nF={rp.extra['nF']}) "
            f"dca={rd.objective:.6g} ({rd.termination}, {rd.extra['subproblems']} subproblems)")
    wins = sum(r["f_dcpca"] <= r["f_dca"] * (1 + 1e-6) + 1e-9 for r in out)
    return {"problems": out, "dcpca_le_dca": wins, "n": n}


def subproblem_timings(datasets, solvers, time_limit, log):
    """QP(I): native dual active-set vs the dcmil_direction model through HiGHS (random bundles in
    dimension 167); one dcmil_dca subproblem (C=1, paper's start) per data set and solver."""
    from milopt.models import dcmil_dca as dmod
    from milopt.models import dcmil_direction as qmod
    from milopt.solvers import solve

    rng = np.random.default_rng(0)
    for k in (10, 50, 100):
        G1 = rng.normal(size=(k, 167)) * 10
        a1 = np.abs(rng.normal(size=k))
        g2 = rng.normal(size=167)
        t = time.process_time()
        _, _, _, info = alg.solve_direction(G1, a1, g2)
        tn = time.process_time() - t
        t = time.process_time()
        r = solve(qmod.build(G1=G1, alpha1=a1, g2=g2), "highs")
        th = time.process_time() - t
        log(f"QP(I) k={k}: native {tn * 1e3:.1f} ms CPU, objective {info['objective']:.10g} | Pyomo build + HiGHS "
            f"{th * 1e3:.0f} ms CPU ({r.wall_time:.2f} s solver wall), objective {r.objective:.10g}")
    for name in datasets:
        bags = standardize(milopt.load(name))
        for sv in solvers:
            t = time.perf_counter()
            model = dmod.build(bags, C=1.0)
            tb = time.perf_counter() - t
            r = solve(model, sv, time_limit=time_limit)
            sol = dmod.decode(model) if r.ok else {"f": float("nan")}
            log(f"dcmil_dca {name} {sv}: build {tb:.2f} s, solve {r.wall_time:.1f} s wall, {r.termination}, "
                f"objective {r.objective}, f at solution {sol['f']:.6g}")


def assemble(paths, folds=10, seed=0, scale="standard"):
    """Figures table from the per-fold log lines of one or more runs (``--only-folds`` pieces).

    nG1, nG2, serious and null steps and the CPU of the final DCPCA fit are recomputed by
    refitting with the logged C on the same fold (deterministic: nF and f must match the log)."""
    import re

    rows = {}
    pat = re.compile(r"^(\w+) fold (\d+): (\S+) (.*)$")
    for fn in paths:
        for line in open(fn):
            m = pat.match(line.strip())
            if not m:
                continue
            data, fold, meth, rest = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            kv = dict(re.findall(r"(\w+)=([^\s()]+)", rest))
            r = {k: (float(v.rstrip("s")) if re.match(r"^-?[\d.e+-]+s?$", v) else v) for k, v in kv.items()}
            rows.setdefault((data, meth), {})[fold] = r
    cache = {}
    for (data, meth), per in rows.items():
        if meth != "dcmil":
            continue
        bags = cache.setdefault(data, milopt.load(data))
        split = list(bag_folds(bags, folds, seed))
        for f, r in per.items():
            tr, te = split[f]
            Btr = scale_fold(scale, bags.subset(tr))
            res = alg.dcpca(Btr, C=r["C"], history=False)
            assert res.extra["nF"] == int(r["nF"]), (data, f, res.extra["nF"], r["nF"])
            assert abs(res.objective - r["f"]) <= 1e-3 * abs(r["f"]) + 1e-3, (res.objective, r["f"])
            r.update(fit_cpu=res.extra["cpu_seconds"], nG1=res.extra["nG1"], nG2=res.extra["nG2"],
                     serious=res.extra["serious"], null=res.extra["null"])
    print("| data | method | folds | test acc (mean ± sd) | train acc | CPU s / fold | CPU s final fit | nF | nG1 | "
          "nG2 | serious | null | final f | C (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (data, meth), per in sorted(rows.items()):
        fs = sorted(per)
        R = [per[f] for f in fs]
        def mean(k, fmt, R=R):
            v = [r[k] for r in R if isinstance(r.get(k), (int, float))]
            return fmt.format(np.mean(v)) if v else "–"
        acc = np.array([r["test"] for r in R])
        fit_cpu = mean("fit_cpu", "{:.2f}") if meth == "dcmil" else (mean("cpu", "{:.1f}") if meth == "dcmil-dca" else "–")
        print(f"| {data} | {meth} | {len(fs)} ({fs[0]}–{fs[-1]}) | {acc.mean():.3f} ± {acc.std():.3f} | "
              f"{mean('train', '{:.3f}')} | {mean('cpu', '{:.1f}')} | {fit_cpu} | {mean('nF', '{:.0f}')} | "
              f"{mean('nG1', '{:.0f}')} | {mean('nG2', '{:.0f}')} | "
              f"{mean('serious','{:.0f}')} | {mean('null','{:.0f}')} | {mean('f','{:.3f}')} | "
              f"{np.median([r['C'] for r in R]) if 'C' in R[0] else '–'} |")
        if meth == "dcmil-dca":
            terms = [r.get("subproblems") for r in R]
            print(f"<!-- {data} dcmil-dca subproblems per fold: {[int(t) for t in terms]} -->")


def summarise(res):
    lines = []
    hdr = ("| data | method | test acc | train acc | CPU s / fold | nF | nG1 | nG2 | serious | null | C chosen (median) |")
    lines.append(hdr)
    lines.append("|" + "---|" * (hdr.count("|") - 1))
    for data, per in res.items():
        for meth, rows in per.items():
            def m(k, fmt="{:.1f}"):
                vals = [r[k] for r in rows if isinstance(r.get(k), (int, float))]
                return fmt.format(np.mean(vals)) if vals else "–"
            acc = np.array([r["test_acc"] for r in rows])
            lines.append(f"| {data} | {meth} | {acc.mean():.3f} ± {acc.std():.3f} | {m('train_acc', '{:.3f}')} | "
                         f"{m('cpu_s')} | {m('nF', '{:.0f}')} | {m('nG1', '{:.0f}')} | {m('nG2', '{:.0f}')} | "
                         f"{m('serious', '{:.0f}')} | {m('null', '{:.0f}')} | "
                         f"{np.median([r['C'] for r in rows]) if 'C' in rows[0] else '–'} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="*", default=["musk1", "musk2"], help="data sets for the CV (none: only --random)")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--inner-folds", type=lambda v: v if v == "loo" else int(v), default=5,
                    help="folds of the inner CV over C, or 'loo' (leave one bag out); 0: no inner CV, only every C's "
                         "refit and test accuracy")
    ap.add_argument("--inner-repeats", type=int, default=3,
                    help="stratified partitions of the inner CV (repetition r shuffled with seed + r)")
    ap.add_argument("--inner-seed", type=int, default=None,
                    help="seed of the inner partitions (default: --seed, which also draws the outer folds)")
    ap.add_argument("--theta", type=float, default=0.7, help="DCPCA stopping tolerance (paper: 0.7; a diagnostic)")
    ap.add_argument("--max-fev", default="auto", help="DCPCA evaluation budget (paper: 500 here; a diagnostic)")
    ap.add_argument("--cache", default=None, metavar="DIR",
                    help="keep every DCPCA fit's held-out scores here (one JSON per outer fold) and reuse them")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", choices=["none", "standard", "minmax"], default="standard",
                    help="features as given ('none'), standardised ('standard') or mapped to [0, 1] ('minmax') with "
                         "training-fold statistics")
    ap.add_argument("--threshold", default="zero",
                    help="decision rule of dcmil and dcmil-dca: 'zero' (default; the paper's sign of max w'x + b), "
                         "'auto' (milopt's default rule) or a number")
    ap.add_argument("--skip", nargs="*", default=[], choices=["dca", "heuristic"])
    ap.add_argument("--dca-inner-cv", action="store_true")
    ap.add_argument("--dca-max-iter", type=int, default=50)
    ap.add_argument("--dca-time-limit", type=float, default=None, help="seconds per DCA fit (all subproblems)")
    ap.add_argument("--dca-solver", default="highs")
    ap.add_argument("--random", type=int, default=20, help="random problems for the DCPCA <= DCA fraction (0: skip)")
    ap.add_argument("--out", default=None, help="write all rows as JSON")
    ap.add_argument("--only-folds", type=int, nargs="*", default=None,
                    help="run only these outer folds (same split; to spread a run over processes)")
    ap.add_argument("--subproblems", nargs="*", default=None, metavar="SOLVER",
                    help="only time QP(I) (native vs HiGHS) and one dcmil_dca solve per data set with these solvers")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per subproblem solve (--subproblems)")
    ap.add_argument("--assemble", nargs="+", default=None, metavar="LOG",
                    help="print the figures table from these run logs and exit")
    a = ap.parse_args(argv)
    if a.assemble:
        assemble(a.assemble, a.folds, a.seed, a.scale)
        return

    def log(msg):
        print(msg, flush=True)

    if a.subproblems is not None:
        subproblem_timings(a.datasets, a.subproblems or ["highs"], a.time_limit, log)
        return

    res = {}
    for name in a.datasets:
        bags = milopt.load(name)
        res[name] = cross_validation(name, bags, a.folds, a.seed, a.inner_folds, set(a.skip), a.dca_inner_cv,
                                     a.dca_max_iter, a.dca_time_limit, a.dca_solver, log,
                                     None if a.only_folds is None else set(a.only_folds), a.threshold,
                                     a.scale, a.inner_repeats, a.cache, a.theta,
                                     a.max_fev if a.max_fev in ("auto", "medium", "large") else int(a.max_fev),
                                     a.inner_seed)
    out = {"cv": res, "settings": vars(a)}
    if a.random:
        out["random"] = dcpca_vs_dca(a.random, a.dca_solver, log,
                                     120.0 if a.dca_time_limit is None else a.dca_time_limit)
    print()
    print(summarise(res))
    for name, per in res.items():
        rows = per.get("dcmil", [])
        if rows and "fixed_C_test" in rows[0]:
            fixed = np.mean([r["fixed_C_test"] for r in rows], axis=0)
            k = int(np.argmax(fixed))
            ratio = [r["f_over_trivial"] for r in rows]
            print(f"{name} dcmil: final fits stopped by the budget {sum(r['termination'] != 'converged' for r in rows)} "
                  f"of {len(rows)}; f/f(0) median {np.median(ratio):.3g} (max {max(ratio):.3g}); best fixed C with "
                  f"hindsight {fixed[k]:.3f} (C = {C_GRID[k]:g}); by C: " + " ".join(f"{v:.3f}" for v in fixed))
            oracle = np.mean([max(r["fixed_C_test"]) for r in rows])
            refits = [x for r in rows for x in r["refits"]]
            print(f"{name} dcmil: the best C of each fold on its own test bags (an oracle) {oracle:.3f}; all "
                  f"{len(refits)} refits: stopped by the budget {sum(st != 'converged' for _, st in refits)}, f/f(0) "
                  f"median {np.median([q for q, _ in refits]):.3g} (max {max(q for q, _ in refits):.3g})")
    if a.random:
        r = out["random"]
        print(f"\nDCPCA final f <= DCA final f (same start, same C) on {r['dcpca_le_dca']}/{r['n']} random problems")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
