"""Benchmark harness: config expansion, isolated runs, resume, Dask, reports, export-library."""
from __future__ import annotations

import io
import json
import math
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
from milopt.bench.config import BenchWarning, load_config, run_id
from milopt.bench.plan import expand
from milopt.bench.harness import RunStore, run_bench
from milopt.bench.report import write_report
from milopt.bench.report_tables import (performance_profile, performance_ratios, shifted_geomean, solu_entries,
                                        summary_table, time_matrix)
from milopt.bench.runs import load_runs
from milopt.bench.solu import read_solu
from milopt.errors import InvalidParameterError

HELPERS = str(Path(__file__).with_name("bench_helpers.py"))
DATA = ['gen:digits?bags=6&max_size=3&seed=0', 'gen:digits?bags=6&max_size=3&seed=1']

TINY = f"""
name = "tiny"
time_limit = 5
kill_after = 60
data = {json.dumps(DATA)}

[[solve]]
formulation = "batchsvm-lp"
solvers = ["highs", "scip"]
params = {{ theta = 0.0 }}

[[solve]]
formulation = "dcmil-direction"
solvers = ["highs", "scip"]
"""

FAILING = f"""
name = "failing"
time_limit = 1
kill_after = 1.5
folds = 2
data = ["{DATA[0]}"]
imports = ["{HELPERS}"]

[[fit]]
method = "test-sleep"
params = {{ seconds = 30.0 }}
folds = 2

[[fit]]
method = "test-raise"

[[fit]]
method = "test-crash"
"""

SLEEPY = sleep_config("sleepy", [0.2, 0.21, 0.22], data=DATA[0])


def _write(tmp_path, name, text) -> str:
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return str(p)


SAME_COLS = ["run_id", "kind", "problem", "instance", "contender", "outcome", "status", "termination",
             "problem_class", "variables", "binaries", "constraints", "nonzeros", "bags", "instances"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from milopt.cli import main

    d = tmp_path_factory.mktemp("tiny")
    cfg = _write(d, "tiny", TINY)
    out = d / "out"
    rc = main(["bench", cfg, "--out", str(out), "--jobs", "2", "--quiet", "--json"])
    assert rc == 0
    return cfg, out


# ----------------------------------------------------------------- pure parts
def test_shifted_geomean():
    assert shifted_geomean([0.0, 0.0]) == pytest.approx(0.0)
    assert shifted_geomean([5.0]) == pytest.approx(5.0)
    # exp(mean(log([11, 30]))) - 10
    assert shifted_geomean([1.0, 20.0]) == pytest.approx(math.sqrt(11 * 30) - 10)
    assert shifted_geomean([1.0, 20.0], shift=1) == pytest.approx(math.sqrt(2 * 21) - 1)
    assert math.isnan(shifted_geomean([]))


def _hand_table():
    # problems p1..p4, contenders A, B, C; C did not attempt p4 (so p4 is not in the profile)
    rows = [
        ("p1", "A", "ok", "optimal", 1.0), ("p1", "B", "ok", "optimal", 2.0), ("p1", "C", "ok", "optimal", 4.0),
        ("p2", "A", "ok", "optimal", 6.0), ("p2", "B", "ok", "optimal", 3.0), ("p2", "C", "killed", "", 9.0),
        ("p3", "A", "ok", "time_limit", 10.0), ("p3", "B", "error", "", 0.1), ("p3", "C", "ok", "time_limit", 10.0),
        ("p4", "A", "ok", "optimal", 1.0), ("p4", "B", "ok", "optimal", 1.0),
        ("p1", "D", "unsupported", "", 0.5),
    ]
    df = pd.DataFrame(rows, columns=["problem", "contender", "outcome", "termination", "time"])
    df["kind"] = "solve"
    df["time_limit"] = 10.0
    df["kill_after"] = 20.0
    df["gap"] = np.where(df["termination"] == "optimal", 0.0, np.where(df["termination"] == "time_limit", 0.5, np.nan))
    df["objective"] = np.where(df["outcome"] == "ok", 1.0, np.nan)
    df["instance"] = df["problem"]
    df["run_id"] = [f"r{i}" for i in range(len(df))]
    df["verified"] = np.where(df["outcome"] == "ok", "yes", "")
    df["objective_recomputed"] = df["objective"]
    return df


def test_performance_profile_hand_made():
    df = _hand_table()
    tm = time_matrix(df, "solve")
    # D only has an unsupported run: not a contender; C was not given p4: it fails on it (the
    # profile is over every problem, not only those every contender attempted)
    assert list(tm.columns) == ["A", "B", "C"]
    assert list(tm.index) == ["p1", "p2", "p3", "p4"]
    r = performance_ratios(tm)
    assert r.loc["p1"].tolist() == [1.0, 2.0, 4.0]
    assert r.loc["p2", "A"] == pytest.approx(2.0) and r.loc["p2", "B"] == 1.0 and np.isinf(r.loc["p2", "C"])
    assert np.isinf(r.loc["p3"]).all()  # nobody solved p3
    assert r.loc["p4", "A"] == 1.0 and np.isinf(r.loc["p4", "C"])
    taus, prof = performance_profile(tm, [1, 2, 4, 8])
    assert prof["A"].tolist() == pytest.approx([2 / 4, 3 / 4, 3 / 4, 3 / 4])
    assert prof["B"].tolist() == pytest.approx([2 / 4, 3 / 4, 3 / 4, 3 / 4])
    assert prof["C"].tolist() == pytest.approx([0, 0, 1 / 4, 1 / 4])
    taus, prof = performance_profile(tm)
    assert taus[0] == 1.0 and prof.iloc[-1].max() <= 3 / 4 + 1e-12
    # a suite instance nobody was given still counts as a problem
    assert len(time_matrix(df, "solve", problems=["p1", "p5"])) == 5


def test_summary_table_hand_made():
    df = _hand_table()
    s = summary_table(df).set_index("contender")
    # A: solved p1 (1 s), p2 (6 s), p4 (1 s); p3 time limit -> charged 10
    assert s.loc["A", "runs"] == 4 and s.loc["A", "solved"] == 3 and s.loc["A", "time_limit"] == 1
    assert s.loc["A", "sgm_time"] == pytest.approx(shifted_geomean([1, 6, 10, 1]))
    # B's error is charged the time limit, its gap counts 1
    assert s.loc["B", "errors"] == 1
    assert s.loc["B", "sgm_time"] == pytest.approx(shifted_geomean([2, 3, 10, 1]))
    assert s.loc["B", "mean_gap"] == pytest.approx(0.25)
    assert s.loc["C", "killed"] == 1 and s.loc["C", "mean_gap"] == pytest.approx((0 + 1 + 0.5) / 3)
    assert s.loc["D", "runs"] == 0 and s.loc["D", "unsupported"] == 1
    # virtual best: p1 by A (1 s), p2 by B (3 s), p3 unsolved (limit 10), p4 (1 s)
    vb = s.loc["virtual best"]
    assert vb["solved"] == 3 and vb["sgm_time"] == pytest.approx(shifted_geomean([1, 3, 10, 1]))
    # each ratio divides the mean beside it by the best real contender's (never the virtual best's)
    real = s.drop(index=["virtual best", "D"])
    assert vb["sgm_ratio"] == pytest.approx(vb["sgm_time"] / real["sgm_time"].min())
    # ratios over the common problems (p1..p3): A 1, 6, 10; virtual best 1, 3, 10
    assert s.loc["A", "sgm_common_ratio"] == pytest.approx(s.loc["A", "sgm_common"] / real["sgm_common"].min())
    assert vb["sgm_common"] == pytest.approx(shifted_geomean([1, 3, 10]))
    # common problems (given to A, B and C): p1..p3; all solved by every contender: p1 only
    assert s.loc["A", "sgm_common"] == pytest.approx(shifted_geomean([1, 6, 10]))
    assert s.loc["C", "sgm_all_solved"] == pytest.approx(shifted_geomean([4.0]))
    assert s.loc["B", "sgm_all_solved"] == pytest.approx(shifted_geomean([2.0]))


def test_fit_iteration_limit_is_solved_time_limit_is_not():
    df = pd.DataFrame({"kind": "fit", "contender": "m", "problem": ["a", "b", "c"], "outcome": "ok",
                       "termination": ["iteration_limit", "time_limit", ""], "time": [2.0, 12.0, 3.0],
                       "time_limit": 10.0, "kill_after": 50.0, "gap": np.nan, "objective": 1.0,
                       "bag_accuracy": [1.0, 0.5, 0.75], "bag_auc": [1.0, 0.5, 0.5]})
    s = summary_table(df).iloc[0]
    assert s["solved"] == 2 and s["iter_limit"] == 1 and s["time_limit"] == 1
    assert s["sgm_time"] == pytest.approx(shifted_geomean([2.0, 10.0, 3.0]))
    assert s["bag_accuracy"] == pytest.approx(0.75) and math.isnan(s["mean_gap"])


def test_solu_entries_and_merge(tmp_path):
    df = pd.DataFrame({
        "kind": "solve", "instance": ["x", "x", "y", "z", "w"], "outcome": ["ok", "ok", "ok", "ok", "killed"],
        "termination": ["optimal", "time_limit", "time_limit", "infeasible", ""],
        "objective": [2.0, 2.5, 7.0, np.nan, np.nan], "gap": [0.0, 0.1, 0.4, np.nan, np.nan]})
    entries, conflicts = solu_entries(df)
    assert entries == {"x": ("opt", 2.0), "y": ("best", 7.0), "z": ("inf", None)}
    assert conflicts == []
    from milopt.bench.solu import write_solu

    write_solu(tmp_path / "a.solu", entries)
    text = (tmp_path / "a.solu").read_text().splitlines()
    assert text == ["=opt= x 2", "=best= y 7", "=inf= z"]
    # merging: a better best replaces, a worse one does not, a differing optimum is a conflict
    old = {"y": ("best", 6.0), "x": ("opt", 2.5), "v": ("best", 1.0)}
    merged, conflicts = solu_entries(df, old)
    assert merged["y"] == ("best", 6.0) and merged["v"] == ("best", 1.0)
    assert len(conflicts) == 1 and "x" in conflicts[0]
    assert read_solu(tmp_path / "a.solu") == entries
    # a maximisation keeps the highest value, and a higher solution beats a recorded best
    dmax = pd.DataFrame({"kind": "solve", "instance": ["m", "m"], "outcome": "ok", "sense": "maximize",
                         "termination": ["time_limit", "time_limit"], "objective": [3.0, 5.0], "gap": [0.5, 0.2]})
    assert solu_entries(dmax)[0] == {"m": ("best", 5.0)}
    assert solu_entries(dmax, {"m": ("best", 4.0)})[0] == {"m": ("best", 5.0)}
    assert solu_entries(dmax, {"m": ("best", 6.0)})[0] == {"m": ("best", 6.0)}


def test_config_expansion_ids_and_errors(tmp_path):
    cfg = load_config(_write(tmp_path, "t", TINY))
    runs = expand(cfg)
    assert len(runs) == 8 and len({r.run_id for r in runs}) == 8
    assert [r.run_id for r in expand(load_config(_write(tmp_path, "t2", TINY)))] == [r.run_id for r in runs]
    assert runs[0].run_id == run_id(runs[0].spec)
    changed = expand(load_config(_write(tmp_path, "t3", TINY.replace("theta = 0.0", "theta = 0.0, nu = 2.0"))))
    assert {r.run_id for r in changed} != {r.run_id for r in runs}
    with pytest.warns(BenchWarning, match="no-such-form"):
        more = expand(load_config(_write(tmp_path, "t4", TINY + '\n[[solve]]\nformulation = "no-such-form"\n')))
    assert len(more) == 8
    with pytest.raises(InvalidParameterError, match="unknown key"):
        load_config(_write(tmp_path, "bad", TINY + "\nbogus = 1\n"))
    with pytest.raises(InvalidParameterError, match="nothing to run"):
        load_config(_write(tmp_path, "empty", 'data = ["musk1"]\n'))
    with pytest.raises(InvalidParameterError, match="not valid TOML"):
        load_config(_write(tmp_path, "broken", "data = [\n"))
    with pytest.warns(BenchWarning, match="unknown solver 'nosolver'"):
        fewer = expand(load_config(_write(tmp_path, "s", TINY.replace('"highs", "scip"]', '"nosolver"]', 1))))
    assert len(fewer) == 4
    with pytest.raises(InvalidParameterError, match="unknown parameter"):
        expand(load_config(_write(tmp_path, "p", TINY.replace("theta = 0.0", "tehta = 0.0"))))
    with pytest.raises(InvalidParameterError, match="not found"):
        load_config(tmp_path / "missing.toml")


def test_instance_names_drop_default_parameters():
    from milopt.bench.config import instance_name

    assert instance_name("misvm-bigm", "musk1", {"C": 1.0}) == "misvm-bigm.musk1"
    assert instance_name("misvm-bigm", "musk1", {"C": 10, "class_weight": "kent-yu"}) == "misvm-bigm.musk1.C=10"
    assert instance_name("batchsvm-lp", "gen:digits?bags=6&seed=1", {"theta": 0.0}) == \
        "batchsvm-lp.gen-digits-bags=6-seed=1.theta=0.0"
    assert instance_name("dcmil-dca", "/data/my set.csv.gz", {}) == "dcmil-dca.my-set"


def test_default_config_expands():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BenchWarning)
        runs = expand(load_config(None))
    assert runs and all(r.spec["data"] in ("musk1", "musk2") for r in runs)


# ----------------------------------------------------------------- tiny bench
def test_tiny_bench_table_plots_solu(tiny):
    cfg, out = tiny
    df = load_runs(out)
    assert len(df) == 8 and set(df["outcome"]) == {"ok"}
    assert set(df["solver"]) == {"highs", "scip"} and set(df["formulation"]) == {"batchsvm-lp", "dcmil-direction"}
    assert (df["termination"] == "optimal").all()
    for c in ("variables", "constraints", "nonzeros", "bags", "instances", "features", "objective", "wall_time"):
        assert df[c].notna().all(), c
    assert df["solver_version"].str.len().gt(0).all()
    assert (df["sense"] == "minimize").all()
    # both solvers reach the same optimum on each instance
    spread = df.groupby("instance")["objective"].agg(lambda v: v.max() - v.min())
    assert (spread <= 1e-5 * (1 + df["objective"].abs().max())).all()
    files = {p.name for p in out.iterdir()}
    assert {"runs.csv", "summary.md", "summary.csv", "profile_solve.png", "gaps.png", "best.solu",
            "config.toml", "bench.json"} <= files
    for png in ("profile_solve.png", "gaps.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    solu = read_solu(out / "best.solu")
    assert len(solu) == 4 and all(k == "opt" for k, _ in solu.values())
    for inst, (k, v) in solu.items():
        assert v == pytest.approx(df.loc[df["instance"] == inst, "objective"].min())
    md = (out / "summary.md").read_text()
    assert "| solve | highs |" in md and "| solve | scip |" in md and "profile_solve.png" in md


def test_report_cli_json(tiny, capsys):
    from milopt.cli import main

    _, out = tiny
    assert main(["report", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    conts = {r["contender"]: r for r in rep["summary"]}
    assert set(conts) == {"highs", "scip", "virtual best"} and all(r["solved"] == 4 for r in conts.values())
    assert rep["failures"] == [] and rep["flags"] == []
    assert rep["profiles"]["solve"]["problems"] == 4
    assert rep["conflicts"] == []


def test_export_library_with_solu(tiny, tmp_path):
    from milopt.bench.library import export_library

    cfg, out = tiny
    man = export_library(tmp_path / "lib", config=cfg, data=[DATA[0]], solu=out / "best.solu")
    assert len(man["instances"]) == 2
    for e in man["instances"]:
        assert e["best_known"]["kind"] == "opt"
        for fmt in ("mps", "lp"):
            p = tmp_path / "lib" / e["files"][fmt]["file"]
            assert p.is_file() and p.name.endswith(f".{fmt}.gz") and e["files"][fmt]["bytes"] > 0
        assert e["size"]["variables"] > 0
    assert json.loads((tmp_path / "lib" / "manifest.json").read_text())["instances"][0]["name"]
    assert len(read_solu(tmp_path / "lib" / "library.solu")) == 2
    with pytest.raises(InvalidParameterError, match="formats"):
        export_library(tmp_path / "lib2", formats=["xls"])


def test_existing_table_needs_resume(tiny):
    cfg, out = tiny
    with pytest.raises(InvalidParameterError, match="--resume"):
        run_bench(cfg, out, progress=False)
    res = run_bench(cfg, out, resume=True, progress=False)
    assert res["executed"] == 0 and res["skipped"] == 8
    from milopt.bench.harness import _lock

    held = _lock(out)  # another bench writing the folder
    try:
        with pytest.raises(InvalidParameterError, match="another milopt bench"):
            run_bench(cfg, out, resume=True, progress=False)
    finally:
        held.close()


def test_dask_gives_same_rows(tiny, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    cfg, out = tiny
    sub = load_config(cfg)
    sub["data"] = [DATA[0]]  # half of the tiny bench: its runs have the same ids
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cl:
        with distributed.Client(cl) as client:
            res = run_bench(sub, tmp_path / "dask", scheduler=client, progress=False)
    assert res["executed"] == 4
    a = load_runs(out)
    a = a[a["data"] == DATA[0]].sort_values("run_id").reset_index(drop=True)
    b = load_runs(tmp_path / "dask").sort_values("run_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(a[SAME_COLS], b[SAME_COLS])
    np.testing.assert_allclose(a["objective"], b["objective"], rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------- failing runs
def test_killed_error_and_crash_recorded(tmp_path):
    stream = io.StringIO()
    t0 = time.monotonic()
    res = run_bench(_write(tmp_path, "failing", FAILING), tmp_path / "out", jobs=3, stream=stream)
    elapsed = time.monotonic() - t0
    df = load_runs(tmp_path / "out").set_index("method")
    assert res["executed"] == 6 and res["failures"] == 6
    sleep = df.loc[["test-sleep"]]
    assert (sleep["outcome"] == "killed").all()
    assert sleep["error"].str.contains("hard wall-clock limit of 1.5 s").all()
    assert (sleep["run_seconds"] < 10).all() and elapsed < 40
    raised = df.loc[["test-raise"]]
    assert (raised["outcome"] == "error").all()
    assert raised["error"].str.contains("RuntimeError: deliberate failure inside the test method").all()
    crash = df.loc[["test-crash"]]
    assert (crash["outcome"] == "error").all() and crash["error"].str.contains("exited with code 3").all()
    assert "[6/6] failures 6" in stream.getvalue() and "ETA" in stream.getvalue()
    rep = write_report(tmp_path / "out")
    assert "## Failed runs" in (tmp_path / "out" / "summary.md").read_text()
    s = {r["contender"]: r for r in rep["summary"]}
    assert s["test-sleep[seconds=30.0]"]["killed"] == 2 and s["test-raise"]["errors"] == 2


@pytest.mark.slow
def test_subprocess_isolation_records_error(tmp_path):
    """The ``python -m milopt.bench.worker`` path (used inside Dask worker processes); ~3 s of imports."""
    from milopt.bench.execute import run_isolated

    spec = {"kind": "fit", "method": "test-raise", "data": DATA[0], "params": {}, "folds": 2, "fold": 0, "seed": 0,
            "time_limit": 5.0}
    task = {"run_id": run_id(spec), "spec": spec, "label": "test-raise", "kill_after": 120.0,
            "imports": [HELPERS], "isolation": "subprocess"}
    row = run_isolated(task)
    assert row["outcome"] == "error", row["error"]
    assert "RuntimeError: deliberate failure" in row["error"]
    assert row["run_id"] == task["run_id"] and row["method"] == "test-raise" and row["fold"] == 0


class _Interrupt(Exception):
    pass


class _InterruptingStream(io.StringIO):
    """Progress stream that interrupts the bench once ``after`` rows are written."""

    def __init__(self, after):
        super().__init__()
        self.after = after

    def write(self, s):
        super().write(s)
        if s.startswith(f"[{self.after}/"):
            raise _Interrupt


def _check_resumed(out, first, total):
    lines = (out / "runs.csv").read_text().splitlines()
    ids = [ln.split(",", 1)[0] for ln in lines[1:]]
    assert len(ids) == total and len(set(ids)) == total  # nothing repeated
    after = load_runs(out).set_index("run_id")
    for _, r in first.iterrows():  # finished rows untouched
        assert after.loc[r["run_id"], "finished_at"] == r["finished_at"]
    assert (after["outcome"] == "ok").all()


def test_interrupted_bench_resumes(tmp_path):
    cfg = _write(tmp_path, "sleepy", SLEEPY)
    out = tmp_path / "out"
    with pytest.raises(_Interrupt):
        run_bench(cfg, out, jobs=2, stream=_InterruptingStream(2))
    first = load_runs(out)
    assert 2 <= len(first) < 6
    res = run_bench(cfg, out, resume=True, jobs=2, progress=False)
    assert res["executed"] == 6 - len(first) and res["skipped"] == len(first)
    _check_resumed(out, first, 6)


@pytest.mark.slow
def test_killed_bench_process_resumes(tmp_path):
    """SIGKILL the whole bench process group half-way (real interruption), then resume."""
    cfg = _write(tmp_path, "sleepy", SLEEPY)
    out = tmp_path / "out"
    code = "import sys; from milopt.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "bench", cfg, "--out", str(out), "--jobs", "1", "--quiet"],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=str(tmp_path))
    store = RunStore(out)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if store.exists() and len(store.finished_ids()) >= 3:
                break
            assert proc.poll() is None, "bench ended before it could be interrupted"
            time.sleep(0.05)
        else:
            pytest.fail("bench did not finish 3 runs in 120 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    first = load_runs(out)
    assert 3 <= len(first) < 6
    res = run_bench(cfg, out, resume=True, progress=False)
    assert res["executed"] == 6 - len(first) and res["skipped"] == len(first)
    _check_resumed(out, first, 6)


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_killed_bench_leaves_no_run_behind(tmp_path):
    """SIGKILL of the bench process alone (not its group): the fork server and the runs die with it."""
    cfg = _write(tmp_path, "long", sleep_config("sleepy", 60.0, data=DATA[0]))
    code = "import sys; from milopt.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "bench", cfg, "--out", str(tmp_path / "out"), "--jobs", "2",
                             "--quiet"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    desc: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # fork server + resource tracker + 2 runs
            desc = _descendants(proc.pid)
            if len(desc) >= 4:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"runs did not start (descendants {desc})")
        time.sleep(0.5)
        desc = _descendants(proc.pid)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in desc):
            time.sleep(0.2)
        left = [p for p in desc if _alive(p)]
        assert not left, f"processes left running after the bench died: {left}"
    finally:
        proc.kill()
        proc.wait()
        for p in desc:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def test_partial_line_is_repaired(tmp_path):
    from milopt.bench.execute import COLUMNS

    store = RunStore(tmp_path)
    store.start()
    store.append({c: "x" for c in COLUMNS} | {"run_id": "aaa", "outcome": "ok"})
    with open(store.path, "a") as fh:
        fh.write("bbb,solve,trunc")
    store.repair()
    assert store.finished_ids() == {"aaa"}
    assert store.path.read_text().endswith("\n")


def test_run_bench_from_a_plain_script(tmp_path):
    """A script without an ``if __name__ == "__main__":`` guard calls run_bench: the runs
    (forked from the fork server) do not re-run the script, and each one finishes."""
    script = tmp_path / "my_bench.py"
    script.write_text(
        "import json, sys\nfrom milopt.bench import run_bench\n"
        "print('SCRIPT RAN', flush=True)\n"
        f"cfg = {{'name': 's', 'time_limit': 5, 'kill_after': 60, 'data': {json.dumps(DATA[:1])},\n"
        "       'solve': [{'formulation': 'batchsvm-lp', 'solvers': ['highs'], 'params': {'theta': 0.0}}]}\n"
        "res = run_bench(cfg, sys.argv[1], progress=False)\n"
        "print(json.dumps({'executed': res['executed'], 'failures': res['failures']}))\n")
    env = {k: v for k, v in os.environ.items() if k != "MILOPT_BENCH_ISOLATION"}
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("SCRIPT RAN") == 1, r.stdout
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"executed": 1, "failures": 0}
    rows = pd.read_csv(tmp_path / "out" / "runs.csv")
    assert list(rows["outcome"]) == ["ok"], rows.to_dict("records")
