"""Training on control tasks (gymnax, continuous actions): Sampled AlphaZero.

    python train.py --game pendulum                 # Sampled AlphaZero on Pendulum-v1

setup.py (the algorithm value `training.build` builds), model.py (the
Gaussian policy-value network), self_play.py (B episodes, a sampled search
per step), learner.py (the sampled policy target), evaluation.py (episode
returns). See docs/sampled.md.
"""
