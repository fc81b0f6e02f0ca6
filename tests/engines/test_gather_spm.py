"""SPM tensors, gathers and scatters with SPM indices, sparse prefixes and multi-axis indexed regions (design
API.md §8, reference extensions; docs/manual-notes.md "issue 26").

Ports of the reference's scatter/gather examples (furiosa-opt v0.9: gather_minimal, gather_aligned_spm,
scatter_spm, gather_consecutive_indexed_axes, scatter_contiguous_axes, sparse_gather_runtime_length,
sparse_gather_consecutive_axes), each checked against numpy, and the refusals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, DmTensor, HbmScalar, HostTensor, bf16, device, i32, launch
from visa.engines import spm as spm_engine
from visa.errors import AddressError, HardwareLimitError, LayoutError, PoisonError, TypestateError, VisaError

RNG = np.random.default_rng(261)
AX = AxisSet(A=2, K=512, D=128, G=512, C=612, VO=256, VI=2)
m = AX.m


def _hbm(ctx: Context, array: np.ndarray, dtype: Any, mapping: str, address: int, axes: str | None = None) -> Any:
    return HostTensor.from_numpy(array, dtype, m[mapping], axes).to_hbm(m["1"], m[mapping], ctx.pdma, address)


def test_gather_minimal_into_slices_split_between_slice_and_element() -> None:
    """``G / 2`` in Slice and ``G % 2, D`` in the Element: the index axis split between two levels."""
    ctx = Context.acquire()
    table = RNG.standard_normal((512, 128)).astype(np.float32)
    ids = RNG.integers(0, 512, 512).astype(np.int32)
    th = _hbm(ctx, table, bf16, "K, D", 0)
    ih = _hbm(ctx, ids, i32, "G", 1 << 22)
    ctx.num_chips = 1
    out = th.view().gather(m["K"], ih).to_dm(m["1 # 2"], m["G / 2"], m["G % 2, D"], ctx.tdma, 0)
    assert np.array_equal(out.logical(axes="G D"), th.logical(axes="K D")[ids])


def test_spm_round_trip_and_gather_with_spm_indices() -> None:
    """gather_aligned_spm: the indices DM → SPM (one PE holds all 512, 2 KiB), then the gather reads them there."""
    ctx = Context.acquire()
    ids = RNG.integers(0, 512, 512).astype(np.int32)
    ih = _hbm(ctx, ids, i32, "G", 0)
    th = _hbm(ctx, RNG.standard_normal((512, 128)), bf16, "K, D", 1 << 22)

    @device(chip=1)
    def k(ctx: Context, th: Any, ih: Any) -> Any:
        idm = ih.to_dm(m["1 # 2"], m["G / 2"], m["G % 2"], ctx.tdma, 0)
        spm = idm.to_spm(m["1 # 4"], m["G"], ctx.tdma, 0)
        back = spm.to_dm(m["1 # 2"], m["G / 2"], m["G % 2"], ctx.tdma, 64)
        assert np.array_equal(back.logical(axes="G"), ids)
        report = ctx.memory()
        assert report[0, "spm"].capacity == 4096 and report[0, "spm"].live == 2048
        return th.view().gather(m["K"], spm).to_hbm(m["1"], m["G, D"], ctx.tdma, 1 << 24)

    y = launch(k, ctx, th, ih)
    assert np.array_equal(y.logical(axes="G D"), th.logical(axes="K D")[ids])
    move = next(op for op in ctx.schedule.ops if "dm.to_spm" in op.name)
    assert move.cycles == RNGD.dma.startup_cycles + 2048 // RNGD.spm.dmn_bytes_per_cycle  # one PE's 2 KiB
    assert ctx.memory()[0, "spm"].live == 0  # the kernel's SPM tensor is gone with it


def test_scatter_with_spm_indices_and_its_refusals() -> None:
    """scatter_spm: ``output.scatter(m["C"], spm_ids)`` from DM; a repeated index is refused, nothing written."""
    ctx = Context.acquire()
    data = RNG.standard_normal((512, 128)).astype(np.float32)
    pos = RNG.permutation(612)[:512].astype(np.int32)
    dh = _hbm(ctx, data, bf16, "K, D", 0)
    out = _hbm(ctx, np.zeros((612, 128)), bf16, "C, D", 1 << 22)
    ph = _hbm(ctx, pos, i32, "K", 1 << 24)
    ctx.num_chips = 1
    pdm = ph.to_dm(m["1 # 2"], m["1 # 256"], m["K"], ctx.tdma, 0)
    spm = pdm.to_spm(m["1 # 4"], m["K"], ctx.tdma, 0)
    ddm = dh.to_dm(m["1 # 2"], m["K / 2"], m["K % 2, D"], ctx.tdma, 1 << 12)
    ddm.to_hbm_view(out.view().scatter(m["C"], spm), ctx.tdma)
    want = np.zeros((612, 128))
    want[pos] = dh.logical(axes="K D").astype(float)
    assert np.array_equal(out.logical(axes="C D").astype(float), want)


def test_spm_placement_rules() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 1
    big = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["K, A"], 0)  # 1024 i32 = 4 KiB: fits
    with pytest.raises(HardwareLimitError, match="4096 bytes of one PE"):  # 2048 i32 = 8 KiB
        DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["G, VI, A"], 1 << 16).to_spm(
            m["1 # 4"], m["G, VI, A"], ctx.tdma, 0)
    with pytest.raises(HardwareLimitError, match="Pe size must be 4"):
        big.to_spm(m["1 # 2"], m["K, A"], ctx.tdma, 0)
    with pytest.raises(LayoutError, match="does not use axis"):
        spm_engine.plan(RNGD, i32, "dm", big.levels, "spm", {"Chip": m["1"], "Cluster": m["1 # 2"],
                                                            "Pe": m["1 # 4"], "Element": m["K"]}, "dm.to_spm")


def test_multi_axis_regions_gather_and_scatter() -> None:
    """gather_consecutive_indexed_axes and scatter_contiguous_axes: one index picks a row of ``[A, K]``
    (``a · |K| + k``) or of ``[A, C]``."""
    ctx = Context.acquire()
    table = RNG.standard_normal((2, 512, 128))
    th = _hbm(ctx, table, bf16, "A, K, D", 0)
    ids = RNG.integers(0, 1024, 512).astype(np.int32)
    ih = _hbm(ctx, ids, i32, "G", 1 << 24)
    ctx.num_chips = 1
    g = th.view().gather(m["A, K"], ih).to_dm(m["1 # 2"], m["G / 2"], m["G % 2, D"], ctx.tdma, 0)
    flat = th.logical(axes="A K D").astype(float).reshape(1024, 128)
    assert np.array_equal(g.logical(axes="G D").astype(float), flat[ids])
    out = _hbm(ctx, np.zeros((2, 612, 128)), bf16, "A, C, D", 1 << 25)
    pos = RNG.permutation(2 * 612)[:512].astype(np.int32)
    ph = _hbm(ctx, pos, i32, "K", 1 << 27)
    src = _hbm(ctx, RNG.standard_normal((512, 128)), bf16, "K, D", 1 << 28)
    src.to_hbm_view(out.view().scatter(m["A, C"], ph), ctx.tdma)
    want = np.zeros((2 * 612, 128))
    want[pos] = src.logical(axes="K D").astype(float)
    assert np.array_equal(out.logical(axes="A C D").astype(float).reshape(-1, 128), want)
    with pytest.raises(LayoutError, match="whole axes"):
        th.view().gather(m["K / 2"], ih).to_dm(m["1 # 2"], m["G / 2"], m["G % 2, D"], ctx.tdma, 0)
    with pytest.raises(LayoutError, match="must name the index axes"):
        th.view().gather(m["A, K"], ih).to_hbm(m["1"], m["G, A, D"], ctx.tdma, 0)


def test_sparse_prefix_moves_only_the_valid_indices() -> None:
    """sparse_gather_runtime_length: a valid length from an SPM scalar; the rest keeps its bytes (a view zeroed
    first) or stays poison (a new tensor); indices past the prefix are not even checked."""
    ctx = Context.acquire()
    table = RNG.standard_normal((512, 128))
    ids = RNG.integers(0, 512, 512).astype(np.int32)
    ids[400:] = 9999  # out of range, past the prefix: never read
    th = _hbm(ctx, table, bf16, "K, D", 0)
    ih = _hbm(ctx, ids, i32, "G", 1 << 22)
    valid = HbmScalar.from_host(ctx, 300, i32, 1 << 23)

    @device(chip=1)
    def k(ctx: Context, th: Any, ih: Any, valid: HbmScalar[Any]) -> Any:
        n = valid.to_spm(ctx.tdma)
        out = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["G / 2"], m["G % 2, D"], 0)
        out.view().memset(0.0, ctx.sub)
        th.view().gather(m["K"], ih).sparse_prefix(n).to_dm_view(out.view(), ctx.tdma)
        fresh = th.view().gather(m["K"], ih).sparse_prefix(n).to_dm(m["1 # 2"], m["G / 2"], m["G % 2, D"],
                                                                       ctx.tdma, 1 << 12)
        with pytest.raises(PoisonError):
            fresh.logical()
        return out.to_hbm(m["G, D"], ctx.tdma, 1 << 24)

    y = launch(k, ctx, th, ih, valid)
    want = th.logical(axes="K D").astype(float)[np.clip(ids, 0, 511)]
    want[300:] = 0
    assert np.array_equal(y.logical(axes="G D").astype(float), want)
    full = [op for op in ctx.schedule.ops if "gather" in op.name]
    assert all("prefix 300" in op.name or "to_dm_view" in op.name for op in full)
    valid.write(401)  # now an out-of-range index is inside the prefix
    with pytest.raises(AddressError, match="outside K"):
        launch(k, ctx, th, ih, valid)
    valid.write(513)
    with pytest.raises(AddressError, match="valid length 513"):
        launch(k, ctx, th, ih, valid)


def test_sparse_prefix_over_two_index_axes_counts_in_c_order() -> None:
    """sparse_gather_consecutive_axes: index axes ``[VO, VI]``, the prefix over their C order."""
    ctx = Context.acquire()
    ids = RNG.integers(0, 512, (256, 2)).astype(np.int32)
    th = _hbm(ctx, RNG.standard_normal((512, 128)), bf16, "K, D", 0)
    ih = _hbm(ctx, ids, i32, "VO, VI", 1 << 22)
    ctx.num_chips = 1
    out = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["VO"], m["VI, D"], 0)
    out.view().memset(0.0, ctx.sub)
    th.view().gather(m["K"], ih).sparse_prefix(77).to_dm_view(out.view(), ctx.tdma)
    want = th.logical(axes="K D").astype(float)[ids.reshape(-1)]
    want[77:] = 0
    assert np.array_equal(out.logical(axes="VO VI D").astype(float).reshape(-1, 128), want)
    hs = HbmScalar.from_host(ctx, 3, i32, 1 << 23)
    with pytest.raises(TypestateError, match="register"):
        th.view().gather(m["K"], ih).sparse_prefix(hs).to_dm_view(out.view(), ctx.tdma)
    with pytest.raises(VisaError):
        th.view().gather(m["K"], ih).sparse_prefix(1.5)  # type: ignore[arg-type]
