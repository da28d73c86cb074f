"""Graph search (`transpositions=True`) against tree search: proofs, strength, nodes, speed, memory.

    python -m experiments.graph_search --section proofs
    python -m experiments.graph_search --section strength --run-dir runs/connect_four_cpu
    python -m experiments.graph_search --section nodes
    python -m experiments.graph_search --section speed
    python -m experiments.graph_search --section memory
    python -m experiments.graph_search --quick ...   # fewer positions, rounds and budgets

Sections (each saves results/graph_search_<section>-<device>.json):

- proofs: UCT with one random playout per leaf and the MCTS-solver, as a
  graph, on every non-terminal tic-tac-toe position reachable from the
  empty board (4,520, one row each, budgets by empty squares) and on the
  empty board with one node slot per reachable position (5,478). Every
  proven node of every graph is checked against exact play
  (`envs.perfect_play`): "wrong" counts the proofs that differ.
- strength: Connect Four move accuracy on the solver-labelled random-play
  positions (`envs.connect_four_solver`, bitbully), graph against tree at
  equal simulations, for UCT with random playouts and for a trained agent's
  network (`--run-dir`) searched by its own policy or `--agent-policies`.
- nodes: nodes per search (unique positions in a graph) at equal
  simulations, PUCT with uniform priors and one random playout per leaf
  (chess: uniform priors, value 0, compact K = 218), from positions after
  random opening plies.
- speed: simulations per second, graph against tree, interleaved rounds in
  one process (median and range of the per-round ratio graph / tree): the
  same policy, evaluator, positions and key on both sides.
- memory: bytes per node and per search of each layout with and without
  the graph's arrays (`PgxGame.tree_memory`).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Dict, List

import jax
import jax.numpy as jnp
import numpy as np

import envs
import mcts_jax
from benchmarks import harness
from envs import perfect_play
from mcts_jax import evaluators

PLAYOUTS = evaluators.RandomPlayouts(num_playouts=1)


def graph_options(game) -> Dict[str, Any]:
    return dict(transpositions=True, position_key=game.position_key)


def random_positions(game, count: int, plies: int, seed: int):
    """`count` states after up to `plies` random plies (never terminal)."""
    states = game.init(jax.random.key(seed), count)
    keys = jax.random.split(jax.random.key(seed + 1), plies)
    for key in keys:
        legal = game.legal_actions(states)
        action = jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf))
        stepped = game.step(states, action)
        keep = ~game.is_terminal(stepped)
        states = jax.tree.map(lambda new, old: jnp.where(
            keep.reshape((-1,) + (1,) * (new.ndim - 1)), new, old), stepped, states)
    return states


# ---- proofs ---------------------------------------------------------------------------------

def exact_move_values(game, states) -> np.ndarray:
    """[B, 9] exact value of each legal move of tic-tac-toe `states` for the
    mover (NaN where illegal)."""
    out = np.full(states.legal_action_mask.shape, np.nan)
    mover = states.current_player
    for action in range(9):
        after = game.step(states, jnp.full(mover.shape, action, jnp.int32))
        terminal = np.asarray(game.is_terminal(after))
        reward = np.asarray(game.reward_for(after, mover))
        value = np.where(terminal, reward, -np.asarray(perfect_play.value(after), np.float64))
        out[:, action] = np.where(np.asarray(states.legal_action_mask[:, action]), value, np.nan)
    return out


def check_proofs(game, tree) -> Dict[str, int]:
    """Every solved node of every row against exact play: (proven, wrong)."""
    tree = jax.device_get(tree)
    proven = wrong = 0
    for row in range(tree.batch_size):
        n = int(tree.num_nodes[row])
        solved = np.flatnonzero(np.asarray(tree.solved[row, :n]) & ~np.asarray(
            tree.is_terminal[row, :n]))
        states = jax.tree.map(lambda x: x[row, solved], tree.embeddings)
        exact = np.asarray(perfect_play.value(game.full_state(states)), np.float64)
        got = np.asarray(tree.solved_values[row, solved], np.float64)
        proven += len(solved)
        wrong += int(np.sum(np.abs(got - exact) > 1e-6))
    return dict(proven=proven, wrong=wrong)


def section_proofs(args) -> None:
    game = envs.make("tic_tac_toe")
    all_states = perfect_play.reachable_states()
    boards = perfect_play.reachable_positions()["boards"]
    empties = np.sum(boards == 0, axis=1)
    # Simulations and node slots by empty squares: enough to prove every row.
    groups = [(range(0, 5), 200, 201), (range(5, 7), 2000, 1200), (range(7, 8), 6000, 3000),
              (range(8, 10), 30000, 5478)]
    if args.quick:
        groups = [(range(0, 5), 200, 201), (range(5, 6), 1000, 600)]
    rows = []
    for empty_range, simulations, max_nodes in groups:
        index = np.flatnonzero(np.isin(empties, list(empty_range)))
        states = jax.tree.map(lambda x: x[index], all_states)
        root, invalid = game.root(None, jax.random.key(0), states, PLAYOUTS)
        tick = time.perf_counter()
        out = mcts_jax.uct_policy(None, jax.random.key(1), root, game.recurrent_fn(PLAYOUTS),
                                  simulations, invalid_actions=invalid, solver=True,
                                  max_nodes=max_nodes, **graph_options(game))
        summary = jax.device_get(out.search_tree.summary())
        seconds = time.perf_counter() - tick
        exact_root = np.asarray(perfect_play.value(states), np.float64)
        exact_moves = exact_move_values(game, states)
        proven_moves = np.asarray(summary.proven)
        wrong_moves = int(np.sum(proven_moves & (np.abs(
            np.asarray(summary.proven_qvalues) - np.nan_to_num(exact_moves)) > 1e-6)))
        nodes = check_proofs(game, out.search_tree)
        rows.append(dict(
            empty_squares=f"{min(empty_range)}-{max(empty_range)}", positions=len(index),
            simulations=simulations, max_nodes=max_nodes,
            root_proven=int(summary.root_proven.sum()),
            root_wrong=int(np.sum(summary.root_proven & (np.abs(
                summary.root_proven_value - exact_root) > 1e-6))),
            move_proofs=int(proven_moves.sum()), move_wrong=wrong_moves,
            node_proofs=nodes["proven"], node_wrong=nodes["wrong"],
            nodes_max=int(np.max(out.search_tree.num_nodes)),
            nodes_mean=round(float(np.mean(out.search_tree.num_nodes)), 1),
            seconds=round(seconds, 1)))
        print(rows[-1], flush=True)
    settings = dict(harness.provenance(seed=None), game="tic_tac_toe",
                    evaluator="RandomPlayouts(num_playouts=1)", keys="root key(0), search key(1)",
                    positions="every non-terminal position reachable from the empty board")
    harness.report("graph_search_proofs" + ("_quick" if args.quick else ""),
                   "UCT + MCTS-solver as a graph on every reachable tic-tac-toe position",
                   list(rows[0]), rows, settings)


# ---- strength ---------------------------------------------------------------------------------

def section_strength(args) -> None:
    from envs import connect_four_solver as solver
    from experiments.connect_four_positions import SETS
    from training import arena
    from training import checkpoint as checkpoint_lib
    from training.agent import Agent

    game = envs.make("connect_four")
    positions = solver.load_positions(SETS["random_play"], limit=args.positions)
    states = solver.states_from_moves(positions["moves"], game)
    players = [("UCT, 1 random playout per leaf", None, PLAYOUTS, "uct")]
    agent = None
    if args.run_dir:
        agent = Agent.load(args.run_dir)
        for policy in args.agent_policies or [agent.config.policy]:
            players.append((f"agent ({policy})", agent.variables, agent.model.evaluator,
                            policy))
    rows = []
    for label, variables, evaluator, policy in players:
        for simulations in args.simulations:
            for graph in (False, True):
                player = arena.SearchPlayer(
                    evaluator, policy, simulations, greedy=True,
                    options=tuple(graph_options(game).items()) if graph else ())
                tick = time.perf_counter()
                out = jax.jit(player.search, static_argnums=2)(
                    variables, jax.random.key(simulations), game, states)
                chosen = np.asarray(out.action)
                seconds = time.perf_counter() - tick
                accuracy = solver.move_accuracy(chosen, positions)
                rows.append(dict(player=label, search="graph" if graph else "tree",
                                 simulations=simulations,
                                 nodes_mean=round(float(np.mean(out.search_tree.num_nodes)), 1),
                                 seconds=round(seconds, 1),
                                 **{k: round(v, 4) for k, v in accuracy.items()}))
                print(rows[-1], flush=True)
    settings = dict(harness.provenance(seed=None), positions=len(positions["moves"]),
                    position_set="random_play", keys="search: key(simulations)",
                    run_dir=args.run_dir, agent_policies=args.agent_policies,
                    agent_iteration=None if agent is None else agent.iteration,
                    run_sessions=None if agent is None else checkpoint_lib.read_metrics(
                        os.path.join(args.run_dir, "sessions.jsonl")))
    harness.report("graph_search_strength" + ("_quick" if args.quick else ""),
                   "Connect Four move accuracy (bitbully), graph against tree",
                   ["player", "search", "simulations", "all", "opening", "middle", "late",
                    "hard", "nodes_mean", "seconds"], rows, settings)


# ---- nodes ----------------------------------------------------------------------------------

NODE_GAMES = {  # game: (evaluator, policy settings, random opening plies)
    "connect_four": (PLAYOUTS, {}, 4),
    "othello": (PLAYOUTS, {}, 8),
    "chess": (evaluators.Uniform(), dict(max_children=218), 6),
}


def section_nodes(args) -> None:
    rows = []
    for name, (evaluator, settings, plies) in NODE_GAMES.items():
        game = envs.make(name)
        states = random_positions(game, args.batch, plies, seed=3)
        root, invalid = game.root(None, jax.random.key(0), states, evaluator)
        for simulations in args.simulations:
            counts = {}
            for graph in (False, True):
                out = mcts_jax.alphazero_policy(
                    None, jax.random.key(1), root, game.recurrent_fn(evaluator), simulations,
                    invalid_actions=invalid, dirichlet_fraction=0.0, **settings,
                    **(graph_options(game) if graph else {}))
                counts[graph] = np.asarray(out.search_tree.num_nodes)
            rows.append(dict(game=name, simulations=simulations, positions=args.batch,
                             tree_nodes=round(float(counts[False].mean()), 1),
                             graph_nodes=round(float(counts[True].mean()), 1),
                             graph_share=round(float((counts[True] / counts[False]).mean()), 3)))
            print(rows[-1], flush=True)
    settings = dict(harness.provenance(seed=3), policy="alphazero_policy, no root noise",
                    evaluators={k: repr(v[0]) for k, v in NODE_GAMES.items()},
                    opening_plies={k: v[2] for k, v in NODE_GAMES.items()})
    harness.report("graph_search_nodes" + ("_quick" if args.quick else ""),
                   "Nodes per search at equal simulations (graph: unique positions)",
                   list(rows[0]), rows, settings)


# ---- speed ----------------------------------------------------------------------------------

SPEED_CELLS = {  # game: (evaluator, policy settings, B, simulations, opening plies)
    "tic_tac_toe": (PLAYOUTS, {}, 256, 64, 0),
    "connect_four": (PLAYOUTS, {}, 64, 200, 4),
    "chess": (evaluators.Uniform(), dict(max_children=218), 16, 128, 6),
}


def section_speed(args) -> None:
    rows = []
    rounds = harness.ROUNDS["quick" if args.quick else "full"]
    for name, (evaluator, settings, batch, simulations, plies) in SPEED_CELLS.items():
        game = envs.make(name)
        states = random_positions(game, batch, plies, seed=5)
        root, invalid = game.root(None, jax.random.key(0), states, evaluator)
        recurrent_fn = game.recurrent_fn(evaluator)
        sides = {}
        for label, extra in (("tree", {}), ("graph", graph_options(game))):
            policy = mcts_jax.AlphaZeroPolicy.make(dirichlet_fraction=0.0, **settings, **extra)
            sides[label] = (lambda policy=policy: policy(
                None, jax.random.key(1), root, recurrent_fn, simulations,
                invalid_actions=invalid).action)
        result = harness.interleaved_rounds(sides, rounds, pairs=[("graph", "tree")])
        ratio = result["ratios"]["graph/tree"]
        per_second = {label: batch * simulations / side["median_s"]
                      for label, side in result["sides"].items()}
        rows.append(dict(game=name, B=batch, simulations=simulations,
                         tree_sims_per_s=round(per_second["tree"]),
                         graph_sims_per_s=round(per_second["graph"]),
                         ratio_median=round(ratio["median"], 3),
                         ratio_min=round(ratio["min"], 3), ratio_max=round(ratio["max"], 3)))
        print(rows[-1], flush=True)
    settings = dict(harness.provenance(seed=5), rounds=rounds,
                    policy="AlphaZeroPolicy(dirichlet_fraction=0)",
                    cells={k: dict(evaluator=repr(v[0]), B=v[2], simulations=v[3],
                                   opening_plies=v[4], **v[1]) for k, v in SPEED_CELLS.items()})
    harness.report("graph_search_speed" + ("_quick" if args.quick else ""),
                   "Simulations per second, graph against tree (interleaved; ratio graph/tree)",
                   list(rows[0]), rows, settings)


# ---- memory ---------------------------------------------------------------------------------

def section_memory(args) -> None:
    rows = []
    for name, max_children, batch, max_nodes in (("tic_tac_toe", None, 256, 65),
                                                 ("connect_four", None, 64, 201),
                                                 ("chess", 218, 1024, 801)):
        game = envs.make(name)
        tree = game.tree_memory(batch, max_nodes, max_children)
        graph = game.tree_memory(batch, max_nodes, max_children, transpositions=True)
        rows.append(dict(game=name, B=batch, N=max_nodes,
                         K=max_children or game.num_actions,
                         tree_bytes_per_node=round(tree.bytes_per_node, 1),
                         graph_bytes_per_node=round(graph.bytes_per_node, 1),
                         tree_MiB_per_search=round(tree.total_bytes / batch / 2**20, 3),
                         graph_MiB_per_search=round(graph.total_bytes / batch / 2**20, 3)))
    settings = dict(harness.provenance(seed=None))
    harness.report("graph_search_memory", "Tree memory with and without the graph's arrays",
                   list(rows[0]), rows, settings)


SECTIONS = dict(proofs=section_proofs, strength=section_strength, nodes=section_nodes,
                speed=section_speed, memory=section_memory)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), required=True)
    parser.add_argument("--quick", action="store_true",
                        help="fewer positions, simulations and rounds (a smoke run)")
    parser.add_argument("--run-dir", default=None,
                        help="strength: a train.py Connect Four run (its agent's search)")
    parser.add_argument("--agent-policies", nargs="+", default=None,
                        help="strength: the agent's network searched by these policies "
                             "(default: the run's own)")
    parser.add_argument("--positions", type=int, default=1000,
                        help="strength: solver-labelled positions")
    parser.add_argument("--simulations", type=int, nargs="+", default=None)
    parser.add_argument("--batch", type=int, default=32, help="nodes: positions per game")
    args = parser.parse_args(argv)
    if args.simulations is None:
        args.simulations = dict(strength=[50, 200, 400, 800], nodes=[200, 800]).get(
            args.section, [])
        if args.quick:
            args.simulations = args.simulations[:1] or args.simulations
    if args.quick:
        args.positions = min(args.positions, 100)
        args.batch = min(args.batch, 8)
    SECTIONS[args.section](args)


if __name__ == "__main__":
    main()
