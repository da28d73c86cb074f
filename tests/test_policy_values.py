"""Policies are values: `SearchOptions` is one checked record, every policy is
a hashable object built once and accepted as it is by `search`, `sharding`,
the arena and self-play; a user's own policy (own root setup, own rule)
goes through all of them (8 devices: tests/sharding_checks.py)."""


import jax
import numpy as np
import pytest

import custom_rules
from tiny_self_play import play_checked_moves
import envs
import mcts_jax
from mcts_jax import evaluators, sharding, tree_search
from mcts_jax.hashable import HashableFunction
from problems.synthetic import HashedProblem, random_root_codes
from training import arena, loop, policies
from training import config as config_lib

PROBLEM = HashedProblem(num_actions=7, illegal_eighths=2, terminal_sixteenths=2)
ROOT, INVALID = PROBLEM.root(random_root_codes(5, 16))
USER_POLICY = custom_rules.FlattenedRootPolicy.make(root_temperature=3.0, max_nodes=40)


def test_search_options_is_one_checked_hashable_record():
    options = mcts_jax.SearchOptions(max_children=4, solver=True)
    assert options == mcts_jax.SearchOptions(max_children=4, solver=True)
    assert hash(options) == hash(mcts_jax.SearchOptions(max_children=4, solver=True))
    assert options.replace(solver=False).solver is False and options.solver is True
    for bad, needle in [(dict(max_children=0), "max_children"),
                        (dict(max_depth=0), "max_depth"),
                        (dict(steering="sideways"), "steering"),
                        (dict(value_range=(0, 2)), "value_range"),
                        (dict(checks="always"), "checks"),
                        (dict(solver=True, stop_at_terminal=False), "stop_at_terminal"),
                        (dict(expand_all=True, simulations_per_step=2), "expand_all"),
                        (dict(max_nodes=2.5), "max_nodes"),
                        (dict(loop_fn=3), "loop_fn")]:
        with pytest.raises((ValueError, TypeError), match=needle):
            mcts_jax.SearchOptions(**bad)
    with pytest.raises(TypeError, match="unknown search option.*max_child"):
        mcts_jax.SearchOptions.from_keywords(max_child=3)
    table = mcts_jax.SearchOptions.describe()
    for name in mcts_jax.SearchOptions.names():
        assert f"`{name}`" in table


def test_policy_values_are_hashable_and_checked_when_built():
    a = mcts_jax.AlphaZeroPolicy.make(pb_c_init=2.0, max_children=4)
    b = mcts_jax.AlphaZeroPolicy(pb_c_init=2.0, options=mcts_jax.SearchOptions(max_children=4))
    assert a == b and hash(a) == hash(b)
    assert a.replace(max_children=5).options.max_children == 5
    assert a.replace(dirichlet_fraction=0.0).pb_c_init == 2.0
    assert mcts_jax.GumbelPolicy(value_scale=0.2) != mcts_jax.GumbelPolicy()
    with pytest.raises(ValueError, match="dirichlet_fraction"):
        mcts_jax.AlphaZeroPolicy(dirichlet_fraction=2.0)
    with pytest.raises(TypeError, match="alphazero_policy got unknown.*max_chidren"):
        mcts_jax.alphazero_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 4,
                                  max_chidren=3)
    with pytest.raises(ValueError, match="expand_all"):
        mcts_jax.GumbelPolicy.make(expand_all=True)


def test_function_forms_equal_the_values():
    key = jax.random.key(1)
    by_function = mcts_jax.gumbel_policy(None, key, ROOT, PROBLEM.recurrent_fn, 16,
                                         invalid_actions=INVALID, max_num_considered_actions=4,
                                         max_children=5)
    value = mcts_jax.GumbelPolicy.make(max_num_considered_actions=4, max_children=5)
    by_value = value(None, key, ROOT, PROBLEM.recurrent_fn, 16, invalid_actions=INVALID)
    np.testing.assert_array_equal(by_function.search_tree.node_visits,
                                  by_value.search_tree.node_visits)
    np.testing.assert_array_equal(by_function.action, by_value.action)
    # `search` with the policy's rules, keys and root setup is the policy's search
    setup_key, search_key, _ = value.split_key(key)
    _, extra_data = value.root_setup(setup_key, ROOT, INVALID, None, value.options)
    rules = value.rules(tree_search.resolve_options(value.options, ROOT, INVALID, 16))
    tree = mcts_jax.search(None, search_key, ROOT, PROBLEM.recurrent_fn, 16,
                           root_rule=rules.at_root, interior_rule=rules.below_root,
                           invalid_actions=INVALID, max_children=5, extra_data=extra_data)
    np.testing.assert_array_equal(tree.node_visits, by_value.search_tree.node_visits)


def test_a_calls_record_holds_its_capacity_depth_limit_and_the_compile_keys_mode():
    options = mcts_jax.AlphaZeroPolicy.make(checks="off").options
    resolved = tree_search.resolve_options(options, ROOT, INVALID, 16)
    assert (resolved.num_simulations, resolved.max_nodes, resolved.max_depth) == (16, 17, 17)
    assert (resolved.checks, options.checks, options.max_depth) == ("host", "off", None)
    limited = tree_search.resolve_options(options.replace(max_depth=3, max_nodes=40), ROOT,
                                          INVALID, 16)
    assert (limited.max_nodes, limited.max_depth) == (40, 3)
    # A depth limit of None searches as a limit of N: no path is longer.
    key = jax.random.key(3)
    unlimited, at_capacity = (
        mcts_jax.alphazero_policy(None, key, ROOT, PROBLEM.recurrent_fn, 16,
                                  invalid_actions=INVALID, **depth)
        for depth in ({}, dict(max_depth=17)))
    for name in ("node_visits", "value_sums", "children", "parents"):
        np.testing.assert_array_equal(getattr(unlimited.search_tree, name),
                                      getattr(at_capacity.search_tree, name))
    with pytest.raises(ValueError, match="num_simulations must be >= 1"):
        tree_search.resolve_options(options, ROOT, INVALID, 0)


def test_the_functions_given_no_setting_run_their_class_default_value():
    """`alphazero_policy(...)` with no setting runs one value built at import
    (no `make` per call): equal to the class's own default and to a value
    made with every default spelt out, searching bit for bit as they do."""
    from mcts_jax import policies, tree_search
    for default, cls in [(policies.UCT_DEFAULT, mcts_jax.UCTPolicy),
                         (policies.ALPHAZERO_DEFAULT, mcts_jax.AlphaZeroPolicy),
                         (policies.GUMBEL_DEFAULT, mcts_jax.GumbelPolicy)]:
        assert default == cls() == cls.make() and hash(default) == hash(cls.make())
    # The default Q transform is a plain function, its own compile key: the
    # same function object given again gives the same value.
    spelt_out = mcts_jax.AlphaZeroPolicy.make(
        qtransform=mcts_jax.qtransforms.qtransform_by_parent_and_siblings, pb_c_init=1.25,
        dirichlet_fraction=0.25)
    assert spelt_out == policies.ALPHAZERO_DEFAULT
    # Given in a HashableFunction, a plain function is the same key as bare.
    wrapped = HashableFunction(mcts_jax.qtransforms.qtransform_by_parent_and_siblings)
    assert mcts_jax.AlphaZeroPolicy(qtransform=wrapped) == policies.ALPHAZERO_DEFAULT
    assert mcts_jax.MuZeroPolicy(qtransform=wrapped) == mcts_jax.MuZeroPolicy()

    def my_q(tree, node, stats):
        return stats.qvalues

    assert (mcts_jax.GumbelPolicy(qtransform=HashableFunction(my_q))
            == mcts_jax.GumbelPolicy(qtransform=my_q))
    assert mcts_jax.AlphaZeroPolicy(qtransform=my_q) != policies.ALPHAZERO_DEFAULT
    key = jax.random.key(3)
    plain = mcts_jax.alphazero_policy(None, key, ROOT, PROBLEM.recurrent_fn, 12,
                                      invalid_actions=INVALID)
    size = tree_search._compiled._cache_size()
    by_value = spelt_out(None, key, ROOT, PROBLEM.recurrent_fn, 12, invalid_actions=INVALID)
    assert tree_search._compiled._cache_size() == size  # one program for equal values
    np.testing.assert_array_equal(by_value.action, plain.action)
    np.testing.assert_array_equal(by_value.action_weights, plain.action_weights)
    np.testing.assert_array_equal(by_value.search_tree.node_visits,
                                  plain.search_tree.node_visits)
    np.testing.assert_array_equal(by_value.search_tree.value_sums,
                                  plain.search_tree.value_sums)


def test_a_policy_value_built_inside_jit_with_a_traced_constant_searches_as_the_concrete_one():
    """A value that binds a tracer of the caller's trace cannot be a compile
    key: it is found by its one walk (`hashable.compile_parts`) and traced
    inline, searching as the same value built outside with the number."""
    key = jax.random.key(4)

    @jax.jit
    def with_traced(pb_c_init):
        policy = mcts_jax.AlphaZeroPolicy(pb_c_init=pb_c_init, dirichlet_fraction=0.0)
        return policy(None, key, ROOT, PROBLEM.recurrent_fn, 12,
                      invalid_actions=INVALID).search_tree.node_visits

    concrete = mcts_jax.AlphaZeroPolicy(pb_c_init=3.0, dirichlet_fraction=0.0)(
        None, key, ROOT, PROBLEM.recurrent_fn, 12, invalid_actions=INVALID)
    np.testing.assert_array_equal(with_traced(3.0), concrete.search_tree.node_visits)
    default = mcts_jax.AlphaZeroPolicy(dirichlet_fraction=0.0)(
        None, key, ROOT, PROBLEM.recurrent_fn, 12, invalid_actions=INVALID)
    assert not np.array_equal(np.asarray(with_traced(3.0)),
                              np.asarray(default.search_tree.node_visits))


def test_names_map_to_policies_only_at_the_config_edge():
    assert isinstance(policies.policy_from_name("gumbel", num_actions=3), mcts_jax.GumbelPolicy)
    assert policies.policy_from_name("gumbel", num_actions=3).max_num_considered_actions == 3
    greedy = policies.policy_from_name("alphazero", num_actions=9, root_noise=False)
    assert greedy.dirichlet_fraction == 0.0 and greedy.final_action == "most_visited"
    with pytest.raises(ValueError, match="unknown policy 'mcts'"):
        policies.policy_from_name("mcts", num_actions=9)
    with pytest.raises(TypeError, match="policy value"):
        sharding.search(sharding.make_mesh(), "gumbel", None, jax.random.key(0), ROOT,
                        PROBLEM.recurrent_fn, 4)


def test_a_users_policy_runs_through_search_sharding_arena_and_self_play():
    key = jax.random.key(4)
    out = USER_POLICY(None, key, ROOT, PROBLEM.recurrent_fn, 24, invalid_actions=INVALID)
    visits = np.asarray(out.search_tree.summary().visit_counts)
    assert visits.sum() == 16 * 24 and not visits[np.asarray(INVALID)].any()
    # its root setup is really used: flattened priors spread the root visits
    plain = USER_POLICY.replace(root_temperature=1.0)(None, key, ROOT, PROBLEM.recurrent_fn,
                                                      24, invalid_actions=INVALID)
    assert not np.array_equal(plain.search_tree.node_visits, out.search_tree.node_visits)
    split = sharding.search(sharding.make_mesh(), USER_POLICY, None, key, ROOT,
                            PROBLEM.recurrent_fn, 24, invalid_actions=INVALID)
    np.testing.assert_array_equal(split.search_tree.node_visits, out.search_tree.node_visits)

    game = envs.make("tic_tac_toe")
    player = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=4, max_length=9),
                                custom_rules.FlattenedRootPolicy(), num_simulations=32)
    result = arena.play_match(game, player, None, arena.RandomPlayer(), None,
                              jax.random.key(0), num_games=16)
    assert result.num_games == 16 and result.wins > result.losses

    play_checked_moves(custom_rules.FlattenedRootPolicy.make(max_nodes=9), num_simulations=8,
                       num_games=8, moves=3)


def test_a_policy_must_fit_the_games_kind():
    game = envs.make("tic_tac_toe")
    player = arena.SearchPlayer(evaluators.Uniform(), mcts_jax.StochasticMuZeroPolicy(), 8)
    with pytest.raises(ValueError, match="'tic_tac_toe' is a deterministic game .no chance "
                                         "nodes. and this policy searches chance nodes"):
        player.policy_for(game)
    chance_game = envs.make("2048")
    with pytest.raises(ValueError, match="is a stochastic game .chance nodes: afterstates and "
                                         "outcomes. and needs a policy with chance nodes"):
        arena.SearchPlayer(evaluators.Uniform(), "alphazero", 8).policy_for(chance_game)


def test_train_searches_with_a_user_policy_value(tmp_path):
    """train.py's Python API takes a policy value: the user's policy (own
    root setup, own rule) plays every self-play move of a short run; its
    unset capacity becomes the run's; a name is refused there."""
    lines = []
    config, run_dir = loop.open_run(str(tmp_path / "run"),
                                    dict(game="tic_tac_toe", preset="tiny", eval_games=0, final_games=0,
                                         elo_every=0),
                                    log=lambda *_: None)
    summary = loop.train(config, run_dir, progress=False, log=lines.append,
                         policy=custom_rules.FlattenedRootPolicy(root_temperature=2.0))
    assert summary["total_games"] > 0
    assert any("FlattenedRootPolicy" in line and "root_temperature=2.0" in line for line in lines)
    _, _, player, _ = loop.build(config, None, custom_rules.FlattenedRootPolicy())
    assert isinstance(player.policy, custom_rules.FlattenedRootPolicy)
    assert player.policy.options.max_nodes == config.search_max_nodes
    with pytest.raises(TypeError, match="policy value"):
        config_lib.self_play_policy(config.records.search, player.game, "alphazero")


def test_mctx_family_defaults_and_several_paths_per_step_from_a_name():
    """A bare MuZero-family value starts from mctx's semantics, as `.make()`
    does; a name with several paths per step drops mctx's node numbering
    (it has no meaning there) instead of refusing the run; the arena takes
    a SearchOptions record."""
    assert mcts_jax.MuZeroPolicy() == mcts_jax.MuZeroPolicy.make()
    assert mcts_jax.MuZeroPolicy().options == mcts_jax.muzero_options()
    assert mcts_jax.AlphaZeroPolicy().options == mcts_jax.SearchOptions()
    for name in ("stochastic", "gumbel_muzero", "muzero", "alphazero"):
        policy = policies.policy_from_name(name, num_actions=4, simulations_per_step=4)
        assert policy.options.simulations_per_step == 4
        assert not policy.options.node_per_simulation
    player = arena.SearchPlayer(evaluators.Uniform(), "alphazero", 8,
                                options=mcts_jax.SearchOptions(max_children=3, solver=True))
    policy = player.policy_for(envs.make("tic_tac_toe"))
    assert policy.options.max_children == 3 and policy.options.solver
