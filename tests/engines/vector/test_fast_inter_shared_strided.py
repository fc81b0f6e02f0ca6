"""The fast path ``vector.inter-shared-strided`` (visa/engines/vector/fast_inter_shared.py): the class rows of an
inter-slice reduce's shared result (L6654–6672) read as strided rows of the folded groups instead of gathered by
group through a transposed copy.  Ring sums over 2–8 rows (``AddSat``, ``Max``; into fresh DM or over bytes written
before) and the first-launch benchmark's ring sum leave the result, the DM bytes and their written-state and the
schedule of the reference: with the path alone on, with every path on but it, with every path off."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engines.test_fast_shared_gather import _program
from visa import AxisSet, Context, HostTensor, fastpaths, i32, launch

NAME = "vector.inter-shared-strided"


def _same(runs: tuple[Any, ...]) -> None:
    alone, without, none = runs
    for got, want, off in zip(alone, without, none, strict=True):
        if isinstance(got, np.ndarray):
            assert np.array_equal(got, want) and np.array_equal(got, off)
        else:
            assert got == want == off


@pytest.mark.parametrize("rows", [2, 4, 8])
@pytest.mark.parametrize("op", ["AddSat", "Max"])
@pytest.mark.parametrize("dirty", [False, True])
def test_strided_class_rows_are_the_reference(rows: int, op: str, dirty: bool) -> None:
    alone = _program(rows, op, dirty)  # (every path on: it needs vector.inter-shared and the plan's digits)
    with fastpaths.disabled(NAME):
        without = _program(rows, op, dirty)
    with fastpaths.disabled():
        none = _program(rows, op, dirty)
    _same((alone, without, none))


def _ring_sum(n: int) -> tuple[Any, ...]:
    from benchmarks import bench_first_launch as b

    ring = AxisSet(R=4, A=n)
    r = ring.m
    ctx = Context.acquire()
    y = np.random.default_rng(n).integers(-2**20, 2**20, size=(4, n), dtype=np.int32)
    h = HostTensor.from_numpy(y, i32, r["R, A"]).to_hbm(r["1"], r["R, A"], ctx.pdma, 0)
    kept, b.RING, b.RING_N = (b.RING, b.RING_N), ring, n
    try:
        out = launch(b.ring_sum, ctx, h)
    finally:
        b.RING, b.RING_N = kept
    got = out.logical(axes="A")
    assert np.array_equal(got, y.sum(axis=0, dtype=np.int32))
    return got, [(o.name, o.start, o.end) for o in ctx.schedule.ops]


@pytest.mark.parametrize("n", [1 << 13, 1 << 15])
def test_first_launch_ring_sum_is_the_reference(n: int) -> None:
    alone = _ring_sum(n)  # (every path on: it needs vector.inter-shared and the plan's digits)
    with fastpaths.disabled(NAME):
        without = _ring_sum(n)
    with fastpaths.disabled():
        none = _ring_sum(n)
    _same((alone, without, none))
