"""Sphinx configuration for the plugrad documentation.

Build from the repository root:

    sphinx-build -W --keep-going -b html docs docs/_build/html
    sphinx-build -W --keep-going -b doctest docs docs/_build/doctest
"""

from __future__ import annotations

import sys
from pathlib import Path

import plugrad

# Local extensions: op_reference (the plugrad-ops directive).
sys.path.insert(0, str(Path(__file__).parent / "_ext"))

# -- Project ------------------------------------------------------------------------------

project = "plugrad"
author = "The plugrad developers"
copyright = "The plugrad developers"
version = plugrad.__version__
release = version

# -- General ------------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "op_reference",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "api/generated"]
default_role = "py:obj"

# -- autodoc / numpydoc -------------------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc "Parameters" sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False

# -- doctest ------------------------------------------------------------------------------

# Plain ``>>>`` blocks (in the pages and in docstrings pulled in by autodoc) are tested.
doctest_test_doctest_blocks = "default"
doctest_global_setup = "import plugrad"

# -- HTML ---------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"plugrad {version}"
html_theme_options = {
    # Everything the page loads ships with the build: no icon links, no remote assets.
    "icon_links": [],
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path: list[str] = []
