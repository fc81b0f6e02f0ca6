"""Placement rules at allocation (manual "Alignment Constraint" and "Size Constraint", L1070–1093).

Each rule raises a clear error that names the tensor, the level and the axis, and nothing is written: the
destination's bytes stay poisoned and no operation is recorded.
"""

from __future__ import annotations

import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, device, launch
from visa import dtypes as dt
from visa.errors import AddressError, HardwareLimitError, VisaError
from visa.memory.layout import check_placement
from visa.tensors.handles import HostTensor, TrfAddress, TrfTensor, VrfTensor

ax = AxisSet(A=2048, B=4, E=131073, R=16, C=128)
m = ax.m


def _hbm(ctx: Context, dtype: type[dt.Scalar] = dt.i32, element: str = "A") -> object:
    x = HostTensor.rand(dtype, m[element], np.random.default_rng(0))
    return x.to_hbm(m["1"], m[element], ctx.pdma, 0)


def _nothing_written(ctx: Context, ops: int, lo: int, hi: int) -> None:
    assert len(ctx.schedule.ops) == ops
    assert not ctx.memory.chip(0).dm.written[..., lo:hi].any()


def _refused(err: pytest.ExceptionInfo[VisaError], level: str, axis: str | None, tensor: str) -> None:
    assert err.value.level == level
    assert err.value.axis == axis
    assert tensor in str(err.value)


def test_element_address_aligned_to_the_dtype_l1071() -> None:
    ctx = Context.acquire()
    hbm = _hbm(ctx)
    with pytest.raises(AddressError) as err:
        hbm.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 2)  # type: ignore[attr-defined]
    _refused(err, "Element", "A", "DmTensor[i32")
    assert "size_of::<i32>() = 4" in str(err.value)
    _nothing_written(ctx, 1, 0, 64)


def test_chip_size_equals_the_kernels_chip_count_l1079() -> None:
    ctx = Context.acquire()
    hbm = _hbm(ctx, element="B")

    @device(chip=1)
    def kernel(ctx: Context, x: object) -> object:
        return x.to_hbm(m["B / 2"], m["B % 2"], ctx.tdma, 1 << 20)  # type: ignore[attr-defined]

    with pytest.raises(HardwareLimitError) as err:
        launch(kernel, ctx, hbm)
    _refused(err, "Chip", "B", "HbmTensor[i32")
    assert len(ctx.schedule.ops) == 1


def test_cluster_size_must_be_2_l1080() -> None:
    ctx = Context.acquire()
    hbm = _hbm(ctx, element="B")
    with pytest.raises(HardwareLimitError) as err:
        hbm.to_dm(m["B"], m["1 # 256"], m["1"], ctx.tdma, 0)  # type: ignore[attr-defined]
    _refused(err, "Cluster", "B", "DmTensor[i32, m[\"1\"], m[\"B\"]")
    assert "Cluster size must be 2, got 4" in str(err.value)
    _nothing_written(ctx, 1, 0, 64)


def test_slice_size_must_be_256_padding_allowed_l1081() -> None:
    ctx = Context.acquire()
    hbm = _hbm(ctx)
    with pytest.raises(HardwareLimitError) as err:
        hbm.to_dm(m["1 # 2"], m["A / 16"], m["A % 16"], ctx.tdma, 0)  # type: ignore[attr-defined]
    _refused(err, "Slice", "A", "DmTensor[i32")
    assert "Slice size must be 256, got 128" in str(err.value)
    _nothing_written(ctx, 1, 0, 64)
    dm = hbm.to_dm(m["1 # 2"], m["A / 16 # 256"], m["A % 16"], ctx.tdma, 0)  # type: ignore[attr-defined]
    assert np.array_equal(dm.logical(), hbm.logical())  # type: ignore[attr-defined]


def test_dm_capacity_per_slice_l1088() -> None:
    ctx = Context.acquire()
    hbm = _hbm(ctx, dt.i32, "E")
    with pytest.raises(HardwareLimitError) as err:
        hbm.to_dm(m["1 # 2"], m["1 # 256"], m["E"], ctx.tdma, 0)  # type: ignore[attr-defined]
    _refused(err, "Element", "E", "DmTensor[i32")
    assert "524292 bytes, more than the 524288 bytes of one slice" in str(err.value)
    _nothing_written(ctx, 1, 0, 64)


def test_dm_tensor_must_end_inside_the_slice_l1091() -> None:
    ctx = Context.acquire()
    hbm = _hbm(ctx, dt.i32, "C")
    with pytest.raises(AddressError) as err:
        hbm.to_dm(m["1 # 2"], m["1 # 256"], m["C"], ctx.tdma, RNGD.dm.slice_bytes - 256)  # type: ignore[attr-defined]
    _refused(err, "Element", "C", "DmTensor[i32")


def test_trf_row_count_and_row_capacity_l1089() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 1
    with pytest.raises(HardwareLimitError) as err:
        TrfTensor(ctx, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["R"], m["1"], TrfAddress.Full)
    _refused(err, "Row", "R", "TrfTensor[bf16")
    with pytest.raises(HardwareLimitError) as err:
        TrfTensor(ctx, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["1 # 8"], m["A, B"], TrfAddress.Full)
    _refused(err, "Element", "A, B", "TrfTensor[bf16")
    assert "16384 bytes, more than the 8192 bytes of one TRF row" in str(err.value)
    with pytest.raises(HardwareLimitError) as err:  # a half-TRF tensor gets 4 KB per row (L4151-4154)
        TrfTensor(ctx, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["1 # 8"], m["A, B % 2"], TrfAddress.FirstHalf)
    _refused(err, "Element", "A, B", "TrfTensor[bf16")
    TrfTensor(ctx, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["1 # 8"], m["A"], TrfAddress.FirstHalf)


def test_vrf_capacity_per_slice_l1090() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 1
    with pytest.raises(HardwareLimitError) as err:
        VrfTensor(ctx, dt.i32, m["1"], m["1 # 2"], m["1 # 256"], m["A, B % 2"], 0)
    _refused(err, "Element", "A, B", "VrfTensor[i32")
    VrfTensor(ctx, dt.i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0)  # exactly 8 KB fits


def test_check_placement_is_pure_and_names_the_call() -> None:
    levels = {"Chip": m["1"], "Cluster": m["1"], "Slice": m["A / 8 # 256"], "Element": m["A % 8"]}
    with pytest.raises(HardwareLimitError) as err:
        check_placement(RNGD, "dm", dt.i32, levels, 0, num_chips=1, call="mypy")
    assert err.value.call == "mypy" and err.value.level == "Cluster"
    levels["Cluster"] = m["1 # 2"]
    check_placement(RNGD, "dm", dt.i32, levels, 0, num_chips=1)
