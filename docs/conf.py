"""Sphinx configuration of the API reference (docs/api/), generated from the
docstrings with autodoc and napoleon (Google-style Args / Returns), pages in
MyST Markdown. Build it (warnings are errors, as tests/test_docs.py does):

    python -m sphinx -W -b html docs build/docs

The user pages of docs/ are read on GitHub as they are; the site holds the
reference only (`include_patterns`). The built site is not committed.
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "mcts_jax"
author = "mcts_jax authors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
root_doc = "api/index"
include_patterns = ["api/**"]
exclude_patterns = []
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence"]

napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"undoc-members": False}
html_theme = "alabaster"
# "Attributes:" sections as fields of their class, so that a dataclass field
# documented there and by autodoc is not described twice.
napoleon_use_ivar = True

