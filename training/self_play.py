"""Batched self-play: B games at once, one jitted step per move for the whole batch.

Each step searches every row's position with the network and the run's
policy value (`GumbelPolicy`, `AlphaZeroPolicy`, or any `mcts_jax.Policy`), writes one pending sample per row into the replay buffer
(observation, the search's policy target, the player to move), plays the
chosen moves, gives the value targets to the rows whose game ended, and
restarts those rows from a fresh initial position (auto-reset). With subtree
reuse the chosen child's subtree becomes the next root's tree (an ended row's
tree is emptied).

Policy targets: the visit distribution (`alphazero`) or Gumbel MuZero's
improved policy (`gumbel`), both `PolicyOutput.action_weights`. Value targets:
the rewards from the sample's move to the end of its game for the player to
move at the sample (the final result for the board games; 2048's points
still to come), mixed with the search's root value when
`search_value_weight` > 0 (see `replay`).
Stochastic games (`envs.ChanceGame`: 2048, backgammon) are searched with a
policy that has chance nodes (`mcts_jax.StochasticMuZeroPolicy`: PUCT with
root noise over the decisions, chance nodes for the tiles or dice, values
unbounded: min-max normalised Q), and pgx's step draws the chance outcome
of each move played.
Playout cap randomisation (KataGo): with `fast_simulations` > 0, each step is
a full search (`num_simulations`) with probability `full_search_fraction`
and otherwise a fast one (`fast_simulations`); only full searches record
samples, so the targets stay those of the full budget while the games move
on at a fraction of the cost. The draw is per step, shared by the B rows
(one `lax.cond` runs either search; both use the same tree capacity).
Exploration: AlphaZero adds Dirichlet noise at the root, and the move of the
first `temperature_moves` plies of each game is sampled from the visit
distribution (most visited afterwards); Gumbel plays its sequential-halving choice,
which is randomised by the Gumbel noise. Both can open each game with k
uniformly random moves, k drawn uniformly from [0, random_opening_plies] per
game (`random_opening_fraction` < 1: only that share of games, the others
from the initial position); those plies are not recorded (their positions are searched, but the
move is random and the sample is dropped), so every recorded position is
followed by searched play only and its value target stays that of the
search's play, while the positions seen cover unusual openings.
Interleaved openings (`random_opening_interleaved`, a share of the opened
games): of the k opening plies only the last one and every second one
before it are random; the others are played by the search (and not
recorded either). So the player to move at ply k, the first recorded
position, has searched each of its opening moves against an opponent who
played at random: the positions are the agent's own lines with random
replies, the ones an opponent who deviates early leaves it (Connect Four:
3 then any reply, the lines a first player must win against the solver).
With `max_game_length`, a game still running after that many plies ends as a
draw (value targets 0), as pgx's own truncation does.

On a device mesh (`mesh` set, see `mcts_jax.sharding`) the B games are split
over the devices (B / D each), with the replay buffer split the same way and
the network replicated; the step is the same compiled program, partitioned
by XLA, with no host round trip. Its random numbers are drawn in the global
[B, ...] shapes from the replicated key, so the games are the same, move for
move, as on one device.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp
from jax.sharding import Mesh

import mcts_jax
from mcts_jax import sharding
from training import networks
from training import replay
from training import search as search_lib


@chex.dataclass(frozen=True)
class SelfPlayState:
    """The games in progress.

    states: pgx states [B], never terminal (ended rows are restarted).
    ply: [B] int32, moves played so far in each row's current game.
    returns: [B, num_players] float32, the rewards each player received so
      far in the row's current game (2048: the score).
    opening: [B] int32, how many opening plies (not recorded) each row's
      current game has.
    tree: a `mcts_jax.Tree` of B rows kept for subtree reuse, or None.
    interleaved_opening: [B] bool, the row's opening interleaves searched
      and random plies (None without `random_opening_interleaved`).
    """

    states: Any
    ply: chex.Array
    returns: chex.Array
    opening: chex.Array
    tree: Optional[mcts_jax.Tree] = None
    interleaved_opening: Optional[chex.Array] = None


@chex.dataclass(frozen=True)
class StepStats:
    """What one self-play step did.

    games: [] int32, games that ended on this move; plies: [] int32, their
    total length; draws: [] int32, how many of them were drawn (or truncated
    with no result); action: [B] int32, the move played in each row; done:
    [B] bool, the row's game ended with it (the row was restarted);
    full_search: [] bool, the step searched with the full budget (always,
    without playout cap randomisation); recorded: [B] bool, the row wrote a
    sample; search_value: [B] float32, the search's root value for the
    player to move; score: [] float32, the total of player 0's returns in
    the games that ended (2048: their scores).
    """

    games: chex.Array
    plies: chex.Array
    draws: chex.Array
    action: chex.Array
    done: chex.Array
    full_search: chex.Array
    recorded: chex.Array
    search_value: chex.Array
    score: chex.Array


@dataclasses.dataclass(frozen=True, eq=False)
class SelfPlay:
    """Self-play of one game with one network and one search policy.

    `policy` is a policy value (`mcts_jax.Policy`: its settings and search
    options, `max_nodes` and `simulations_per_step` included, travel with
    it; a policy function with the policies' signature works too). A policy
    with chance nodes (`StochasticMuZeroPolicy`) plays the stochastic games,
    any other the deterministic ones. `temperature_moves` > 0: the move of
    the first plies of each game is sampled from `action_weights`.
    Compared by identity: it is the static argument of the compiled step.
    Build it once per run.
    """

    game: Any                     # envs.PgxGame
    model: networks.Model
    policy: Any                   # a mcts_jax.Policy value
    num_simulations: int
    num_games: int
    reuse_tree: bool = False
    temperature_moves: int = 0
    random_opening_plies: int = 0
    random_opening_fraction: float = 1.0  # share of games with random opening plies
    random_opening_interleaved: float = 0.0  # share of those whose opening interleaves searched plies
    max_game_length: int = 0      # > 0: a game reaching this many plies ends as a draw
    mesh: Optional[Mesh] = None   # games split over its "data" axis (None: one device)
    search_mode: str = "exact"    # on a mesh: "exact" or "local" (sharding.run_policy)
    search_value_weight: float = 0.0  # value target: (1 - w) z + w (root search value)
    fast_simulations: int = 0      # > 0: playout cap randomisation (see the module docstring)
    full_search_fraction: float = 1.0  # share of the steps searched with num_simulations

    def __post_init__(self):
        search_lib.check_fit(self.policy, self.simulator, type(self).__name__)

    @property
    def simulator(self) -> search_lib.GameSimulator:
        """What the search steps: the game's rules, the network at the leaves."""
        return search_lib.GameSimulator(self.game, self.model.evaluator)

    def search(self, variables, rng_key, states, tree=None,
               num_simulations: Optional[int] = None) -> mcts_jax.PolicyOutput:
        """The self-play search of full pgx states [B] (non-terminal), with
        `num_simulations` (None: the full budget). Its action is played, its
        action_weights are the policy target."""
        root_key, search_key = jax.random.split(rng_key)
        return search_lib.run(self.policy, self.simulator, variables, search_key, states,
                              num_simulations or self.num_simulations, root_key=root_key,
                              tree=tree, mesh=self.mesh, mode=self.search_mode)

    def init(self, rng_key: chex.PRNGKey) -> SelfPlayState:
        """B fresh games (and an empty reuse tree when `reuse_tree`)."""
        states = self.game.init(rng_key, self.num_games)
        tree = None
        if self.reuse_tree:
            variables = jax.eval_shape(self.model.init, jax.random.key(0))
            shapes = jax.eval_shape(lambda v, k, s: self.search(v, k, s).search_tree,
                                    variables, rng_key, states)
            zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
            tree = mcts_jax.reset_tree(zeros, jnp.ones((self.num_games,), jnp.bool_))
        return SelfPlayState(states=states, ply=jnp.zeros((self.num_games,), jnp.int32),
                             returns=jnp.zeros(states.rewards.shape, jnp.float32),
                             opening=self.draw_openings(jax.random.fold_in(rng_key, 1)),
                             tree=tree,
                             interleaved_opening=self.draw_interleaved(
                                 jax.random.fold_in(rng_key, 3)))

    def draw_openings(self, rng_key) -> chex.Array:
        """[B] int32 random plies opening each new game: uniform in
        [0, random_opening_plies] for a `random_opening_fraction` share of the
        games (drawn per game), 0 for the others."""
        plies = jax.random.randint(rng_key, (self.num_games,), 0, self.random_opening_plies + 1)
        if self.random_opening_fraction < 1.0:
            opened = jax.random.uniform(jax.random.fold_in(rng_key, 2),
                                        (self.num_games,)) < self.random_opening_fraction
            plies = jnp.where(opened, plies, 0)
        return plies

    def draw_interleaved(self, rng_key) -> Optional[chex.Array]:
        """[B] bool, each new game's opening interleaves searched and random
        plies (a `random_opening_interleaved` share, drawn per game); None
        when no game's does."""
        if self.random_opening_interleaved <= 0.0:
            return None
        return jax.random.uniform(rng_key, (self.num_games,)) < self.random_opening_interleaved

    def random_plies(self, state: SelfPlayState) -> chex.Array:
        """[B] bool, the row's next move is a random opening ply: any
        opening ply, or for an interleaved opening of k plies the last one
        and every second one before it (plies k-1, k-3, ...)."""
        opening = state.ply < state.opening
        if state.interleaved_opening is None:
            return opening
        searched = state.interleaved_opening & ((state.opening - state.ply) % 2 == 0)
        return opening & ~searched

    def observation_spec(self):
        """(shape, dtype) of one position's observation in this game."""
        dummy = self.game.init(jax.random.key(0), 1)
        return dummy.observation.shape[1:], dummy.observation.dtype

    def new_buffer(self, num_slots: int):
        """An empty replay ring of `num_slots` x B samples for this self-play."""
        return replay.init(num_slots, self.num_games, *self.observation_spec(),
                           self.game.num_actions)

    def record(self, buffer, states, policy_target, action, recorded, search_value):
        """The buffer with one pending sample per row written (traced): the
        position (states [B]), the search's policy target [B, A], the move
        played [B] (unused here), recorded [B] bool, the root value [B]."""
        del action
        return replay.add(buffer, states.observation, policy_target, states.current_player,
                          record=recorded, search_value=search_value,
                          search_value_weight=self.search_value_weight)

    def credit(self, buffer, rewards, done):
        """The buffer after the move (traced): rewards [B, num_players], done [B]."""
        return replay.credit_rewards(buffer, rewards, done, self.search_value_weight,
                                     self.game.discount)

    def step(self, variables, rng_key: chex.PRNGKey, state: SelfPlayState,
             buffer: replay.ReplayBuffer):
        """One move of every game: (state, buffer, StepStats). Compiled once."""
        return _step(self, variables, rng_key, state, buffer)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=(3, 4))
def _step(self: SelfPlay, variables, rng_key, state: SelfPlayState,
          buffer: replay.ReplayBuffer):
    search_key, sample_key, step_key, reset_key, random_key = jax.random.split(rng_key, 5)
    states = state.states
    if self.fast_simulations > 0:
        # Its own key (not a sixth split): runs without the cap keep their streams.
        full = jax.random.uniform(jax.random.fold_in(rng_key, 6)) < self.full_search_fraction
        out = jax.lax.cond(
            full, lambda: self.search(variables, search_key, states, state.tree),
            lambda: self.search(variables, search_key, states, state.tree,
                                self.fast_simulations))
    else:
        full = jnp.bool_(True)
        out = self.search(variables, search_key, states, state.tree)
    action = out.action
    if self.temperature_moves > 0:
        legal = states.legal_action_mask & (out.action_weights > 0)
        sampled = jax.random.categorical(
            sample_key, jnp.where(legal, jnp.log(jnp.maximum(out.action_weights, 1e-30)),
                                  -jnp.inf)).astype(jnp.int32)
        action = jnp.where(state.ply < self.temperature_moves, sampled, action)

    opening = state.ply < state.opening
    if self.random_opening_plies > 0:
        random_action = jax.random.categorical(
            random_key, jnp.where(states.legal_action_mask, 0.0, -jnp.inf)).astype(jnp.int32)
        action = jnp.where(self.random_plies(state), random_action, action)
    recorded = ~opening & full
    search_value = out.search_tree.summary().value
    buffer = self.record(buffer, states, out.action_weights, action, recorded, search_value)
    next_states = self.game.step(states, action, step_key)
    done = self.game.is_terminal(next_states)
    if self.max_game_length > 0:
        # Truncated: no reward was given (the game is not over), so the value
        # targets of its samples are 0, a draw.
        done = done | (state.ply + 1 >= self.max_game_length)
    buffer = self.credit(buffer, next_states.rewards, done)
    returns = state.returns + next_states.rewards

    fresh = self.game.init(reset_key, self.num_games)
    restart = lambda a, b: jnp.where(done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)  # noqa
    new_states = jax.tree.map(restart, fresh, next_states)
    tree = None
    if self.reuse_tree:
        # Row by row on each device's own games (no randomness, no communication).
        tree = sharding.rowwise(_next_tree, self.mesh)(out.search_tree, action, done)
    ply = jnp.where(done, 0, state.ply + 1)
    score = jnp.sum(jnp.where(done, returns[:, 0], 0.0))
    returns = jnp.where(done[:, None], 0.0, returns)
    new_opening = jnp.where(done, self.draw_openings(jax.random.fold_in(reset_key, 1)),
                            state.opening)
    stats = StepStats(games=jnp.sum(done, dtype=jnp.int32),
                      plies=jnp.sum(jnp.where(done, state.ply + 1, 0), dtype=jnp.int32),
                      draws=jnp.sum(done & jnp.all(next_states.rewards == 0, axis=-1),
                                    dtype=jnp.int32),
                      action=action, done=done, full_search=full, recorded=recorded,
                      search_value=search_value, score=score)
    interleaved = state.interleaved_opening
    if interleaved is not None:
        interleaved = jnp.where(done, self.draw_interleaved(jax.random.fold_in(reset_key, 3)),
                                interleaved)
    new_state = SelfPlayState(states=new_states, ply=ply, returns=returns, opening=new_opening,
                              tree=tree, interleaved_opening=interleaved)
    return (sharding.constrain_batch(new_state, self.mesh),
            sharding.constrain_batch(buffer, self.mesh, axis=1),
            sharding.constrain_batch(stats, self.mesh))


def _next_tree(tree: mcts_jax.Tree, action, done):
    """The tree kept for the next move: the played child's subtree, emptied
    in rows whose game ended (tree of B rows, action [B], done [B])."""
    return mcts_jax.reset_tree(mcts_jax.get_subtree(tree, action), done)
