"""The compact layout (`max_children=K`) and replayed embeddings.

With K at least the number of legal moves, the compact search is the dense
search, visit for visit, on synthetic trees and on pgx games from random
positions; with fewer slots it keeps the top-K priors, never an illegal
action, and the solver stays sound; replayed embeddings give the stored ones'
search; the memory report is the arrays' real size."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
from mcts_jax import compact, evaluators, solver
from mcts_jax import tree as tree_lib
from problems.synthetic import HashedProblem, random_root_codes

PROBLEM = HashedProblem(num_actions=12, illegal_eighths=3, terminal_sixteenths=2)
POLICIES = {
    "uct": functools.partial(mcts_jax.uct_policy),
    "alphazero": functools.partial(mcts_jax.alphazero_policy),  # Dirichlet noise on
    "alphazero_solver": functools.partial(mcts_jax.alphazero_policy, solver=True),
    "alphazero_depth3": functools.partial(mcts_jax.alphazero_policy, max_depth=3),
    "uct_expand_all": functools.partial(mcts_jax.uct_policy, expand_all=True),
    "gumbel": functools.partial(mcts_jax.gumbel_policy, max_num_considered_actions=4),
}


def synthetic_search(policy, codes, key=1, num_simulations=40, problem=PROBLEM, **options):
    root, illegal = problem.root(codes)
    return POLICIES[policy](None, jax.random.key(key), root, problem.recurrent_fn,
                            num_simulations, invalid_actions=illegal, **options)


def assert_same_search(dense, compact):
    a, b = dense.search_tree.summary(), compact.search_tree.summary()
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    np.testing.assert_array_equal(a.qvalues, b.qvalues)
    np.testing.assert_array_equal(dense.action, compact.action)
    # The same arithmetic on the same numbers in two compiled programs: with
    # the suite's backend at optimisation level 0 (conftest.py) the log and
    # exp of a softmax (Gumbel's improved policy) may round a few ulp apart
    # between the layouts (about 1e-6 relative; at the default level they
    # agree bit for bit); a visit distribution is exact through the visit
    # counts above.
    np.testing.assert_allclose(dense.action_weights, compact.action_weights, rtol=1e-5, atol=0)
    np.testing.assert_array_equal(dense.search_tree.num_nodes, compact.search_tree.num_nodes)
    np.testing.assert_array_equal(dense.search_tree.node_visits,
                                  compact.search_tree.node_visits)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_compact_equals_dense_on_synthetic_trees(policy):
    codes = random_root_codes(5, 16)
    dense = synthetic_search(policy, codes)
    compact = synthetic_search(policy, codes, max_children=PROBLEM.num_actions)
    assert compact.search_tree.children_actions.shape[-1] == PROBLEM.num_actions
    assert not np.asarray(compact.search_tree.pruned).any()
    assert_same_search(dense, compact)


def random_positions(game, batch_size, num_moves, seed):
    """Positions after `num_moves` uniformly random moves (none terminal)."""
    states = game.init(jax.random.key(seed), batch_size)
    step = jax.jit(game.step)
    key = jax.random.key(seed + 1)
    for _ in range(num_moves):
        key, move_key = jax.random.split(key)
        logits = jnp.where(game.legal_actions(states), 0.0, -jnp.inf)
        stepped = step(states, jax.random.categorical(move_key, logits).astype(jnp.int32))
        keep = game.is_terminal(stepped)
        states = jax.tree.map(lambda old, new: jnp.where(
            keep.reshape((-1,) + (1,) * (new.ndim - 1)), old, new), states, stepped)
    assert not np.asarray(game.is_terminal(states)).any()
    return states


GAME_CASES = [("tic_tac_toe", 9, 3, 48), ("go_9x9", 82, 10, 32), ("chess", 218, 12, 32)]


@pytest.mark.parametrize("name,max_children,num_moves,num_simulations", GAME_CASES,
                         ids=[case[0] for case in GAME_CASES])
def test_compact_equals_dense_on_games(name, max_children, num_moves, num_simulations):
    game = envs.make(name)
    evaluator = evaluators.Uniform()  # uniform priors: every slot ties, a hard case
    states = random_positions(game, 4, num_moves, seed=len(name))
    root, invalid = game.root(None, jax.random.key(0), states, evaluator)
    run = functools.partial(mcts_jax.alphazero_policy, None, jax.random.key(3), root,
                            game.recurrent_fn(evaluator), num_simulations,
                            invalid_actions=invalid)
    dense = run()
    compact = run(max_children=max_children)
    assert_same_search(dense, compact)
    if name == "chess":
        replayed = run(max_children=max_children, replay_embeddings=True)
        assert_same_search(dense, replayed)
        assert jax.tree.leaves(replayed.search_tree.embeddings)[0].shape[1] == 1


def python_top_k(problem, code, num_slots):
    """The legal actions of a state with the K highest priors, in id order."""
    logits, illegal = problem.logits(code), problem.illegal(code)
    legal = [a for a in range(problem.num_actions) if not illegal[a]]
    return sorted(sorted(legal, key=lambda a: -logits[a])[:num_slots]), len(legal)


def test_fewer_slots_keep_the_top_priors_and_never_an_illegal_action():
    num_slots = 3
    codes = random_root_codes(9, 8)
    out = synthetic_search("alphazero", codes, num_simulations=60, max_children=num_slots,
                           solver=True, dirichlet_fraction=0.0)
    tree = jax.device_get(out.search_tree)
    assert tree.children_actions.shape[-1] == num_slots
    checked = pruned_nodes = 0
    for row in range(8):
        codes_by_node = {0: int(codes[row])}
        for node in range(int(tree.num_nodes[row])):
            if node:
                parent = int(tree.parents[row, node])
                codes_by_node[node] = PROBLEM.step_code(
                    codes_by_node[parent], int(tree.actions_from_parent[row, node]))
            code = codes_by_node[node]
            if node and PROBLEM.terminal(code):
                continue
            if node == 0:
                _, logits, illegal = PROBLEM.root_python(code)
                legal = [a for a in range(PROBLEM.num_actions) if not illegal[a]]
                expected = sorted(sorted(legal, key=lambda a: -logits[a])[:num_slots])
                num_legal = len(legal)
            else:
                expected, num_legal = python_top_k(PROBLEM, code, num_slots)
            actions = [int(a) for a in tree.children_actions[row, node]
                       if a < PROBLEM.num_actions]
            assert actions == expected, (row, node)
            assert bool(tree.pruned[row, node]) == (num_legal > num_slots)
            np.testing.assert_allclose(tree.priors[row, node].sum(), 1.0, rtol=1e-5)
            pruned_nodes += num_legal > num_slots
            checked += 1
            # The solver never proves a pruned node from its kept children alone.
            if tree.pruned[row, node] and tree.solved[row, node]:
                stats = tree_lib.children_stats(
                    out.search_tree, jnp.full((8,), node, jnp.int32))
                best = np.max(np.where(stats.solved[row], stats.solved_qvalues[row], -np.inf))
                assert best >= solver.PROVEN_WIN
    assert checked > 100 and pruned_nodes > 20
    summary = out.search_tree.summary()
    assert summary.visit_counts.shape == (8, PROBLEM.num_actions)
    # Visits land only on kept root actions, in action space.
    kept = np.zeros((8, PROBLEM.num_actions), bool)
    for row in range(8):
        kept[row, [a for a in tree.children_actions[row, 0] if a < PROBLEM.num_actions]] = True
    assert (np.asarray(summary.visit_counts)[~kept] == 0).all()


def test_slot_ties_are_broken_at_random_and_nothing_legal_is_dropped():
    num_actions, num_slots = 10, 4
    priors = jnp.full((1, num_actions), 1.0 / 7)
    legal = jnp.asarray([[True] * 7 + [False] * 3])
    kept_sets = set()
    for seed in range(12):
        slots = compact.compact_slots(priors, legal, num_slots, jax.random.key(seed), jnp.int16)
        actions = [int(a) for a in slots.actions[0]]
        assert actions == sorted(actions) and len(set(actions)) == num_slots
        assert all(a < 7 for a in actions)
        np.testing.assert_allclose(slots.priors[0], 0.25)
        kept_sets.add(tuple(actions))
    assert len(kept_sets) > 3
    # A strictly higher prior is always kept; ties fill the rest.
    priors = priors.at[0, 6].set(0.5)
    for seed in range(5):
        slots = compact.compact_slots(priors, legal, num_slots, jax.random.key(seed), jnp.int16)
        assert 6 in [int(a) for a in slots.actions[0]]
    # K >= legal moves: every legal action gets a slot, priors unchanged.
    rng = np.random.default_rng(0)
    for _ in range(5):
        legal = jnp.asarray(rng.random((3, num_actions)) < 0.5)
        priors = tree_lib.masked_priors(jnp.asarray(rng.normal(size=(3, num_actions)),
                                                    jnp.float32), legal)
        slots = compact.compact_slots(priors, legal, 6, jax.random.key(0), jnp.int16)
        for row in range(3):
            legal_ids = np.flatnonzero(np.asarray(legal[row]))
            if len(legal_ids) <= 6:
                kept = [int(a) for a in slots.actions[row] if a < num_actions]
                assert kept == legal_ids.tolist()
                np.testing.assert_array_equal(slots.priors[row, :len(kept)],
                                              priors[row, legal_ids])


def test_replayed_embeddings_equal_stored_ones_with_reuse():
    codes = random_root_codes(11, 8)
    stored = synthetic_search("alphazero_solver", codes, max_children=6, max_nodes=120)
    replayed = synthetic_search("alphazero_solver", codes, max_children=6, max_nodes=120,
                                replay_embeddings=True)
    assert_same_search(stored, replayed)
    # Continue both after the move: the replayed tree takes the new root's state.
    kept_stored = mcts_jax.get_subtree(stored.search_tree, stored.action)
    kept_replayed = mcts_jax.get_subtree(replayed.search_tree, replayed.action)
    next_codes = np.asarray(PROBLEM.jax_step_code(jnp.asarray(codes, jnp.uint32),
                                                  stored.action))
    root, illegal = PROBLEM.root(next_codes)
    continued = [mcts_jax.alphazero_policy(None, jax.random.key(7), root, PROBLEM.recurrent_fn,
                                           30, invalid_actions=illegal, tree=kept, solver=True)
                 for kept in (kept_stored, kept_replayed)]
    assert continued[1].search_tree.replay_embeddings
    assert continued[1].search_tree.max_children == 6
    assert_same_search(*continued)


def test_compact_subtree_reuse_equals_dense():
    codes = random_root_codes(12, 8)
    runs = []
    for max_children in (None, PROBLEM.num_actions):
        out = synthetic_search("alphazero", codes, max_children=max_children, max_nodes=100)
        kept = mcts_jax.get_subtree(out.search_tree, out.action)
        root, illegal = PROBLEM.root(np.asarray(
            PROBLEM.jax_step_code(jnp.asarray(codes, jnp.uint32), out.action)))
        runs.append(mcts_jax.alphazero_policy(None, jax.random.key(8), root,
                                              PROBLEM.recurrent_fn, 30,
                                              invalid_actions=illegal, tree=kept))
    assert_same_search(*runs)


def test_layout_errors_name_the_argument():
    codes = random_root_codes(1, 2)
    with pytest.raises(ValueError, match="max_children"):
        synthetic_search("uct", codes, max_children=0)
    with pytest.raises(ValueError, match="max_children"):
        synthetic_search("uct", codes, max_children=PROBLEM.num_actions + 1)
    with pytest.raises(TypeError, match="max_children"):
        synthetic_search("uct", codes, max_children=2.5)
    out = synthetic_search("uct", codes, max_children=4, max_nodes=50)
    with pytest.raises(ValueError, match="max_children"):
        synthetic_search("uct", codes, tree=out.search_tree, max_children=5)
    with pytest.raises(ValueError, match="action"):
        mcts_jax.get_subtree(out.search_tree, jnp.asarray([0, PROBLEM.num_actions]))
    # The layout says what its slots hold: a second plug-in that also says it
    # is refused by name, not silently overruled by the compact layout.
    with pytest.raises(ValueError, match="slot_action"):
        synthetic_search("uct", codes, max_children=4, plugins=(SlotsReadBackwards(),))
    # The slot layout's root entry is the root's slots: a plug-in that would
    # also keep an `evaluated` entry of its own is refused by name.
    with pytest.raises(ValueError, match="lays out the slots"):
        synthetic_search("uct", codes, plugins=(DenseSlotsWithEntry(),))
    # A compact tree keeps its layout's record; searched without the solver,
    # it continues with it (a plug-in that keeps no arrays may differ).
    solved = synthetic_search("uct", codes, tree=out.search_tree, solver=True, max_nodes=50)
    np.testing.assert_array_equal(np.asarray(solved.search_tree.children_actions[:, 0]),
                                  np.asarray(out.search_tree.children_actions[:, 0]))


@dataclasses.dataclass(frozen=True)
class SlotsReadBackwards(mcts_jax.SearchPlugin):
    """A user's plug-in that maps child slot k to action A - 1 - k."""

    def slot_action(self, tree, record, parent, slot):
        return tree.num_actions - 1 - slot.astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class DenseSlotsWithEntry(mcts_jax.SearchPlugin):
    """A plug-in that lays out the slots (dense) and keeps a per-node entry."""

    def node_slots(self, priors, legal, logits, rng_key, index_dtype):
        return mcts_jax.tree.dense_slots(priors, legal, index_dtype, logits)

    def evaluated(self, rng_key, output):
        return output, jnp.zeros(output.value.shape)


def test_memory_report_is_the_size_of_the_real_arrays():
    codes = random_root_codes(2, 4)
    for max_children, replay in [(None, False), (5, False), (5, True)]:
        out = synthetic_search("uct", codes, max_children=max_children, max_nodes=33,
                               replay_embeddings=replay, num_simulations=8)
        real = sum(leaf.nbytes for leaf in jax.tree.leaves(out.search_tree))
        report = mcts_jax.memory.tree_memory(jax.ShapeDtypeStruct((), jnp.uint32),
                                             PROBLEM.num_actions, 4, 33, max_children, replay)
        assert report.total_bytes == real
    chess = envs.make("chess")
    dense = chess.tree_memory(1024, 801)
    compact = chess.tree_memory(1024, 801, max_children=218)
    replay = chess.tree_memory(1024, 801, max_children=218, replay_embeddings=True)
    assert compact.bytes_per_node <= 12 * 1024 and replay.bytes_per_node <= 4 * 1024
    assert compact.total_bytes <= 10 * 2**30 < dense.total_bytes
    assert "children_actions" in compact.table()
