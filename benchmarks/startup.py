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
ptr = np.r_[starts, len(bag_id)]
y = (lab[starts] > 0).astype(int)
mean = X.mean(axis=0)
sd = np.sqrt(((X - mean) ** 2).mean(axis=0))
sd[sd < 10 * np.finfo(float).eps * np.maximum(1.0, np.abs(mean))] = 1.0
X = (X - mean) / sd
n, d = X.shape
B = ptr.size - 1
sizes = np.diff(ptr)
bag = np.repeat(np.arange(B), sizes)
pos = y == 1
inst_pos = pos[bag]
# kent-yu costs, C = 1
n_neg_inst = int((~inst_pos).sum())
costs = np.where(pos, 1.0, pos.sum() / max(n_neg_inst, 1))
# valid big-M: W (||z_i - c_I|| + max_k ||z_k - c_I||), W = sqrt(2 F0)
F0 = min(costs.sum(), 2 * costs[pos].sum(), 2 * costs[~pos].sum())
cent = np.add.reduceat(X, ptr[:-1], axis=0) / sizes[:, None]
dist = np.linalg.norm(X - np.repeat(cent, sizes, axis=0), axis=1)
L = np.sqrt(2 * F0) * (dist + np.repeat(np.maximum.reduceat(dist, ptr[:-1]), sizes))
zrows = np.flatnonzero(inst_pos & (sizes[bag] >= 2))
nz = zrows.size
ncol = d + 1 + B + nz
sign = np.where(inst_pos, 1.0, -1.0)
A1 = sp.hstack([sp.csr_matrix(X * sign[:, None]), sp.csr_matrix(sign[:, None]),
                sp.csr_matrix((np.ones(n), (np.arange(n), bag)), shape=(n, B)),
                sp.csr_matrix((L[zrows], (zrows, np.arange(nz))), shape=(n, nz))], format="csr")
cb = np.unique(bag[zrows])
A2 = sp.csr_matrix((np.ones(nz), (np.searchsorted(cb, bag[zrows]), d + 1 + B + np.arange(nz))), shape=(cb.size, ncol))
A = sp.vstack([A1, A2], format="csc")
row_lb = np.r_[np.ones(n), np.full(cb.size, -np.inf)]
row_ub = np.r_[np.full(n, np.inf), sizes[cb] - 1.0]
col_lb = np.r_[np.full(d + 1, -np.inf), np.zeros(B + nz)]
col_ub = np.r_[np.full(d + 1 + B, np.inf), np.ones(nz)]
c = np.r_[np.zeros(d + 1), costs, np.zeros(nz)]
lp = highspy.HighsLp()
lp.num_col_, lp.num_row_ = ncol, A.shape[0]
lp.col_cost_, lp.col_lower_, lp.col_upper_ = c, col_lb, col_ub
lp.row_lower_, lp.row_upper_ = row_lb, row_ub
lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = ncol, A.shape[0]
lp.integrality_ = [highspy.HighsVarType.kContinuous] * (d + 1 + B) + [highspy.HighsVarType.kInteger] * nz
hess = highspy.HighsHessian()
hess.dim_, hess.format_ = ncol, highspy.HessianFormat.kTriangular
hess.start_ = np.r_[np.arange(d + 1), np.full(ncol - d + 0, d)].astype(np.int32)
hess.index_ = np.arange(d, dtype=np.int32)
hess.value_ = np.ones(d)
model = highspy.HighsModel()
model.lp_, model.hessian_ = lp, hess
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.passModel(model)
h.writeModel(out)
'''


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
            fh.write(DIRECT)
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
