"""Sampled AlphaZero and MuZero on Pendulum-v1: K samples, the prior's correction, the policy.

    python -m experiments.pendulum_training --section samples --seeds 0 1 2
    python -m experiments.pendulum_training --section prior --seeds 0 1 2
    python -m experiments.pendulum_training --section policy --seeds 0 1 2
    python -m experiments.pendulum_training --section muzero_samples --seeds 0 1 2

Every side is `python train.py --game pendulum` (the preset: 200 iterations
of 50 steps of 64 episodes, 640,000 environment steps, Gumbel self-play at
32 simulations, K = 20; Sampled MuZero's: 400 iterations, 1,280,000 steps)
with one change, run to its last iteration (equal
environment steps; `--minutes` only caps a run), interleaved seed by seed
(`experiments.equal_time`), and judged by its final evaluation: the mean
return of 100 episodes from random starts with the greedy search at 32
simulations (final_score_mean, its standard error final_score_sem), with
the raw policy network (final_policy_score_mean: the Gaussian's squashed
mean, no search) and random torques (final_random_score_mean) beside it.
The curve of every run (16 episodes every 20 iterations, against training
minutes) is in results/plots/pendulum_training_<section>-cpu.png; the
iteration i of a curve is i x 3,200 environment steps.

Sections:
  samples  K = 3, 10 and 20 samples per node (proposal at temperature 1).
  prior    the proposal at temperature 2 (wider than the policy), where the
           paper's corrected prior (beta-hat / beta x pi) and a uniform one
           over the samples (Stoix's choice) differ, at K = 3 and 20.
           At temperature 1 they are one search (beta = pi: the corrected
           prior is uniform over the samples), which
           tests/test_control_training.py checks bit for bit.
  policy   Gumbel self-play (sequential halving among the samples) against
           PUCT (Dirichlet noise on the samples' priors, moves sampled from
           the visits), K = 20.
  muzero_samples
           Sampled MuZero (--algorithm sampled_muzero: the search steps a
           learned model) at K = 3, 10 and 20, the same preset otherwise.
"""

from __future__ import annotations

import argparse

from experiments import equal_time

COMMON = dict(game="pendulum")

SECTIONS = {
    "samples": (COMMON, [(f"K{k}", dict(num_samples=k)) for k in (3, 10, 20)]),
    "prior": (COMMON, [(f"K{k}_{prior}", dict(num_samples=k, proposal_temperature=2.0,
                                              sampled_prior=prior))
                       for k in (3, 20) for prior in ("corrected", "uniform")]),
    "policy": (COMMON, [("gumbel", dict(policy="gumbel")),
                        ("puct", dict(policy="alphazero"))]),
    "muzero_samples": (dict(COMMON, algorithm="sampled_muzero"),
                       [(f"muzero_K{k}", dict(num_samples=k)) for k in (3, 10, 20)]),
}

JUDGED = ["final_score_mean", "final_score_sem", "final_policy_score_mean",
          "final_random_score_mean", "mean_simulations_per_s"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), required=True)
    parser.add_argument("--minutes", type=float, default=30.0,
                        help="cap on a run's training time (the preset ends first)")
    parser.add_argument("--sides", nargs="*", default=None,
                        help="only these sides of the section (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--run-root", default=None, help="folder of the run folders")
    parser.add_argument("--name", default=None,
                        help="results file name (default pendulum_training_<section>)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    common, sides = equal_time.select_sides(parser, args.section, SECTIONS[args.section],
                                            args.sides)
    equal_time.compare(args.name or f"pendulum_training_{args.section}", (common, sides),
                       args.minutes, args.seeds, JUDGED, "score_mean", args.run_root,
                       save=not args.no_save, extra_settings=dict(section=args.section))


if __name__ == "__main__":
    main()
