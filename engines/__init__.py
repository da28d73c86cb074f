"""Our searches as game engines, and other engines as opponents.

    python -m engines.uci     # chess over UCI (console script mcts-jax-uci)
    python -m engines.gtp     # Go 9x9 / 19x19 over GTP (console script mcts-jax-gtp)

- `analysis.py`: `Analysis`, one position searched in chunks of one compiled
  search, its tree kept between chunks and between moves (subtree reuse),
  read back as moves, visits, values and principal variations.
- `uci.py`: the UCI engine (chess, pgx's rules).
- `gtp.py`: the GTP engine (pgx's Go 9x9 and 19x19).
- `gtp_client.py`: a small GTP client (drives GNU Go or any GTP engine).
- `opponents.py`: arena players that ask an external UCI or GTP engine for
  their moves (Stockfish, GNU Go), and Elo from match results.
"""
