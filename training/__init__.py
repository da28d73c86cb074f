"""The application: AlphaZero training on the search core (`mcts_jax`) and
the games (`envs`), one module per idea. It imports both; neither imports it.

    config       TrainConfig, the command line
    build        the one build step: a config's algorithm (AlphaZero or the
                 MuZero family, muzero/) and the objects a run runs
    presets      how each game is trained: default network, training defaults, presets
    networks     flax NNX policy-value networks and their evaluator
    search       the one search call (root, recurrent function, policy) and
                 the check that a policy fits what it searches
    replay       the device replay buffer (pending samples until the game ends)
    self_play    one jitted move for B games at once, auto-reset, subtree reuse
    learner      loss, optax optimiser, one jitted update
    checkpoint   orbax checkpoints, atomic; metrics file kept in step with them
    arena        batched matches between players, Elo
    evaluation   matches against random, UCT, perfect play, earlier snapshots
    plots        PNG curves from the metrics file
    reporting    the run's log, metrics and report
    state        TrainState, the whole state of a run
    loop         the training loop that ties them together (`train`)
    agent        Agent.load(run_dir): play a trained network
    muzero/      the MuZero family: learned model, its search, self-play, learner
"""
