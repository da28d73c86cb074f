"""Reading an mctx search tree node by node: a corridor with a cliff at one end.

The corridor has cells 0 to 6. Cell 0 is a cliff (reward -1, the episode ends),
cell 6 the exit (reward +1, the episode ends); every other move costs 0.02,
and future rewards are discounted by 0.9 per move. Three actions: step left,
step right, leap two cells right (a leap costs 0.1 more). The stand-in network
is a poor guide: its prior prefers stepping left and its value estimate is 0
everywhere. Two searches run side by side (a batch of two), starting from
cells 2 and 4. As in mctx, the search does not know where an episode ends: it
keeps expanding past the cliff and the exit, where the model answers reward 0
and discount 0, so those nodes add nothing to the values above them.

After a `muzero_policy` search, the tree of the first search is walked
depth-first from `ROOT_INDEX` through `children_index`, and every node is
printed with the statistics mctx's `Tree` keeps for it and for the edge that
leads to it: visits, value, raw value, reward, discount, prior probability and
Q-value (`tree.qvalues`). The path of each node is rebuilt from `parents` and
`action_from_parent` and checked against the walk; the cell it stands for is
found by replaying that path in the corridor.

The code only uses what `import mctx` offers, so it runs with mctx or with
mcts_jax in its place:

    python examples/mctx_style_tree_walk.py --library mctx
    python examples/mctx_style_tree_walk.py --library mcts_jax

`main(mctx)` takes the library module, prints the walk and returns it
(tests/test_mctx_style_examples.py compares the two libraries' walks).
"""

import argparse
import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np

CLIFF, EXIT = 0, 6
MOVES = np.array([-1, +1, +2])  # step left, step right, leap right
ACTION_NAMES = ("left", "right", "leap")
STEP_COST, LEAP_COST, DISCOUNT = 0.02, 0.1, 0.9


def corridor_step(cell, action):
    """(next cell, reward, discount) of one move; works on numbers and arrays.
    A finished episode (at the cliff or the exit) stays where it is."""
    done = (cell == CLIFF) | (cell == EXIT)
    moved = jnp.clip(cell + jnp.asarray(MOVES)[action], CLIFF, EXIT)
    next_cell = jnp.where(done, cell, moved)
    reward = jnp.where(moved == CLIFF, -1.0, jnp.where(moved == EXIT, 1.0, 0.0))
    reward = reward - STEP_COST - jnp.where(action == 2, LEAP_COST, 0.0)
    ends = (next_cell == CLIFF) | (next_cell == EXIT)
    return (next_cell, jnp.where(done, 0.0, reward),
            jnp.where(done | ends, 0.0, DISCOUNT))


def make_root_and_model(mctx, start_cells):
    """The root output and the recurrent function, mctx style: the embedding
    is the cell, the network's prior leans left, its value is 0."""
    num_actions = len(MOVES)
    prior = jnp.array([1.0, 0.0, -0.5])  # a misleading prior: left first

    def recurrent_fn(params, rng_key, action, embedding):
        del params, rng_key
        next_cell, reward, discount = corridor_step(embedding, action)
        return mctx.RecurrentFnOutput(
            reward=reward,
            discount=discount,
            prior_logits=jnp.broadcast_to(prior, (embedding.shape[0], num_actions)),
            value=jnp.zeros_like(reward),
        ), next_cell

    cells = jnp.asarray(start_cells, dtype=jnp.int32)
    root = mctx.RootFnOutput(
        prior_logits=jnp.broadcast_to(prior, (cells.shape[0], num_actions)),
        value=jnp.zeros(cells.shape[0]),
        embedding=cells,
    )
    return root, recurrent_fn


def run_search(mctx, rng_key, start_cells, num_simulations: int, max_depth: int):
    root, recurrent_fn = make_root_and_model(mctx, start_cells)
    return mctx.muzero_policy(
        params=(),
        rng_key=rng_key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        max_depth=max_depth,
        qtransform=functools.partial(mctx.qtransform_by_min_max, min_value=-1.0,
                                     max_value=1.0),
        dirichlet_fraction=0.0,
    )


def path_to(tree, batch_index: int, node: int) -> tuple:
    """The actions from the root to `node`, read from `parents` and
    `action_from_parent`."""
    parents = np.asarray(tree.parents[batch_index])
    actions = np.asarray(tree.action_from_parent[batch_index])
    path = []
    while node != tree.ROOT_INDEX:
        path.append(int(actions[node]))
        node = int(parents[node])
    return tuple(reversed(path))


def walk(tree, batch_index: int, start_cell: int) -> list:
    """Every node of search `batch_index`, depth-first from the root: one
    record per node with its statistics and those of the edge into it."""
    batch_size = tree.node_visits.shape[0]
    children = np.asarray(tree.children_index[batch_index])
    priors = np.asarray(jax.nn.softmax(tree.children_prior_logits[batch_index], axis=-1))
    records = []

    def visit(node, path, cell, edge):
        qvalues = np.asarray(tree.qvalues(jnp.full([batch_size], node))[batch_index])
        record = {
            "node": int(node), "path": list(path), "cell": int(cell),
            "visits": int(tree.node_visits[batch_index, node]),
            "value": float(tree.node_values[batch_index, node]),
            "raw_value": float(tree.raw_values[batch_index, node]),
            **edge,
        }
        if path_to(tree, batch_index, node) != tuple(path):
            raise AssertionError(f"node {node}: parents say {path_to(tree, batch_index, node)}, "
                                 f"the walk came by {tuple(path)}")
        records.append(record)
        for action in range(tree.num_actions):
            child = int(children[node, action])
            if child == tree.UNVISITED:
                continue
            next_cell = int(corridor_step(cell, action)[0])
            visit(child, path + [action], next_cell, {
                "action": ACTION_NAMES[action],
                "reward": float(tree.children_rewards[batch_index, node, action]),
                "discount": float(tree.children_discounts[batch_index, node, action]),
                "prior": float(priors[node, action]),
                "q": float(qvalues[action]),
                "edge_visits": int(tree.children_visits[batch_index, node, action]),
            })

    visit(tree.ROOT_INDEX, [], start_cell, {})
    return records


def main(mctx, *, seed: int = 3, start_cells=(2, 4), num_simulations: int = 16,
         max_depth: int = 4) -> dict:
    """Searches from `start_cells` with `mctx` (the library module), prints the
    first search's tree and returns the walk and the root figures."""
    search = jax.jit(functools.partial(run_search, mctx, start_cells=tuple(start_cells),
                                       num_simulations=num_simulations, max_depth=max_depth))
    policy_output = search(jax.random.PRNGKey(seed))
    tree = policy_output.search_tree
    records = walk(tree, 0, start_cells[0])
    summary = tree.summary()
    figures = {
        "actions": np.asarray(policy_output.action).tolist(),
        "root_visits": np.asarray(summary.visit_counts).astype(int).tolist(),
        "root_values": np.asarray(summary.value).tolist(),
        "root_qvalues": np.asarray(summary.qvalues).tolist(),
        "walk": records,
    }

    print(f"muzero_policy, {num_simulations} simulations, depth at most {max_depth}, "
          f"from cells {list(start_cells)}")
    print(f"tree of the search from cell {start_cells[0]} "
          f"({tree.num_simulations + 1} node slots, {len(records)} used):")
    for r in records:
        indent = "  " * len(r["path"])
        edge = "" if not r["path"] else (
            f"{r['action']:>5} (p {r['prior']:.2f}, reward {r['reward']:+.2f}, "
            f"discount {r['discount']:.1f}, Q {r['q']:+.3f}) -> ")
        print(f"{indent}{edge}node {r['node']} at cell {r['cell']}: "
              f"{r['visits']} visits, value {r['value']:+.3f} (raw {r['raw_value']:+.3f})")
    for b, cell in enumerate(start_cells):
        action = figures["actions"][b]
        print(f"from cell {cell}: root visits {figures['root_visits'][b]}, "
              f"action {ACTION_NAMES[action]} (sampled from the visits), "
              f"value {figures['root_values'][b]:+.3f}")
    return figures


def cli(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=("mctx", "mcts_jax"), default="mctx",
                        help="the module used as `mctx`")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--num_simulations", type=int, default=16)
    parser.add_argument("--max_depth", type=int, default=4)
    args = parser.parse_args(argv)
    mctx = importlib.import_module(args.library)
    return main(mctx, seed=args.seed, num_simulations=args.num_simulations,
                max_depth=args.max_depth)


if __name__ == "__main__":
    cli()
