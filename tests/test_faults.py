"""Fault injection: signals at seeded random moments, a full file system, a read-only target.

Each signal case starts the real ``milopt`` command (``milopt.cli.run``, the console script),
walks its process tree until the signal (every child, grandchild ... it started), sends SIGINT,
SIGTERM or SIGHUP -- to the process alone (``kill``) or to its whole process group (``timeout``,
a terminal) -- and then checks what docs/cli.md ("Exit status") promises:

* the exit status is 128 + the signal's number (or 0 when the command finished first);
* stderr holds no traceback;
* no process of the tree survives 5 s after the command's end;
* no temporary file is left (neither next to the output nor in ``TMPDIR``).

The moments are drawn from ``random.Random(SEED)``: the same moments on every run.  A few cases
run by default; the full matrix (every signal, every command, several moments) is ``slow``.
"""
from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process trees are checked on Linux")

SEED = 37
SMALL = "gen:subset?data=musk1&bags=40&seed=0"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HELPERS = Path(__file__).with_name("bench_helpers.py")
#: the console script (as a user runs it), else the same entry point through the interpreter
_SCRIPT = Path(sys.executable).with_name("milopt")
MILOPT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from milopt.cli import run; run()"]


def moments(case: str, k: int, lo: float, hi: float) -> list[float]:
    """``k`` seeded moments in [lo, hi] seconds for ``case`` (the same on every run)."""
    rng = random.Random(f"{SEED}:{case}")
    return [round(rng.uniform(lo, hi), 2) for _ in range(k)]


class Outcome:
    def __init__(self, code, out, err, left, finished_first, seen, tmpdir, elapsed):
        self.code, self.out, self.err, self.left = code, out, err, left
        self.finished_first, self.seen, self.tmpdir, self.elapsed = finished_first, seen, tmpdir, elapsed

    def check(self, sig):
        assert "Traceback" not in self.err, self.err[-3000:]
        if self.finished_first:
            assert self.code == 0, (self.code, self.err[-2000:])
        else:
            assert self.code == 128 + int(sig), (self.code, self.out[-1500:], self.err[-2000:])
        assert not self.left, f"processes left running 5 s after the command ended: {self.left}"
        leftovers = [p.name for p in Path(self.tmpdir).iterdir()]
        assert not leftovers, f"temporary files left in TMPDIR: {leftovers}"


def _alive(p) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def run_and_signal(argv, sig, *, after: float, group: bool, cwd, ready=None, limit: float = 180.0) -> Outcome:
    """Start ``milopt ARGV``; ``after`` seconds past ``ready(children)`` (default: the start),
    send ``sig`` (to the process group when ``group``); wait for the end, then 5 s for the tree."""
    tmpdir = Path(cwd) / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONFAULTHANDLER="")
    env.pop("MILOPT_DEBUG", None)
    proc = subprocess.Popen([*MILOPT, *argv], cwd=str(cwd), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    root = psutil.Process(proc.pid)
    seen: dict = {}
    t0 = time.monotonic()
    t_ready = None if ready is not None else t0
    try:
        while proc.poll() is None and time.monotonic() - t0 < limit:
            try:
                for c in root.children(recursive=True):
                    seen.setdefault(c.pid, c)
            except psutil.Error:
                pass
            if t_ready is None and ready([p for p in seen.values() if _alive(p)]):
                t_ready = time.monotonic()
            if t_ready is not None and time.monotonic() >= t_ready + after:
                break
            time.sleep(0.02)
        finished_first = proc.poll() is not None
        if not finished_first:
            assert t_ready is not None, f"the command never reached the moment to signal ({limit:g} s)"
            os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
        out, err = proc.communicate(timeout=limit)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    elapsed = time.monotonic() - t0
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(_alive(p) for p in seen.values()):
        time.sleep(0.1)
    left = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in seen.values() if _alive(p)]
    for p in seen.values():  # never leave anything behind, even when the test fails
        if _alive(p):
            p.kill()
    return Outcome(proc.returncode, out, err, left, finished_first, seen, tmpdir, elapsed)


def _no_partial_file(folder: Path, name: str):
    files = sorted(p.name for p in folder.iterdir() if p.name != "tmpdir")
    assert not [f for f in files if f.startswith(".milopt-")], files
    assert files in ([], [name]), files
    if files:  # a file in place is complete (the command finished before the signal)
        import gzip

        with gzip.open(folder / name, "rt") as fh:
            assert fh.read().rstrip().endswith("ENDATA")


def _bnb_workers_ready(kids) -> bool:
    return len(kids) >= 2


def _one_child(kids) -> bool:
    return len(kids) >= 1


# ------------------------------------------------------------------------------- default run
def test_sigterm_during_export_leaves_no_file(tmp_path):
    (t,) = moments("export", 1, 1.0, 3.0)
    res = run_and_signal(["export", "misvm-bigm", "--data", SMALL, "-o", "m.mps.gz"], signal.SIGTERM, after=t,
                         group=False, cwd=tmp_path)
    res.check(signal.SIGTERM)
    _no_partial_file(tmp_path, "m.mps.gz")


def test_sigterm_to_the_group_during_bnb_workers(tmp_path):
    """`timeout` sends SIGTERM to the whole group: the master prints its result, the workers
    go, no BrokenPipeError, status 143."""
    (t,) = moments("bnb2-default", 1, 0.5, 2.0)
    # no starting heuristics: the workers start at once (the slow cases keep the defaults)
    res = run_and_signal(["solve", "misvm-bigm", "--data", SMALL, "--solver", "bnb", "--set", "workers=2", "restarts=0",
                          "anneal=0", "swap_starts=0", "kick_seconds=0", "--time-limit", "120"], signal.SIGTERM,
                         after=t, group=True, cwd=tmp_path, ready=_bnb_workers_ready)
    res.check(signal.SIGTERM)
    if not res.finished_first and "termination:" in res.out:
        assert "termination: interrupted" in res.out or "termination: optimal" in res.out, res.out


def test_a_worker_dies_with_its_parent(tmp_path):
    """child_init: a worker whose parent is killed (SIGKILL: no handler runs) dies with it."""
    code = ("import os, sys, time\n"
            "from milopt.processes import child_init\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    child_init()\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n"
            "print(pid, flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    c = psutil.Process(child) if psutil.pid_exists(child) else None
    deadline = time.monotonic() + 5
    while c is not None and _alive(c) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert c is None or not _alive(c)


def test_full_file_system_names_the_target(tmp_path, monkeypatch):
    """ENOSPC while writing: one line naming the target, no file left (a real 64 KiB tmpfs when
    it can be mounted, else the error injected into the write)."""
    from milopt.cli import main

    target = _full_fs(tmp_path)
    if target is None:  # no mount here: inject ENOSPC into the writer
        import milopt.io as mio

        target = tmp_path / "full"
        target.mkdir()

        def full(*a, **k):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(mio, "_gzip", full)
    try:
        out = target / "m.mps.gz"
        code = main(["export", "misvm-bigm", "--data", "gen:subset?data=musk1&bags=12&seed=0", "-o", str(out)])
        assert code == 2
        assert not list(target.iterdir())
    finally:
        _umount(target)


def test_full_file_system_message(tmp_path, monkeypatch, capsys):
    import milopt.io as mio
    from milopt.cli import main

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(mio, "_gzip", full)
    out = tmp_path / "m.mps.gz"
    assert main(["export", "misvm-bigm", "--data", "gen:subset?data=musk1&bags=8&seed=0", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"milopt: error: cannot write {out}: No space left on device"]
    assert list(tmp_path.iterdir()) == []


def test_permission_denied_names_the_target(tmp_path, monkeypatch, capsys):
    import milopt.io as mio
    from milopt.cli import main

    def denied(folder):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))

    monkeypatch.setattr(mio, "_open_unnamed", denied)
    out = tmp_path / "m.mps"
    assert main(["export", "misvm-bigm", "--data", "gen:subset?data=musk1&bags=8&seed=0", "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"milopt: error: cannot write {out}: Permission denied"]


def test_read_only_target_names_the_target(tmp_path, capsys):
    from milopt.cli import main

    target = _read_only_dir(tmp_path)
    try:
        out = target / "m.mps"
        assert main(["export", "misvm-bigm", "--data", "gen:subset?data=musk1&bags=8&seed=0", "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"milopt: error: cannot write {out}: "), err
        assert ("Read-only file system" in err[0]) or ("Permission denied" in err[0]), err
        assert list(target.iterdir()) == []
    finally:
        _umount(target)


def test_export_library_read_only(tmp_path, capsys):
    from milopt.cli import main

    target = _read_only_dir(tmp_path)
    try:
        code = main(["export-library", str(target), "--formats", "mps", "--suite", "misvm-bigm.musk1-b8"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2, err
        assert "Traceback" not in "\n".join(err)
        assert err[-1].startswith("milopt: error: ") and str(target) in err[-1], err
        assert list(target.iterdir()) == []
    finally:
        _umount(target)


def test_written_file_has_the_umask_mode_and_keeps_a_replaced_files_mode(tmp_path):
    import numpy as np
    import scipy.sparse as sp

    from milopt.io import write
    from milopt.matrix import MatrixForm

    mf = _tiny_matrix(MatrixForm, np, sp)
    old = os.umask(0o027)
    try:
        write(mf, tmp_path / "a.mps")
        assert (tmp_path / "a.mps").stat().st_mode & 0o777 == 0o640
        (tmp_path / "a.mps").chmod(0o604)
        write(mf, tmp_path / "a.mps")   # replaced: keeps its mode, as open() would
        assert (tmp_path / "a.mps").stat().st_mode & 0o777 == 0o604
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mps"]


def test_named_temporary_file_fallback_is_removed_on_interrupt(tmp_path, monkeypatch):
    """Without O_TMPFILE the writer uses a named temporary file: an interrupt (Ctrl-C, SIGTERM
    through milopt.processes) in the middle of the write removes it."""
    import numpy as np
    import scipy.sparse as sp

    import milopt.io as mio
    from milopt.matrix import MatrixForm
    from milopt.processes import Interrupted

    monkeypatch.setattr(mio, "_tmpfile_supported", lambda folder: False)
    mf = _tiny_matrix(MatrixForm, np, sp)

    def chunks(m):
        yield b"NAME x\n"
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".milopt-")], "no named temporary file"
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setitem(mio.FORMATS, "mps", chunks)
    with pytest.raises(Interrupted):
        mio.write(mf, tmp_path / "a.mps")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    mio.write(mf, tmp_path / "b.mps")  # and it works when not interrupted
    assert [p.name for p in tmp_path.iterdir()] == ["b.mps"]


def test_split_bag_is_an_error_naming_both_blocks(tmp_path):
    from milopt.data import load
    from milopt.errors import InvalidDataError

    p = tmp_path / "split.csv"
    p.write_text("1,7,0.1,0.2\n1,7,0.3,0.1\n0,2,0.5,0.5\n1,7,0.9,0.9\n1,7,0.8,0.9\n")
    with pytest.raises(InvalidDataError, match=r"bag 7 is split .*rows 1-2 and rows 4-5"):
        load(str(p))


def test_did_you_mean_for_every_name(capsys):
    from milopt.cli import main

    cases = [
        (["solve", "misvm-bigmm", "--data", "musk1", "--solver", "scip"], "'misvm-bigm'"),
        (["solve", "misvm-bigm", "--data", "musk1", "--solver", "sicp"], "'scip'"),
        (["fit", "misvm-heuristc", "--data", "musk1"], "'misvm-heuristic'"),
        (["info", "gen:subsett?data=musk1"], "'subset'"),
        (["info", "musk3"], "'musk"),
        (["solve", "misvm-bigm", "--data", "musk1", "--solver", "scip", "--set", "Cc=1"], "'C'"),
        (["fit", "misvm-heuristic", "--data", "musk1", "--set", "CC=1"], "'C'"),
        (["list", "misvm-bigmm"], "'misvm-bigm'"),
    ]
    for argv, near in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "(did you mean " in err[0] and near in err[0], (argv, err)


# ------------------------------------------------------------------------------- slow matrix
SLOW_SOLVES = {
    "serial": (["solve", "misvm-bigm", "--data", SMALL, "--solver", "bnb", "--time-limit", "120"], None, (2.0, 10.0)),
    "bnb-workers": (["solve", "misvm-bigm", "--data", SMALL, "--solver", "bnb", "--set", "workers=2", "--time-limit",
                     "120"], _bnb_workers_ready, (0.0, 4.0)),
    "scip-isolated": (["solve", "misvm-bigm", "--data", SMALL, "--solver", "scip", "--time-limit", "120"], _one_child,
                      (0.5, 8.0)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(SLOW_SOLVES))
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_signal_during_solve(tmp_path, case, sig, group):
    argv, ready, (lo, hi) = SLOW_SOLVES[case]
    for k, t in enumerate(moments(f"solve:{case}:{int(sig)}:{group}", 2, lo, hi)):
        d = tmp_path / str(k)
        d.mkdir()
        res = run_and_signal(argv, sig, after=t, group=group, cwd=d, ready=ready)
        res.check(sig)
        if not res.finished_first and "termination:" in res.out:
            assert "termination: interrupted" in res.out, res.out[-1500:]


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_signal_during_export(tmp_path, sig, group):
    for k, t in enumerate(moments(f"export:{int(sig)}:{group}", 3, 0.2, 5.0)):
        d = tmp_path / str(k)
        d.mkdir()
        res = run_and_signal(["export", "misvm-bigm", "--data", SMALL, "-o", "m.mps.gz"], sig, after=t, group=group,
                             cwd=d)
        res.check(sig)
        _no_partial_file(d, "m.mps.gz")


def _bench_config(folder: Path) -> Path:
    p = folder / "long.toml"
    p.write_text(f'name = "long"\ntime_limit = 60\nfolds = 2\ndata = ["gen:digits?bags=6&max_size=3&seed=0"]\n'
                 f'imports = ["{HELPERS}"]\n\n[[fit]]\nmethod = "test-sleep"\nparams = {{ seconds = [30, 31] }}\n')
    return p


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_signal_during_bench(tmp_path, sig, group):
    cfg = _bench_config(tmp_path)
    for k, t in enumerate(moments(f"bench:{int(sig)}:{group}", 2, 0.0, 3.0)):
        d = tmp_path / str(k)
        d.mkdir()
        res = run_and_signal(["bench", str(cfg), "--out", "out", "--jobs", "2", "--quiet"], sig, after=t, group=group,
                             cwd=d, ready=lambda kids: len(kids) >= 4)   # fork server, tracker, 2 runs
        res.check(sig)


@pytest.mark.slow
def test_sigterm_during_bench_of_scip_suite(tmp_path):
    """The issue's case: a suite bench with isolated SCIP runs, SIGTERM to the parent alone."""
    (t,) = moments("bench-suite", 1, 2.0, 6.0)
    res = run_and_signal(["bench", "--suite", "misvm-bigm.musk1-b32,misvm-bigm.l1.musk1-b32", "--solvers", "scip",
                          "--time-limit", "120", "--jobs", "2", "--out", "out", "--quiet"], signal.SIGTERM, after=t,
                         group=False, cwd=tmp_path, ready=lambda kids: len(kids) >= 5)
    res.check(signal.SIGTERM)


# ------------------------------------------------------------------------------- helpers
def _tiny_matrix(MatrixForm, np, sp):
    """min x + 2y  s.t.  x + y >= 1,  x binary,  y >= 0."""
    return MatrixForm(c=np.array([1.0, 2.0]), c0=0.0, Q=None, A=sp.csr_matrix(np.array([[1.0, 1.0]])),
                      row_lb=np.array([1.0]), row_ub=np.array([np.inf]), col_lb=np.zeros(2),
                      col_ub=np.array([1.0, np.inf]), integrality=np.array([1, 0]), col_names=["x", "y"],
                      row_names=["r"])


def _mount(path: Path, opts: str) -> bool:
    if os.geteuid() != 0:
        return False
    path.mkdir(exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


def _umount(path: Path) -> None:
    if os.path.ismount(path):
        subprocess.run(["umount", str(path)], capture_output=True)


def _full_fs(tmp_path: Path):
    d = tmp_path / "tiny"
    return d if _mount(d, "size=64k") else None


def _read_only_dir(tmp_path: Path) -> Path:
    """A read-only target: a read-only tmpfs as root (root ignores permission bits), else a
    folder of mode 0555."""
    d = tmp_path / "ro"
    if _mount(d, "ro,size=64k"):
        return d
    d.mkdir(exist_ok=True)
    d.chmod(0o555)
    if os.access(d, os.W_OK):
        pytest.skip("cannot make a read-only folder here")
    return d
