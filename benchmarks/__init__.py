"""Benchmarks: each reports the simulator's time as a ratio against numpy doing the same mathematics."""
