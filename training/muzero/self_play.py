"""Self-play with the learned model: the AlphaZero self-play loop, searching the model.

`LearnedModelSelfPlay` is `training.self_play.SelfPlay` (B games at once,
auto-reset, random openings, temperature, playout cap randomisation, device
mesh) with two changes: the search steps the learned model
(`training.muzero.search`), never the game, and every move goes to the
trajectory replay (`trajectories.add` / `credit`) with its action, reward,
legal moves and the search's root value. The game itself only plays the
chosen moves and says which are legal at the root.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax

import mcts_jax
from mcts_jax import sharding
from training.muzero import search as search_lib
from training.muzero import trajectories
from training.self_play import SelfPlay


@dataclasses.dataclass(frozen=True, eq=False)
class LearnedModelSelfPlay(SelfPlay):
    """Self-play that searches with `model` (a `LearnedModel`). `discount`:
    the search's discount of one move (-1 for two-player games)."""

    discount: float = -1.0

    def __post_init__(self):
        stochastic = self.model.config.stochastic
        if getattr(self.policy, "takes_chance_nodes", False) != stochastic:
            raise ValueError(
                f"LearnedModelSelfPlay's policy {type(self.policy).__name__} does not fit the "
                f"model: " + ("a model with chance codes needs a policy with chance nodes "
                              "(mcts_jax.StochasticMuZeroPolicy)" if stochastic else
                              "a policy with chance nodes needs a model with chance codes"))

    @property
    def recurrent_fn(self):
        return search_lib.recurrent_fns(self.model, self.discount)

    def search(self, variables, rng_key, states, tree=None,
               num_simulations: Optional[int] = None) -> mcts_jax.PolicyOutput:
        _, search_key = jax.random.split(rng_key)  # the split of SelfPlay.search
        root, invalid = search_lib.learned_root(self.model, variables, states.observation,
                                                self.game.legal_actions(states))
        return sharding.run_policy(self.policy, self.mesh, self.search_mode, variables,
                                   search_key, root, self.recurrent_fn,
                                   num_simulations or self.num_simulations,
                                   invalid_actions=invalid, tree=tree)

    def new_buffer(self, num_slots: int):
        return trajectories.init(num_slots, self.num_games, *self.observation_spec(),
                                 self.game.num_actions)

    def record(self, buffer, states, policy_target, action, recorded, search_value):
        return trajectories.add(buffer, states.observation, self.game.legal_actions(states),
                                policy_target, states.current_player, action, search_value,
                                recorded)

    def credit(self, buffer, rewards, done):
        # The game's discount, as AlphaZero's self-play credits it: a one-player
        # game's search discount (config.make_game), 1 for two-player games.
        return trajectories.credit(buffer, rewards, done, discount=self.game.discount)
