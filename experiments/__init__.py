"""One-off experiments that each served one decision (a Connect Four or 2048
recipe, a layout, a search part); each module runs with `python -m
experiments.<name>` from the repository root and writes experiments/results/.
experiments/README.md says what each decided; research_log.md keeps the story."""
