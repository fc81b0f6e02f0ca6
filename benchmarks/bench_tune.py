"""A sweep on two worker processes against the same points one after another in one process (issue 28's aim:
≤ 0.6× the time), and the best point against the best of an exhaustive evaluation.

``python -m benchmarks tune`` runs the 64-point GEMM grid of ``examples/tune_gemm.py`` at ``TUNE_SIZE`` (default
1024; the README's 4096 takes about an hour on two cores).  Only the long benchmark list runs it (``make bench``
leaves it out): it is a measurement of the machine's parallelism more than of visa.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

SPACE = {"k_tile": [128, 256, 512, 1024], "m_block": [1, 2, 4, 8], "double_buffer": [True, False],
         "w_tiles": [True, False]}


LOAD: list[float] = []


def run() -> Iterator[str]:
    from tune_gemm import gemm

    from visa.tune import sweep

    LOAD[:] = [os.getloadavg()[0]]
    size = int(os.environ.get("TUNE_SIZE", "1024"))
    space = {"size": [size], **SPACE}
    t0 = time.perf_counter()
    one = sweep(gemm, space, workers=1, cache=False)
    t1 = time.perf_counter()
    two = sweep(gemm, space, workers=2, cache=False)
    t2 = time.perf_counter()
    same = [(r.params, r.cycles, r.error is None) for r in one.rows] == \
        [(r.params, r.cycles, r.error is None) for r in two.rows]
    best = two.best
    exhaustive = min((r.cycles for r in one.rows if r.cycles is not None), default=None)
    yield f"tune: {len(one.rows)}-point sweep of the {size}³ bf16 GEMM ({len(one.errors)} refused points)"
    walls = sum(r.wall for r in one.rows), sum(r.wall for r in two.rows)
    yield f"  one process, one after another: {t1 - t0:7.1f} s (the points' own walls add up to {walls[0]:.1f} s)"
    yield f"  two worker processes:           {t2 - t1:7.1f} s = {(t2 - t1) / (t1 - t0):.2f}× (aim ≤ 0.6×; the " \
          f"points' walls add up to {walls[1]:.1f} s: a point is {walls[1] / walls[0]:.2f}× slower beside another)"
    yield f"  load average before and after: {LOAD[0]:.1f}, {os.getloadavg()[0]:.1f} (the aim needs an idle machine)"
    found = best.cycles if best else None
    yield f"  same rows either way: {same}; best {best.params if best else None} at {found} cycles"
    yield f"  exhaustive best {exhaustive} cycles: found it: {found == exhaustive}"
    default = {"size": size, "k_tile": 512, "m_block": 8, "double_buffer": True, "w_tiles": False}
    speed = two.speedup(default)
    yield "  best over the default (k_tile 512, m_block 8, double buffering, row-major w): " + \
        (f"{speed:.2f}×" if speed else "n/a")
