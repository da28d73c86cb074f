"""docs/games.md, generated from the registry: `python -m envs.games_page > docs/games.md`
(tests/test_game_conformance.py checks that the page is current). It builds
every game (`envs.make`) to measure its node bytes, so it sits above the
registry, not in it."""

from __future__ import annotations

import envs
from envs import registry
from envs.registry import GameSpec


def _symmetry_names(game_spec: GameSpec) -> str:
    if game_spec.symmetries is None:
        return "none"
    names = {"dihedral": "8 (rotations, reflections)", "mirror_columns": "2 (left-right mirror)",
             "rotation_180": "2 (half turn)"}
    return names.get(getattr(game_spec.symmetries, "func", None).__name__,
                     str(game_spec.num_symmetries()))


def markdown() -> str:
    """docs/games.md, generated from the registry."""
    lines = [
        "# The games",
        "",
        "Generated from `envs/registry.py` by `python -m envs.games_page > docs/games.md`",
        "(a test checks it is current). Every game is one `GameSpec` entry;",
        "`envs.make(name)` builds it, `envs.spec(name)` returns the entry. A is",
        "the number of action ids; lean / full bytes are one search node's",
        "embedding (`game.lean_bytes()`) against the whole pgx state",
        "(`game.full_bytes()`). The registry's docstring says where each bound",
        "comes from; the conformance test (tests/test_game_conformance.py) checks",
        "the legal-move bound on random games, and tests/test_symmetry.py plays",
        "symmetric games through pgx for every symmetry listed. How each game is",
        "trained (its default network, training defaults and presets) is in",
        "[presets.md](presets.md), generated from `training/presets.py`.",
        "",
        "| game (pgx id) | A | most legal moves | longest game (plies) | symmetries "
        "| lean / full bytes |",
        "|---|---|---|---|---|---|",
    ]
    for name in registry.GAMES:
        game = envs.make(name)
        game_spec = game.spec
        lines.append(
            f"| `{name}` | {game.num_actions} | {game_spec.max_legal_moves} | "
            f"{game_spec.longest_game} | {_symmetry_names(game_spec)} | "
            f"{game.lean_bytes():,} / {game.full_bytes():,} |")
    lines += ["", "Every observation is from the point of view of the player to move; "
              "rewards are 1 / 0 / -1 for a win, draw, loss.", ""]
    for name in registry.GAMES:
        game_spec = registry.spec(name)
        lines += [f"## {name}", "", f"Observation: {game_spec.observation}", "",
                  f"Actions: {game_spec.actions}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
