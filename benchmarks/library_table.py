"""Markdown tables of the MIL instance library (for docs/library.md).

    milopt export-library lib --formats mps && python benchmarks/library_table.py --manifest lib/manifest.json

Prints the instance table (name, class, sizes from the status runs, data, status, best known
objective and bound from instances/milopt.solu, proof time and solver) and the library's size
by class and status.  Model sizes come from the manifest ``milopt export-library`` writes
(``--manifest``) or from a status run's table (``--runs``).
"""
from __future__ import annotations

import argparse
import collections
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default=None)
    ap.add_argument("--manifest", action="append", default=[], help="manifest.json (repeatable)")
    args = ap.parse_args(argv)
    from milopt.bench.library import load_catalogue, solu_path
    from milopt.bench.runs import load_runs
    from milopt.bench.solu import read_solu_full

    cat = load_catalogue()
    solu = read_solu_full(solu_path())
    size = {}
    if args.runs:
        df = load_runs(args.runs)
        for inst, g in df.groupby("instance"):
            r = g.iloc[0]
            size[inst] = {k: r.get(k) for k in ("variables", "binaries", "constraints", "nonzeros", "bags", "instances")}

    import json

    for mpath in args.manifest:
        for e in json.load(open(mpath))["instances"]:
            size[e["name"]] = {"variables": e["columns"], "binaries": e["binaries"], "constraints": e["rows"],
                               "nonzeros": e["nonzeros"], "bags": e["data_size"]["bags"],
                               "instances": e["data_size"]["instances"], "qnz": e.get("quadratic_nonzeros")}

    def n(v):
        try:
            return f"{int(v):,}"
        except (TypeError, ValueError):
            return "-"

    def num(v):
        return "-" if v is None else f"{v:.10g}"

    print("| instance | class | columns | binaries | rows | nonzeros | Q nonzeros | bags / instances | status | "
          "best known | bound | proof |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i in cat:
        s = size.get(i.name, {})
        e = solu.get(i.name, {})
        kind = e.get("kind")
        best = f"{'=opt=' if kind == 'opt' else '=best='} {num(e.get('value'))}" if kind in ("opt", "best") else "-"
        bound = num(e.get("bound")) if kind != "opt" else "(= opt)"
        proof = f"{i.proof_seconds:.1f} s {i.proof_solver}" if i.proof_seconds is not None else "-"
        bench = " (B)" if i.benchmark else ""
        print(f"| `{i.name}`{bench} | {i.problem_class or '?'} | {n(s.get('variables'))} | {n(s.get('binaries'))} | "
              f"{n(s.get('constraints'))} | {n(s.get('nonzeros'))} | {n(s.get('qnz'))} | "
              f"{n(s.get('bags'))} / {n(s.get('instances'))} | "
              f"{i.status} | {best} | {bound} | {proof} |")
    by = collections.Counter((i.problem_class or "?", i.status) for i in cat)
    print("\n| class | easy | hard | open | total |\n|---|---|---|---|---|")
    for c in sorted({c for c, _ in by}):
        row = [by[(c, s)] for s in ("easy", "hard", "open")]
        print(f"| {c} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    tot = [sum(v for (c, s), v in by.items() if s == st) for st in ("easy", "hard", "open")]
    print("| all | " + " | ".join(map(str, tot)) + f" | {sum(tot)} |")
    bench = [i for i in cat if i.benchmark]
    bc = collections.Counter(i.problem_class for i in bench)
    print(f"\nbenchmark suite: {len(bench)} instances (" + ", ".join(f"{c} {v}" for c, v in sorted(bc.items())) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
