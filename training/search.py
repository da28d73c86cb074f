"""The application's one search call: a root, what the policy steps, the policy.

    simulator = GameSimulator(game, evaluator)             # the game's own rules
    simulator = muzero.search.LearnedSimulator(model, -1.0)  # a learned model
    out = run(policy, simulator, params, search_key, states, num_simulations,
              root_key=root_key)                           # a mcts_jax.PolicyOutput

A simulator is what a search steps: `root(params, rng_key, states) ->
(RootFnOutput, invalid_actions [B, A])` of positions [B], and `recurrent_fn`
(a recurrent function, or the pair (decision, chance) of a simulator with
chance nodes, as the policies with `takes_chance_nodes` take it).
`GameSimulator` steps an `envs` game and evaluates its leaves with an
evaluator (AlphaZero, the arena's `SearchPlayer`); the learned model's
(`training.muzero.search.LearnedSimulator`) steps the model and reads only
the positions' observations and legal moves.

Every search of the application goes through `run`: the arena's
`SearchPlayer`, self-play of both families, the learned model's agent and
reanalyse, the benchmarks' masked searches. `check_fit` is the one check
that a policy fits what it searches: a policy with chance nodes for a
stochastic game (`envs.ChanceGame`) or a learned model with chance codes,
any other policy for the rest.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import mcts_jax
from mcts_jax import sharding


@dataclasses.dataclass(frozen=True)
class GameSimulator:
    """The game's own rules, stepped by the search, with `evaluator`
    (`params, rng_key, game, states -> (logits [B, A], value [B])`) at the
    root and the leaves. A stochastic game (`envs.ChanceGame`: it has
    `decision_recurrent_fn`) is stepped by afterstates and chance outcomes."""

    game: Any
    evaluator: Any

    @property
    def takes_chance_nodes(self) -> bool:
        return hasattr(self.game, "decision_recurrent_fn")

    def root(self, params, rng_key, states):
        """(RootFnOutput, invalid_actions [B, A]) of full pgx states [B]."""
        return self.game.root(params, rng_key, states, self.evaluator)

    @property
    def recurrent_fn(self):
        if self.takes_chance_nodes:
            return (self.game.decision_recurrent_fn(self.evaluator),
                    self.game.chance_recurrent_fn(self.evaluator))
        return self.game.recurrent_fn(self.evaluator)

    def kind(self) -> str:
        """What it is, for `check_fit`'s message."""
        name = repr(getattr(self.game, "name", self.game))
        if self.takes_chance_nodes:
            return f"{name} is a stochastic game (chance nodes: afterstates and outcomes)"
        return f"{name} is a deterministic game (no chance nodes)"

    def __str__(self) -> str:
        return f"the game {getattr(self.game, 'name', self.game)!r}"


def check_fit(policy: Any, simulator: Any, who: str = "the search",
              label: Optional[str] = None) -> None:
    """Raises ValueError unless `policy` fits `simulator`: a policy with
    chance nodes (`takes_chance_nodes`) for a simulator with chance nodes,
    any other policy for one without. `who` and `label` (default: the
    policy's name) say whose policy it is in the message."""
    if getattr(policy, "takes_chance_nodes", False) == simulator.takes_chance_nodes:
        return
    label = label or getattr(policy, "__name__", type(policy).__name__)
    if simulator.takes_chance_nodes:
        advice = ("and needs a policy with chance nodes (mcts_jax.StochasticMuZeroPolicy, or "
                  "the name 'stochastic')")
    else:
        advice = ("and this policy searches chance nodes; use a policy without them (e.g. "
                  "mcts_jax.AlphaZeroPolicy, mcts_jax.MuZeroPolicy) or a stochastic game "
                  "(envs.make_chance_game)")
    raise ValueError(f"{who}'s policy {label} does not fit {simulator}: "
                     f"{simulator.kind()} {advice}")


def run(policy: Callable, simulator: Any, params, rng_key, states, num_simulations: int, *,
        root_key=None, tree: Optional[mcts_jax.Tree] = None, mesh=None,
        mode: str = "exact") -> mcts_jax.PolicyOutput:
    """One batched search of positions `states` [B] (non-terminal).

    Args:
      policy: a policy value (`mcts_jax.Policy`) or a policy function with
        the policies' signature; it must fit `simulator` (`check_fit`).
      simulator: `GameSimulator`, `LearnedSimulator`, or any value with
        `root`, `recurrent_fn`, `takes_chance_nodes` and `kind`.
      params: the network's variables, given to the root and the recurrent
        function.
      rng_key: the policy's key.
      states: the positions [B] (pgx states; what `simulator.root` reads).
      num_simulations: simulations per search.
      root_key: the root evaluation's key (an evaluator may draw: random
        playouts); a learned model's root draws none.
      tree: a reused tree to continue (subtree reuse), or None.
      mesh, mode: the batch split over a device mesh
        (`mcts_jax.sharding.run_policy`); None: one device.
    Returns:
      `PolicyOutput(action [B], action_weights [B, A], search_tree)`.
    """
    check_fit(policy, simulator)
    root, invalid = simulator.root(params, root_key, states)
    return sharding.run_policy(policy, mesh, mode, params, rng_key, root,
                               simulator.recurrent_fn, num_simulations,
                               invalid_actions=invalid, tree=tree)
