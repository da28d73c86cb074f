"""Self-play with the learned model: the AlphaZero self-play loop, searching the model.

`LearnedModelSelfPlay` is `training.self_play.SelfPlay` (B games at once,
auto-reset, random openings, temperature, playout cap randomisation, device
mesh) with two changes: the search steps the learned model
(`training.muzero.search.LearnedSimulator`), never the game, and every move goes to the
trajectory replay (`trajectories.add` / `credit`) with its action, reward,
legal moves and the search's root value. The game itself only plays the
chosen moves and says which are legal at the root.
"""

from __future__ import annotations

import dataclasses

from training.muzero import search as learned_search
from training.muzero import trajectories
from training.self_play import SelfPlay


@dataclasses.dataclass(frozen=True, eq=False)
class LearnedModelSelfPlay(SelfPlay):
    """Self-play that searches with `model` (a `LearnedModel`). `discount`:
    the search's discount of one move (-1 for two-player games)."""

    discount: float = -1.0

    @property
    def simulator(self) -> learned_search.LearnedSimulator:
        """What the search steps: the learned model (SelfPlay's search, fit
        check and key split are the same)."""
        return learned_search.LearnedSimulator(self.model, self.discount)

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
