r"""Reports of bench folders (``milopt report DIR [DIR...] [--external CSV]``).

Definitions (see docs/bench.md and docs/library.md):

* **solved** (:mod:`milopt.bench.assess`): a solve is solved when it ended optimal, its answer
  was verified against the model (feasible within 1e-6, objective recomputed), it did not
  outlive its time limit (build + solve <= 1.1 T + 1 s) and its objective agrees with the best
  known value (the ``.solu`` and the best verified run) within the gap tolerance; a wrong
  "optimal" is a failure with its reason.  A fit is solved when it finished and its method
  reported no failure termination (an iteration limit counts as solved and in ``iter_limit``).
* **time**: solver wall time for solves, fitting seconds for fits; a run that is not solved
  is charged its time limit (a killed or crashed run too).
* **shifted geometric mean** with shift :math:`s = 10` s:
  :math:`\mathrm{sgm}(t) = \exp\big(\tfrac1n \sum_i \ln(t_i + s)\big) - s`, over every run a
  contender was given (``sgm_time``), over the problems every contender was given
  (``sgm_common``) and over those every contender solved (``sgm_all_solved``); the
  **virtual best** solver takes per problem the fastest solved run.
* **mean gap**: relative gap capped at 1 (100 %), a run without a solution counts 1.
* **performance profile** (Dolan & Moré 2002): for problem :math:`p` and contender :math:`c`,
  :math:`r_{p,c} = t_{p,c} / \min_{c'} t_{p,c'}` (:math:`\infty` when :math:`c` failed or was
  not given :math:`p`); :math:`\rho_c(\tau) = |\{p : r_{p,c} \le \tau\}| / |P|` over all
  problems of the bench (of the suite).  ``unsupported`` runs are counted, never solved.
* **primal integral** (Berthold 2013) of integer problems whose solver reported its incumbents
  over time (SCIP): :math:`\int_0^T \gamma(t)\,dt` up to the time limit :math:`T`.
* **.solu** lines (SCIP / MIPLIB convention; values in the model's own objective sense,
  recorded per run in the ``sense`` column): ``=opt= NAME VALUE`` when a run proved
  optimality with gap <= 1e-6, ``=best= NAME VALUE`` the best objective found otherwise
  (lowest when minimising, highest when maximising), ``=inf= NAME`` when a run proved infeasibility and no run found a solution.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from milopt.errors import InvalidParameterError

SHIFT = 10.0
#: terminations of a fit that count as a failure (an iteration limit does not: the model is usable)
from milopt.bench.assess import FIT_FAILURES  # noqa: E402,F401  (re-exported)
from milopt.bench.runs import _STR_COLS, BenchReportWarning, load_runs  # noqa: E402,F401  (re-exported)
from milopt.bench.solu import read_solu, read_solu_full, write_solu, write_solu_full  # noqa: E402,F401  (re-exported)
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
        # ratios as in Mittelmann's tables: over a common set of problems (sgm_common for solves)
        # solves with no problem given to every solver: no common ratio (see the per-class table)
        base = out["sgm_time"].copy()
        if "sgm_common" in out:
            base = base.where(out["kind"] != "solve", out["sgm_common"])
        best = base.groupby(out["kind"]).transform("min")
        out.insert(out.columns.get_loc("sgm_time") + 1, "sgm_ratio", base / best)
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


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


LINESTYLES = ["-", "--", "-.", ":"]
MARKERS = ["o", "s", "^", "v", "D", "x", "+", "*", "P", "h", "<"]  # 11: coprime with the 4 line styles


def contender_style(k: int) -> dict:
    """Line style and marker of the k-th contender: 4 line styles x 11 markers (44 pairs), so that more
    than ten contenders stay apart without colour."""
    return {"linestyle": LINESTYLES[k % len(LINESTYLES)], "marker": MARKERS[k % len(MARKERS)]}


def plot_profile(times: pd.DataFrame, path, title: str, labels: dict | None = None) -> None:
    plt = _plt()
    taus, prof = performance_profile(times)
    n = len(prof.columns)
    fig, ax = plt.subplots(figsize=(7.2, 4.6 + 0.12 * max(0, n - 6)))
    for k, c in enumerate(prof.columns):
        st = contender_style(k)
        ax.step(taus, prof[c].to_numpy(), where="post", label=(labels or {}).get(c, c), linestyle=st["linestyle"],
                marker=st["marker"], markevery=max(1, len(taus) // 12), markersize=5, linewidth=1.3,
                markerfacecolor="none")
    ax.set_xscale("log", base=2)
    ax.set_xlim(1, max(taus[-1], 2))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"$\tau$ (time ratio to the fastest)")
    ax.set_ylabel(r"fraction of problems with ratio $\leq \tau$")
    ax.set_title(f"{title} ({len(times)} problems)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=7, ncol=2 if n > 8 else 1, handlelength=3.2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_gaps(df: pd.DataFrame, path) -> bool:
    d = df[(df["kind"] == "solve") & (df["outcome"] != "unsupported")].copy()
    if d.empty:
        return False
    plt = _plt()
    d["_gap"] = capped_gaps(d) * 100
    problems = sorted(d["problem"].unique())
    x = {p: i for i, p in enumerate(problems)}
    fig, ax = plt.subplots(figsize=(max(6.4, 0.35 * len(problems) + 2), 4.4))
    conts = sorted(d["contender"].unique())
    for j, (c, g) in enumerate(d.groupby("contender", sort=True)):
        off = (j - (len(conts) - 1) / 2) * 0.12
        nosol = ~((g["outcome"] == "ok") & g["objective"].notna())
        xs = g["problem"].map(x).to_numpy() + off
        ax.scatter(xs[~nosol.to_numpy()], g["_gap"].to_numpy()[~nosol.to_numpy()], label=c, s=28,
                   marker=MARKERS[j % len(MARKERS)])
        if nosol.any():
            ax.scatter(xs[nosol.to_numpy()], g["_gap"].to_numpy()[nosol.to_numpy()], marker="x", color="k", s=28,
                       label="no solution" if j == 0 else None)
    ax.set_xticks(range(len(problems)))
    ax.set_xticklabels(problems, rotation=70, ha="right", fontsize=7)
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylim(-0.001, 150)
    ax.set_ylabel("final relative gap (%)")
    ax.set_title("final relative gap per instance (x: no solution, drawn at 100 %)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


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
    """Per integer-problem run with an incumbent trajectory: primal integral up to its time limit."""
    from milopt.bench.assess import primal_integral

    rows = []
    d = df[(df["kind"] == "solve") & df["problem_class"].astype(str).str.startswith("MI")]
    for _, r in d.iterrows():
        tr = _trajectory(r)
        ref = refs.get(r["instance"])
        if not tr or ref is None:
            continue
        tl = float(r["time_limit"]) if pd.notna(r["time_limit"]) else float(tr[-1][0])
        rows.append({"problem": r["problem"], "contender": r["contender"],
                     "primal_integral": primal_integral(tr, ref[0], tl), "horizon": tl})
    return pd.DataFrame(rows, columns=["problem", "contender", "primal_integral", "horizon"])


def plot_gap_over_time(df: pd.DataFrame, refs: dict, path, max_panels: int = 16) -> bool:
    """Primal gap (solid) and primal-dual gap (dashed) over time, one panel per integer problem."""
    from milopt.bench.assess import primal_gap

    d = df[(df["kind"] == "solve") & df["problem_class"].astype(str).str.startswith("MI")]
    d = d[[bool(_trajectory(r)) for _, r in d.iterrows()]] if len(d) else d
    if d.empty:
        return False
    plt = _plt()
    probs = sorted(d["problem"].unique())[:max_panels]
    k = len(probs)
    ncol = min(4, k)
    nrow = (k + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 2.6 * nrow), squeeze=False)
    conts = sorted(d["contender"].unique())
    for ax, p in zip(axes.ravel(), probs):
        g = d[d["problem"] == p]
        ref = refs.get(g["instance"].iloc[0])
        for _, r in g.iterrows():
            tr = _trajectory(r)
            j = conts.index(r["contender"])
            ts = [max(t, 1e-2) for t, _, _ in tr]
            pg = [primal_gap(pr, ref[0] if ref else None) * 100 for _, _, pr in tr]
            dg = []
            for _, du, pr in tr:
                if pr is None or du is None:
                    dg.append(100.0)
                else:
                    dg.append(min(100.0, 100 * abs(pr - du) / max(abs(pr), abs(du), 1e-10)))
            st = contender_style(j)
            ax.step(ts, pg, where="post", linestyle="-", marker=st["marker"], markevery=max(1, len(ts) // 6),
                    markersize=4, label=f"{r['contender']} primal gap")
            ax.step(ts, dg, where="post", linestyle="--", linewidth=0.9, label=f"{r['contender']} gap")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_ylim(-0.001, 150)
        ax.set_title(p.split("#")[0], fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(True, alpha=0.3)
    for ax in axes.ravel()[k:]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=6)
    fig.supxlabel("seconds", fontsize=8)
    fig.supylabel("gap (%)", fontsize=8)
    fig.suptitle("integer problems: primal gap to the best known value (solid) and primal-dual gap (dashed)",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


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
    (``sgm_all_solved``), plus the class's virtual best."""
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
    return pd.DataFrame(rows)


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


def load_tables(sources, external=(), time_limit=None) -> pd.DataFrame:
    """Runs of one or several bench folders plus imported external results (milopt.bench.merge)."""
    from milopt.bench.merge import import_external, merge_runs

    sources = list(sources)
    df = merge_runs(sources) if len(sources) > 1 else load_runs(sources[0]) if sources else None
    frames = [] if df is None else [df]
    for e in external or ():
        frames.append(import_external(e, time_limit=time_limit))
    if not frames:
        raise InvalidParameterError("report: give a bench folder or --external results")
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    for c in _STR_COLS:
        if c in out:
            out[c] = out[c].fillna("").astype(str)
    return out


def write_report(folder, *, solu_in=None, shift: float = SHIFT, sources=None, external=(), out=None) -> dict:
    """Write ``summary.md``, ``summary.csv``, ``failures.csv``, plots and ``best.solu``.

    Parameters
    ----------
    folder : path
        A bench folder (its ``runs.csv``); the report goes there unless ``out`` is given.
    solu_in : path, optional
        A .solu file of best known values to compare with and to update (default: the
        folder's own ``best.solu`` is updated; the library's ``milopt.solu`` is always a reference).
    sources : list of paths, optional
        More bench folders (other runs or machines) merged with ``folder``.
    external : list of paths
        CSV files of results obtained outside milopt (:func:`milopt.bench.merge.import_external`).
    out : path, optional
        Output folder (required in effect when merging: default ``folder``).

    Returns a JSON-ready dict (summary rows, failures, flags, files written, conflicts).
    """
    from milopt.bench.assess import assess, reference_values
    from milopt.bench.library import solu_path

    folder = Path(folder) if folder is not None else None
    srcs = ([folder] if folder is not None else []) + [Path(x) for x in (sources or [])]
    outdir = Path(out) if out is not None else (folder if folder is not None else Path("report"))
    outdir.mkdir(parents=True, exist_ok=True)
    meta = {}
    for sdir in srcs:
        if (sdir / "bench.json").is_file():
            m = json.loads((sdir / "bench.json").read_text())
            if not meta:
                meta = m
            else:
                meta["runs"] = list(meta.get("runs", [])) + list(m.get("runs", []))
                meta["instances"] = sorted(set(meta.get("instances", [])) | set(m.get("instances", [])))
    df = load_tables(srcs, external, meta.get("time_limit"))
    if df.empty:
        raise InvalidParameterError(f"{folder}/runs.csv has no finished runs yet")
    ref_solu = read_solu_full(solu_path())
    if solu_in is not None:
        if not Path(solu_in).is_file():
            raise InvalidParameterError(f"--solu: {str(solu_in)!r} not found")
        ref_solu.update(read_solu_full(solu_in))
    df = assess(df, ref_solu)
    refs = reference_values(df, ref_solu)
    summ = summary_table(df, shift)
    files = {}
    summ.to_csv(outdir / "summary.csv", index=False)
    files["summary_csv"] = str(outdir / "summary.csv")
    unsolved = df[(~df["solved"]) & (df["outcome"] != "unsupported")]
    fail_cols = ["run_id", "kind", "contender", "problem", "outcome", "termination", "time", "time_limit", "failure"]
    unsolved[fail_cols].to_csv(outdir / "failures.csv", index=False)
    files["failures_csv"] = str(outdir / "failures.csv")
    labels = _labels(df)
    profiles = {}
    suite_problems = [f"{i}#s0" for i in meta.get("instances", [])] or None
    for kind, title in (("solve", "solvers"), ("fit", "fit methods: time only")):
        tm = time_matrix(df, kind, suite_problems if kind == "solve" else None)
        if tm.shape[0] >= 1 and tm.shape[1] >= 2:
            p = outdir / f"profile_{kind}.png"
            plot_profile(tm, p, f"performance profile of {title}", labels)
            files[f"profile_{kind}"] = str(p)
            taus, prof = performance_profile(tm, [1, 2, 4, 8, 16])
            profiles[kind] = {"problems": int(tm.shape[0]), "rho": {c: prof[c].tolist() for c in prof.columns},
                              "taus": [1, 2, 4, 8, 16]}
    if plot_gaps(df, outdir / "gaps.png"):
        files["gaps"] = str(outdir / "gaps.png")
    pint = primal_integrals(df, refs)
    if plot_gap_over_time(df, refs, outdir / "gap_time.png"):
        files["gap_time"] = str(outdir / "gap_time.png")
    existing = read_solu(solu_in if solu_in is not None else outdir / "best.solu")
    trusted = df[~df["failure"].str.contains("wrong optimum|not verified|no .sol verifies", regex=True)]
    entries, conflicts = solu_entries(trusted, existing)
    write_solu(outdir / "best.solu", entries)
    files["solu"] = str(outdir / "best.solu")

    planned = len(meta.get("runs", [])) or len(df)
    gaps = sorted({float(g) for g in df.get("gap_limit", pd.Series(dtype=float)).dropna() if str(g) != ""})
    tls = sorted({float(t) for t in df["time_limit"].dropna()})
    md = [f"# milopt bench report: {meta.get('name') or (folder.name if folder else 'external')}", ""]
    if meta.get("suite"):
        md.append(f"Library suite `{meta['suite']}`: {len(meta.get('instances', []))} instance(s).")
    if len(srcs) > 1 or external:
        md.append("Merged from: " + ", ".join(f"`{x}`" for x in list(map(str, srcs)) + list(map(str, external)))
                  + ".")
    md.append(f"{len(df)} finished run(s) of {planned} planned; outcomes: "
              + ", ".join(f"{k} {v}" for k, v in df["outcome"].value_counts().sort_index().items()) + ".")
    versions = sorted({f"{s} {v}" for s, v in zip(df["solver"], df["solver_version"]) if s and isinstance(v, str)})
    if versions:
        md.append("Solvers: " + "; ".join(versions) + ".")
    if (df["kind"] == "solve").any():
        md.append("Relative gap limit given to the solvers: " + (", ".join(f"{g:g}" for g in gaps) if gaps else
                  "the solvers' defaults") + "; time limit(s): " + ", ".join(f"{t:g} s" for t in tls) +
                  " (bounding build and solve).")
    md += ["", "Solved = optimal, verified against the model (feasible within 1e-6, objective recomputed), within "
           "1.1 x the time limit + 1 s, and in agreement with the best known value (.solu or best verified run). "
           "Unsolved runs are charged their time limit. sgm = shifted geometric mean (shift "
           f"{shift:g} s): `sgm_time` over the runs a contender was given, `sgm_common` over the problems every "
           "solve contender was given, `sgm_all_solved` over those every contender solved; `virtual best`: per "
           "problem the fastest solved run; sgm_ratio: `sgm_common` (solves) or `sgm_time` (fits) relative to the best "
           "of its kind.", ""]
    solve_s = summ[summ["kind"] == "solve"].dropna(axis=1, how="all") if len(summ) else summ
    fit_s = summ[summ["kind"] == "fit"].dropna(axis=1, how="all") if len(summ) else summ
    if len(solve_s):
        md += ["## Solvers", ""]
        md.append(markdown_table(solve_s))
        ct = class_table(df)
        if not ct.empty:
            md += ["Solved / given per problem class:", ""]
            md.append(markdown_table(ct))
            cs = class_sgm_table(df, shift)
            md += ["Per class, over the problems every solver of the class was given (`common`) and over those "
                   "every one of them solved (`all_solved`):", ""]
            md.append(markdown_table(cs))
            cs.to_csv(outdir / "summary_by_class.csv", index=False)
            files["summary_by_class_csv"] = str(outdir / "summary_by_class.csv")
    fs = unsolved[unsolved["kind"] == "solve"]
    if len(fs):
        md += ["## Failures (solves not counted as solved, with the reason)", ""]
        md.append(markdown_table(fs[["contender", "problem", "outcome", "termination", "failure"]].assign(
            failure=lambda x: x["failure"].str.slice(0, 200))))
    fl = df[df["flag"].fillna("") != ""]
    if len(fl):
        md += ["## Flags", ""]
        md.append(markdown_table(fl[["contender", "problem", "flag"]]))
    if "solve" in profiles:
        pr = profiles["solve"]
        md.append(f"## Performance profile of the solvers ({pr['problems']} problems: every problem of the "
                  "bench; a solver not given a problem, or unable to handle it, fails on it)\n")
        md.append("![profile](profile_solve.png)\n")
        t = pd.DataFrame({c: v for c, v in pr["rho"].items()}, index=[f"rho({x})" for x in pr["taus"]]).T
        md.append(markdown_table(t.reset_index().rename(columns={"index": "contender"})))
    if len(pint):
        md += ["## Integer problems: primal integral (Berthold 2013; up to the time limit, gap to the best known "
               "value)", "", "![gap over time](gap_time.png)", ""]
        piv = pint.pivot_table(index="problem", columns="contender", values="primal_integral", aggfunc="first")
        piv.loc["mean"] = piv.mean()
        md.append(markdown_table(piv.reset_index()))
    it = instance_table(df)
    if not it.empty:
        md += ["## Solves per instance", "", "![gaps](gaps.png)", ""]
        md.append(markdown_table(it))
    if len(fit_s):
        md += ["## Fit methods: quality first", "",
               "Bag AUC and accuracy on held-out folds (mean ± standard deviation), then time. A time profile "
               "is not a ranking of fit methods.", ""]
        md.append(markdown_table(fit_quality_table(df, shift)))
        md += ["Counts and times:", ""]
        md.append(markdown_table(fit_s))
        if "fit" in profiles:
            md += ["Time profile of the fit methods (time only):", "", "![profile](profile_fit.png)", ""]
    bad = df[df["outcome"].isin(["error", "killed"]) & (df["kind"] == "fit")]
    if not bad.empty:
        md += ["## Failed runs (fits)", ""]
        md.append(markdown_table(bad[["run_id", "contender", "problem", "outcome", "error"]].assign(
            error=lambda x: x["error"].str.slice(0, 160))))
    md += ["## Best known objectives", "", f"`best.solu`: {len(entries)} instance(s).", ""]
    if conflicts:
        md += ["**Conflicts:**", ""] + [f"- {c}" for c in conflicts] + [""]
    (outdir / "summary.md").write_text("\n".join(md))
    files["summary_md"] = str(outdir / "summary.md")
    return {"runs": len(df), "planned": planned, "summary": json.loads(summ.to_json(orient="records")),
            "failures": json.loads(unsolved[fail_cols].to_json(orient="records")),
            "flags": json.loads(fl[["contender", "problem", "flag"]].to_json(orient="records")),
            "gap_limits": gaps, "profiles": profiles, "files": files, "solu_entries": len(entries),
            "conflicts": conflicts}
