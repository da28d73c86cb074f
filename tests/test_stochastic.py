"""Chance nodes: stochastic_muzero_policy against mctx on identical inputs,
against exact expectimax (ChanceTree), and through the tree options."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from problems.chance_trees import ChanceTree
from problems.synthetic import random_root_codes
from mcts_jax.mctx_compat.tree import child_field, children_prior_logits
from test_mctx_trees import assert_same_tree

mctx = pytest.importorskip("mctx")

SIMULATIONS = 48


def mctx_functions(tree: ChanceTree):
    """The tree's functions returning mctx's own output types (same numbers)."""
    def decide(params, key, action, state):
        output, afterstate = tree.decision_recurrent_fn(params, key, action, state)
        return mctx.DecisionRecurrentFnOutput(chance_logits=output.chance_logits,
                                              afterstate_value=output.afterstate_value), \
            afterstate

    def chance(params, key, outcome, afterstate):
        output, state = tree.chance_recurrent_fn(params, key, outcome, afterstate)
        return mctx.ChanceRecurrentFnOutput(action_logits=output.action_logits,
                                            value=output.value, reward=output.reward,
                                            discount=output.discount), state

    return decide, chance


def run(library, tree, codes, key, num_simulations=SIMULATIONS, **kwargs):
    root = tree.root(codes)
    if library == "mctx":
        decide, chance = mctx_functions(tree)
        root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                 embedding=root.embedding)
        return mctx.stochastic_muzero_policy(None, key, root, decide, chance, num_simulations,
                                             **kwargs)
    return mcts_jax.stochastic_muzero_policy(None, key, root, tree.decision_recurrent_fn,
                                             tree.chance_recurrent_fn, num_simulations, **kwargs)


@pytest.mark.parametrize("tree,mask,kwargs", [
    (ChanceTree(depth=3, branching=3, outcomes=4, informed=True), False, {}),
    (ChanceTree(depth=3, branching=4, outcomes=6, two_player=False, distinct_afterstate=True,
                informed=True), True,
     dict(qtransform_name="qtransform_by_min_max", min_value=-3.0, max_value=3.0,
          dirichlet_fraction=0.1, pb_c_init=1.7, temperature=0.5)),
], ids=["two-player", "one-player-distinct-afterstate-mask-min-max"])
def test_builds_mctx_stochastic_tree(tree, mask, kwargs):
    """On 48 random chance trees (rewards, discounts, chance outcomes and
    their probabilities, root masks): mctx's whole tree, strictly (every
    array an mctx user reads: same shapes [B, N, A], dtypes, non-finite
    entries, values within 1e-5 relative), and the same action."""
    kwargs = dict(kwargs)
    constants = {name: kwargs.pop(name) for name in ("min_value", "max_value") if name in kwargs}
    qtransform_name = kwargs.pop("qtransform_name", None)
    codes = random_root_codes(tree.outcomes, 48)
    if mask:
        invalid = np.zeros((48, tree.branching), bool)
        invalid[::3, 0] = True
        invalid[1::4, -1] = True
        kwargs["invalid_actions"] = jnp.asarray(invalid)
    key = jax.random.key(tree.branching)

    def with_transform(library):
        if qtransform_name is None:
            return kwargs
        return dict(kwargs, qtransform=functools.partial(getattr(library, qtransform_name),
                                                         **constants))

    ours = run("ours", tree, codes, key, **with_transform(mcts_jax))
    theirs = jax.jit(lambda k: run("mctx", tree, codes, k, **with_transform(mctx)))(key)
    assert ours.search_tree.children_index.shape[-1] == tree.branching  # mctx's [B, N, A]
    assert ours.search_tree.source_tree.num_chance_outcomes == tree.outcomes
    assert_same_tree(ours, theirs)


@pytest.mark.parametrize("two_player", [True, False])
def test_solver_proves_exact_expectimax(two_player):
    """Every root of a small chance tree is proven at its exact expectimax
    value (float64 brute force), and the move played keeps that value."""
    tree = ChanceTree(depth=2, branching=3, outcomes=3, two_player=two_player)
    codes = random_root_codes(7, 32)
    out = mcts_jax.stochastic_muzero_policy(
        None, jax.random.key(0), tree.root(codes), tree.decision_recurrent_fn,
        tree.chance_recurrent_fn, 200, dirichlet_fraction=0.0, stop_at_terminal=True,
        solver=True, temperature=0.0)
    summary = out.search_tree.source_tree.summary()  # ours: with the proofs
    assert np.asarray(summary.root_proven).all()
    np.testing.assert_allclose(np.asarray(summary.root_proven_value), tree.root_value(codes),
                               atol=1e-5)
    values = tree.root_action_values(codes)
    proven_q = np.asarray(summary.proven_qvalues)
    np.testing.assert_allclose(proven_q, values, atol=1e-5)
    assert tree.optimal_actions(codes)[np.arange(len(codes)), np.asarray(out.action)].all()


def test_search_value_converges_to_expectimax():
    """Without the solver, the root's mean value approaches the exact value
    and the most visited move is optimal (the chance rule keeps each
    outcome's share of visits at its probability)."""
    tree = ChanceTree(depth=2, branching=3, outcomes=3)
    codes = random_root_codes(11, 32)
    exact = tree.root_value(codes)
    errors = []
    for num_simulations in (100, 1500):
        out = mcts_jax.stochastic_muzero_policy(
            None, jax.random.key(1), tree.root(codes), tree.decision_recurrent_fn,
            tree.chance_recurrent_fn, num_simulations, dirichlet_fraction=0.0,
            stop_at_terminal=True)
        summary = out.search_tree.summary()
        errors.append(np.abs(np.asarray(summary.value) - exact).mean())
    print("mean |value - expectimax| at 100, 1500 simulations:", errors)
    assert errors[1] < errors[0] and errors[1] < 0.02
    chosen = np.asarray(summary.visit_counts).argmax(-1)
    assert tree.optimal_actions(codes)[np.arange(len(codes)), chosen].mean() >= 0.9


def test_gumbel_with_chance_nodes_finds_the_expectimax_move():
    """StochasticGumbelPolicy (no mctx counterpart): with enough simulations
    its move (no Gumbel noise) is expectimax-optimal or within a hair of it,
    its improved policy puts its largest weight on that move, and its action
    weights are a distribution over the A decisions.
    Gumbel's interior rule is deterministic and never visits a child whose
    completed Q stays below its siblings', so unlike PUCT (0.97 here at 1500
    simulations) it does not reach every optimal move: 0.91 at 400 and at
    1500 simulations."""
    tree = ChanceTree(depth=2, branching=3, outcomes=3)
    codes = random_root_codes(11, 32)
    policy = mcts_jax.StochasticGumbelPolicy.make(gumbel_scale=0.0, stop_at_terminal=True)
    optimal = tree.optimal_actions(codes)
    rows = np.arange(len(codes))
    picked, gaps = [], []
    values = tree.root_action_values(codes)
    for num_simulations in (8, 400):
        out = policy(None, jax.random.key(1), tree.root(codes),
                     (tree.decision_recurrent_fn, tree.chance_recurrent_fn), num_simulations)
        weights = np.asarray(out.action_weights)
        assert weights.shape == (len(codes), tree.num_actions)
        np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
        picked.append(optimal[rows, np.asarray(out.action)].mean())
        gaps.append((values.max(-1) - values[rows, np.asarray(out.action)]).mean())
    print("optimal moves at 8 and 400 simulations:", picked, "mean value lost:", gaps)
    assert picked[1] >= 0.85 and picked[1] > picked[0]
    assert gaps[1] < 0.01 < gaps[0]
    np.testing.assert_array_equal(weights.argmax(-1), out.action)


@pytest.mark.parametrize("policy", ["stochastic_muzero", "stochastic_gumbel"])
def test_chance_visits_follow_probabilities(policy):
    """At every chance node the visits are what the greedy rule "the outcome
    whose visits lag its probability most" gives: each visited outcome i
    satisfies p_i / n_i >= p_j / (n_j + 1) for every j (D'Hondt's
    apportionment), impossible outcomes are never visited, and each outcome
    gets at least floor(p_i * total) visits; under PUCT and under Gumbel's
    rules at the decision nodes alike."""
    tree = ChanceTree(depth=1, branching=2, outcomes=6, two_player=False)
    codes = random_root_codes(3, 8)
    if policy == "stochastic_muzero":
        out = mcts_jax.stochastic_muzero_policy(
            None, jax.random.key(0), tree.root(codes), tree.decision_recurrent_fn,
            tree.chance_recurrent_fn, 120, dirichlet_fraction=0.0, stop_at_terminal=True)
    else:
        out = mcts_jax.StochasticGumbelPolicy.make(stop_at_terminal=True)(
            None, jax.random.key(0), tree.root(codes),
            (tree.decision_recurrent_fn, tree.chance_recurrent_fn), 120)
    search = getattr(out.search_tree, "source_tree", out.search_tree)  # ours: A + C ids
    num_actions = search.num_decisions
    checked = 0
    for row in range(len(codes)):
        for action in range(num_actions):
            node = int(search.children[row, 0, action])
            if node < 0:
                continue
            assert bool(mcts_jax.is_chance_node(search, jnp.full((8,), node))[row])
            visits = np.asarray(child_field(search, search.node_visits, 0)[
                row, node, num_actions:])
            probs = np.asarray(jax.nn.softmax(children_prior_logits(search)[
                row, node, num_actions:]))
            total = visits.sum()
            visited = visits > 0
            last_share = probs[visited][:, None] / visits[visited][:, None]
            assert np.all(last_share >= probs[None, :] / (visits[None, :] + 1) - 1e-6)
            assert np.all(visits >= np.floor(probs * total - 1e-4))
            assert np.all(visits[probs == 0] == 0)
            checked += total
    assert checked > 400


def test_layouts_paths_and_reuse_agree():
    """Compact slots and replayed embeddings give the dense tree's visits;
    several paths per step keep the counts consistent; a reused subtree
    below the realised outcome keeps its statistics and the search goes on."""
    tree = ChanceTree(depth=3, branching=3, outcomes=4, informed=True)
    codes = random_root_codes(5, 16)
    common = dict(dirichlet_fraction=0.0, temperature=0.0)
    dense = run("ours", tree, codes, jax.random.key(2), **common)
    visits = np.asarray(dense.search_tree.summary().visit_counts)
    compact = run("ours", tree, codes, jax.random.key(2), max_children=4, **common)
    np.testing.assert_array_equal(np.asarray(compact.search_tree.summary().visit_counts),
                                  visits)
    replayed = run("ours", tree, codes, jax.random.key(2), replay_embeddings=True, **common)
    np.testing.assert_array_equal(np.asarray(replayed.search_tree.summary().visit_counts),
                                  visits)
    paths = run("ours", tree, codes, jax.random.key(2), simulations_per_step=4, **common)
    search = paths.search_tree
    assert (np.asarray(search.summary().visit_counts).sum(-1) == SIMULATIONS).all()
    assert search.children_index.shape[-1] == tree.branching  # mctx's view: A decisions
    assert (np.asarray(search.node_visits[:, 0]) == SIMULATIONS + 1).all()

    action = dense.action
    ours = dense.search_tree.source_tree  # A + C edge ids: the outcomes' visits too
    afterstate = ours.children[jnp.arange(16), 0, action].astype(jnp.int32)
    outcome_visits = child_field(ours, ours.node_visits, 0)[jnp.arange(16), afterstate,
                                                            tree.branching:]
    outcome = jnp.argmax(outcome_visits, axis=-1).astype(jnp.int32)
    expected = np.asarray(outcome_visits.max(-1)) + 0
    subtree = mcts_jax.stochastic_subtree(dense.search_tree, action, outcome)
    np.testing.assert_array_equal(np.asarray(subtree.node_visits[:, 0]), expected)
    assert not bool(mcts_jax.is_chance_node(subtree, jnp.zeros((16,), jnp.int32)).any())
    # Continue from the realised states (the reused root keeps its statistics).
    root_state = jax.tree.map(lambda x: x[:, 0], subtree.embeddings.state)
    root = tree.root(codes).replace(embedding=root_state)
    more = mcts_jax.stochastic_muzero_policy(None, jax.random.key(9), root,
                                             tree.decision_recurrent_fn,
                                             tree.chance_recurrent_fn, 16, tree=subtree,
                                             **common)
    np.testing.assert_array_equal(np.asarray(more.search_tree.node_visits[:, 0]),
                                  expected + 16)


def test_unbounded_returns():
    """value_range=None: returns in the hundreds are used as they are; the
    solver proves the exact expectimax value of a scaled single-player tree."""
    tree = ChanceTree(depth=2, branching=3, outcomes=3, two_player=False)
    codes = random_root_codes(13, 16)
    scale = 1000.0

    def decide(params, key, action, state):
        return tree.decision_recurrent_fn(params, key, action, state)

    def chance(params, key, outcome, afterstate):
        output, state = tree.chance_recurrent_fn(params, key, outcome, afterstate)
        return output.replace(reward=output.reward * scale), state

    out = mcts_jax.stochastic_muzero_policy(
        None, jax.random.key(0), tree.root(codes), decide, chance, 200, dirichlet_fraction=0.0,
        stop_at_terminal=True, solver=True, value_range=None, temperature=0.0)
    summary = out.search_tree.source_tree.summary()
    assert np.asarray(summary.root_proven).all()
    np.testing.assert_allclose(np.asarray(summary.root_proven_value),
                               scale * tree.root_value(codes), rtol=1e-5, atol=1e-3)
    assert tree.optimal_actions(codes)[np.arange(16), np.asarray(out.action)].all()


def test_bad_inputs_get_clear_errors():
    tree = ChanceTree(depth=2, branching=3, outcomes=3)
    codes = random_root_codes(0, 4)
    root = tree.root(codes)
    policy = functools.partial(mcts_jax.stochastic_muzero_policy, None, jax.random.key(0), root)
    with pytest.raises(TypeError, match="chance_recurrent_fn must be callable"):
        policy(tree.decision_recurrent_fn, None, 8)

    def wrong_shape(params, key, action, state):
        output, afterstate = tree.decision_recurrent_fn(params, key, action, state)
        return output.replace(chance_logits=output.chance_logits[:, None, :]), afterstate

    with pytest.raises(ValueError, match=r"chance_logits of shape \(4, 1, 3\)"):
        policy(wrong_shape, tree.chance_recurrent_fn, 8)

    def no_outcome(params, key, action, state):
        output, afterstate = tree.decision_recurrent_fn(params, key, action, state)
        return output.replace(chance_logits=jnp.full_like(output.chance_logits, -jnp.inf)), \
            afterstate

    with pytest.raises(ValueError, match="chance_logits that are all -inf"):
        policy(no_outcome, tree.chance_recurrent_fn, 8)

    def wrong_actions(params, key, outcome, afterstate):
        output, state = tree.chance_recurrent_fn(params, key, outcome, afterstate)
        return output.replace(action_logits=output.action_logits[:, :2]), state

    with pytest.raises(ValueError, match=r"action_logits of shape \(4, 2\)"):
        policy(tree.decision_recurrent_fn, wrong_actions, 8)
    with pytest.raises(ValueError, match="value_range"):
        policy(tree.decision_recurrent_fn, tree.chance_recurrent_fn, 8, value_range=(0, 10))


@pytest.mark.parametrize("policy", ["uct", "alphazero", "gumbel"])
def test_every_policy_is_scale_free_on_unbounded_returns(policy):
    """value_range=None: multiplying every reward and value by 500 (a game
    score) leaves the search unchanged (Q is min-max normalised), where the
    bounded scale would saturate."""
    from problems.synthetic import HashedProblem

    problem = HashedProblem(num_actions=5, illegal_eighths=1, terminal_sixteenths=2)
    root, invalid = problem.root(random_root_codes(21, 64))

    def scaled(params, key, action, embedding):
        output, embedding = problem.recurrent_fn(params, key, action, embedding)
        return output.replace(reward=500.0 * output.reward, value=500.0 * output.value), \
            embedding

    policy_fn = {"uct": mcts_jax.uct_policy,
                 "alphazero": functools.partial(mcts_jax.alphazero_policy,
                                                dirichlet_fraction=0.0),
                 "gumbel": mcts_jax.gumbel_policy}[policy]
    visits = []
    for recurrent_fn, scale in ((problem.recurrent_fn, 1.0), (scaled, 500.0)):
        out = policy_fn(None, jax.random.key(0), root.replace(value=scale * root.value),
                        recurrent_fn, 32, invalid_actions=invalid, value_range=None)
        visits.append(np.asarray(out.search_tree.summary().visit_counts))
        if scale > 1:
            values = np.asarray(out.search_tree.summary().value)
            assert np.abs(values).max() > 5.0  # stored as given, not squashed into [-1, 1]
    same = (visits[0] == visits[1]).all(-1).mean()
    print(policy, "rows with equal visits at scale 1 and 500:", same)
    assert same >= 0.95
