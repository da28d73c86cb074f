"""Moved to `mcts_jax.hashable` (issue 61: functions compared by value and the
rules that recompile are one idea, in one module). This old name stays
importable: it is that module, under both names."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("mcts_jax.hashable")
