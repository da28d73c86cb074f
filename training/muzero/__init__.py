"""Training with a learned model: MuZero, Gumbel MuZero and Stochastic MuZero.

The search (the library's `MuZeroPolicy`, `GumbelPolicy`,
`StochasticMuZeroPolicy`) steps a learned model instead of the game. One
module per idea:

    support.py       values and rewards on a categorical support, h(x) scaling
    networks.py      the NNX model: representation, dynamics, prediction
                     (+ afterstates and the chance encoder)
    search.py        the model as what a search steps (LearnedSimulator: root and
                     recurrent functions); the arena player
    trajectories.py  the device replay of trajectories; unroll windows, value targets
    learner.py       the unrolled loss, reanalyse, the jitted update
    self_play.py     self-play that searches the model
    setup.py         MuZeroFamily, the algorithm value `training.build` asks for
                     a learned-model run's parts

A batch of games goes: `loop.self_play_phase` -> `LearnedModelSelfPlay.step`
(`training.search.run` over `search.LearnedSimulator`) ->
`trajectories.add` / `credit` -> `loop.update_phase` ->
`LearnedModelLearner.update` (trajectories.sample, targets, reanalyse, loss).
"""
