"""Slices staged on a DMA's source (fused with a shuffle), memset, bound outputs (design API.md §8, reference
extensions; docs/manual-notes.md "issue 26").

Ports of the reference's v0.8 redistribution kernels (``chip_shuffle(p).chip_slice(...)``, ``cluster_slice``,
``to_dm_view``) and its memset guards, checked against numpy, with the cost on the schedule and the refusals.
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
    bf16,
    device,
    f32,
    i8,
    i32,
    launch,
    u32,
)
from visa.engines import memset as memset_engine
from visa.engines.dma import slicing
from visa.errors import AddressError, DtypeError, LayoutError, TypestateError, WrongTypeError

RNG = np.random.default_rng(262)
AX = AxisSet(Q=4, C=2, B=4, D=8, S=256, K=2, E=16)
m = AX.m


def test_chip_shuffle_then_chip_slice_of_a_middle_axis_is_one_dma() -> None:
    """Chip c keeps entry ``idx[c]`` of B — an axis between C and D, which ParallelCopy cannot take — of what chip
    ``p[c]`` held."""
    x = RNG.integers(-100, 100, (4, 256, 2, 4, 8)).astype(np.int32)
    host = HostTensor.from_numpy(x, i32, m["Q, S, C, B, D"], axes="Q S C B D")
    ctx = Context.acquire()
    xh = host.to_hbm(m["Q"], m["S, C, B, D"], ctx.pdma, 0)
    p, idx = [1, 2, 3, 0], [3, 0, 1, 2]

    @device(chip=4)
    def k(ctx: Context, xh: Any) -> Any:
        d = xh.to_dm(m["1 # 2"], m["S"], m["C, B, D"], ctx.tdma, 0)
        out = d.view().chip_shuffle(p).chip_slice(m["B"], m["C, D"], idx).to_dm(m["1 # 2"], m["S"], m["C, D"],
                                                                                 ctx.tdma, 4096)
        return out.to_hbm(m["S, C, D"], ctx.tdma, 1 << 20)

    y = launch(k, ctx, xh)
    want = np.stack([x[p[c], :, :, idx[c]] for c in range(4)])
    assert np.array_equal(y.logical(axes="Q S C D"), want)
    staged = [op for op in ctx.schedule.ops if "chip_slice" in op.name]
    assert len(staged) == 1 and staged[0].track == "tdma"  # one DMA for the shuffle and the slice
    assert "ChipSlice(offsets [96, 0, 32, 64] B)" in staged[0].engines[0].config  # idx[c] × 32 B per chip


def test_slice_then_shuffle_composes_and_a_cluster_slice_into_a_view() -> None:
    x = RNG.integers(-100, 100, (4, 2, 256, 4, 8)).astype(np.int32)
    ctx = Context.acquire()
    ctx.num_chips = 4
    from visa.testing import place_dm

    d = place_dm(ctx, x, i32, m["Q"], m["K"], m["S"], m["B, D"], 0, axes="Q K S B D")
    out = d.view().chip_slice(m["B"], m["D"], [0, 1, 2, 3]).chip_shuffle([3, 0, 1, 2]).to_dm(
        m["K"], m["S"], m["D"], ctx.tdma, 4096)
    want = np.stack([x[[3, 0, 1, 2][c], :, :, [0, 1, 2, 3][[3, 0, 1, 2][c]]] for c in range(4)])
    assert np.array_equal(out.logical(axes="Q K S D"), want)  # chip c: chip p[c] at B = idx[p[c]]
    target = DmTensor(ctx, i32, m["Q"], m["K"], m["S"], m["D"], 8192)
    target.view().memset(0, ctx.sub)
    d.view().cluster_slice(m["B"], m["D"], [2, 1]).to_dm_view(target.view(), ctx.tdma)
    assert np.array_equal(target.logical(axes="Q K S D"), np.stack([x[:, 0, :, 2], x[:, 1, :, 1]], axis=1))


def test_staged_slice_rules() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 4
    d = DmTensor(ctx, i32, m["Q"], m["1 # 2"], m["S"], m["C, B, D"], 0)
    with pytest.raises(LayoutError, match="not m"):
        d.view().chip_slice(m["B"], m["D, C"], [0, 1, 2, 3])
    with pytest.raises(LayoutError, match="3 indices for 4 chips"):
        d.view().chip_slice(m["B"], m["C, D"], [0, 1, 2])
    s = HbmScalar.from_host(ctx, 1, u32, 0)
    with pytest.raises(TypestateError, match="constants"):
        d.view().chip_slice(m["B"], m["C, D"], [s, 0, 1, 2])
    with pytest.raises(TypestateError, match="constants"):
        d.view().chip_shuffle([s, 0, 1, 2])
    with pytest.raises(LayoutError, match="outside the digit"):
        d.view().chip_slice(m["B"], m["C, D"], [0, 1, 2, 4])
    with pytest.raises(LayoutError, match="not a digit of Element"):
        d.view().chip_slice(m["S"], m["C, B, D"], [0, 1, 2, 3])  # S is in Slice
    hb = d.to_hbm(m["S, C, B, D"], ctx.tdma, 0)
    with pytest.raises(LayoutError, match="no Cluster level"):
        hb.view().cluster_slice(m["B / 2"], m["S, C, B % 2, D"], [1, 0])
    h = DmTensor(ctx, i8, m["Q"], m["1 # 2"], m["S"], m["C, D, B"], 1 << 12)
    staged = h.view().chip_slice(m["D"], m["C, B"], [0, 1, 2, 3])  # D steps 4 bytes (B = 4 i8)
    with pytest.raises(AddressError, match="8-byte words"):  # the reference's DM-producing slice rule
        staged.to_dm(m["1 # 2"], m["S"], m["C, B"], ctx.tdma, 1 << 14)
    with pytest.raises(AddressError, match="8-byte words"):
        slicing.check_dm_stride(4, RNGD.dma.write_address_align["DM"], m["D"], m["C, D, B"], "chip_slice")


def test_memset_by_the_sub_context_and_the_dma() -> None:
    """The reference's guards start from ``memset(0, sub)``; a DMA fills HBM; costs per engine."""
    ctx = Context.acquire()
    ctx.num_chips = 1
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["S"], m["E"], 0)
    d.view().memset(0.5, ctx.sub)
    assert np.array_equal(d.logical(axes="S E"), np.full((256, 16), 0.5, np.float32))
    fill = ctx.schedule.ops[-1]
    assert fill.track == "sub" and fill.cycles == 64 // max(RNGD.commit.sub_commit_sizes)  # 8-byte words
    h = HostTensor.zeros(bf16, m["S, E"]).to_hbm(m["1"], m["S, E"], ctx.pdma, 1 << 20)
    h.view().tile(m["S"], 2, m["S = 2 # 256, E"], 4).memset(-2.0, ctx.tdma)
    want = np.zeros((256, 16))
    want[4:6] = -2
    assert np.array_equal(h.logical(axes="S E").astype(float), want)
    assert ctx.schedule.ops[-1].track == "tdma" and ctx.schedule.ops[-1].cycles > RNGD.dma.startup_cycles


def test_memset_rules() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 1
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S"], m["E"], 0)
    with pytest.raises(DtypeError, match="not a value of i32"):
        d.view().memset(2**40, ctx.sub)
    with pytest.raises(TypestateError, match="ctx.sub or ctx.tdma"):
        d.view().memset(0, ctx.main)
    with pytest.raises(WrongTypeError):
        d.view().memset(0, "sub")  # type: ignore[arg-type]
    tile = d.view().tile(m["E"], 1, m["E = 1 # 16"], 3)  # one i32: half an 8-byte word
    with pytest.raises(AddressError, match="8-byte words"):
        tile.memset(1, ctx.sub)
    with pytest.raises(TypestateError, match="SRAM only"):
        memset_engine.check_context("hbm", "sub")


def test_launch_binds_the_result_to_an_existing_hbm_tensor() -> None:
    """``launch(kernel, ctx, x, out=existing)``: the result lands in ``existing`` (the reference's ``.output``)."""
    ax = AxisSet(A=2048)
    ctx = Context.acquire()
    x = HostTensor.rand(i32, ax.m["A"], RNG)
    xh = x.to_hbm(ax.m["1"], ax.m["A"], ctx.pdma, 0)
    out = HostTensor.zeros(i32, ax.m["A"]).to_hbm(ax.m["1"], ax.m["A"], ctx.pdma, 1 << 20)

    @device(chip=1)
    def twice(ctx: Context, xh: Any) -> Any:
        dm = xh.to_dm(ax.m["1 # 2"], ax.m["A / 8 # 256"], ax.m["A % 8"], ctx.tdma, 0)
        return dm.to_hbm(ax.m["A"], ctx.tdma, 1 << 24)

    got = launch(twice, ctx, xh, out=out)
    assert got is out and np.array_equal(out.logical(), x.numpy())
    assert ctx.memory()[0, "hbm"].tensors == 2  # x and out: the temporary result is gone
    wrong = HostTensor.zeros(i32, ax.m["A"]).to_hbm(ax.m["1"], ax.m["A"], ctx.pdma,
                                                                                  1 << 26).relabel(
        Element=ax.m["A % 8, A / 8"])
    with pytest.raises(LayoutError, match="the same bytes would hold other elements"):
        launch(twice, ctx, xh, out=wrong)
    with pytest.raises(WrongTypeError, match="out"):
        launch(twice, ctx, xh, out=x)
    other = HostTensor.zeros(bf16, ax.m["A"]).to_hbm(ax.m["1"], ax.m["A"], ctx.pdma, 1 << 27)
    with pytest.raises(DtypeError, match="holds bf16"):
        launch(twice, ctx, xh, out=other)
