"""Grading one submission: the hidden-suite run and its pytest plugin, seeds, the reference
cache, the gate and scoring, failure causes and hints, metrics, and the `grade` and
Gradescope entry points."""
