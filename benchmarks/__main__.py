"""`python -m benchmarks`: the benchmark suite (see benchmarks/run.py)."""

from benchmarks.run import main

main()
