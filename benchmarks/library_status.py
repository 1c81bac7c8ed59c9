"""Compute the status of every instance of the MIL instance library (instances/library.csv).

    python benchmarks/library_status.py --time-limit 60 --out status-run [--suite all] [--update]

Solves every instance of the suite through the bench harness (one isolated process per run,
hard wall-clock limit, answers verified against the model) with the free solvers of the
project, by class: LP -> HiGHS; QP -> HiGHS and Ipopt (a cross-check: a wrong "optimal" is
caught by a better verified point of the other solver); MILP -> HiGHS and SCIP; MIQP -> SCIP and
milopt's own branch and bound ``bnb`` (MI-SVM, norm l2 only; it refuses the others); SOS1 -> SCIP;
indicator constraints -> SCIP.  ``--solvers`` overrides the choice.  Relative gap 1e-7 (``--gap``; a proof
needs 1e-4).

Status of an instance (MIPLIB 2017 convention):
* easy: a verified run proved optimality (reported gap <= 1e-4, the library's PROOF_GAP, and no
  verified point of any run better by more than 1e-6 relative) within 60 s of solver time;
* hard: proven, but only by a run slower than 60 s (needs --time-limit > 60);
* open: no proof.

``--update`` rewrites the catalogue's computed columns (class, sha256 of the .mps as milopt
writes it, status, proof_seconds, proof_solver) and merges the values into instances/milopt.solu
(=opt= with a proof, =best= otherwise, =bestdual= the best dual bound of an unproven instance).
A proof already recorded is kept unless a run contradicts it; the run of a new proof is recorded in
instances/certificates.csv (solver, version, seconds, nodes, load; benchmarks/library_solutions.py then
ships its point as a verified .sol and sets the .solu value to that point's objective).  Prints a table of the results
and the library's size by class and status.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import replace

from milopt.bench.certificates import BOUND_TOL, PROOF_GAP  # noqa: E402  (the library's tolerances)

STATUS_SOLVERS = {"LP": ["highs"], "QP": ["highs", "ipopt"], "MILP": ["highs", "scip"], "MIQP": ["scip", "bnb"]}
EASY_SECONDS = 60.0


def status_solvers(inst, cls):
    if "INDICATOR" in inst.features:
        return ["scip"]
    if "SOS" in inst.features:
        return ["scip"]
    return STATUS_SOLVERS.get(cls, ["scip"])


def decide(inst, g, sense, known):
    """(status, kind, value, bound, proof_seconds, proof_solver, notes) from the rows ``g`` of one instance."""
    sgn = -1.0 if sense == "maximize" else 1.0
    ok = g[(g["outcome"] == "ok") & (g["verified"] == "yes") & g["objective_recomputed"].notna()]
    notes = []
    for _, r in g[(g["outcome"] == "ok") & (g["verified"] == "no")].iterrows():
        notes.append(f"{r['contender']}: not verified ({r['verify_note']})")
    if ok.empty:
        kb = known.get(inst.name)
        return ("open", kb["kind"] if kb else None, kb["value"] if kb else None, kb.get("bound") if kb else None,
                None, "", notes + ["no verified solution in this run"])
    objs = ok["objective_recomputed"].astype(float)
    best = float(sgn * (sgn * objs).min())
    tol = BOUND_TOL * max(1.0, abs(best))
    # a bound is trusted when it does not cut off the best verified point
    bounds = []
    for _, r in ok.iterrows():
        b = r["bound"]
        if b is None or (isinstance(b, float) and math.isnan(b)):
            continue
        if sgn * (float(b) - best) > tol:
            notes.append(f"{r['contender']}: bound {float(b):.10g} beyond the best verified objective {best:.10g} "
                         "(ignored)")
            continue
        bounds.append(float(b))
    bound = float(sgn * max(sgn * b for b in bounds)) if bounds else None
    proofs = ok[(ok["termination"] == "optimal") & (ok["gap"].fillna(math.inf).astype(float) <= PROOF_GAP)]
    good = []
    for _, r in proofs.iterrows():
        if sgn * (float(r["objective_recomputed"]) - best) > tol:
            notes.append(f"{r['contender']}: claimed optimal at {float(r['objective_recomputed']):.10g}, but "
                         f"{best:.10g} is a verified better point (wrong optimum)")
            continue
        good.append(r)
    if good:
        first = min(good, key=lambda r: float(r["time"]))
        t, who = float(first["time"]), first["contender"]
        status = "easy" if t <= EASY_SECONDS else "hard"
        notes.append({"certificate": first})
        return status, "opt", best, best, t, who, notes
    kb = known.get(inst.name)
    if kb and kb["kind"] == "opt":
        if sgn * (best - kb["value"]) < -BOUND_TOL * max(1.0, abs(kb["value"])):
            notes.append(f"recorded optimum {kb['value']:.10g} is beaten by {best:.10g}: proof dropped")
        else:
            return (inst.status if inst.status in ("easy", "hard") else "hard", "opt", kb["value"], kb["value"],
                    inst.proof_seconds, inst.proof_solver, notes + ["proof kept from the catalogue"])
    if kb and kb["kind"] == "best" and kb["value"] is not None and sgn * kb["value"] < sgn * best:
        best = kb["value"]
    if kb and kb.get("bound") is not None and (bound is None or sgn * kb["bound"] > sgn * bound):
        bound = kb["bound"]
    return "open", "best", best, bound, None, "", notes


def sha_only(suite_name: str, update: bool) -> int:
    """Recompute the catalogue's .mps sha256 (and class, sense) of a suite without solving."""
    from milopt.bench.library import build, load_catalogue, mps_sha256, suite, write_catalogue
    from milopt.runner import objective_sense
    from milopt.solvers import classify

    chosen = {i.name for i in suite(suite_name)}
    out = []
    for inst in load_catalogue():
        if inst.name in chosen:
            t0 = time.time()
            model = build(inst)[0]
            cls = classify(model)[0]
            sense = objective_sense(model)
            del model
            sha = mps_sha256(inst)
            print(f"{inst.name:34s} {cls:5s} {sense:8s} {sha} {'same' if sha == inst.sha256_mps else 'CHANGED'} "
                  f"({time.time() - t0:.1f} s)", flush=True)
            inst = replace(inst, sha256_mps=sha, problem_class=cls, sense=sense)
        out.append(inst)
    if update:
        write_catalogue(out)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", default="library-status")
    ap.add_argument("--suite", default="all", help="suite or comma list of instance names")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--gap", type=float, default=1e-7, help="relative gap given to the solvers (default 1e-7)")
    ap.add_argument("--update", action="store_true", help="rewrite instances/library.csv and milopt.solu")
    ap.add_argument("--no-sha", action="store_true", help="do not compute the .mps sha256")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--sha-only", action="store_true", help="only recompute the .mps sha256 of the suite (no solve)")
    ap.add_argument("--solvers", default=None, help="comma list overriding the status solvers (e.g. bnb)")
    ap.add_argument("--options", default="", help="native options of the solvers, key=value,key=value "
                                                  "(e.g. workers=2 for bnb)")
    args = ap.parse_args(argv)
    if args.sha_only:
        return sha_only(args.suite, args.update)

    from milopt.bench.certificates import read_certificates, write_certificates
    from milopt.bench.harness import run_bench
    from milopt.bench.library import catalogue_path, load_catalogue, mps_sha256, solu_path, suite, write_catalogue
    from milopt.bench.runs import load_runs
    from milopt.bench.solu import read_solu_full, write_solu_full
    from milopt.models import available
    from milopt.runner import expected_class

    forms = available()
    chosen = {i.name: i for i in suite(args.suite)}
    classes = {}
    for i in chosen.values():
        classes[i.name] = i.problem_class or (expected_class(forms[i.formulation], i.params) or ("",))[0]
    want = {n: set(status_solvers(i, classes[n])) for n, i in chosen.items()}
    if args.solvers:
        want = {n: {x.strip() for x in args.solvers.split(",") if x.strip()} for n in chosen}
    cfg = {"name": "library-status", "suite": args.suite, "time_limit": args.time_limit, "gap": args.gap,
           "kill_after": 2 * args.time_limit + 60, "threads": 1,
           "suite_solvers": ["highs", "scip", "ipopt", "scip-native", "bnb"]}
    if args.options:
        from milopt.bench.library import parse_params

        opts = parse_params(args.options.replace(",", ";"), "--options")
        cfg["solvers"] = {s: {"options": dict(opts)} for s in (args.solvers or "").split(",") if s.strip()}
    t0 = time.time()
    load0 = os.getloadavg()[0]
    res = run_bench(cfg, args.out, jobs=args.jobs, resume=args.resume,
                    select=lambda r: r.spec["solver"] in want.get(r.spec["instance"], ()))
    print(f"{res['executed']} run(s) in {time.time() - t0:.0f} s ({res['failures']} not ok)", file=sys.stderr)
    df = load_runs(args.out)
    df = df[df["instance"].isin(list(chosen))]
    known = read_solu_full(solu_path())
    certs, new_certs = read_certificates(), {}
    cat = load_catalogue()
    new_cat, lines = [], []
    for inst in cat:
        if inst.name not in chosen:
            new_cat.append(inst)
            continue
        g = df[df["instance"] == inst.name]
        sense = (g["sense"].replace("", None).dropna().tolist() or ["minimize"])[0]
        cls = (g["problem_class"].replace("", None).dropna().tolist() or [classes[inst.name]])[0]
        status, kind, val, bound, secs, who, notes = decide(inst, g, sense, known)
        proof = [n["certificate"] for n in notes if isinstance(n, dict)]
        notes = [n for n in notes if not isinstance(n, dict)]
        if proof:   # the run that proved it: recorded with its version, time, nodes and the load
            r = proof[0]
            nodes = r.get("nodes")
            new_certs[inst.name] = {
                "name": inst.name, "kind": "opt", "value": f"{float(r['objective_recomputed']):.12g}",
                "bound": "" if r["bound"] is None or r["bound"] != r["bound"] else f"{float(r['bound']):.12g}",
                "gap": "" if r["gap"] is None or r["gap"] != r["gap"] else f"{float(r['gap']):.2e}",
                "how": "proved", "solver": r["contender"], "version": r.get("solver_version") or "",
                "seconds": f"{float(r['time']):.1f}", "nodes": "" if nodes is None or nodes != nodes else str(int(nodes)),
                "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}", "date": str(r.get("finished_at") or "")[:10]}
        if kind in ("opt", "best"):
            known[inst.name] = {"kind": kind, "value": val, "bound": bound}
        sha = inst.sha256_mps
        if not args.no_sha:
            try:
                sha = mps_sha256(inst)
            except Exception as exc:  # noqa: BLE001
                notes.append(f"sha256 not computed: {exc}")
        new_cat.append(replace(inst, problem_class=cls, sense=sense, status=status, proof_seconds=secs, proof_solver=who,
                               sha256_mps=sha))
        runs = "; ".join(f"{r['contender']} {r['outcome'] if r['outcome'] != 'ok' else r['termination']} "
                         f"{r['time']:.1f}s" for _, r in g.iterrows())
        lines.append((inst.name, cls, status, kind, val, bound, runs, notes))
        print(f"{inst.name:34s} {cls:5s} {status:5s} {kind or '-':4s} "
              f"{'-' if val is None else f'{val:.10g}':>16s} bound {'-' if bound is None else f'{bound:.10g}':>16s} "
              f"| {runs}" + ("".join(f"\n    note: {n}" for n in notes)))
    if args.update:
        write_catalogue(new_cat, catalogue_path())
        write_solu_full(solu_path(), known)
        certs.update(new_certs)
        write_certificates(certs)
        print(f"updated {catalogue_path()} and {solu_path()}", file=sys.stderr)
    import collections

    by = collections.Counter((i.problem_class or "?", i.status) for i in new_cat)
    print("\nlibrary size by class and status:")
    for cls in sorted({c for c, _ in by}):
        print(f"  {cls:5s} " + "  ".join(f"{s} {by[(cls, s)]}" for s in ("easy", "hard", "open")))
    print(f"  total {len(new_cat)}: " + "  ".join(f"{s} {sum(v for (c, t), v in by.items() if t == s)}"
                                                 for s in ("easy", "hard", "open")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
