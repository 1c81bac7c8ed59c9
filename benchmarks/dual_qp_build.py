"""Build and extraction time of the misvm-dual-qp forms (matrix, factor, dense).

Prints, per data set, kernel and form: the seconds to build the Pyomo model, the seconds to
extract its matrix form (what Ipopt, SCIP native and the exporter read), and the model size.

Usage::

    python benchmarks/dual_qp_build.py musk1            # all five kernel/form pairs
    python benchmarks/dual_qp_build.py musk2 --forms linear:factor rbf:matrix
"""
from __future__ import annotations

import argparse
import time

from milopt.data import load
from milopt.metrics import standardize
from milopt.models import misvm_dual_qp as mod
from milopt.solvers.extract import extract

PAIRS = ["linear:factor", "linear:matrix", "rbf:matrix", "rbf:factor", "rbf:dense"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", default="musk1")
    ap.add_argument("--forms", nargs="+", default=PAIRS, metavar="KERNEL:FORM")
    args = ap.parse_args(argv)
    b = standardize(load(args.data))
    print(f"{'data':6s} {'kernel':6s} {'form':7s} {'build s':>8s} {'extract s':>9s} {'variables':>9s} {'rows':>6s} "
          f"{'lin. nnz':>9s} {'quad. nnz':>11s}")
    for pair in args.forms:
        kernel, form = pair.split(":")
        t = time.perf_counter()
        m = mod.build(b, kernel=kernel, form=form)
        tb = time.perf_counter() - t
        t = time.perf_counter()
        sz = extract(m).size()
        te = time.perf_counter() - t
        print(f"{args.data:6s} {kernel:6s} {form:7s} {tb:8.1f} {te:9.1f} {sz['variables']:9d} {sz['constraints']:6d} "
              f"{sz['nonzeros']:9d} {sz['quadratic_nonzeros']:11d}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
