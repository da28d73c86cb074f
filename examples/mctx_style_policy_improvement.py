"""Search improves on a noisy prior: a treasure hunt, written against mctx's API.

Every batch element is its own small two-step problem. From the hallway the
agent walks into one of `num_actions` rooms (each room has a small entry
reward, possibly negative), then opens one of that room's `num_actions` chests
(the treasure) and the episode ends. A stand-in for a trained network hands the
search guesses: prior logits that point towards the rooms and chests worth the
most, blurred by noise, and value estimates that are blurred the same way. The
search itself sees the true reward of every room and chest it visits.

Printed, for the prior's greedy choice and for two searches (`muzero_policy`,
`gumbel_muzero_policy`): the true value of the room each one picks and of its
`action_weights` (the improved policy), assuming the best chest is opened
afterwards, next to the best value possible.

The code only uses what `import mctx` offers, so it runs with mctx or with
mcts_jax in its place:

    python examples/mctx_style_policy_improvement.py --library mctx
    python examples/mctx_style_policy_improvement.py --library mcts_jax

`main(mctx)` takes the library module, prints the figures and returns them
(tests/test_mctx_style_examples.py compares the two libraries' figures).
"""

import argparse
import functools
import importlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

HALLWAY = 0  # state codes: 0 the hallway, 1 + r inside room r, 1 + A done


class TreasureHunt(NamedTuple):
    """A batch of treasure hunts and the network's guesses about them."""

    room_rewards: jax.Array  # [B, A] reward for walking into room a
    chest_rewards: jax.Array  # [B, A, A] reward for opening chest c of room a
    hallway_logits: jax.Array  # [B, A] the network's prior over rooms
    chest_logits: jax.Array  # [B, A, A] its prior over each room's chests
    hallway_value: jax.Array  # [B] its value estimate in the hallway
    room_values: jax.Array  # [B, A] its value estimate inside each room

    def true_room_values(self) -> jax.Array:
        """[B, A]: entering room a, then opening its best chest."""
        return self.room_rewards + self.chest_rewards.max(axis=-1)


def make_treasure_hunt(rng_key, batch_size: int, num_actions: int,
                       noise: float) -> TreasureHunt:
    """Random hunts; the guesses are the truth plus Gaussian `noise`."""
    keys = jax.random.split(rng_key, 6)
    shape = (batch_size, num_actions)
    room_rewards = 0.3 * jax.random.normal(keys[0], shape)
    chest_rewards = jax.random.uniform(keys[1], shape + (num_actions,))
    true_rooms = room_rewards + chest_rewards.max(axis=-1)
    sharpness = 3.0  # how strongly the prior follows its (noisy) guess
    return TreasureHunt(
        room_rewards=room_rewards,
        chest_rewards=chest_rewards,
        hallway_logits=sharpness * (true_rooms + noise * jax.random.normal(keys[2], shape)),
        chest_logits=sharpness * (chest_rewards + noise * jax.random.normal(
            keys[3], shape + (num_actions,))),
        hallway_value=true_rooms.mean(axis=-1) + noise * jax.random.normal(
            keys[4], (batch_size,)),
        room_values=chest_rewards.mean(axis=-1) + noise * jax.random.normal(keys[5], shape),
    )


def make_recurrent_fn(mctx):
    """The model the search plans with: `(params, rng_key, action, embedding)`
    with the hunt as `params` and the state code as the embedding."""

    def recurrent_fn(params: TreasureHunt, rng_key, action, embedding):
        del rng_key
        batch_size, num_actions = params.room_rewards.shape
        rows = jnp.arange(batch_size)
        in_hallway = embedding == HALLWAY
        in_room = (embedding > HALLWAY) & (embedding <= num_actions)
        room = jnp.clip(embedding - 1, 0, num_actions - 1)
        reward = jnp.where(in_hallway, params.room_rewards[rows, action],
                           jnp.where(in_room, params.chest_rewards[rows, room, action], 0.0))
        # Walking into a room goes on (discount 1); opening a chest ends the
        # hunt, and a finished hunt stays finished (discount 0 from then on).
        next_embedding = jnp.where(in_hallway, 1 + action, 1 + num_actions)
        discount = jnp.where(in_hallway, 1.0, 0.0)
        prior_logits = jnp.where(in_hallway[:, None], params.chest_logits[rows, action], 0.0)
        value = jnp.where(in_hallway, params.room_values[rows, action], 0.0)
        return mctx.RecurrentFnOutput(reward=reward, discount=discount,
                                      prior_logits=prior_logits, value=value), next_embedding

    return recurrent_fn


def search_both_ways(mctx, hunt: TreasureHunt, rng_key, num_simulations: int):
    """One `muzero_policy` and one `gumbel_muzero_policy` search of every hunt."""
    batch_size = hunt.room_rewards.shape[0]
    root = mctx.RootFnOutput(
        prior_logits=hunt.hallway_logits,
        value=hunt.hallway_value,
        embedding=jnp.full([batch_size], HALLWAY, dtype=jnp.int32),
    )
    recurrent_fn = make_recurrent_fn(mctx)
    muzero_key, gumbel_key = jax.random.split(rng_key)
    muzero_output = mctx.muzero_policy(
        params=hunt,
        rng_key=muzero_key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        dirichlet_fraction=0.25,
        pb_c_init=1.5,
    )
    gumbel_output = mctx.gumbel_muzero_policy(
        params=hunt,
        rng_key=gumbel_key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        max_num_considered_actions=4,
        qtransform=functools.partial(mctx.qtransform_completed_by_mix_value,
                                     value_scale=0.1, maxvisit_init=50),
    )
    return muzero_output, gumbel_output


def figures_of(hunt: TreasureHunt, policy_output) -> dict:
    """What a search chose, how it spent its simulations, what that is worth."""
    true_rooms = np.asarray(hunt.true_room_values())
    actions = np.asarray(policy_output.action)
    weights = np.asarray(policy_output.action_weights)
    summary = policy_output.search_tree.summary()
    return {
        "actions": actions.tolist(),
        "root_visits": np.asarray(summary.visit_counts).astype(int).tolist(),
        "action_value": float(true_rooms[np.arange(len(actions)), actions].mean()),
        "weights_value": float((weights * true_rooms).sum(axis=-1).mean()),
        "root_value": float(np.asarray(summary.value).mean()),
    }


def main(mctx, *, seed: int = 7, batch_size: int = 16, num_actions: int = 5,
         num_simulations: int = 12, noise: float = 0.4) -> dict:
    """Runs both searches on `batch_size` random hunts with `mctx` (the
    library module), prints the figures and returns them."""
    problem_key, search_key = jax.random.split(jax.random.PRNGKey(seed))
    hunt = make_treasure_hunt(problem_key, batch_size, num_actions, noise)
    search = jax.jit(functools.partial(search_both_ways, mctx,
                                       num_simulations=num_simulations))
    muzero_output, gumbel_output = search(hunt, search_key)

    true_rooms = np.asarray(hunt.true_room_values())
    greedy = np.asarray(hunt.hallway_logits).argmax(axis=-1)
    prior_probs = np.asarray(jax.nn.softmax(hunt.hallway_logits))
    figures = {
        "best_value": float(true_rooms.max(axis=-1).mean()),
        "prior": {
            "actions": greedy.tolist(),
            "action_value": float(true_rooms[np.arange(batch_size), greedy].mean()),
            "weights_value": float((prior_probs * true_rooms).sum(axis=-1).mean()),
        },
        "muzero_policy": figures_of(hunt, muzero_output),
        "gumbel_muzero_policy": figures_of(hunt, gumbel_output),
    }

    print(f"{batch_size} treasure hunts, {num_actions} rooms of {num_actions} chests, "
          f"{num_simulations} simulations per search")
    print(f"{'':22}{'chosen room':>12}{'weights':>10}")
    for name in ("prior", "muzero_policy", "gumbel_muzero_policy"):
        row = figures[name]
        print(f"{name:22}{row['action_value']:12.4f}{row['weights_value']:10.4f}")
    print(f"{'best possible':22}{figures['best_value']:12.4f}")
    for name in ("muzero_policy", "gumbel_muzero_policy"):
        print(f"{name} root visits of hunt 0: {figures[name]['root_visits'][0]}, "
              f"room chosen: {figures[name]['actions'][0]}")
    return figures


def cli(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=("mctx", "mcts_jax"), default="mctx",
                        help="the module used as `mctx`")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_actions", type=int, default=5)
    parser.add_argument("--num_simulations", type=int, default=12)
    parser.add_argument("--noise", type=float, default=0.4)
    args = parser.parse_args(argv)
    mctx = importlib.import_module(args.library)
    return main(mctx, seed=args.seed, batch_size=args.batch_size,
                num_actions=args.num_actions, num_simulations=args.num_simulations,
                noise=args.noise)


if __name__ == "__main__":
    cli()
