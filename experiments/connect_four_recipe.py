"""The Connect Four training recipe: each change against the cpu preset at equal wall time.

    python -m experiments.connect_four_recipe --section network --minutes 55 --seeds 0
    python -m experiments.connect_four_recipe --section targets --minutes 55 --seeds 0
    python -m experiments.connect_four_recipe --section openings --minutes 20 --seeds 0
    python -m experiments.connect_four_recipe --section openings_share --minutes 20 --seeds 0
    python -m experiments.connect_four_recipe --section openings_hour --minutes 55 --seeds 0 1 2
    python -m experiments.connect_four_recipe --section openings_network --minutes 55 --seeds 0
    python -m experiments.connect_four_recipe --section openings_interleaved --minutes 55 --seeds 0
    python -m experiments.connect_four_recipe --section forced_playouts --minutes 20 --seeds 0
    python -m experiments.connect_four_recipe --section learning --minutes 20 --seeds 0
    python -m experiments.connect_four_recipe --section ablation --minutes 55 --seeds 0 1 2
    python -m experiments.connect_four_recipe --section ablation --sides preset no_playout_cap \
        --side-by-side --minutes 40 --seeds 0 1 2 --name connect_four_playout_cap

Every side is `python train.py --game connect_four --preset cpu` with one
change, stopped by `--max-training-s` at the same training budget, and
judged by the perfect solver at the end: the search at 200 simulations on
the 1000 random-play positions (plies 4-30, `connect_four_solver.
RANDOM_PLAY_PATH`), the raw network beside it, and 200 games against the
solver (100 moving first). Runs are interleaved seed by seed
(`experiments.equal_time`); the curve of search accuracy against training
minutes of every run is in results/plots/connect_four_recipe_<section>-cpu.png.

Sections:
  network   the preset's 32-channel, 3-block residual network against wider
            and deeper ones (fewer, slower self-play games in the same time).
  targets   what the network imitates: self-play searches of 64 and 128
            simulations (16 and 32 in fast moves) instead of 32 (8), and the
            value target 0.2 z + 0.8 v instead of 0.5 z + 0.5 v.
  openings  self-play games that open with U[0, 8] or U[0, 16] random,
            unrecorded plies, against the preset's games from the empty board.
  openings_share
            U[0, 8] random plies opening half of the games (the others from
            the empty board), against all games and none.
  openings_hour
            U[0, 8] random plies opening every game, against the preset, over
            the preset's whole hour and on several seeds (is the 20-minute
            gain kept, and is the first move from the empty board still
            learnt on every seed?).
  openings_network
            with U[0, 8] random openings (more varied positions to learn),
            the preset's network against a wider and deeper one.
  openings_interleaved
            the preset (U[0, 8] random plies) against the same with half of
            the opened games interleaving searched plies with the random ones
            (--random-opening-interleaved 0.5): the agent's own lines with
            random replies, such as 3 then each of the 7 replies, the
            positions where the preset's agents lose their first-player games
            at ply 2.
  forced_playouts
            PUCT self-play (--policy alphazero) with KataGo's forced playouts
            and policy target pruning (k = 2) against PUCT self-play without.
  learning  the replay ratio (24 or 96 updates of 256 per iteration against
            48) and the peak learning rate (1e-3 or 4e-3 against 2e-3).
  ablation  the preset against the preset without one of its parts: the
            random openings (every game from the empty board), the
            mirror augmentation, playout cap randomisation (every move
            searched fully), the search-value mix in the value target
            (outcome only), Gumbel self-play (PUCT instead), overlapped phases.

The preset's learning rate decays over its 660 iterations; a side whose
budget ends earlier stops before its decay ends, as a user stopping the
run at that time would. The network section's larger networks set their
iterations so that their schedules end within the budget.
"""

from __future__ import annotations

import argparse

from experiments import equal_time

PRESET = dict(game="connect_four", preset="cpu", final_solver_positions=1000)

SECTIONS = {
    # Iterations (and evaluations) scaled to each network's iteration time so
    # that its learning-rate schedule ends near 55 minutes: median 4.3, 12.1
    # and 26.5 s per iteration on the 2-core VM, 12 iterations each without
    # evaluation (results/connect_four_network_probe_{32x3,48x4,64x5}-cpu.json).
    "network": (PRESET, [
        ("resnet_32x3", dict()),
        ("resnet_48x4", dict(channels=48, blocks=4, value_hidden=48, iterations=290,
                             eval_every=73)),
        ("resnet_64x5", dict(channels=64, blocks=5, value_hidden=64, iterations=130,
                             eval_every=33)),
    ]),
    # What the network imitates: deeper self-play searches (fewer games in the
    # same time), and a value target leaning further on the search.
    "targets": (PRESET, [
        ("preset", dict()),
        ("simulations_64", dict(num_simulations=64, fast_simulations=16)),
        ("simulations_128", dict(num_simulations=128, fast_simulations=32)),
        ("search_value_0.8", dict(search_value_weight=0.8)),
    ]),
    # The cpu preset opens its games with U[0, 8] random plies since 2026-11-26;
    # the openings sections' side "preset" is the preset before that (every
    # game from the empty board), as their results files measured it.
    # Self-play games that open with U[0, k] uniformly random, unrecorded plies:
    # positions off the agent's own lines (the judged positions come from
    # random play, and the solver varies its best moves).
    "openings": (PRESET, [
        ("preset", dict(random_opening_plies=0)),
        ("random_openings_8", dict(random_opening_plies=8)),
        ("random_openings_16", dict(random_opening_plies=16)),
    ]),
    # The openings section's U[0, 8] made the search more accurate, but with
    # 1 game in 9 from the empty board the first move from it was no better
    # trained (and with U[0, 16] it lost every game as first player against
    # the solver): random openings in half of the games only.
    "openings_share": (PRESET, [
        ("preset", dict(random_opening_plies=0)),
        ("random_openings_8", dict(random_opening_plies=8)),
        ("random_openings_8_half", dict(random_opening_plies=8, random_opening_fraction=0.5)),
    ]),
    # The openings section's gain at the preset's full budget, seed by seed.
    "openings_hour": (PRESET, [
        ("preset", dict(random_opening_plies=0)),
        ("random_openings_8", dict(random_opening_plies=8)),
    ]),
    # With random openings the preset's search accuracy levels off near 92-93%
    # after 30 minutes (openings_hour): does a larger network, fed more varied
    # positions, go further in the same time?
    "openings_network": (PRESET, [
        ("random_openings_8", dict(random_opening_plies=8)),
        ("random_openings_8_resnet_48x4", dict(random_opening_plies=8, channels=48, blocks=4,
                                               value_hidden=48, iterations=290,
                                               eval_every=73)),
    ]),
    # The preset's agents lose their first-player games against the solver at
    # ply 2, after 3 and a reply their self-play rarely meets (docs/training.md):
    # openings that search the agent's own moves and randomise only the replies.
    "openings_interleaved": (PRESET, [
        ("preset", dict()),
        ("interleaved_half", dict(random_opening_interleaved=0.5)),
    ]),
    # KataGo's forced playouts with policy target pruning, for PUCT self-play
    # (Gumbel's halving has its own improved target), against PUCT without.
    "forced_playouts": (PRESET, [
        ("puct_self_play", dict(policy="alphazero")),
        ("puct_forced_playouts", dict(policy="alphazero", forced_playouts=2.0)),
    ]),
    # How hard the learner works on the replay: half and twice the updates per
    # iteration (replay ratio 1.5 and 6 samples per recorded position against
    # 3), and half and twice the peak learning rate.
    "learning": (PRESET, [
        ("preset", dict()),
        ("updates_24", dict(updates_per_iteration=24)),
        ("updates_96", dict(updates_per_iteration=96)),
        ("learning_rate_1e-3", dict(learning_rate=1e-3)),
        ("learning_rate_4e-3", dict(learning_rate=4e-3)),
    ]),
    "ablation": (PRESET, [
        ("preset", dict()),
        ("no_random_openings", dict(random_opening_plies=0)),
        ("no_mirror", dict(augment=False)),
        ("no_playout_cap", dict(fast_simulations=0)),
        ("outcome_value_target", dict(search_value_weight=0.0)),
        ("puct_self_play", dict(policy="alphazero")),
        ("phases_in_turn", dict(overlap_phases=False)),
    ]),
}

JUDGED = ["final_solver_search_accuracy", "final_solver_search_accuracy_opening",
          "final_solver_search_accuracy_hard", "final_solver_policy_accuracy",
          "final_vs_solver_first_wins", "final_vs_solver_first_draws",
          "final_vs_solver_first_losses", "final_first_move_value"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), required=True)
    parser.add_argument("--sides", nargs="*", default=None,
                        help="only these sides of the section (default: all)")
    parser.add_argument("--minutes", type=float, default=55.0, help="training budget per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--run-root", default=None, help="folder of the run folders")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default=None,
                        help="results file name (default connect_four_recipe_<section>)")
    parser.add_argument("--side-by-side", action="store_true",
                        help="run a seed's sides at the same time, each on its own equal "
                             "share of the cores (equal_time.compare's side_by_side)")
    args = parser.parse_args(argv)
    common, sides = equal_time.select_sides(parser, args.section, SECTIONS[args.section],
                                            args.sides)
    equal_time.compare(args.name or f"connect_four_recipe_{args.section}", (common, sides),
                       args.minutes, args.seeds, JUDGED, "solver_search_accuracy",
                       args.run_root, save=not args.no_save,
                       extra_settings=dict(section=args.section),
                       side_by_side=args.side_by_side)


if __name__ == "__main__":
    main()
