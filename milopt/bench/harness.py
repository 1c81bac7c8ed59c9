"""``milopt bench``: expand a configuration, execute its runs, append rows durably, show progress.

Output folder layout::

    DIR/runs.csv      one row per finished run (appended, flushed and fsynced as runs finish)
    DIR/config.toml   the configuration used (copied at the start)
    DIR/bench.json    planned run ids and bench metadata

``--resume`` reads ``runs.csv`` and skips every run id already in it; a trailing partial line
(the bench killed while writing) is cut off first.
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from pathlib import Path

from milopt.bench.config import load_config
from milopt.bench.plan import expand
from milopt.bench.execute import COLUMNS, iter_dask, iter_local, warm_up
from milopt.errors import InvalidParameterError


class RunStore:
    """Append-only CSV of run rows with durable appends."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.path = self.folder / "runs.csv"

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def repair(self) -> None:
        """Drop a partial last line left by an interrupted write."""
        if not self.exists():
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1
            fh.seek(cut)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())

    def header(self) -> list[str]:
        with open(self.path, newline="") as fh:
            return next(csv.reader(fh), [])

    def finished_ids(self) -> set[str]:
        if not self.exists():
            return set()
        with open(self.path, newline="") as fh:
            return {r["run_id"] for r in csv.DictReader(fh) if r.get("run_id") and r.get("outcome")}

    def _write(self, text: str) -> None:
        with open(self.path, "a", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.exists():
            self._write(self._line(COLUMNS))
        elif self.header() != COLUMNS:
            raise InvalidParameterError(f"{self.path}: written by another version of milopt bench (columns "
                                        "differ); use a new --out folder")

    @staticmethod
    def _line(values) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(values)
        return buf.getvalue()

    def append(self, row: dict) -> None:
        self._write(self._line(["" if row.get(c) is None else row.get(c) for c in COLUMNS]))


def _fmt_seconds(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Runs done/total, failures, elapsed time and ETA on stderr (one line per run; in place on a TTY)."""

    def __init__(self, total: int, *, skipped: int = 0, stream=None, enabled: bool = True):
        self.total = total
        self.skipped = skipped
        self.done = 0
        self.failures = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def line(self, row: dict | None = None) -> str:
        el = time.monotonic() - self.t0
        eta = "?" if not self.done else _fmt_seconds(el / self.done * (self.total - self.done))
        s = (f"[{self.done}/{self.total}] failures {self.failures} | elapsed {_fmt_seconds(el)} | ETA {eta}")
        if self.skipped:
            s += f" | resumed past {self.skipped}"
        if row is not None:
            what = row.get("formulation") or row.get("method")
            tail = row.get("termination") or ""
            if row.get("outcome") != "ok":
                tail = row.get("outcome")
            t = row.get("time")
            who = row.get("contender")
            who = who if who == what else f"{who} {what}"
            s += f" | {row['run_id']} {who} {row.get('data')} {tail}"
            if isinstance(t, (int, float)):
                s += f" {t:.2f}s"
        return s

    def update(self, row: dict) -> None:
        self.done += 1
        if row.get("outcome") != "ok":
            self.failures += 1
        if self.enabled:
            end = "" if self.tty and self.done < self.total else "\n"
            pre = "\r\x1b[2K" if self.tty else ""
            self.stream.write(pre + self.line(row) + end)
            self.stream.flush()

    def start(self) -> None:
        if self.enabled:
            self.stream.write(f"milopt bench: {self.total} run(s) to do"
                              + (f", {self.skipped} already finished" if self.skipped else "") + "\n")
            self.stream.flush()


def run_bench(config=None, out="bench-out", *, jobs: int | None = None, scheduler=None, resume: bool = False,
              progress: bool = True, stream=None, max_runs: int | None = None, select=None) -> dict:
    """Run a bench.

    Parameters
    ----------
    config : str, Path or dict, optional
        TOML path (the shipped default when None) or an already loaded configuration.
    out : str or Path
        Output folder (``runs.csv`` etc.).
    jobs : int, optional
        Runs executed at once locally (joblib threads, one process per run); default from the
        configuration's ``jobs`` key, else 1.  ``-1``: one per CPU.
    scheduler : str or dask.distributed.Client, optional
        Execute on a Dask cluster instead (the rows are written here, as they finish).
    resume : bool
        Skip runs whose id is already in ``DIR/runs.csv``.  Without it an existing non-empty
        table is an error (nothing is overwritten).
    max_runs : int, optional
        Execute at most this many of the remaining runs (testing / partial benches).
    select : callable, optional
        Keep only the runs ``r`` (:class:`~milopt.bench.config.Run`) with ``select(r)`` true.

    Returns
    -------
    dict
        ``total``, ``skipped``, ``executed``, ``failures``, ``seconds``, ``out``, ``table``.
    """
    cfg = config if isinstance(config, dict) else load_config(config)
    if scheduler is None:
        warm_up(cfg.get("isolation", "auto"))  # fork server imports in parallel with the expansion
    runs = expand(cfg)
    if select is not None:
        runs = [r for r in runs if select(r)]
        if not runs:
            raise InvalidParameterError("bench: no run left after the selection")
    store = RunStore(out)
    if store.exists() and not resume:
        raise InvalidParameterError(f"{store.path} already holds results; pass --resume to continue that bench "
                                    "or choose another --out folder")
    store.folder.mkdir(parents=True, exist_ok=True)
    lock = _lock(store.folder)
    try:
        return _run(cfg, runs, store, lock, jobs=jobs, scheduler=scheduler, resume=resume, progress=progress,
                    stream=stream, max_runs=max_runs)
    finally:
        lock.close()


def _lock(folder: Path):
    """Exclusive lock on ``folder/.lock``: two benches never append to the same table."""
    fh = open(folder / ".lock", "w")
    try:
        import fcntl

        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - not POSIX
        pass
    except OSError:
        fh.close()
        raise InvalidParameterError(f"another milopt bench is writing {folder}; wait for it or use another --out")
    return fh


def _run(cfg, runs, store, lock, *, jobs, scheduler, resume, progress, stream, max_runs) -> dict:
    store.repair()
    done = store.finished_ids() if resume else set()
    store.start()
    if "_text" in cfg and not (store.folder / "config.toml").exists():
        (store.folder / "config.toml").write_text(cfg["_text"])
    meta = {"name": cfg.get("name", ""), "config": cfg.get("_path"), "runs": [r.run_id for r in runs],
            "time_limit": cfg.get("time_limit")}
    if cfg.get("suite"):
        from milopt.bench.config import SUITE_GAP, SUITE_TIME_LIMIT
        from milopt.bench.library import suite

        meta.update(suite=cfg["suite"], instances=[i.name for i in suite(cfg["suite"])],
                    gap=cfg.get("gap", SUITE_GAP), time_limit=cfg.get("time_limit", SUITE_TIME_LIMIT))
    (store.folder / "bench.json").write_text(json.dumps(meta, indent=1))
    remaining = [r for r in runs if r.run_id not in done]
    skipped = len(runs) - len(remaining)
    todo = remaining if max_runs is None else remaining[:max_runs]
    prog = Progress(len(todo), skipped=skipped, stream=stream, enabled=progress)
    prog.start()
    tasks = [r.task() for r in todo]
    if jobs is None:
        jobs = int(cfg.get("jobs", 1))
    it = iter_dask(tasks, scheduler) if scheduler is not None else iter_local(tasks, jobs)
    t0 = time.monotonic()
    try:
        for row in it:
            store.append(row)
            prog.update(row)
    except BaseException:
        # Ctrl-C (or any failure of the bench itself): end the runs in flight now, so that the
        # process exits at once instead of waiting for them in multiprocessing's exit handler
        from milopt.bench.execute import kill_running, remove_run_folders

        kill_running()
        remove_run_folders()
        raise
    return {"total": len(runs), "skipped": skipped, "executed": prog.done, "failures": prog.failures,
            "seconds": time.monotonic() - t0, "out": str(store.folder), "table": str(store.path)}
