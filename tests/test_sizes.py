"""Function and module sizes in ``milopt/`` (the formulations in ``milopt/models/`` included).

* A module longer than :data:`MODULE_LINES` lines states at its top (in its first
  :data:`HEAD_LINES` lines) why it is one module: a line starting ``# size:``.
* A function whose code is :data:`FUNCTION_LINES` lines or more (its docstring not counted:
  documentation is never a reason to split) is listed in :data:`LONG_FUNCTIONS` with the reason
  it stays whole; a function that shrank below the limit must leave the list.
* Neither a reason nor the list goes past the ceiling: no module over :data:`MODULE_CEILING`
  lines, no function over :data:`FUNCTION_CEILING` lines of code.

``python tests/test_sizes.py`` prints every module and function over the limits.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 600
FUNCTION_LINES = 80
HEAD_LINES = 40
#: hard limits: a ``# size:`` reason or a LONG_FUNCTIONS entry does not excuse a module or a function past them
MODULE_CEILING = 700
FUNCTION_CEILING = 150

#: ``path::qualified name`` -> why the function stays one function
LONG_FUNCTIONS = {
    "milopt/algorithms/bnb/api.py::solve_bags":
        "the branch-and-bound entry point: options, starts, the search and the result record in the order "
        "they happen, one time budget across them",
    "milopt/algorithms/pdmisvm.py::pdmisvm_admm":
        "one ADMM iteration's updates share a dozen arrays and follow the paper's sequence of steps",
    "milopt/qp/svm_dcd.py::GroupSVMDual.solve":
        "the SMO loop: working-set selection, the two-variable update and shrinking share the gradient and "
        "the active set",
    "milopt/cli.py::cmd_fit":
        "argument checks and the text report of `milopt fit`, in the order the command prints them",
    "milopt/data/gen_cad.py::cad":
        "the CAD generator's steps (batches, coordinates, labels, features) in sequence, one random stream",
    "milopt/mil/dcmil.py::dcpca_iterate":
        "the DCPCA iteration with its steps numbered as in the paper (bundle, direction, line search, "
        "null steps)",
    "milopt/study.py::_one_task":
        "one task of the Kent & Yu study: data, every method, every metric, one record",
}


def _py_files():
    for top in ("milopt",):
        yield from sorted((ROOT / top).rglob("*.py"))


def _functions(tree):
    """(qualified name, node) of every function, methods and nested functions included."""
    def walk(node, prefix):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + ch.name
                yield name, ch
                yield from walk(ch, name + ".")
            elif isinstance(ch, ast.ClassDef):
                yield from walk(ch, prefix + ch.name + ".")
            else:
                yield from walk(ch, prefix)
    yield from walk(tree, "")


def code_lines(fn) -> int:
    """Lines of a function from ``def`` to its end, its docstring left out."""
    n = fn.end_lineno - fn.lineno + 1
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        n -= first.end_lineno - first.lineno + 1
    return n


def measure():
    """(long modules [(path, lines, has reason)], long functions [(key, code lines)])."""
    modules, functions = [], []
    for p in _py_files():
        text = p.read_text()
        rel = p.relative_to(ROOT).as_posix()
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        if lines > MODULE_LINES:
            head = text.splitlines()[:HEAD_LINES]
            modules.append((rel, lines, any(s.startswith("# size:") for s in head)))
        for name, fn in _functions(ast.parse(text)):
            n = code_lines(fn)
            if n >= FUNCTION_LINES:
                functions.append((f"{rel}::{name}", n))
    return modules, functions


def test_nothing_passes_the_ceiling():
    modules, functions = measure()
    big = [f"{p} ({n} lines)" for p, n, _ in modules if n > MODULE_CEILING]
    big += [f"{k} ({n} lines of code)" for k, n in functions if n > FUNCTION_CEILING]
    assert not big, (f"over the ceiling of {MODULE_CEILING} lines per module and {FUNCTION_CEILING} lines of code "
                     f"per function, which no '# size:' reason or LONG_FUNCTIONS entry lifts: split them: {big}")


def test_long_modules_state_why():
    modules, _ = measure()
    silent = [f"{p} ({n} lines)" for p, n, why in modules if not why]
    assert not silent, (f"modules over {MODULE_LINES} lines without a '# size: <reason>' line in their first "
                        f"{HEAD_LINES} lines (split them, or state why they are one module): {silent}")


def test_long_functions_are_listed_with_a_reason():
    _, functions = measure()
    unlisted = [f"{k} ({n} lines)" for k, n in functions if k not in LONG_FUNCTIONS]
    assert not unlisted, (f"functions of {FUNCTION_LINES}+ lines of code: split them along their seams, or add "
                          f"them to LONG_FUNCTIONS with the reason they stay whole: {unlisted}")
    long_now = {k for k, _ in functions}
    stale = sorted(set(LONG_FUNCTIONS) - long_now)
    assert not stale, f"no longer {FUNCTION_LINES}+ lines (remove from LONG_FUNCTIONS): {stale}"
    assert all(len(why) > 30 for why in LONG_FUNCTIONS.values())


if __name__ == "__main__":
    mods, funcs = measure()
    print(f"modules over {MODULE_LINES} lines (ceiling {MODULE_CEILING}):")
    for p, n, why in mods:
        print(f"  {n:5d}  {p}{'' if why else '  (no # size: reason)'}{'  (over the ceiling)' if n > MODULE_CEILING else ''}")
    print(f"functions of {FUNCTION_LINES}+ lines of code (docstrings not counted; ceiling {FUNCTION_CEILING}):")
    for k, n in sorted(funcs, key=lambda t: -t[1]):
        print(f"  {n:5d}  {k}{'' if k in LONG_FUNCTIONS else '  (not listed)'}"
              f"{'  (over the ceiling)' if n > FUNCTION_CEILING else ''}")
