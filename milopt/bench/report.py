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
  (``sgm_common``) and over those every contender solved (``sgm_all_solved``); each ratio
  (``sgm_ratio`` of ``sgm_time``, ``sgm_common_ratio`` of ``sgm_common``) divides by the best
  real contender of the same kind, over the same runs as the mean beside it; the
  **virtual best** solver takes per problem the fastest solved run.
* **mean gap**: relative gap capped at 1 (100 %), a run without a solution counts 1.
* **performance profile** (Dolan & Moré 2002): for problem :math:`p` and contender :math:`c`,
  :math:`r_{p,c} = t_{p,c} / \min_{c'} t_{p,c'}` (:math:`\infty` when :math:`c` failed or was
  not given :math:`p`); :math:`\rho_c(\tau) = |\{p : r_{p,c} \le \tau\}| / |P|` over all
  problems of the bench (of the suite).  ``unsupported`` runs are counted, never solved.
* **primal integral** (Berthold 2013) of integer problems whose solver reported its incumbents
  over time (SCIP): :math:`\int_0^T p(t)\,dt` up to the time limit :math:`T`, over the
  incumbents in the order found (``primal_integrals.csv``).
* **.solu** lines (SCIP / MIPLIB convention; values in the model's own objective sense,
  recorded per run in the ``sense`` column): ``=opt= NAME VALUE`` when a run proved
  optimality with gap <= 1e-6, ``=best= NAME VALUE`` the best objective found otherwise
  (lowest when minimising, highest when maximising), ``=inf= NAME`` when a run proved infeasibility and no run found a solution.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from milopt.errors import InvalidParameterError

from milopt.bench.runs import _STR_COLS, load_runs
from milopt.bench.solu import read_solu, read_solu_full, write_solu
from milopt.bench.report_tables import (SHIFT, class_sgm_table, class_table, fit_quality_table, instance_table,
                                        markdown_table, performance_profile, primal_integrals, solu_entries,
                                        summary_table, time_matrix, _labels)
from milopt.bench.report_plots import plot_gap_over_time, plot_gaps, plot_profile


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
        CSV files of results obtained outside milopt (``milopt.bench.merge.import_external``).
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
    meta = _merged_meta(srcs)
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
    profiles, pint = _profiles_and_plots(df, refs, meta, outdir, files)
    existing = read_solu(solu_in if solu_in is not None else outdir / "best.solu")
    trusted = df[~df["failure"].str.contains("wrong optimum|not verified|no .sol verifies", regex=True)]
    entries, conflicts = solu_entries(trusted, existing)
    write_solu(outdir / "best.solu", entries)
    files["solu"] = str(outdir / "best.solu")

    planned = len(meta.get("runs", [])) or len(df)
    gaps = sorted({float(g) for g in df.get("gap_limit", pd.Series(dtype=float)).dropna() if str(g) != ""})
    tls = sorted({float(t) for t in df["time_limit"].dropna()})
    md = _md_header(meta, folder, srcs, external, df, planned, gaps, tls, shift)
    solve_s = summ[summ["kind"] == "solve"].dropna(axis=1, how="all") if len(summ) else summ
    fit_s = summ[summ["kind"] == "fit"].dropna(axis=1, how="all") if len(summ) else summ
    fl = df[df["flag"].fillna("") != ""]
    md += _md_solvers(df, solve_s, unsolved, fl, profiles, pint, shift, outdir, files)
    it = instance_table(df)
    if not it.empty:
        md += ["## Solves per instance", "", "![gaps](gaps.png)", ""]
        md.append(markdown_table(it))
    md += _md_fits(df, fit_s, profiles, shift)
    md += ["## Best known objectives", "", f"`best.solu`: {len(entries)} instance(s).", ""]
    if conflicts:
        md += ["**Conflicts:**", ""] + [f"- {c}" for c in conflicts] + [""]
    (outdir / "summary.md").write_text("\n".join(md))
    files["summary_md"] = str(outdir / "summary.md")
    return {"runs": len(df), "planned": planned, "summary": json.loads(summ.to_json(orient="records")),
            "failures": json.loads(unsolved[fail_cols].to_json(orient="records")),
            "flags": json.loads(fl[["contender", "problem", "flag"]].to_json(orient="records")),
            "gap_limits": gaps, "profiles": profiles, "files": files, "solu_entries": len(entries),
            "primal_integrals": json.loads(pint.to_json(orient="records")),
            "conflicts": conflicts}


def _merged_meta(srcs) -> dict:
    """The ``bench.json`` of the first source, its runs and instances merged with the others'."""
    meta = {}
    for sdir in srcs:
        if (sdir / "bench.json").is_file():
            m = json.loads((sdir / "bench.json").read_text())
            if not meta:
                meta = m
            else:
                meta["runs"] = list(meta.get("runs", [])) + list(m.get("runs", []))
                meta["instances"] = sorted(set(meta.get("instances", [])) | set(m.get("instances", [])))
    return meta


def _md_header(meta, folder, srcs, external, df, planned, gaps, tls, shift) -> list:
    """The report's title, what was run, and how solved runs and the means are defined."""
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
           "problem the fastest solved run. Each ratio follows the mean it divides, over the same runs: `sgm_ratio` = "
           "`sgm_time` / the smallest `sgm_time` of a contender of the same kind, `sgm_common_ratio` = `sgm_common` / "
           "the smallest `sgm_common` (the fair comparison when contenders were given different problems); the "
           "virtual best is not a contender (its ratios below 1 show what picking the fastest per problem would "
           "gain).", ""]
    return md


def _md_solvers(df, solve_s, unsolved, fl, profiles, pint, shift, outdir, files) -> list:
    """The solver sections: summary, per-class tables (also written to ``summary_by_class.csv``),
    failures, flags, performance profile, primal integrals."""
    md = []
    if len(solve_s):
        md += ["## Solvers", ""]
        md.append(markdown_table(solve_s))
        sd = df[(df["kind"] == "solve") & (df["outcome"] != "unsupported")]
        if sd.groupby("contender")["problem"].apply(frozenset).nunique() > 1:
            md += ["The solvers were given different problems: `sgm_time` and `sgm_ratio` compare means over "
                   "different runs; compare `sgm_common_ratio` (problems every solver was given) or the per-class "
                   "table below.", ""]
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
        hz = sorted(set(pint["horizon"].round(6)))
        md += ["## Integer problems: primal integral", "",
               "P(T) = integral over [0, T] of the primal gap of the incumbent held at each moment (1 before the "
               "first incumbent; Berthold 2013), over the incumbents in the order the solver found them. Horizon T "
               "= the run's time limit (" + ", ".join(f"{h:g} s" for h in hz) + "), the last incumbent held up to "
               "it; reference = the best known value of the instance (.solu or best verified run). Lower is better; "
               "P(T) / T is the mean primal gap. Only solvers that report their incumbents over time appear.", "",
               "![gap over time](gap_time.png)", ""]
        piv = pint.pivot_table(index="problem", columns="contender", values="primal_integral", aggfunc="first")
        piv.loc["mean"] = piv.mean()
        md.append(markdown_table(piv.reset_index()))
    return md


def _md_fits(df, fit_s, profiles, shift) -> list:
    """The fit-method sections: quality first, then counts and times."""
    md = []
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
    return md


def _profiles_and_plots(df, refs, meta, outdir, files) -> tuple:
    """Performance profiles (solvers; fit methods by time), the gap plots and the primal
    integrals: written to ``outdir`` (recorded in ``files``); returns (profiles, primal integrals)."""
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
    if len(pint):
        pint.to_csv(outdir / "primal_integrals.csv", index=False)
        files["primal_integrals_csv"] = str(outdir / "primal_integrals.csv")
    if plot_gap_over_time(df, refs, outdir / "gap_time.png"):
        files["gap_time"] = str(outdir / "gap_time.png")
    return profiles, pint
