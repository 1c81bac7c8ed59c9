"""Time of milopt's own ``.mps`` / ``.lp`` writers against highspy's ``passModel`` +
``writeModel`` on the same problem: the MI-SVM big-M MIQP of MUSK2 (Kent & Yu's
formulation with its valid big-M; 1,286 columns, 6,637 rows, ~1.1M nonzeros), built straight
from the standardised data with scipy (no Pyomo).

``--q dense`` replaces the model's Hessian (the identity on ``w``) by a dense random positive
semi-definite block over ``w`` (166 × 166, 13,861 lower-triangle entries) to time a dense
``QUADOBJ`` section as well.

Each timing is the median of ``--repeat`` runs in this process; both sides include formatting
and writing the file (to a temporary directory).  Printed: one line per format with milopt's
and highspy's wall and CPU seconds, their ratios (milopt / highspy) and the file sizes; then
``uptime``'s load.  CPU seconds are the steadier figure on a shared machine.  highspy 1.16
writes a file named ``.mps.gz`` uncompressed, so the ``.gz`` line shows milopt alone.

    python benchmarks/writer_speed.py [--repeat 5] [--data musk2] [--q identity|dense]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp


def bigm_arrays(X, bag, y):
    """The big-M MI-SVM MIQP (Kent & Yu eq. 5; C = 1, ``kent-yu`` costs, the provably valid
    per-instance big-M) of standardised instances ``X`` (bags contiguous, ``bag[i]`` the bag of
    instance i) with bag labels ``y``, from numpy and scipy.sparse alone.

    Columns ``w`` (d), ``b``, ``xi`` (one per bag), ``z`` (one per instance of a positive bag
    with at least two instances); rows: one margin row per instance, one cardinality row per
    bag holding z columns.  ``benchmarks/startup.py`` runs this function's source in a process
    that imports nothing from milopt.  Returns a dict of the arrays and index sets."""
    n, d = X.shape
    B = int(bag.max()) + 1
    sizes = np.bincount(bag, minlength=B)
    ptr = np.r_[0, np.cumsum(sizes)]
    pos = y == 1
    inst_pos = pos[bag]
    n_neg = int((~inst_pos).sum())
    costs = np.where(pos, 1.0, pos.sum() / max(n_neg, 1))
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
    A2 = sp.csr_matrix((np.ones(nz), (np.searchsorted(cb, bag[zrows]), d + 1 + B + np.arange(nz))),
                       shape=(cb.size, ncol))
    return {"d": d, "B": B, "zrows": zrows, "cb": cb, "c": np.r_[np.zeros(d + 1), costs, np.zeros(nz)],
            "A": sp.vstack([A1, A2], format="csr"),
            "row_lb": np.r_[np.ones(n), np.full(cb.size, -np.inf)], "row_ub": np.r_[np.full(n, np.inf), sizes[cb] - 1.0],
            "col_lb": np.r_[np.full(d + 1, -np.inf), np.zeros(B + nz)],
            "col_ub": np.r_[np.full(d + 1 + B, np.inf), np.ones(nz)],
            "integrality": np.r_[np.zeros(d + 1 + B, bool), np.ones(nz, bool)]}


def highs_model(c, A, row_lb, row_ub, col_lb, col_ub, integrality, Q, names=None):
    """A ``highspy.HighsModel`` of the problem (column-wise ``A``, lower triangle of ``Q``,
    ``names`` = (column names, row names) when given); ``benchmarks/startup.py`` runs this
    function's source too."""
    import highspy

    Ac = sp.csc_matrix(A)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = Ac.shape[1], Ac.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = c, col_lb, col_ub
    lp.row_lower_, lp.row_upper_ = row_lb, row_ub
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = Ac.indptr, Ac.indices, Ac.data
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = Ac.shape[1], Ac.shape[0]
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integrality]
    if names is not None:
        lp.col_names_, lp.row_names_ = list(names[0]), list(names[1])
    Lq = sp.tril(Q, format="csc")
    hess = highspy.HighsHessian()
    hess.dim_, hess.format_ = Ac.shape[1], highspy.HessianFormat.kTriangular
    hess.start_, hess.index_, hess.value_ = Lq.indptr, Lq.indices, Lq.data
    model = highspy.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    return model


def bigm_form(data: str = "musk2", q: str = "identity"):
    """The MI-SVM big-M MIQP (C = 1) of ``data`` as a MatrixForm (scipy only)."""
    from milopt.data import load
    from milopt.matrix import MatrixForm
    from milopt.metrics import standardize

    bags = standardize(load(data))
    m = bigm_arrays(np.asarray(bags.X, float), np.asarray(bags.bag_index), np.asarray(bags.y))
    d, ncol = m["d"], m["c"].size
    if q == "dense":
        rng = np.random.default_rng(0)
        G = rng.standard_normal((d, d)) / np.sqrt(d)
        Qw = G @ G.T + np.eye(d)
    else:
        Qw = np.eye(d)
    Q = sp.block_diag([sp.csc_matrix(Qw), sp.csc_matrix((ncol - d, ncol - d))], format="csc")
    return MatrixForm(
        c=m["c"], c0=0.0, Q=Q, A=m["A"], row_lb=m["row_lb"], row_ub=m["row_ub"], col_lb=m["col_lb"],
        col_ub=m["col_ub"], integrality=m["integrality"],
        col_names=[f"w[{j}]" for j in range(d)] + ["b"] + [f"xi[{i}]" for i in range(m["B"])] +
                  [f"z[{i}]" for i in m["zrows"]],
        row_names=[f"margin[{i}]" for i in range(m["A"].shape[0] - m["cb"].size)] + [f"card[{i}]" for i in m["cb"]],
        comment=f"MI-SVM big-M MIQP, {data}, C=1, Q={q}")


def highs_write(mf, path):
    """passModel + writeModel of the same problem through highspy (its banner silenced)."""
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        model = highs_model(mf.c, mf.A, mf.row_lb, mf.row_ub, mf.col_lb, mf.col_ub, mf.integrality, mf.Q,
                            (mf.col_names, mf.row_names))
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.passModel(model)
        h.writeModel(str(path))
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def timed(fn, repeat):
    """Median wall and CPU seconds of ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default="musk2")
    ap.add_argument("--q", choices=("identity", "dense"), default="identity")
    args = ap.parse_args(argv)
    from milopt.io import write

    mf = bigm_form(args.data, args.q)
    s = mf.size()
    print(f"{args.data} big-M MIQP: {s['variables']} columns, {s['constraints']} rows, {s['nonzeros']} nonzeros, "
          f"{s['quadratic_nonzeros']} Hessian entries (lower triangle), Q={args.q}; median of {args.repeat}")
    print(f"{'format':7} {'milopt wall':>11} {'highspy wall':>12} {'ratio':>6} {'milopt cpu':>10} {'highspy cpu':>11} "
          f"{'ratio':>6} {'milopt MB':>9} {'highspy MB':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("mps", "lp"):
            ours = os.path.join(tmp, f"ours.{fmt}")
            theirs = os.path.join(tmp, f"highs.{fmt}")
            wo, co = timed(lambda: write(mf, ours), args.repeat)
            wh, ch = timed(lambda: highs_write(mf, theirs), args.repeat)
            print(f"{fmt:7} {wo:11.3f} {wh:12.3f} {wo / wh:6.2f} {co:10.3f} {ch:11.3f} {co / ch:6.2f} "
                  f"{os.path.getsize(ours) / 1e6:9.1f} {os.path.getsize(theirs) / 1e6:10.1f}")
        # highspy writes a file named .gz uncompressed: only milopt's time is shown
        ours = os.path.join(tmp, "ours.mps.gz")
        wo, co = timed(lambda: write(mf, ours), args.repeat)
        print(f"{'mps.gz':7} {wo:11.3f} {'-':>12} {'-':>6} {co:10.3f} {'-':>11} {'-':>6} "
              f"{os.path.getsize(ours) / 1e6:9.1f} {'-':>10}")
    print("load:", os.popen("uptime").read().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
