"""Reproduction harness for a SCIP crash/hang on the convex-hull MI-SVM model (``misvm-hull``).

Symptom being chased: on a 12-bag data set with 231 features, one of them all-zero, SCIP 10
(PySCIPOpt 6.3) either aborted (``munmap_chunk(): invalid pointer``) or dead-locked in ``free()``
inside its sub-NLP heuristic (bundled Ipopt -> MUMPS -> METIS ordering).

The script

1. builds two 12-bag data sets (6 positive, 6 negative bags; the 166 MUSK features, 64 Gaussian
   columns, one all-zero column; :func:`make_data`) and writes them as headerless CSV
   (``label, bag_id, features...``);
2. writes the model with ``milopt export misvm-hull --data CSV -o FILE.lp``;
3. solves each file with PySCIPOpt in a child process under a hard wall-clock deadline (the
   child is killed if it outlives it), for several SCIP settings:

   * ``default``      -- SCIP's defaults;
   * ``nosubnlp``     -- ``heuristics/subnlp/freq = -1`` (sub-NLP heuristic off);
   * ``amd``          -- ``nlpi/ipopt/optfile`` pointing at a file with ``mumps_pivot_order 0``
     (MUMPS uses AMD instead of METIS; all NLP heuristics stay on);
   * ``metis``        -- ``mumps_pivot_order 5`` (MUMPS forced to order with METIS: the crash
     within seconds on any of these models, small or large);

   and prints, per run: exit code (negative = killed by a signal, e.g. -6 = abort; "killed at
   deadline" = hung), status, objective, dual bound, nodes, seconds.

With ``--fix SEED`` the witness binaries are fixed to a seeded random choice per bag, so that the
model is continuous and SCIP reaches its sub-NLP heuristic (Ipopt) right after the root LP
instead of after a long root node.

With ``--python PATH`` the solves run under another interpreter (e.g. a virtual environment with
another PySCIPOpt release); the bundled SCIP / Ipopt / MUMPS / METIS versions are printed.  With
``--malloc-check`` the child runs with glibc's malloc consistency checks
(``libc_malloc_debug.so`` + ``glibc.malloc.check=3``), which turns silent heap corruption into an
abort.

Usage::

    python benchmarks/scip_hull_hazard.py --out /tmp/hazard --fix 0 --time-limit 200 --deadline 300
    python benchmarks/scip_hull_hazard.py --out /tmp/hazard --lp /tmp/hazard/musk1_small_z.lp \\
        --python /path/to/other/venv/bin/python --settings metis amd --fix 0 --time-limit 15

Nothing here runs in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

#: the child program: read the .lp, apply settings, optimise, print one JSON line
CHILD = textwrap.dedent(r'''
    import json, re, sys, time
    import numpy as np
    import pyscipopt
    path, tl, setting, seed, optdir = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    m = pyscipopt.Model()
    m.hideOutput(True)
    m.readProblem(path)
    if setting == "nosubnlp":
        m.setParam("heuristics/subnlp/freq", -1)
    elif setting in ("amd", "metis"):
        m.setParam("nlpi/ipopt/optfile", optdir + "/ipopt_" + setting + ".opt")
    if seed >= 0:
        txt = open(path).read()
        # the rows "choose(I): lam(j) + ... = 1" (milopt's writer, one line; older Pyomo-written
        # files: "c_e_choose(I)_:" followed by one term per line)
        groups = [re.findall(r"lam\((\d+)\)", blk)
                  for blk in re.findall(r"choose\(\d+\)_?:(.*?)=", txt, re.S)]
        rng = np.random.default_rng(seed)
        V = {v.name: v for v in m.getVars()}
        for g in groups:
            pick = g[rng.integers(len(g))]
            for j in g:
                val = 1.0 if j == pick else 0.0
                m.chgVarLb(V[f"lam({j})"], val); m.chgVarUb(V[f"lam({j})"], val)
    m.setParam("limits/time", tl)
    t = time.time()
    m.optimize()
    st = m.getStatus()
    out = {"status": st, "objective": m.getObjVal() if m.getNSols() else None,
           "bound": m.getDualbound(), "nodes": m.getNNodes(), "seconds": round(time.time() - t, 1),
           "scip": m.version(), "pyscipopt": pyscipopt.__version__}
    print(json.dumps(out), flush=True)
''')


def make_data(out: Path, zero=True):
    """Two 12-bag sets (6 positive + 6 negative bags), each with 64 Gaussian columns scaled like
    the MUSK features after the 166 MUSK features and (``zero``) one all-zero column; headerless CSV.

    * ``musk1_small``: MUSK1 bags of at most 4 instances (34 instances, 16 in positive bags):
      the sub-NLP is small, MUMPS orders it with AMF, no crash with default settings;
    * ``musk2_large``: MUSK2 positive bags of 20--40 instances (168 instances in positive bags):
      the sub-NLP's KKT system is large enough for MUMPS's automatic choice to take METIS, and
      SCIP aborts or dead-locks with default settings.
    """
    import milopt

    paths = []
    for name, data, pos_sizes, neg_sizes in (("musk1_small", "musk1", (1, 4), (1, 4)),
                                             ("musk2_large", "musk2", (20, 40), (1, 8))):
        musk = milopt.load(data)
        rng = np.random.default_rng(0)
        sz = musk.bag_sizes
        pc = np.flatnonzero((musk.y == 1) & (sz >= pos_sizes[0]) & (sz <= pos_sizes[1]))
        nc = np.flatnonzero((musk.y == 0) & (sz >= neg_sizes[0]) & (sz <= neg_sizes[1]))
        b = musk.subset(np.concatenate([rng.choice(pc, 6, replace=False), rng.choice(nc, 6, replace=False)]))
        seed = 0
        R = np.random.default_rng(100 + seed).standard_normal((b.n_instances, 64)) * b.X.std()
        cols = [b.X, R] + ([np.zeros((b.n_instances, 1))] if zero else [])
        X = np.hstack(cols)
        name = f"{name}_{'z' if zero else 'nz'}"
        rows = np.column_stack([b.y[b.bag_index], b.bag_index, X])
        p = out / f"{name}.csv"
        with open(p, "w") as f:
            for r in rows:
                f.write(",".join([str(int(r[0])), str(int(r[1]))] + [repr(float(v)) for v in r[2:]]) + "\n")
        paths.append(p)
    return paths


def export(csv: Path) -> Path:
    lp = csv.with_suffix(".lp")
    cmd = [sys.executable, "-m", "milopt.cli", "export", "misvm-hull", "--data", str(csv), "-o", str(lp)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return lp


def versions(python: str) -> str:
    """PySCIPOpt release, SCIP version, and the Ipopt / MUMPS / METIS releases found in the
    bundled library (strings in the shared object)."""
    code = ("import glob, os, re, pyscipopt as p; m = p.Model();"
            "d = os.path.dirname(p.__file__) + '.libs'; f = (glob.glob(d + '/libscip*') or [''])[0];"
            "s = open(f, 'rb').read() if f else b'';"
            "ip = re.search(rb'Ipopt (3\\.\\d+\\.\\d+)', s); me = re.search(rb'(METIS-[0-9][^/]*)/libmetis', s);"
            "mu = re.search(rb'\\x00(5\\.\\d+\\.\\d+)\\x00', s);"
            "print(p.__version__, 'SCIP %d.%d.%d' % (m.getMajorVersion(), m.getMinorVersion(), m.getTechVersion()),"
            "'Ipopt', ip and ip.group(1).decode(), 'MUMPS', mu and mu.group(1).decode(), me and me.group(1).decode())")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return (r.stdout or r.stderr).strip()


def solve(python, lp, setting, time_limit, deadline, seed, optdir, malloc_check):
    env = dict(os.environ)
    if malloc_check and Path("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0").exists():
        env["LD_PRELOAD"] = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
        env["GLIBC_TUNABLES"] = "glibc.malloc.check=3"
    t = time.perf_counter()
    p = subprocess.Popen([python, "-c", CHILD, str(lp), str(time_limit), setting, str(seed), str(optdir)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=deadline)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = "killed at deadline"
    res = {"rc": rc, "wall": round(time.perf_counter() - t, 1), "stderr": err.strip()[-160:]}
    try:
        res.update(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        pass
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for CSV, .lp and the ipopt option file")
    ap.add_argument("--lp", type=Path, nargs="*", help="existing .lp files (skip data building and export)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the solves")
    ap.add_argument("--settings", nargs="+", default=["default", "nosubnlp", "amd", "metis"],
                    choices=["default", "nosubnlp", "amd", "metis"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--deadline", type=float, default=120.0, help="hard wall-clock limit per solve (child killed)")
    ap.add_argument("--fix", type=int, default=-1, metavar="SEED",
                    help="fix the witness binaries to a random choice (seed SEED >= 0); -1: do not fix")
    ap.add_argument("--malloc-check", action="store_true")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "ipopt_amd.opt").write_text("mumps_pivot_order 0\n")
    (a.out / "ipopt_metis.opt").write_text("mumps_pivot_order 5\n")
    lps = a.lp or [export(c) for c in make_data(a.out)]
    print("solver:", versions(a.python))
    print("load:", os.getloadavg())
    for lp in lps:
        for setting in a.settings:
            r = solve(a.python, lp, setting, a.time_limit, a.deadline, a.fix, a.out, a.malloc_check)
            print(f"{lp.name:18s} {setting:9s} rc={r['rc']!s:>4} wall={r['wall']:6.1f}s status={r.get('status')} "
                  f"obj={r.get('objective')} bound={r.get('bound')} nodes={r.get('nodes')} "
                  f"{('stderr: ' + r['stderr'][-60:].replace(chr(10), ' | ')) if r['rc'] not in (0,) else ''}",
                  flush=True)


if __name__ == "__main__":
    main()
