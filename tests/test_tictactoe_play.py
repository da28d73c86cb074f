"""UCT with random playouts on pgx tic-tac-toe against a perfect player.

The perfect player (`tictactoe_minimax.perfect_move`, uniform among the
optimal moves) runs in Python between search calls; the 100 games of one side
are the 100 rows of one `uct_policy` call per move. B and the budget stay
fixed, and `game.recurrent_fn(evaluator)` returns one cached function, so each
budget compiles once. A finished game keeps its last non-terminal position as
a dummy root; its search output is ignored.

pgx's `init` draws the player id that moves first at random; the first mover
always plays X (`state._x.color == 0`), so which id is X is read from the
state (`tictactoe_minimax.x_player_id`), and every result is computed both
from the board (independent rules) and from pgx's rewards for that id.
"""

from __future__ import annotations

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
import tictactoe_minimax as minimax
from mcts_jax import evaluators

NUM_GAMES = 100
EVALUATOR = evaluators.RandomPlayouts(num_playouts=1)
GAME = envs.make("tic_tac_toe")
# game.root and game.step are not jitted: un-jitted, RandomPlayouts' while loop
# is traced and compiled again on every call (about 1.5 s each on CPU).
ROOT = jax.jit(lambda key, states: GAME.root(None, key, states, EVALUATOR))
STEP = jax.jit(GAME.step)


def keep_where(keep, old, new):
    """Per row: `old` where keep [B] is True, else `new` (pytrees of [B, ...])."""
    def pick(a, b):
        return jnp.where(keep.reshape((-1,) + (1,) * (b.ndim - 1)), a, b)
    return jax.tree.map(pick, old, new)


def play_games(num_simulations, agent_mark, seed, num_games=NUM_GAMES):
    """`num_games` games of UCT (playing `agent_mark`) against the perfect
    player. Returns results [num_games] for the agent: 1 win, 0 draw, -1 loss."""
    recurrent_fn = GAME.recurrent_fn(EVALUATOR)
    assert GAME.recurrent_fn(EVALUATOR) is recurrent_fn, "one compiled search per budget"
    key = jax.random.key(seed)
    key, init_key = jax.random.split(key)
    states = GAME.init(init_key, num_games)
    np.testing.assert_array_equal(np.asarray(states._x.color), 0)  # X to move
    assert set(np.asarray(states.current_player).tolist()) == {0, 1}, \
        "pgx should draw both player ids as first mover"
    x_id = minimax.x_player_id(states)
    np.testing.assert_array_equal(x_id, np.asarray(states.current_player))
    agent_id = x_id if agent_mark == minimax.X else 1 - x_id
    opponent_mark = minimax.O if agent_mark == minimax.X else minimax.X

    rng = random.Random(seed)
    done = np.zeros(num_games, bool)
    results = np.zeros(num_games, int)
    for ply in range(9):
        boards = minimax.board_from_pgx(states)  # all non-terminal
        live = np.flatnonzero(~done)
        mover = minimax.X if ply % 2 == 0 else minimax.O
        current = np.asarray(states.current_player)
        for row in live:
            assert minimax.empties(boards[row]) == 9 - ply
            assert minimax.to_move(boards[row]) == mover
        if mover == agent_mark:
            assert (current[live] == agent_id[live]).all(), "pgx ids and marks disagree"
            key, root_key, search_key = jax.random.split(key, 3)
            root, invalid = ROOT(root_key, states)
            out = mcts_jax.uct_policy(None, search_key, root, recurrent_fn, num_simulations,
                                      invalid_actions=invalid, uct_c=1.4,
                                      final_action="most_visited")
            actions = np.asarray(out.action)
        else:
            assert (current[live] != agent_id[live]).all(), "pgx ids and marks disagree"
            actions = np.array([minimax.perfect_move(b, rng) if not done[row]
                                else minimax.legal_moves(b)[0]
                                for row, b in enumerate(boards)])
        stepped = STEP(states, jnp.asarray(actions, jnp.int32))
        new_boards = minimax.board_from_pgx(stepped)
        terminal = np.asarray(GAME.is_terminal(stepped))
        pgx_rewards = np.asarray(stepped.rewards)
        for row in live:
            assert actions[row] in minimax.legal_moves(boards[row]), (row, actions[row])
            expected = minimax.play(boards[row], int(actions[row]))
            assert new_boards[row] == expected, (boards[row], actions[row], new_boards[row])
            assert terminal[row] == minimax.is_terminal(expected)
            if terminal[row]:
                winner = minimax.winner(expected)
                result = 1 if winner == agent_mark else -1 if winner == opponent_mark else 0
                assert pgx_rewards[row, agent_id[row]] == result
                assert pgx_rewards[row, 1 - agent_id[row]] == -result
                results[row] = result
        done |= terminal
        states = keep_where(jnp.asarray(terminal), states, stepped)
        if done.all():
            break
    assert done.all()
    return results


def test_board_converters_follow_pgx_games():
    """Random pgx games: the converted boards follow the independent rules, and
    pgx's terminal flags and rewards agree with them (first mover = X)."""
    rng = np.random.default_rng(0)
    states = GAME.init(jax.random.key(7), 64)
    x_id = minimax.x_player_id(states)
    boards = minimax.board_from_pgx(states)
    assert boards == [minimax.EMPTY_BOARD] * 64
    done = np.zeros(64, bool)
    for _ in range(9):
        actions = np.array([minimax.legal_moves(b)[0] if d else rng.choice(minimax.legal_moves(b))
                            for b, d in zip(boards, done)])
        stepped = STEP(states, jnp.asarray(actions, jnp.int32))
        new_boards = minimax.board_from_pgx(stepped)
        terminal = np.asarray(stepped.terminated)
        for row in np.flatnonzero(~done):
            expected = minimax.play(boards[row], int(actions[row]))
            assert new_boards[row] == expected
            assert terminal[row] == minimax.is_terminal(expected)
            if terminal[row]:
                x_reward = {minimax.X: 1, minimax.O: -1, 0: 0}[minimax.winner(expected)]
                assert stepped.rewards[row, x_id[row]] == x_reward
                assert stepped.rewards[row, 1 - x_id[row]] == -x_reward
        done |= terminal
        states = keep_where(jnp.asarray(terminal), states, stepped)
        boards = minimax.board_from_pgx(states)
    assert done.all()
    picture = minimax.to_tictactoe(boards[0])
    assert minimax.from_tictactoe(picture) == boards[0]


@pytest.mark.parametrize("agent_mark", [minimax.X, minimax.O], ids=["as_X", "as_O"])
def test_uct_5000_simulations_never_loses_to_perfect_play(agent_mark):
    results = play_games(5000, agent_mark, seed=11 + agent_mark)
    losses = int((results < 0).sum())
    assert losses == 0, f"lost {losses} of {NUM_GAMES} games (wins {(results > 0).sum()})"


def test_uct_200_simulations_loses_some_games():
    """The search matters: with 200 simulations the same player loses at least
    one of 200 games against perfect play."""
    results = np.concatenate([play_games(200, minimax.X, seed=21),
                              play_games(200, minimax.O, seed=22)])
    assert (results <= 0).all(), "nobody beats a perfect player"
    assert (results < 0).sum() >= 1
