r"""Reports of a bench folder (``milopt report DIR``).

Definitions (see docs/bench.md):

* **solved**: a solve run is solved when it ended with proven optimality (termination
  ``optimal``); a fit run when it finished and its method reported no failure termination
  (time limit, error, interruption, infeasible/unbounded).  A fit that stopped at its
  iteration limit still produced a usable model: it counts as solved, and the ``iter_limit``
  column counts it.
* **time**: solver wall time for solves, fitting seconds for fits; a run that is not solved
  is charged its time limit (a killed or crashed run too).
* **shifted geometric mean** with shift :math:`s = 10` s:
  :math:`\mathrm{sgm}(t) = \exp\big(\tfrac1n \sum_i \ln(t_i + s)\big) - s`.
* **mean gap**: relative gap capped at 1 (100 %), a run without a solution counts 1.
* **performance profile** (Dolan & Moré 2002): for problem :math:`p` and contender :math:`c`,
  :math:`r_{p,c} = t_{p,c} / \min_{c'} t_{p,c'}` (:math:`\infty` when :math:`c` failed);
  :math:`\rho_c(\tau) = |\{p : r_{p,c} \le \tau\}| / |P|` over the problems attempted by every
  contender.  ``unsupported`` runs (the solver cannot handle the problem class) are not
  attempts: they are excluded everywhere and only counted.
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
FIT_FAILURES = {"time_limit", "error", "interrupted", "infeasible", "unbounded", "infeasible_or_unbounded"}
OPT_GAP = 1e-6
_STR_COLS = ["run_id", "kind", "problem", "instance", "contender", "data", "formulation", "method", "params",
             "solver", "outcome", "status", "termination", "error", "extra", "solver_options", "sense", "verified",
             "verify_note", "host", "source"]


def _complete_text(path: Path) -> tuple[str, int]:
    """The table's text without a last row cut mid-write, and the number of rows dropped.

    A bench appends one line per run and fsyncs it; a bench killed during a write leaves a
    last line without its newline (``--resume`` cuts it off).  That line, and any line whose
    number of fields differs from the header's, is skipped with a warning."""
    import csv
    import io
    import warnings

    text = path.read_text(errors="replace")
    dropped = 0
    if text and not text.endswith("\n"):
        cut = text.rfind("\n") + 1
        text = text[:cut]
        dropped += 1
        warnings.warn(f"{path}: the last row was cut mid-write (no line end); skipped", BenchReportWarning,
                      stacklevel=3)
    rows = list(csv.reader(io.StringIO(text)))
    if rows and any(len(r) != len(rows[0]) for r in rows[1:]):
        n = len(rows[0])
        bad = [k + 1 for k, r in enumerate(rows[1:], 1) if len(r) != n]
        warnings.warn(f"{path}: {len(bad)} row(s) with a wrong number of fields skipped (lines {bad[:5]})",
                      BenchReportWarning, stacklevel=3)
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([rows[0]] + [r for r in rows[1:] if len(r) == n])
        text = buf.getvalue()
        dropped += len(bad)
    return text, dropped


class BenchReportWarning(UserWarning):
    """A results table had a damaged row (skipped)."""


def load_runs(folder) -> pd.DataFrame:
    """The ``runs.csv`` of a bench folder (last row per run id); damaged rows skipped with a warning."""
    import io

    p = Path(folder)
    path = p / "runs.csv" if p.is_dir() else p
    if not path.is_file():
        raise InvalidParameterError(f"{str(path)!r}: no runs.csv; give the --out folder of a milopt bench")
    text, _ = _complete_text(path)
    if not text.strip():
        raise InvalidParameterError(f"{path}: empty results table")
    header = pd.read_csv(io.StringIO(text), nrows=0).columns
    df = pd.read_csv(io.StringIO(text), dtype={c: str for c in _STR_COLS if c in header}, keep_default_na=False,
                     na_values={c: [""] for c in header if c not in _STR_COLS})
    for c in _STR_COLS:
        if c in df:
            df[c] = df[c].fillna("")
    return df.drop_duplicates("run_id", keep="last").reset_index(drop=True)


def solved_mask(df: pd.DataFrame) -> pd.Series:
    ok = df["outcome"] == "ok"
    term = df["termination"].fillna("")
    solve = (df["kind"] == "solve") & ok & (term == "optimal")
    fit = (df["kind"] == "fit") & ok & ~term.isin(FIT_FAILURES)
    return solve | fit


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
    g = df["gap"].astype(float).clip(upper=1.0)
    has = (df["outcome"] == "ok") & df["objective"].notna()
    return g.where(has & g.notna(), 1.0)


def summary_table(df: pd.DataFrame, shift: float = SHIFT) -> pd.DataFrame:
    """Per (kind, contender): runs, solved, time limit hits, killed, errors, unsupported, sgm time, mean gap, metrics."""
    rows = []
    for (kind, cont), g in df.groupby(["kind", "contender"], sort=True):
        att = g[g["outcome"] != "unsupported"]
        sol = solved_mask(att)
        r = {"kind": kind, "contender": cont, "runs": len(att), "solved": int(sol.sum()),
             "time_limit": int((att["termination"] == "time_limit").sum()),
             "iter_limit": int((att["termination"] == "iteration_limit").sum()),
             "killed": int((att["outcome"] == "killed").sum()), "errors": int((att["outcome"] == "error").sum()),
             "unsupported": int((g["outcome"] == "unsupported").sum()),
             "sgm_time": shifted_geomean(charged_times(att), shift) if len(att) else float("nan")}
        if kind == "solve":
            r["mean_gap"] = float(capped_gaps(att).mean()) if len(att) else float("nan")
        else:
            gg = att.loc[att["gap"].notna(), "gap"].astype(float).clip(upper=1.0)
            r["mean_gap"] = float(gg.mean()) if len(gg) else float("nan")
            for m in ("bag_accuracy", "bag_auc"):
                vals = att[m].astype(float).dropna()
                r[m] = float(vals.mean()) if len(vals) else float("nan")
        rows.append(r)
    out = pd.DataFrame(rows)
    if len(out):
        best = out.groupby("kind")["sgm_time"].transform("min")
        out.insert(out.columns.get_loc("sgm_time") + 1, "sgm_ratio", out["sgm_time"] / best)
    return out


def time_matrix(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Problems x contenders of times (inf when not solved), over problems every contender attempted."""
    d = df[(df["kind"] == kind) & (df["outcome"] != "unsupported")].copy()
    if d.empty:
        return pd.DataFrame()
    d["_t"] = np.where(solved_mask(d), d["time"].astype(float), np.inf)
    m = d.pivot_table(index="problem", columns="contender", values="_t", aggfunc="min")
    return m.dropna(axis=0, how="any")


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
def read_solu(path) -> dict:
    """``{name: (kind, value)}`` from a .solu file (kind in opt, best, inf, feas)."""
    out = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in p.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("=") and parts[0].endswith("=") and parts[0] != "=bestdual=":
            kind = parts[0].strip("=")
            val = float(parts[2]) if len(parts) > 2 and kind in ("opt", "best") else None
            out[parts[1]] = (kind, val)
    return out


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


def read_solu_full(path) -> dict:
    """``{name: {"kind", "value", "bound"}}`` from a .solu file, with ``=bestdual=`` bounds.

    MIPLIB 2017 lines: ``=opt= NAME VALUE`` (proven), ``=best= NAME VALUE`` (best known),
    ``=bestdual= NAME BOUND`` (best known dual bound), ``=inf= NAME``."""
    out: dict = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in p.read_text().splitlines():
        parts = line.split()
        if len(parts) < 2 or not (parts[0].startswith("=") and parts[0].endswith("=")):
            continue
        kind, name = parts[0].strip("="), parts[1]
        try:
            val = float(parts[2]) if len(parts) > 2 else None
        except ValueError:
            continue
        e = out.setdefault(name, {"kind": None, "value": None, "bound": None})
        if kind == "bestdual":
            e["bound"] = val
        elif kind in ("opt", "best", "inf", "feas"):
            e["kind"], e["value"] = kind, val
            if kind == "opt" and e["bound"] is None:
                e["bound"] = val
    return {k: v for k, v in out.items() if v["kind"] is not None or v["bound"] is not None}


def write_solu_full(path, entries: dict) -> None:
    """Write ``{name: {"kind", "value", "bound"}}`` (``=bestdual=`` for unproven instances)."""
    lines = []
    for name in sorted(entries):
        e = entries[name]
        kind, val, bnd = e.get("kind"), e.get("value"), e.get("bound")
        if kind in ("opt", "best") and val is not None:
            lines.append(f"={kind}= {name} {val:.12g}")
        elif kind == "inf":
            lines.append(f"=inf= {name}")
        if kind != "opt" and bnd is not None and math.isfinite(bnd):
            lines.append(f"=bestdual= {name} {bnd:.12g}")
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""))


def write_solu(path, entries: dict) -> None:
    lines = []
    for name in sorted(entries):
        kind, val = entries[name]
        lines.append(f"={kind}= {name}" + (f" {val:.12g}" if val is not None and kind in ("opt", "best") else ""))
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""))


# --------------------------------------------------------------------- plots
def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_profile(times: pd.DataFrame, path, title: str) -> None:
    plt = _plt()
    taus, prof = performance_profile(times)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c in prof.columns:
        ax.step(taus, prof[c].to_numpy(), where="post", label=c)
    ax.set_xscale("log", base=2)
    ax.set_xlim(1, max(taus[-1], 2))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"$\tau$ (time ratio to the fastest)")
    ax.set_ylabel(r"fraction of problems with ratio $\leq \tau$")
    ax.set_title(f"{title} ({len(times)} problems)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
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
        ax.scatter(xs[~nosol.to_numpy()], g["_gap"].to_numpy()[~nosol.to_numpy()], label=c, s=28)
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


def write_report(folder, *, solu_in=None, shift: float = SHIFT) -> dict:
    """Write ``summary.md``, ``summary.csv``, profile and gap PNGs and ``best.solu`` into ``folder``.

    ``solu_in``: an existing .solu file to update (default: the folder's own ``best.solu``).
    Returns a JSON-ready dict (summary rows, files written, conflicts).
    """
    folder = Path(folder)
    df = load_runs(folder)
    if df.empty:
        raise InvalidParameterError(f"{folder}/runs.csv has no finished runs yet")
    summ = summary_table(df, shift)
    files = {}
    summ.to_csv(folder / "summary.csv", index=False)
    files["summary_csv"] = str(folder / "summary.csv")
    profiles = {}
    for kind, title in (("solve", "solvers"), ("fit", "methods")):
        tm = time_matrix(df, kind)
        if tm.shape[0] >= 1 and tm.shape[1] >= 2:
            p = folder / f"profile_{kind}.png"
            plot_profile(tm, p, f"performance profile of {title}")
            files[f"profile_{kind}"] = str(p)
            taus, prof = performance_profile(tm, [1, 2, 4, 8, 16])
            profiles[kind] = {"problems": int(tm.shape[0]), "rho": {c: prof[c].tolist() for c in prof.columns},
                              "taus": [1, 2, 4, 8, 16]}
    if plot_gaps(df, folder / "gaps.png"):
        files["gaps"] = str(folder / "gaps.png")
    existing = read_solu(solu_in if solu_in is not None else folder / "best.solu")
    entries, conflicts = solu_entries(df, existing)
    write_solu(folder / "best.solu", entries)
    files["solu"] = str(folder / "best.solu")

    meta = {}
    if (folder / "bench.json").is_file():
        meta = json.loads((folder / "bench.json").read_text())
    planned = len(meta.get("runs", [])) or len(df)
    md = [f"# milopt bench report: {meta.get('name') or folder.name}", ""]
    md.append(f"{len(df)} finished run(s) of {planned} planned; outcomes: "
              + ", ".join(f"{k} {v}" for k, v in df["outcome"].value_counts().sort_index().items()) + ".")
    versions = sorted({f"{s} {v}" for s, v in zip(df["solver"], df["solver_version"]) if s and isinstance(v, str)})
    if versions:
        md.append("Solvers: " + "; ".join(versions) + ".")
    md += ["", f"Time = solver wall time (solves) or fit seconds (fits); unsolved runs are charged their time "
           f"limit; sgm = shifted geometric mean (shift {shift:g} s); sgm_ratio relative to the best of its "
           "kind; mean_gap: relative gap capped at 1, no solution = 1.", ""]
    fmt = summ.copy()
    md.append(markdown_table(fmt))
    for kind in ("solve", "fit"):
        if kind in profiles:
            pr = profiles[kind]
            md.append(f"## Performance profile ({kind}; {pr['problems']} problems attempted by every contender)\n")
            md.append(f"![profile](profile_{kind}.png)\n")
            t = pd.DataFrame({c: v for c, v in pr["rho"].items()}, index=[f"rho({x})" for x in pr["taus"]]).T
            md.append(markdown_table(t.reset_index().rename(columns={"index": "contender"})))
    it = instance_table(df)
    if not it.empty:
        md += ["## Solves per instance", "", "![gaps](gaps.png)", ""]
        md.append(markdown_table(it))
    fits = df[df["kind"] == "fit"]
    if not fits.empty:
        md += ["## Fits (mean over held-out folds)", ""]
        agg = fits[fits["outcome"] == "ok"].groupby(["contender", "data"])[
            ["bag_accuracy", "bag_auc", "bag_f1", "fit_seconds"]].mean().reset_index()
        md.append(markdown_table(agg))
    bad = df[df["outcome"].isin(["error", "killed"])]
    if not bad.empty:
        md += ["## Failed runs", ""]
        md.append(markdown_table(bad[["run_id", "contender", "problem", "outcome", "error"]].assign(
            error=lambda x: x["error"].str.slice(0, 160))))
    md += ["## Best known objectives", "", f"`best.solu`: {len(entries)} instance(s).", ""]
    if conflicts:
        md += ["**Conflicts:**", ""] + [f"- {c}" for c in conflicts] + [""]
    (folder / "summary.md").write_text("\n".join(md))
    files["summary_md"] = str(folder / "summary.md")
    return {"runs": len(df), "planned": planned, "summary": json.loads(summ.to_json(orient="records")),
            "profiles": profiles, "files": files, "solu_entries": len(entries), "conflicts": conflicts}
