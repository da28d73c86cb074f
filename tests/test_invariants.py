"""Property tests: tree invariants after any sequence of searches (UCT, PUCT,
Gumbel, expand-all; dense and compact layouts; solver on and off),
get_subtree and reset_tree calls, on hashed synthetic game trees.

Shapes are fixed (B, A, N, simulations), every search continues a tree
(`tree=`, empty rows start fresh), so each configuration compiles once and
hypothesis only varies values: the keys, the rules, the moves, the resets.

The visit invariant, from `Tree`'s docstring: a node's visits are one (its
expansion; expand-all's new children start with that one visit) plus one per
simulation that passed through it. So visits >= 1 + the sum of the
children's visits, with equality except where simulations ended at the node
itself (a terminal node reached again, a node with no legal or no
unproven child, a full tree). The capacity here is large enough that the
tree never fills.
"""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import mcts_jax
from mcts_jax import tree as tree_lib
from problems.synthetic import HashedProblem, random_root_codes

B, A, K, SIMS = 3, 5, 3, 5
MAX_SEARCHES = 4
N = MAX_SEARCHES * SIMS * A + 1  # never full, even with expand-all
PROBLEM = HashedProblem(num_actions=A, illegal_eighths=2, terminal_sixteenths=2)
RULES = ("uct", "puct", "gumbel", "uct_expand_all")
EPS = 1e-5


def run_search(rule, key, root, illegal, tree, solver, **options):
    common = dict(invalid_actions=illegal, tree=tree, solver=solver, **options)
    key = jax.random.key(key)
    if rule == "uct":
        return mcts_jax.uct_policy(None, key, root, PROBLEM.recurrent_fn, SIMS, **common)
    if rule == "uct_expand_all":
        return mcts_jax.uct_policy(None, key, root, PROBLEM.recurrent_fn, SIMS,
                                   expand_all=True, **common)
    if rule == "puct":
        return mcts_jax.alphazero_policy(None, key, root, PROBLEM.recurrent_fn, SIMS, **common)
    return mcts_jax.gumbel_policy(None, key, root, PROBLEM.recurrent_fn, SIMS,
                                  max_num_considered_actions=4, **common)


def empty_tree(max_children):
    root, illegal = PROBLEM.root(random_root_codes(0, B))
    out = mcts_jax.uct_policy(None, jax.random.key(0), root, PROBLEM.recurrent_fn, SIMS,
                              invalid_actions=illegal, max_nodes=N, max_children=max_children)
    return mcts_jax.reset_tree(out.search_tree, jnp.ones((B,), bool))


EMPTY = {None: empty_tree(None), K: empty_tree(K)}


def legal_actions(code, is_original_root):
    illegal = PROBLEM.illegal(code)
    if is_original_root and all(illegal):
        illegal[0] = False  # HashedProblem.root un-masks the first action
    return [a for a in range(A) if not illegal[a]]


def check_invariants(tree, solver, rule, parallel=False):
    """`parallel`: searches ran several paths per step, so a node created in
    a step may also end another path of that step (a collision): its visits
    then exceed 1 + its children's."""
    t = jax.tree.map(np.asarray, tree)
    assert t.node_visits.shape == (B, N)
    for b in range(B):
        used = int(t.num_nodes[b])
        assert 0 <= used <= N
        # Free slots are empty.
        assert (t.node_visits[b, used:] == 0).all()
        assert (t.children[b, used:] == tree_lib.UNEXPANDED).all()
        assert (t.parents[b, used:] == tree_lib.NO_PARENT).all()
        if used == 0:
            continue
        codes = t.embeddings[b]
        assert t.parents[b, 0] == tree_lib.NO_PARENT
        for node in range(used):
            visits = int(t.node_visits[b, node])
            assert visits >= 1
            slots = t.children[b, node].astype(np.int64)
            actions = (np.arange(A) if t.children_actions is None
                       else t.children_actions[b, node].astype(np.int64))
            expanded = slots >= 0
            # No node index outside what is used (hence outside capacity).
            assert (slots[expanded] < used).all() and (slots[expanded] > node).all()
            assert set(slots[~expanded].tolist()) <= {tree_lib.UNEXPANDED, tree_lib.ILLEGAL}
            # Children point back at their parent through the slot's action.
            for child, action in zip(slots[expanded], actions[expanded]):
                assert t.parents[b, child] == node
                assert t.actions_from_parent[b, child] == action
                assert codes[child] == PROBLEM.step_code(int(codes[node]), int(action))
            # Terminal nodes have no children; no illegal action is expanded.
            if t.is_terminal[b, node]:
                assert not expanded.any()
                assert t.rewards[b, node] == PROBLEM.reward(int(codes[node]))
            else:
                legal = legal_actions(int(codes[node]), node == 0)
                assert set(actions[expanded].tolist()) <= set(legal)
                assert set(actions[slots != tree_lib.ILLEGAL].tolist()) <= set(legal)
            if t.children_actions is not None:
                in_use = slots != tree_lib.ILLEGAL
                used_actions = actions[in_use]
                assert (np.diff(used_actions) > 0).all(), "slot actions sorted, distinct"
                assert in_use[:len(used_actions)].all(), "used slots come first"
                assert (actions[~in_use] == A).all()
            # Visits: one plus the children's, plus simulations that ended here.
            children_visits = int(t.node_visits[b, slots[expanded]].sum())
            assert visits >= 1 + children_visits
            legal_slots = slots != tree_lib.ILLEGAL
            open_slots = legal_slots & ~(expanded & t.solved[b, np.maximum(slots, 0)]) \
                if solver else legal_slots
            can_end_here = t.is_terminal[b, node] or not open_slots.any() or (
                node == 0 and solver and rule == "gumbel")
            if not can_end_here and not parallel:
                assert visits == 1 + children_visits, (b, node, visits, children_visits)
            # Values lie in the reward range (internal scale [-1, 1]).
            assert -1 - EPS <= t.value_sums[b, node] / visits <= 1 + EPS
            assert -1 - EPS <= t.raw_values[b, node] <= 1 + EPS
            assert -1 - EPS <= t.solved_values[b, node] <= 1 + EPS
            priors = t.priors[b, node]
            assert (priors >= 0).all() and (priors[~legal_slots] == 0).all()
            if legal_slots.any():
                assert abs(priors.sum() - 1) < 1e-4
    summary = tree.summary()
    visited = np.asarray(summary.visit_counts) > 0
    q = np.asarray(summary.qvalues)
    assert (np.abs(q[visited]) <= 1 + EPS).all()
    assert (np.abs(np.asarray(summary.value)) <= 1 + EPS).all()


operation = st.one_of(
    st.tuples(st.just("search"), st.sampled_from(RULES), st.integers(0, 2**31 - 1)),
    st.tuples(st.just("subtree"), st.booleans(), st.lists(st.integers(0, A - 1),
                                                            min_size=B, max_size=B)),
    st.tuples(st.just("reset"), st.lists(st.booleans(), min_size=B, max_size=B)),
)


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.sampled_from([None, K]), solver=st.booleans(), seed=st.integers(0, 2**16),
       operations=st.lists(operation, min_size=1, max_size=6))
def test_tree_invariants_after_any_sequence(layout, solver, seed, operations):
    tree = EMPTY[layout]
    fresh_codes = np.asarray(random_root_codes(seed, B), np.uint32)
    last_action = None
    searches = 0
    for op in operations:
        if op[0] == "search":
            if searches == MAX_SEARCHES:
                continue
            searches += 1
            # A continued row searches from its tree's root state.
            kept = np.asarray(tree.num_nodes) > 0
            codes = np.where(kept, np.asarray(tree.embeddings[:, 0]), fresh_codes)
            root, illegal = PROBLEM.root(codes)
            out = run_search(op[1], op[2], root, illegal, tree, solver)
            tree, last_action = out.search_tree, out.action
            assert np.asarray(out.action).min() >= 0 and np.asarray(out.action).max() < A
            check_invariants(tree, solver, op[1])
        elif op[0] == "subtree":
            action = last_action if op[1] and last_action is not None else jnp.asarray(
                op[2], jnp.int32)
            before = np.asarray(tree.num_nodes)
            tree = mcts_jax.get_subtree(tree, action)
            assert (np.asarray(tree.num_nodes) <= np.maximum(before - 1, 0)).all()
            check_invariants(tree, solver, "uct")
        else:
            mask = np.asarray(op[1])
            before = np.asarray(tree.num_nodes)
            tree = mcts_jax.reset_tree(tree, jnp.asarray(mask))
            np.testing.assert_array_equal(np.asarray(tree.num_nodes),
                                          np.where(mask, 0, before))
            check_invariants(tree, solver, "uct")


# ---- determinism: the same key gives the same tree, bit for bit -------------

DETERMINISM_SCRIPT = """
import hashlib, jax, numpy as np, mcts_jax
from problems.synthetic import HashedProblem, random_root_codes
problem = HashedProblem(num_actions=5, illegal_eighths=2, terminal_sixteenths=2)
root, illegal = problem.root(random_root_codes(3, 3))
digest = hashlib.sha256()
tree = mcts_jax.reset_tree(jax.jit(lambda root, illegal: mcts_jax.uct_policy(
    None, jax.random.key(0), root, problem.recurrent_fn, 1, invalid_actions=illegal,
    max_nodes=20, checks="off").search_tree)(root, illegal), np.ones(3, bool))
for step in range(3):
    out = mcts_jax.alphazero_policy(None, jax.random.key(42 + step), root,
                                    problem.recurrent_fn, 6, invalid_actions=illegal,
                                    max_nodes=20, tree=tree)
    for leaf in jax.tree.leaves(out):
        digest.update(np.asarray(jax.random.key_data(leaf) if jax.dtypes.issubdtype(
            leaf.dtype, jax.dtypes.prng_key) else leaf).tobytes())
    tree = mcts_jax.reset_tree(mcts_jax.get_subtree(out.search_tree, out.action),
                               np.array([False, True, False]))
    root, illegal = problem.root(np.where(np.asarray(tree.num_nodes) > 0,
                                          np.asarray(tree.embeddings[:, 0]),
                                          np.asarray(random_root_codes(9 + step, 3), np.uint32)))
print(digest.hexdigest())
"""


def test_same_key_same_trees_in_a_fresh_process():
    """Searches, subtree reuse and resets give bit-identical outputs twice in
    this process and once in a fresh one (CPU)."""
    import subprocess
    import sys

    namespace = {}
    here = []
    for _ in range(2):
        import contextlib
        import io
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(DETERMINISM_SCRIPT, namespace)
        here.append(buffer.getvalue().strip())
    from subprocess_env import compiled_like_this_process
    env = compiled_like_this_process(JAX_PLATFORMS="cpu")
    fresh = subprocess.run([sys.executable, "-c", DETERMINISM_SCRIPT], capture_output=True,
                           text=True, env=env, check=True).stdout.strip()
    assert here[0] == here[1] == fresh
