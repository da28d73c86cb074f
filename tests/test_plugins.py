"""Search plug-ins (mcts_jax/plugin.py): a user's plug-in, written outside the
library (tests/custom_plugins.py: a max backup), checked against a plain-Python
reference and run through the policies, sharding, reuse, the arena and
self-play; the solver as the library's own plug-in; bad plug-ins refused."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
from custom_plugins import MaxBackup
from tiny_self_play import play_checked_moves
from mcts_jax import evaluators, plugin, sharding, solver
from mcts_jax import tree as tree_lib
from problems.synthetic import HashedProblem, random_root_codes
from training import arena

BATCH = 8
SIMULATIONS = 30
PROBLEM = HashedProblem(num_actions=4, illegal_eighths=1, terminal_sixteenths=3)
UCT_C = 1.4


class RefNode:
    def __init__(self, code, depth, raw, reward, discount, terminal, legal):
        self.code, self.depth, self.raw, self.reward = code, depth, raw, reward
        self.discount, self.terminal, self.legal = discount, terminal, legal
        self.visits, self.best, self.children, self.parent = 1, raw, {}, None

    def q(self, action):
        child = self.children[action]
        return child.reward + child.discount * child.best


def reference_max_backup_uct(problem, code, num_simulations):
    """UCT whose Q is the max-backup value, plain Python and float64: returns
    {action path: (visits, best value)}."""
    value, _, illegal = problem.root_python(code)
    root = RefNode(code, 0, value, 0.0, 0.0, False, [not x for x in illegal])
    for _ in range(num_simulations):
        node = root
        while True:
            scores = []
            for action in range(problem.num_actions):
                if not node.legal[action]:
                    scores.append(-np.inf)
                elif action not in node.children:
                    scores.append(np.inf)
                else:
                    child = node.children[action]
                    scores.append(node.q(action)
                                  + UCT_C * np.sqrt(np.log(node.visits) / child.visits))
            if max(scores) == -np.inf:
                leaf = node
                break
            action = int(np.argmax(scores))
            if action not in node.children:
                child_code = problem.step_code(node.code, action)
                terminal = problem.terminal(child_code)
                child_illegal = problem.illegal(child_code)
                leaf = RefNode(child_code, node.depth + 1,
                               0.0 if terminal else problem.value(child_code),
                               problem.reward(child_code), 0.0 if terminal else problem.discount,
                               terminal, [not (x or terminal) for x in child_illegal])
                leaf.parent = node
                leaf.visits = 0
                node.children[action] = leaf
                break
            node = node.children[action]
            if node.terminal:
                leaf = node
                break
        node = leaf
        while node is not None:  # visits as usual; values by max backup, leaf first
            node.visits += 1
            if node.children:
                node.best = max(node.q(action) for action in node.children)
            node = node.parent
    shape = {}

    def walk(node, path):
        shape[path] = (node.visits, node.best)
        for action, child in node.children.items():
            walk(child, path + (action,))

    walk(root, ())
    return shape


def tree_shape(tree, row):
    children = np.asarray(tree.children[row])
    visits = np.asarray(tree.node_visits[row])
    best = np.asarray(tree.plugin_records[0][row])
    shape = {}

    def walk(node, path):
        shape[path] = (int(visits[node]), float(best[node]))
        for action, child in enumerate(children[node]):
            if child >= 0:
                walk(int(child), path + (action,))

    walk(0, ())
    return shape


ROOT, INVALID = PROBLEM.root(random_root_codes(3, BATCH))
CODES = random_root_codes(3, BATCH)


def max_backup_uct(**keywords):
    return mcts_jax.uct_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMULATIONS,
                               invalid_actions=INVALID, plugins=(MaxBackup(),), **keywords)


def test_a_users_max_backup_matches_a_plain_python_reference():
    tree = max_backup_uct().search_tree
    for row, code in enumerate(CODES):
        expected = reference_max_backup_uct(PROBLEM, int(code), SIMULATIONS)
        got = tree_shape(tree, row)
        assert set(got) == set(expected), f"row {row}: other nodes expanded"
        for path, (visits, best) in expected.items():
            assert got[path][0] == visits, (row, path)
            assert got[path][1] == pytest.approx(best, abs=1e-5), (row, path)


def test_the_max_backup_changes_the_search_and_keeps_the_mean_untouched():
    plain = mcts_jax.uct_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn,
                                SIMULATIONS, invalid_actions=INVALID).search_tree
    tree = max_backup_uct().search_tree
    assert not np.array_equal(plain.node_visits, tree.node_visits)
    assert plain.plugin_records == ()
    # visits still count every simulation; the value sums stay the mean backup's
    np.testing.assert_array_equal(tree.node_visits[:, 0], SIMULATIONS + 1)


@pytest.mark.parametrize("make", [
    lambda: mcts_jax.AlphaZeroPolicy.make(plugins=(MaxBackup(),), dirichlet_fraction=0.0),
    lambda: mcts_jax.GumbelPolicy.make(plugins=(MaxBackup(),)),
    lambda: mcts_jax.AlphaZeroPolicy.make(plugins=(MaxBackup(),), simulations_per_step=2,
                                          dirichlet_fraction=0.0),
    lambda: mcts_jax.AlphaZeroPolicy.make(plugins=(MaxBackup(),), solver=True,
                                          max_children=2, dirichlet_fraction=0.0),
], ids=["alphazero", "gumbel", "p2", "solver_compact"])
def test_the_plugin_runs_through_policies_and_sharding(make):
    policy = make()
    out = policy(None, jax.random.key(1), ROOT, PROBLEM.recurrent_fn, 16, invalid_actions=INVALID)
    tree = out.search_tree
    # The records' order (docs/plugins.md): the solver's, the user's, then the
    # built-in plug-ins that keep none (P paths per step among them).
    mine = 1 if policy.options.solver else 0
    best = tree.plugin_records[mine]
    assert best.shape == tree.node_visits.shape
    used = np.arange(tree.max_nodes)[None, :] < np.asarray(tree.num_nodes)[:, None]
    assert np.all(np.abs(np.asarray(best)[used]) <= 1.0 + 1e-6)
    assert not np.any(np.isnan(np.asarray(best)))
    split = sharding.search(sharding.make_mesh(), policy, None, jax.random.key(1), ROOT,
                            PROBLEM.recurrent_fn, 16, invalid_actions=INVALID, mode="exact")
    np.testing.assert_array_equal(split.search_tree.plugin_records[mine], best)
    np.testing.assert_array_equal(split.search_tree.node_visits, tree.node_visits)


def test_reuse_re_roots_the_plugins_arrays_and_a_continued_search_keeps_them():
    out = max_backup_uct()
    tree = out.search_tree
    kept = mcts_jax.get_subtree(tree, out.action)
    rows = np.arange(BATCH)
    child = np.asarray(tree.children)[rows, 0, np.asarray(out.action)]
    np.testing.assert_allclose(np.asarray(kept.plugin_records[0])[:, 0],
                               np.asarray(tree.plugin_records[0])[rows, child])
    with pytest.raises(ValueError, match="other plug-ins") as refused:
        mcts_jax.uct_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 4,
                            invalid_actions=INVALID, tree=tree)
    assert "keep_prior_logits" not in str(refused.value)  # only the logits' record says so


def test_the_plugin_plays_an_arena_match():
    game = envs.make("tic_tac_toe")
    policy = mcts_jax.UCTPolicy.make(plugins=(MaxBackup(),))
    player = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=2, max_length=9), policy,
                                num_simulations=24)
    result = arena.play_match(game, player, None, arena.RandomPlayer(), None,
                              jax.random.key(0), num_games=8)
    assert result.wins + result.draws + result.losses == 8
    assert result.wins > result.losses, result


def test_the_solver_is_a_plugin_of_the_same_interface():
    assert isinstance(solver.SOLVER, mcts_jax.SearchPlugin)
    out = mcts_jax.uct_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 8,
                              invalid_actions=INVALID, solver=True)
    assert out.search_tree.plugin_records == (None,)  # it keeps the tree's solved arrays


@dataclasses.dataclass(frozen=True)
class Unhashable(mcts_jax.SearchPlugin):
    weights: list = dataclasses.field(default_factory=list)  # a list: no hash


@pytest.mark.parametrize("plugins, error, message", [
    (("max",), TypeError, r"plugins\[0\] must be a mcts_jax.SearchPlugin"),
    (MaxBackup, TypeError, "plugins must be a tuple"),
    ((Unhashable(),), TypeError, r"plugins\[0\] \(Unhashable\) must be hashable"),
])
def test_bad_plugins_are_refused_with_their_name(plugins, error, message):
    with pytest.raises(error, match=message):
        mcts_jax.SearchOptions(plugins=plugins)
    with pytest.raises(error, match=message):
        mcts_jax.alphazero_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 4,
                                  plugins=plugins)


def test_the_plugin_helpers_call_nothing_without_plugins():
    tree = mcts_jax.uct_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn,
                               4).search_tree
    assert plugin.after_backup((), tree, ()) is tree
    assert plugin.open_slots((), tree, None) is None


def test_the_loop_refuses_a_tree_without_a_record_per_plugin():
    """The phases pair each plug-in with its record (`zip`); a tree made for
    other plug-ins would silently skip hooks, so the loop refuses it."""
    from mcts_jax import phases, tree_search
    options = tree_search.resolve_options(mcts_jax.SearchOptions(), ROOT, None, 4)
    tree = tree_search.start_tree(jax.random.key(0), ROOT, None, options, None, plugins=())
    with pytest.raises(ValueError, match="0 plug-in records for 1 plug-ins"):
        phases.run_simulations(lambda step, carry: carry, (jax.random.key(0), tree, (None,)),
                               1, options, (MaxBackup(),))


def test_the_plugin_in_self_play_with_tree_reuse():
    policy = mcts_jax.AlphaZeroPolicy.make(plugins=(MaxBackup(),), max_nodes=12)
    play_checked_moves(policy, num_simulations=8, num_games=4, moves=4, reuse_tree=True)


@chex.dataclass(frozen=True)
class TallyRecord:
    """A record with a per-row array beside a per-node one: it says itself how
    it empties and re-roots (the default moves every leaf as per-node)."""

    first_value: jax.Array  # [B, N] float32, each node's value when it was written
    rerootings: jax.Array  # [B] int32, how often reuse re-rooted the row's tree

    def emptied(self):
        return TallyRecord(first_value=jnp.zeros_like(self.first_value),
                           rerootings=jnp.zeros_like(self.rerootings))

    def rerooted(self, emptied, move, keep, new_index):
        del keep, new_index
        return TallyRecord(first_value=move(self.first_value, emptied.first_value),
                           rerootings=self.rerootings + 1)


@dataclasses.dataclass(frozen=True)
class Tally(mcts_jax.SearchPlugin):
    def init_record(self, tree):
        return TallyRecord(first_value=tree.raw_values,
                           rerootings=jnp.zeros((tree.batch_size,), jnp.int32))

    def new_nodes(self, tree, record, write_at, new):
        rows = jnp.arange(tree.batch_size)[:, None]
        return record.replace(first_value=record.first_value.at[rows, write_at].set(
            new.value, mode="drop"))


def test_a_record_says_how_it_empties_and_re_roots():
    out = mcts_jax.uct_policy(None, jax.random.key(2), ROOT, PROBLEM.recurrent_fn, SIMULATIONS,
                              invalid_actions=INVALID, plugins=(Tally(),))
    tree = out.search_tree
    np.testing.assert_array_equal(tree.plugin_records[0].first_value, tree.raw_values)
    kept = mcts_jax.get_subtree(tree, out.action)
    record = kept.plugin_records[0]
    np.testing.assert_array_equal(record.rerootings, np.ones(BATCH, np.int32))
    # The per-node array moved with the nodes: it still equals the tree's own raw values.
    np.testing.assert_array_equal(record.first_value, kept.raw_values)
    assert int(jnp.max(kept.num_nodes)) < SIMULATIONS + 1
    again = mcts_jax.get_subtree(kept, jnp.zeros((BATCH,), jnp.int32))
    np.testing.assert_array_equal(again.plugin_records[0].rerootings, np.full(BATCH, 2))
    emptied = tree_lib.empty_like(tree).plugin_records[0]
    np.testing.assert_array_equal(emptied.rerootings, np.zeros(BATCH, np.int32))
    assert not np.any(np.asarray(emptied.first_value))
