"""Sphinx configuration of rocmlab's documentation site (built by scripts/docs.sh, i.e. ``./go docs``).

The lab and exercise notebooks are rendered from ``labs/`` (``learn/labs`` links there) without running them:
what a reader sees is the notebook as stored, with the small text outputs nbval checks. The reference pages are
generated from the code at build time (``_ext/rocmlab_docs.py``, autodoc); the build runs with warnings as errors
and nitpicky cross-references, so a broken internal link or anchor fails it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]     # the checkout's rocmlab, never another installed one

project = "rocmlab"
author = "the rocmlab authors"
copyright = "the rocmlab authors, MIT licence"
root_doc = "index"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "rocmlab_docs",
]

exclude_patterns = ["_build", "**/.ipynb_checkpoints", "learn/labs/my-work", "learn/labs/exercises/my-work",
                    "_templates"]
templates_path = ["_templates"]

# notebooks: rendered as stored, never executed (a reader needs no GPU, compiler or server)
nb_execution_mode = "off"
nb_merge_streams = True
suppress_warnings = ["myst.header"]     # the included benchmark results keep their own heading levels
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4

# the Python API: autosummary writes a page per module listed in reference/api.rst
autosummary_generate = True
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource"}
autodoc_typehints = "none"
autodoc_mock_imports: list[str] = []

# every internal reference must resolve (-n); names outside rocmlab (torch, numpy, the standard library) are
# not documented here, so they are not ours to check
nitpicky = True
nitpick_ignore_regex = [(r"py:.*", r"(?!rocmlab\b).*")]

html_theme = "furo"
html_title = "rocmlab"
html_static_path = ["_static"]
html_css_files = ["rocmlab.css"]
html_show_sourcelink = False
html_copy_source = False
pygments_style = "default"
