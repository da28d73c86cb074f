"""What people use without mcts_jax: a plain-Python UCT as in tutorials and
OpenSpiel's C++ MCTSBot (optional), both on tic-tac-toe, one search at a time."""
