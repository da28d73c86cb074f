"""OpenSpiel's C++ MCTSBot on tic-tac-toe, if `open_spiel` is installed.

UCT with c = 1.4 and one random rollout per leaf (OpenSpiel's
RandomRolloutEvaluator), timed over whole `step` calls from the initial
position, one search at a time. `simulations_per_second` returns None when
pyspiel cannot be imported, so the suite reports "not installed".
"""

from __future__ import annotations

import time
from typing import Optional


def simulations_per_second(num_simulations: int, repeats: int = 3) -> Optional[float]:
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("tic_tac_toe")
    seed = 0
    evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
    # (game, evaluator, uct_c, max_simulations, max_memory_mb, solve, seed, verbose)
    bot = pyspiel.MCTSBot(game, evaluator, 1.4, num_simulations, 1000, False, seed, False)
    state = game.new_initial_state()
    bot.step(state)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        bot.step(state)
        times.append(time.perf_counter() - start)
    return num_simulations / sorted(times)[len(times) // 2]
