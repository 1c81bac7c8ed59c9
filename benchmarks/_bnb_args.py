"""The command-line block the bnb benchmarks share (``bnb_search.py``, ``bnb_kernel.py``).

``parser(doc, data)`` gives ``--data`` (an instance as ``exact_frontier.load_instance`` reads
it: ``nested:musk1:N``, ``musk1``, generators), ``--time-limit``, ``--set KEY=VALUE`` (bnb
options, checked against ``milopt.algorithms.bnb.options.PARAMS``) and ``--json``;
``load_bags(args)`` the instance with standardised features; ``set_options(args)`` the
``--set`` pairs as a dict of strings.
"""
from __future__ import annotations

import argparse
import os
import sys


def parser(doc, data, time_limit=None):
    """An ``ArgumentParser`` described by the first line of ``doc`` with the shared options."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--data", default=data)
    ap.add_argument("--time-limit", type=float, default=time_limit)
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="bnb / solver options (as --set)")
    ap.add_argument("--json", action="store_true")
    return ap


def set_options(args):
    """``--set KEY=VALUE`` pairs as ``{key: value}`` (values as strings; a pair without ``=``
    is refused with one line)."""
    out = {}
    for kv in args.set:
        if "=" not in kv:
            raise SystemExit(f"--set: expected KEY=VALUE, got {kv!r}")
        k, v = kv.split("=", 1)
        out[k.strip()] = v
    return out


def load_bags(args):
    """The instance ``--data`` with standardised features."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exact_frontier import load_instance

    from milopt.metrics import standardize

    return standardize(load_instance(args.data, 0))
