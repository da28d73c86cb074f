"""Memory per tree node: ours (dense, compact, compact with replayed states)
against mctx, for chess, Go 9x9 and tic-tac-toe, with what each side stores.

Exact sizes that allocate nothing: ours from `mcts_jax.memory`, mctx's from
`jax.eval_shape` of `mctx.muzero_policy`, with our lean pgx state (like for
like) and with the full pgx state (what an mctx user stores); `factor_rows`
splits the comparison into factors (library, layout, replay, embedding) and
their product. The suite's `memory` section (the same in every mode):

    python -m benchmarks --quick --only memory

(The peak resident memory of real chess searches is an experiment:
`python -m experiments.memory_runs`.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import envs

GAMES = ("chess", "go_9x9", "tic_tac_toe")  # K = their most legal moves (registry)
COLUMNS = ["game", "layout", "stores", "bytes_per_node", "embedding_bytes_per_node",
           "GiB_for_B1024_N801"]


# What each layout stores per node (the "stores" column).
STORES = {
    "ours dense": "lean pgx state; A child slots (dense)",
    "ours compact": "lean pgx state; K child slots (legal moves only)",
    "ours compact, replay": "no state (the root's only, replayed); K child slots",
    "mctx + lean state": "lean pgx state (ours); A child slots (dense)",
    "mctx + full pgx state": "full pgx state; A child slots (dense)",
}


def mctx_pgx_recurrent_fn(mctx, game, embedding: str = "full"):
    """The pgx `game` for mctx, storing `embedding` ("full": the pgx state,
    as mctx's users do; "lean": our `game.lean_state`): uniform priors with
    illegal moves masked in the logits (mctx has no invalid_actions below
    the root), value 0."""
    store = (lambda states: states) if embedding == "full" else game.lean_state

    def recurrent_fn(params, rng_key, action, stored):
        del params, rng_key
        states = stored if embedding == "full" else game.full_state(stored)
        mover = states.current_player
        states = game.step(states, action)
        return mctx.RecurrentFnOutput(
            reward=game.reward_for(states, mover),
            discount=jnp.where(game.is_terminal(states), 0.0, -1.0),
            prior_logits=jnp.where(states.legal_action_mask, 0.0, jnp.finfo(jnp.float32).min),
            value=jnp.zeros_like(mover, jnp.float32)), store(states)
    return recurrent_fn


def mctx_bytes_per_node(game, batch_size: int, num_simulations: int,
                        embedding: str = "full") -> float:
    """Bytes per node of mctx's search tree with pgx states as embeddings:
    `embedding` "full" (the pgx state) or "lean" (our `game.lean_state`)."""
    import mctx
    store = (lambda states: states) if embedding == "full" else game.lean_state
    recurrent_fn = mctx_pgx_recurrent_fn(mctx, game, embedding)

    def search(states):
        root = mctx.RootFnOutput(
            prior_logits=jnp.zeros(states.legal_action_mask.shape, jnp.float32),
            value=jnp.zeros(states.current_player.shape, jnp.float32), embedding=store(states))
        return mctx.muzero_policy(None, jax.random.key(0), root, recurrent_fn,
                                  num_simulations).search_tree

    states = jax.eval_shape(lambda key: game.init(key, batch_size), jax.random.key(0))
    tree = jax.eval_shape(search, states)
    total = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))
    return total / (batch_size * (num_simulations + 1))


def layout_rows(batch_size=1024, max_nodes=801, games=None):
    """Rows {game, layout, stores, bytes_per_node, embedding_bytes_per_node,
    GiB_for_B1024_N801} for `games` (names of GAMES; None: all)."""
    rows = []

    def add(name, layout, stores, per_node, embedding):
        rows.append(dict(game=name, layout=layout, stores=STORES[stores],
                         bytes_per_node=per_node, embedding_bytes_per_node=embedding,
                         GiB_for_B1024_N801=per_node * 1024 * 801 / 2**30))

    for name in GAMES:
        if games is not None and name not in games:
            continue
        game = envs.make(name)
        k = game.max_legal_moves
        for label, stores, max_children, replay in (
                ("ours dense", "ours dense", None, False),
                (f"ours compact K={k}", "ours compact", k, False),
                (f"ours compact K={k}, replay", "ours compact, replay", k, True)):
            report = game.tree_memory(batch_size, max_nodes, max_children, replay)
            add(name, label, stores, report.bytes_per_node, report.embedding_bytes_per_node)
        try:
            lean = mctx_bytes_per_node(game, 8, max_nodes - 1, "lean")
            full = mctx_bytes_per_node(game, 8, max_nodes - 1, "full")
        except ImportError:
            continue
        add(name, "mctx + lean state", "mctx + lean state", lean, game.lean_bytes())
        add(name, "mctx + full pgx state", "mctx + full pgx state", full, game.full_bytes())
    return rows


# (factor, numerator layout, denominator layout): bytes per node of the
# numerator over the denominator's; layouts by their "stores" keys.
FACTORS = (
    ("library: mctx dense / ours dense (both the lean state)", "mctx + lean state",
     "ours dense"),
    ("layout: ours dense / ours compact", "ours dense", "ours compact"),
    ("replay: ours compact / ours compact, replay", "ours compact", "ours compact, replay"),
    ("embedding: mctx full pgx state / mctx lean state", "mctx + full pgx state",
     "mctx + lean state"),
    ("product: mctx full pgx state / ours compact", "mctx + full pgx state", "ours compact"),
)


def factor_rows(rows):
    """The memory comparison as separate factors, from `layout_rows` rows:
    {game, factor, ratio} for each FACTORS entry whose layouts are present."""
    by_stores = {(row["game"], key): row["bytes_per_node"] for row in rows
                 for key, text in STORES.items() if row["stores"] == text}
    out = []
    for name in dict.fromkeys(row["game"] for row in rows):
        for factor, numerator, denominator in FACTORS:
            a, b = by_stores.get((name, numerator)), by_stores.get((name, denominator))
            if a and b:
                out.append(dict(game=name, factor=factor, ratio=a / b))
    return out

