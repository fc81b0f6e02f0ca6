"""A 64 MiB DMA with a reordering mapping against numpy's ``transpose().copy()`` of the same permutation (issue 3).

The tensor ``A × B × C`` (i32, 64 MiB) moves HBM → HBM from ``m["A, B, C"]`` to ``m["B, A, C"]``: the DMA
plans its sequencer, poisons the destination, copies the bytes with one strided numpy copy (their written-state
travels by page: a known source marks the destination's pages written, no mask) and costs the move.  numpy does
the same permutation with ``x.transpose(1, 0, 2).copy()``.  Two shapes: 1 KiB rows (C = 256, the DMA's natural
case, 256-byte requests) and 4-byte packets (C = 1, a full element transpose, the worst case for a byte mover).
The first run pays for planning and the cost model (both cached by configuration); the figure reported is the best
of several runs, as for numpy.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.common import best_of, report
from visa import AxisSet, Context, i32
from visa.tensors.handles import HbmTensor

MiB = 1 << 20


def _case(a: int, b: int, c: int) -> tuple[str, float, float, float]:
    ax = AxisSet(A=a, B=b, C=c)
    m = ax.m
    ctx = Context.acquire()
    src = HbmTensor(ctx, i32, m["1"], m["A, B, C"], 0)
    x = np.random.default_rng(0).integers(-(1 << 31), 1 << 31, size=(a, b, c), dtype=np.int64).astype(np.int32)
    data, written = ctx.memory.chip(0).hbm.window(0, x.nbytes)
    data[:] = x.reshape(-1).view(np.uint8)
    written[:] = True
    out: list[HbmTensor[object, object, object]] = []

    def visa_move() -> None:
        out.clear()
        out.append(src.to_hbm(m["1"], m["B, A, C"], ctx.tdma, 1 << 30))

    start = time.perf_counter()
    visa_move()
    first = time.perf_counter() - start
    moved = ctx.memory.chip(0).hbm.window(1 << 30, (1 << 30) + x.nbytes)[0].view(np.int32).reshape(b, a, c)
    assert np.array_equal(moved, x.transpose(1, 0, 2))
    ours = best_of(visa_move, repeat=5)
    theirs = best_of(lambda: x.transpose(1, 0, 2).copy(), repeat=5)
    return f"DMA 64 MiB i32 HBM→HBM (A,B,C)→(B,A,C), C={c}", ours, theirs, first


def run() -> list[str]:
    lines = []
    for shape in ((64, 1024, 256), (4096, 4096, 1)):
        name, ours, theirs, first = _case(*shape)
        lines.append(report(name, ours, theirs, 3) + f"   (first run {first * 1e3:.0f} ms)")
    return lines


if __name__ == "__main__":
    for line in run():
        print(line)
