"""Developer tools: measurements of the code itself and guards for changes (not the benchmark suite)."""
