"""AlphaZero training: one module per idea.

    config       TrainConfig, per-game defaults and presets, the command line
    replay       the device replay buffer (pending samples until the game ends)
    self_play    one jitted move for B games at once, auto-reset, subtree reuse
    learner      loss, optax optimiser, one jitted update
    checkpoint   orbax checkpoints, atomic; metrics file kept in step with them
    evaluation   matches against random, UCT, perfect play, earlier snapshots
    plots        PNG curves from the metrics file
    loop         the training loop that ties them together (`train`)
"""
