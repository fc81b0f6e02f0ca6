"""Fetch → collect → commit of a 2 MB i8 tensor over every slice of a chip, against numpy's copy (issue 4).

The tensor ``[C = 2, S = 256, A = 64, B = 64]`` lives in DM with Cluster ``C``, Slice ``S`` and Element
``[A, B]`` (4 KB per slice, all 512 slices).  One pass fetches it as Time ``A``, Packet ``B`` (64 bytes),
collects it into two 32-byte flits per packet and commits it as Element ``[B / 32, A, B % 32]``: a layout
change of every slice.  numpy does the same mathematics as a reshape, a transpose and a copy of the
``(512, 64, 2, 32)`` array.  The result is checked equal before timing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import best_of, report
from visa import AxisSet, Context, i8
from visa import dtypes as dt
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, A=64, B=64)


def setup() -> tuple[Context, Any, np.ndarray]:
    m = AX.m
    ctx = Context.acquire()
    ctx.num_chips = 1
    x = dt.random_values(i8, (2, 256, 64, 64), np.random.default_rng(0))
    src = place_dm(ctx, x, i8, m["1"], m["C"], m["S"], m["A, B"], 0, axes="C S A B")
    return ctx, src, x


def visa_pass(ctx: Context, src: Any) -> Any:
    m = AX.m
    return (ctx.main.begin(src.view())
            .fetch(i8, m["A"], m["B"])
            .collect(m["A, B / 32"], m["B % 32"])
            .commit(m["B / 32, A, B % 32"], 1 << 16))


def numpy_copy(x: np.ndarray) -> np.ndarray:
    return x.reshape(512, 64, 2, 32).transpose(0, 2, 1, 3).copy()


def run() -> list[str]:
    ctx, src, x = setup()
    out = visa_pass(ctx, src)
    raw = ctx.memory.chip(0).dm.data[:, :, 1 << 16: (1 << 16) + 4096].view(np.int8).reshape(512, 2, 64, 32)
    assert np.array_equal(raw, numpy_copy(x)), "the committed bytes differ from numpy's copy"
    assert np.array_equal(out.logical(axes="C S A B"), x)
    cycles = ctx.schedule.ops[-1].cycles
    ours = best_of(lambda: visa_pass(ctx, src), repeat=5)
    theirs = best_of(lambda: numpy_copy(x))
    return [report(f"fetch→collect→commit 2 MB, 512 slices ({cycles} cycles)", ours, theirs, 50)]


if __name__ == "__main__":
    print("\n".join(run()))
