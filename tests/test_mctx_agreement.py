"""Agreement with mctx (the peer, a dev dependency) on identical inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from problems.synthetic import HashedProblem, random_root_codes

mctx = pytest.importorskip("mctx")


def mctx_recurrent_fn(problem):
    def recurrent_fn(params, rng_key, action, code):
        output, code = problem.recurrent_fn(params, rng_key, action, code)
        return mctx.RecurrentFnOutput(reward=output.reward, discount=output.discount,
                                      prior_logits=output.prior_logits,
                                      value=output.value), code
    return recurrent_fn


@pytest.mark.parametrize("num_actions,num_simulations", [(4, 32), (9, 64)])
def test_alphazero_matches_mctx_muzero_policy(num_actions, num_simulations):
    problem = HashedProblem(num_actions=num_actions)
    codes = random_root_codes(num_actions, 256)
    root, _ = problem.root(codes)
    ours = mcts_jax.alphazero_policy(None, jax.random.key(0), root, problem.recurrent_fn,
                                     num_simulations, dirichlet_fraction=0.0,
                                     final_action="most_visited")
    theirs = jax.jit(lambda key: mctx.muzero_policy(
        None, key, mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                     embedding=root.embedding),
        mctx_recurrent_fn(problem), num_simulations, dirichlet_fraction=0.0))(
            jax.random.key(0))
    our_visits = np.asarray(ours.search_tree.summary().visit_counts)
    their_visits = np.asarray(theirs.search_tree.summary().visit_counts)
    same_choice = our_visits.argmax(-1) == their_visits.argmax(-1)
    print("same most-visited action:", same_choice.mean(),
          "identical visit counts:", (our_visits == their_visits).all(-1).mean())
    assert same_choice.mean() >= 0.95, same_choice.mean()
    # Not only the argmax: most rows have the very same visit counts.
    assert (our_visits == their_visits).all(-1).mean() >= 0.9


@pytest.mark.parametrize("num_actions,num_simulations", [(4, 8), (9, 32), (16, 64)])
def test_gumbel_matches_mctx_gumbel_muzero_policy(num_actions, num_simulations):
    """Equal keys give equal Gumbel noise (drawn as mctx draws it)."""
    problem = HashedProblem(num_actions=num_actions)
    root, _ = problem.root(random_root_codes(100 + num_actions, 256))
    ours = mcts_jax.gumbel_policy(None, jax.random.key(5), root, problem.recurrent_fn,
                                  num_simulations)
    theirs = jax.jit(lambda key: mctx.gumbel_muzero_policy(
        None, key, mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                     embedding=root.embedding),
        mctx_recurrent_fn(problem), num_simulations))(jax.random.key(5))
    same_action = np.asarray(ours.action) == np.asarray(theirs.action)
    print("gumbel: same action", same_action.mean())
    assert same_action.mean() >= 0.9
    np.testing.assert_allclose(ours.action_weights, theirs.action_weights, atol=1e-4)
