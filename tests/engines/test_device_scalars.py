"""Device scalars, runtime guards on them and runtime tile starts (design API.md §8, a reference extension;
docs/manual-notes.md "issue 26").

Ports of the reference's runtime-scalar kernels (furiosa-opt v0.9 ``HbmScalar`` examples: a guard on each scalar
type, the bounded dynamic expert loop, the runtime-indexed copy), checked against numpy; the cost of a guard from
SPM against one from HBM on the schedule; the runtime tile's reach on the schedule; and one test per refusal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import (
    RNGD,
    AxisSet,
    Context,
    DmTensor,
    HbmScalar,
    HostTensor,
    bool_,
    device,
    i32,
    i64,
    launch,
    u32,
    u64,
)
from visa.engines.guard import guard_cycles, register_read_cycles
from visa.errors import AddressError, DtypeError, LayoutError, PoisonError, TypestateError, WrongTypeError

AX = AxisSet(S=64, G=4, W=8, O=128, P=2)
m = AX.m


def _guard_kernel(pred: Any) -> Any:
    """The reference's scalar guards: zeros, then ones where the staged scalar says so (memset by the sub
    context, the guard a register read)."""

    @device(chip=1)
    def k(ctx: Context, value: HbmScalar[Any]) -> Any:
        out = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S # 256"], m["P"], 0)
        out.view().memset(0, ctx.sub)
        s = value.to_spm(ctx.tdma)
        if ctx.sub.when(s, pred):
            out.view().memset(1, ctx.sub)
        return out.to_hbm(m["S, P"], ctx.tdma, 1 << 20)

    return k


@pytest.mark.parametrize("dtype, value, pred, want", [
    (i32, 5, lambda v: v > 0, 1), (i32, 0, lambda v: v > 0, 0),
    (bool_, True, None, 1), (bool_, False, None, 0),
    (i32, -3, lambda v: (v & 0xFFFFFFFF) > 0, 1),  # Rust's `value as u32 > 0` (signed_to_unsigned_guard)
    (u32, 2**32 - 1, lambda v: v + 1 > 2**32 - 1, 1),  # zero-extended to usize (u32_to_usize_guard)
    (u64, 2**32, lambda v: v > 2**32 - 1, 1),  # bits above 32 survive in SPM (u64_scalar_guard)
    (i64, -(2**40), lambda v: v < 0, 1),
])
def test_scalar_guards_of_every_type(dtype: Any, value: Any, pred: Any, want: int) -> None:
    ctx = Context.acquire()
    s = HbmScalar.from_host(ctx, value, dtype, 1 << 24)
    y = launch(_guard_kernel(pred), ctx, s)
    assert np.array_equal(y.logical(axes="S P"), np.full((64, 2), want))
    assert s.read() == value


def test_a_guard_from_spm_costs_a_register_read_and_from_hbm_a_dma_read() -> None:
    ctx = Context.acquire()
    s = HbmScalar.from_host(ctx, 3, u32, 1 << 24)
    ctx.num_chips = 1
    spm = s.to_spm(ctx.sub)
    assert ctx.main.when(spm > 2) and not ctx.main.when(spm, lambda v: v > 3)
    assert ctx.tdma.when(s, lambda v: v == 3)
    guards = [op for op in ctx.schedule.ops if "when" in op.name]
    assert [op.cycles for op in guards] == [register_read_cycles(RNGD, 4)] * 2 + [guard_cycles(RNGD, 4)]
    assert register_read_cycles(RNGD, 4) == 1 and guard_cycles(RNGD, 4) == 501  # 128 B/cycle (L2945); L2467
    stage = next(op for op in ctx.schedule.ops if "to_spm" in op.name)
    assert guards[0].start >= stage.end  # a guard waits until the scalar is staged


def _groups(first: int) -> tuple[np.ndarray, Context, Any, HbmScalar[Any]]:
    """Four groups of 64 × 8 i32 in HBM, and a u32 scalar (the reference's expert-loop inputs)."""
    x = np.arange(64 * 4 * 8, dtype=np.int32).reshape(64, 4, 8)
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, i32, m["S, G, W"]).to_hbm(m["1"], m["S, G, W"], ctx.pdma, 0)
    return x, ctx, xh, HbmScalar.from_host(ctx, first, u32, 1 << 24)


def test_write_between_launches_changes_what_the_next_launch_sees() -> None:
    """The bounded dynamic expert loop: only the first ``active`` groups are copied; the rest stay zero."""
    x, ctx, xh, active = _groups(2)

    @device(chip=1)
    def loop(ctx: Context, xh: Any, active: HbmScalar[Any]) -> Any:
        src = xh.to_dm(m["1 # 2"], m["S # 256"], m["G, W"], ctx.tdma, 0)
        out = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S # 256"], m["G, W"], 1 << 12)
        out.view().memset(0, ctx.sub)
        n = active.to_spm(ctx.tdma)
        for g in range(4):
            if ctx.main.when(n, lambda v, g=g: g < v):
                view = src.view().tile(m["G"], 1, m["1 # 4, W"], g)
                target = out.view().tile(m["G"], 1, m["1 # 4, W"], g)
                (ctx.main.begin(view).fetch(i32, m["1"], m["W"]).collect(m["1"], m["W"]).commit_view(target))
        return out.to_hbm(m["S, G, W"], ctx.tdma, 1 << 20)

    for n in (2, 4, 0):
        active.write(n)
        y = launch(loop, ctx, xh, active)
        want = x.copy()
        want[:, n:] = 0
        assert np.array_equal(y.logical(axes="S G W"), want)


def test_runtime_indexed_copy_reads_the_tile_the_scalar_names() -> None:
    """The reference's runtime_scalar_indexed_copy: ``tile(m["G"], 1, …, start=s)``; a start past G is refused."""
    x, ctx, xh, sel = _groups(0)

    @device(chip=1)
    def copy(ctx: Context, xh: Any, sel: HbmScalar[Any]) -> Any:
        d = xh.to_dm(m["1 # 2"], m["S # 256"], m["G, W"], ctx.tdma, 0)
        s = sel.to_spm(ctx.tdma)
        src = d.view().tile(m["G"], 1, m["1 # 4, W"], start=s)
        out = (ctx.main.begin(src).fetch(i32, m["1"], m["W"]).collect(m["1"], m["W"]).commit(m["W"], 4096))
        return out.to_hbm(m["S, W"], ctx.tdma, 1 << 22)

    for g in (2, 0, 3):
        sel.write(g)
        assert np.array_equal(launch(copy, ctx, xh, sel).logical(axes="S W"), x[:, g])
    sel.write(4)
    with pytest.raises(AddressError, match="runs past") as err:
        launch(copy, ctx, xh, sel)
    assert "= 4" in str(err.value)


def test_a_runtime_tile_occupies_every_tile_it_could_reach_on_the_schedule() -> None:
    """The pass reading ``tile(start=s)`` is ordered after a write to any group, whatever the value (here it reads
    group 0, and a later write to group 3 must wait for it: write-after-read on the reach)."""
    ctx = Context.acquire()
    ctx.num_chips = 1
    sel = HbmScalar.from_host(ctx, 0, u32, 1 << 24)
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S # 256"], m["G, W"], 0)
    d.view().memset(5, ctx.sub)
    s = sel.to_spm(ctx.sub)
    src = d.view().tile(m["G"], 1, m["1 # 4, W"], start=s * 1)
    assert src.reach is not None and len(src.reach) == 4 and src.depends
    read = ctx.main.begin(src).fetch(i32, m["1"], m["W"]).collect(m["1"], m["W"]).commit(m["W"], 4096)
    assert np.array_equal(read.logical(axes="S W"), np.full((64, 8), 5))
    d.view().tile(m["G"], 1, m["1 # 4, W"], 3).memset(9, ctx.sub)  # another group
    ops = ctx.schedule.ops
    passes = [op for op in ops if op.track == "main"]
    late = ops[-1]
    assert late.start >= passes[-1].end  # waited for the reader of the reach


def test_scalar_refusals() -> None:
    ctx = Context.acquire()
    with pytest.raises(WrongTypeError, match="device scalar type"):
        HbmScalar.from_host(ctx, 1, np.int32, 0)  # type: ignore[arg-type]
    with pytest.raises(DtypeError, match="outside u32"):
        HbmScalar.from_host(ctx, -1, u32, 0)
    with pytest.raises(AddressError, match="multiple of 8"):
        HbmScalar.from_host(ctx, 1, u64, 4)
    s = HbmScalar.from_host(ctx, 1, i32, 64)
    with pytest.raises(TypestateError, match="cannot branch"):
        bool(s > 0)
    ctx.num_chips = 1
    with pytest.raises(TypestateError, match="between launches"):
        s.write(3)
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S # 256"], m["G, W"], 0)
    with pytest.raises(TypestateError, match="register"):
        d.view().tile(m["G"], 1, m["1 # 4, W"], start=s)  # an HbmScalar start: stage it first
    ctx.num_chips = 4
    with pytest.raises(LayoutError, match="chips=4"):
        ctx.main.when(s > 0)
    ctx.num_chips = None
    lonely = HbmScalar.from_host(ctx, 1, i32, 128)
    lonely._store(0)  # (a direct write, as a test does)
    img = ctx.memory.chip(0).hbm
    img.poison(256, 264)
    unwritten = HbmScalar.__new__(HbmScalar)
    for slot, v in (("ctx", ctx), ("dtype", i32), ("address", 256), ("chips", 1), ("region", None),
                    ("ready_at", 0)):
        object.__setattr__(unwritten, slot, v)
    with pytest.raises(PoisonError, match="never written"):
        ctx.main.when(unwritten > 0)
