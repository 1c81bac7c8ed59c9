"""Figures of ``milopt report``: primal integral, shifted geometric means and their ratios, plots.

Each figure is checked against a hand computation; the plots are drawn for a synthetic table of
twelve contenders with matplotlib warnings turned into errors, and their layout is measured
(titles apart, every label inside the picture, the legend off the plotting area).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from milopt.bench.assess import primal_gap, primal_integral
from milopt.bench.report import write_report
from milopt.bench.report_plots import plot_gap_over_time, plot_gaps, plot_profile
from milopt.bench.report_tables import shifted_geomean, summary_table, time_matrix


# ------------------------------------------------------------------ primal integral
def _hand_integral(traj, opt, horizon):
    """Berthold (2013), Def. 3: sum of gamma(previous incumbent) x (interval), in the order found."""
    total, t_prev, g = 0.0, 0.0, 1.0
    for t, _dual, p in traj:
        t = min(max(float(t), t_prev), horizon)
        total += g * (t - t_prev)
        t_prev = t
        g = 1.0 if p is None else (1.0 if p * opt < 0 else abs(p - opt) / max(abs(p), abs(opt), 1e-300))
    return total + g * (horizon - t_prev)


def test_primal_integral_follows_the_order_found_at_tied_times():
    # SCIP prints its clock at 0.1 s resolution: three improving incumbents at "1.0s", found in
    # the order 100, 20, 10 (the optimum).  By hand (opt 10, horizon 10): gamma 1 without an
    # incumbent for 1 s, zero-length intervals for 100 and 20, then gamma 0: P = 1.0.
    tr = [[1.0, 0.0, 100.0], [1.0, 2.0, 20.0], [1.0, 5.0, 10.0]]
    assert primal_integral(tr, 10.0, 10.0) == pytest.approx(1.0)
    # sorting by value would hold the worst incumbent (100, gamma 0.9) to the horizon: 1 + 9 x 0.9
    assert primal_integral(tr, 10.0, 10.0) != pytest.approx(1.0 + 9 * 0.9)
    # a display line without incumbent at the same time as one with an incumbent
    tr2 = [[0.5, 0.0, None], [0.5, 1.0, 40.0], [2.0, 3.0, 16.0], [2.0, 4.0, 12.5], [6.0, 9.0, 10.0]]
    by_hand = 0.5 * 1.0 + 1.5 * (30 / 40) + 4.0 * (2.5 / 12.5) + 4.0 * 0.0
    assert primal_integral(tr2, 10.0, 10.0) == pytest.approx(by_hand)
    assert primal_integral(tr2, 10.0, 10.0) == pytest.approx(_hand_integral(tr2, 10.0, 10.0))
    # maximisation: the gap is symmetric in |p - opt| (Berthold's gamma does not depend on the sense)
    assert primal_integral([[1.0, 20.0, 4.0], [1.0, 20.0, 8.0]], 8.0, 5.0) == pytest.approx(1.0)
    # a point earlier than its predecessor (a garbled log line) counts at the predecessor's time
    assert primal_integral([[3.0, 0.0, 20.0], [2.0, 0.0, 10.0]], 10.0, 10.0) == pytest.approx(3.0)
    # horizon before the last point: cut there
    assert primal_integral([[1.0, 0.0, 20.0], [8.0, 0.0, 10.0]], 10.0, 4.0) == pytest.approx(1.0 + 3 * 0.5)


def test_primal_gap_definition():
    assert primal_gap(None, 1.0) == 1.0 and primal_gap(-1.0, 1.0) == 1.0
    assert primal_gap(0.0, 0.0) == 0.0
    assert primal_gap(12.0, 10.0) == pytest.approx(2 / 12)


# ------------------------------------------------------------------ shifted geometric means
def _table(rows):
    df = pd.DataFrame(rows, columns=["problem", "contender", "outcome", "termination", "time"])
    df["kind"] = "solve"
    df["time_limit"] = 10.0
    df["kill_after"] = 20.0
    df["gap"] = np.where(df["termination"] == "optimal", 0.0, 0.5)
    df["objective"] = np.where(df["outcome"] == "ok", 1.0, np.nan)
    df["instance"] = df["problem"]
    df["run_id"] = [f"r{i}" for i in range(len(df))]
    df["verified"] = np.where(df["outcome"] == "ok", "yes", "")
    df["objective_recomputed"] = df["objective"]
    return df


def test_sgm_ratio_is_the_ratio_of_the_sgm_beside_it():
    # A was given p1..p4, B only p1, p2: sgm_time is over different runs, sgm_common over p1, p2
    df = _table([("p1", "A", "ok", "optimal", 1.0), ("p2", "A", "ok", "optimal", 1.0),
                 ("p3", "A", "ok", "optimal", 1.0), ("p4", "A", "ok", "optimal", 1.0),
                 ("p1", "B", "ok", "optimal", 2.0), ("p2", "B", "ok", "time_limit", 9.0)])
    s = summary_table(df, shift=1.0).set_index("contender")
    a_time, b_time = shifted_geomean([1, 1, 1, 1], 1), shifted_geomean([2, 10], 1)
    assert s.loc["A", "sgm_time"] == pytest.approx(a_time) and s.loc["B", "sgm_time"] == pytest.approx(b_time)
    # the ratio printed beside sgm_time is sgm_time over the best sgm_time of a real contender
    assert s.loc["A", "sgm_ratio"] == pytest.approx(1.0)
    assert s.loc["B", "sgm_ratio"] == pytest.approx(b_time / a_time)
    # the ratio of sgm_common, over the problems both were given, sits beside sgm_common
    a_c, b_c = shifted_geomean([1, 1], 1), shifted_geomean([2, 10], 1)
    assert s.loc["B", "sgm_common_ratio"] == pytest.approx(b_c / a_c)
    assert s.loc["A", "sgm_common_ratio"] == pytest.approx(1.0)
    cols = list(s.columns)
    assert cols.index("sgm_ratio") == cols.index("sgm_time") + 1
    assert cols.index("sgm_common_ratio") == cols.index("sgm_common") + 1
    # the virtual best is not a contender: ratios are relative to the best real contender
    vb = s.loc["virtual best"]
    assert vb["sgm_common"] == pytest.approx(a_c) and vb["sgm_common_ratio"] == pytest.approx(1.0)
    assert vb["sgm_ratio"] == pytest.approx(vb["sgm_time"] / a_time)


def test_sgm_ratio_does_not_divide_by_the_virtual_best():
    # each contender is fastest on one problem: the virtual best beats both, but the best real
    # contender's ratio is 1
    df = _table([("p1", "A", "ok", "optimal", 1.0), ("p2", "A", "ok", "optimal", 8.0),
                 ("p1", "B", "ok", "optimal", 8.0), ("p2", "B", "ok", "optimal", 2.0)])
    s = summary_table(df).set_index("contender")
    real = s.drop(index="virtual best")
    assert real["sgm_ratio"].min() == pytest.approx(1.0)
    assert real["sgm_common_ratio"].min() == pytest.approx(1.0)
    assert s.loc["virtual best", "sgm_ratio"] < 1.0


# ------------------------------------------------------------------ figures with many contenders
# catalogue names and the names a bench configuration gives generated data
LONG = ["misvm-bigm.l1-strong.musk1-b32", "misvm-bigm.sos1.digits-b20", "misvm-bigm.strong.musk1",
        "misvm-bigm.gen-kent-yu-scenario=1-bags=50-seed=0-variant=mildsvm.C=10.0_norm=l1",
        "misvm-bigm.gen-subset-data=musk1-bags=8-seed=0.disjunction=sos1_norm=l1",
        "misvm-bigm.gen-digits-bags=40-seed=0.big_m=mildsvm_strengthen=all"]


def synthetic(n_contenders=12, problems=LONG, seed=0) -> pd.DataFrame:
    """A results table: every contender on every integer problem, with incumbent trajectories."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in problems:
        opt = float(rng.uniform(5, 50))
        for k in range(n_contenders):
            solved = rng.random() < 0.6
            t = float(rng.uniform(0.2, 9.0)) if solved else 10.0
            pts, val, tt = [], opt * (1 + rng.uniform(0.5, 3)), 0.0
            for _ in range(int(rng.integers(2, 7))):
                tt = round(min(t, tt + float(rng.uniform(0, 2))), 1)
                val = max(opt, val * (1 - rng.uniform(0, 0.4)))
                pts.append([tt, 0.5 * opt, val])
            if solved:
                pts.append([round(t, 1), opt, opt])
            obj = opt if solved else pts[-1][2]
            rows.append({"run_id": f"r{len(rows)}", "kind": "solve", "problem": p + "#s0", "instance": p,
                         "contender": f"solver-{k:02d}-with-a-long-name", "solver": f"solver-{k:02d}",
                         "threads": 1, "solver_options": "{}", "outcome": "ok",
                         "termination": "optimal" if solved else "time_limit",
                         "status": "optimal" if solved else "feasible", "problem_class": "MIQP",
                         "sense": "minimize", "objective": obj, "bound": opt if solved else 0.5 * opt,
                         "gap": 0.0 if solved else (obj - 0.5 * opt) / obj, "time": t, "wall_time": t,
                         "time_limit": 10.0, "kill_after": 50.0, "verified": "yes", "objective_recomputed": obj,
                         "variables": 100, "binaries": 20, "constraints": 80, "nonzeros": 900,
                         "extra": json.dumps({"trajectory": pts, "run_time": t})})
    return pd.DataFrame(rows)


def _write_table(folder: Path, rows: pd.DataFrame) -> None:
    from milopt.bench.execute import COLUMNS

    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({c: rows[c] if c in rows else "" for c in COLUMNS}).to_csv(folder / "runs.csv", index=False)


def _draw_all(df, tmp_path):
    """Draw the three plots; return {name: figure} (captured when saved)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from milopt.bench.assess import reference_values

    figs = {}
    orig_save, orig_close = plt.Figure.savefig, plt.close

    def grab(self, fname, *a, **k):
        out = orig_save(self, fname, *a, **k)
        figs[Path(str(fname)).name] = self
        return out

    plt.Figure.savefig = grab
    plt.close = lambda *a, **k: None  # keep the figures to measure them
    try:
        df = df.copy()
        refs = reference_values(df)
        plot_profile(time_matrix(df, "solve"), tmp_path / "profile_solve.png", "performance profile of solvers")
        plot_gaps(df, tmp_path / "gaps.png")
        plot_gap_over_time(df, refs, tmp_path / "gap_time.png")
    finally:
        plt.Figure.savefig, plt.close = orig_save, orig_close
    return figs


def test_plots_with_twelve_contenders_raise_no_warning(tmp_path):
    df = synthetic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # layout and figure warnings are errors; deprecations inside third-party libraries
        # (matplotlib 3.10 calling pyparsing 3.3's renamed methods) are not milopt's
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        figs = _draw_all(df, tmp_path)
    assert set(figs) == {"profile_solve.png", "gaps.png", "gap_time.png"}
    for name in figs:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.pyplot as plt

    for f in figs.values():
        plt.close(f)


def _overlap(a, b, tol=0.5) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > tol) and (min(a.y1, b.y1) - max(a.y0, b.y0) > tol)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    import matplotlib.pyplot as plt

    figs = _draw_all(synthetic(), tmp_path_factory.mktemp("figs"))
    yield figs
    for f in figs.values():
        plt.close(f)


def _cut(fig):
    """How far (inches) what is drawn sticks out of the picture on each side."""
    tb, fb = fig.get_tightbbox(fig.canvas.get_renderer()), fig.bbox_inches
    return {"left": -tb.x0, "bottom": -tb.y0, "right": tb.x1 - fb.x1, "top": tb.y1 - fb.y1}


@pytest.mark.parametrize("name", ["gaps.png", "gap_time.png", "profile_solve.png"])
def test_nothing_is_cut(drawn, name):
    # labels, titles and legends lie inside the picture
    cut = _cut(drawn[name])
    assert max(cut.values()) <= 0.01, cut


def test_gap_time_subplot_titles_apart(drawn):
    fig = drawn["gap_time.png"]
    r = fig.canvas.get_renderer()
    titles = [ax.title.get_window_extent(r) for ax in fig.axes if ax.get_title()]
    assert len(titles) == len(LONG)
    for i in range(len(titles)):
        for j in range(i + 1, len(titles)):
            assert not _overlap(titles[i], titles[j]), (i, j)


@pytest.mark.parametrize("name", ["gaps.png", "gap_time.png", "profile_solve.png"])
def test_legend_of_twelve_contenders_off_the_data(drawn, name):
    fig = drawn[name]
    r = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    for lg in legends:
        lb = lg.get_window_extent(r)
        for ax in fig.axes:
            if ax.axison:
                assert not _overlap(lb, ax.get_window_extent(r), tol=2)


def test_twelve_contenders_told_apart(drawn):
    lines = [ln for ln in drawn["profile_solve.png"].axes[0].get_lines() if ln.get_label()[:1] != "_"]
    keys = {(str(ln.get_color()), ln.get_marker(), ln.get_linestyle()) for ln in lines}
    assert len(lines) == 12 and len(keys) == 12
    # a colour cycle longer than matplotlib's default ten: no two contenders share a colour
    assert len({str(ln.get_color()) for ln in lines}) == 12


def test_write_report_on_twelve_contenders(tmp_path):
    _write_table(tmp_path / "b", synthetic())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # layout and figure warnings are errors; deprecations inside third-party libraries
        # (matplotlib 3.10 calling pyparsing 3.3's renamed methods) are not milopt's
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        rep = write_report(tmp_path / "b")
    for k in ("profile_solve", "gaps", "gap_time"):
        assert Path(rep["files"][k]).is_file()
    assert "virtual best" in {r["contender"] for r in rep["summary"]}


# ------------------------------------------------------------------ primal integrals of a real bench run
BENCH = """
name = "pint"
time_limit = 20
kill_after = 90
data = ["gen:digits?bags=10&seed=3", "gen:kent-yu?scenario=1&bags=12&seed=0&variant=mildsvm"]

[[solve]]
formulation = "misvm-bigm"
solvers = ["scip"]
"""


@pytest.fixture(scope="module")
def pint_bench(tmp_path_factory):
    pytest.importorskip("pyscipopt")
    from milopt.cli import main

    d = tmp_path_factory.mktemp("pint")
    (d / "pint.toml").write_text(BENCH)
    out = d / "out"
    assert main(["bench", str(d / "pint.toml"), "--out", str(out), "--quiet", "--json"]) == 0
    return out


def test_report_primal_integrals_agree_with_a_hand_computation(pint_bench, capsys):
    from milopt.bench.runs import load_runs

    out = pint_bench
    capsys.readouterr()
    df = load_runs(out)
    rep = write_report(out)
    pint = pd.read_csv(out / "primal_integrals.csv")
    assert len(pint) == len(df) >= 2
    for _, r in df.iterrows():
        ex = json.loads(r["extra"])
        tr = ex["trajectory"]
        assert tr, "SCIP reported its incumbents"
        ok = df[(df["instance"] == r["instance"]) & (df["verified"] == "yes")]
        ref = float(ok["objective_recomputed"].min())
        want = _hand_integral(tr, ref, float(r["time_limit"]))
        got = pint.loc[pint["problem"] == r["problem"], "primal_integral"].iloc[0]
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), r["problem"]
        assert pint.loc[pint["problem"] == r["problem"], "horizon"].iloc[0] == pytest.approx(r["time_limit"])
        assert 0.0 <= got <= float(r["time_limit"])
    assert {p["problem"] for p in rep["primal_integrals"]} == set(df["problem"])
    md = (out / "summary.md").read_text()
    assert "primal integral" in md.lower()


# ------------------------------------------------------------------ benchmarks/solver_comparison.py
def _comparison_module():
    from benchmark_script import load_benchmark

    return load_benchmark("solver_comparison")


def test_solver_comparison_records_what_a_solver_cannot_take_as_skipped(tmp_path, monkeypatch):
    import milopt.solvers
    from milopt.bench.library import suite
    from milopt.solvers.backend import Backend, Capabilities

    class SmallLicence(Backend):          # a backend with a licence size limit, as the commercial ones
        name, module = "small-licence", "numpy"
        caps = Capabilities(classes=frozenset({"LP", "QP", "MILP", "MIQP"}))

        def version(self):
            return "1.0"

        def cannot_take(self, mf, opts):
            return mf.size()["variables"] > 100, "small-licence licence: at most 100 variables; use another solver"

    sc = _comparison_module()
    real = milopt.solvers.backends()
    small = SmallLicence()
    monkeypatch.setattr(milopt.solvers, "backends", lambda: {**real, "small-licence": small})
    insts = suite("misvm-bigm.ky1-b20,misvm-bigm.digits-b20,batchsvm-lp.cad-i10")
    entries, forms = sc.describe(insts, tmp_path, resume=False)
    assert entries["misvm-bigm.ky1-b20"]["columns"] == 61 and entries["misvm-bigm.digits-b20"]["class"] == "MIQP"
    runs, skipped, too_big = sc.plan(insts, entries, forms, ["small-licence", "highs", "bnb"], 10.0, 1000)
    assert runs == {("misvm-bigm.ky1-b20", "small-licence"), ("misvm-bigm.ky1-b20", "bnb"),
                    ("misvm-bigm.digits-b20", "bnb"), ("batchsvm-lp.cad-i10", "highs")}
    assert "licence" in skipped[("misvm-bigm.digits-b20", "small-licence")]   # the skip hook's reason
    assert "licence" in skipped[("batchsvm-lp.cad-i10", "small-licence")]
    assert skipped[("misvm-bigm.ky1-b20", "highs")] == "highs does not solve MIQP problems"
    assert skipped[("batchsvm-lp.cad-i10", "bnb")] == "bnb solves only misvm-bigm, misvm-kernel-bigm"
    assert too_big == []
    # --max-size: instances past it are left out, not failed
    _, _, too_big = sc.plan(insts, entries, forms, ["highs"], 10.0, 100)
    assert sorted(n for n, _, _ in too_big) == ["batchsvm-lp.cad-i10", "misvm-bigm.digits-b20"]
    # a run the driver refused past a licence limit is skipped with its reason, never a failure
    df = pd.DataFrame([
        {"instance": "misvm-bigm.ky1-b20", "contender": "small-licence", "outcome": "error", "solved": False,
         "error": "LicenceLimitError: past the licence", "termination": "", "time": 0.1, "gap": np.nan,
         "objective": np.nan, "failure": "error"},
        {"instance": "misvm-bigm.ky1-b20", "contender": "bnb", "outcome": "ok", "solved": True, "error": "",
         "termination": "optimal", "time": 1.5, "gap": 0.0, "objective": 4.05, "failure": ""}])
    tab = sc.comparison_table(df, entries, skipped, ["small-licence", "bnb", "highs"], insts[:1]).set_index("solver")
    assert tab.loc["small-licence", "status"] == "skipped" and "licence" in tab.loc["small-licence", "reason"]
    assert tab.loc["bnb", "status"] == "optimal" and tab.loc["bnb", "time"] == 1.5
    assert tab.loc["highs", "status"] == "skipped"
