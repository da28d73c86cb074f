"""Benchmarks of mcts_jax against its peers; each module is runnable with
`python -m benchmarks.<name>` from the repository root."""
