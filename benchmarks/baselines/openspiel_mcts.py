"""OpenSpiel's C++ MCTSBot on tic-tac-toe, if `open_spiel` is installed.

UCT with c = 1.4 and one random rollout per leaf (OpenSpiel's
RandomRolloutEvaluator), one search at a time from the initial position.
`search_fn` returns a call running one whole search (`bot.step`), for
`harness.interleaved_rounds`; `simulations_per_second` times it alone. Both
return None when pyspiel cannot be imported, so the reports say "not
installed".
"""

from __future__ import annotations

import time
from typing import Callable, Optional


def search_fn(num_simulations: int, seed: int = 0) -> Optional[Callable[[], int]]:
    """A call running one MCTSBot search of `num_simulations` from the empty
    board (returns the chosen action), or None without pyspiel."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("tic_tac_toe")
    evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
    # (game, evaluator, uct_c, max_simulations, max_memory_mb, solve, seed, verbose)
    bot = pyspiel.MCTSBot(game, evaluator, 1.4, num_simulations, 1000, False, seed, False)
    state = game.new_initial_state()
    return lambda: bot.step(state)


def simulations_per_second(num_simulations: int, repeats: int = 3) -> Optional[float]:
    """Median speed of `repeats` searches after one warm-up, or None."""
    search = search_fn(num_simulations)
    if search is None:
        return None
    search()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        search()
        times.append(time.perf_counter() - start)
    return num_simulations / sorted(times)[len(times) // 2]
