"""Self-play throughput against the number of devices (data-parallel self-play).

The training's self-play step (`training.self_play`: the network
search of every game, the replay write, the moves and auto-reset) with its B
games split over a 1-D "data" mesh of D devices (`mcts_jax.sharding`). Each
device count runs in its own subprocess; on a CPU the D devices are fake ones
(`--xla_force_host_platform_device_count=D`) sharing the same cores, so the
CPU figures show the cost of partitioning (collectives, smaller per-device
batches), not a speed-up. On a GPU / TPU host the subprocesses use the first D
real devices.

    python -m experiments.self_play_devices                    # 1, 2, 4, 8 fake CPU devices
    python -m experiments.self_play_devices --devices 1 2 4 8 --platform gpu   # real GPUs

Both self-play search modes (`--search-mode` of train.py): "exact" (bit for
bit the one-device search; XLA partitions it with small collectives every
simulation) and "local" (each device searches its own games, no
communication).

Strong scaling: the total batch B (--num-games) is fixed; each device plays
B / D games. Writes results/self_play_devices-<backend>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["search_mode", "devices", "games_per_device", "moves_per_s", "simulations_per_s", "ms_per_move",
           "compile_s", "speedup"]


def measure(devices: int, num_games: int, simulations: int, repeats: int,
            search_mode: str) -> dict:
    """In this process: one self-play move of `num_games` games on `devices` devices."""
    import jax

    from benchmarks import harness
    from mcts_jax import sharding
    from training import loop

    config = loop.config_lib.resolve(dict(game="tic_tac_toe", num_games=num_games,
                                          num_simulations=simulations, devices=devices,
                                          search_mode=search_mode))
    mesh = loop.make_mesh(config)
    game, model, player, learner = loop.build(config, mesh)
    state = loop.place(mesh, loop.initial_state(config, model, player, learner))
    keys = sharding.replicate(jax.random.split(jax.random.key(1), 4 + repeats), mesh)
    moves = iter(range(4 + repeats))

    def one_move():
        nonlocal state
        games, buffer, stats = player.step(state.variables, keys[next(moves)],
                                           state.self_play, state.buffer)
        state = state.replace(self_play=games, buffer=buffer)
        return stats

    timing = harness.interleaved_rounds({"move": one_move}, repeats)["sides"]["move"]
    return dict(devices=devices, games_per_device=num_games // devices,
                moves_per_s=num_games / timing["median_s"],
                simulations_per_s=num_games * simulations / timing["median_s"],
                ms_per_move=1000 * timing["median_s"], compile_s=timing["compile_s"],
                backend=jax.default_backend(), device=str(jax.devices()[0].device_kind))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--num-games", type=int, default=256, help="total games B")
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--platform", default="cpu", choices=("cpu", "gpu", "tpu"),
                        help="cpu: fake CPU devices; gpu / tpu: the host's real devices")
    parser.add_argument("--search-modes", nargs="+", default=["exact", "local"],
                        choices=("exact", "local"), help="self-play search over the mesh")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-mode", default="exact", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure(args.child, args.num_games, args.simulations, args.repeats,
                                 args.child_mode)))
        return 0

    from benchmarks import harness

    rows = []
    for mode in args.search_modes:
        mode_rows = []
        for devices in args.devices:
            env = dict(os.environ, JAX_PLATFORMS=args.platform,
                       PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
            if args.platform == "cpu":
                env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                                    f" --xla_force_host_platform_device_count={devices}").strip()
            run = subprocess.run([sys.executable, "-m", "experiments.self_play_devices",
                                  "--child", str(devices), "--child-mode", mode,
                                  "--num-games", str(args.num_games),
                                  "--simulations", str(args.simulations),
                                  "--repeats", str(args.repeats)],
                                 env=env, cwd=ROOT, capture_output=True, text=True)
            if run.returncode:
                raise SystemExit(f"devices={devices} failed:\n{run.stderr[-3000:]}")
            row = dict(search_mode=mode, **json.loads(run.stdout.strip().splitlines()[-1]))
            mode_rows.append(row)
            print(row, flush=True)
        for row in mode_rows:
            row["speedup"] = row["moves_per_s"] / mode_rows[0]["moves_per_s"]
        rows += mode_rows
    settings = dict(harness.provenance(seed=0), game="tic_tac_toe",
                    network="game default (train.py)", keys="config seed 0; moves: key(1)",
                    policy="gumbel", num_games=args.num_games, simulations=args.simulations,
                    repeats=args.repeats, platform=args.platform,
                    devices_kind="fake CPU devices (--xla_force_host_platform_device_count) "
                    "sharing the host's cores" if args.platform == "cpu" else "real devices",
                    scaling="strong: total games fixed, split over the devices")
    harness.report("self_play_devices",
                   f"Self-play throughput vs devices ({args.platform}, B={args.num_games}, "
                   f"{args.simulations} simulations)", COLUMNS, rows, settings,
                   save_results=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
