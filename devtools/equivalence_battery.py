"""The behaviour battery of `devtools.equivalence`: one library's outputs, saved.

    python devtools/equivalence_battery.py LIBRARY_DIR OUT.npz [CASE_SUBSTRING ...]

Run as a script (never imported by the benchmarks), so that `mcts_jax` and
`envs` come from LIBRARY_DIR: a checkout of any commit. It runs seeded
searches through the public functions whose keywords every version since the
redesign's base accepts (`uct_policy`, `alphazero_policy`, `gumbel_policy`,
`muzero_policy`, `gumbel_muzero_policy`, `stochastic_muzero_policy`,
`search`), over every option whose code differs (the solver, expand-all, the
compact layout, several paths per step with both steerings, `max_depth`,
replayed embeddings, unbounded values, mctx's semantics, tree reuse, graph search), and
searches on pgx games through `envs` (random playouts, the chance games
with chance nodes). Every output array (`action`, `action_weights`, each
tree field, `tree.summary()`) is saved as `<case>/s<seed>/<key path>`; a case
that raises saves `<case>/s<seed>/error` = the exception's type name, so
errors are compared too.
"""

import os
import sys
import time
import traceback

if len(sys.argv) < 3:
    sys.exit(__doc__)
LIBRARY = os.path.realpath(sys.argv[1])
OUT = os.path.realpath(sys.argv[2])
ONLY = sys.argv[3:]
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, LIBRARY)
os.chdir(LIBRARY)

import functools  # noqa: E402
import re  # noqa: E402
import warnings  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mcts_jax  # noqa: E402
from mcts_jax.synthetic import HashedProblem, random_root_codes  # noqa: E402
from mcts_jax.chance_trees import ChanceTree  # noqa: E402
from mcts_jax import evaluators  # noqa: E402

import envs  # noqa: E402

assert os.path.realpath(mcts_jax.__file__).startswith(LIBRARY + os.sep), (
    f"mcts_jax came from {mcts_jax.__file__}, not from {LIBRARY}")
warnings.simplefilter("ignore", DeprecationWarning)

B = 4
SEEDS = (0, 1)


# ---- problems ------------------------------------------------------------------------------

def two_player(A, illegal=2, terminal=3):
    """Two-player hashed game (discount -1), some illegal actions, terminals (discount 0)."""
    return HashedProblem(num_actions=A, illegal_eighths=illegal, terminal_sixteenths=terminal,
                         discount=-1.0)


def single_player(A):
    """One-player hashed problem (discount 1), no illegal actions, a few terminals."""
    return HashedProblem(num_actions=A, illegal_eighths=0, terminal_sixteenths=1, discount=1.0)


def hashed_inputs(problem, seed):
    codes = random_root_codes(1000 + seed, B)
    root, illegal = problem.root(codes)
    if not problem.illegal_eighths:
        # still some illegal root actions: the last action of rows 0 and 2
        mask = np.zeros((B, problem.num_actions), bool)
        mask[[0, 2], -1] = True
        illegal = jnp.asarray(mask)
    return root, illegal


def chance_inputs(tree, seed, with_mask):
    codes = random_root_codes(2000 + seed, B)
    root = tree.root(codes)
    if not with_mask:
        return root, None
    mask = np.zeros((B, tree.branching), bool)
    mask[1, 0] = True
    mask[3, -1] = True
    return root, jnp.asarray(mask)


def key_of(seed):
    return jax.random.PRNGKey(seed)


# ---- runners -------------------------------------------------------------------------------

def policy_case(fn_name, problem, sims, reuse=False, int_mask=False, **kw):
    """A policy on a HashedProblem; reuse: a second search continuing get_subtree."""
    def run(seed):
        fn = getattr(mcts_jax, fn_name)
        root, illegal = hashed_inputs(problem, seed)
        mask = illegal.astype(jnp.float32) if int_mask else illegal
        out = fn(None, key_of(seed), root, problem.recurrent_fn, sims, invalid_actions=mask,
                 **kw)
        result = {"": out}
        if reuse:
            sub = mcts_jax.get_subtree(out.search_tree, out.action)
            root2, illegal2 = hashed_inputs(problem, seed + 100)
            # the next root: the child's embedding where kept; fresh rows elsewhere
            out2 = fn(None, key_of(seed + 7), root2, problem.recurrent_fn, sims,
                      invalid_actions=illegal2.astype(jnp.float32) if int_mask else illegal2,
                      tree=sub, **kw)
            result["subtree"] = sub
            result["second"] = out2
        return result
    return run


def search_case(problem, sims, root_rule, interior_rule=None, **kw):
    def run(seed):
        root, illegal = hashed_inputs(problem, seed)
        tree = mcts_jax.search(None, key_of(seed), root, problem.recurrent_fn, sims,
                               root_rule=root_rule, interior_rule=interior_rule,
                               invalid_actions=illegal, **kw)
        return {"tree": tree}
    return run


def stochastic_case(tree, sims, with_mask=True, reuse=False, **kw):
    def run(seed):
        root, mask = chance_inputs(tree, seed, with_mask)
        out = mcts_jax.stochastic_muzero_policy(
            None, key_of(seed), root, tree.decision_recurrent_fn, tree.chance_recurrent_fn,
            sims, invalid_actions=mask, **kw)
        result = {"": out}
        if reuse:
            # each row's likeliest outcome below the move played (an outcome of
            # probability 0 is refused since issue 33)
            ours_tree = ours(out).search_tree
            rows = jnp.arange(B)
            afterstate = jnp.maximum(ours_tree.children[rows, 0, out.action].astype(jnp.int32), 0)
            outcome_priors = ours_tree.priors[rows, afterstate, tree.branching:]
            outcome = jnp.argmax(outcome_priors, axis=-1).astype(jnp.int32)
            sub = mcts_jax.stochastic_subtree(out.search_tree, out.action, outcome)
            root2, mask2 = chance_inputs(tree, seed + 100, with_mask)
            out2 = mcts_jax.stochastic_muzero_policy(
                None, key_of(seed + 7), root2, tree.decision_recurrent_fn,
                tree.chance_recurrent_fn, sims, invalid_actions=mask2, tree=sub, **kw)
            result["subtree"] = sub
            result["second"] = out2
        return result
    return run



def game_case(name, sims, plies, **kw):
    """alphazero_policy on a pgx game after `plies` random moves, leaves
    valued by random playouts (envs' adapters: init, step, root, recurrent_fn)."""
    game = envs.make(name)
    playouts = evaluators.RandomPlayouts(num_playouts=2, max_length=16)
    recurrent_fn = game.recurrent_fn(playouts)  # one object: both seeds compile once

    def run(seed):
        key = key_of(seed)
        states = game.init(key, 2)
        for ply in range(plies):
            key, pick = jax.random.split(key)
            logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
            states = game.step(states, jax.random.categorical(pick, logits))
        root, invalid = game.root(None, jax.random.fold_in(key, 1), states, playouts)
        out = mcts_jax.alphazero_policy(None, jax.random.fold_in(key, 2), root,
                                        recurrent_fn, sims,
                                        invalid_actions=invalid, **kw)
        return {"": out}
    return run


def chance_game_case(name, sims, **kw):
    """stochastic_muzero_policy on a pgx chance game (envs.chance_games)."""
    game = envs.make_chance_game(name)
    playouts = evaluators.RandomPlayouts(num_playouts=2, max_length=16)
    decision_fn, chance_fn = (game.decision_recurrent_fn(playouts),
                              game.chance_recurrent_fn(playouts))

    def run(seed):
        states = game.init(key_of(seed), 2)
        root, invalid = game.root(None, key_of(seed + 1), states, playouts)
        out = mcts_jax.stochastic_muzero_policy(
            None, key_of(seed + 2), root, decision_fn, chance_fn, sims, invalid_actions=invalid,
            dirichlet_fraction=0.0, temperature=0.0, stop_at_terminal=True, **kw)
        return {"": out}
    return run


# ---- the cases -----------------------------------------------------------------------------

P5, P6, P7, P8, P9 = (two_player(a) for a in (5, 6, 7, 8, 9))
T6 = two_player(6, illegal=1, terminal=7)   # many terminals: the solver proves things
S6 = single_player(6)
C1 = ChanceTree(depth=3, branching=4, outcomes=3, informed=True)
C2 = ChanceTree(depth=3, branching=3, outcomes=4, two_player=False, distinct_afterstate=True,
                informed=True)

puct = functools.partial(mcts_jax.puct_scores, pb_c_init=1.5)
uct = functools.partial(mcts_jax.uct_scores, uct_c=1.0)
minmax = functools.partial(mcts_jax.qtransform_by_min_max, min_value=-1.0, max_value=1.0)
puct_minmax = functools.partial(mcts_jax.puct_scores, qtransform=minmax)

CASES = {
    # ---- uct_policy
    "uct_default": policy_case("uct_policy", P5, 16),
    "uct_solver": policy_case("uct_policy", T6, 32, solver=True),
    "uct_expand_all_solver_compact": policy_case("uct_policy", T6, 16, expand_all=True,
                                                 solver=True, max_children=4),
    "uct_compact": policy_case("uct_policy", P7, 24, max_children=3),
    "uct_p2_unobserved": policy_case("uct_policy", P6, 24, simulations_per_step=2),
    "uct_p4_virtual_loss": policy_case("uct_policy", P6, 24, simulations_per_step=4,
                                       steering="virtual_loss"),
    "uct_max_depth_sampled": policy_case("uct_policy", P5, 20, max_depth=2,
                                         final_action="sampled", temperature=0.5),
    "uct_replay": policy_case("uct_policy", P6, 24, replay_embeddings=True, max_depth=6),
    "uct_unbounded_highest_value": policy_case("uct_policy", S6, 24, value_range=None,
                                               final_action="highest_value", uct_c=2.0),
    "uct_too_small_error": policy_case("uct_policy", P6, 24, max_nodes=10),
    "uct_full_tree_reuse": policy_case("uct_policy", P6, 24, max_nodes=25, reuse=True),
    # ---- alphazero_policy
    "az_default": policy_case("alphazero_policy", P6, 24),
    "az_expand_all_solver": policy_case("alphazero_policy", T6, 16, expand_all=True,
                                        solver=True),
    "az_compact": policy_case("alphazero_policy", P8, 24, max_children=4),
    "az_p4_virtual_loss": policy_case("alphazero_policy", P6, 32, simulations_per_step=4,
                                      steering="virtual_loss"),
    "az_p4_unobserved_solver": policy_case("alphazero_policy", T6, 32, simulations_per_step=4,
                                           solver=True),
    "az_p2_virtual_loss_compact_replay": policy_case(
        "alphazero_policy", P7, 24, simulations_per_step=2, steering="virtual_loss",
        max_children=4, replay_embeddings=True, max_depth=5),
    "az_q_raw_temperature": policy_case("alphazero_policy", P6, 20,
                                        qtransform=mcts_jax.qtransform_raw, temperature=0.25),
    "az_q_minmax_greedy": policy_case("alphazero_policy", P6, 20, qtransform=minmax,
                                      dirichlet_fraction=0.0, final_action="most_visited"),
    "az_unbounded": policy_case("alphazero_policy", S6, 24, value_range=None,
                                pb_c_init=2.0, dirichlet_alpha=0.5),
    "az_reuse_compact_solver": policy_case("alphazero_policy", T6, 20, reuse=True,
                                           max_children=4, solver=True),
    # ---- gumbel_policy
    "gumbel_default": policy_case("gumbel_policy", P8, 32, max_num_considered_actions=4),
    "gumbel_solver": policy_case("gumbel_policy", T6, 32, solver=True),
    "gumbel_compact": policy_case("gumbel_policy", P8, 24, max_children=5),
    "gumbel_p2_unobserved": policy_case("gumbel_policy", P7, 24, simulations_per_step=2),
    "gumbel_p4_virtual_loss": policy_case("gumbel_policy", P7, 32, simulations_per_step=4,
                                          steering="virtual_loss"),
    "gumbel_replay_unbounded": policy_case("gumbel_policy", S6, 24, replay_embeddings=True,
                                           value_range=None),
    "gumbel_mctx_semantics_depth": policy_case(
        "gumbel_policy", P6, 24, stop_at_terminal=False, node_per_simulation=True,
        gumbel_scale=0.5, max_depth=3, value_scale=0.2, maxvisit_init=20.0),
    "gumbel_reuse": policy_case("gumbel_policy", P6, 20, reuse=True),
    # ---- muzero_policy (mctx signature)
    "muzero_default_float_mask": policy_case("muzero_policy", P7, 24, int_mask=True),
    "muzero_stop_at_terminal": policy_case("muzero_policy", T6, 24, stop_at_terminal=True),
    "muzero_compact": policy_case("muzero_policy", P8, 24, max_children=4),
    "muzero_p2_unobserved": policy_case("muzero_policy", P6, 24, simulations_per_step=2),
    "muzero_p4_virtual_loss": policy_case("muzero_policy", P6, 32, simulations_per_step=4,
                                          steering="virtual_loss"),
    "muzero_our_numbering": policy_case("muzero_policy", P6, 24, node_per_simulation=False,
                                        max_nodes=40),
    "muzero_minmax_depth": policy_case("muzero_policy", P6, 24, qtransform=minmax,
                                       temperature=0.5, max_depth=3),
    "muzero_reuse": policy_case("muzero_policy", P6, 20, reuse=True),
    # ---- gumbel_muzero_policy (mctx signature)
    "gmz_default": policy_case("gumbel_muzero_policy", P9, 40),
    "gmz_considered_compact": policy_case("gumbel_muzero_policy", P9, 24,
                                          max_num_considered_actions=4, max_children=5),
    "gmz_p2_virtual_loss": policy_case("gumbel_muzero_policy", P7, 24, simulations_per_step=2,
                                       steering="virtual_loss"),
    "gmz_p4_unobserved": policy_case("gumbel_muzero_policy", P7, 32, simulations_per_step=4),
    "gmz_stop_at_terminal": policy_case("gumbel_muzero_policy", T6, 24,
                                        stop_at_terminal=True),
    "gmz_full_tree_reuse": policy_case("gumbel_muzero_policy", P6, 16, max_nodes=17,
                                       reuse=True),
    # ---- stochastic_muzero_policy
    "stoch_default": stochastic_case(C1, 32),
    "stoch_solver": stochastic_case(C1, 40, stop_at_terminal=True, solver=True,
                                    dirichlet_fraction=0.0, temperature=0.0),
    "stoch_compact": stochastic_case(C1, 32, max_children=4),
    "stoch_p2_unobserved": stochastic_case(C1, 32, simulations_per_step=2),
    "stoch_p4_virtual_loss": stochastic_case(C1, 32, simulations_per_step=4,
                                             steering="virtual_loss"),
    "stoch_replay_no_mask": stochastic_case(C1, 32, with_mask=False, replay_embeddings=True),
    "stoch_distinct_afterstate_depth": stochastic_case(C2, 32, max_depth=3),
    "stoch_unbounded_our_numbering": stochastic_case(C2, 32, value_range=None,
                                                     node_per_simulation=False),
    "stoch_reuse": stochastic_case(C1, 24, reuse=True),
    # ---- search (composable)
    "search_puct_root_uct_below": search_case(P6, 24, puct, uct),
    "search_solver_expand_all": search_case(T6, 16, uct, solver=True, expand_all=True),
    "search_p4_vl_compact_minmax": search_case(P7, 32, puct_minmax, simulations_per_step=4,
                                               steering="virtual_loss", max_children=4),
    "search_mctx_semantics": search_case(P6, 24, puct, stop_at_terminal=False,
                                         node_per_simulation=True),
    "search_replay_p2": search_case(P6, 24, uct, replay_embeddings=True,
                                    simulations_per_step=2),
    # ---- pgx games through envs
    "game_tic_tac_toe_solver": game_case("tic_tac_toe", 32, 3, solver=True),
    "game_connect_four": game_case("connect_four", 16, 6),
    "game_othello_compact": game_case("othello", 16, 8, max_children=12),
    "game_chess_compact": game_case("chess", 8, 4, max_children=218),
    "game_animal_shogi_p2": game_case("animal_shogi", 16, 4, simulations_per_step=2),
    "game_hex": game_case("hex", 8, 5),
    "game_2048": chance_game_case("2048", 16, value_range=None),
    "game_backgammon": chance_game_case("backgammon", 8),
    # Graph search (transpositions=True): positions shared between move
    # orders, P paths, expand_all with the solver, the compact layout, a
    # graph smaller than the simulations, reuse, repetitions.
    "graph_game_tic_tac_toe": game_case("tic_tac_toe", 48, 2, transpositions=True),
    "graph_game_tic_tac_toe_p4_vl": game_case("tic_tac_toe", 48, 2, transpositions=True,
                                              simulations_per_step=4,
                                              steering="virtual_loss"),
    "graph_game_tic_tac_toe_expand_all_solver": game_case("tic_tac_toe", 24, 3,
                                                          transpositions=True,
                                                          expand_all=True, solver=True),
    "graph_game_connect_four_compact_p2": game_case("connect_four", 32, 4, transpositions=True,
                                                    max_children=4, simulations_per_step=2),
    "graph_game_animal_shogi_repetition": game_case("animal_shogi", 48, 6, transpositions=True,
                                                    repetition_value=-0.5),
    "graph_uct_small_capacity": policy_case("uct_policy", P6, 24, transpositions=True,
                                            max_nodes=12),
    "graph_az_reuse_solver": policy_case("alphazero_policy", T6, 24, transpositions=True,
                                         reuse=True, solver=True),
    "graph_gumbel_p2": policy_case("gumbel_policy", P6, 24, transpositions=True,
                                   simulations_per_step=2),
    "graph_search_p4_unobserved": search_case(P6, 24, puct, transpositions=True,
                                              simulations_per_step=4),
}


# ---- flattening ----------------------------------------------------------------------------

def ours(obj):
    """An output with our tree: the mctx-signature functions answer with
    mctx's view (`MctxTree`) since issue 33; its source tree is ours."""
    tree = getattr(obj, "search_tree", obj)
    source = getattr(tree, "source_tree", None)
    if source is None:
        return obj
    return obj.replace(search_tree=source) if hasattr(obj, "search_tree") else source


def flatten(prefix, obj, into):
    obj = ours(obj)
    leaves, _ = jax.tree_util.tree_flatten_with_path(obj)
    for path, leaf in leaves:
        # A graph's arrays and the compact layout's slot ids by their names,
        # whether the tree holds them as fields (graph before stop 77, slot
        # ids before stop 81, kept prior logits before stop 83) or their
        # plug-in's record holds them.
        name = prefix + re.sub(r"\.plugin_records\[\d+\](?=\.(edge_visits|position_keys|"
                                r"transposition_table|children_actions|prior_logits)\b)", "",
                                jax.tree_util.keystr(path))
        assert name not in into, name
        into[name] = np.asarray(leaf)
    tree = getattr(obj, "search_tree", obj)
    if isinstance(tree, mcts_jax.Tree):
        into[prefix + ".static"] = np.asarray(
            [tree.num_actions, int(tree.replay_embeddings), tree.num_chance_outcomes,
             tree.max_nodes, -1 if tree.max_children is None else tree.max_children]
            + ([np.nan, np.nan] if tree.value_range is None else list(tree.value_range)),
            np.float64)
        summary = tree.summary()
        for path, leaf in jax.tree_util.tree_flatten_with_path(summary)[0]:
            into[prefix + ".summary" + jax.tree_util.keystr(path)] = np.asarray(leaf)


def main():
    arrays = {}
    errors = 0
    start = time.time()
    for name, run in CASES.items():
        if ONLY and not any(s in name for s in ONLY):
            continue
        t0 = time.time()
        for seed in SEEDS:
            prefix = f"{name}/s{seed}"
            try:
                result = run(seed)
                for part, obj in result.items():
                    flatten(prefix + ("/" + part if part else "/"), obj, arrays)
            except Exception as exc:  # recorded, compared like any output
                errors += 1
                arrays[prefix + "/error"] = np.asarray(type(exc).__name__)
                print(f"  {prefix}: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
                if os.environ.get("BITCHECK_TRACE"):
                    traceback.print_exc()
        print(f"{name}: {time.time() - t0:.1f}s", flush=True)
    arrays = {k: arrays[k] for k in sorted(arrays)}
    np.savez(OUT, **arrays)
    cases = len({k.split("/")[0] for k in arrays})
    print(f"saved {len(arrays)} arrays from {cases} cases x {len(SEEDS)} seeds "
          f"({errors} errors) to {OUT} in {time.time() - start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
