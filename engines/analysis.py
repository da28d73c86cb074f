"""One position searched in chunks, the tree kept between chunks and moves.

    analysis = Analysis(envs.make("chess"), SearchSettings(evaluator="uniform"))
    analysis.set_position(state, moves_played=[])        # an unbatched pgx state
    analysis.warm_up()                                   # compiles (UCI's isready)
    while not stop_requested():
        analysis.search_chunk()                          # settings.chunk simulations
    analysis.best_moves(multipv=1)                       # [Line(...)] best first

An engine searches until its budget (nodes, a deadline, `stop`) is spent.
The search is one compiled program of `settings.chunk` simulations that
continues the same tree (`tree=`; a new position continues an empty tree,
`mcts_jax.anytime`), so the engine can look at the clock and its command
queue between chunks, and compiles once. The tree has a fixed capacity
(`settings.max_nodes`); once full, further simulations re-evaluate leaves
(the core's rule) and the engine stops early (`Analysis.full`).

When the new position is the old root followed by moves (a game going on),
the tree is re-rooted on them (`mcts_jax.get_subtree`) instead of started
afresh. Every value here is from the point of view of the player to move at
the root, in [-1, 1].
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, List, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import mcts_jax
from mcts_jax import evaluators
from training import policies as policy_names
from training import search as search_lib

POLICY_NAMES = ("alphazero", "uct", "gumbel")
EVALUATOR_NAMES = ("uniform", "minimax", "playouts")


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """What an engine searches with (each one an engine option).

    policy: "alphazero" (PUCT), "uct" or "gumbel" (one of `POLICY_NAMES`).
    evaluator: "uniform" (only game ends count), "minimax" (depth-1
      negamax, the game's heuristic at the horizon), "playouts" (random
      playouts); ignored when `network` is given.
    playouts: random playouts per leaf (evaluator "playouts").
    chunk: simulations per compiled call (the engine checks its clock and
      `stop` between calls).
    max_nodes: tree capacity; the engine's largest search.
    max_children: child slots per node (compact layout), None: dense.
    solver: MCTS-solver (proven wins and losses; mate scores).
    expand_all: a leaf's first expansion evaluates every child (the
      classic engine recipe with minimax leaves).
    """

    policy: str = "alphazero"
    evaluator: str = "uniform"
    playouts: int = 1
    chunk: int = 64
    max_nodes: int = 4096
    max_children: Optional[int] = None
    solver: bool = True
    expand_all: bool = False

    def __post_init__(self):
        if self.policy not in POLICY_NAMES:
            raise ValueError(f"policy must be one of {POLICY_NAMES}, got {self.policy!r}")
        if self.evaluator not in EVALUATOR_NAMES:
            raise ValueError(f"evaluator must be one of {EVALUATOR_NAMES}, got "
                             f"{self.evaluator!r}")
        for name in ("playouts", "chunk", "max_nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.max_nodes < self.chunk + 1:
            raise ValueError(f"max_nodes ({self.max_nodes}) must be at least chunk + 1 "
                             f"({self.chunk + 1})")

    def make_evaluator(self) -> Any:
        if self.evaluator == "minimax":
            return evaluators.Minimax(depth=1)
        if self.evaluator == "playouts":
            return evaluators.RandomPlayouts(num_playouts=self.playouts)
        return evaluators.Uniform()

    def make_policy(self, game) -> mcts_jax.Policy:
        policy = policy_names.policy_from_name(self.policy, num_actions=game.num_actions,
                                               root_noise=False, sample_action=False)
        return policy.replace(max_nodes=self.max_nodes, max_children=self.max_children,
                              solver=self.solver, expand_all=self.expand_all)


@dataclasses.dataclass(frozen=True)
class Line:
    """One root move read from the tree: `action` (the game's id), its
    `visits`, its value `q` for the root's mover (in [-1, 1]), `proven`
    and `proven_value` (the solver's exact value), and `pv`, the principal
    variation from that move (action ids, the move first)."""

    action: int
    visits: int
    q: float
    proven: bool
    proven_value: float
    pv: List[int]


class Analysis:
    """The search of one position at a time for an engine (batch of one).

    game: an `envs` game; settings: `SearchSettings`; network: an optional
    (evaluator, params) pair of a trained network (`training.agent.Agent`'s
    `model.evaluator` and `variables`), which replaces the settings'
    evaluator and gives the policy's priors."""

    def __init__(self, game, settings: SearchSettings, network=None, seed: int = 0):
        self.game = game
        self.settings = settings
        if network is None:
            self.evaluator, self.params = settings.make_evaluator(), None
        else:
            self.evaluator, self.params = network
        self.simulator = search_lib.GameSimulator(game, self.evaluator)
        self.policy = settings.make_policy(game)
        self._key = jax.random.key(seed)
        self.state = None       # the root, batched [1]
        self.tree = None        # the tree of the root, or None (fresh)
        self.nodes = 0          # simulations of the current tree's searches since set_position
        self._empty_tree = None  # made by the first search (empty_tree)

    # ---- the position ----------------------------------------------------

    def set_position(self, state, moves_played: Optional[Sequence[int]] = None) -> bool:
        """Sets the root to the unbatched state `state`. `moves_played`: the
        actions that lead from the previous root to `state` (a game going
        on), whose subtree is kept; None: a new position, a fresh tree.
        Returns True when the old tree was reused."""
        batched = jax.tree.map(lambda x: jnp.asarray(x)[None], state)
        reused = False
        if moves_played is not None and self.tree is not None:
            tree = self.tree
            for action in moves_played:
                tree = mcts_jax.get_subtree(tree, jnp.asarray([int(action)], jnp.int32))
            reused = int(np.asarray(tree.node_visits)[0, 0]) > 0
            self.tree = tree if reused else None
        else:
            self.tree = None
        self.state = batched
        self.nodes = 0
        return reused

    def _next_key(self) -> jax.Array:
        self._key, key = jax.random.split(self._key)
        return key

    # ---- the search ------------------------------------------------------

    def search_chunk(self) -> int:
        """Runs `settings.chunk` simulations on the tree; returns the
        simulations done."""
        if self.state is None:
            raise RuntimeError("set_position before searching")
        root_key, key = jax.random.split(self._next_key())
        out = search_lib.run(self.policy, self.simulator, self.params, key, self.state,
                             self.settings.chunk, root_key=root_key,
                             tree=self.empty_tree() if self.tree is None else self.tree)
        self.tree = out.search_tree
        jax.block_until_ready(self.tree.node_visits)
        self.nodes += self.settings.chunk
        return self.settings.chunk

    def empty_tree(self) -> mcts_jax.Tree:
        """A tree of the search's shapes with no node: a new position's first
        chunk continues it, so every chunk is one compiled program
        (`mcts_jax.anytime.empty_tree`; made once)."""
        if self._empty_tree is None:
            root, invalid = self.simulator.root(self.params, jax.random.key(0), self.state)
            self._empty_tree = mcts_jax.anytime.empty_tree(
                self.policy, self.params, root, self.simulator.recurrent_fn,
                self.settings.chunk, invalid_actions=invalid)
        return self._empty_tree

    def warm_up(self) -> None:
        """Compiles the search (one program: a fresh position continues an
        empty tree) and the re-rooting on the current root (or the game's
        first position); the tree is left as it was."""
        saved = (self.state, self.tree, self.nodes)
        if self.state is None:
            self.state = self.game.init(jax.random.key(0), 1)
        self.tree = None
        self.search_chunk()
        self._warm_up_line = self.best_moves(1)[0].pv
        get_subtree_key = jnp.asarray([self._warm_up_line[0]], jnp.int32)
        mcts_jax.get_subtree(self.tree, get_subtree_key)
        self.state, self.tree, self.nodes = saved

    def warm_up_line(self) -> List[int]:
        """The principal variation warm_up found (its first position's)."""
        return self._warm_up_line

    @property
    def full(self) -> bool:
        """The tree has no room for another chunk."""
        if self.tree is None:
            return False
        return int(np.asarray(self.tree.num_nodes)[0]) + self.settings.chunk \
            > self.settings.max_nodes

    @property
    def root_visits(self) -> int:
        return 0 if self.tree is None else int(np.asarray(self.tree.node_visits)[0, 0])

    # ---- reading the tree ------------------------------------------------

    def best_moves(self, multipv: int = 1, pv_length: int = 12) -> List[Line]:
        """The `multipv` best root moves: proven wins first, then by
        visits (proven losses last), each with its principal variation."""
        if self.tree is None:
            raise RuntimeError("search before reading the tree")
        summary = jax.device_get(self.tree.summary())
        visits = np.asarray(summary.visit_counts[0])
        q = np.asarray(summary.qvalues[0])
        proven = np.asarray(summary.proven[0])
        proven_q = np.asarray(summary.proven_qvalues[0])
        legal = np.asarray(self.game.legal_actions(self.state)[0])
        score = visits.astype(np.float64) + np.where(legal, 0.5, -1e18)
        score = np.where(proven & (proven_q > 0), 1e12 + proven_q, score)
        score = np.where(proven & (proven_q < 0) & legal, -1e12 + proven_q, score)
        order = np.argsort(-score, kind="stable")[:max(1, int(multipv))]
        order = [int(a) for a in order if legal[a]]
        if not order:
            return []
        pvs = mcts_jax.anytime.best_line(self.tree, max(1, pv_length),
                                         first_actions=np.asarray([order], np.int32))[0]
        return [Line(action=action, visits=int(visits[action]),
                     q=float(proven_q[action] if proven[action] else q[action]),
                     proven=bool(proven[action]), proven_value=float(proven_q[action]),
                     pv=[action] + [int(a) for a in pv[1:] if a >= 0])
                for action, pv in zip(order, pvs)]


def centipawns(q: float) -> int:
    """A value in (-1, 1) for the mover as centipawns, inverting the
    material heuristic tanh(pawns / 10) (`envs.chess_tools.MATERIAL_SCALE`)."""
    q = min(max(q, -0.999), 0.999)
    return int(round(100 * 10 * math.atanh(q)))


__all__ = ["Analysis", "EVALUATOR_NAMES", "Line", "POLICY_NAMES", "SearchSettings",
           "centipawns"]
