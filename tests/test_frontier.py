"""The frontier script (benchmarks/exact_frontier.py): path parsing, nested subsets, the
table cells (proved / gap / licence limit), re-rendering from saved runs, and one real run."""
import json
import math
import os
import subprocess
import sys

import pytest
from benchmark_script import load_benchmark

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "exact_frontier.py")


@pytest.fixture(scope="module")
def fr():
    return load_benchmark("exact_frontier")


def test_parse_path_and_known_names(fr):
    p = fr.parse_path("x=misvm-bigm:cplex:warm:strengthen=all")
    assert p == {"name": "x", "formulation": "misvm-bigm", "solver": "cplex", "warm": True,
                 "params": {"strengthen": "all"}}
    assert fr.parse_path("cplex-warm")["solver"] == "cplex"
    assert fr.parse_path("bnb") == {"name": "bnb", "formulation": "misvm-bigm", "solver": "bnb", "warm": False,
                                    "params": {}}
    with pytest.raises(SystemExit):
        fr.parse_path("nonsense")


def test_split_nested_keeps_generator_colons(fr):
    assert fr.split_nested("nested:musk1:40") == ("musk1", 40)
    assert fr.split_nested("nested:gen:multiclass?classes=2&bags=200&seed=1:150") == \
        ("gen:multiclass?classes=2&bags=200&seed=1", 150)


def test_nested_instances_clamp_dedupe_and_order(fr):
    insts = fr.nested_instances(["musk1", "gen:multiclass?classes=2&bags=30&seed=1"], ["20", "40", "92", "100"])
    # sizes past a data set's bag count run once, on all of its bags; smallest sizes first
    assert insts == ["nested:musk1:20", "nested:gen:multiclass?classes=2&bags=30&seed=1:20",
                     "nested:gen:multiclass?classes=2&bags=30&seed=1:30", "nested:musk1:40", "nested:musk1:92"]
    assert fr.nested_instances(["musk1@20/92", "musk2"], ["40", "200"]) == \
        ["nested:musk1:20", "nested:musk2:40", "nested:musk1:92", "nested:musk2:102"]


def test_nested_subsets_are_nested_and_balanced(fr):
    import numpy as np

    spec = "gen:multiclass?classes=2&bags=40&seed=1"
    a, b = fr.nested_subset(spec, 10), fr.nested_subset(spec, 20)
    assert a.n_bags == 10 and b.n_bags == 20 and int(a.y.sum()) == 5 and int(b.y.sum()) == 10
    # every row of the smaller subset is a row of the larger one
    rows_b = {tuple(np.round(r, 12)) for r in b.X}
    assert all(tuple(np.round(r, 12)) in rows_b for r in a.X)
    assert fr.nested_subset(spec, 400).n_bags == 40


def test_cells(fr):
    assert fr.cell({"termination": "optimal", "wall_time": 12.34, "nodes": 1234}) == "**12.3 s**, 1,234 nodes"
    assert fr.cell({"termination": "time_limit", "gap": 0.1234, "objective": 1.0, "bound": 0.8766, "nodes": 7,
                    "time_limit": 120.0}) == "gap 12.3 % at 120 s, 7 nodes"
    assert fr.cell({"termination": "licence_limit", "error": "cplex: ..."}) == "over the free edition's size limit"
    msg = ("cplex: the installed CPLEX Community Edition takes at most 1,000 variables and 1,000 constraints; "
           "this instance has 765 variables and 1,497 constraints; install ...")
    assert fr.cell({"termination": "licence_limit", "error": msg}) == \
        "over the free edition's size limit (765 variables and 1,497 rows)"
    assert fr.cell({"termination": "time_limit", "gap": 1.0, "objective": 1.0, "bound": 0.0, "nodes": 1,
                    "time_limit": 120.0}) == "gap 100 % at 120 s, 1 node"
    assert fr.cell({"termination": "time_limit", "gap": 2e21, "objective": 1.0, "bound": -1e20, "nodes": 0,
                    "time_limit": 120.0}).startswith("no bound")
    assert fr.cell({"termination": "time_limit", "objective": None, "bound": None, "time_limit": 5.0}) \
        .startswith("no incumbent")
    assert fr.cell(None) == "not run"
    assert fr.final_gap({"gap": 0.5, "objective": 1.0, "bound": 0.5}) == 0.5
    assert fr.final_gap({"gap": math.inf, "objective": 1.0, "bound": 0.5}) is None


def test_table_and_plot_from_saved_runs(fr, tmp_path):
    pytest.importorskip("matplotlib")
    rows = [
        {"instance": "nested:musk1:20", "path": "bnb", "termination": "optimal", "wall_time": 3.0, "nodes": 200,
         "bags": 20, "instances": 157, "time_limit": 120.0},
        {"instance": "nested:musk1:20", "path": "cplex-warm", "termination": "time_limit", "gap": 0.5,
         "objective": 1.0, "bound": 0.5, "nodes": 9, "bags": 20, "instances": 157, "time_limit": 120.0},
        {"instance": "nested:musk2:40", "path": "cplex-warm", "termination": "licence_limit", "bags": 40,
         "instances": 1477, "time_limit": 120.0},
        {"instance": "nested:musk2:40", "path": "bnb", "termination": "time_limit", "gap": 0.6, "objective": 1.0,
         "bound": 0.4, "nodes": 50, "bags": 40, "instances": 1477, "time_limit": 120.0},
    ]
    first = tmp_path / "a.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows) + json.dumps({"meta": {"commit": "x"}}) + "\n")
    # a later file re-measures one cell (the bnb column on MUSK2 40)
    second = tmp_path / "b.jsonl"
    second.write_text(json.dumps({**rows[3], "termination": "optimal", "wall_time": 99.0, "nodes": 51}) + "\n")
    got, meta = fr.read_rows([str(first), str(second)])
    assert len(got) == 4 and meta == [{"commit": "x"}]
    md = fr.table(got, ["bnb", "cplex-warm"]).splitlines()
    assert md[0] == "| data | bags / instances | bnb | cplex-warm |"
    assert md[2] == "| MUSK1 | 20 / 157 | **3.0 s**, 200 nodes | gap 50 % at 120 s, 9 nodes |"
    assert md[3] == "| MUSK2 | 40 / 1,477 | **99.0 s**, 51 nodes | over the free edition's size limit |"
    png = tmp_path / "f.png"
    fr.plot(got, ["bnb", "cplex-warm"], str(png), 120.0)
    assert png.stat().st_size > 1000


@pytest.mark.slow
def test_one_real_run_end_to_end(tmp_path):
    """The script itself, one bnb run on the nested 8-bag MUSK1 subset: a proof (27 nodes), the
    JSON-lines record and the Markdown table."""
    out = tmp_path / "runs.jsonl"
    p = subprocess.run([sys.executable, SCRIPT, "--paths", "bnb", "--nested", "musk1", "--sizes", "8",
                        "--time-limit", "20", "--out", str(out), "--markdown"], capture_output=True, text=True,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    run = [r for r in recs if "meta" not in r]
    assert len(run) == 1 and run[0]["termination"] == "optimal" and run[0]["bags"] == 8
    assert any("meta" in r and r["meta"]["uptime_start"] for r in recs)
    assert "| MUSK1 | 8 / 37 | **" in p.stdout
    # a second call skips the run already recorded
    p2 = subprocess.run([sys.executable, SCRIPT, "--paths", "bnb", "--nested", "musk1", "--sizes", "8",
                         "--out", str(out), "--markdown"], capture_output=True, text=True, timeout=120, check=False)
    assert p2.returncode == 0 and "| MUSK1 | 8 / 37 | **" in p2.stdout
    assert sum("meta" not in json.loads(line) for line in out.read_text().splitlines()) == 1
