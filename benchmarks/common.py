"""Timing helpers shared by the benchmarks (best of several runs, reported as a ratio to numpy)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    """Smallest wall time of ``repeat`` runs of ``fn`` (after one warm-up run), in seconds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def report(name: str, ours: float, numpy_time: float, aim: float) -> str:
    """One line: both times and their ratio, against the issue's aim."""
    ratio = ours / numpy_time
    verdict = "within" if ratio <= aim else "OVER"
    return (f"{name:<48} visa {ours * 1e3:9.2f} ms   numpy {numpy_time * 1e3:9.2f} ms   "
            f"ratio {ratio:6.2f}x  ({verdict} the {aim:g}x aim)")
