"""``memory.occupancy-replay`` (visa/schedule/occupancy.py) against the reference DM occupancy (issue 24; manual
"Scheduling" L7042–7070, DM shared by both contexts L150–155): a kernel of repeated passes — the same register
load again and again (replayed), commits into DM, a tensor allocated, one freed, one dropped, a handle over bytes
that owns none — gives the same lifetimes, the same occupancy samples, the same tensors and the same schedule with
the path on, off, and with every path off."""

from __future__ import annotations

from typing import Any

import numpy as np

from visa import RNGD, AxisSet, Context, DmTensor, fastpaths, i32
from visa.testing import place_dm


def _kernel(seed: int) -> tuple[list[np.ndarray], list[tuple[Any, ...]], list[tuple[Any, ...]],
                                dict[int, list[tuple[int, int]]]]:
    rng = np.random.default_rng(seed)
    ctx = Context(RNGD)
    ax = AxisSet(C=2, S=256, E=64)
    m = ax.m
    out: list[np.ndarray] = []

    def data() -> np.ndarray:
        return rng.integers(-(2**31), 2**31 - 1, size=(2, 256, 64), endpoint=True).astype(np.int32)

    def vrf(t: Any, address: int = 0) -> None:
        v = (ctx.sub.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"]).collect(m["E / 8"], m["E % 8"])
             .to_vrf(m["E"], address))
        out.append(np.asarray(v.logical(axes="C S E")).copy())

    def commit(t: Any, address: int) -> Any:
        got = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"]).commit(m["E"], address)
        out.append(np.asarray(got.logical(axes="C S E")).copy())
        return got

    a = place_dm(ctx, data(), i32, m["1"], m["C"], m["S"], m["E"], 4096, axes="C S E")
    for _ in range(4):  # the same pass again and again: replayed
        vrf(a)
    b = commit(a, 8192)  # a DM tensor allocated by the pass
    for _ in range(3):
        vrf(b)
        vrf(a, 256)
    c = place_dm(ctx, data(), i32, m["1"], m["C"], m["S"], m["E"], 12288, axes="C S E")
    for _ in range(2):
        vrf(c)
    b.free()  # a DM tensor released
    for _ in range(2):
        vrf(a)
    del c  # a DM tensor dropped
    for _ in range(2):
        vrf(a)
    alias = DmTensor.from_addr(ctx, i32, m["1"], m["C"], m["S"], m["E"], 16384)  # bytes no tensor owns
    commit(a, 16384)
    for _ in range(3):
        vrf(alias)
    for _ in range(2):
        vrf(a)
    lifetimes = [(k, life.name, sorted(life.nbytes.items()), life.start, life.end, life.live, life.lo, life.hi)
                 for k, life in ctx.dm_occupancy.lifetimes.items()]
    schedule = [(op.name, op.start, op.end, op.lanes, op.deps, op.traffic, op.notes) for op in ctx.schedule.ops]
    return out, lifetimes, schedule, ctx.dm_occupancy.samples(ctx.schedule.makespan)


def test_the_occupancy_is_the_reference() -> None:
    fast = _kernel(1)
    with fastpaths.disabled("memory.occupancy-replay"):
        reference = _kernel(1)
    with fastpaths.disabled():
        every_off = _kernel(1)
    for other in (reference, every_off):
        assert len(fast[0]) == len(other[0])
        for x, y in zip(fast[0], other[0], strict=True):
            assert np.array_equal(x, y)
        assert fast[1:] == other[1:]
