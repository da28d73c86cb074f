"""Moved to `problems.chance_trees` (issue 61: fixtures leave the search core). This
old name stays importable: it is that module, under both names."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("problems.chance_trees")
