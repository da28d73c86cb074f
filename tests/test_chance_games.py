"""envs/chance_games.py against pgx's own `env.step`.

- The chance distribution is exact: for given states and actions, the next
  states `env.step` gives over many keys are exactly the states of the
  outcomes with probability > 0 (none other, each one seen), at the
  frequencies `chance_probabilities` gives (chi-square, fixed seed).
- Along random games of both games (through the end, each going on from
  the adapter's own next state), `env.step`'s next state is always `apply_outcome(afterstate(s, a), o)` for an outcome o of
  probability > 0 (board after the slide or move, reward, terminal, player,
  legal mask, observation: every field), probabilities sum to 1, the
  legal-move bound holds, lean states and afterstates step like full ones,
  and the recurrent functions give pgx's rewards, discounts (-1 / +1 / 0)
  and legal masks.
- RandomPlayouts values are score sums on 2048 and within +-3 on backgammon;
  the functions plug into mctx's stochastic_muzero_policy.

Backgammon states are compared with their dice sorted: pgx keeps the order
it rolled, the adapter (low, high), the same position.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import envs
from envs import chance_games
from mcts_jax import evaluators

NAMES = envs.CHANCE_GAMES
# Random games: B games of PLIES plies (2048's random games end after 50-250
# moves, backgammon's after 90-700 plies; finished games keep stepping).
WALK = {"2048": (8, 260), "backgammon": (8, 320)}


@dataclasses.dataclass(frozen=True)
class Constant:
    """Uniform priors and a constant value (so terminal masking shows)."""

    value: float = 0.5

    def __call__(self, params, rng_key, game, states):
        batch = states.current_player.shape[0]
        return (jnp.zeros((batch, game.num_actions)),
                jnp.full((batch,), self.value, jnp.float32))


def canonical(states):
    """States with backgammon's dice order dropped (sorted)."""
    if hasattr(states, "_playable_dice"):
        states = states.replace(_dice=jnp.sort(states._dice, axis=-1),
                                _playable_dice=jnp.sort(states._playable_dice, axis=-1))
    return states


def rows_equal(a, b, lead=2):
    """Bool over the `lead` leading (broadcast) axes: every leaf of a equals
    b's, e.g. a [B, 1, ...] against b [B, C, ...] gives [B, C]."""
    def equal(x, y):
        eq = jnp.asarray(x == y)
        return jnp.all(eq.reshape(eq.shape[:lead] + (-1,)), axis=-1)
    return functools.reduce(jnp.logical_and, jax.tree.leaves(
        jax.tree.map(equal, canonical(a), canonical(b))))


def all_outcomes(game, afterstates):
    """[B, C] next states: every outcome applied to every afterstate."""
    batch, outcomes = afterstates.chance.shape[0], game.num_chance_outcomes
    repeated = jax.tree.map(lambda x: jnp.repeat(x, outcomes, axis=0), afterstates)
    states = game.apply_outcome(repeated, jnp.tile(jnp.arange(outcomes), batch))
    return jax.tree.map(lambda x: x.reshape((batch, outcomes) + x.shape[1:]), states)


def random_actions(key, states):
    return jax.random.categorical(key, jnp.where(states.legal_action_mask, 0.0, -jnp.inf))


def expand(states, axis=1):
    return jax.tree.map(lambda x: jnp.expand_dims(x, axis), states)


@functools.lru_cache(maxsize=None)
def walk(name):
    """One random walk per game, every check recorded per ply: {check: [P, B]}."""
    game = envs.make_chance_game(name)
    batch, plies = WALK[name]
    evaluator = Constant()
    decision_fn = game.decision_recurrent_fn(evaluator)
    chance_fn = game.chance_recurrent_fn(evaluator)

    @jax.jit
    def run(key):
        def body(states, key):
            action_key, step_key, fn_key = jax.random.split(key, 3)
            actions = random_actions(action_key, states)
            following = game.step(states, actions, step_key)
            after = game.afterstate(states, actions)
            probs = game.chance_probabilities(after)
            candidates = all_outcomes(game, after)
            matches = rows_equal(expand(following), candidates) & (probs > 0)
            outcome = jnp.argmax(matches, axis=1).astype(jnp.int32)
            # The recurrent functions on lean embeddings: lean state -> lean
            # afterstate -> lean next state.
            lean = game.lean_state(states)
            mover = states.current_player
            decision, after_embedding = decision_fn(None, fn_key, actions, lean)
            chance, next_embedding = chance_fn(None, fn_key, outcome, after_embedding)
            live = ~game.is_terminal(states)
            reward = game.reward_for(following, mover)
            discount = jnp.where(following.terminated, 0.0,
                                 jnp.where(following.current_player == mover, 1.0, -1.0))
            record = dict(
                live=live,
                chance=after.chance,
                matched=jnp.any(matches, axis=1),
                probability_sum=probs.sum(axis=1),
                point_mass=after.chance | (probs[:, game.spec.no_chance_outcome] == 1.0),
                legal_moves=jnp.where(live, states.legal_action_mask.sum(axis=1), 0),
                lean_after=rows_equal(after_embedding, game.lean_afterstate(after), lead=1),
                lean_step=rows_equal(game.step(game.full_state(lean), actions, step_key),
                                     following, lead=1),
                lean_next=rows_equal(next_embedding, game.lean_state(following), lead=1),
                chance_logits=jnp.all(decision.chance_logits == jnp.log(probs), axis=1),
                # reward + discount * value (0 at terminal) of the next state:
                # pgx's, or (2048, whose end depends on the tile) the sample's.
                afterstate_value=decision.afterstate_value - reward,
                next_value=discount * evaluator.value,
                discount=discount,
                reward=reward,
                chance_discount=chance.discount == discount,
                chance_reward=chance.reward == reward,
                chance_value=chance.value == jnp.where(following.terminated, 0.0,
                                                       evaluator.value),
                invalid=jnp.all(chance.invalid_actions == ~following.legal_action_mask, axis=1),
                logits_shape=jnp.full(live.shape, chance.action_logits.shape[1] == game.num_actions),
            )
            # Go on from the adapter's own next state (backgammon: dice
            # (low, high)), so pgx steps the states a search would hold.
            return game.apply_outcome(after, outcome), record

        init_key, key = jax.random.split(key)
        _, records = jax.lax.scan(body, game.init(init_key, batch), jax.random.split(key, plies))
        return records

    return jax.tree.map(np.asarray, run(jax.random.key(7)))


@pytest.mark.parametrize("name", NAMES)
def test_outcomes_and_frequencies_match_env_step(name):
    """(a) The support and the frequencies of pgx's next states."""
    game = envs.make_chance_game(name)
    batch, samples = 3, 8000

    @jax.jit
    def run(key):
        init_key, play_key, action_key, step_key = jax.random.split(key, 4)

        def play(states, key):  # a few random plies first: varied boards and dice
            a_key, s_key = jax.random.split(key)
            return game.step(states, random_actions(a_key, states), s_key), None

        states, _ = jax.lax.scan(play, game.init(init_key, 16), jax.random.split(play_key, 5))
        actions = random_actions(action_key, states)
        # Two rows with a chance event, one without where the game has such.
        chance = game.afterstate(states, actions).chance
        rows = jnp.concatenate([jnp.argsort(~chance)[:2], jnp.argsort(chance)[:1]])
        states, actions = jax.tree.map(lambda x: x[rows], (states, actions))
        after = game.afterstate(states, actions)
        probs = game.chance_probabilities(after)
        candidates = all_outcomes(game, after)
        repeated = jax.tree.map(lambda x: jnp.repeat(x, samples, axis=0), states)
        following = game.step(repeated, jnp.repeat(actions, samples), step_key)
        following = jax.tree.map(lambda x: x.reshape((batch, samples) + x.shape[1:]), following)
        # [B, samples, C]: which outcome each sample is.
        matches = rows_equal(jax.tree.map(lambda x: x[:, :, None], following),
                             jax.tree.map(lambda x: x[:, None], candidates), lead=3)
        return probs, matches, after.chance

    probs, matches, chance = jax.tree.map(np.asarray, run(jax.random.key(3)))
    assert chance.tolist() == [True, True, name == "2048"]
    support = probs > 0
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    # Every sample is exactly one outcome of the support.
    assert np.all((matches & support[:, None]).sum(axis=2) == 1)
    counts = (matches & support[:, None]).sum(axis=1)
    assert np.all(counts[support] > 0) and np.all(counts[~support] == 0)
    expected = probs * samples
    statistic = np.sum(np.where(support, (counts - expected) ** 2 / np.maximum(expected, 1e-9), 0),
                       axis=1)
    dof = support.sum(axis=1) - 1
    p_values = np.where(dof > 0, jax.scipy.special.gammaincc(np.maximum(dof, 1) / 2,
                                                              statistic / 2), 1.0)
    assert np.all(p_values > 1e-3), (p_values, chance)


@pytest.mark.parametrize("name", NAMES)
def test_afterstate_then_outcome_is_env_step_along_random_games(name):
    """(b) Every transition of random games, every field, and the lean states."""
    game = envs.make_chance_game(name)
    record = walk(name)
    live = record["live"]
    assert np.all(record["matched"]), "a pgx transition that no possible outcome gives"
    np.testing.assert_allclose(record["probability_sum"], 1.0, atol=1e-5)
    assert record["legal_moves"].max() <= game.spec.max_legal_moves
    for check in ("lean_after", "lean_step", "lean_next", "point_mass"):
        assert np.all(record[check]), check
    # The walks reach the ends of games and both kinds of afterstate.
    assert np.any(live) and not np.all(live[-1])
    assert np.any(live & record["chance"])
    if name == "backgammon":
        assert np.any(live & ~record["chance"])   # moves within a turn: no roll
    else:
        assert np.all(record["chance"][live])     # a legal slide always frees a cell


@pytest.mark.parametrize("name", NAMES)
def test_recurrent_functions_give_pgx_rewards_discounts_and_masks(name):
    game = envs.make_chance_game(name)
    record = walk(name)
    live = record["live"]
    for check in ("chance_logits", "chance_discount", "chance_reward", "chance_value",
                  "invalid", "logits_shape"):
        assert np.all(record[check]), check
    after_value, next_value = record["afterstate_value"], record["next_value"]
    if name == "backgammon":   # the end and the next player are known at the afterstate
        np.testing.assert_array_equal(after_value, next_value)
    else:
        assert np.all(np.isin(after_value, (0.0, 0.5))) and np.any(after_value[live] == 0.5)
    discounts = set(np.unique(record["discount"][live]).tolist())
    assert discounts == ({-1.0, 0.0, 1.0} if name == "backgammon" else {0.0, 1.0})
    rewards = record["reward"][live]
    if name == "2048":
        assert rewards.min() >= 0 and rewards.max() >= 8  # merges score points
    else:
        assert set(np.unique(rewards).tolist()) <= {0.0, 1.0, 2.0, 3.0}  # the winner moves
        assert rewards.max() >= 1


def test_playout_values_are_score_sums_on_2048_and_pgx_points_on_backgammon():
    for name, low, high in (("2048", 0.0, np.inf), ("backgammon", -3.0, 3.0)):
        game = envs.make_chance_game(name)
        evaluator = evaluators.RandomPlayouts(num_playouts=2, max_length=game.longest_game)
        states = game.init(jax.random.key(1), 4)
        root, invalid = game.root(None, jax.random.key(2), states, evaluator)
        value = np.asarray(root.value)
        assert np.all((value >= low) & (value <= high)), value
        np.testing.assert_array_equal(invalid, ~states.legal_action_mask)
        if name == "2048":
            assert value.min() > 1.0  # hundreds of points
        assert root.prior_logits.shape == (4, game.num_actions)


def test_stochastic_muzero_policy_runs_on_backgammon():
    """The functions fit mctx's stochastic_muzero_policy (dice and no-roll nodes)."""
    game = envs.make_chance_game("backgammon")
    evaluator = evaluators.Uniform()
    states = game.init(jax.random.key(0), 2)
    root, invalid = game.root(None, jax.random.key(1), states, evaluator)

    @jax.jit
    def search(key):
        return mctx.stochastic_muzero_policy(
            None, key, root, game.decision_recurrent_fn(evaluator),
            game.chance_recurrent_fn(evaluator), num_simulations=12,
            invalid_actions=invalid)

    output = search(jax.random.key(2))
    assert np.all(np.asarray(states.legal_action_mask)[np.arange(2), np.asarray(output.action)])


def test_registry_names_and_errors():
    assert set(envs.CHANCE_GAMES) == {"2048", "backgammon"}
    assert not set(envs.CHANCE_GAMES) & set(envs.GAMES)
    game = envs.make_chance_game("2048")
    assert envs.make_chance_game("2048") is game and isinstance(game, envs.ChanceGame)
    assert (game.num_actions, game.num_chance_outcomes, game.num_players) == (4, 32, 1)
    backgammon = envs.make_chance_game("backgammon")
    assert (backgammon.num_actions, backgammon.num_chance_outcomes) == (156, 22)
    assert backgammon.spec.no_chance_outcome == chance_games.NO_ROLL == 21
    ev = evaluators.RandomPlayouts()
    assert game.decision_recurrent_fn(ev) is game.decision_recurrent_fn(evaluators.RandomPlayouts())
    assert game.chance_recurrent_fn(ev) is not backgammon.chance_recurrent_fn(ev)
    for name in envs.CHANCE_GAMES:
        assert envs.make(name) is envs.make_chance_game(name)
    with pytest.raises(ValueError, match="unknown stochastic game 'dice'; known stochastic "
                                         "games: 2048, backgammon"):
        envs.make_chance_game("dice")
    with pytest.raises(ValueError, match="'chess' is deterministic.*envs.make"):
        envs.make_chance_game("chess")


def test_lean_embeddings_are_small():
    game, backgammon = envs.make_chance_game("2048"), envs.make_chance_game("backgammon")
    assert (game.lean_bytes(), game.lean_afterstate_bytes()) == (27, 28)
    assert (backgammon.lean_bytes(), backgammon.lean_afterstate_bytes()) == (51, 52)
    assert game.full_bytes() > 500 and backgammon.full_bytes() > 400


def test_one_player_discount_reaches_the_search_and_refuses_two_players():
    """envs.make("2048", discount=0.9): the same object for the same
    arguments; every live chance edge has discount 0.9 (0 at the end), and a
    decision's afterstate value is reward + 0.9 * the next state's value."""
    game = envs.make("2048", discount=0.9)
    assert game is envs.make("2048", discount=0.9) and game.discount == 0.9
    assert envs.make("2048").discount == 1.0 and envs.make("2048") is envs.make("2048", 1.0)
    evaluator = Constant()
    states = game.init(jax.random.key(0), 16)
    actions = random_actions(jax.random.key(1), states)
    after = game.afterstate(states, actions)
    outcome = jax.random.categorical(jax.random.key(2),
                                     jnp.log(game.chance_probabilities(after))).astype(jnp.int32)
    chance, _ = game.chance_recurrent_fn(evaluator)(None, jax.random.key(3), outcome,
                                                     game.lean_afterstate(after))
    np.testing.assert_allclose(np.asarray(chance.discount), 0.9, rtol=1e-6)  # no game ends yet
    decision, _ = game.decision_recurrent_fn(evaluator)(None, jax.random.key(4), actions,
                                                        game.lean_state(states))
    reward = game.reward_for(game.apply_outcome(after, outcome), states.current_player)
    np.testing.assert_allclose(np.asarray(decision.afterstate_value - reward), 0.9 * 0.5,
                               rtol=1e-6)
    with pytest.raises(ValueError, match="one-player"):
        envs.make("backgammon", discount=0.9)
    with pytest.raises(ValueError, match="one-player"):
        envs.make("tic_tac_toe", discount=0.99)
    for bad in (0.0, 1.5, True, "0.9"):
        with pytest.raises(ValueError, match=r"discount must be a number in \(0, 1\]"):
            envs.make("2048", discount=bad)
