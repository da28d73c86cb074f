"""A minimal tic-tac-toe written with jax.numpy for the core tests (independent
of pgx): the board is [B, 9] int32 with 0 empty, 1 X, 2 O; `player` [B] is the
side to move. Values are 0 for non-terminal states, so only exact terminal
rewards inform the search."""

import jax.numpy as jnp
import numpy as np

import mcts_jax

LINES = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8],
                  [0, 4, 8], [2, 4, 6]])


def parse(picture: str):
    """'XX.OO....' -> (board [9], player to move)."""
    board = np.array([{"." : 0, "X": 1, "O": 2}[c] for c in picture], np.int32)
    player = 1 if (board == 1).sum() == (board == 2).sum() else 2
    return board, player


def make_root(pictures):
    boards, players = zip(*(parse(p) for p in pictures))
    boards = jnp.asarray(np.stack(boards))
    players = jnp.asarray(players, jnp.int32)
    batch = len(pictures)
    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((batch, 9)), value=jnp.zeros(batch),
                                 embedding=dict(board=boards, player=players))
    return root, boards != 0


def recurrent_fn(params, rng_key, action, state):
    del params, rng_key
    board, player = state["board"], state["player"]
    rows = jnp.arange(board.shape[0])
    board = board.at[rows, action].set(player)
    lines = board[:, LINES]  # [B, 8, 3]
    won = jnp.any(jnp.all(lines == player[:, None, None], axis=-1), axis=-1)
    full = jnp.all(board != 0, axis=-1)
    terminal = won | full
    output = mcts_jax.RecurrentFnOutput(
        reward=won.astype(jnp.float32),
        discount=jnp.where(terminal, 0.0, -1.0),
        prior_logits=jnp.zeros(board.shape, jnp.float32),
        value=jnp.zeros(board.shape[0], jnp.float32),
        invalid_actions=board != 0,
    )
    return output, dict(board=board, player=3 - player)
