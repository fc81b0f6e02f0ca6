"""Tensor handles, host tensors, views, tiles, relabelling and liveness (manual L612–620, L813–832, L955–970,
L1029–1093, L150–155)."""

from __future__ import annotations

import numpy as np
import pytest

from visa import AxisSet, Context
from visa import dtypes as dt
from visa.errors import AllocationError, DtypeError, LayoutError, PoisonError, StaleTensorError
from visa.tensors.handles import DmTensor, HbmTensor, HostTensor

ax = AxisSet(A=8, B=512)
m = ax.m
rng = np.random.default_rng(7)


def test_host_tensor_from_numpy_and_back_with_axes() -> None:
    arr = np.arange(8 * 512, dtype=np.int32).reshape(8, 512)
    t = HostTensor.from_numpy(arr, dt.i32, m["B, A"], axes="A B")
    assert t.values[:3].tolist() == [0, 512, 1024]  # the buffer is laid out B-major
    assert np.array_equal(t.numpy(axes="A B"), arr)
    assert np.array_equal(t.numpy(axes="B A"), arr.T)
    assert t.numpy().shape == (512, 8)  # default: the order the axes appear in the mapping


def test_host_tensor_rand_and_zeros() -> None:
    r = HostTensor.rand(dt.bf16, m["A, B"], rng)
    assert r.numpy().shape == (8, 512) and r.known.all()
    z = HostTensor.zeros(dt.i4, m["A"])
    assert z.numpy().tolist() == [0] * 8


def test_host_values_outside_the_dtype_are_refused_naming_the_call() -> None:
    with pytest.raises(DtypeError) as err:
        HostTensor.from_numpy(np.array([1, 300] + [0] * 6), dt.i8, m["A"])
    assert err.value.call == "HostTensor.from_numpy" and err.value.fix
    assert "value 300 is outside i8's range -128..127" in str(err.value)


def test_host_padding_is_poison() -> None:
    t = HostTensor.from_numpy(np.arange(8), dt.i8, m["A # 10"])
    assert t.known.tolist() == [True] * 8 + [False] * 2
    assert t.numpy().tolist() == list(range(8))


def test_hbm_tensor_holds_its_index_l1064() -> None:
    # HbmTensor<bf16, m![A], m![B]>: chip i's element j holds {A: i, B: j} (L1062-1064)
    ctx = Context.acquire()
    x = HostTensor.rand(dt.bf16, m["A, B"], rng)
    h = x.to_hbm(m["A"], m["B"], ctx.pdma, 0)
    from visa.memory.images import load

    vals, known = load(dt.bf16, ctx.memory.chip(3).hbm, np.arange(512) * 16)
    assert known.all() and np.array_equal(vals.view(np.uint16), x.numpy()[3].view(np.uint16))
    assert np.array_equal(h.logical(axes="A B").view(np.uint16), x.numpy().view(np.uint16))


def test_views_and_tiles_are_metadata_l813() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.bf16, m["A, B"], rng)
    t = x.to_hbm(m["1"], m["A, B"], ctx.pdma, 0)
    ops = len(ctx.schedule.ops)
    view = t.view()
    # L824-825 with the footprint corrected: B = 2 inside a row of 512 (the manual's "# 4" is a typo, Q16)
    tile01 = view.tile(m["B"], 2, m["A, B = 2 # 512"], 0)
    tile23 = view.tile(m["B"], 2, m["A, B = 2 # 512"], 2)
    assert tile01.offset == 0 and tile23.offset == 2 and tile23.address == 4
    assert len(ctx.schedule.ops) == ops  # no data moved
    back = tile23.to_host(m["A, B = 2"], ctx.pdma)
    assert np.array_equal(back.numpy(axes="A B").view(np.uint16), x.numpy()[:, 2:4].view(np.uint16))
    with pytest.raises(LayoutError) as err:  # the manual's literal "# 4" does not keep the base's strides
        view.tile(m["B"], 2, m["A, B = 2 # 4"], 0)
    assert err.value.level == "Element"


def test_overlapping_block_tiles_l955() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.bf16, m["A, B"], rng)
    t = x.to_hbm(m["1"], m["A, B"], ctx.pdma, 0)
    want = x.numpy(axes="A B")
    for i in (0, 1, 14):  # tile i covers blocks {i, i+1}; tiles 0 and 1 share block 1 (L966-969)
        tile = t.view().tile(m["B / 32"], 2, m["A, B / 32 = 2 # 16, B % 32"], i)
        got = tile.to_host(m["A, B = 64"], ctx.pdma).numpy(axes="A B")
        assert np.array_equal(got.view(np.uint16), want[:, 32 * i: 32 * i + 64].view(np.uint16))
    with pytest.raises(LayoutError) as err:
        t.view().tile(m["B / 32"], 2, m["A, B / 32 = 2 # 16, B % 32"], 15)  # past block 15
    assert (err.value.level, err.value.axis, err.value.fix) == ("Element", "B", "start at most 14")


def test_relabel_is_a_reshape_without_moving_l8056() -> None:
    ax2 = AxisSet(D=64, P=32, F=2)
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i16, ax2.m["D"], rng)
    h = x.to_hbm(ax2.m["1"], ax2.m["D"], ctx.pdma, 0)
    r = h.relabel(Element=ax2.m["P, F"])
    assert r.address == h.address and r.region is h.region
    assert np.array_equal(r.logical(axes="P F"), x.numpy().reshape(32, 2))
    with pytest.raises(LayoutError) as err:
        h.relabel(Element=ax2.m["P"])
    assert err.value.level == "Element" and err.value.fix
    with pytest.raises(LayoutError) as err:
        h.relabel(Row=ax2.m["P"])
    assert err.value.level == "Row" and err.value.fix
    v = h.view().relabel(ax2.m["P, F"])
    assert v.element.size == 64 and type(v) is type(h.view())


def test_from_addr_reads_bytes_already_there_l821() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["B"], rng)
    x.to_hbm(m["1"], m["B"], ctx.pdma, 4096)
    alias = HbmTensor.from_addr(ctx, dt.i32, m["1"], m["B"], 4096)
    assert alias.region is None
    assert np.array_equal(alias.logical(), x.numpy())


def test_dma_result_may_not_overlap_its_source_l152() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["B"], rng)
    h = x.to_hbm(m["1"], m["B"], ctx.pdma, 0)
    dm = h.to_dm(m["1 # 2"], m["B / 2 # 256"], m["B % 2"], ctx.tdma, 0)
    before = ctx.memory.chip(0).dm.data[..., 0:64].copy()
    ops = len(ctx.schedule.ops)
    with pytest.raises(AllocationError) as err:
        dm.to_dm(m["1 # 2"], m["B / 2 # 256"], m["B % 2"], ctx.tdma, 0)
    assert err.value.level == "Element" and "DmTensor[i32" in str(err.value)
    assert "overlap" in str(err.value) and "that this operation reads" in str(err.value)
    assert np.array_equal(ctx.memory.chip(0).dm.data[..., 0:64], before) and len(ctx.schedule.ops) == ops
    assert np.array_equal(dm.logical(), x.numpy())  # still readable


def test_reading_an_overwritten_tensor_is_refused() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["B"], rng)
    y = HostTensor.rand(dt.i32, m["B"], rng)
    hx = x.to_hbm(m["1"], m["B"], ctx.pdma, 0)
    hy = y.to_hbm(m["1"], m["B"], ctx.pdma, 1 << 20)
    a = hx.to_dm(m["1 # 2"], m["B / 2 # 256"], m["B % 2"], ctx.tdma, 0)
    b = hy.to_dm(m["1 # 2"], m["1 # 256"], m["B"], ctx.tdma, 0)  # overwrites a's bytes in slice 0
    ops = len(ctx.schedule.ops)
    with pytest.raises(StaleTensorError) as err:
        a.to_hbm(m["B"], ctx.tdma, 1 << 21)
    assert "DmTensor[i32" in str(err.value) and "hbm.to_dm" in str(err.value)
    assert err.value.level == "Element"
    assert len(ctx.schedule.ops) == ops and ctx.memory.chip(0).hbm.regions()[-1][0] < 1 << 21
    assert np.array_equal(b.logical(), y.numpy())


def test_memory_reuse_after_the_old_tensor_is_dropped() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["B"], rng)
    h = x.to_hbm(m["1"], m["B"], ctx.pdma, 0)
    for _ in range(3):  # each iteration reuses address 0; the previous tensor is never read again
        d = h.to_dm(m["1 # 2"], m["B / 2 # 256"], m["B % 2"], ctx.tdma, 0)
    assert np.array_equal(d.logical(), x.numpy())


def test_poison_travels_with_the_data() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 1
    src = HbmTensor(ctx, dt.i32, m["1"], m["B"], 0)  # allocated, never written
    dm = src.to_dm(m["1 # 2"], m["B / 2 # 256"], m["B % 2"], ctx.tdma, 0)
    with pytest.raises(PoisonError):
        dm.logical()
    assert isinstance(dm, DmTensor)


def test_a_refused_placement_leaves_the_live_tensors_readable() -> None:
    # regression: visa.testing.place_dm registered (and so clobbered) the bytes before it refused the array
    from visa.testing import place_dm

    ctx = Context.acquire()
    levels = (m["1"], m["1 # 2"], m["B / 2"], m["B % 2"])
    kept = place_dm(ctx, np.arange(512, dtype=np.int32), dt.i32, *levels, 0)
    with pytest.raises(LayoutError):
        place_dm(ctx, np.zeros(7, dtype=np.int32), dt.i32, *levels, 0)
    assert kept.logical().tolist() == list(range(512))


def test_host_tensor_in_c_order_is_the_array_itself_and_other_layouts_are_not() -> None:
    """``from_numpy`` into a mapping that lists the array's axes in its order (no padding, no resize) keeps the
    array as the buffer (no index arrays of the tensor's size: a 70B weight chunk); any other layout still
    places each element by its index."""
    arr = np.arange(8 * 512, dtype=np.int32).reshape(8, 512)
    plain = HostTensor.from_numpy(arr, dt.i32, m["A, B"], axes="A B")
    assert plain.values.tolist() == arr.reshape(-1).tolist() and plain.known.all()
    assert plain.values.dtype == dt.i32.storage and plain.values.flags.c_contiguous
    swapped = HostTensor.from_numpy(arr.T.copy(), dt.i32, m["A, B"], axes="B A")
    assert np.array_equal(swapped.values, plain.values)
    padded = HostTensor.from_numpy(arr, dt.i32, m["A, B # 520"], axes="A B")
    assert padded.values.size == 8 * 520 and int(padded.known.sum()) == 8 * 512
    assert np.array_equal(padded.numpy(axes="A B"), arr)
