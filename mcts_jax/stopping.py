"""Stop rules: a row stops spending simulations once its answer is known.

Each rule is a plug-in (plugin.py) whose `stops` hook reads the tree and the
call's `plugin.Budget` (simulations spent and left, per row). A stopped row
does nothing more in the call: its tree stays as it is, and the search loop
(`phases.run_simulations`) ends as soon as every row of the batch has
stopped, so a batch decided early costs less wall time. Pass them like any
plug-in: `AlphaZeroPolicy.make(plugins=(VisitGap(),))`, or
`policy(..., plugins=(VisitGap(),))` for one call. The rules::

    VisitGap()            the most visited root action cannot be overtaken
                          in the simulations left: the answer of a full
                          search, exactly (Lc0's "smart pruning" stop)
    VisitGap(margin=0.5)  the same bet, made earlier: an approximation
    LeaderHeld(n)         the most visited root action has led for the last
                          n root visits (mctx issue #102's "best stale for
                          k simulations"; a heuristic)
    StopWhen(rule)        your own: rule(tree, budget) -> [B] bool
    solver=True           the root is proven (the solver stops by itself)

Which rules keep the answer, per policy:

- Visit-count choices (`AlphaZeroPolicy`, `UCTPolicy`, `MuZeroPolicy`, any
  policy with `final_action="most_visited"`): `VisitGap()` returns the very
  action the full search returns (a strict gap larger than the simulations
  left cannot close, and the tie-break never outweighs one visit). With a
  sampled move (temperature > 0) the visit distribution is the stopped
  one's, so the move's distribution changes: use it for the played move at
  temperature 0, in analysis and evaluation, or where no policy target is
  recorded. `VisitGap` is refused with `final_action="highest_value"`,
  with the solver (a proven loss is not played whatever its visits, so the
  leader can still change) and with `expand_all` (a simulation may add
  several visits).
- Gumbel policies: the move is sequential halving's survivor, not the most
  visited action, so `VisitGap` is refused. A stop (a proven root, your
  rule, `LeaderHeld`) ends the halving where it is: the move is chosen among
  the actions with the most visits at that point, as a search of that
  smaller budget would choose it (its schedule is still the full one's).
- Stop rules count this call's simulations: with `tree=` (continuing a
  search, `anytime.py`) the budget is this call's `num_simulations`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.plugin import Budget, SearchPlugin


def root_visit_gap(tree: tree_lib.Tree) -> tuple[chex.Array, chex.Array]:
    """(gap [B] int32, leader [B] int32): the root's most visited child slot
    and its lead over the second legal slot (a large number when the root
    has at most one legal child: nothing can overtake it)."""
    root = tree_lib.root_nodes(tree.batch_size)
    stats = tree_lib.children_stats(tree, root)
    visits = jnp.where(stats.legal, stats.visits, -1).astype(jnp.int32)
    if visits.shape[-1] < 2:
        return jnp.full(visits.shape[:1], jnp.iinfo(jnp.int32).max, jnp.int32), \
            jnp.zeros(visits.shape[:1], jnp.int32)
    # Two max passes, not lax.top_k: a sort on CPU, which cost a quarter of a
    # tic-tac-toe simulation step at B = 4520 when run every step.
    leader = jnp.argmax(visits, axis=-1).astype(jnp.int32)  # ties: the lower slot
    first = jnp.max(visits, axis=-1)
    second = jnp.max(jnp.where(jnp.arange(visits.shape[-1]) == leader[:, None], -1, visits),
                     axis=-1)
    alone = jnp.sum(stats.legal, axis=-1) <= 1
    return jnp.where(alone, jnp.iinfo(jnp.int32).max, first - second), leader


def most_visited_cannot_change(tree: tree_lib.Tree, left: chex.Array,
                               margin: float = 1.0) -> chex.Array:
    """[B] bool: the most visited root action leads the second by more than
    `margin` x `left` visits ([B], the simulations still to come, one visit
    each at the root). With margin 1 no continuation can overtake it."""
    gap, _ = root_visit_gap(tree)
    return gap.astype(jnp.float32) > margin * left.astype(jnp.float32)


def visit_gap_refusal(policy: Any, options: Any) -> Optional[str]:
    """Why `VisitGap` does not apply to `policy` with `options` (its move is
    not the most visited action, the solver may exclude the leader, one
    simulation may add several visits), or None where it does: where the
    most visited root action is the sure answer (anytime.py judges rows
    decided there too)."""
    if getattr(policy, "final_action", None) not in ("most_visited", "sampled"):
        return (f"VisitGap stops when the most visited root action can no longer change, "
                f"but {type(policy).__name__} does not play its most visited action "
                f"(final_action={getattr(policy, 'final_action', None)!r}; Gumbel plays "
                f"sequential halving's survivor). Use a visit-count policy, or a stop rule "
                f"of your own (mcts_jax.stopping.StopWhen)")
    if getattr(options, "solver", False):
        return ("VisitGap with solver=True: a proven loss is not played whatever its visits, "
                "so the most visited action can still change; the solver already stops a "
                "row whose root is proven")
    if getattr(options, "expand_all", False):
        return ("VisitGap with expand_all=True: one simulation may add several visits to a "
                "root action, so the simulations left do not bound the gap")
    return None


@dataclasses.dataclass(frozen=True)
class VisitGap(SearchPlugin):
    """Stops a row when its most visited root action can no longer be
    overtaken: its lead over the second is more than `margin` x the
    simulations left in this call. With `margin` = 1 (the default) the row's
    move is the full search's, exactly; a smaller margin stops earlier and
    may change it (Lc0's smart-pruning factor plays this role)."""

    margin: float = 1.0

    def __post_init__(self):
        if not isinstance(self.margin, (int, float)) or not self.margin > 0:
            raise ValueError(f"VisitGap margin must be a number > 0, got {self.margin!r}")

    def stops(self, tree, record, budget: Budget):
        return most_visited_cannot_change(tree, budget.left, self.margin)

    def check(self, policy, options):
        refusal = visit_gap_refusal(policy, options)
        if refusal is not None:
            raise ValueError(f"plugins: {refusal}")


@dataclasses.dataclass(frozen=True)
class LeaderHeld(SearchPlugin):
    """Stops a row once the most visited root action has stayed the leader
    for the last `visits` root visits (a heuristic: the answer may still
    have changed in a full search). Its record ([B, N] arrays, the root's
    entry used): the leading child slot and the root visits when it took
    the lead."""

    visits: int

    def __post_init__(self):
        if not isinstance(self.visits, int) or isinstance(self.visits, bool) \
                or self.visits < 1:
            raise ValueError(f"LeaderHeld visits must be an int >= 1, got {self.visits!r}")

    def init_record(self, tree):
        zeros = jnp.zeros((tree.batch_size, tree.max_nodes), jnp.int32)
        return dict(leader=zeros, since=zeros)

    def after_backup(self, tree, state):
        _, leader = root_visit_gap(tree)
        root_visits = tree.node_visits[:, tree_lib.ROOT_INDEX]
        changed = leader != state["leader"][:, tree_lib.ROOT_INDEX]
        since = jnp.where(changed, root_visits, state["since"][:, tree_lib.ROOT_INDEX])
        return tree, dict(leader=state["leader"].at[:, tree_lib.ROOT_INDEX].set(leader),
                          since=state["since"].at[:, tree_lib.ROOT_INDEX].set(since))

    def stops(self, tree, record, budget):
        held = tree.node_visits[:, tree_lib.ROOT_INDEX] - record["since"][:, tree_lib.ROOT_INDEX]
        return (budget.spent > 0) & (held >= self.visits)


@dataclasses.dataclass(frozen=True)
class StopWhen(SearchPlugin):
    """Your stop rule: `rule(tree, budget) -> [B] bool`, True where the row
    stops (`tree` the batch's `Tree`, `budget` a `plugin.Budget`: spent
    and left per row). It is traced once per compiled search, like a
    selection rule; bind its settings with `functools.partial` (a lambda
    made anew on every call compiles anew)."""

    rule: Callable

    def check(self, policy, options):
        if not callable(self.rule):
            raise TypeError(f"plugins: StopWhen rule must be callable (tree, budget) -> [B] "
                            f"bool, got {type(self.rule).__name__}")

    def stops(self, tree, record, budget):
        stop = self.rule(tree, budget)
        shape = getattr(stop, "shape", None)
        if shape != (tree.batch_size,) or not jnp.issubdtype(stop.dtype, jnp.bool_):
            raise ValueError(f"plugins: StopWhen rule must return a [B] = "
                             f"({tree.batch_size},) bool array, got "
                             f"{getattr(stop, 'dtype', type(stop).__name__)}{shape or ''}")
        return stop
