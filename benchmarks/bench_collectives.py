"""Ring AllReduce (manual L7503–7602) on 2, 4 and 8 chips against numpy summing the same arrays (issue 12).

Every chip holds X[c] (256 slices × 256 i32 = 256 KiB a chip).  The simulator runs ``examples/collectives.py``'s
``ring_all_reduce``: n − 1 ChipShuffles (DMA through PCIe) and n − 1 interleaved Vector Engine adds, every
byte moved through the memory images, every operation costed.  numpy computes ``X.sum(axis=0)`` once.  Work
grows as n · (n − 1) rows for the simulator (every chip receives n − 1 rows) and n rows for numpy, so the
line also reports the simulator's time per row received: it should stay flat as n grows (time grows no
faster than the data moved).  Each timed run places X, then runs the collective; the first run pays the plan
caches and is reported apart.  The issue sets no ratio to meet; the line's aim (10^5) only flags a regression
by orders of magnitude — the criterion is the flat time per row.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks.common import best_of, load_example, report
from visa import RNGD, AxisSet, Context, i32
from visa.testing import place_dm

D = 256



def _case(ex: ModuleType, n: int) -> tuple[str, float, float, float, int]:
    ax = AxisSet(A=n, S=256, D=D, I=2)
    m = ax.m
    x = np.random.default_rng(n).integers(-(1 << 20), 1 << 20, size=(n, 256, D)).astype(np.int32)
    cycles: list[int] = []
    last: list[Any] = []

    def visa_all_reduce() -> None:
        ctx = Context(RNGD)
        ctx.num_chips = n
        t = place_dm(ctx, x, i32, m["A"], m["1 # 2"], m["S"], m["D"], 0, axes="A S D")
        last[:] = [ex.ring_all_reduce(ctx, m, t, n, 1 << 16)]
        cycles[:] = [ctx.schedule.makespan]

    start = time.perf_counter()
    visa_all_reduce()
    first = time.perf_counter() - start
    want = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(last[0].logical(axes="A S D"), np.broadcast_to(want, x.shape))
    ours = best_of(visa_all_reduce, repeat=3)
    theirs = best_of(lambda: x.sum(axis=0, dtype=np.int32), repeat=7)
    return f"ring AllReduce {n} chips × 256 KiB i32", ours, theirs, first, cycles[0]


def run() -> list[str]:
    ex = load_example("collectives")
    lines = []
    for n in (2, 4, 8):
        name, ours, theirs, first, cyc = _case(ex, n)
        per_row = ours / (n * (n - 1)) * 1e3
        lines.append(report(name, ours, theirs, 1e5) + f"   ({per_row:.2f} ms a row received, "
                     f"{cyc} simulated cycles, first run {first * 1e3:.0f} ms)")
    return lines


if __name__ == "__main__":
    for line in run():
        print(line)
