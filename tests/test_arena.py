"""training.arena: match bookkeeping, known random-play statistics, Elo fitting."""

import itertools

import jax
import numpy as np

import envs
import mcts_jax
from mcts_jax import evaluators
from training import arena

TTT = envs.make("tic_tac_toe")


def test_random_tic_tac_toe_matches_known_first_mover_statistics():
    # Uniformly random tic-tac-toe: the first mover wins 737/1260 = 58.5%,
    # the second 365/1260 = 29.0%, 12.7% are drawn (exact enumeration).
    result = arena.play_match(TTT, arena.RandomPlayer(), None, arena.RandomPlayer(), None,
                              jax.random.key(0), 1000)
    assert result.num_games == 1000 and result.unfinished == 0
    assert sum(result.first) == sum(result.second) == 500
    first_wins, _, first_losses = result.first
    second_wins, _, second_losses = result.second
    assert abs(first_wins / 500 - 0.585) < 0.07 and abs(second_losses / 500 - 0.585) < 0.07
    assert abs(first_losses / 500 - 0.290) < 0.07 and abs(second_wins / 500 - 0.290) < 0.07
    assert result.wins == first_wins + second_wins


def test_uct_beats_random_and_cap_counts_draws():
    uct = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=1), "uct", 64)
    result = arena.play_match(TTT, uct, None, arena.RandomPlayer(), None, jax.random.key(1), 64)
    assert result.losses <= 2 and result.wins >= 48
    capped = arena.play_match(envs.make("connect_four"), arena.RandomPlayer(), None,
                              arena.RandomPlayer(), None, jax.random.key(2), 8, max_plies=4)
    assert capped.unfinished == 8 and capped.draws == 8


def test_search_player_applies_every_field_of_a_search_options_record():
    """A `SearchOptions` record given to SearchPlayer becomes the policy's
    options as given. A field equal to SearchOptions' default but not to
    the policy's own (stop_at_terminal=True for the MuZero family, whose
    default is mctx's False) is applied, not dropped (it was dropped when
    only the fields that differ from `SearchOptions()` were kept); (name,
    value) pairs change only the fields they name."""
    record = mcts_jax.SearchOptions(stop_at_terminal=True, max_children=3)
    assert not mcts_jax.MuZeroPolicy().options.stop_at_terminal
    for policy in (mcts_jax.MuZeroPolicy(), "muzero", mcts_jax.AlphaZeroPolicy()):
        player = arena.SearchPlayer(evaluators.Uniform(), policy, 8, options=record)
        assert player.policy_for(TTT).options == record, policy
    pairs = arena.SearchPlayer(evaluators.Uniform(), mcts_jax.MuZeroPolicy(), 8,
                               options=(("max_children", 3),))
    assert pairs.policy_for(TTT).options == mcts_jax.muzero_options(max_children=3)
    states = TTT.init(jax.random.key(0), 2)
    player = arena.SearchPlayer(evaluators.Uniform(), mcts_jax.MuZeroPolicy(), 8,
                                options=record)
    actions = np.asarray(player(None, jax.random.key(1), TTT, states))
    assert np.asarray(states.legal_action_mask)[np.arange(2), actions].all()


def test_fit_elo_recovers_ratings_from_expected_scores():
    truth = {"a": 0.0, "b": 150.0, "c": -200.0, "d": 420.0}
    games = 10000
    results = [(i, j, games * arena.expected_score(truth[i], truth[j]), games)
               for i, j in itertools.combinations(truth, 2)]
    fitted = arena.fit_elo(results, anchor="a", prior_games=0.0)
    for name, rating in truth.items():
        assert abs(fitted[name] - rating) < 1.0, (name, fitted)
    # A perfect score stays finite with the prior, and ranks above.
    fitted = arena.fit_elo([("x", "y", 10, 10)], anchor="y")
    assert np.isfinite(fitted["x"]) and fitted["x"] > 200
