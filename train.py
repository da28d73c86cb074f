"""Train an AlphaZero (or MuZero-family) agent with mcts_jax.

    python train.py                                   # tic-tac-toe to perfect play, CPU
    python train.py --game connect_four --preset cpu  # a short Connect Four run on a CPU
    python train.py --game chess --preset tiny        # chess end to end, tiny shapes
    python train.py --game othello                    # full-size defaults (GPU / TPU)
    python train.py --algorithm muzero                # a learned model: MuZero (docs/learned_models.md)
    python train.py --help                            # every flag
    python train.py --devices 4                       # split over 4 devices (default: all)
    python train.py --distributed ...                 # one process per TPU VM host

Several hosts: start the same command on every host, with --distributed on a
Cloud TPU pod slice (or --coordinator-address/--num-processes/--process-id,
or the JAX_* environment variables); see docs/multi_device.md.

The run folder (default runs/<game>[_<algorithm>][_<preset>]) holds config.json,
metrics.jsonl, checkpoints/, plots/ and final.json. Running the same command
again continues the run from its last checkpoint.
"""

import sys

from mcts_jax import sharding
from training import config as config_lib
from training import loop


def main(argv=None) -> int:
    args, explicit = config_lib.parse(argv)
    try:  # before any other JAX call
        sharding.initialize(args.coordinator_address, args.num_processes, args.process_id,
                            auto=args.distributed)
    except ValueError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    resume = True if args.resume else (False if args.no_resume else None)
    try:
        config, run_dir = loop.open_run(args.run_dir, explicit, overwrite=args.overwrite,
                                        resume=resume)
    except (ValueError, FileNotFoundError, FileExistsError) as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    loop.train(config, run_dir, progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
