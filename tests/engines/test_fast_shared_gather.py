"""The fast path ``commit.shared-gather`` (visa/engines/fast_shared.py): a commit of an inter-slice reduce's shared
rows (L6654–6672) that ``commit.shared-rows`` does not take — the result in one slice of each group, no slice
repeating another — writes the enabled slices' rows gathered from the distinct rows instead of the whole stream.
Ring sums over 2–8 rows (``AddSat``, ``Max``; one cluster or two; into fresh DM or over bytes written before,
with a poisoned input element or not) leave the result, the DM bytes and their written-state and the schedule
(each operation's name, start and end) of the reference: with the path alone on, with every path on but it,
with every path off."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import alone_and_without
from visa import RNGD, AxisSet, Context, HostTensor, device, fastpaths, i32, launch
from visa.engines.vector import InterSliceReduceOpI32
from visa.memory import owed

OUT = 1 << 12  # the commit's address in every slice


def _program(rows: int, op: str, dirty: bool) -> tuple[Any, ...]:
    n = 8192 // rows * 4  # 4 time steps of 8 lanes in every slice of cluster 0
    m = AxisSet(R=rows, A=n, S=512, E=64).m
    group = 256 // rows  # groups of `rows` neighbouring slices
    ctx = Context(RNGD)
    rng = np.random.default_rng(rows)
    x = rng.integers(-(2**31), 2**31 - 1, size=(rows, n), dtype=np.int64).astype(np.int32)
    h = HostTensor.from_numpy(x, i32, m["R, A"], axes="R A").to_hbm(m["1"], m["R, A"], ctx.pdma, 0)
    y = rng.integers(-(2**31), 2**31 - 1, size=(512, 64), dtype=np.int64).astype(np.int32)
    g = HostTensor.from_numpy(y, i32, m["S, E"], axes="S E").to_hbm(m["1"], m["S, E"], ctx.pdma, 1 << 20)
    tm, ln = m[f"A / {8 * group}"], m["A % 8"]

    @device(chip=1)
    def kernel(ctx: Context, h: Any, g: Any) -> Any:
        if dirty:  # bytes written before where the commit writes, in every slice of both clusters
            g.to_dm(m["S / 256"], m["S % 256"], m["E"], ctx.tdma, OUT)
        dm = h.to_dm(m["1 # 2"], m[f"A / 8 % {group}, R"], m[f"A / {8 * group}, A % 8"], ctx.tdma, 0)
        return (ctx.main.begin(dm.view()).fetch(i32, tm, ln).collect(tm, ln).vector_init()
                .vector_inter_slice_reduce(m[f"A / 8 % {group}, 1 # {rows}"], tm, getattr(InterSliceReduceOpI32, op))
                .vector_final().commit(m[f"A / {8 * group}, A % 8"], OUT))

    got = launch(kernel, ctx, h, g)
    image = ctx.memory.chip(0).dm
    units = np.arange(512, dtype=np.int64)
    known = image.known_bytes(0, OUT + 512).reshape(-1, OUT + 512)[units]
    data = np.where(known, owed.read_units(image, units, 0, OUT + 512), 0)
    schedule = [(o.name, o.start, o.end) for o in ctx.schedule.ops]
    return data, known, schedule, got.logical(axes="A")


@pytest.mark.parametrize("rows", [2, 4, 8])
@pytest.mark.parametrize("op", ["AddSat", "Max"])
@pytest.mark.parametrize("dirty", [False, True])
def test_shared_gather_is_the_reference(rows: int, op: str, dirty: bool) -> None:
    alone, without = alone_and_without("commit.shared-gather", lambda: _program(rows, op, dirty))
    with fastpaths.disabled():
        none = _program(rows, op, dirty)
    for got, want, off in zip(alone, without, none, strict=True):
        if isinstance(got, np.ndarray):
            assert np.array_equal(got, want) and np.array_equal(got, off)
        else:
            assert got == want == off
