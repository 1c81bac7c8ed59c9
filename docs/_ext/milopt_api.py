"""What is public in milopt: the one definition the API reference and its test use.

* A **public module** is one listed in :data:`PUBLIC_MODULES`, or a formulation module of
  :func:`milopt.models.catalogue` (``milopt.models.misvm_bigm``, ...; a formulation added to
  the ``milopt/models`` folder becomes public by being there).
* The **public names** of a public module are the names of its ``__all__``: every public
  module declares one (a module without ``__all__`` is an error, not "everything").  A
  formulation module without ``__all__`` exposes the formulation contract
  (:data:`FORMULATION_CONTRACT`: ``build``, ``decode``, ``PARAMS``, ... those it defines),
  which is what ``milopt.models`` reads from it.

``docs/api/*.rst`` lists every public name in an ``autosummary`` directive under a
``currentmodule`` (or ``module``) line naming its module; ``tests/test_docs.py`` checks that
each public name is listed there and has a docstring.
"""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

#: Modules whose ``__all__`` is milopt's public Python API (formulation modules are added
#: by :func:`public_modules`).  Order: as the API reference presents them.
PUBLIC_MODULES = [
    "milopt",
    "milopt.data",
    "milopt.models",
    "milopt.models.info",
    "milopt.models.matrices",
    "milopt.matrix",
    "milopt.solvers",
    "milopt.solvers.rewrites",
    "milopt.solvers.certify",
    "milopt.io",
    "milopt.io.names",
    "milopt.params",
    "milopt.errors",
    "milopt.numerics",
    "milopt.mil.alternation",
    "milopt.mil.bigm",
    "milopt.mil.dcmil",
    "milopt.qp.svm_dcd",
    "milopt.qp.svm_ipm",
    "milopt.qp.svm_active_set",
    "milopt.qp.qp_simplex",
    "milopt.estimators",
    "milopt.estimators.api",
    "milopt.estimators.misvm",
    "milopt.estimators.heuristics",
    "milopt.estimators.vgpmil",
    "milopt.estimators.pdmisvm",
    "milopt.estimators.dcmil",
    "milopt.estimators.batch",
    "milopt.estimators.formulation",
    "milopt.algorithms.bnb",
    "milopt.algorithms.pdmisvm",
    "milopt.algorithms.vgpmil",
    "milopt.algorithms.dcmil",
    "milopt.algorithms.mi_heuristics",
    "milopt.algorithms.batchpsvm",
    "milopt.features",
    "milopt.metrics",
    "milopt.froc",
    "milopt.bench",
    "milopt.bench.library",
    "milopt.bench.certificates",
    "milopt.plugins",
]


#: The names a formulation module may define that :meth:`milopt.models.Formulation.from_module` reads
FORMULATION_CONTRACT = ("FORMULATION", "build", "decode", "PARAMS", "PROBLEM_CLASS", "problem_class",
                        "default_start", "predict")


def formulation_modules() -> list[str]:
    """The formulation modules of :func:`milopt.models.catalogue`, as ``milopt.models.NAME``."""
    from milopt.models import catalogue

    return sorted(f"milopt.models.{stem}" for stem in set(catalogue().values()))


def public_modules() -> list[str]:
    """Every public module: :data:`PUBLIC_MODULES` then the formulation modules."""
    return PUBLIC_MODULES + [m for m in formulation_modules() if m not in PUBLIC_MODULES]


def public_names(module: str) -> list[str]:
    """The public names of ``module``: its ``__all__``, or for a formulation module without one
    the names of :data:`FORMULATION_CONTRACT` it defines (ValueError for any other module
    without ``__all__``)."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None and module in formulation_modules():
        names = [n for n in FORMULATION_CONTRACT if n in vars(mod)]
    if names is None:
        raise ValueError(f"{module} has no __all__: a public module declares its public names in __all__")
    return list(names)


def public_api() -> dict[str, list[str]]:
    """``{module: [public names]}`` for every public module."""
    return {m: public_names(m) for m in public_modules()}


def docstring_of(module: str, name: str) -> str:
    """The docstring that renders for ``module.name``: a function's or class's own; for data
    (constants, instances), the ``#:`` comment above its assignment in the defining module
    (autodoc's convention), else '' (the type's docstring does not count)."""
    mod = importlib.import_module(module)
    obj = getattr(mod, name)
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj) \
            and hasattr(obj, "__wrapped__"):
        return inspect.getdoc(obj) or ""
    # data: look for "#: ..." (or a docstring string right after) in the source of the module
    # that assigns it, following re-exports
    for m in (mod, *_defining_modules(mod, name)):
        try:
            src = inspect.getsource(m)
        except (OSError, TypeError):
            continue
        doc = _attribute_doc(src, name)
        if doc:
            return doc
    return ""


def _defining_modules(mod, name: str) -> list:
    out = []
    lazy = getattr(mod, "_WHERE", None) or getattr(mod, "_LAZY", None) or {}
    if name in lazy:
        target = lazy[name]
        target = target if "." in target else f"{mod.__name__}.{target}"
        out.append(importlib.import_module(target))
    try:
        src = inspect.getsource(mod)
    except (OSError, TypeError):
        return out
    for m in re.finditer(r"^from\s+(\S+)\s+import\s+\(?([^)\n]*(?:\n[^)\n]*)*?)\)?$", src, re.M):
        if re.search(rf"\b{re.escape(name)}\b", m.group(2)):
            target = m.group(1)
            if target.startswith("."):
                base = mod.__name__ if hasattr(mod, "__path__") else mod.__name__.rpartition(".")[0]
                dots = len(target) - len(target.lstrip("."))
                for _ in range(dots - 1):
                    base = base.rpartition(".")[0]
                target = f"{base}.{target.lstrip('.')}" if target.strip(".") else base
            try:
                out.append(importlib.import_module(target))
            except ImportError:
                pass
    return out


def _attribute_doc(src: str, name: str) -> str:
    lines = src.splitlines()
    pat = re.compile(rf"^{re.escape(name)}\s*(:[^=]*)?=")
    for i, line in enumerate(lines):
        if not pat.match(line):
            continue
        doc = []
        j = i - 1
        while j >= 0 and lines[j].lstrip().startswith("#:"):
            doc.insert(0, lines[j].lstrip()[2:].strip())
            j -= 1
        if doc:
            return " ".join(doc)
        # a string literal right after the assignment (and its continuation lines)
        k = i + 1
        while k < len(lines) and (lines[k].startswith((" ", "\t", ")", "]", "}")) or not lines[k].strip()):
            k += 1
        if k < len(lines) and lines[k].lstrip().startswith(('"""', "'''", 'r"""')):
            return lines[k].strip().strip("r").strip('"').strip("'")
    return ""


_AUTOSUMMARY = re.compile(r"^\.\. autosummary::[^\n]*\n((?:[ \t]+:[^\n]*\n)*)((?:[ \t]*\n|[ \t]+[^\n]*\n)*)", re.M)
_CURRENT = re.compile(r"^\.\. (?:currentmodule|module|py:currentmodule|py:module)::\s*(\S+)", re.M)


def documented_names(api_dir) -> set[str]:
    """Fully qualified names listed in the ``autosummary`` directives of ``api_dir/*.rst``
    (each entry under the last ``currentmodule`` / ``module`` line before it)."""
    out = set()
    for path in sorted(Path(api_dir).glob("*.rst")):
        text = path.read_text(encoding="utf-8")
        for block in _AUTOSUMMARY.finditer(text):
            heads = [m.group(1) for m in _CURRENT.finditer(text, 0, block.start())]
            current = heads[-1] if heads else ""
            for line in block.group(2).splitlines():
                entry = line.strip()
                if not entry or entry.startswith(":") or entry.startswith(".."):
                    continue
                entry = entry.lstrip("~")
                out.add(f"{current}.{entry}" if current and not entry.startswith(current + ".") else entry)
    return out


def reexported_classes() -> dict[str, str]:
    """``{full name: primary full name}`` for classes listed under more than one public module
    (``milopt.Bags`` is :class:`milopt.data.Bags`): the primary name is the one in the deepest
    module; the others are documented without entering the index (one target per class)."""
    by_obj: dict[int, list[str]] = {}
    for module, names in public_api().items():
        mod = importlib.import_module(module)
        for n in names:
            obj = getattr(mod, n)
            if inspect.isclass(obj):
                by_obj.setdefault(id(obj), []).append(f"{module}.{n}")
    out = {}
    for fulls in by_obj.values():
        if len(fulls) > 1:
            primary = max(fulls, key=lambda f: (f.count("."), f))
            out.update({f: primary for f in fulls if f != primary})
    return out
