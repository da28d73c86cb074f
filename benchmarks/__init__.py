"""The benchmark suite of mcts_jax against its peers (mctx, OpenSpiel):
`python -m benchmarks` (benchmarks/README.md); a few sections also run alone
as `python -m benchmarks.<name>` from the repository root."""
