"""The documentation cannot rot silently.

* Every public name (one definition: ``docs/_ext/milopt_api.py``) is listed in the API
  reference sources (``docs/api/*.rst``) and has a docstring.
* The README's Python snippets run, and the figures they quote are the figures they print.
* The short ``milopt`` commands shown in the README and in ``docs/`` run; every ``milopt``
  command line in a fenced block of the README or a docs page parses with the command's own
  argument parser (lines with placeholders such as ``DATA`` or ``[--json]`` are skipped).
* Every script in ``benchmarks/`` compiles.

None of this needs Sphinx; the docs build itself is a CI step (``.ci/run``).
"""
from __future__ import annotations

import contextlib
import io
import py_compile
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import milopt_api  # noqa: E402


# ----------------------------------------------------------------------------- API reference
def test_every_public_name_is_in_the_api_reference():
    api = milopt_api.public_api()
    documented = milopt_api.documented_names(DOCS / "api")
    public = [f"{m}.{n}" for m, names in api.items() for n in names]
    missing = [f for f in public if f not in documented]
    n, m = len(public) - len(missing), len(public)
    assert not missing, (f"{n} of {m} public names documented; add these to the autosummary list of their "
                         f"module in docs/api/*.rst: {missing}")
    # and the reference lists nothing that is not public (a stale entry is a broken page)
    stale = sorted(documented - set(public))
    assert not stale, f"docs/api/*.rst lists names that are not public (not in their module's __all__): {stale}"


def test_every_public_name_has_a_docstring():
    api = milopt_api.public_api()
    public = [(m, n) for m, names in api.items() for n in names]
    bare = [f"{m}.{n}" for m, n in public if not milopt_api.docstring_of(m, n).strip()]
    assert not bare, (f"{len(public) - len(bare)} of {len(public)} public names have a docstring; "
                      f"write one for: {bare}")


def test_public_modules_declare_their_names():
    """A public module has an ``__all__`` whose names exist, each listed once."""
    for module in milopt_api.PUBLIC_MODULES:
        names = milopt_api.public_names(module)  # raises when __all__ is missing
        mod = sys.modules[module]
        assert len(set(names)) == len(names), f"{module}.__all__ lists a name twice"
        absent = [n for n in names if not hasattr(mod, n)]
        assert not absent, f"{module}.__all__ names what the module does not have: {absent}"


def test_the_reference_finder_sees_a_missing_name(tmp_path):
    """The check above can fail: a page that lists one name less is seen as such."""
    page = (DOCS / "api" / "solvers.rst").read_text(encoding="utf-8")
    assert "   SolveResult\n" in page
    (tmp_path / "solvers.rst").write_text(page.replace("   SolveResult\n", ""), encoding="utf-8")
    found = milopt_api.documented_names(tmp_path)
    assert "milopt.solvers.solve" in found and "milopt.solvers.SolveResult" not in found


def test_params_directive_renders_what_milopt_list_prints(capsys):
    """The ``milopt-params`` tables of the docs come from the declaration ``milopt list --json``
    prints, for every formulation and method (needs Sphinx's docutils: the docs extra)."""
    pytest.importorskip("sphinx")
    import json

    import milopt_docs
    from milopt.cli import main

    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed["formulations"]) + len(listed["methods"]) >= 20
    for section in ("formulations", "methods"):
        for name, entry in listed[section].items():
            kind, _, summary = milopt_docs.params_summary(name, section[:-1])
            assert kind == section[:-1] and json.loads(json.dumps(summary)) == entry["params"], name
    with pytest.raises(KeyError):
        milopt_docs.params_summary("no-such-formulation")


# ----------------------------------------------------------------------------- README snippets
def _fenced(text: str, lang: str | None = None) -> list[str]:
    """Bodies of the fenced code blocks of a Markdown text (only ``lang`` blocks when given)."""
    out = []
    for m in re.finditer(r"^(```+|~~~+)[ \t]*([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", text, re.S | re.M):
        if lang is None or m.group(2) == lang:
            out.append(m.group(3))
    return out


def _readme_python() -> list[str]:
    blocks = _fenced((ROOT / "README.md").read_text(encoding="utf-8"), "python")
    assert blocks, "the README has no ```python block any more: update tests/test_docs.py"
    return blocks


_QUOTED = re.compile(r"^(?P<expr>[^#\n]*?\S)\s+#\s*\[(?P<values>[-0-9.eE ]+)\],\s*mean\s+(?P<mean>[-0-9.]+)\s*$")


def _check_quoted_figures(block: str, ns: dict) -> int:
    """Lines ``expr  # [v1 v2 ...], mean m`` of a snippet: ``expr`` evaluates to those values
    (as printed, 4 decimals) and their mean (3 decimals).  Returns how many were checked."""
    checked = 0
    for line in block.splitlines():
        m = _QUOTED.match(line)
        if not m:
            continue
        got = np.asarray(eval(m.group("expr"), ns), dtype=float)  # noqa: S307 - the README's own expression
        want = np.array([float(v) for v in m.group("values").split()])
        assert got.shape == want.shape and np.allclose(got, want, atol=5.1e-5), \
            f"README quotes {m.group('expr')} = {want}, it is {np.round(got, 4)}"
        assert abs(got.mean() - float(m.group("mean"))) <= 5.1e-4, \
            f"README quotes the mean of {m.group('expr')} as {m.group('mean')}, it is {got.mean():.4f}"
        checked += 1
    return checked


def _check_bag_counts(block: str, ns: dict) -> int:
    """``name = ...  # ... (92 bags, 476 instances)``: the data set has those sizes."""
    checked = 0
    for m in re.finditer(r"^(\w+)\s*=.*#.*\((\d+) bags, (\d+) instances\)", block, re.M):
        bags = ns[m.group(1)]
        assert (bags.n_bags, bags.n_instances) == (int(m.group(2)), int(m.group(3))), \
            f"README says {m.group(1)} has {m.group(2)} bags and {m.group(3)} instances"
        checked += 1
    return checked


def _run_blocks(blocks, tmp_path, monkeypatch, edit=None):
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__readme__"}
    checked = 0
    for i, block in enumerate(blocks):
        code = edit(i, block) if edit else block
        exec(compile(code, f"README.md python block {i + 1}", "exec"), ns)  # noqa: S102
        checked += _check_quoted_figures(block, ns) + _check_bag_counts(block, ns)
    return ns, checked


def _short_solve(i, block):
    """The README's solve runs 60 s on MUSK1; the default test run gives it 2 s (the snippet's
    API calls are what is checked here; ``test_readme_python_verbatim`` runs it as written)."""
    if "time_limit=60" not in block:
        return block
    assert block.count("time_limit=60") == 1
    return block.replace("time_limit=60", "time_limit=2")


def test_readme_python_runs_and_its_figures_hold(tmp_path, monkeypatch):
    blocks = _readme_python()
    ns, checked = _run_blocks(blocks, tmp_path, monkeypatch, edit=_short_solve)
    assert checked >= 1, "the README's quoted figures were not found: update the pattern or the README"
    if "result" in ns:  # the formulation snippet: a SolveResult and an exported file
        from milopt.solvers import SolveResult

        assert isinstance(ns["result"], SolveResult)
        assert (tmp_path / "musk1.mps").stat().st_size > 0


@pytest.mark.slow
def test_readme_python_verbatim(tmp_path, monkeypatch):
    _run_blocks(_readme_python(), tmp_path, monkeypatch)


def _readme_main_commands() -> list[str]:
    """The ``milopt`` commands of the README's first fenced block (its "main job")."""
    first = _fenced((ROOT / "README.md").read_text(encoding="utf-8"))[0]
    return [p.strip() for p in first.split("&&") if p.strip().startswith("milopt ")]


@pytest.mark.slow
def test_readme_main_job_figures(capsys):
    """The README's main job prints the figures the README quotes: the certified objective,
    bound and node count of the bnb proof, and VGPMIL's cross-validated accuracy and AUC."""
    import json

    from milopt.cli import main

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    solve, fit = _readme_main_commands()
    assert main(_argv(solve) + ["--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    obj, bound, nodes = re.search(r"objective ([0-9.]+), \*\*bound ([0-9.]+), gap [^*]*\*\* \(([0-9,]+) nodes\)",
                                  text).groups()
    assert got["termination"] == "optimal"
    assert (f"{got['objective']:.6f}", f"{got['bound']:.6f}", got["nodes"]) == (obj, bound, int(nodes.replace(",", "")))
    assert main(_argv(fit) + ["--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    acc, acc_sd, auc, auc_sd = re.search(r"bag accuracy \*\*([0-9.]+) ± ([0-9.]+)\*\*, AUC \*\*([0-9.]+) ± ([0-9.]+)\*\*",
                                         text).groups()
    assert [f"{got[k]['bag_accuracy']:.3f}" for k in ("mean", "std")] == [acc, acc_sd]
    assert [f"{got[k]['bag_auc']:.3f}" for k in ("mean", "std")] == [auc, auc_sd]


# ----------------------------------------------------------------------------- milopt commands
def _doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*/*.md"))]


def _command_lines() -> list[tuple[str, str]]:
    """``(where, command)`` for every ``milopt ...`` command in a fenced block of the README
    and the docs pages (``a && milopt b`` gives ``milopt b``; a ``$`` prompt is dropped)."""
    out = []
    for page in _doc_pages():
        for block in _fenced(page.read_text(encoding="utf-8")):
            for line in block.splitlines():
                line = line.strip()
                if line.startswith("$ "):
                    line = line[2:]
                for part in line.split("&&"):
                    part = part.strip()
                    if part.startswith("milopt ") and "(" not in part.split("#")[0]:
                        out.append((page.relative_to(ROOT).as_posix(), part))
    return out


def _is_placeholder(tokens: list[str]) -> bool:
    """A synopsis line, not a command: ``DATA``, ``FILE.mps``, ``[--json]``, ``...``, ``a|b``."""
    return any(t.startswith("[") or t.endswith("]") or "..." in t or re.fullmatch(r"[A-Z][A-Z0-9_]*(\.\w+)*", t)
               or ("|" in t and not t.startswith(("gen:", "'gen:", '"gen:'))) for t in tokens)


def _argv(command: str) -> list[str]:
    return shlex.split(command, comments=True)[1:]


def test_documented_commands_parse():
    from milopt.cli import build_parser, plugins_first

    lines = _command_lines()
    assert len(lines) >= 10, "fewer than 10 milopt commands found in the docs: is the extraction broken?"
    parsed, failures = 0, []
    for where, command in lines:
        argv = _argv(command)
        if _is_placeholder(argv):
            continue
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                build_parser().parse_args(plugins_first(argv))
            parsed += 1
        except SystemExit:
            failures.append(f"{where}: {command}\n    {err.getvalue().strip().splitlines()[-1]}")
    assert not failures, "documented commands the parser rejects:\n" + "\n".join(failures)
    assert parsed >= 10, f"only {parsed} documented commands were checked"


def test_the_command_check_sees_a_bad_option():
    from milopt.cli import build_parser

    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        build_parser().parse_args(_argv("milopt fit vgpmil --data musk1 --folds 5"))
    assert _is_placeholder(_argv("milopt info DATA [--json]"))
    assert not _is_placeholder(_argv("milopt fit misvm-miqp --data 'gen:kent-yu?scenario=3&bags=40' --cv 5"))


#: short commands shown in the README and docs, run for real (a few seconds in all)
SHORT_COMMANDS = [
    "milopt datasets",
    "milopt info musk1",
    "milopt list",
    "milopt list misvm-bigm --json",
    'milopt export misvm-dual-qp --data "gen:kent-yu?scenario=3&bags=20" -o dual.mps',
]


@pytest.mark.parametrize("command", SHORT_COMMANDS)
def test_short_documented_commands_run(command, tmp_path, monkeypatch, capsys):
    from milopt.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(_argv(command)) == 0, f"`{command}` failed: {capsys.readouterr().err.strip()}"
    out = capsys.readouterr().out
    assert out.strip(), f"`{command}` printed nothing"
    if "-o " in command:
        assert (tmp_path / command.split("-o ")[1].split()[0]).stat().st_size > 0
    if "--json" in command:
        import json

        assert json.loads(out)


def test_short_commands_are_the_documented_ones():
    """Each command of :data:`SHORT_COMMANDS` is one the README or a docs page shows (fenced or
    inline), so that this test follows the docs rather than a list of its own."""
    shown = "\n".join(p.read_text(encoding="utf-8") for p in _doc_pages())
    shown = shown.replace("'", '"')
    absent = [c for c in SHORT_COMMANDS if c.replace("'", '"') not in shown
              and c.split(" --json")[0] not in shown]
    assert not absent, f"no longer shown in README.md or docs/*.md (update SHORT_COMMANDS): {absent}"


# ----------------------------------------------------------------------------- benchmarks
#: scripts known not to compile, with the reason (a fix removes the entry)
KNOWN_BROKEN: dict[str, str] = {}
BENCHMARKS = [pytest.param(p, id=p.name, marks=pytest.mark.xfail(reason=KNOWN_BROKEN[p.name], strict=False))
              if p.name in KNOWN_BROKEN else pytest.param(p, id=p.name)
              for p in sorted((ROOT / "benchmarks").glob("*.py"))]


@pytest.mark.parametrize("script", BENCHMARKS)
def test_benchmark_scripts_compile(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)
