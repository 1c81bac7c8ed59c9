"""The lint gate: ``ruff check`` (pyflakes' errors and syntax errors, configured in
``pyproject.toml``) over the package, the formulations, the tests, the benchmark scripts, the
gallery and the docs' extensions.  An unused import, an unused variable or an undefined name
fails the test run, with ruff's report in the message."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = ["milopt", "instances", "tests", "benchmarks", "examples", "docs"]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *TREES], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ruff check {' '.join(TREES)}:\n{r.stdout}{r.stderr}"


def test_the_gate_can_fail(tmp_path):
    pytest.importorskip("ruff", reason="ruff is in the test extra")
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                        str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "F401" in r.stdout
