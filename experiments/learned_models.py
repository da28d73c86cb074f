"""Learned-model training runs compared at equal wall time, interleaved.

    python -m experiments.learned_models --section gumbel --minutes 4 --seeds 0
    python -m experiments.learned_models --section reanalyse --minutes 4 --seeds 0 1 2

Each cell is one `train.py` run at `--max-training-s`, interleaved seed by
seed (`experiments.equal_time`). Every run evaluates at its end only (`--eval-every 0`: no evaluation time inside the budget) against the
game's strongest judge (tic-tac-toe: the perfect player, 200 games, half
as each side). The learning rate is constant after a short warmup
(`--iterations` well beyond the budget), the same for both sides.

Sections:
  gumbel     (tic-tac-toe) Gumbel MuZero (learned model) against AlphaZero with the same
             Gumbel search on the real game, at 4 and at 16 simulations.
  reanalyse  (tic-tac-toe) MuZero with --reanalyse-fraction 0.125 against 0.
  2048       Stochastic MuZero against AlphaZero searching the true chance
             model, the score curves of both in one plot
             (results/plots/learned_models_2048-cpu.png).

The results file (benchmarks/results/learned_models_<section>-cpu.json)
keeps, per run, its settings, iterations, self-play games and the final
figures, with the run folders (each has its sessions.jsonl: commit,
command, machine).
"""

from __future__ import annotations

import argparse

from experiments import equal_time

TIC_TAC_TOE = dict(game="tic_tac_toe", eval_every=0, elo_every=0, final_games=200,
                   final_simulations=64, iterations=2000, warmup_fraction=0.002,
                   end_learning_rate_fraction=1.0)
# 2048: a score curve for the plot (16 games every 10 iterations, inside the
# budget on both sides), the final mean over 100 games.
GAME_2048 = dict(game="2048", eval_every=10, eval_games=16, final_games=100,
                 iterations=2000, warmup_fraction=0.002, end_learning_rate_fraction=1.0)

# section -> (settings shared by its sides, [(side, its own settings)])
SECTIONS = {
    "gumbel": (TIC_TAC_TOE, [
        (f"{name}_{sims}", dict(algorithm=algorithm, policy="gumbel", num_simulations=sims,
                                final_simulations=sims))
        for sims in (4, 16)
        for name, algorithm in (("gumbel_muzero", "gumbel_muzero"),
                                ("alphazero_gumbel", "alphazero"))]),
    # 0.125 of a 256-window minibatch, K + 1 = 6 positions each: about 1.6 times
    # self-play's own searches per iteration (48 updates, 256 games x 18 moves).
    "reanalyse": (TIC_TAC_TOE, [
        ("muzero_reanalyse_0.125", dict(algorithm="muzero", reanalyse_fraction=0.125)),
        ("muzero_reanalyse_0", dict(algorithm="muzero", reanalyse_fraction=0.0))]),
    # Stochastic MuZero (learned chance codes) against AlphaZero searching the
    # true chance model (the tiles), the same network trunk and budgets.
    "2048": (GAME_2048, [
        ("stochastic_muzero", dict(algorithm="stochastic_muzero")),
        ("alphazero_true_chance", dict(algorithm="alphazero", policy="alphazero"))]),
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), required=True)
    parser.add_argument("--minutes", type=float, default=4.0, help="training budget per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--run-root", default=None, help="folder of the run folders")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    section = SECTIONS[args.section]
    one_player = section[0]["game"] == "2048"
    judged = (["final_score_mean", "final_score_median", "final_tile_1024_rate"] if one_player
              else ["final_vs_perfect_wins", "final_vs_perfect_draws", "final_vs_perfect_losses",
                    "final_policy_optimal"])
    equal_time.compare(f"learned_models_{args.section}", section, args.minutes, args.seeds,
                       judged, "score_mean" if one_player else "vs_perfect_losses",
                       args.run_root, save=not args.no_save,
                       extra_settings=dict(section=args.section))


if __name__ == "__main__":
    main()
