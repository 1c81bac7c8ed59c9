"""The MIL instance library (catalogue, suites, export, .solu) and the verified benchmark methodology."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench_configs import sleep_config
from milopt.bench.assess import assess, primal_integral
from milopt.bench.library import (SUITES, export_library, get_instance, load_catalogue, mps_sha256, solu_path,
                                  suite)
from milopt.bench.report import write_report
from milopt.bench.runs import BenchReportWarning, load_runs
from milopt.bench.solu import read_solu_full
from milopt.errors import InvalidParameterError

# tiny catalogue instances (each builds and solves in about a second)
TINY = ["misvm-bigm.l1.musk1-b8", "misvm-dual-qp.musk1-b16", "batchsvm-lp.cad-i10"]


# ------------------------------------------------------------------ catalogue
def test_catalogue_covers_every_formulation_and_variant():
    from milopt.models import available

    cat = load_catalogue()
    assert len(cat) >= 60 and len({i.name for i in cat}) == len(cat)
    forms = {i.formulation for i in cat}
    assert set(available()) <= forms, f"formulations without a library instance: {set(available()) - forms}"
    big_m = [i.params for i in cat if i.formulation == "misvm-bigm"]
    for norm in ("l2", "l1"):
        for dj in ("bigm", "sos1", "indicator"):
            assert any(p.get("norm", "l2") == norm and p.get("disjunction", "bigm") == dj for p in big_m), (norm, dj)
    kernels = {i.params.get("kernel", "linear") for i in cat if i.formulation == "misvm-dual-qp"}
    assert kernels == {"linear", "rbf"}
    assert any(i.formulation == "batchsvm-lp" and i.params.get("theta") == 0.0 for i in cat)
    assert any(i.formulation == "batchsvm-lp" and "theta" not in i.params for i in cat)
    # graded sizes: MUSK1 subsets from 8 bags to all, MUSK2, Kent & Yu, digits, CAD
    datas = " ".join(i.data for i in cat)
    for token in ("data=musk1&bags=8&", "musk1", "data=musk2&", "kent-yu", "gen:digits", "gen:cad"):
        assert token in datas
    assert any(i.data == "musk1" for i in cat) and any(i.data == "musk2" for i in cat)


def test_statuses_suites_and_solu_agree():
    cat = load_catalogue()
    assert {i.status for i in cat} <= {"easy", "hard", "open"}
    solu = read_solu_full(solu_path())
    assert set(solu) <= {i.name for i in cat}, "a .solu line for an instance the catalogue does not have"
    for i in cat:
        e = solu.get(i.name)
        if i.status in ("easy", "hard"):
            assert e and e["kind"] == "opt", i.name  # =opt= only with a proof
            assert i.proof_seconds is not None and i.proof_solver
        elif e is not None:
            assert e["kind"] == "best", i.name
    sizes = {s: len(suite(s)) for s in SUITES}
    assert sizes["all"] == len(cat) and sizes["easy"] + sizes["hard"] + sizes["open"] == len(cat)
    assert 10 <= sizes["benchmark"] < len(cat)
    bench = suite("benchmark")
    assert {i.problem_class for i in bench} >= {"LP", "QP", "MILP", "MIQP"}  # balanced over classes
    assert [i.name for i in suite("misvm-bigm.musk1-b8,batchsvm-lp.cad-i10")] == ["misvm-bigm.musk1-b8",
                                                                                  "batchsvm-lp.cad-i10"]
    with pytest.raises(InvalidParameterError, match="neither a suite"):
        suite("no-such-suite")


def test_subset_generator_is_stratified_and_deterministic():
    from milopt.data import load

    full = load("musk1")
    a = load("gen:subset?data=musk1&bags=8&seed=0")
    b = load("gen:subset?data=musk1&bags=8&seed=0")
    c = load("gen:subset?data=musk1&bags=8&seed=1")
    assert a.n_bags == 8 and np.array_equal(a.X, b.X) and not np.array_equal(a.X, c.X)
    assert a.positive_bags == round(8 * full.positive_bags / full.n_bags)
    # whole bags: every chosen bag keeps all its instances
    sizes_full = {name: s for name, s in zip(full.bag_names.tolist(), full.bag_sizes.tolist())}
    assert all(sizes_full[n] == s for n, s in zip(a.bag_names.tolist(), a.bag_sizes.tolist()))
    with pytest.raises(InvalidParameterError, match="too many"):
        load("gen:subset?data=musk1&bags=1000")


@pytest.mark.parametrize("name", TINY)
def test_mps_sha256_is_deterministic_and_recorded(name):
    inst = get_instance(name)
    first = mps_sha256(inst)
    assert first == mps_sha256(inst)
    assert inst.sha256_mps, f"{name}: the catalogue has no sha256 (run benchmarks/library_status.py --update)"
    assert first == inst.sha256_mps


def test_export_library_suite_cli(tmp_path, capsys):
    from milopt.cli import main

    out = tmp_path / "lib"
    assert main(["export-library", str(out), "--suite", ",".join(TINY[:2]), "--formats", "mps", "--json"]) == 0
    man = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in man["instances"]] == TINY[:2]
    for e in man["instances"]:
        for key in ("class", "rows", "columns", "nonzeros", "binaries", "quadratic_nonzeros", "source", "licence",
                    "status"):
            assert e[key] is not None, key
        assert e["sha256_matches_catalogue"] is True
        assert (out / e["files"]["mps"]["file"]).is_file()
    assert man["instances"][0]["class"] == "MILP" and man["instances"][0]["binaries"] > 0
    assert man["instances"][1]["class"] == "QP" and man["instances"][1]["quadratic_nonzeros"] > 0
    assert "CC BY 4.0" in man["instances"][0]["licence"] and "MUSK1" in man["instances"][0]["source"]
    solu = read_solu_full(out / "library.solu")
    assert set(solu) == set(TINY[:2])
    with pytest.raises(InvalidParameterError, match="neither a suite"):
        export_library(tmp_path / "x", suite="bogus")


# --------------------------------------------------------------- verification
def test_verification_catches_infeasible_points_and_wrong_objectives():
    from milopt.bench.library import build
    from milopt.bench.verify import verify_model
    from milopt.solvers import solve

    model = build(get_instance("misvm-bigm.l1.musk1-b8"))[0]
    res = solve(model, "highs", time_limit=60, mip_gap=1e-9)
    ok = verify_model(model, res.objective)
    assert ok["verified"] and ok["max_violation"] <= 1e-6
    from milopt.bench.verify import verify_pyomo  # the expression-based check (nonlinear rows) agrees

    alt = verify_pyomo(model, res.objective)
    assert alt["verified"] and alt["objective_recomputed"] == pytest.approx(ok["objective_recomputed"], rel=1e-9)
    assert ok["objective_recomputed"] == pytest.approx(res.objective, rel=1e-6)
    wrong = verify_model(model, res.objective * 1.01 + 0.1)
    assert not wrong["verified"] and wrong["feasible"] and "differs from the recomputed" in wrong["reason"]
    z = next(v for v in model.zeta.values() if v.value is not None and v.value > 0.5)
    z.set_value(0.5, skip_validation=True)
    bad = verify_model(model, res.objective)
    assert not bad["verified"] and not bad["feasible"] and "infeasible" in bad["reason"]


def _rows(**cols):
    n = len(next(iter(cols.values())))
    base = {"kind": "solve", "outcome": "ok", "termination": "optimal", "verified": "yes", "time_limit": 10.0,
            "kill_after": 60.0, "gap_limit": 1e-4, "sense": "minimize", "bound": np.nan, "gap": 0.0,
            "build_seconds": 0.0, "extra": "", "error": "", "verify_note": ""}
    df = pd.DataFrame({k: [v] * n for k, v in base.items()})
    for k, v in cols.items():
        df[k] = v
    if "objective_recomputed" not in df:
        df["objective_recomputed"] = df["objective"]
    df["problem"] = df["instance"] + "#s0"
    df["run_id"] = [f"r{k}" for k in range(n)]
    return df


def test_wrong_optimum_and_time_limit_overrun_are_failures_with_reasons():
    # the HiGHS case of dcmil-direction on MUSK2: "optimal" at -66,780.8 where SCIP and Ipopt reach -66,792.4
    df = _rows(instance=["dir.musk2"] * 3 + ["lp.x"] * 2, contender=["highs", "scip", "ipopt", "highs", "scip"],
               objective=[-66780.8, -66792.4, -66792.39, 5.0, 5.0], time=[1.0, 2.0, 3.0, 14.3, 1.0],
               bound=[-66780.8, -66792.4, np.nan, 5.0, 6.0])
    a = assess(df).set_index("run_id")
    assert not a.loc["r0", "solved"] and "wrong optimum" in a.loc["r0", "failure"] and "-66792.4" in a.loc["r0", "failure"]
    assert a.loc["r1", "solved"] and a.loc["r2", "solved"]  # within the 1e-4 gap tolerance
    # HiGHS took 14.3 s on a 10 s limit: a failure, with the reason
    assert not a.loc["r3", "solved"] and "outlived its time limit: 14.3 s on a 10 s limit" in a.loc["r3", "failure"]
    # a minimisation bound above the incumbent is flagged (the run itself is solved)
    assert a.loc["r4", "solved"] and "above the incumbent" in a.loc["r4", "flag"]
    # against a .solu optimum
    b = assess(_rows(instance=["q"], contender=["s"], objective=[1.1]), {"q": {"kind": "opt", "value": 1.0}})
    assert not b["solved"].iloc[0] and "the .solu optimum is 1" in b["failure"].iloc[0]
    # unverified answers never count
    c = assess(_rows(instance=["q"], contender=["s"], objective=[1.0], verified=["no"],
                     verify_note=["infeasible: row r3 violated by 0.1"]))
    assert not c["solved"].iloc[0] and "not verified: infeasible" in c["failure"].iloc[0]


def test_primal_integral_by_hand():
    # no incumbent for 2 s (gamma 1), then 12 (opt 10: gamma 2/12) until 5 s, then optimal; horizon 10 s
    tr = [[2.0, 0.0, 12.0], [5.0, 9.0, 10.0]]
    assert primal_integral(tr, 10.0, 10.0) == pytest.approx(2.0 + 3.0 * (2 / 12))
    assert primal_integral([], 10.0, 10.0) is None
    assert primal_integral([[1.0, None, -1.0]], 10.0, 4.0) == pytest.approx(4.0)  # sign differs: gamma 1


def test_contender_styles_stay_apart_beyond_ten(tmp_path):
    from milopt.bench.report_plots import contender_style, plot_profile

    styles = [tuple(contender_style(k).values()) for k in range(16)]
    assert len(set(styles)) == 16
    rng = np.random.default_rng(0)
    times = pd.DataFrame(rng.uniform(1, 10, size=(6, 12)), columns=[f"c{k}" for k in range(12)])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    captured = {}
    orig = plt.Figure.savefig

    def grab(self, *a, **k):
        captured["lines"] = [(ln.get_linestyle(), ln.get_marker()) for ln in self.axes[0].get_lines()]
        return orig(self, *a, **k)

    plt.Figure.savefig = grab
    try:
        plot_profile(times, tmp_path / "p.png", "t")
    finally:
        plt.Figure.savefig = orig
    assert len(set(captured["lines"])) == 12


# --------------------------------------------------------- report: merge, import
def _write_table(folder: Path, rows: pd.DataFrame) -> None:
    from milopt.bench.execute import COLUMNS

    folder.mkdir(parents=True, exist_ok=True)
    full = pd.DataFrame({c: rows[c] if c in rows else "" for c in COLUMNS})
    full.to_csv(folder / "runs.csv", index=False)


def test_report_skips_a_row_cut_mid_write(tmp_path):
    rows = _rows(instance=["a", "b"], contender=["s", "s"], objective=[1.0, 2.0], time=[1.0, 1.0])
    _write_table(tmp_path / "b", rows)
    text = (tmp_path / "b" / "runs.csv").read_text()
    last = text.splitlines()[-1]
    cut = last[: last.index(",optimal,") + 7]  # the half row ends in 'status ... optim'
    (tmp_path / "b" / "runs.csv").write_text(text + cut.replace("r1", "r9", 1))
    with pytest.warns(BenchReportWarning, match="cut mid-write"):
        df = load_runs(tmp_path / "b")
    assert sorted(df["run_id"]) == ["r0", "r1"]
    from milopt.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BenchReportWarning)
        assert main(["report", str(tmp_path / "b"), "--json"]) == 0


def test_merge_runs_from_two_machines_and_external_results(tmp_path, capsys):
    from milopt.bench.library import build
    from milopt.solvers import solve
    from milopt.solvers.extract import extract

    name = "misvm-bigm.l1.musk1-b8"
    a = _rows(instance=[name], contender=["highs"], objective=[1.677717088], time=[2.0])
    a["host"] = "alpha"
    b = a.copy()
    b["host"] = "beta"
    b["time"] = 3.0
    _write_table(tmp_path / "alpha", a)
    _write_table(tmp_path / "beta", b)
    # results of an "external" solver: a correct .sol, a perturbed one, and one without a .sol
    model = build(get_instance(name))[0]
    res = solve(model, "highs", time_limit=60, mip_gap=1e-9)
    mf = extract(model)
    from milopt.io.names import clean_names

    written = clean_names(mf.col_names, "C")  # the names in milopt's files
    good = "\n".join(f"{n} {v.value!r}" for n, v in zip(written, mf.variables))
    (tmp_path / "good.sol").write_text(f"=obj= {res.objective}\n{good}\n")
    bad = good.replace(f"{written[-1]} ", f"{written[-1]} 0.5 #", 1)
    (tmp_path / "bad.sol").write_text(bad + "\n")
    ext = tmp_path / "ext.csv"
    ext.write_text("instance,solver,status,time,objective,bound,sol\n"
                   f"{name},commercial,optimal,0.5,{res.objective},{res.objective},good.sol\n"
                   f"{name},broken,optimal,0.4,{res.objective},{res.objective},bad.sol\n"
                   f"{name},nosol,optimal,0.3,{res.objective},{res.objective},\n"
                   f"{name},liar,optimal,0.2,{res.objective - 1.0},{res.objective - 1.0},\n")
    from milopt.cli import main

    out = tmp_path / "merged"
    assert main(["report", str(tmp_path / "alpha"), str(tmp_path / "beta"), "--external", str(ext), "--out",
                 str(out), "--json"]) == 0
    rows = pd.read_csv(out / "summary.csv").set_index("contender")
    assert {"highs@alpha", "highs@beta", "commercial", "broken", "nosol", "liar"} <= set(rows.index)
    assert rows.loc["commercial", "solved"] == 1 and rows.loc["nosol", "solved"] == 1
    assert rows.loc["broken", "solved"] == 0 and rows.loc["liar", "solved"] == 0
    fails = pd.read_csv(out / "failures.csv").set_index("contender")["failure"]
    assert "not verified" in fails["broken"]
    md = (out / "summary.md").read_text()
    assert "Merged from" in md and "## Failures" in md
    capsys.readouterr()
    assert main(["report", str(tmp_path / "alpha"), str(tmp_path / "beta")]) == 2
    assert "--out" in capsys.readouterr().err


# ------------------------------------------------------------------ suite bench
def test_suite_bench_verifies_and_states_the_gap(tmp_path, capsys):
    from milopt.cli import main

    out = tmp_path / "s"
    rc = main(["bench", "--suite", ",".join(TINY), "--solvers", "highs,scip", "--time-limit", "30", "--out", str(out),
               "--quiet", "--jobs", "1", "--json"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)["report"]
    df = load_runs(out)
    assert set(df["instance"]) == set(TINY) and (df["gap_limit"] == 1e-4).all()
    assert (df["verified"] == "yes").all() and (df["objective_recomputed"].notna()).all()
    assert rep["gap_limits"] == [1e-4]
    md = (out / "summary.md").read_text()
    assert "Relative gap limit given to the solvers: 0.0001" in md and "virtual best" in md
    assert rep["profiles"]["solve"]["problems"] == len(TINY)
    solu = read_solu_full(solu_path())
    sol = {r["contender"]: r for r in rep["summary"]}
    assert sol["highs"]["solved"] + sol["scip"]["solved"] >= 4
    for _, r in df.iterrows():  # the library's best known values are met
        e = solu[r["instance"]]
        assert r["objective_recomputed"] == pytest.approx(e["value"], rel=2e-4, abs=1e-5)


# ----------------------------------------------------------------- interrupts
SLEEPY_LONG = sleep_config("long", 60.0, jobs=2)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_ctrl_c_stops_the_bench_at_once_without_traceback(tmp_path):
    """Ctrl-C (SIGINT to the foreground process group): exit 130 with one line, at once; the
    runs in flight are killed (before: the exit handler waited for them, then raised
    ``ValueError: process object is closed`` from multiprocessing's atexit hook)."""
    from test_bench import _alive, _descendants as desc_of

    cfg = tmp_path / "long.toml"
    cfg.write_text(SLEEPY_LONG)
    code = "import sys; from milopt.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "bench", str(cfg), "--out", str(tmp_path / "out"), "--quiet"],
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # fork server + resource tracker + 2 runs
            if len(desc_of(proc.pid)) >= 4:
                break
            time.sleep(0.2)
        else:
            pytest.fail("runs did not start")
        time.sleep(1.0)
        desc = desc_of(proc.pid)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "ValueError" not in err, err
    assert took < 15, f"exit took {took:.1f} s after Ctrl-C (runs sleep 60 s)"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in desc):
        time.sleep(0.2)
    assert not [p for p in desc if _alive(p)]


def test_scip_trajectory_from_display_lines():
    from milopt.bench.worker import scip_trajectory

    head = (" time | node  | left  |LP iter|LP it/n|mem/heur|mdpt |vars |cons |rows |cuts |sepa|confs|strbr|"
            "  dualbound   | primalbound  |  gap   | compl. ")
    row = "|     1 |     0 |    50 |     - |  trysol|   0 | 367 |  45 | 377 |   0 |  0 |   0 |   0 |{} | {} |    Inf | unknown"
    log = "\n".join([head, "  0.0s" + row.format("-1.000000e-09", "     --     "),
                     "t 0.1s" + row.format("-1.000000e-09", "4.743735e-01"),
                     "0s" + row.format("0.000000e+00", "4.743735e-01"),  # a line cut by the log capture
                     " 12.5s" + row.format("1.000000e-01", "2.000000e-01"), "SCIP Status : optimal"])
    assert scip_trajectory(log) == [[0.0, -1e-09, None], [0.1, -1e-09, 0.4743735], [12.5, 0.1, 0.2]]


def test_fit_report_puts_quality_first(tmp_path):
    rows = pd.DataFrame({"run_id": [f"f{k}" for k in range(6)], "kind": "fit", "outcome": "ok",
                         "contender": ["fast"] * 3 + ["good"] * 3, "data": "musk1", "method": "m",
                         "problem": [f"musk1#f{k % 3}#s0" for k in range(6)], "instance": "m.musk1",
                         "termination": "", "time": [0.1, 0.1, 0.1, 5.0, 6.0, 7.0], "fit_seconds": [0.1] * 3 + [5, 6, 7],
                         "time_limit": 60.0, "kill_after": 120.0,
                         "bag_auc": [0.70, 0.72, 0.74, 0.90, 0.92, 0.94], "bag_accuracy": [0.6, 0.7, 0.8, 0.8, 0.9, 1.0]})
    _write_table(tmp_path / "fits", rows)
    write_report(tmp_path / "fits")
    md = (tmp_path / "fits" / "summary.md").read_text()
    sec = md[md.index("## Fit methods: quality first"):]
    assert "0.920 ± 0.020" in sec and "0.720 ± 0.020" in sec
    assert sec.index("| good |") < sec.index("| fast |")  # ranked by AUC, not by time
    header = [ln for ln in sec.splitlines() if ln.startswith("| contender")][0]
    assert header.index("bag_auc") < header.index("bag_accuracy") < header.index("sgm_fit_seconds")
    assert "time only" in md


# ------------------------------------------------ byte stability, solution files, certificates
# the strengthened big-M and the hull forms compute bounds (rounded outward) besides the tiny ones
STABLE = TINY + ["misvm-bigm.strong.digits-b20", "misvm-hull.ky1-b20", "misvm-hull.box.digits-b20"]


def test_round_outward_keeps_bounds_valid_and_drops_last_bits():
    from milopt.models.misvm_bigm import DIGITS, round_outward, stable_bounds

    rng = np.random.default_rng(0)
    x = rng.normal(size=5000) * 10.0 ** rng.integers(-9, 9, 5000)
    up, down = round_outward(x, up=True), round_outward(x, up=False)
    assert np.all(up >= x) and np.all(down <= x)
    assert np.all(np.abs(up - x) <= 10.0 ** (1 - DIGITS) * np.abs(x))
    # a last-bit perturbation of the input almost never moves the rounded value
    moved = round_outward(np.nextafter(x, np.inf), up=True) != up
    assert moved.mean() < 1e-3
    assert round_outward(2.0000000010005) == 2.0000001 and round_outward(-23.1734676004, up=False) == -23.173468
    assert round_outward(np.inf) == np.inf and round_outward(0.0) == 0.0
    b = stable_bounds({"W": 1.23456789012, "b_lo": -1.23456789012, "b_hi": 1.0, "xi_hi": np.array([0.1 + 0.2]),
                       "L": np.array([3.14159265358979]), "lo": np.array([-0.5]), "F": 2.0})
    assert b["W"] == 1.2345679 and b["b_lo"] == -1.2345679 and b["L"][0] == 3.1415927
    assert b["xi_hi"][0] == 0.30000001      # 0.1 + 0.2 is above 0.3: rounded up


def test_export_check_passes_on_the_bound_computing_instances(tmp_path):
    """``export-library --check`` (the whole library: .ci/run and the slow test below)."""
    from milopt.cli import main

    assert main(["export-library", str(tmp_path), "--suite", ",".join(STABLE), "--formats", "mps", "--check"]) == 0


@pytest.mark.slow
def test_export_check_passes_on_the_whole_library(tmp_path):
    r = subprocess.run([sys.executable, "-m", "milopt", "export-library", str(tmp_path), "--formats", "mps", "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def _solution_instances():
    solu = read_solu_full(solu_path())
    return [i for i in load_catalogue() if solu.get(i.name, {}).get("kind") in ("opt", "best")]


def _check_solution_files(insts):
    from milopt.bench.certificates import check_solution, sol_path

    solu = read_solu_full(solu_path())
    bad = []
    for inst in insts:
        assert sol_path(inst.name).is_file(), f"{inst.name}: no solution file"
        v = check_solution(inst)
        e = solu[inst.name]
        if not v["ok"] or abs(v["objective_recomputed"] - e["value"]) > 1e-9 * max(1.0, abs(e["value"])):
            bad.append((inst.name, v["reason"], v["objective_recomputed"], e["value"]))
    assert not bad, bad


def test_every_solu_value_has_a_solution_file_that_checks_fast_subset():
    """Each =opt= / =best= value is the objective of a shipped .sol verified feasible (a subset
    here; all of them in the slow test)."""
    insts = _solution_instances()
    assert {i.name for i in insts} >= set(TINY)
    _check_solution_files([i for i in insts if i.name in set(STABLE) | {"misvm-bigm.ind.musk1-b8"}])


@pytest.mark.slow
def test_every_solu_value_has_a_solution_file_that_checks():
    _check_solution_files(_solution_instances())


def test_solution_checker_rejects_a_corrupted_point(tmp_path):
    from milopt.bench.certificates import check_solution, sol_path, write_sol
    from milopt.bench.verify import read_sol

    inst = get_instance("misvm-bigm.l1.musk1-b8")
    vals = read_sol(sol_path(inst.name))
    assert check_solution(inst)["ok"]
    b = dict(vals, b=vals.get("b", 0.0) + 0.5)     # shift the bias: some margin row breaks
    p = write_sol(tmp_path / "x.sol", list(b), list(b.values()), 1.0)
    v = check_solution(inst, p)
    assert not v["ok"] and "infeasible" in v["reason"]
    p = write_sol(tmp_path / "y.sol", list(vals), list(vals.values()), 1.0)   # right point, wrong =obj=
    v = check_solution(inst, p)
    assert v["feasible"] and not v["ok"]


def test_certificate_transfers_only_after_the_check():
    from milopt.bench.certificates import (misvm_point, model_point, point_from_sol, problem_key, proved,
                                           read_certificates, sol_path, transfer)
    from milopt.bench.library import build

    src, twin = get_instance("misvm-bigm.musk1-b8"), get_instance("misvm-bigm.sos1.musk1-b8")
    assert problem_key(src) == problem_key(twin) != problem_key(get_instance("misvm-bigm.l1.musk1-b8"))
    model = build(src)[0]        # the certified point: the source's shipped solution
    mf, _, _ = model_point(model)
    x, unknown = point_from_sol(mf, sol_path(src.name))
    assert not unknown
    for j, v in enumerate(mf.variables):
        v.set_value(float(x[j]), skip_validation=True)
    pt, value = misvm_point(src, model), mf.objective_value(x)
    ok = transfer(pt, value, twin)
    assert ok["ok"] and ok["objective"] == pytest.approx(value, rel=1e-9)
    bad = transfer(dict(pt, b=pt["b"] + 0.3), value, twin)     # another point: its value differs
    assert not bad["ok"] and bad["why"]
    assert proved(1.0, 1.0 - 5e-5) and not proved(1.0, 0.99) and not proved(1.0, 1.0 + 1e-5)
    assert proved(-2.0, -2.0 + 1e-4, "maximize") and not proved(-2.0, -2.1, "maximize")
    certs = read_certificates()
    solu = read_solu_full(solu_path())
    for name, row in certs.items():     # every =opt= carries its certificate
        if solu.get(name, {}).get("kind") == "opt":
            assert row["kind"] == "opt" and row["how"] and row["solver"], name
            assert proved(float(row["value"]), float(row["bound"]), get_instance(name).sense or "minimize"), name


def test_library_page_table_is_generated_from_the_catalogue():
    """docs/library.md carries the table benchmarks/library_table.py generates now."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("library_table", root / "benchmarks" / "library_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    page = (root / "docs" / "library.md").read_text()
    assert mod.BEGIN in page and mod.END in page
    body = page.split(mod.BEGIN)[1].split(mod.END)[0]
    assert body.strip() == mod.table().strip(), "run: python benchmarks/library_table.py --page docs/library.md"
    from milopt.bench.library import read_metadata

    meta = read_metadata()
    for inst in load_catalogue():   # metadata of every instance: sizes, source, licence, reference
        m = meta[inst.name]
        assert int(m["rows"]) > 0 and int(m["columns"]) > 0 and m["licence"] and m["reference"], inst.name
        assert m["class"] == inst.problem_class, inst.name


def test_highs_proves_every_easy_direction_qp():
    """HiGHS's QP answer on the DCPCA direction QPs passes milopt's optimality check and meets
    the library's optimum: where the unregularised QP fails (a free column without curvature,
    ``dcmil-direction.it5.musk1``), the polish with regularisation 1e-12 does."""
    from milopt.bench.library import build
    from milopt.solvers import solve
    from milopt.solvers.result import Termination

    solu = read_solu_full(solu_path())
    for name in ("dcmil-direction.it5.musk1", "dcmil-direction.digits-b40"):
        res = solve(build(get_instance(name))[0], "highs", time_limit=60, threads=1)
        assert res.termination == Termination.OPTIMAL, (name, res.extra.get("optimality_check"))
        assert res.extra["optimality_check"]["passed"], name
        assert res.objective == pytest.approx(solu[name]["value"], rel=1e-9, abs=1e-9), name


def test_a_twin_bound_comes_only_from_an_exact_form():
    """library_solutions: the dual bound of an exact form of the same MI-SVM problem holds for its
    twins; a heuristic big-M's own bound (its optimum can be higher) holds for no other form."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("library_solutions", root / "benchmarks" / "library_solutions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cat = load_catalogue()
    plain = get_instance("misvm-bigm.musk1-b8")
    assert mod._sibling_bound(plain, cat, {"misvm-bigm.mildsvm.musk1-b8": {"bound": "9"}}, {}, "minimize") == (None, "")
    certs = {"misvm-bigm.mildsvm.musk1-b8": {"bound": "9"}, "misvm-bigm.sos1.musk1-b8": {"bound": "0.04"},
             "misvm-bigm.l1.musk1-b8": {"bound": "1.5"}}      # another problem (norm l1): not a twin
    known = {"misvm-bigm.ind.musk1-b8": {"kind": "best", "value": 0.2, "bound": 0.045}}
    assert mod._sibling_bound(plain, cat, certs, known, "minimize") == (0.045, "misvm-bigm.ind.musk1-b8")
    mild = get_instance("misvm-bigm.mildsvm.musk1-b8")   # an exact form's bound holds for the heuristic big-M
    assert mod._sibling_bound(mild, cat, certs, known, "minimize") == (0.045, "misvm-bigm.ind.musk1-b8")
