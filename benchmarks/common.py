"""Timing helpers shared by the benchmarks (best of several runs, reported as a ratio to numpy)."""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: The clock of :func:`best_of` (and of the benchmarks that use it): wall time, or with ``BENCH_CLOCK=cpu`` the
#: process's CPU time (every thread's), which a loaded shared machine disturbs less — for analysis; the ratios
#: quoted are wall-clock.
clock = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else time.perf_counter


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    """Smallest time of ``repeat`` runs of ``fn`` (after one warm-up run), in seconds (:data:`clock`)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def report(name: str, ours: float, numpy_time: float, aim: float) -> str:
    """One line: both times and their ratio, against the issue's aim."""
    ratio = ours / numpy_time
    verdict = "within" if ratio <= aim else "OVER"
    return (f"{name:<48} visa {ours * 1e3:9.2f} ms   numpy {numpy_time * 1e3:9.2f} ms   "
            f"ratio {ratio:6.2f}x  ({verdict} the {aim:g}x aim)")


def line(name: str, ours: float, theirs: float, width: int = 58, aim: float | None = None) -> str:
    """One line: both times and their ratio (and whether it meets ``aim``, when one is given)."""
    text = f"{name:<{width}} visa {ours * 1e3:9.2f} ms   numpy {theirs * 1e3:8.2f} ms   ratio {ours / theirs:7.2f}x"
    if aim is not None:
        text += f"  ({'within' if ours / theirs <= aim else 'OVER'} the {aim:g}x aim)"
    return text


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as a module (registered in ``sys.modules``, as a dataclass or a pickle needs)."""
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Timer:
    """Wall time spent in some module-level functions, by wrapping them."""

    def __init__(self, module: Any, names: tuple[str, ...]) -> None:
        self.module, self.names, self.total = module, names, 0.0
        self.saved: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> Timer:
        for name in self.names:
            fn = getattr(self.module, name)
            self.saved[name] = fn

            def wrapped(*args: Any, _fn: Callable[..., Any] = fn, **kw: Any) -> Any:
                start = time.perf_counter()
                try:
                    return _fn(*args, **kw)
                finally:
                    self.total += time.perf_counter() - start

            setattr(self.module, name, wrapped)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, fn in self.saved.items():
            setattr(self.module, name, fn)


#: Stages of a run: ``(label, module, function names)``, the functions' time counted under the label.
Stages = Sequence[tuple[str, str, tuple[str, ...]]]


def breakdown(fn: Callable[[], object], stages: Stages, rest: str, heading: str, runs: int = 3,
              before: Callable[[], object] | None = None) -> str:
    """The fastest of ``runs`` calls of ``fn`` (each after a garbage collection, and ``before()`` when given, both
    untimed) split by the stage its time is spent in, the remainder under ``rest``: one line, ``heading`` then the
    stages, largest first."""
    best: tuple[list[tuple[str, float]], float] | None = None
    for _ in range(runs):
        timers = [(label, Timer(importlib.import_module(mod), names)) for label, mod, names in stages]
        for _, t in timers:
            t.__enter__()
        gc.collect()
        if before is not None:
            before()
        start = time.perf_counter()
        try:
            fn()
        finally:
            total = time.perf_counter() - start
            for _, t in timers:
                t.__exit__()
        parts = [(label, t.total) for label, t in timers if t.total > 0]
        parts.append((rest, total - sum(v for _, v in parts)))
        if best is None or total < best[1]:
            best = (sorted(parts, key=lambda kv: -kv[1]), total)
    assert best is not None
    parts, total = best
    return f"{heading}: " + ", ".join(f"{k} {v * 1e3:.1f} ms ({v / total:.0%})" for k, v in parts)


#: numpy's allocator asks the system for huge pages for arrays from this size up (``madvise(MADV_HUGEPAGE)`` in
#: ``numpy/_core/src/multiarray/alloc.c``, on Linux); :func:`fresh` does the same, so its memory is what a new
#: numpy array of that size gets where nothing freed is at hand.
NUMPY_HUGE_FROM = 1 << 22


def fresh(shape: tuple[int, ...], dtype: Any) -> Any:
    """An array of zeros in memory nothing has touched yet: a new anonymous private mapping (its pages come from
    the system at the first write, as a fresh process's first arrays' do), huge pages asked for as numpy does."""
    import mmap

    import numpy as np

    dt = np.dtype(dtype)
    nbytes = max(1, int(np.prod(shape, dtype=np.int64)) * dt.itemsize)
    mem = mmap.mmap(-1, nbytes, flags=getattr(mmap, "MAP_PRIVATE", 0x02)) if os.name == "posix" else mmap.mmap(
        -1, nbytes)
    if nbytes >= NUMPY_HUGE_FROM and hasattr(mem, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        mem.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(mem, dtype=dt, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)


def first_call(fn: Callable[[], object]) -> tuple[float, float, object]:
    """One call of ``fn`` (its first: nothing repeated, nothing warm): its wall time and CPU time (seconds, the
    CPU time by ``time.process_time``) and what it returned."""
    cpu, start = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - start, time.process_time() - cpu, out


def moved_once(inputs: Sequence[Any], compute: Callable[..., Any], shape: tuple[int, ...], dtype: Any) -> Any:
    """numpy doing a kernel's data movement once, as a first launch does (issue 24): every input copied into
    untouched memory (the upload into device memory), the operation computed from there into untouched memory
    (``compute(*copies, out=...)``, the engines writing their result) and the result copied out into untouched
    memory (the move back to HBM).  Returns the copy out."""
    copies = []
    for x in inputs:
        c = fresh(x.shape, x.dtype)
        c[...] = x
        copies.append(c)
    result = fresh(shape, dtype)
    compute(*copies, out=result)
    out = fresh(shape, dtype)
    out[...] = result
    return out


def same_movement(text: str, ours: float, moved: tuple[float, float, object], ours_cpu: float | None = None) -> str:
    """``text`` (a :func:`line`) with numpy's first call doing the same data movement (:func:`moved_once`, timed
    by :func:`first_call`) and the launch's ratio to it (wall, and CPU when ``ours_cpu`` is given), beside the
    ratio to numpy's cached operation that ``text`` gives."""
    wall, cpu, _ = moved
    text += f"   numpy same movement, 1st call {wall * 1e3:.2f} ms: ratio {ours / wall:.1f}x"
    return text + (f" (cpu {cpu * 1e3:.2f} ms: {ours_cpu / cpu:.1f}x)" if ours_cpu is not None and cpu > 0 else "")


def peak_rss() -> int:
    """This process's own peak resident set size, in bytes (:func:`visa.tune.worker.peak_bytes`: Linux's
    ``VmHWM``; ``getrusage``'s ``ru_maxrss`` is not its own in a child — a benchmark run by ``python -m
    benchmarks`` after a big one would read the big one's peak)."""
    from visa.tune.worker import peak_bytes

    peak = peak_bytes()
    if peak is None:
        raise RuntimeError("no peak memory to read here: neither /proc/self/status nor the resource module")
    return peak


def in_child(module: str) -> dict[str, Any]:
    """Run ``python -m <module> --child`` in a fresh process (the environment inherited) and return the JSON object
    its last line of output prints: a benchmark whose peak memory must be its own."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-m", module, "--child"], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"python -m {module} --child failed ({done.returncode}):\n{done.stderr[-4000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out
