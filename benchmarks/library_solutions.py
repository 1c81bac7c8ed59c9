"""Solution files and certificates of the MIL instance library (instances/solutions, certificates.csv).

    python benchmarks/library_solutions.py [--suite all] [--time-limit 120] [--reuse] [--update]
        [--solver S] [--bnb-options k=v,...] [--from NAMES] [--no-transfer] [--alternate] [--history DIR]

For every instance of the suite, a point is obtained, verified against the instance milopt
builds and written as ``instances/solutions/NAME.sol.gz`` (MIPLIB convention, names as milopt's
writer writes them):

* **MI-SVM instances** (``misvm-bigm``, ``misvm-hull``, ``misvm-kernel-bigm``) are grouped by the
  problem they formulate (data, C, class weights, norm, kernel: ``problem_key``).  The group's
  *source* is its plain big-M instance: solved by milopt's ``bnb`` (norm l2 and kernels, unless
  the catalogue records SCIP as its prover) or by the solver that proved it (norm l1: HiGHS or
  SCIP); ``--reuse`` takes the source's point from
  its shipped ``.sol`` instead.  Every other instance of the group (SOS1, indicator, the
  strengthened model, the heuristic big-M, the convex-hull forms) receives the source's point
  (w, b) through its own start function and is certified only when that point is feasible
  there and has the same objective (``milopt.bench.certificates.transfer``): "transferred".
* **Other instances** are solved by the solver recorded in the catalogue (``proof_solver``), else
  HiGHS (LP, MILP), Ipopt (QP), SCIP, at a relative gap of 1e-7.

``--from NAMES`` makes another form the source of its problem (a strengthened form that SCIP
proved); ``--no-transfer`` solves every instance itself; ``--alternate`` improves a plain big-M
point by the MI-SVM alternation.  A solved point worse than the shipped one never replaces it
(the run contributes only a better dual bound); a dual bound of an exact form of the same MI-SVM
problem holds for its twins; files are re-read before they are written, so that runs on other
suites may run at the same time.

``--update`` writes the ``.sol`` files, updates ``instances/certificates.csv`` (kind, value,
bound, gap, how, solver, version, seconds, nodes) and rewrites ``instances/milopt.solu`` from
the verified points: the value of every line is the objective recomputed at its ``.sol``.
A line is ``=opt=`` when a certificate's bound (a run of this script, or one recorded by
``benchmarks/library_status.py``) proves it within the stated gap (1e-4 relative); else
``=best=`` with the best dual bound known.  Prints one line per instance.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import time


def _solver_for(inst, cls):
    from milopt.solvers import installed

    have = set(installed())
    choice = inst.proof_solver if inst.proof_solver in have and inst.proof_solver != "bnb" else None
    if choice:
        return choice
    if "INDICATOR" in inst.features:
        return "scip-native"
    return {"LP": "highs", "MILP": "highs", "QP": "ipopt"}.get(cls, "scip")


def _plain(inst) -> bool:
    return not any(k in inst.params for k in ("disjunction", "strengthen", "big_m", "perspective", "reduce"))


def _solve(inst, solver, time_limit, gap, options=None):
    from milopt.bench.library import build
    from milopt.solvers import solve

    model = build(inst)[0]
    t0 = time.perf_counter()
    res = solve(model, solver, time_limit=time_limit, mip_gap=gap, threads=1, options=options or None)
    return model, res, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="all")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per solve (default 120)")
    ap.add_argument("--solver", default=None, help="solve with this backend instead of the catalogue's prover "
                                                   "or bnb (e.g. ipopt where HiGHS's point does not verify, "
                                                   "scip on an MI-SVM instance)")
    ap.add_argument("--bnb-options", default="", help="options of bnb, key=value,key=value (e.g. kick_seconds=150: "
                                                       "more iterated local search before the tree on a busy machine)")
    ap.add_argument("--history", default=None, metavar="DIR",
                    help="write each solve's bound and incumbent over time (bnb) as DIR/NAME.csv: time, nodes, "
                         "lower, upper (the frontier of an open instance)")
    ap.add_argument("--no-transfer", action="store_true",
                    help="solve every MI-SVM instance of the suite itself instead of transferring its source's point "
                         "(a strengthened form proves better bounds than its plain twin)")
    ap.add_argument("--alternate", action="store_true",
                    help="improve the point of a plain big-M MI-SVM instance by the MI-SVM alternation (witnesses "
                         "fixed, the convex problem solved by HiGHS, repeated while the objective drops)")
    ap.add_argument("--from", dest="source", default="", metavar="NAMES",
                    help="comma list of MI-SVM instances whose shipped point is the source of their problem's other "
                         "forms (default: the plain big-M instance), e.g. a strengthened form proved by SCIP")
    ap.add_argument("--reuse", action="store_true", help="take each MI-SVM source point from its shipped .sol")
    ap.add_argument("--update", action="store_true", help="write .sol files, certificates.csv and milopt.solu")
    ap.add_argument("--sync-only", action="store_true", help="only put the catalogue's statuses in step with "
                                                              "milopt.solu and certificates.csv")
    args = ap.parse_args(argv)
    if args.sync_only:
        sync_catalogue()
        return 0

    from milopt.bench import certificates as cert
    from milopt.bench.library import build, load_catalogue, solu_path, suite
    from milopt.bench.solu import read_solu_full, write_solu_full
    from milopt.runner import objective_sense

    load0 = os.getloadavg()[0]
    cat = load_catalogue()
    chosen = [i.name for i in suite(args.suite)]
    known = read_solu_full(solu_path())
    certs = cert.read_certificates()
    today = datetime.date.today().isoformat()
    # sources first (each group's plain big-M instance), then the rest in catalogue order
    groups: dict = {}
    for i in cat:
        k = cert.problem_key(i)
        if k is not None and i.formulation != "misvm-hull" and _plain(i):
            groups.setdefault(k, i)
    by = {i.name: i for i in cat}
    for name in filter(None, args.source.split(",")):    # another form's shipped point as the source
        if name not in by or cert.problem_key(by[name]) is None:
            print(f"--from {name}: not an MI-SVM instance of the catalogue", file=sys.stderr)
            return 2
        groups[cert.problem_key(by[name])] = by[name]
    order = sorted(chosen, key=lambda n: 0 if any(g.name == n for g in groups.values()) else 1)
    points: dict = {}      # problem key -> (point, value, source name, certificate row)
    done: list = []        # the instances this run updates
    for name in order:
        inst = by[name]
        key = cert.problem_key(inst)
        src = groups.get(key) if key is not None else None
        t0 = time.perf_counter()
        row = {"name": name, "date": today}
        note = ""
        if src is not None and src.name != name and not args.no_transfer:
            if key not in points:       # the source was not in the suite: take its shipped point
                points[key] = _source_from_sol(src, cert)
            if points[key] is None:
                print(f"{name:36s} skipped: no point of its source {src.name}", flush=True)
                continue
            pt, val, sname, srow = points[key]
            tr = cert.transfer(pt, val, inst)
            model = tr["model"]
            if not tr["ok"]:
                note = f"not transferred from {sname}: {tr['why']}"
                if inst.params.get("big_m") == "mildsvm":
                    note += " (the heuristic big-M cuts off the certified point)"
                print(f"{name:36s} {note}", flush=True)
                if not tr["feasible"]:
                    continue
            how = f"transferred from {sname}" if tr["ok"] else "point of " + sname
            row.update(how=how, solver=srow.get("solver", ""), version=srow.get("version", ""),
                       seconds=srow.get("seconds", ""), nodes=srow.get("nodes", ""), load=srow.get("load", ""),
                       bound=srow.get("bound", "") if tr["ok"] else "", note=note)
        else:
            cls = inst.problem_class
            solver = args.solver or _solver_for(inst, cls)
            if (not args.solver and key is not None and key[3] in ("l2", "kernel")
                    and inst.proof_solver != "scip"):
                solver = "bnb"      # milopt's exact method, unless SCIP proved it (Kent & Yu's data)
            if args.reuse and cert.sol_path(name).is_file() and key is not None:
                model = build(inst)[0]
                got = _source_from_sol(inst, cert, model=model)
                row.update({k: v for k, v in got[3].items() if k not in ("name",)})
            else:
                opts = dict(kv.split("=", 1) for kv in args.bnb_options.split(",") if kv) if solver == "bnb" else {}
                model, res, secs = _solve(inst, solver, args.time_limit, 1e-7 if solver != "bnb" else 1e-4, opts)
                if args.history and res.history:
                    _write_history(args.history, name, res.history, load0)
                if res.objective is None:
                    print(f"{name:36s} {solver}: no solution ({res.termination})", flush=True)
                    continue
                optimal = res.termination == "optimal"
                bnd = res.bound if res.bound is not None and math.isfinite(res.bound) else None
                if optimal and bnd is None and cls in ("LP", "QP"):
                    bnd = res.objective     # a convex problem: the optimality conditions are the proof
                row.update(how="proved" if optimal else f"{res.termination.value} run", solver=solver,
                           version=res.solver_version or "", seconds=f"{secs:.1f}",
                           nodes="" if res.nodes is None else str(int(res.nodes)), load=f"{load0:.1f}",
                           bound="" if bnd is None else repr(float(bnd)))
        if args.alternate and inst.formulation == "misvm-bigm" and _plain(inst) and "how" in row and (
                src is None or src.name == name or args.no_transfer):
            gain = _alternate(inst, model)
            if gain:
                row["how"] = f"{row['how']}, then the MI-SVM alternation ({gain})"
        chk = cert.check_point_model(model)
        if not chk["feasible"]:
            print(f"{name:36s} point not verified: {chk['reason']}", flush=True)
            continue
        f = float(chk["objective_recomputed"])
        sense = objective_sense(model)
        if key is not None and src is not None and src.name == name:
            points[key] = (cert.misvm_point(inst, model), f, name, dict(row))
        # the bound: this run's, a recorded certificate's, or the .solu's best dual bound
        bound = _num(row.get("bound"))
        old = certs.get(name, {})
        kb = known.get(name, {})
        cand = [b for b in (bound, _num(old.get("bound")), kb.get("bound") if kb.get("kind") != "opt" else None)
                if b is not None and cert.proved(f, b, sense, gap=math.inf)]
        if cand:
            sgn = -1.0 if sense == "maximize" else 1.0
            bound = sgn * max(sgn * b for b in cand)
        else:
            bound = None
        sib, sib_name = _sibling_bound(inst, cat, certs, known, sense)
        sgn = -1.0 if sense == "maximize" else 1.0
        if sib is not None and cert.proved(f, sib, sense, gap=math.inf) and (bound is None or sgn * (sib - bound) > 0):
            bound = sib
            row["note"] = f"bound of {sib_name}, the same problem in an exact form"
        if bound is not None and cert.proved(f, bound, sense) and not (row.get("bound") or "") and old.get("bound"):
            for k in ("how", "solver", "version", "seconds", "nodes", "load", "date"):   # the recorded proof
                if old.get(k):
                    row[k] = old[k]
        kb = read_solu_full(solu_path()).get(name, {})   # another run may have improved it meanwhile
        if _worse_than_shipped(f, kb, name, sense, row, cert):
            # keep the shipped (better) point; this run contributes at most a better dual bound
            _keep_point(name, kb, cert.read_certificates().get(name, old), bound, row, sense, cert, certs, known,
                        done if args.update else [])
            continue
        kind = "opt" if bound is not None and cert.proved(f, bound, sense) else "best"
        gap = None if bound is None else abs(f - bound) / max(abs(f), 1e-12)
        row.update(kind=kind, value=f"{f:.12g}", bound="" if bound is None else f"{bound:.12g}",
                   gap="" if gap is None else f"{gap:.2e}", note=row.get("note") or note)
        mf, names, x = cert.model_point(model) if _linear(model) else (None, None, None)
        path = cert.sol_path(name)
        if args.update:
            if mf is not None:
                cert.write_sol(path, names, x, f, comments=[f"{name}: {kind} {f:.12g} ({row['how']})"])
            else:
                _write_pyomo_sol(model, path, f, name, kind, row["how"], cert)
            ver = cert.check_solution(inst, path)
            if not ver["ok"]:
                print(f"{name:36s} written .sol does not check: {ver['reason']}", flush=True)
                continue
            certs[name] = row
            known[name] = {"kind": kind, "value": float(f"{f:.12g}"), "bound": bound}
            done.append(name)
        prev = kb.get("value")
        shift = "" if prev is None else f" [was {kb.get('kind')} {prev:.10g}, {(f - prev) / max(1.0, abs(prev)):+.1e}]"
        print(f"{name:36s} {kind:4s} {f:.10g} bound {'-' if bound is None else f'{bound:.10g}'}{shift} "
              f"({row.get('how')}, {row.get('solver')}, {time.perf_counter() - t0:.1f} s"
              f"{', max violation %.1e' % chk['max_violation'] if chk.get('max_violation') is not None else ''})",
              flush=True)
    if args.update:
        # re-read both files and change only this run's instances: runs on other suites may have
        # written them meanwhile
        fresh_certs, fresh_known = cert.read_certificates(), read_solu_full(solu_path())
        for name in done:
            fresh_certs[name], fresh_known[name] = certs[name], known[name]
        cert.write_certificates(fresh_certs)
        write_solu_full(solu_path(), fresh_known)
        sync_catalogue()
        print(f"updated {cert.certificates_path()}, {solu_path()} and the catalogue's statuses", file=sys.stderr)
    print(f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}", file=sys.stderr)
    return 0


def sync_catalogue() -> None:
    """The .solu kinds recomputed from the certificates (value, bound, the stated gap), then the
    statuses in step with the .solu: a proved instance (``=opt=``) that the catalogue has open
    becomes hard (``benchmarks/library_grade.py`` decides easy), with the prover and its seconds
    from its certificate; an instance without ``=opt=`` is open."""
    from dataclasses import replace

    from milopt.bench.certificates import read_certificates
    from milopt.bench.library import load_catalogue, solu_path, write_catalogue
    from milopt.bench.solu import read_solu_full

    from milopt.bench.certificates import proved, write_certificates
    from milopt.bench.solu import write_solu_full

    known, certs, out = read_solu_full(solu_path()), read_certificates(), []
    cat = load_catalogue()
    for inst in cat:    # the kind follows from the certificate's value and bound at the stated gap
        c, e = certs.get(inst.name), known.get(inst.name)
        if not c or not e or not c.get("value"):
            continue
        b = _num(c.get("bound"))
        kind = "opt" if b is not None and proved(float(c["value"]), b, inst.sense or "minimize") else "best"
        c["kind"] = kind
        known[inst.name] = {"kind": kind, "value": float(c["value"]), "bound": b}
    write_certificates(certs)
    write_solu_full(solu_path(), known)
    for inst in cat:
        e, c = known.get(inst.name) or {}, certs.get(inst.name) or {}
        if e.get("kind") == "opt" and c.get("kind") == "opt":
            inst = replace(inst, status=inst.status if inst.status in ("easy", "hard") else "hard",
                           proof_seconds=_num(c.get("seconds")) if c.get("seconds") else inst.proof_seconds,
                           proof_solver=c.get("solver") or inst.proof_solver)
        elif e.get("kind") != "opt" and inst.status != "open":
            inst = replace(inst, status="open", proof_seconds=None, proof_solver="")
        out.append(inst)
    write_catalogue(out)


def _sibling_bound(inst, cat, certs, known, sense):
    """(best dual bound, its instance) among the other forms of the same MI-SVM problem whose
    optimum equals the problem's (big-M with a valid big-M, SOS1, indicators, strengthened,
    hull): their bound holds for every form (a heuristic big-M's optimum can only be higher, so
    its own bound is used for no other form); (None, "") when there is none."""
    from milopt.bench.certificates import problem_key

    key = problem_key(inst)
    if key is None:
        return None, ""
    sgn = -1.0 if sense == "maximize" else 1.0
    best = (None, "")
    for s in cat:
        if s.name == inst.name or problem_key(s) != key or s.params.get("big_m") == "mildsvm":
            continue
        e = known.get(s.name, {})
        for b in (_num(certs.get(s.name, {}).get("bound")), e.get("bound") if e.get("kind") != "opt" else None):
            if b is not None and (best[0] is None or sgn * (b - best[0]) > 0):
                best = (b, s.name)
    return best


def _alternate(inst, model, rounds: int = 20) -> str:
    """The MI-SVM alternation (Andrews, Tsochantaridis & Hofmann, NIPS 2002) on a plain big-M
    model from the point it holds: each positive bag's witness is its best-scoring instance
    (``warm_start``), the witness binaries are fixed and the convex problem (an LP for norm l1, a
    QP for l2) is solved by HiGHS; repeated while the objective drops.  The model is left at the
    best point (slacks at their minimum); returns "F0 -> F1" or "" when nothing improved."""
    import numpy as np
    import pyomo.environ as pe

    from milopt.models.misvm_bigm import model_info, objective_value, warm_start
    from milopt.solvers import solve

    rec = model_info(model)
    meta = rec.meta
    C, cw, norm = meta.get("C", 1.0), meta.get("class_weight", "kent-yu"), meta.get("norm", "l2")

    def value(w, b):
        return objective_value(rec.bags, w, b, C, cw, norm)

    w = np.array([pe.value(model.w[k]) for k in model.w])
    b = float(pe.value(model.b))
    f0 = f = value(w, b)
    best = (w, b)
    for _ in range(rounds):
        warm_start(model, *best)
        for k in model.zeta:
            model.zeta[k].fix()
        res = solve(model, "highs", time_limit=300, threads=1)
        for k in model.zeta:
            model.zeta[k].unfix()
        if res.objective is None:
            break
        w, b = np.array([pe.value(model.w[k]) for k in model.w]), float(pe.value(model.b))
        fn = value(w, b)
        if not fn < f - 1e-9 * max(1.0, abs(f)):
            break
        f, best = fn, (w, b)
    warm_start(model, *best)
    return f"{f0:.10g} -> {f:.10g}" if f < f0 else ""


def _worse_than_shipped(f, kb, name, sense, row, cert) -> bool:
    """True when a solved (not transferred) point is worse than the value of the shipped ``.sol``."""
    prev = kb.get("value")
    if prev is None or not cert.sol_path(name).is_file() or str(row.get("how", "")).startswith(
            ("transferred", "point of")):
        return False
    sgn = -1.0 if sense == "maximize" else 1.0
    return sgn * (f - prev) > cert.BOUND_TOL * max(1.0, abs(prev))


def _keep_point(name, kb, old, bound, row, sense, cert, certs, known, done) -> None:
    """Record only the run's dual bound (when better and valid for the shipped value) on the
    shipped point's certificate."""
    prev = kb["value"]
    sgn = -1.0 if sense == "maximize" else 1.0
    ob = _num(old.get("bound"))
    better = (bound is not None and cert.proved(prev, bound, sense, gap=math.inf)
              and (ob is None or sgn * (bound - ob) > 0))
    print(f"{name:36s} {row.get('solver')}: {row.get('how')} worse than the shipped {prev:.10g}: point kept"
          + (f", bound {ob} -> {bound:.10g}" if better else ""), flush=True)
    if not better:
        return
    kind = "opt" if cert.proved(prev, bound, sense) else "best"
    new = dict(old, kind=kind, bound=f"{bound:.12g}", gap=f"{abs(prev - bound) / max(abs(prev), 1e-12):.2e}",
               note=f"bound of a {row.get('how')}: {row.get('solver')} {row.get('seconds')} s, "
                    f"{row.get('nodes') or '?'} nodes (load {row.get('load')})")
    certs[name] = new
    known[name] = {"kind": kind, "value": prev, "bound": bound}
    done.append(name)


def _write_history(folder, name, history, load0) -> None:
    """``folder/NAME.csv``: time, nodes, lower and upper bound of each recorded step of a solve."""
    from pathlib import Path

    p = Path(folder)
    p.mkdir(parents=True, exist_ok=True)
    cols = ("time", "nodes", "lower", "upper")
    lines = [f"# {name}: load {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end", ",".join(cols)]
    lines += [",".join(f"{h.get(c)}" for c in cols) for h in history]
    (p / f"{name}.csv").write_text("\n".join(lines) + "\n")


def _num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _linear(model) -> bool:
    from milopt.errors import InvalidParameterError
    from milopt.solvers.extract import extract

    try:
        extract(model)
    except InvalidParameterError:
        return False
    return True


def _write_pyomo_sol(model, path, f, name, kind, how, cert):
    import numpy as np
    import pyomo.environ as pe

    from milopt.io.names import clean_names

    vars_ = [v for v in model.component_data_objects(pe.Var, active=True) if not v.fixed]
    cert.write_sol(path, clean_names([v.name for v in vars_], "C"), np.array([float(v.value or 0.0) for v in vars_]),
                   f, comments=[f"{name}: {kind} {f:.12g} ({how})"])


def _source_from_sol(src, cert, model=None):
    """(point, value, name, certificate row) of a source instance from its shipped .sol."""
    from milopt.bench.library import build

    p = cert.sol_path(src.name)
    if not p.is_file():
        return None
    model = model if model is not None else build(src)[0]
    mf, names, _ = cert.model_point(model)
    x, unknown = cert.point_from_sol(mf, p)
    if unknown:
        return None
    for j, v in enumerate(mf.variables):
        v.set_value(float(x[j]), skip_validation=True)
    row = dict(cert.read_certificates().get(src.name, {}))
    row.setdefault("how", "point of the shipped .sol")
    return cert.misvm_point(src, model), float(mf.objective_value(x)), src.name, row


if __name__ == "__main__":
    sys.exit(main())
