"""Sphinx configuration of the milopt documentation.

Build (the README's docs command)::

    python3 -m pip install -e ".[docs]"
    python3 -m sphinx -W --keep-going -b html docs docs/_build/html

Warnings are errors (``-W``).  Nothing is fetched from the network while building:
``intersphinx_mapping`` is empty.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import milopt  # noqa: E402

project = "milopt"
author = "the milopt authors"
copyright = "the milopt authors, BSD-3-Clause"
version = release = milopt.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "sphinxarg.ext",
    "milopt_docs",
]

smartquotes = False  # option names such as --cv stay as typed
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/README.md", "sg_execution_times.rst",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
templates_path = ["_templates"]

# -- Markdown (MyST) ---------------------------------------------------------------------------
# The pages write inline maths as $...$ and display maths as $$...$$ (with \begin{aligned} inside).
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_dmath_double_inline = True
myst_heading_anchors = 3

# -- API reference (autodoc / autosummary / napoleon) ------------------------------------------
# What is public is defined once, in _ext/milopt_api.py; docs/api/*.rst list those names.
import milopt_api  # noqa: E402

autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
autosummary_context = {"reexported": milopt_api.reexported_classes()}
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_mock_imports = ["cplex", "gurobipy", "xpress"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

# No network at build time: no inventories are fetched.
intersphinx_mapping: dict = {}

# Every reference to a milopt object (``milopt.…``) must resolve: a broken one is an error
# under -W.  Other libraries' objects (numpy, scikit-learn, Pyomo...), numpydoc's type words
# ("optional", "shape (n,)") and bare names that resolve to no milopt page have no target
# here, as no inventory is fetched; they render as code.
nitpicky = True
# Private classes (a leading "_") appear as base classes and return types without a page.
nitpick_ignore_regex = [("py:.*", r"(?!milopt\.).*"), ("py:class", r"milopt\..*\._\w+")]
# The base class of MISVMBranchAndBound: node evaluation is an internal part of the search.
nitpick_ignore = [("py:class", "milopt.algorithms.bnb.evaluate.NodeEvaluation")]

# -- Gallery (sphinx-gallery) ------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"toy_plugin\.py",
    "matplotlib_animations": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}

# -- HTML ----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"milopt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
html_copy_source = False
