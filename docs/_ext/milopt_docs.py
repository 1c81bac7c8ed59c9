"""Sphinx directives that render milopt's own declarations, so that the docs and the
``milopt`` command cannot drift apart.

``milopt-params NAME``
    The parameter table (key, accepts, default, meaning) of a registered formulation or fit
    method, from the :class:`~milopt.params.ParamSet` that ``milopt list NAME`` prints
    (``Formulation.params`` / ``MethodSpec.params``, via :meth:`~milopt.params.ParamSet.summary`).

``milopt-catalogue``
    Every registered formulation, method, solver backend and data generator, each with its
    one-line description and its parameters (formulations, methods, generators, and solvers
    that declare their options): the content of ``milopt list --json``.

Both are usable from MyST Markdown as fenced directives::

    ```{milopt-params} misvm-bigm
    ```

``:kind: method`` (or ``formulation``, ``solver``) picks one of two registrations under one
name (``dcmil-dca`` is a formulation and a fit method)::

    ```{milopt-params} dcmil-dca
    :kind: method
    ```
"""
from __future__ import annotations

import inspect
import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def _fmt(v) -> str:
    """A default as ``milopt list`` prints it (none, true/false, comma-joined lists)."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_fmt(x) for x in v)
    return str(v)


def _text_cell(text: str, literal: bool = False) -> nodes.entry:
    entry = nodes.entry()
    para = nodes.paragraph()
    para += nodes.literal(text, text) if literal else nodes.Text(text)
    entry += para
    return entry


def _table(header: list[str], rows: list[list[tuple[str, bool]]], widths: list[int]) -> nodes.table:
    table = nodes.table(classes=["milopt-params"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    row = nodes.row()
    for h in header:
        row += _text_cell(h)
    thead += row
    group += thead
    tbody = nodes.tbody()
    for r in rows:
        row = nodes.row()
        for text, literal in r:
            row += _text_cell(text, literal)
        tbody += row
    group += tbody
    return table


KINDS = ("formulation", "method", "solver")


def params_summary(name: str, kind: str | None = None) -> tuple[str, str, dict]:
    """(kind, one-line doc, ``{key: {"default", "accepts", "help"}}``) of a registered
    formulation, method or solver with declared options: the declaration ``milopt list NAME
    --json`` prints.  A name registered as both (``dcmil-dca``) is the formulation unless
    ``kind`` says otherwise."""
    from milopt.estimators.registry import methods
    from milopt.models import formulations

    forms = formulations()
    if name in forms and kind in (None, "formulation"):
        f = forms[name]
        return "formulation", f.doc, f.params.summary()
    meths = methods()
    if name in meths and kind in (None, "method"):
        m = meths[name]
        return "method", m.doc, m.params.summary()
    from milopt.solvers import backends

    back = backends()
    if name in back and getattr(back[name], "params", None) and kind in (None, "solver"):
        return "solver", back[name].description, back[name].params.summary()
    raise KeyError(f"milopt-params: {name!r} is neither a registered formulation, a method nor a solver with "
                   f"declared options; `milopt list` shows them all")


def params_table(summary: dict) -> nodes.table:
    rows = [[(k, True), (p.get("accepts") or "", False), (_fmt(p.get("default")), True), (p.get("help") or "", False)]
            for k, p in summary.items()]
    return _table(["key", "accepts", "default", "meaning"], rows, [15, 25, 15, 45])


def generator_params(func) -> dict:
    """``{key: default}`` of a generator: the keys ``gen:NAME?key=value`` accepts (its signature)."""
    out = {}
    for p in inspect.signature(func).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[p.name] = None if p.default is p.empty else p.default
    return out


class MiloptParams(SphinxDirective):
    """``milopt-params NAME``: the parameter table of a formulation, a method or a solver
    that declares its options (``bnb``)."""

    required_arguments = 1
    has_content = False
    option_spec = {"kind": lambda arg: directives.choice(arg, KINDS)}

    def run(self):
        name = self.arguments[0].strip()
        try:
            kind, doc, summary = params_summary(name, self.options.get("kind"))
        except KeyError as exc:
            raise self.error(str(exc.args[0])) from None
        intro = nodes.paragraph()
        intro += nodes.Text(f"Parameters of the {kind} ")
        intro += nodes.literal(name, name)
        intro += nodes.Text(" (set with ")
        intro += nodes.literal("--set key=value", "--set key=value")
        if kind != "solver":
            intro += nodes.Text("; the same table as ")
            cmd = f"milopt list {name}"
            intro += nodes.literal(cmd, cmd)
        intro += nodes.Text("):")
        if not summary:
            return [intro, nodes.paragraph(text="(no parameters)")]
        return [intro, params_table(summary)]


class MiloptCatalogue(SphinxDirective):
    """``milopt-catalogue``: every registered formulation, method, solver and generator."""

    has_content = False
    option_spec = {"section": directives.unchanged}

    def _section(self, title: str, ident: str) -> nodes.section:
        sec = nodes.section(ids=[nodes.make_id(f"catalogue-{ident}")])
        sec += nodes.title(title, title)
        return sec

    def _entry(self, name: str, doc: str, ident: str) -> nodes.section:
        sec = nodes.section(ids=[nodes.make_id(f"{ident}-{name}")])
        title = nodes.title()
        title += nodes.literal(name, name)
        sec += title
        if doc:
            sec += nodes.paragraph(text=doc)
        return sec

    def run(self):
        from milopt.data.registry import generators
        from milopt.estimators.registry import methods
        from milopt.models import formulations
        from milopt.solvers import backends

        wanted = (self.options.get("section") or "formulations,methods,solvers,generators").split(",")
        out = []
        if "formulations" in wanted:
            sec = self._section("Formulations", "formulations")
            for n, f in sorted(formulations().items()):
                e = self._entry(n, f.doc, "formulation")
                e += params_table(f.params.summary()) if f.params else nodes.paragraph(text="(no parameters)")
                sec += e
            out.append(sec)
        if "methods" in wanted:
            sec = self._section("Methods", "methods")
            for n, m in sorted(methods().items()):
                e = self._entry(n, m.doc, "method")
                summary = m.params.summary()
                e += params_table(summary) if summary else nodes.paragraph(text="(no parameters)")
                sec += e
            out.append(sec)
        if "solvers" in wanted:
            sec = self._section("Solvers", "solvers")
            back = {n: b for n, b in sorted(backends().items()) if b.name == n}  # aliases once, under the name
            rows = [[(n, True), (", ".join(sorted(b.classes)), False), (b.description or "", False)]
                    for n, b in back.items()]
            sec += _table(["solver", "problem classes", "description"], rows, [15, 30, 55])
            for n, b in back.items():
                if getattr(b, "params", None):
                    e = self._entry(n, f"options of --solver {n} (set with --set key=value)", "solver")
                    e += params_table(b.params.summary())
                    sec += e
            out.append(sec)
        if "generators" in wanted:
            sec = self._section("Generators", "generators")
            for n, g in sorted(generators().items()):
                e = self._entry(f"gen:{n}", g.doc, "generator")
                rows = [[(k, True), (_fmt(d), True)] for k, d in generator_params(g.func).items()]
                if rows:
                    e += _table(["key", "default"], rows, [30, 70])
                sec += e
            out.append(sec)
        return out


def skip_foreign_member(app, what, name, obj, skip, options):
    """Leave out of a class's page the methods scikit-learn generates on every estimator
    (``set_fit_request``, ...): they are scikit-learn's, documented there."""
    if what == "class" and re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def _import(path: str):
    """The object at a dotted ``path`` (a module, then attributes), or None."""
    import importlib

    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 - a module that fails to import resolves nothing
            return None
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


def resolve_same_object(app, env, node, contnode):
    """Resolve a Python cross-reference to the page of the object it names when that object
    is documented under another path: ``:func:`bag_costs``` in a docstring shown on a page of
    a module that re-exports it, or ``milopt.estimators.registry.register_method``
    (documented as ``milopt.estimators.register_method``).  The target is imported relative
    to the module that defines the documented object (and to the page's current module), and
    the reference goes to the documented name that is the *same object*; otherwise it stays
    unresolved (and ``nitpicky`` reports it)."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip("~.")
    if not target or target.split(".")[0] in ("numpy", "np", "scipy", "sklearn", "pandas", "pyomo"):
        return None
    contexts = []
    refdoc = node.get("refdoc", "")
    if refdoc.startswith("api/generated/"):
        documented = _import(refdoc.rsplit("/", 1)[1])
        mod = getattr(documented, "__module__", None) if documented is not None else None
        if documented is not None and not isinstance(mod, str):
            mod = getattr(documented, "__name__", None)  # a module documents itself
        if isinstance(mod, str):
            contexts += [mod, mod.rpartition(".")[0]]
            cls = getattr(documented, "__qualname__", "").split(".")[0]
            if cls:
                contexts.insert(0, f"{mod}.{cls}")
            elif not callable(documented):  # data: its docstring is its type's (a ParamSet's)
                kind = type(documented)
                contexts.insert(0, f"{kind.__module__}.{kind.__qualname__}")
    for key in ("py:class", "py:module"):
        if node.get(key):
            contexts.append(node.get("py:module", "") + ("." + node["py:class"] if key == "py:class" else ""))
    obj = None
    for ctx in [c for c in contexts if c]:
        obj = _import(f"{ctx}.{target}")
        if obj is not None:
            break
    if obj is None and target.startswith("milopt."):
        obj = _import(target)
    domain = env.get_domain("py")
    last = target.rsplit(".", 1)[-1]
    found = [(name, entry) for name, entry in domain.find_obj(env, None, None, last, None, 1)
             if not entry.aliased and name.startswith("milopt") and name.endswith("." + target)]
    if obj is None:
        # a bare name in a summary line shown away from its module: resolves only when every
        # documented object of that name is one and the same object
        objects = {id(_import(name)) for name, _ in found}
        if not found or len(objects) != 1 or None in [_import(name) for name, _ in found]:
            return None
        name, entry = found[0]
        return _refnode(app, refdoc, entry, contnode, name)
    for name, entry in domain.find_obj(env, None, None, last, None, 1):
        if entry.aliased or not name.startswith("milopt"):
            continue
        other = _import(name)
        if other is obj or (inspect.ismethod(obj) and other == obj):
            return _refnode(app, refdoc, entry, contnode, name)
    return None


def _refnode(app, refdoc, entry, contnode, name):
    from sphinx.util.nodes import make_refnode

    return make_refnode(app.builder, refdoc, entry.docname, entry.node_id, contnode, name)


def setup(app):
    app.connect("autodoc-skip-member", skip_foreign_member)
    app.connect("missing-reference", resolve_same_object)
    app.add_directive("milopt-params", MiloptParams)
    app.add_directive("milopt-catalogue", MiloptCatalogue)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
