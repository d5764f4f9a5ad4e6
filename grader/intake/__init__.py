"""Preparing a submission before any of it runs: the archive walk, near-miss names, bounded
source checks and the integrity rule, and student text made safe where it enters."""
