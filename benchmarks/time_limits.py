"""Do time limits bound the wall time of a whole ``milopt`` command?

Runs each case as a separate ``milopt ... --json`` process and prints, per case: the limit,
the process wall time (measured here, start-up included), the solver's own time, the build
time, and the ratio wall / limit.  The contract is: wall <= 1.1 * limit, process start-up
included (``milopt solve`` starts its budget at its process's start).  Start-up is also
printed, as the wall time of a Python process that only imports what a solve imports (milopt,
Pyomo, scikit-learn, scipy and the solver modules), to show how loaded the machine is.

Usage::

    python benchmarks/time_limits.py                 # the three cases
    python benchmarks/time_limits.py --milopt /path/to/milopt   # another installation (before/after)
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time

CASES = [
    ("misvm-bigm bnb musk1", ["solve", "misvm-bigm", "--data", "musk1", "--solver", "bnb", "--time-limit", "10"], 10.0),
    ("misvm-bigm scip", ["solve", "misvm-bigm", "--data", "musk2", "--solver", "scip", "--time-limit", "10"], 10.0),
    ("misvm-dual-qp rbf ipopt", ["solve", "misvm-dual-qp", "--data", "musk2", "--set", "kernel=rbf", "--solver", "ipopt",
                                 "--time-limit", "5"], 5.0),
]


def run(cmd, timeout):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - t0, p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--milopt", default=shutil.which("milopt") or "milopt", help="the milopt executable to time")
    ap.add_argument("--only", default=None, help="run only the cases whose name contains this text")
    args = ap.parse_args(argv)
    start, _ = run([sys.executable, "-c", "import milopt.cli, milopt.runner, milopt.metrics, milopt.solvers.exporter, "
                    "milopt.solvers.highs_backend, milopt.solvers.scip_backend, milopt.models, pyomo.environ, pyscipopt, cyipopt"], 300)
    print(f"process start-up (python and the imports of a solve: milopt, pyomo, scikit-learn, scipy, solvers): "
          f"{start:.1f} s")
    print(f"{'case':26s} {'limit':>6s} {'wall':>7s} {'solver':>7s} {'build':>7s} {'wall/limit':>10s} "
          f"{'(wall-start-up)/limit':>21s}  termination")
    for name, argv_, limit in CASES:
        if args.only and args.only not in name:
            continue
        wall, p = run([args.milopt, *argv_, "--json"], 1200)
        try:
            res = json.loads(p.stdout)
        except json.JSONDecodeError:
            print(f"{name:26s} {limit:6.0f} {wall:7.1f}  (no JSON; exit {p.returncode}: {p.stderr.strip()[-200:]})")
            continue
        print(f"{name:26s} {limit:6.0f} {wall:7.1f} {res.get('wall_time') or 0:7.1f} {res.get('build_seconds') or 0:7.1f} "
              f"{wall / limit:10.2f} {(wall - start) / limit:21.2f}  {res.get('termination')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
