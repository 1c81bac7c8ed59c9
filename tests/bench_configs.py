"""Bench configurations shared by the bench and library tests (text only: importing this
registers nothing)."""
from __future__ import annotations


def sleep_config(name: str, seconds, *, time_limit: float = 5, data="gen:digits?bags=6&max_size=3&seed=0",
                 **top) -> str:
    """A bench configuration (TOML text) of one ``test-sleep`` fit; ``top`` adds top-level keys."""
    import json
    from pathlib import Path

    helpers = Path(__file__).with_name("bench_helpers.py")
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in top.items())
    return (f'name = "{name}"\ntime_limit = {time_limit}\nfolds = 2\n{extra}data = ["{data}"]\n'
            f'imports = ["{helpers}"]\n\n[[fit]]\nmethod = "test-sleep"\n'
            f"params = {{ seconds = {json.dumps(seconds)} }}\n")

