"""Problems with known answers, for examples, tests and benchmarks: not part of
the search.

- `synthetic`: hashed synthetic games (`HashedProblem`), cheap and
  deterministic, any size, every value and prior from a hash of the path.
- `game_trees`: random two-player game trees with exact minimax values.
- `chance_trees`: random game trees with chance nodes and exact expectimax
  values.

They read only `mcts_jax.base` (the search's input and output types). Until
issue 61 they lived in the core package; `mcts_jax.synthetic`,
`mcts_jax.game_trees` and `mcts_jax.chance_trees` still import them.
"""
