"""Training on control tasks (gymnax, continuous actions): Sampled AlphaZero and Sampled MuZero.

    python train.py --game pendulum                              # Sampled AlphaZero
    python train.py --game pendulum --algorithm sampled_muzero   # Sampled MuZero

setup.py (the algorithm values `training.build` builds), model.py (the
Gaussian policy-value network, and what the search steps: the task's true
dynamics or a learned model), self_play.py (B episodes, a sampled search
per step), learner.py (Sampled AlphaZero's loss on the sampled actions;
Sampled MuZero's is `training.muzero.learner`'s), evaluation.py (episode
returns). See docs/sampled.md.
"""
