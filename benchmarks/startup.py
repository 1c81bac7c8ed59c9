"""Whole-command cost of ``milopt export misvm-bigm --data musk2 -o f.mps`` against writing the
same problem from scipy.sparse through highspy directly, measured process to process.

* ``milopt``: a fresh process running the CLI (imports, loading MUSK2, feature
  standardisation, the Pyomo build, matrix extraction, the highspy writer);
* ``direct``: a fresh process that imports only numpy, scipy.sparse and highspy, reads the same
  CSV with numpy, standardises it, assembles the same MIQP (big-M MI-SVM, Kent & Yu eq. 5,
  with the provably valid per-instance big-M and the ``kent-yu`` class weights, the same
  columns and rows) with scipy.sparse, and writes it with ``Highs.writeModel``.

Both files are re-read by highspy and compared (same number of rows, columns, nonzeros and
the same objective of the trivial point), so the two processes do the same work.  Each side
runs ``--repeat`` times (alternating); the medians and the ratio milopt / direct are printed
(target: at most 3).  The 1-minute load average is printed because the machine is shared.

Usage::

    python benchmarks/startup.py [--repeat 3] [--data musk2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

DIRECT = r'''
import gzip, sys
import numpy as np
import scipy.sparse as sp
import highspy

path, out = sys.argv[1], sys.argv[2]
with gzip.open(path, "rt") as fh:
    D = np.loadtxt(fh, delimiter=",")
lab, bag_id, X = D[:, 0], D[:, 1], D[:, 2:]
# bags are contiguous runs of equal bag id
starts = np.flatnonzero(np.r_[True, bag_id[1:] != bag_id[:-1]])
sizes = np.diff(np.r_[starts, len(bag_id)])
y = (lab[starts] > 0).astype(int)
mean = X.mean(axis=0)
sd = np.sqrt(((X - mean) ** 2).mean(axis=0))
sd[sd < 10 * np.finfo(float).eps * np.maximum(1.0, np.abs(mean))] = 1.0
X = (X - mean) / sd
m = bigm_arrays(X, np.repeat(np.arange(sizes.size), sizes), y)
ncol, d = m["c"].size, m["d"]
Q = sp.csc_matrix((np.ones(d), (np.arange(d), np.arange(d))), shape=(ncol, ncol))
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.passModel(highs_model(m["c"], m["A"], m["row_lb"], m["row_ub"], m["col_lb"], m["col_ub"], m["integrality"], Q))
h.writeModel(out)
'''


def direct_source() -> str:
    """The direct script: the matrix assembly and the highspy model of ``writer_speed.py``
    (their source, so that the process imports nothing from milopt or the benchmarks)."""
    import inspect

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import writer_speed

    head, _, tail = DIRECT.partition("path, out = ")
    return (head + "\n\n" + inspect.getsource(writer_speed.bigm_arrays) + "\n\n" +
            inspect.getsource(writer_speed.highs_model) + "\n\npath, out = " + tail)


def _run(cmd) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return wall


def _shape(path):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(path)
    lp = h.getLp()
    return lp.num_col_, lp.num_row_, len(lp.a_matrix_.value_)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default="musk2")
    args = ap.parse_args(argv)
    from importlib import resources

    csv = str(resources.files("milopt.instances") / f"{args.data}.csv.gz")
    with tempfile.TemporaryDirectory() as tmp:
        direct_py = os.path.join(tmp, "direct.py")
        with open(direct_py, "w") as fh:
            fh.write(direct_source())
        f_m, f_d = os.path.join(tmp, "milopt.mps"), os.path.join(tmp, "direct.mps")
        cli = [sys.executable, "-m", "milopt.cli", "export", "misvm-bigm", "--data", args.data, "-o", f_m]
        direct = [sys.executable, direct_py, csv, f_d]
        tm, td = [], []
        for _ in range(args.repeat):
            tm.append(_run(cli))
            td.append(_run(direct))
        sm, sd = _shape(f_m), _shape(f_d)
        if sm != sd:
            sys.exit(f"the two files differ in size: milopt {sm} vs direct {sd} (columns, rows, nonzeros)")
    m, d = statistics.median(tm), statistics.median(td)
    print(f"data={args.data} columns,rows,nonzeros={sm} repeat={args.repeat} load1={os.getloadavg()[0]:.2f}")
    print(f"milopt export  median {m:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in tm)})")
    print(f"direct highspy median {d:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in td)})")
    print(f"ratio milopt/direct = {m / d:.2f}  (target <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
