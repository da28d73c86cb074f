"""A user's selection rule and Q transform, written outside the package
(tests/custom_rules.py) from the public contract alone, run everywhere a
built-in one runs: `mcts_jax.search`, the policies, `sharding.search`
(8 devices in tests/sharding_checks.py), an arena match and self-play."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

import custom_rules
import envs
import mcts_jax
from mcts_jax import evaluators, sharding
from training import arena, networks
from problems.synthetic import HashedProblem, random_root_codes
from training import replay, self_play

PROBLEM = HashedProblem(num_actions=7, illegal_eighths=2, terminal_sixteenths=2)
ROOT, INVALID = PROBLEM.root(random_root_codes(5, 64))
SIMULATIONS = 48


def test_rebuilt_puct_reproduces_alphazero_policy_exactly():
    key = jax.random.key(3)
    builtin = mcts_jax.alphazero_policy(None, key, ROOT, PROBLEM.recurrent_fn, SIMULATIONS,
                                        invalid_actions=INVALID, dirichlet_fraction=0.0,
                                        final_action="most_visited")
    # alphazero_policy consumes split(key, 3)[1] for its search.
    tree = mcts_jax.search(None, jax.random.split(key, 3)[1], ROOT, PROBLEM.recurrent_fn,
                           SIMULATIONS, root_rule=custom_rules.rebuilt_puct,
                           invalid_actions=INVALID)
    ours = np.asarray(tree.summary().visit_counts)
    np.testing.assert_array_equal(ours, builtin.search_tree.summary().visit_counts)
    np.testing.assert_array_equal(tree.node_visits, builtin.search_tree.node_visits)
    assert ours.sum() == 64 * SIMULATIONS and (ours.max(-1) < SIMULATIONS).any()


def test_custom_rule_through_search_with_tree_options():
    """The custom rule with the solver, the compact layout and a continued tree."""
    rule = functools.partial(custom_rules.depth_scaled_ucb, c=2.0)
    tree = mcts_jax.search(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMULATIONS,
                           root_rule=rule, interior_rule=custom_rules.depth_scaled_ucb,
                           invalid_actions=INVALID, solver=True, max_children=4,
                           max_nodes=4 * SIMULATIONS)
    visits = np.asarray(tree.summary().visit_counts)
    assert np.all(visits[np.asarray(INVALID)] == 0)
    # The solver may stop a proven root early; otherwise every simulation counts.
    proven = np.asarray(tree.summary().root_proven)
    assert np.all(visits.sum(-1)[~proven] == SIMULATIONS)
    action = jnp.argmax(tree.summary().visit_counts, axis=-1)
    subtree = mcts_jax.get_subtree(tree, action)
    kept = np.asarray(subtree.node_visits[:, 0])
    assert (kept > 1).any()
    # Equal partials compile once: a rebuilt partial reuses the compiled search.
    size = mcts_jax.tree_search._compiled._cache_size()
    mcts_jax.search(None, jax.random.key(1), ROOT, PROBLEM.recurrent_fn, SIMULATIONS,
                    root_rule=functools.partial(custom_rules.depth_scaled_ucb, c=2.0),
                    interior_rule=custom_rules.depth_scaled_ucb, invalid_actions=INVALID,
                    solver=True, max_children=4, max_nodes=4 * SIMULATIONS)
    assert mcts_jax.tree_search._compiled._cache_size() == size


def bias_rule(tree, node, stats, *, bias):
    """Descends into the slot with the largest bias (an array bound in a partial)."""
    return jnp.where(stats.legal, jnp.asarray(bias, jnp.float32)[None, :] + 0.0 * stats.qvalues,
                     -jnp.inf)


def test_arrays_bound_in_a_rule_are_never_served_from_a_stale_compilation():
    """A partial binding an unhashable value (an array) is compared by
    identity: a new array, even at a recycled address, compiles anew."""
    root, _ = PROBLEM.root(random_root_codes(6, 4))
    chosen = []
    for favourite in (2, 5, 2, 5):
        bias = np.zeros(7, np.float32)
        bias[favourite] = 10.0
        tree = mcts_jax.search(None, jax.random.key(0), root, PROBLEM.recurrent_fn, 4,
                               root_rule=functools.partial(bias_rule, bias=bias))
        chosen.append(int(np.argmax(np.asarray(tree.summary().visit_counts)[0])))
        del bias, tree
    assert chosen == [2, 5, 2, 5]
    assert mcts_jax.rule_policy(custom_rules.depth_scaled_ucb) == \
        mcts_jax.rule_policy(custom_rules.depth_scaled_ucb)


def test_custom_qtransform_in_the_policies():
    for policy in (mcts_jax.alphazero_policy, mcts_jax.gumbel_policy,
                   mcts_jax.muzero_policy):
        out = policy(None, jax.random.key(2), ROOT, PROBLEM.recurrent_fn, 16,
                     invalid_actions=INVALID, qtransform=custom_rules.qtransform_clipped)
        assert not np.any(np.asarray(INVALID)[np.arange(64), np.asarray(out.action)])
        np.testing.assert_allclose(np.asarray(out.action_weights).sum(-1), 1.0, atol=1e-5)
    # The transform changes the search (it is really used).
    clipped = mcts_jax.alphazero_policy(None, jax.random.key(2), ROOT, PROBLEM.recurrent_fn,
                                        16, invalid_actions=INVALID,
                                        qtransform=custom_rules.qtransform_clipped)
    default = mcts_jax.alphazero_policy(None, jax.random.key(2), ROOT, PROBLEM.recurrent_fn,
                                        16, invalid_actions=INVALID)
    assert not np.array_equal(clipped.search_tree.node_visits, default.search_tree.node_visits)


def test_custom_rule_sharded_on_this_process_devices():
    """Exact and local modes on this process's devices (8 devices: sharding_checks)."""
    mesh = sharding.make_mesh()
    key = jax.random.key(4)
    alone = custom_rules.depth_scaled_policy(None, key, ROOT, PROBLEM.recurrent_fn, 16,
                                             invalid_actions=INVALID)
    for mode in ("exact", "local"):
        split = sharding.search(mesh, custom_rules.depth_scaled_policy, None, key, ROOT,
                                PROBLEM.recurrent_fn, 16, invalid_actions=INVALID, mode=mode)
        if sharding.num_devices(mesh) == 1 or mode == "exact":
            np.testing.assert_array_equal(split.search_tree.node_visits,
                                          alone.search_tree.node_visits)


def test_custom_rule_plays_an_arena_match():
    """UCT-like custom rule with random playouts against a random player."""
    game = envs.make("tic_tac_toe")
    player = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=4, max_length=9),
                                custom_rules.depth_scaled_policy, num_simulations=32)
    result = arena.play_match(game, player, None, arena.RandomPlayer(), None,
                              jax.random.key(0), num_games=16)
    assert result.wins + result.draws + result.losses == 16
    assert result.wins > 2 * result.losses, result


def test_custom_rule_in_self_play():
    game = envs.make("tic_tac_toe")
    model = networks.make_model(networks.NetworkConfig(kind="mlp", hidden=16, num_layers=1,
                                                       value_hidden=8), game)
    variables = model.init(jax.random.key(0))
    policy = custom_rules.depth_scaled_policy.replace(final_action="sampled", max_nodes=9)
    player = self_play.SelfPlay(game=game, model=model, policy=policy,
                                num_simulations=8, num_games=8, reuse_tree=True)
    state = player.init(jax.random.key(1))
    buffer = replay.init(16, 8, (3, 3, 2), jnp.bool_, 9)
    for t in range(6):
        legal = np.asarray(state.states.legal_action_mask)
        state, buffer, info = player.step(variables, jax.random.key(10 + t), state, buffer)
        actions = np.asarray(info.action)
        assert legal[np.arange(8), actions].all()
        targets = np.asarray(buffer.policy)[t]
        np.testing.assert_allclose(targets.sum(-1), 1.0, atol=1e-5)
        assert (targets[~legal] == 0).all()
