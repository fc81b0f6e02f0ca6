"""Timing helpers shared by the benchmarks (best of several runs, reported as a ratio to numpy)."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType


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


def line(name: str, ours: float, theirs: float, width: int = 58) -> str:
    """One line without an aim: both times and their ratio."""
    return f"{name:<{width}} visa {ours * 1e3:9.2f} ms   numpy {theirs * 1e3:8.2f} ms   ratio {ours / theirs:7.2f}x"


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as a module (registered in ``sys.modules``, as a dataclass or a pickle needs)."""
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
