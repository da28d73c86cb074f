"""Training with a learned model: MuZero, Gumbel MuZero and Stochastic MuZero.

The search (the library's `MuZeroPolicy`, `GumbelPolicy`,
`StochasticMuZeroPolicy`) steps a learned model instead of the game. One
module per idea:

    support.py       values and rewards on a categorical support, h(x) scaling
    networks.py      the NNX model: representation, dynamics, prediction
                     (+ afterstates and the chance encoder)
    search.py        the root and recurrent functions over the model; the arena player
    trajectories.py  the device replay of trajectories; unroll windows, value targets
    learner.py       the unrolled loss, reanalyse, the jitted update
    self_play.py     self-play that searches the model
    setup.py         a run's parts from its TrainConfig (`training.loop.build`)

A batch of games goes: `loop.self_play_phase` -> `LearnedModelSelfPlay.step`
(search.learned_root, the policy over `search.recurrent_fns`) ->
`trajectories.add` / `credit` -> `loop.update_phase` ->
`LearnedModelLearner.update` (trajectories.sample, targets, reanalyse, loss).
"""
