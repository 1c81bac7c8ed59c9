r"""Tables of ``milopt report``: solved counts, charged times, shifted geometric means and their
ratios, the virtual best, performance ratios and profiles, primal integrals, ``.solu`` entries,
Markdown.

Every figure is defined in docs/bench.md (section "What the report's figures mean") with its
source; :mod:`milopt.bench.report` assembles them into ``summary.md``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from milopt.bench.assess import FIT_FAILURES  # noqa: F401  (re-exported)

#: shift of the shifted geometric mean of times, seconds (``milopt report --shift``)
SHIFT = 10.0
#: a run that claims optimality with a gap at most this is an ``=opt=`` line of the .solu file
OPT_GAP = 1e-6

def _assessed(df: pd.DataFrame) -> pd.DataFrame:
    if "solved" in df and "failure" in df:
        return df
    from milopt.bench.assess import assess

    return assess(df)


def solved_mask(df: pd.DataFrame) -> pd.Series:
    """Solved runs (milopt.bench.assess): a solve must be optimal, verified, within its time
    limit and agree with the best known value; a fit must end without a failure termination."""
    return _assessed(df)["solved"].astype(bool)


def charged_times(df: pd.DataFrame) -> pd.Series:
    """Time of solved runs; the time limit for the others (kill limit when no time limit)."""
    limit = df["time_limit"].where(df["time_limit"].notna(), df["kill_after"]).astype(float)
    t = df["time"].astype(float)
    return t.where(solved_mask(df), limit)


def shifted_geomean(values, shift: float = SHIFT) -> float:
    """exp(mean(log(t + shift))) - shift; NaN for an empty input."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return float("nan")
    if np.any(v < 0):
        raise ValueError("shifted geometric mean of negative times")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def capped_gaps(df: pd.DataFrame) -> pd.Series:
    """Relative gap in [0, 1]; 1 for runs without a solution."""
    g = df["gap"].astype(float).clip(lower=0.0, upper=1.0)
    has = (df["outcome"] == "ok") & df["objective"].notna()
    return g.where(has & g.notna(), 1.0)


def _labels(df: pd.DataFrame) -> dict:
    """contender -> label with its parameters (threads, gap limit, options) for plots."""
    out = {}
    for c, g in df.groupby("contender", sort=True):
        parts = []
        r = g.iloc[0]
        if "threads" in g and pd.notna(r.get("threads")) and str(r.get("threads")) != "":
            parts.append(f"threads={int(float(r['threads']))}")
        if "gap_limit" in g and pd.notna(r.get("gap_limit")) and str(r.get("gap_limit")) != "":
            parts.append(f"gap={float(r['gap_limit']):g}")
        opts = str(r.get("solver_options") or "")
        if opts and opts not in ("{}", "nan"):
            parts.append(opts.strip("{}").replace('"', ""))
        if (g["kind"] == "fit").all():
            parts = []
        out[c] = f"{c} ({', '.join(parts)})" if parts else str(c)
    return out


def summary_table(df: pd.DataFrame, shift: float = SHIFT) -> pd.DataFrame:
    """Per (kind, contender): runs given, solved, failure counts, shifted geometric means.

    Solve rows: ``sgm_time`` over every run the contender was given (unsolved runs charged
    their limit), ``sgm_common`` over the problems *every* solve contender was given,
    ``sgm_all_solved`` over the problems every contender solved; ``wrong`` wrong optima,
    ``overrun`` runs that outlived their limit, ``unverified`` answers that failed the check;
    plus a ``virtual best`` row (per problem the fastest solved run of any contender).
    Fit rows: bag AUC and accuracy (mean and standard deviation over held-out folds) first.

    Each ratio sits right after the mean it divides and is taken over the same runs:
    ``sgm_ratio = sgm_time / min sgm_time`` and (solves) ``sgm_common_ratio = sgm_common /
    min sgm_common``, the minimum over the real contenders of the same kind (never the virtual
    best, whose ratios show how far the best contender is from picking the fastest per problem).
    """
    df = _assessed(df)
    rows = []
    solve = df[(df["kind"] == "solve") & (df["outcome"] != "unsupported")]
    given = {c: set(g["problem"]) for c, g in solve.groupby("contender")}
    common = set.intersection(*given.values()) if given else set()
    solved_by = {c: set(g.loc[g["solved"], "problem"]) for c, g in solve.groupby("contender")}
    all_solved = common & set.intersection(*solved_by.values()) if solved_by else set()
    for (kind, cont), g in df.groupby(["kind", "contender"], sort=True):
        att = g[g["outcome"] != "unsupported"]
        sol = att["solved"].astype(bool)
        fails = att["failure"].fillna("")
        r = {"kind": kind, "contender": cont, "runs": len(att), "solved": int(sol.sum())}
        if kind == "fit":
            for m in ("bag_auc", "bag_accuracy"):
                vals = att[m].astype(float).dropna() if m in att else pd.Series(dtype=float)
                r[m] = float(vals.mean()) if len(vals) else float("nan")
                r[m + "_sd"] = float(vals.std(ddof=1)) if len(vals) > 1 else float("nan")
        r.update({"time_limit": int((att["termination"] == "time_limit").sum()),
                  "iter_limit": int((att["termination"] == "iteration_limit").sum()),
                  "killed": int((att["outcome"] == "killed").sum()), "errors": int((att["outcome"] == "error").sum()),
                  "unsupported": int((g["outcome"] == "unsupported").sum())})
        if kind == "solve":
            r.update({"wrong": int(fails.str.contains("wrong optimum").sum()),
                      "overrun": int(fails.str.contains("outlived").sum()),
                      "unverified": int(fails.str.contains("not verified").sum()),
                      "flagged": int((att["flag"].fillna("") != "").sum())})
        ct = charged_times(att) if len(att) else pd.Series(dtype=float)
        r["sgm_time"] = shifted_geomean(ct, shift) if len(att) else float("nan")
        if kind == "solve":
            inc = att["problem"].isin(common)
            r["sgm_common"] = shifted_geomean(ct[inc], shift) if inc.any() else float("nan")
            ins = att["problem"].isin(all_solved)
            r["sgm_all_solved"] = shifted_geomean(att.loc[ins, "time"].astype(float), shift) if ins.any() \
                else float("nan")
            r["mean_gap"] = float(capped_gaps(att).mean()) if len(att) else float("nan")
        else:
            gg = att.loc[att["gap"].notna(), "gap"].astype(float).clip(0.0, 1.0)
            r["mean_gap"] = float(gg.mean()) if len(gg) else float("nan")
        rows.append(r)
    if len(solve) and len(given) > 1:
        vb = virtual_best(solve)
        ct = vb["charged"]
        rows.append({"kind": "solve", "contender": "virtual best", "runs": len(vb), "solved": int(vb["solved"].sum()),
                     "sgm_time": shifted_geomean(ct, shift),
                     "sgm_common": shifted_geomean(ct[vb.index.isin(common)], shift) if common else float("nan"),
                     "sgm_all_solved": shifted_geomean(vb.loc[vb.index.isin(all_solved), "time"], shift)
                     if all_solved else float("nan")})
    out = pd.DataFrame(rows)
    if len(out):
        real = out["contender"] != "virtual best"
        for col, name in (("sgm_time", "sgm_ratio"), ("sgm_common", "sgm_common_ratio")):
            if col not in out:
                continue
            best = out[col].where(real).groupby(out["kind"]).transform("min")
            out.insert(out.columns.get_loc(col) + 1, name, out[col] / best)
    return out


def virtual_best(solve: pd.DataFrame) -> pd.DataFrame:
    """Per problem: the fastest solved run of any contender (``time``, ``charged``, ``solved``,
    ``by``); unsolved problems are charged the smallest time limit given."""
    d = _assessed(solve)
    d = d[(d["kind"] == "solve") & (d["outcome"] != "unsupported")]
    rows = {}
    for p, g in d.groupby("problem"):
        s = g[g["solved"]]
        lim = float(g["time_limit"].where(g["time_limit"].notna(), g["kill_after"]).astype(float).min())
        if len(s):
            k = s["time"].astype(float).idxmin()
            t = float(s.loc[k, "time"])
            rows[p] = {"time": t, "charged": t, "solved": True, "by": s.loc[k, "contender"]}
        else:
            rows[p] = {"time": lim, "charged": lim, "solved": False, "by": ""}
    return pd.DataFrame.from_dict(rows, orient="index")


def time_matrix(df: pd.DataFrame, kind: str, problems=None) -> pd.DataFrame:
    """Problems x contenders of times (inf when not solved).

    Over every problem of the table (and of ``problems``, e.g. a suite's instances): a
    contender that was not given a problem, or could not handle it, counts as failing on it
    -- the profile is over the whole suite, not only what every contender attempted."""
    d = df[(df["kind"] == kind) & (df["outcome"] != "unsupported")].copy()
    if d.empty:
        return pd.DataFrame()
    d["_t"] = np.where(solved_mask(d), d["time"].astype(float), np.inf)
    m = d.pivot_table(index="problem", columns="contender", values="_t", aggfunc="min")
    if problems is not None:
        m = m.reindex(sorted(set(m.index) | set(problems)))
    return m.fillna(np.inf)


def performance_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """Dolan-Moré ratios r_{p,c} = t_{p,c} / min_c t_{p,c}; inf for failures (and when all failed)."""
    t = times.astype(float).clip(lower=1e-9)
    best = t.min(axis=1)
    r = t.div(best, axis=0)
    r[~np.isfinite(t)] = np.inf
    r[~np.isfinite(best)] = np.inf
    return r


def performance_profile(times: pd.DataFrame, taus=None) -> tuple[np.ndarray, pd.DataFrame]:
    """rho_c(tau) = fraction of problems with ratio <= tau; returns (taus, frame tau x contender)."""
    r = performance_ratios(times)
    if taus is None:
        finite = r.to_numpy()[np.isfinite(r.to_numpy())]
        top = float(finite.max()) if finite.size else 1.0
        taus = np.unique(np.concatenate([[1.0], np.sort(finite), [max(top * 1.05, 1.05)]]))
    taus = np.asarray(taus, dtype=float)
    n = len(r)
    prof = {c: [(r[c] <= tau).sum() / n if n else float("nan") for tau in taus] for c in r.columns}
    return taus, pd.DataFrame(prof, index=pd.Index(taus, name="tau"))


# ------------------------------------------------------------------ solu files
def solu_entries(df: pd.DataFrame, existing: dict | None = None, tol: float = 1e-5) -> tuple[dict, list]:
    """Best known objective per instance from the solve rows, merged with ``existing``.

    Returns ``(entries, conflicts)``; a conflict is two proven optima that differ by more
    than ``tol`` (relative), or a solution found for an instance recorded infeasible.
    """
    entries = dict(existing or {})
    conflicts = []
    d = df[df["kind"] == "solve"]
    for inst, g in d.groupby("instance", sort=True):
        sgn = -1.0 if "sense" in g and (g["sense"] == "maximize").any() else 1.0  # objective sense
        okr = g[(g["outcome"] == "ok") & g["objective"].notna()]
        new = None
        if len(okr):
            opt = okr[(okr["termination"] == "optimal") & (okr["gap"].fillna(0.0).astype(float) <= OPT_GAP)]
            if len(opt):
                vals = opt["objective"].astype(float)
                if vals.max() - vals.min() > tol * max(1.0, abs(vals.min())):
                    conflicts.append(f"{inst}: proven optima differ ({vals.min():.10g} .. {vals.max():.10g})")
                new = ("opt", float(sgn * (sgn * vals).min()))
            else:
                new = ("best", float(sgn * (sgn * okr["objective"].astype(float)).min()))
        elif (g["termination"] == "infeasible").any():
            new = ("inf", None)
        if new is None:
            continue
        old = entries.get(inst)
        if old is None:
            entries[inst] = new
            continue
        ok_, ov = old
        nk, nv = new
        if ok_ == "inf" and nk in ("opt", "best"):
            conflicts.append(f"{inst}: recorded infeasible but a solution with objective {nv:.10g} was found")
            entries[inst] = new
        elif ok_ == "opt" and nk == "opt":
            if abs(ov - nv) > tol * max(1.0, abs(ov)):
                conflicts.append(f"{inst}: proven optimum {nv:.10g} differs from the recorded {ov:.10g}")
        elif ok_ == "opt":
            if nv is not None and sgn * nv < sgn * ov - tol * max(1.0, abs(ov)):
                conflicts.append(f"{inst}: solution {nv:.10g} is better than the recorded optimum {ov:.10g}")
        elif nk == "opt" or (nk == "best" and (ov is None or sgn * nv < sgn * ov)):
            entries[inst] = new
    return entries, conflicts


def _trajectory(r) -> list:
    from milopt.bench.assess import _extra

    t = _extra(r.get("extra")).get("trajectory")
    if not isinstance(t, list):
        return []
    out = []
    for pt in t:  # points going back in time come from a garbled log line: skipped
        if isinstance(pt, list) and len(pt) == 3 and (not out or pt[0] >= out[-1][0]):
            out.append(pt)
    return out


def primal_integrals(df: pd.DataFrame, refs: dict) -> pd.DataFrame:
    r"""Primal integral of every integer-problem solve whose solver reported its incumbents.

    :math:`P(T) = \int_0^T p(t)\,dt` (Berthold 2013; :func:`milopt.bench.assess.primal_integral`)
    over the recorded trajectory in the order found, with the horizon :math:`T` the run's time
    limit (the last incumbent is held up to it) and the reference :math:`v^*` the best known
    value of the instance (``refs``: the ``.solu`` value or the best verified run).

    Returns one row per run: ``problem``, ``contender``, ``primal_integral``, ``horizon`` (T),
    ``mean_primal_gap`` (P(T) / T), ``reference`` (v*), ``reference_kind`` (``opt``, ``best``
    or ``verified run``), ``points`` (incumbent reports used).
    """
    from milopt.bench.assess import primal_integral

    cols = ["problem", "contender", "primal_integral", "horizon", "mean_primal_gap", "reference", "reference_kind",
            "points"]
    rows = []
    d = df[(df["kind"] == "solve") & df["problem_class"].astype(str).str.startswith("MI")]
    for _, r in d.iterrows():
        tr = _trajectory(r)
        ref = refs.get(r["instance"])
        if not tr or ref is None:
            continue
        tl = float(r["time_limit"]) if pd.notna(r["time_limit"]) else float(tr[-1][0])
        pi = primal_integral(tr, ref[0], tl)
        rows.append({"problem": r["problem"], "contender": r["contender"], "primal_integral": pi, "horizon": tl,
                     "mean_primal_gap": pi / tl if tl > 0 else float("nan"), "reference": ref[0],
                     "reference_kind": ref[1], "points": len(tr)})
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------ markdown
def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def markdown_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "(none)\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_cell(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def instance_table(df: pd.DataFrame) -> pd.DataFrame:
    """Solve rows side by side: per problem and solver, 'termination objective gap time'."""
    d = df[df["kind"] == "solve"]
    if d.empty:
        return pd.DataFrame()
    size = d.groupby("problem")[["variables", "binaries", "constraints", "nonzeros"]].max()

    def cell(r):
        if r["outcome"] != "ok":
            return r["outcome"]
        obj = "-" if pd.isna(r["objective"]) else f"{r['objective']:.6g}"
        gap = "" if pd.isna(r["gap"]) or r["termination"] == "optimal" else f" gap {100 * min(r['gap'], 1):.1f}%"
        return f"{r['termination']} {obj}{gap} ({r['time']:.1f}s)"

    d = d.assign(_c=d.apply(cell, axis=1))
    piv = d.pivot_table(index="problem", columns="contender", values="_c", aggfunc="first")
    out = size.join(piv).reset_index()
    for c in ("variables", "binaries", "constraints", "nonzeros"):
        out[c] = out[c].map(lambda v: "-" if pd.isna(v) else str(int(v)))
    return out


def _pm(vals) -> str:
    v = pd.Series(vals, dtype=float).dropna()
    if v.empty:
        return "-"
    return f"{v.mean():.3f} ± {v.std(ddof=1):.3f}" if len(v) > 1 else f"{v.mean():.3f}"


def fit_quality_table(df: pd.DataFrame, shift: float = SHIFT) -> pd.DataFrame:
    """Fits, quality first: bag AUC and accuracy (mean ± standard deviation over held-out folds and
    seeds), then the folds solved and the time (shifted geometric mean of fit seconds)."""
    fits = _assessed(df[df["kind"] == "fit"])
    rows = []
    for (c, d), g in fits.groupby(["contender", "data"], sort=True):
        ok = g[g["solved"]]
        rows.append({"contender": c, "data": d, "bag_auc": _pm(g["bag_auc"]), "bag_accuracy": _pm(g["bag_accuracy"]),
                     "folds_solved": f"{len(ok)}/{len(g)}",
                     "sgm_fit_seconds": shifted_geomean(charged_times(g), shift)})
    out = pd.DataFrame(rows)
    if len(out):
        key = out["bag_auc"].str.split(" ").str[0].replace("-", "nan").astype(float)
        out = out.assign(_k=key).sort_values(["data", "_k"], ascending=[True, False]).drop(columns="_k")
    return out


def class_sgm_table(df: pd.DataFrame, shift: float = SHIFT) -> pd.DataFrame:
    """Per problem class: for every solver given a problem of the class, solved / given and the
    shifted geometric means over the class's problems *every* such solver was given
    (``sgm_common``, unsolved charged the limit) and over those every such solver solved
    (``sgm_all_solved``), plus the class's virtual best; ``sgm_common_ratio`` divides
    ``sgm_common`` by the smallest of a real solver of the class."""
    d = _assessed(df)
    d = d[(d["kind"] == "solve") & (d["outcome"] != "unsupported")]
    rows = []
    for cls, g in d.groupby("problem_class", sort=True):
        given = {c: set(x["problem"]) for c, x in g.groupby("contender")}
        common = set.intersection(*given.values())
        solved_all = common & set.intersection(*[set(x.loc[x["solved"], "problem"]) for _, x in g.groupby("contender")])
        for c, x in g.groupby("contender", sort=True):
            ct = charged_times(x)
            inc = x["problem"].isin(common)
            ins = x["problem"].isin(solved_all)
            rows.append({"class": cls, "contender": c, "given": len(x), "solved": int(x["solved"].sum()),
                         "common": len(common),
                         "sgm_common": shifted_geomean(ct[inc], shift) if inc.any() else float("nan"),
                         "all_solved": len(solved_all),
                         "sgm_all_solved": shifted_geomean(x.loc[ins, "time"].astype(float), shift) if ins.any()
                         else float("nan")})
        if len(given) > 1:
            vb = virtual_best(g)
            rows.append({"class": cls, "contender": "virtual best", "given": len(vb), "solved": int(vb["solved"].sum()),
                         "common": len(common),
                         "sgm_common": shifted_geomean(vb.loc[vb.index.isin(common), "charged"], shift) if common
                         else float("nan"), "all_solved": len(solved_all),
                         "sgm_all_solved": shifted_geomean(vb.loc[vb.index.isin(solved_all), "time"], shift)
                         if solved_all else float("nan")})
    out = pd.DataFrame(rows)
    if len(out):  # ratio within each class, over the same runs as sgm_common, to the best real solver
        best = out["sgm_common"].where(out["contender"] != "virtual best").groupby(out["class"]).transform("min")
        out.insert(out.columns.get_loc("sgm_common") + 1, "sgm_common_ratio", out["sgm_common"] / best)
    return out


def class_table(df: pd.DataFrame) -> pd.DataFrame:
    """Solved / given per problem class and contender."""
    d = df[(df["kind"] == "solve") & (df["outcome"] != "unsupported")]
    if d.empty:
        return pd.DataFrame()
    t = d.groupby(["problem_class", "contender"]).agg(given=("problem", "nunique"), solved=("solved", "sum"))
    t["cell"] = t["solved"].astype(int).astype(str) + "/" + t["given"].astype(str)
    out = t["cell"].unstack("contender").fillna("-").reset_index()
    out.columns.name = None
    return out

