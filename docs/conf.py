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



def add_field_meanings(app, what, name, obj, options, lines):
    """A dataclass whose fields declare their meaning (`mcts_jax.options.option`:
    `SearchOptions`) gets each field's meaning and default as a parameter of
    its class entry, read from that one declaration (what
    `SearchOptions.describe()` prints); autodoc adds each field's type."""
    import dataclasses

    if what != "class" or not dataclasses.is_dataclass(obj):
        return
    fields = [field for field in dataclasses.fields(obj) if "meaning" in field.metadata]
    if fields:
        lines.append("")
    for field in fields:
        default = getattr(field.default, "__name__", None) or repr(field.default)
        lines.append(f":param {field.name}: {field.metadata['meaning']} "
                     f"(default ``{default}``)")


def setup(app):
    app.connect("autodoc-process-docstring", add_field_meanings)
