"""Tools that guard changes to the library (devtools/README.md): each runs
with `python -m devtools.<name>` from the repository root."""
