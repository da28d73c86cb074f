"""Policy names, at the command-line / config edge: the one table from a
name to a policy value.

The library itself never reads a policy name: `search`, `sharding`, the
arena, self-play and training take policy values (`mcts_jax.Policy`). The
command line (`train.py --policy`), the training config and the arena's
shorthand players name them, and this module turns the name into the value.

    policy_from_name("gumbel", num_actions=7)                      # self-play's Gumbel
    policy_from_name("alphazero", num_actions=9, root_noise=False)  # evaluation
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import mcts_jax
from mcts_jax import policies as core_policies
from mcts_jax import selection


def _uct(*, sample_action, uct_c, **_) -> mcts_jax.Policy:
    return mcts_jax.UCTPolicy(uct_c=uct_c,
                              final_action="sampled" if sample_action else "most_visited",
                              temperature=1.0 if sample_action else 0.0)


def _alphazero(*, root_noise, sample_action, dirichlet_fraction, dirichlet_alpha,
               forced_playouts, **_) -> mcts_jax.Policy:
    return mcts_jax.AlphaZeroPolicy(
        dirichlet_fraction=dirichlet_fraction if root_noise else 0.0,
        dirichlet_alpha=dirichlet_alpha,
        final_action="sampled" if sample_action else "most_visited",
        temperature=1.0 if sample_action else 0.0,
        forced_playouts=forced_playouts if root_noise else 0.0)


def _gumbel(*, root_noise, num_actions, max_num_considered_actions, **_) -> mcts_jax.Policy:
    return mcts_jax.GumbelPolicy(
        max_num_considered_actions=min(max_num_considered_actions, num_actions),
        gumbel_scale=1.0 if root_noise else 0.0)


def _stochastic(*, root_noise, sample_action, dirichlet_fraction, dirichlet_alpha,
                **_) -> mcts_jax.Policy:
    return mcts_jax.StochasticMuZeroPolicy.make(
        temperature=1.0 if sample_action else 0.0,
        dirichlet_fraction=dirichlet_fraction if root_noise else 0.0,
        dirichlet_alpha=dirichlet_alpha, value_range=None)


def _stochastic_gumbel(*, root_noise, num_actions, max_num_considered_actions,
                       **_) -> mcts_jax.Policy:
    return mcts_jax.StochasticGumbelPolicy.make(
        max_num_considered_actions=min(max_num_considered_actions, num_actions),
        gumbel_scale=1.0 if root_noise else 0.0, value_range=None)


def _muzero(*, root_noise, sample_action, dirichlet_fraction, dirichlet_alpha,
            **_) -> mcts_jax.Policy:
    return mcts_jax.MuZeroPolicy(dirichlet_fraction=dirichlet_fraction if root_noise else 0.0,
                                 dirichlet_alpha=dirichlet_alpha,
                                 temperature=1.0 if sample_action else 0.0)


def _gumbel_muzero(**settings) -> mcts_jax.Policy:
    return _gumbel(**settings).replace(options=mcts_jax.muzero_options())


# The table: name -> how the policy is built from the shared settings.
POLICIES: Dict[str, Callable[..., mcts_jax.Policy]] = {
    "uct": _uct,
    "alphazero": _alphazero,
    "gumbel": _gumbel,
    "stochastic": _stochastic,  # the stochastic games: chance nodes, unbounded values
    "stochastic_gumbel": _stochastic_gumbel,  # the same with Gumbel's root and target
    "muzero": _muzero,
    "gumbel_muzero": _gumbel_muzero,
}


def policy_from_name(name: str, *, num_actions: int, root_noise: bool = True,
                     sample_action: bool = False, uct_c: float = selection.UCT_C,
                     max_num_considered_actions: int = selection.MAX_NUM_CONSIDERED_ACTIONS,
                     dirichlet_fraction: float = core_policies.DIRICHLET_FRACTION,
                     dirichlet_alpha: float = core_policies.DIRICHLET_ALPHA,
                     forced_playouts: float = 0.0, **changes: Any) -> mcts_jax.Policy:
    """The policy value a name stands for.

    Args:
      name: one of `POLICIES`.
      num_actions: A of the game (Gumbel considers at most A actions).
      root_noise: Dirichlet noise at the root (AlphaZero, MuZero, stochastic)
        or Gumbel noise (`gumbel_scale` 1; 0 without).
      sample_action: the move is sampled from the visit counts at
        temperature 1; False: the most visited move (temperature 0).
      uct_c, max_num_considered_actions, dirichlet_fraction, dirichlet_alpha:
        the policies' constants (defaults: the core's, `mcts_jax.selection.UCT_C`,
        `mcts_jax.policies.DIRICHLET_FRACTION` and `DIRICHLET_ALPHA`).
      forced_playouts: AlphaZero's KataGo forced playouts k, with root noise
        only (self-play); 0: off.
      changes: any field of the policy or of `SearchOptions`, applied last
        (`Policy.replace`).
    """
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; the names are {sorted(POLICIES)} (or pass "
                         f"a policy value, mcts_jax.Policy)")
    if changes.get("simulations_per_step", 1) > 1:
        # mctx's node numbering (the MuZero-family defaults) has no meaning
        # with several paths per step.
        changes.setdefault("node_per_simulation", False)
    policy = POLICIES[name](root_noise=root_noise, sample_action=sample_action, uct_c=uct_c,
                            num_actions=num_actions,
                            max_num_considered_actions=max_num_considered_actions,
                            dirichlet_fraction=dirichlet_fraction,
                            dirichlet_alpha=dirichlet_alpha, forced_playouts=forced_playouts)
    return policy.replace(**changes) if changes else policy
