"""The argument parser of the ``milopt`` command: every subcommand, option, default and help text.

The functions that run the subcommands are in :mod:`milopt.cli`, whose
:func:`~milopt.cli.build_parser` binds them to this tree (the parser the command uses and the
command reference documents).
"""
from __future__ import annotations

import argparse
import importlib


class _HelpFormatter(argparse.HelpFormatter):
    """``--help`` states each option's default (when it has one worth stating)."""

    def _get_help_string(self, action):
        h = action.help or ""
        d = action.default
        if "%(default)" in h or d is None or d is False or d == [] or d is argparse.SUPPRESS \
                or not action.option_strings:
            return h
        return f"{h} (default: %(default)s)" if h else "default: %(default)s"


def build_parser(commands, plugins=()) -> argparse.ArgumentParser:
    """The argparse tree of the ``milopt`` command.

    ``commands`` maps each built-in subcommand (``datasets``, ``info``, ``list``, ``fit``,
    ``solve``, ``export``, ``study``) to the function that runs it (``args.func``); each module of
    ``plugins`` that is installed adds its own subcommands through its ``register(subparsers)``.
    :func:`milopt.cli.build_parser` calls this with the functions of :mod:`milopt.cli`.
    """
    p = argparse.ArgumentParser(prog="milopt", description="Optimization models and algorithms for "
                                "support-vector multiple-instance learning.", formatter_class=_HelpFormatter,
                                epilog="`milopt list` shows every method's and formulation's keys (--set "
                                       "key=value) with their defaults and meanings; `milopt list NAME` one of them.")
    from milopt import __version__

    p.add_argument("--version", action="version", version=f"milopt {__version__}")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE",
                   help="a .py file or module that registers formulations, methods, backends (repeatable; "
                        "accepted anywhere on the command line, before or after the subcommand)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add = sub.add_parser

    def add_parser(name, **kw):  # every subcommand's --help states defaults too
        kw.setdefault("formatter_class", _HelpFormatter)
        return _add(name, **kw)

    sub.add_parser = add_parser

    sp = sub.add_parser("datasets", help="list the shipped data sets")
    _common(sp, data=False)
    sp.set_defaults(func=commands["datasets"])

    sp = sub.add_parser("info", help="size of a data set")
    sp.add_argument("data", metavar="DATA")
    sp.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE")
    _common(sp, data=False)
    sp.set_defaults(func=commands["info"])

    sp = sub.add_parser("list", help="methods, formulations, solvers and generators, with every key's default "
                        "and meaning")
    sp.add_argument("names", nargs="*", metavar="NAME", help="only these methods / formulations / solvers / "
                    "generators (default: all)")
    _common(sp, data=False)
    sp.set_defaults(func=commands["list"])

    _add_fit(sub, commands["fit"])
    _add_solve(sub, commands["solve"])

    sp = sub.add_parser("export", help="write a formulation to .mps / .lp (optionally .gz)")
    sp.add_argument("formulation", metavar="FORMULATION")
    _common(sp)
    sp.add_argument("-o", "--output", required=True, metavar="FILE")
    sp.set_defaults(func=commands["export"])

    sp = sub.add_parser("study", help="simulation studies (kent-yu)")
    sp.add_argument("name", metavar="STUDY")
    sp.add_argument("--out", default="kent-yu-study")
    sp.add_argument("--replicates", type=int, default=None)
    sp.add_argument("--quick", action="store_true")
    sp.add_argument("--full", action="store_true", help="the paper's protocol: 12 size settings x 100 replicates")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=commands["study"])

    for mod in plugins:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        m.register(sub)
    return p


def _common(sp, data=True):
    """``--data`` and ``--set`` (with ``data``) and ``--json``: the options most subcommands share."""
    if data:
        sp.add_argument("--data", required=True, metavar="DATA",
                        help="shipped name (musk1, musk2), CSV path, or gen:NAME?key=value&...")
        sp.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="parameters, e.g. --set C=10 kernel=rbf (repeatable)")
    sp.add_argument("--json", action="store_true", help="print JSON")


def _add_fit(sub, func):
    """``milopt fit METHOD``: its options, run by ``func``."""
    sp = sub.add_parser("fit", help="fit a method (optionally K-fold CV over bags)",
                        epilog="METHOD's keys, their defaults and meanings: milopt list METHOD.  Warnings (e.g. a "
                               "model that predicts one class for every bag) go to stderr and to the 'warnings' "
                               "field of --json.")
    sp.add_argument("method", metavar="METHOD")
    _common(sp)
    sp.add_argument("--cv", type=int, default=None, metavar="K", help="stratified K-fold CV over bags")
    sp.add_argument("--seed", type=int, default=0, help="seed of the fold split and of the method's "
                    "random_state (unless --set random_state=...)")
    sp.add_argument("--time-limit", type=float, default=None, dest="time_limit", metavar="T",
                    help="seconds per fit for methods with a time limit (same as --set time_limit=T)")
    sp.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    sp.add_argument("--progress", action="store_true", help="progress lines on stderr even when it is not a terminal")
    sp.add_argument("--tune", action="append", default=[], metavar="KEY=V1,V2,...",
                    help="nested CV over these values (repeatable: the grid is the product); needs --cv")
    sp.add_argument("--inner-cv", type=int, default=None, dest="inner_cv", metavar="K",
                    help="inner folds of --tune (default 3)")
    sp.add_argument("--tune-metric", default=None, dest="tune_metric", metavar="auc|accuracy",
                    help="--tune selects by mean inner bag AUC (default; ties: accuracy) or accuracy (ties: AUC)")
    sp.set_defaults(func=func)


def _add_solve(sub, func):
    """``milopt solve FORMULATION``: its options, run by ``func``."""
    sp = sub.add_parser("solve", help="build a formulation and solve it")
    sp.add_argument("formulation", metavar="FORMULATION")
    _common(sp)
    sp.add_argument("--solver", required=True)
    sp.add_argument("--time-limit", type=float, default=None, dest="time_limit", metavar="T",
                    help="seconds for the whole command: loading, building, hand-off and solve "
                         "(same as --set time_limit=T)")
    sp.add_argument("--gap", type=float, default=None)
    sp.add_argument("--threads", type=int, default=None)
    sp.add_argument("--verbose", action="store_true")
    sp.add_argument("--warm-start", action="store_const", const=True, default=None, dest="warm_start",
                    help="start from the formulation's cheap feasible point (e.g. a linear SVM for misvm-bigm, "
                         "which does so by default)")
    sp.add_argument("--no-warm-start", action="store_const", const=False, dest="warm_start",
                    help="cold start (same as --set warm_start=false where the formulation has that key)")
    sp.set_defaults(func=func)
