"""Issue 33: `muzero_policy` and mctx's on tic-tac-toe with random playouts.

Both libraries search the same pgx states with the same key and the same
recurrent_fn (mctx's sees illegal moves as the lowest logit), so playouts,
rewards, discounts, priors and terminal handling are identical, and every
raw value agrees bit for bit up to the first diverging node. What differs is
how a node's mean value is kept: ours is a sum divided by the visits (exact
for playout results in {-1, 0, 1}); mctx's is a running mean, `(value *
visits + leaf) / (visits + 1)`, which rounds at every backup. Compiled by
XLA's CPU backend at its default optimisation level (3), the product and the
sum are contracted into one fused multiply-add: after the backups -1, -1,
+1, +1 ours holds 0 and mctx holds (fl(-1/3) * 3 + 1) / 4 = -7.45e-9 (0
without the contraction). The residue alone is harmless, but
`qtransform_by_parent_and_siblings` divides by max(max Q - min Q, 1e-8):
where every visited child ties with the parent's value, ours sees a spread
of 0 (every normalised Q 0) and mctx one of 7.45e-9, which gives the child
carrying the residue a normalised Q of 0.745, a PUCT bonus that decides the
next descent. Rarely the contraction decides a tie instead: two children
with exactly equal scores (Q 1, equal visits and priors, a score near 1.18)
are separated by mctx's 1e-7 * U[0, 1) noise, less than one float32 ulp
there (1.19e-7); when both draws are under half an ulp, correctly rounded
sums still tie and the first child wins (ours, and mctx at level 0), while
mctx's level-3 program rounds the sum otherwise and takes the other. Neither
is a bug on either side. In 90 games (2 per batch, 32 simulations), 43
diverged at level 3, 42 through the residue and 1 through the tie (at its
sixth call: `SIXTH_CALL`), the first divergence at calls 1 to 6; at level 0,
which tests/conftest.py gives the suite, none of the first 60 did (the plain
running mean leaves residues too, more rarely: 2 of 12 games with the
uniform evaluator, 4 per batch, 64 simulations). The tests compile both
searches at both levels (`compiler_options`, whatever XLA_FLAGS say),
replay every backup in numpy with and without the fused multiply-add, check
mctx's node values against the replay bit for bit, and pin two games:
identical at level 0 through the pinned call, identical at level 3 up to the
call before it, and at that call the first diverging node and its reason.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
from mcts_jax import evaluators

mctx = pytest.importorskip("mctx")

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="pins XLA's CPU backend's float contraction")

BATCH, SIMULATIONS = 2, 32
GAME = envs.make("tic_tac_toe")
PLAYOUTS = evaluators.RandomPlayouts(num_playouts=1)
OUR_FN = GAME.recurrent_fn(PLAYOUTS)
PB_C_INIT, PB_C_BASE, EPSILON = 1.25, 19652.0, 1e-8  # mctx's defaults
SUITE, DEFAULT = "0", "3"  # XLA backend optimisation levels: the suite's, XLA's default
f32 = np.float32

# The two pinned games: seed of `play`, first diverging call (at level 3), row, node.
RESIDUE = dict(seed=13, call=3, row=0, node=6)
SIXTH_CALL = dict(seed=22, call=6, row=1, node=28)


def their_fn(params, rng_key, action, embedding):
    """The same step for mctx: illegal moves get the lowest logit (prior 0)."""
    output, embedding = OUR_FN(params, rng_key, action, embedding)
    logits = jnp.where(output.invalid_actions, jnp.finfo(jnp.float32).min, output.prior_logits)
    return mctx.RecurrentFnOutput(reward=output.reward, discount=output.discount,
                                  prior_logits=logits, value=output.value), embedding


def their_root(root):
    return mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                             embedding=root.embedding)


def search_both(key, root, invalid):
    ours = mcts_jax.muzero_policy(None, key, root, OUR_FN, SIMULATIONS, invalid_actions=invalid)
    theirs = mctx.muzero_policy(None, key, their_root(root), their_fn, SIMULATIONS,
                                invalid_actions=invalid)
    return ours, theirs


_COMPILED = {}


def compiled_search(level, *args):
    """`search_both` compiled once per XLA backend optimisation level, with
    XLA's default fusion emitters: tests/conftest.py gives the suite the older
    ones (--xla_cpu_use_fusion_emitters=false, faster to compile), which
    contract the running mean into a fused multiply-add at level 0 too."""
    if level not in _COMPILED:
        _COMPILED[level] = jax.jit(search_both).lower(*args).compile(
            compiler_options={"xla_backend_optimization_level": level,
                              "xla_cpu_use_fusion_emitters": True})
    return _COMPILED[level]


step = jax.jit(GAME.step)


def play(seed, calls, level):
    """Yields (call, active rows, search key, ours, theirs) for calls 1 ..
    `calls` of one batch of games, each call a move: both libraries search
    the same states with the same key, compiled at `level`; the move played
    is ours (mctx's too while the trees agree)."""
    key = jax.random.key(seed)
    states = GAME.init(jax.random.key(seed + 1000), BATCH)
    for call in range(1, calls + 1):
        key, root_key, search_key = jax.random.split(key, 3)
        active = ~np.asarray(GAME.is_terminal(states))
        root, invalid = GAME.root(None, root_key, states, PLAYOUTS)
        ours, theirs = compiled_search(level, search_key, root, invalid)(search_key, root,
                                                                         invalid)
        yield call, active, search_key, ours, theirs
        states = step(states, jnp.where(jnp.asarray(active), ours.action, 0))


def row(tree, b):
    """One row of a tree's mctx-named arrays, as numpy."""
    names = ("node_visits", "node_values", "raw_values", "parents", "action_from_parent",
             "children_prior_logits", "children_rewards", "children_discounts")
    return {name: np.asarray(getattr(tree, name)[b]) for name in names}


def replay(t, num_nodes, fused):
    """The backups of simulations 0 .. num_nodes - 2 (node i + 1 is written
    by simulation i) of one row `t`, in float32: (visits, our value sums,
    mctx's running means). `fused`: mctx's `value * visits + leaf` rounded
    once, as a fused multiply-add (float64 holds the product exactly)."""
    size = len(t["parents"])
    visits = np.zeros(size, np.int64)
    sums, means = np.zeros(size, f32), np.zeros(size, f32)
    visits[0], sums[0], means[0] = 1, t["raw_values"][0], t["raw_values"][0]
    for leaf in range(1, num_nodes):
        visits[leaf], sums[leaf], means[leaf] = 1, t["raw_values"][leaf], t["raw_values"][leaf]
        value, node = f32(t["raw_values"][leaf]), leaf
        while node != 0:
            parent, action = t["parents"][node], t["action_from_parent"][node]
            # Discounts are -1, 0 or 1 here: exact, fused or not.
            value = f32(t["children_rewards"][parent, action]
                        + f32(t["children_discounts"][parent, action]) * value)
            count = f32(visits[parent])
            if fused:
                total = f32(np.float64(means[parent]) * np.float64(count) + np.float64(value))
            else:
                total = f32(means[parent] * count + value)
            means[parent] = f32(total / f32(count + 1))
            sums[parent] = f32(sums[parent] + value)
            visits[parent] += 1
            node = parent
    return visits, sums, means


def our_means(visits, sums):
    return (sums / np.maximum(visits, 1)).astype(f32)


def assert_same_search(ours, theirs, active, level):
    """Equal searches: action, action_weights, structure, visits and raw
    values exactly, node values to 1e-6; and each side's node values are the
    replay's bit for bit (ours: sums / visits; mctx: running means, fused at
    level 3, not at level 0)."""
    np.testing.assert_array_equal(np.asarray(ours.action)[active],
                                  np.asarray(theirs.action)[active])
    np.testing.assert_allclose(np.asarray(ours.action_weights)[active],
                               np.asarray(theirs.action_weights)[active], atol=1e-6)
    for b in np.nonzero(active)[0]:
        a, t = row(ours.search_tree, b), row(theirs.search_tree, b)
        for name in ("node_visits", "parents", "action_from_parent", "raw_values",
                     "children_rewards", "children_discounts"):
            np.testing.assert_array_equal(a[name], t[name], err_msg=name)
        np.testing.assert_allclose(a["node_values"], t["node_values"], atol=1e-6)
        visits, sums, means = replay(t, SIMULATIONS + 1, fused=level == DEFAULT)
        np.testing.assert_array_equal(visits, t["node_visits"])
        np.testing.assert_array_equal(our_means(visits, sums), a["node_values"])
        np.testing.assert_array_equal(means, t["node_values"], err_msg=f"level {level}")


def first_diverging_node(ours, theirs, b):
    a, t = row(ours.search_tree, b), row(theirs.search_tree, b)
    differ = (a["parents"] != t["parents"]) | (a["action_from_parent"] != t["action_from_parent"])
    return int(np.argmax(differ)) if differ.any() else None


def path(t, node):
    """[(parent, action), ...] from the root down to `node`."""
    steps = []
    while node > 0:
        steps.append((int(t["parents"][node]), int(t["action_from_parent"][node])))
        node = int(t["parents"][node])
    return steps[::-1]


def children_of(t, node, num_nodes):
    """[A] node index of each child of `node` among the first num_nodes, -1 if none."""
    kids = np.full(t["children_rewards"].shape[-1], -1)
    for n in range(1, num_nodes):
        if t["parents"][n] == node:
            kids[t["action_from_parent"][n]] = n
    return kids


def puct(t, node, num_nodes, visits, means):
    """mctx's PUCT scores of `node`'s children (float32, without the 1e-7
    noise) in the tree of the first num_nodes nodes with node values
    `means`: (scores [A], normalised Q [A], spread of the Q-values)."""
    kids = children_of(t, node, num_nodes)
    child_visits = np.where(kids >= 0, visits[np.maximum(kids, 0)], 0)
    child_values = np.where(kids >= 0, means[np.maximum(kids, 0)], f32(0))
    q = (t["children_rewards"][node] + t["children_discounts"][node] * child_values).astype(f32)
    safe = np.where(child_visits > 0, q, means[node])
    low, high = min(means[node], safe.min()), max(means[node], safe.max())
    spread = f32(high - low)
    normalised = ((np.where(child_visits > 0, q, low) - low)
                  / max(spread, f32(EPSILON))).astype(f32)
    priors = np.asarray(jax.nn.softmax(jnp.asarray(t["children_prior_logits"][node])))
    parent_visits = f32(visits[node])
    c = f32(PB_C_INIT) + np.log((parent_visits + f32(PB_C_BASE) + f32(1)) / f32(PB_C_BASE),
                                dtype=f32)
    exploration = (np.sqrt(parent_visits, dtype=f32) * c * priors
                   / (child_visits.astype(f32) + f32(1))).astype(f32)
    return (normalised + exploration).astype(f32), normalised, spread


def check_game(game, level):
    """Plays `game` at `level` up to its pinned call. Returns the pinned
    call's (search key, ours, theirs) at level 3, after checking that every
    earlier call searched alike; at level 0 every call up to the pinned one
    searches alike."""
    for call, active, key, ours, theirs in play(game["seed"], game["call"], level):
        if call < game["call"] or level == SUITE:
            assert_same_search(ours, theirs, active, level)
        else:
            b, k = game["row"], game["node"]
            found = first_diverging_node(ours, theirs, b)
            # The pinned split is a rounding accident of the level-3 programs;
            # a build of ours whose rounding meets mctx's there searches the
            # very same tree, which is agreement, not a failure.
            assert found in (k, None)
            if found is None:
                assert_same_search(ours, theirs, active, level)
                return None
            a, t = row(ours.search_tree, b), row(theirs.search_tree, b)
            for name in ("parents", "action_from_parent", "raw_values"):
                np.testing.assert_array_equal(a[name][:k], t[name][:k], err_msg=name)
            return key, a, t


def test_running_mean_residue_meets_the_1e8_floor():
    """Level 0: identical through call 3. Level 3: identical at calls 1 and
    2; at call 3, row 0, node 6 differs (simulation 5). Before it, the root's
    visited children are action 2 (1 visit, Q 0) and action 8 (4 visits, the
    backups -1, -1, +1, +1 seen from below). Ours: Q(8) = 0 / 4, spread 0,
    every normalised Q 0: exploration sends the descent to an unvisited
    action (3). mctx: Q(8) = 7.45e-9, the fused residue; spread 7.45e-9 <
    1e-8, so normalised Q(8) = 0.745 and action 8 wins by far."""
    game = RESIDUE
    check_game(game, SUITE)
    pinned = check_game(game, DEFAULT)
    if pinned is None:  # no split at this build: the trees are equal
        return
    _, a, t = pinned
    k = game["node"]
    # The tree simulation k - 1 descends in: nodes 0 .. k - 1.
    visits, sums, means = replay(t, k, fused=True)
    _, _, unfused = replay(t, k, fused=False)
    eight = children_of(t, 0, k)[8]
    assert visits[eight] == 4
    residue = f32(f32(np.float64(f32(-1 / 3)) * 3 + 1) / 4)  # one rounding, then / 4
    assert residue == f32(-7.450580596923828e-09)
    assert means[eight] == residue and unfused[eight] == 0.0
    assert our_means(visits, sums)[eight] == 0.0
    ours_scores, ours_norm, ours_spread = puct(t, 0, k, visits, our_means(visits, sums))
    their_scores, their_norm, their_spread = puct(t, 0, k, visits, means)
    assert ours_spread == 0.0 and their_spread == -residue
    assert ours_norm[8] == 0.0 and their_norm[8] == pytest.approx(0.7450581, abs=1e-6)
    # Each side descends where its scores point, by far: not a tie.
    assert path(a, k)[0] == (0, 3) and path(t, k)[0] == (0, 8)
    assert ours_scores[3] >= ours_scores.max() - 1e-6
    assert ours_scores[8] < ours_scores.max() - 0.05
    assert np.argmax(their_scores) == 8 and their_scores[8] > np.sort(their_scores)[-2] + 0.05


def mctx_selection_key(search_key, simulation, b, depth):
    """The key mctx 0.0.71's muzero_policy hands its action selection at
    `depth` of simulation `simulation` in row `b`: the policy's key splits in
    three (the last searches), the search's in three per simulation (the
    second descends), that one per row, and a row's in two per depth (the
    second selects)."""
    key = jax.random.split(search_key, 3)[2]
    for _ in range(simulation + 1):
        key, descend, _ = jax.random.split(key, 3)
    key = jax.random.split(descend, BATCH)[b]
    for _ in range(depth + 1):
        key, select = jax.random.split(key)
    return select


def test_sixth_call_sub_ulp_tie_break():
    """Level 0: identical through call 6. Level 3: identical at calls 1 to
    5; at call 6, row 1, node 28 differs: its path splits at node 1 (depth
    1), ours into action 0, mctx's into 7. There the two sides' normalised
    Q-values and scores are equal (no residue involved), and actions 0 and 7
    both have Q 1 (7 wins at once; 0 leaves the opponent a node whose 11
    backups were all -1), 11 visits and equal priors: an exact tie near
    1.18. mctx's tie-break draws for both are under
    half an ulp (5.96e-8), so the correctly rounded sums still tie and the
    first action (0) wins: ours, and mctx at level 0; mctx's level-3 program
    rounds the sum otherwise and takes 7."""
    game = SIXTH_CALL
    check_game(game, SUITE)
    pinned = check_game(game, DEFAULT)
    if pinned is None:  # no split at this build: the trees are equal
        return
    key, a, t = pinned
    b, k = game["row"], game["node"]
    assert path(a, k)[0] == path(t, k)[0]
    assert path(a, k)[1] == (1, 0) and path(t, k)[1] == (1, 7)
    visits, sums, means = replay(t, k, fused=True)
    ours_scores, ours_norm, _ = puct(t, 1, k, visits, our_means(visits, sums))
    their_scores, their_norm, _ = puct(t, 1, k, visits, means)
    np.testing.assert_array_equal(ours_norm, their_norm)
    np.testing.assert_array_equal(ours_scores, their_scores)
    kids = children_of(t, 1, k)
    assert visits[kids[0]] == visits[kids[7]] == 11
    # Action 7 wins at once; action 0 leaves the opponent a node whose every
    # backup so far was -1. Both Q-values are exactly 1, on both sides.
    assert (t["children_rewards"][1, 7], t["children_discounts"][1, 7]) == (1.0, 0.0)
    assert (t["children_rewards"][1, 0], t["children_discounts"][1, 0]) == (0.0, -1.0)
    assert means[kids[0]] == our_means(visits, sums)[kids[0]] == -1.0
    assert ours_norm[0] == ours_norm[7] == 1.0
    score = their_scores[0]
    assert their_scores[7] == score == their_scores.max() and 1.0 < score < 2.0
    noise = f32(1e-7) * np.asarray(jax.random.uniform(mctx_selection_key(key, k - 1, b, 1),
                                                      (GAME.num_actions,)))
    assert max(noise[0], noise[7]) < np.spacing(score) / 2
    assert score + noise[0] == score + noise[7] == score  # the tie survives rounding
