"""Developer tools (devtools/README.md): measurements of the code itself and
guards for changes to the library; each runs with `python -m devtools.<name>`
from the repository root."""
