"""Issue 33: bad inputs of the chance-node and arena features are clear errors
that name the argument and what was wrong (raised before any compilation).

One tiny deterministic and one tiny stochastic search (B = 2, A = 3, C = 2,
outcome 1 always impossible) are compiled once and shared by the tests.
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
from mcts_jax import evaluators
from training import arena

B, A, C = 2, 3, 2
SIMULATIONS = 4


def root_output():
    """A root of B rows over A actions; the embedding is a [B] int32 counter."""
    return mcts_jax.RootFnOutput(prior_logits=jnp.zeros((B, A)), value=jnp.zeros((B,)),
                                 embedding=jnp.zeros((B,), jnp.int32))


def recurrent_fn(params, rng_key, action, embedding):
    del params, rng_key, action
    zeros = jnp.zeros((B,))
    return mcts_jax.RecurrentFnOutput(reward=zeros, discount=jnp.ones((B,)),
                                      prior_logits=jnp.zeros((B, A)), value=zeros), embedding + 1


def decision_fn(params, rng_key, action, state):
    """Outcome 0 is certain, outcome 1 impossible (probability 0)."""
    del params, rng_key, action
    logits = jnp.tile(jnp.array([0.0, -jnp.inf]), (B, 1))
    return mcts_jax.DecisionRecurrentFnOutput(chance_logits=logits,
                                              afterstate_value=jnp.zeros((B,))), state


def chance_fn(params, rng_key, outcome, afterstate):
    del params, rng_key, outcome
    zeros = jnp.zeros((B,))
    return mcts_jax.ChanceRecurrentFnOutput(action_logits=jnp.zeros((B, A)), value=zeros,
                                            reward=zeros, discount=jnp.ones((B,))), afterstate + 1


def ours(tree):
    """Our `Tree` behind the `MctxTree` view an mctx-signature function returns."""
    return getattr(tree, "source_tree", None) or tree


@functools.lru_cache(maxsize=None)
def deterministic_tree():
    return ours(mcts_jax.muzero_policy(None, jax.random.key(0), root_output(), recurrent_fn,
                                       SIMULATIONS).search_tree)


@functools.lru_cache(maxsize=None)
def stochastic_search():
    return mcts_jax.stochastic_muzero_policy(None, jax.random.key(0), root_output(),
                                             decision_fn, chance_fn, SIMULATIONS)


def expanded_action():
    """[B] the most visited decision at the root (its chance node is expanded)."""
    tree = ours(stochastic_search().search_tree)
    return jnp.argmax(tree.summary().visit_counts, axis=-1).astype(jnp.int32)


# ---- 1. a tree of the other kind ----------------------------------------------------------

def test_stochastic_policy_refuses_a_deterministic_tree():
    assert deterministic_tree().num_chance_outcomes == 0
    with pytest.raises(ValueError, match=r"tree has no chance nodes \(num_chance_outcomes 0.*"
                                         r"a stochastic search needs a tree from a stochastic"):
        mcts_jax.stochastic_muzero_policy(None, jax.random.key(1), root_output(), decision_fn,
                                          chance_fn, SIMULATIONS, tree=deterministic_tree())
    with pytest.raises(ValueError, match="tree has no chance nodes"):
        mcts_jax.StochasticMuZeroPolicy()(None, jax.random.key(1), root_output(),
                                          (decision_fn, chance_fn), SIMULATIONS,
                                          tree=deterministic_tree())


@pytest.mark.parametrize("view", [False, True], ids=["Tree", "MctxTree"])
def test_deterministic_policy_refuses_a_stochastic_tree(view):
    tree = stochastic_search().search_tree if view else ours(stochastic_search().search_tree)
    assert ours(tree).num_chance_outcomes == C
    with pytest.raises(ValueError, match=r"tree has chance nodes \(num_chance_outcomes 2.*"
                                         r"this search is deterministic"):
        mcts_jax.muzero_policy(None, jax.random.key(1), root_output(), recurrent_fn,
                               SIMULATIONS, tree=tree)
    with pytest.raises(ValueError, match=r"tree has chance nodes"):
        mcts_jax.MuZeroPolicy()(None, jax.random.key(1), root_output(), recurrent_fn,
                                SIMULATIONS, tree=ours(tree))


# ---- 2, 3. stochastic_subtree's outcome -----------------------------------------------------

@pytest.mark.parametrize("view", [False, True], ids=["Tree", "MctxTree"])
def test_stochastic_subtree_accepts_a_possible_outcome(view):
    tree = stochastic_search().search_tree if view else ours(stochastic_search().search_tree)
    subtree = mcts_jax.stochastic_subtree(tree, expanded_action(), jnp.zeros((B,), jnp.int32))
    assert (np.asarray(subtree.num_nodes) > 0).all()


@pytest.mark.parametrize("outcome, error, message", [
    ([C, 0], ValueError, r"outcome must be chance outcome ids in \[0, C\) = \[0, 2\), got \[2\] "
                         r"in rows \[0\]"),
    ([0, -1], ValueError, r"outcome must be chance outcome ids in \[0, C\) = \[0, 2\), got "
                          r"\[-1\] in rows \[1\]"),
    ([0, 0, 0], ValueError, r"outcome must have shape \[B\] = \(2,\), one chance outcome id in "
                            r"\[0, C\) = \[0, 2\) per row, got shape \(3,\)"),
    (np.zeros(B, np.float32), TypeError, r"outcome must be an integer array of chance outcome "
                                         r"ids in \[0, C\) = \[0, 2\), got dtype float32"),
])
def test_stochastic_subtree_names_a_bad_outcome(outcome, error, message):
    tree = ours(stochastic_search().search_tree)
    with pytest.raises(error, match=message):
        mcts_jax.stochastic_subtree(tree, expanded_action(), outcome)


def test_stochastic_subtree_names_a_bad_action():
    tree = ours(stochastic_search().search_tree)
    with pytest.raises(ValueError, match=r"action must be decision ids in \[0, A\) = \[0, 3\), "
                                         r"got \[3\] in rows \[1\]"):
        mcts_jax.stochastic_subtree(tree, [0, A], [0, 0])


def test_stochastic_subtree_refuses_an_impossible_outcome():
    tree = ours(stochastic_search().search_tree)
    action = expanded_action()
    with pytest.raises(ValueError, match=r"outcome \[1, 1\] in rows \[0, 1\] has probability 0 "
                                         r"at the chance node of action"):
        mcts_jax.stochastic_subtree(tree, action, jnp.ones((B,), jnp.int32))


# ---- 4. SearchPlayer: a policy that does not fit the game's kind -----------------------------

TTT = envs.make("tic_tac_toe")
G2048 = envs.make_chance_game("2048")
UNIFORM = evaluators.Uniform()


@pytest.mark.parametrize("policy", [mcts_jax.StochasticMuZeroPolicy(), "stochastic"])
def test_search_player_refuses_a_stochastic_policy_on_a_deterministic_game(policy):
    player = arena.SearchPlayer(UNIFORM, policy, num_simulations=2)
    with pytest.raises(ValueError, match=r"policy .*StochasticMuZeroPolicy.* does not fit the "
                                         r"game 'tic_tac_toe': 'tic_tac_toe' is a deterministic "
                                         r"game \(no chance nodes\)"):
        arena.play_match(TTT, player, None, arena.RandomPlayer(), None, jax.random.key(0), 2)


@pytest.mark.parametrize("policy", [mcts_jax.AlphaZeroPolicy(), "alphazero",
                                    mcts_jax.muzero_policy])
def test_search_player_refuses_a_deterministic_policy_on_a_chance_game(policy):
    player = arena.SearchPlayer(UNIFORM, policy, num_simulations=2)
    with pytest.raises(ValueError, match=r"does not fit the game '2048': '2048' is a stochastic "
                                         r"game \(chance nodes.*needs a policy with chance nodes"):
        arena.play_solo(G2048, player, None, jax.random.key(0), 2)


def test_search_player_refuses_the_stochastic_policy_function():
    player = arena.SearchPlayer(UNIFORM, mcts_jax.stochastic_muzero_policy, num_simulations=2)
    with pytest.raises(TypeError, match=r"policy mcts_jax.stochastic_muzero_policy is a "
                                        r"function.*StochasticMuZeroPolicy\(\)"):
        player.policy_for(G2048)


# ---- 5. apply_outcome ----------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def afterstates_2048():
    """Afterstates [B] of 2048 (a legal slide from the first boards) and their
    outcome probabilities [B, C]."""
    states = G2048.init(jax.random.key(3), B)
    actions = jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)
    after = jax.jit(G2048.afterstate)(states, actions)
    return after, np.asarray(jax.jit(G2048.chance_probabilities)(after))


def test_apply_outcome_accepts_a_possible_outcome():
    after, probs = afterstates_2048()
    states = G2048.apply_outcome(after, jnp.asarray(np.argmax(probs, axis=-1), jnp.int32))
    assert states.current_player.shape == (B,)


@pytest.mark.parametrize("outcomes, error, message", [
    ([32, 0], ValueError, r"outcomes must be 2048's chance outcome ids in \[0, C\) = "
                          r"\[0, 32\), got \[32\] in rows \[0\]"),
    ([0, -3], ValueError, r"outcomes must be 2048's chance outcome ids in \[0, C\) = "
                          r"\[0, 32\), got \[-3\] in rows \[1\]"),
    ([0], ValueError, r"outcomes must have shape \[B\] = \(2,\)"),
    (np.zeros(B, np.float32), TypeError, r"outcomes must be an integer array"),
])
def test_apply_outcome_names_a_bad_outcome(outcomes, error, message):
    after, _ = afterstates_2048()
    with pytest.raises(error, match=message):
        G2048.apply_outcome(after, outcomes)


def test_apply_outcome_refuses_an_outcome_of_probability_0():
    after, probs = afterstates_2048()
    impossible = np.argmax(probs == 0, axis=-1).astype(np.int32)  # a tile on an occupied cell
    assert (probs[np.arange(B), impossible] == 0).all()
    with pytest.raises(ValueError, match=re.escape(f"outcomes {impossible.tolist()} in rows "
                                                   "[0, 1] have probability 0 at their "
                                                   "afterstates of 2048 (impossible")):
        G2048.apply_outcome(after, jnp.asarray(impossible))


# ---- 6, 7. play_match / play_solo on the wrong number of players -----------------------------

def test_play_match_refuses_a_one_player_game():
    with pytest.raises(ValueError, match=r"play_match needs a two-player game, but '2048' has 1 "
                                         r"player.*arena.play_solo"):
        arena.play_match(G2048, arena.RandomPlayer(), None, arena.RandomPlayer(), None,
                         jax.random.key(0), 2)


def test_play_solo_refuses_a_two_player_game():
    with pytest.raises(ValueError, match=r"play_solo needs a one-player game \(2048\), but "
                                         r"'tic_tac_toe' has 2 players.*arena.play_match"):
        arena.play_solo(TTT, arena.RandomPlayer(), None, jax.random.key(0), 2)
