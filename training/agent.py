"""A trained agent, loaded from a training run folder.

    agent = Agent.load("runs/tic_tac_toe")
    states = agent.game.init(jax.random.key(0), batch_size=8)
    actions = agent.act(jax.random.key(1), states, num_simulations=64)   # [8] int32

`act` searches batched pgx states of the agent's game with the run's search
policy (alphazero or gumbel) and the trained network; `num_simulations=0`
plays the raw policy network (no search). A learned-model run's agent
(--algorithm muzero, ...) searches its learned model, greedily.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from typing import Any, Optional

import jax

from training import build as build_lib
from training import checkpoint as checkpoint_lib
from training import config as config_lib


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    """A network and the search it was trained with.

    config: the run's TrainConfig; game: the `envs` game; model: the
    network (`networks.Model`) or the learned model; variables: its
    {"params", "batch_stats"}; iteration: the training iteration of the
    checkpoint.
    """

    config: config_lib.TrainConfig
    game: Any
    model: Any
    variables: Any
    iteration: int

    @classmethod
    def load(cls, run_dir: str, iteration: Optional[int] = None) -> "Agent":
        """The agent of `run_dir`'s latest checkpoint (or of `iteration`)."""
        config_path = os.path.join(run_dir, "config.json")
        if not os.path.exists(config_path):
            raise FileNotFoundError(f"{run_dir} is not a training run (no config.json)")
        config = config_lib.load_json(config_path)
        parts = build_lib.build(config)
        like = jax.eval_shape(parts.model.init, jax.random.key(0))
        checkpointer = checkpoint_lib.Checkpointer(os.path.join(run_dir, "checkpoints"),
                                                   keep=config.records.run.keep_checkpoints)
        try:
            variables, iteration = checkpointer.restore_variables(like, iteration)
            updates = checkpointer.read_meta(iteration).get("updates")
        finally:
            checkpointer.close()
        if updates == 0:  # checkpoints before issue 65 do not say
            warnings.warn(f"{run_dir}: checkpoint {int(iteration)} was taken after 0 learner "
                          f"updates, so its network is untrained (its initial random "
                          f"weights); train longer (more --iterations, or a --preset other "
                          f"than {config.records.run.preset!r})", stacklevel=2)
        return cls(config=config, game=parts.game, model=parts.model, variables=variables,
                   iteration=int(iteration))

    @property
    def algorithm(self) -> build_lib.Algorithm:
        """The run's algorithm (`training.build.algorithm_for`)."""
        return build_lib.algorithm_for(self.config)

    def player(self, num_simulations: Optional[int] = None, greedy: bool = True,
               simulations_per_step: int = 1):
        """The `arena` player of this agent (for `arena.play_match`): the
        algorithm's search at `num_simulations` (None: the run's
        final_simulations; 0: the raw policy network, AlphaZero only)."""
        if num_simulations is None:
            num_simulations = self.config.records.evaluation.final_simulations
        return self.algorithm.agent(self.game, self.model, num_simulations, greedy,
                                    simulations_per_step)

    def act(self, rng_key: jax.Array, states, num_simulations: Optional[int] = None,
            greedy: bool = True, simulations_per_step: int = 1) -> jax.Array:
        """Moves [B] int32 for batched, non-terminal pgx states [B] of the game.

        num_simulations: search budget (None: the run's final_simulations;
          0: the raw policy network, no search).
        greedy: the most visited move without root noise (Gumbel: no Gumbel
          noise); False samples as in self-play (raw policy: softmax).
        simulations_per_step: P paths per tree per search step, their leaves
          evaluated by one network call (faster for a few positions; see
          `mcts_jax/parallel.py`); the budget stays `num_simulations`.
        """
        player = self.player(num_simulations, greedy, simulations_per_step)
        return _act(player, self.game, self.variables, rng_key, states)

    def policy_value(self, states):
        """The raw network on states [B]: (logits [B, A], value [B] for the player to move)."""
        return jax.jit(self.model.predict)(self.variables, states.observation)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _act(player, game, variables, rng_key, states):
    """Compiled once per player, game and shapes."""
    return player(variables, rng_key, game, states)
