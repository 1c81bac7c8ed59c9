"""benchmarks/bnb_cpath.py: the warm-started C path certifies the same optima as independent
solves, and neighbouring optima obey v(C1) <= v(C2) <= (C2 / C1) v(C1)."""
import json

import pytest
from benchmark_script import load_benchmark


def test_path_and_independent_solves_agree(capsys):
    bench = load_benchmark("bnb_cpath")
    bench.main(["--data", "gen:digits?bags=14&seed=5", "--Cs", "1,0.3,3", "--set", "kick_seconds=0.2", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["Cs"] == [0.3, 1.0, 3.0]
    path = {r["C"]: r for r in doc["rows"] if r["mode"] == "path"}
    alone = {r["C"]: r for r in doc["rows"] if r["mode"] == "independent"}
    assert set(path) == set(alone) == {0.3, 1.0, 3.0}
    for C in path:
        assert path[C]["termination"] == alone[C]["termination"] == "optimal"
        assert path[C]["objective"] == pytest.approx(alone[C]["objective"], rel=1e-4, abs=1e-7)
        assert path[C]["cpu"] > 0 and path[C]["incumbent_cpu"] is not None
    assert len(doc["checks"]) == 2 and all(c["holds"] for c in doc["checks"])
