"""The fast path ``dma.written-whole`` (visa/tensors/fast_poison.py): a tensor DMA that writes every byte of its new
destination skips poisoning them first; the DM and HBM images, their written-state and the schedule are the
reference's — for moves that cover their destination (over stale bytes) and moves that leave padding unwritten
(poisoned either way)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import alone_and_without
from visa import RNGD, AxisSet, Context, DmTensor, HbmTensor, HostTensor, bf16, device, launch
from visa.errors import PoisonError
from visa.memory import owed
from visa.tensors.fast_poison import covers

DM_LIMIT, HBM_LIMIT = 8192, 1 << 14


def _program() -> tuple[np.ndarray, ...]:
    ax = AxisSet(T=4, D=64, S=8)
    m = ax.m
    ctx = Context(RNGD)
    rng = np.random.default_rng(5)
    x = HostTensor.from_numpy(rng.standard_normal((4, 64)).astype(np.float32), bf16, m["T, D"], axes="T D")
    xh = x.to_hbm(m["1"], m["T, D"], ctx.pdma, 0)

    @device(chip=1)
    def kernel(ctx: Context, xh: HbmTensor[Any, Any, Any]) -> Any:
        cl, sl = m["1 # 2"], m["T # 256"]
        stale = xh.to_dm(cl, sl, m["D"], ctx.tdma, 0)  # (bytes 0..128 of slices 0..3 written)
        a = xh.to_dm(cl, sl, m["D"], ctx.tdma, 64)  # covers its bytes, over the stale ones: not poisoned first
        b = a.to_dm(cl, m["T # 256"], m["D # 72"], ctx.tdma, 256)  # padding 64..72 unwritten: poisoned
        h = b.to_hbm(m["T, D"], ctx.tdma, 8192)
        return stale, a, b, h

    launch(kernel, ctx, xh)
    chip = ctx.memory.chip(0)
    units = np.arange(8, dtype=np.int64)
    dm_known = chip.dm.known_bytes(0, DM_LIMIT).reshape(-1, DM_LIMIT)[:8]
    dm = np.where(dm_known, owed.read_units(chip.dm, units, 0, DM_LIMIT), 0)
    hbm, hbm_known = chip.hbm.gather(np.arange(HBM_LIMIT, dtype=np.int64))
    timing = np.array([(op.start, op.end) for op in ctx.schedule.ops])
    return dm, dm_known, np.where(hbm_known, hbm, 0), hbm_known, timing


def test_written_whole_is_the_reference() -> None:
    alone, without = alone_and_without("dma.written-whole", _program)
    for got, want in zip(alone, without, strict=True):
        assert np.array_equal(got, want)
    dm_known = alone[1]
    assert dm_known[:4, 64:192].all() and not dm_known[4:, :].any()  # a: written over the stale bytes
    assert not dm_known[:4, 256 + 128:256 + 144].any()  # b's padding: unwritten (poisoned) either way


def test_covers_is_a_dense_mixed_radix_of_the_bytes() -> None:
    from types import SimpleNamespace

    from visa.engines.dma.config import DmaLoop, Side
    from visa.engines.dma.plan import plan

    ax = AxisSet(T=4, D=64)
    m = ax.m
    src = Side.of("hbm", {"Chip": m["1"], "Element": m["T, D"]}, 0, name="x")
    dense = Side.of("dm", {"Chip": m["1"], "Cluster": m["1 # 2"], "Slice": m["T # 256"], "Element": m["D"]}, 0,
                    name="a")
    assert covers(plan(RNGD, bf16, src, dense, call="t"), 128)  # (the slice loop's stride steps units)

    def loops(*dst_size: tuple[int, int]) -> Any:
        return SimpleNamespace(all_loops=lambda: [DmaLoop(size=n, src=0, dst=d, axes="") for d, n in dst_size])

    assert covers(loops((64, 2), (1, 64)), 128)
    assert not covers(loops((128, 2), (1, 64)), 256)  # every other run of 64 bytes left out
    assert not covers(loops((1, 64)), 128)  # half of the bytes


def _read_back(out: Any, m: Any, ctx: Context, level: str) -> str:
    try:
        return str(out.to_host(m[level], ctx.pdma).numpy().tolist())
    except PoisonError as e:
        return f"PoisonError {str(e)[:60]}"


def _from_addr_source() -> str:
    """A source handle from an address (no region of its own) overlapping the new tensor: the move reads bytes
    the reference has poisoned."""
    m = AxisSet(T=4, D=64).m
    ctx = Context(RNGD)
    x = HostTensor.from_numpy(np.arange(256, dtype=np.float32).reshape(4, 64), bf16, m["T, D"], axes="T D")
    xh = x.to_hbm(m["1"], m["T, D"], ctx.pdma, 0)

    @device(chip=1)
    def kernel(ctx: Context, xh: Any) -> Any:
        xh.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)
        raw = DmTensor.from_addr(ctx, bf16, m["1"], m["1 # 2"], m["T # 256"], m["D"], 0)
        return raw.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 64).to_hbm(m["T, D"], ctx.tdma, 1 << 20)

    return _read_back(launch(kernel, ctx, xh), m, ctx, "T, D")


def _padding_chip() -> str:
    """A Chip level with a padding chip: the reference poisons both chips' bytes, the move writes chip 0's."""
    ax = AxisSet(T=4, D=64, C=2)
    m = ax.m
    ctx = Context(RNGD)
    xh = HostTensor.from_numpy(np.ones((2, 4, 64), np.float32), bf16, m["C, T, D"], axes="C T D").to_hbm(
        m["C"], m["T, D"], ctx.pdma, 0)
    yh = HostTensor.from_numpy(np.full((4, 64), 2, np.float32), bf16, m["T, D"], axes="T D").to_hbm(
        m["1 # 2"], m["T, D"], ctx.pdma, 1 << 16)

    @device(chip=2)
    def kernel(ctx: Context, xh: Any, yh: Any) -> Any:
        yh.to_hbm(m["1 # 2"], m["T, D"], ctx.tdma, 0)
        raw = HbmTensor.from_addr(ctx, bf16, m["C"], m["T, D"], 0)
        return raw.to_hbm(m["C"], m["T, D"], ctx.tdma, 1 << 20)

    return _read_back(launch(kernel, ctx, xh, yh), m, ctx, "C, T, D")


def _over_read() -> str:
    """The last packet of a DM → DM move reads past its source's end into the new tensor's first bytes (L7896)."""
    m = AxisSet(T=4, D=60, E=64).m
    ctx = Context(RNGD)
    z = HostTensor.from_numpy(np.full((4, 64), 7, np.float32), bf16, m["T, E"], axes="T E").to_hbm(
        m["1"], m["T, E"], ctx.pdma, 4096)
    x = HostTensor.from_numpy(np.ones((4, 60), np.float32), bf16, m["T, D"], axes="T D").to_hbm(
        m["1"], m["T, D"], ctx.pdma, 0)

    @device(chip=1)
    def kernel(ctx: Context, x: Any, z: Any) -> Any:
        z.to_dm(m["1 # 2"], m["T # 256"], m["E"], ctx.tdma, 0)
        src = x.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)
        src.to_dm(m["1 # 2"], m["T # 256"], m["D # 64"], ctx.tdma, 120)
        raw = DmTensor.from_addr(ctx, bf16, m["1"], m["1 # 2"], m["T # 256"], m["E"], 120)
        return raw.to_hbm(m["T, E"], ctx.tdma, 1 << 20)

    return _read_back(launch(kernel, ctx, x, z), m, ctx, "T, E")


@pytest.mark.parametrize("program", [_from_addr_source, _padding_chip, _over_read])
def test_moves_that_read_or_leave_poisoned_bytes_read_poison_either_way(program: Any) -> None:
    """Three moves a review found the path got wrong (known stale values where the reference reads poison): each
    reads poison with the path on, as with it off."""
    got = alone_and_without("dma.written-whole", program)
    assert got[0].startswith("PoisonError") and len(set(got)) == 1, got
