"""Grade the proven instances of the MIL instance library easy or hard from a benchmark run.

    milopt bench --suite PROVED --solvers highs,scip,ipopt,scip-native,bnb --jobs 2 --time-limit 12 --out grade-run
    python benchmarks/library_grade.py grade-run --easy-seconds 10 [--update]

(PROVED: the comma list of the easy and hard instances.)

MIPLIB 2017 grades by what solvers prove within a stated time on stated hardware.  Here an
instance is **easy** when *every* free backend of milopt that can take it (HiGHS, SCIP, Ipopt,
``scip-native``, ``bnb``: those the bench gives it) solved it, verified, within 1/``fraction``
of the run's time limit (default 1/6: 10 s of a 60-s limit) -- a safety factor for slower
or busier machines; a proven instance that misses this is **hard**.  A backend that refuses an
instance (``unsupported``: ``bnb`` on non-MI-SVM models) does not count.  Open instances stay
open.  Prints every instance that is not easy with the reason (which backend, what outcome,
how long), then the counts; ``--update`` rewrites the catalogue's ``status`` column.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace


def grade(df, fraction: float, easy_seconds: float | None = None):
    """``{instance: (easy?, slowest seconds, reasons)}`` from a bench run's table: easy when every
    backend given the instance solved it within ``easy_seconds`` (default: its time limit / ``fraction``)."""
    out = {}
    for inst, g in df.groupby("instance"):
        reasons, slowest = [], 0.0
        given = g[g["outcome"] != "unsupported"]
        for _, r in given.iterrows():
            tl = float(r["time_limit"])
            limit = easy_seconds if easy_seconds is not None else tl / fraction
            t = float(r["time"]) if r["time"] == r["time"] else float("inf")
            if not bool(r["solved"]):     # verified, within its limit, no worse than the best known value
                why = str(r.get("failure") or "") or f"{r['outcome']} {r['termination']}"
                reasons.append(f"{r['contender']}: {why}")
            elif t > limit:
                reasons.append(f"{r['contender']}: {t:.1f} s > {limit:g} s")
            slowest = max(slowest, t)
        out[inst] = (not reasons and not given.empty, slowest, reasons)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", help="folder of a milopt bench --suite run")
    ap.add_argument("--fraction", type=float, default=6.0, help="easy: every backend within limit/FRACTION (6)")
    ap.add_argument("--easy-seconds", type=float, default=None,
                    help="easy: every backend within this many seconds (default: the run's limit / FRACTION); "
                         "lets a run with a short limit (e.g. --time-limit 12) grade for 10 s of a 60-s limit")
    ap.add_argument("--update", action="store_true", help="rewrite the catalogue's status column")
    args = ap.parse_args(argv)
    from milopt.bench.assess import assess
    from milopt.bench.library import load_catalogue, solu_path, write_catalogue
    from milopt.bench.runs import load_runs
    from milopt.bench.solu import read_solu_full

    df = assess(load_runs(args.run), read_solu_full(solu_path()))
    g = grade(df, args.fraction, args.easy_seconds)
    cat = load_catalogue()
    new, counts = [], {"easy": 0, "hard": 0, "open": 0}
    for inst in cat:
        status = inst.status
        if inst.name in g and status in ("easy", "hard"):
            easy, slowest, reasons = g[inst.name]
            status = "easy" if easy else "hard"
            if not easy:
                print(f"{inst.name:36s} hard: " + "; ".join(reasons))
        counts[status] += 1
        new.append(replace(inst, status=status))
    print(f"\n{counts['easy']} easy, {counts['hard']} hard, {counts['open']} open ({len(cat)} instances; graded from "
          f"{len(g)} instances of {args.run})")
    if args.update:
        write_catalogue(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
