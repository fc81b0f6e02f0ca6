"""``collect.load-plan`` (visa/engines/fast_load_plan.py) against the reference register load (issue 24; manual
L4049–4061, L5063–5081): a kernel of many fetch → collect → to_vrf / to_trf passes — the same load again (the plan
made, then replayed), new values at the same place, another address, one cluster only, a stream not left a view of
DM, poison in the source, a load over registers written otherwise — leaves the same register file bytes and
written-state, the same tensors and the same schedule with the path on, off, and with every path off."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, TrfAddress, bf16, fastpaths, i8, i16, i32
from visa.testing import place_dm, place_vrf


def _ints(dtype: Any, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "int":
        return rng.integers(dtype.min, dtype.max, size=shape, endpoint=True).astype(dtype.storage)
    return rng.standard_normal(shape).astype(dtype.storage)


def _kernel(dtype: Any, flits: int, address: int, seed: int) -> tuple[list[np.ndarray], list[tuple[Any, ...]],
                                                                      np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the passes in a fresh context: the tensors read back, the schedule, the VRF and TRF images."""
    rng = np.random.default_rng(seed)
    ctx = Context(RNGD)
    per = 32 // (dtype.size_bits // 8)
    e = flits * per
    m = AxisSet(C=2, S=256, E=e, P=per, R=8, F=32).m
    out: list[np.ndarray] = []

    def vrf(t: Any, vaddr: int, cluster: Any = None, shown: str = "C S E") -> None:
        v = (ctx.sub.begin(t.view()).fetch(dtype, m[f"E / {per}"], m[f"E % {per}"])
             .collect(m[f"E / {per}"], m[f"E % {per}"]).to_vrf(m["E"], vaddr))
        out.append(np.asarray(v.logical(axes=shown)).copy())

    x = _ints(dtype, (2, 256, e), rng)
    t = place_dm(ctx, x, dtype, m["1"], m["C"], m["S"], m["E"], 4096, axes="C S E")
    for _ in range(3):  # the same load again: planned once, then replayed
        vrf(t, address)
    t = place_dm(ctx, _ints(dtype, (2, 256, e), rng), dtype, m["1"], m["C"], m["S"], m["E"], 4096, axes="C S E")
    vrf(t, address)  # new values at the same place
    vrf(t, address + 32 * flits)  # another address
    one = place_dm(ctx, _ints(dtype, (256, e), rng), dtype, m["1"], m["1 # 2"], m["S"], m["E"], 8192, axes="S E")
    for _ in range(2):  # one cluster's slices only
        v = (ctx.sub.begin(one.view()).fetch(dtype, m[f"E / {per}"], m[f"E % {per}"])
             .collect(m[f"E / {per}"], m[f"E % {per}"]).to_vrf(m["E"], address))
        out.append(np.asarray(v.logical(axes="S E")).copy())
    with fastpaths.disabled("fetch.dm-read"):  # a stream holding its values (not a view of DM)
        vrf(t, address)
        vrf(t, address)
    place_vrf(ctx, _ints(dtype, (2, 256, per), rng), dtype, m["1"], m["C"], m["S"], m["P"], address, axes="C S P")
    vrf(t, address)  # over registers written otherwise (part of them)
    ctx.memory.chip(0).dm.poison(4096 + 4, 4096 + 8)  # poison in the source: the load leaves it unwritten
    v = (ctx.sub.begin(t.view()).fetch(dtype, m[f"E / {per}"], m[f"E % {per}"])
         .collect(m[f"E / {per}"], m[f"E % {per}"]).to_vrf(m["E"], address))
    del v
    w = _ints(i8, (2, 256, 8, 32 * flits), rng)
    tw = place_dm(ctx, w, i8, m["1"], m["C"], m["S"], m["R, F"], 16384, axes="C S R F") \
        if flits == 1 else None
    if tw is not None:
        for half in (TrfAddress.FirstHalf, TrfAddress.FirstHalf, TrfAddress.SecondHalf):
            trf = (ctx.sub.begin(tw.view()).fetch(i8, m["R"], m["F"]).collect(m["R, F / 32"], m["F % 32"])
                   .to_trf(m["R"], m["F"], half))
            out.append(np.asarray(trf.logical(axes="C S R F")).copy())
    schedule = [(op.name, op.start, op.end, op.cycles, op.lanes, op.deps, op.traffic, op.notes, op.engines)
                for op in ctx.schedule.ops]
    chip = ctx.memory.chip(0)
    return (out, schedule, chip.vrf.data.copy(), chip.vrf.written.copy(), chip.trf.data.copy(),
            chip.trf.written.copy())


def _same(a: Any, b: Any) -> None:
    out_a, sched_a, *images_a = a
    out_b, sched_b, *images_b = b
    assert sched_a == sched_b
    assert len(out_a) == len(out_b)
    for x, y in zip(out_a, out_b, strict=True):
        assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8))
    for x, y in zip(images_a, images_b, strict=True):
        assert np.array_equal(x, y)


@pytest.mark.parametrize(("dtype", "flits", "where", "seed"),
                         [(i8, 1, 0, 1), (i16, 2, 1, 2), (i32, 1, 3, 3), (bf16, 2, 2, 4), (i32, 2, 0, 5)])
def test_register_loads_are_the_reference(dtype: Any, flits: int, where: int, seed: int) -> None:
    fast = _kernel(dtype, flits, 64 * where, seed)
    with fastpaths.disabled("collect.load-plan"):
        reference = _kernel(dtype, flits, 64 * where, seed)
    with fastpaths.disabled():
        every_off = _kernel(dtype, flits, 64 * where, seed)
    _same(fast, reference)
    _same(fast, every_off)
