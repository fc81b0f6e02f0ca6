"""Gather, scatter and in-place DMAs (IndirectLoop, manual L1684–1688; embedding L7994–8005, L8241; KV-cache
append L8286–8297; MoE L8596–8707), runtime guards, and the padded-packet rule (issue 13)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, Context
from visa import dtypes as dt
from visa.engines.dma import DmaPlan, Side, cycles, plan
from visa.engines.dma.indirect import indirect_cycles, plan_indirect
from visa.engines.guard import guard_cycles
from visa.errors import (
    AddressError,
    AllocationError,
    DtypeError,
    HardwareLimitError,
    LayoutError,
    PoisonError,
    StaleTensorError,
    TypestateError,
    WrongTypeError,
)
from visa.tensors.handles import HostTensor

rng = np.random.default_rng(13)
MB = 1 << 20


def _hbm(ctx: Context, arr: np.ndarray, dtype: Any, m: Any, element: str, axes: str, address: int) -> Any:
    return HostTensor.from_numpy(arr, dtype, m[element], axes=axes).to_hbm(m["1"], m[element], ctx.pdma, address)


def _table(ctx: Context, m: Any, v: int, d: int, dtype: Any = dt.i32, element: str = "V, D") -> tuple[Any, Any]:
    tab = dt.random_values(dtype, (v, d), rng)
    return tab, _hbm(ctx, tab, dtype, m, element, "V D", 0)


def _ids(ctx: Context, m: Any, values: np.ndarray, element: str = "T", address: int = 64 * MB,
         dtype: Any = dt.i32) -> Any:
    axes = " ".join(a for a in ("B", "T") if a in m[element].axes)
    arr = values.astype(np.int32).reshape(-1 if axes else ())
    if " " in axes:
        arr = values.astype(np.int32)
    return _hbm(ctx, arr, dtype, m, element, axes, address)


# ---------------------------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------------------------


def test_embedding_lookup_hbm_table_to_dm_l7994() -> None:
    # x_0 = gather(index: input, table: w_emb), processed by TensorDMA (L7994–8005): token rows into DM.
    ax = AxisSet(V=64, D=64, T=16)
    m = ax.m
    ctx = Context.acquire()
    tab, table = _table(ctx, m, 64, 64, dt.bf16)
    tokens = rng.integers(0, 64, 16)
    ids = _ids(ctx, m, tokens)
    x0 = table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)
    got = x0.logical("T D")
    assert got.tobytes() == tab[tokens].tobytes()  # exact: a DMA moves bits
    op = ctx.schedule.ops[-1]
    assert op.track == "tdma" and op.name.startswith("gather.to_dm")
    assert op.start >= ids.ready_at and x0.ready_at == op.end


def test_gather_to_hbm_with_ids_in_dm_over_two_axes() -> None:
    # MoE combine: y_restored[t, k, :] = y_blocked[Scatter_Idx[t, k], :] (L8692–8700); ids over (B, T) in DM.
    ax = AxisSet(V=32, D=16, B=2, T=4)
    m = ax.m
    ctx = Context.acquire()
    tab, table = _table(ctx, m, 32, 16)
    idx = rng.integers(0, 32, (2, 4))
    ids_h = _ids(ctx, m, idx, "B, T")
    ids = ids_h.to_dm(m["1 # 2"], m["1 # 256"], m["B, T"], ctx.tdma, 0)
    out = table.view().gather(m["V"], ids).to_hbm(m["1"], m["T, B, D"], ctx.tdma, 8 * MB)
    assert np.array_equal(out.logical("B T D"), tab[idx])


def test_gather_rows_split_over_digits_and_repeated_indices() -> None:
    # V laid out as two digits around D (V / 4, D, V % 4): rows are still whole digits; a gather may repeat.
    ax = AxisSet(V=8, D=8, T=6)
    m = ax.m
    ctx = Context.acquire()
    tab, table = _table(ctx, m, 8, 8, dt.i32, "V / 4, D, V % 4")
    idx = np.array([7, 7, 0, 3, 5, 3])
    out = table.view().gather(m["V"], _ids(ctx, m, idx)).to_hbm(m["1"], m["T, D"], ctx.tdma, 8 * MB)
    assert np.array_equal(out.logical("T D"), tab[idx])


def test_gather_out_of_range_names_position_and_value_and_writes_nothing() -> None:
    ax = AxisSet(V=16, D=32, T=4)
    m = ax.m
    ctx = Context.acquire()
    _, table = _table(ctx, m, 16, 32)
    ids = _ids(ctx, m, np.array([1, 2, 16, 3]))
    old = _hbm(ctx, np.arange(4, dtype=np.int32), dt.i32, m, "T", "T", 8 * MB)  # lives where the result would go
    n_ops = len(ctx.schedule.ops)
    with pytest.raises(AddressError) as err:
        table.view().gather(m["V"], ids).to_hbm(m["1"], m["T, D"], ctx.tdma, 8 * MB)
    assert "{T: 2}" in str(err.value) and "is 16" in str(err.value) and err.value.axis == "V"
    assert err.value.call == "gather.to_hbm" and err.value.fix
    assert len(ctx.schedule.ops) == n_ops
    assert np.array_equal(old.logical(), np.arange(4))  # not stale, not overwritten


def test_gather_refusals_types_and_layouts() -> None:
    ax = AxisSet(V=16, D=32, T=4, E=2)
    m = ax.m
    ctx = Context.acquire()
    _, table = _table(ctx, m, 16, 32)
    ids = _ids(ctx, m, np.array([0, 1, 2, 3]))
    g = table.view().gather(m["V"], ids)
    with pytest.raises(LayoutError) as e1:  # the destination names V instead of T
        g.to_hbm(m["1"], m["V, D"], ctx.tdma, 8 * MB)
    assert e1.value.axis == "V" and "in place of V" in str(e1.value)
    with pytest.raises(LayoutError) as e2:  # the destination lacks the index axis
        g.to_hbm(m["1"], m["D"], ctx.tdma, 8 * MB)
    assert e2.value.axis == "T"
    with pytest.raises(LayoutError) as e3:  # V is not in the table's Element
        table.view().gather(m["E"], ids).to_hbm(m["1"], m["T, D"], ctx.tdma, 8 * MB)
    assert e3.value.axis == "E" and e3.value.level == "Element"
    i16_ids = _ids(ctx, m, np.array([0, 1, 2, 3]), dtype=dt.i16, address=32 * MB)
    with pytest.raises(DtypeError) as e4:
        table.view().gather(m["V"], i16_ids).to_hbm(m["1"], m["T, D"], ctx.tdma, 8 * MB)
    assert "i32" in str(e4.value) and e4.value.call == "gather.to_hbm"


def test_gather_poisoned_indices_are_a_poison_error() -> None:
    ax = AxisSet(V=16, D=32, T=4)
    m = ax.m
    ctx = Context.acquire()
    _, table = _table(ctx, m, 16, 32)
    known = np.array([True, True, False, True])  # ids[2] never written
    host = HostTensor(dt.i32, m["T"], np.arange(4, dtype=np.int32), known)
    ids = host.to_hbm(m["1"], m["T"], ctx.pdma, 64 * MB)
    with pytest.raises(PoisonError) as err:
        table.view().gather(m["V"], ids).to_hbm(m["1"], m["T, D"], ctx.tdma, 8 * MB)
    assert err.value.call == "gather.to_hbm" and "indices" in str(err.value)


def test_gather_rows_must_keep_the_dma_alignment() -> None:
    # HBM→DM needs 8-byte aligned reads (L2424–2427): 3 i32 per row puts row 1 at byte 12.
    ax = AxisSet(V=4, D=3, T=2)
    m = ax.m
    ctx = Context.acquire()
    _, table = _table(ctx, m, 4, 3)
    ids = _ids(ctx, m, np.array([0, 1]))
    with pytest.raises((AddressError, HardwareLimitError)) as err:
        table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T # 256"], m["D # 4"], ctx.tdma, 0)
    assert "8" in str(err.value) and err.value.fix


def test_gather_cycles_are_the_per_packet_model_with_offsets() -> None:
    # Indices 0..N-1 walk the table like a constant-stride loop: the IndirectLoop costs what the regular
    # DMA of the same packets costs (L1684–1688 with the cost model of L2465–2504).
    ax = AxisSet(V=16, D=64, T=16)
    m = ax.m
    table = Side.of("hbm", {"Chip": m["1"], "Element": m["V, D"]}, 0)
    out = Side.of("dm", {"Chip": m["1"], "Cluster": m["1 # 2"], "Slice": m["T # 256"], "Element": m["D"]}, 0)
    p = plan_indirect(RNGD, dt.i32, "gather", table, out, m["V"], "i32", ("T",), (16,), call="gather")
    assert p.table_steps == tuple(256 * v for v in range(16))
    assert p.index_steps == tuple(RNGD.dm.slice_address_space_bytes * t for t in range(16))
    row = p.row
    assert row.nbytes == 256
    regular = DmaPlan.from_loops(RNGD, dt.i32, ("hbm", "dm"),
                                 [(16, 256, RNGD.dm.slice_address_space_bytes), (256, 1, 1)])
    seq = indirect_cycles(p, np.arange(16))
    assert seq.total == cycles(regular).total
    assert seq.startup == RNGD.dma.startup_cycles and seq.packets == 16
    # one startup whatever the indices; each row is one 256-byte request
    rnd = indirect_cycles(p, rng.integers(0, 16, 16))
    assert rnd.startup == RNGD.dma.startup_cycles and rnd.issue == 16
    assert indirect_cycles(p, np.zeros(0, np.int64)).total == RNGD.dma.startup_cycles


# ---------------------------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------------------------


def test_scatter_dispatch_into_a_live_tensor_l8664() -> None:
    # x_blocked[Scatter_Idx[t]] = x_norm[t] (MoE dispatch, L8664–8690); the rows not named keep their values.
    ax = AxisSet(V=16, D=32, T=6)
    m = ax.m
    ctx = Context.acquire()
    base = rng.integers(-9, 9, (16, 32)).astype(np.int32)
    dst = _hbm(ctx, base, dt.i32, m, "V, D", "V D", 0)
    src_np = rng.integers(-9, 9, (6, 32)).astype(np.int32)
    src = _hbm(ctx, src_np, dt.i32, m, "T, D", "T D", 8 * MB).to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)
    idx = np.array([9, 0, 15, 4, 5, 2])
    out = src.to_hbm_view(dst.view().scatter(m["V"], _ids(ctx, m, idx)), ctx.tdma)
    want = base.copy()
    want[idx] = src_np
    assert out is dst and np.array_equal(dst.logical("V D"), want)
    assert dst.ready_at == ctx.schedule.ops[-1].end
    op = ctx.schedule.ops[-1]
    assert op.cycles > 0 and "IndirectLoop 6" in op.engines[0].config


def test_scatter_repeated_or_out_of_range_indices_write_nothing() -> None:
    ax = AxisSet(V=8, D=16, T=3)
    m = ax.m
    ctx = Context.acquire()
    base = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
    dst = _hbm(ctx, base, dt.i32, m, "V, D", "V D", 0)
    src = _hbm(ctx, np.ones((3, 16), np.int32), dt.i32, m, "T, D", "T D", 8 * MB)
    with pytest.raises(AddressError) as e1:
        src.to_hbm_view(dst.view().scatter(m["V"], _ids(ctx, m, np.array([1, 4, 1]))), ctx.tdma)
    assert "{T: 0}" in str(e1.value) and "{T: 2}" in str(e1.value) and "V = 1" in str(e1.value)
    with pytest.raises(AddressError) as e2:
        src.to_hbm_view(dst.view().scatter(m["V"], _ids(ctx, m, np.array([1, -1, 2]), address=72 * MB)),
                        ctx.tdma)
    assert "{T: 1}" in str(e2.value) and "is -1" in str(e2.value)
    assert np.array_equal(dst.logical("V D"), base)


def test_scatter_refusals_of_the_source_layout_and_medium() -> None:
    ax = AxisSet(V=8, D=16, T=3)
    m = ax.m
    ctx = Context.acquire()
    dst = _hbm(ctx, np.zeros((8, 16), np.int32), dt.i32, m, "V, D", "V D", 0)
    ids = _ids(ctx, m, np.array([0, 1, 2]))
    src_v = _hbm(ctx, np.ones((8, 16), np.int32), dt.i32, m, "V, D", "V D", 8 * MB)
    with pytest.raises(LayoutError) as e1:  # the source names V, not the index axis
        src_v.to_hbm_view(dst.view().scatter(m["V"], ids), ctx.tdma)
    assert e1.value.axis == "V" and "source" in str(e1.value)
    src = _hbm(ctx, np.ones((3, 16), np.int32), dt.i32, m, "T, D", "T D", 16 * MB)
    with pytest.raises(TypestateError):  # an HBM table written with to_dm_view
        src.to_dm_view(dst.view().scatter(m["V"], ids), ctx.tdma)


# ---------------------------------------------------------------------------------------------------------
# in-place DMA (KV-cache append)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("from_dm", [True, False])
def test_kv_cache_append_in_place_l8286(from_dm: bool) -> None:
    # kv_cache[s-1] = K_rope: "Concat on HBM using DMA is also possible" (L8286–8297).
    ax = AxisSet(S=8, H=2, D=32)
    m = ax.m
    ctx = Context.acquire()
    cache_np = rng.integers(-99, 99, (2, 8, 32)).astype(np.int32)
    cache = _hbm(ctx, cache_np, dt.i32, m, "H, S, D", "H S D", 0)
    new = rng.integers(-99, 99, (2, 32)).astype(np.int32)
    k = _hbm(ctx, new, dt.i32, m, "H, D", "H D", 8 * MB)
    if from_dm:
        k = k.to_dm(m["1 # 2"], m["H # 256"], m["D"], ctx.tdma, 0)
    tile = cache.view().tile(m["S"], 1, m["H, S = 1 # 8, D"], 5)
    got = k.to_hbm_view(tile, ctx.tdma)
    cache_np[:, 5] = new
    assert got is cache
    assert np.array_equal(cache.logical("H S D"), cache_np)  # live and current: the whole cache reads back
    op = ctx.schedule.ops[-1]
    assert op.name.startswith("to_hbm_view") and cache.ready_at == op.end
    src_side = Side.of(k.MEMORY, dict(k.levels), k.address)
    dst_side = Side.of("hbm", {"Chip": m["1"], "Element": m["H, S = 1 # 8, D"]}, 5 * 32 * 4)
    assert op.cycles == cycles(plan(RNGD, dt.i32, src_side, dst_side)).total


@pytest.mark.parametrize(("dtype", "position"), [(dt.bf16, 0), (dt.bf16, 5), (dt.i32, 7)])
def test_in_place_column_keeps_the_other_columns(dtype: Any, position: int) -> None:
    # Regression: a V cache kept transposed (m["Dv, S"]) gets V_new as column s − 1 (L8286–8297).  The tile
    # m["Dv, S = 1 # 8"] pads S: that padding is the cache's other columns, not the tile's own bytes, so the
    # in-place DMA may not write it as a padded packet (L1818–1840).  It did (the element and its padding in one
    # packet), poisoning every other column.
    ax = AxisSet(Dv=4, S=8)
    m = ax.m
    ctx = Context.acquire()
    cache_np = dt.random_values(dtype, (4, 8), rng)
    cache = _hbm(ctx, cache_np, dtype, m, "Dv, S", "Dv S", 0)
    new = dt.random_values(dtype, (4,), rng)
    v = _hbm(ctx, new, dtype, m, "Dv", "Dv", 8 * MB)
    assert v.to_hbm_view(cache.view().tile(m["S"], 1, m["Dv, S = 1 # 8"], position), ctx.tdma) is cache
    want = cache_np.copy()
    want[:, position] = new
    assert np.array_equal(np.asarray(cache.logical("Dv S"), np.float64), np.asarray(want, np.float64))


def test_in_place_into_dm_and_refusals() -> None:
    ax = AxisSet(S=4, D=16)
    m = ax.m
    ctx = Context.acquire()
    base = np.arange(64, dtype=np.int32).reshape(4, 16)
    cache = _hbm(ctx, base, dt.i32, m, "S, D", "S D", 0).to_dm(m["1 # 2"], m["S # 256"], m["D"], ctx.tdma, 0)
    alias = cache.relabel(Element=m["D"])  # shares the bytes: stays current too
    src = _hbm(ctx, -np.ones((4, 16), np.int32), dt.i32, m, "S, D", "S D", 16 * MB)
    assert src.to_dm_view(cache.view(), ctx.tdma) is cache
    assert np.array_equal(cache.logical("S D"), -np.ones((4, 16)))
    assert np.array_equal(alias.logical("S D"), -np.ones((4, 16)))
    with pytest.raises(AllocationError):  # reading and writing the same bytes
        cache.to_dm_view(cache.view(), ctx.tdma)
    with pytest.raises(DtypeError):
        f = _hbm(ctx, np.zeros((4, 16), np.float32), dt.f32, m, "S, D", "S D", 24 * MB)
        f.to_dm_view(cache.view(), ctx.tdma)
    with pytest.raises(TypestateError):  # a DM tensor written with to_hbm_view
        src.to_hbm_view(cache.view(), ctx.tdma)  # type: ignore[arg-type]
    assert np.array_equal(cache.logical("S D"), -np.ones((4, 16)))


def test_in_place_marks_overlapping_tensors_stale() -> None:
    ax = AxisSet(S=4, D=16)
    m = ax.m
    ctx = Context.acquire()
    cache = _hbm(ctx, np.zeros((4, 16), np.int32), dt.i32, m, "S, D", "S D", 0)
    reader = cache.view().to_hbm(m["1"], m["S, D"], ctx.tdma, 8 * MB)
    shadow = _hbm(ctx, np.zeros((4, 16), np.int32), dt.i32, m, "S, D", "S D", 8 * MB + 64)  # over reader
    with pytest.raises(StaleTensorError):
        reader.logical()
    src = _hbm(ctx, np.ones((4, 16), np.int32), dt.i32, m, "S, D", "S D", 16 * MB)
    src.to_hbm_view(shadow.view(), ctx.tdma)
    assert np.array_equal(shadow.logical("S D"), np.ones((4, 16)))
    with pytest.raises(WrongTypeError, match="parameter target must be a view"):
        src.to_hbm_view(shadow, ctx.tdma)  # a tensor, not a view: a wrong Python type (issue 16)


# ---------------------------------------------------------------------------------------------------------
# runtime guards (MoE blockwise execution, L8596–8707)
# ---------------------------------------------------------------------------------------------------------


def _moe_block(count: int) -> tuple[Context, np.ndarray | None]:
    ax = AxisSet(V=8, D=64, T=4)
    m = ax.m
    ctx = Context.acquire()
    tab, table = _table(ctx, m, 8, 64)
    ids = _ids(ctx, m, np.array([3, 1, 4, 1]))
    counts = HostTensor.from_numpy(np.int32(count), dt.i32, m["1"]).to_hbm(m["1"], m["1"], ctx.pdma, 80 * MB)
    got = None
    if ctx.tdma.when(counts, lambda n: n > 0):
        w = table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)
        got = w.logical("T D")
        np.testing.assert_array_equal(got, tab[[3, 1, 4, 1]])
    return ctx, got


def test_guarded_block_with_zero_tokens_costs_only_the_guard() -> None:
    skip, got0 = _moe_block(0)
    run, got1 = _moe_block(5)
    assert got0 is None and got1 is not None
    guard0 = skip.schedule.ops[-1]
    assert guard0.track == "tdma" and guard0.name.endswith("skip")
    assert guard0.cycles == guard_cycles(RNGD, 4) == RNGD.dma.startup_cycles + 1
    tdma0 = sum(op.cycles for op in skip.schedule.ops if op.track == "tdma")
    assert tdma0 == guard0.cycles
    tdma1 = [op for op in run.schedule.ops if op.track == "tdma"]
    assert [op.name.split("(")[0].split(" ")[0] for op in tdma1] == ["ctx.tdma.when", "gather.to_dm"]
    assert tdma1[1].start >= tdma1[0].end


def test_a_one_element_tile_as_gather_indices_and_guard_scalar_l8676() -> None:
    """``view().tile(...).as_tensor()``: the MoE block's ``Expert_IDs[g]`` picks one expert's weight rows and
    guards the block without a DMA of its own; the alias shares the base's bytes and ready time, and reads the
    tile's own position."""
    ctx = Context.acquire()
    ax = AxisSet(V=8, D=16, G=4, One=1)
    m = ax.m
    tab, table = _table(ctx, m, 8, 16)
    ids = _hbm(ctx, np.array([5, 2, 8, 8], np.int32), dt.i32, m, "G, 1 # 2", "G", 64 * MB)
    picked = []
    for g in range(4):
        one = ids.view().tile(m["G"], 1, m["One, 1 # 2"], g).as_tensor()
        assert one.ready_at == ids.ready_at and one.address == ids.address + 8 * g
        if ctx.tdma.when(one, lambda e: e < 8):
            rows = table.view().gather(m["V"], one).to_hbm(m["1"], m["One, D"], ctx.tdma, (80 + g) * MB)
            picked.append(rows.logical("D"))
    assert len(picked) == 2
    np.testing.assert_array_equal(np.stack(picked), tab[[5, 2]])
    skips = [op for op in ctx.schedule.ops if op.name.endswith("skip")]
    assert len(skips) == 2 and all(op.cycles == guard_cycles(RNGD, 8) for op in skips)


def test_guard_refusals() -> None:
    ax = AxisSet(C=2)
    m = ax.m
    ctx = Context.acquire()
    two = _hbm(ctx, np.array([1, 0], np.int32), dt.i32, m, "C", "C", 0)
    with pytest.raises(TypestateError):
        ctx.main.when(two, lambda n: n > 0)
    assert ctx.main.when(two, lambda n: (n > 0).any())
    host = HostTensor(dt.i32, m["C"], np.array([1, 0], dtype=np.int32), np.zeros(2, dtype=bool))  # never written
    with pytest.raises(PoisonError):
        ctx.main.when(host.to_hbm(m["1"], m["C"], ctx.pdma, 4096), lambda n: n[0] > 0)


# ---------------------------------------------------------------------------------------------------------
# a padded destination: the element and its padding move as one packet (issue 13)
# ---------------------------------------------------------------------------------------------------------


def _dm_side(m: Any, element: str) -> Side:
    return Side.of("dm", {"Chip": m["1"], "Cluster": m["1 # 2"], "Slice": m["1 # 256"], "Element": m[element]}, 0)


def test_padded_element_moves_in_8_byte_packets() -> None:
    m = AxisSet(A=8).m
    hbm = Side.of("hbm", {"Chip": m["1"], "Element": m["A, 1 # 2"]}, 0)
    p = plan(RNGD, dt.f32, hbm, _dm_side(m, "A, 1 # 2"))
    assert p.stride0 % 8 == 0
    q = plan(RNGD, dt.f32, _dm_side(m, "A"), _dm_side(m, "A, 1 # 2"))  # DM reads need no alignment
    assert q.stride0 == 8 and str(q) == "[8 : (4, 8), 8 : (1, 1)] @ (0, 0), stride0 8"
    r = plan(RNGD, dt.f32, _dm_side(m, "A"), _dm_side(m, "A, 1 # 2"), stream=(m["A"], m["1 # 2"]))
    assert r.stride0 == 8
    # and the values arrive
    ctx = Context.acquire()
    x = _hbm(ctx, np.arange(8, dtype=np.float32), dt.f32, m, "A, 1 # 2", "A", 0)
    d = x.to_dm(m["1 # 2"], m["1 # 256"], m["A, 1 # 2"], ctx.tdma, 0)
    assert d.logical().tolist() == list(range(8))


def test_padded_packet_refusals_name_the_axis_and_a_new_fix() -> None:
    m = AxisSet(A=8).m
    with pytest.raises(HardwareLimitError) as e1:
        plan(RNGD, dt.f32, _dm_side(m, "A"), _dm_side(m, "A, 1 # 2"), stream=(m["A"], m["1"]))
    assert e1.value.axis == "A" and 'm["1 # 2"]' in (e1.value.fix or "")
    with pytest.raises(AddressError) as e2:  # HBM→DM reads 8-byte aligned: the source must be padded too
        plan(RNGD, dt.f32, Side.of("hbm", {"Chip": m["1"], "Element": m["A"]}, 0), _dm_side(m, "A, 1 # 2"))
    assert e2.value.axis == "A" and 'm["A, 1 # 2"]' in (e2.value.fix or "")
    with pytest.raises(LayoutError) as e3:  # a padding digit outside the packet: named, not "?"
        plan(RNGD, dt.f32, _dm_side(m, "A"), _dm_side(m, "A, 1 # 2"), stream=(m["1 # 2, A"], m["1"]))
    assert "?" not in str(e3.value)


def test_runtime_agrees_with_the_plugin_on_the_destination_rule() -> None:
    # tests/typing/corpus/bad_indirect.py:17 and :23 — the same refusal, the same message
    from pathlib import Path

    out = (Path(__file__).resolve().parents[1] / "typing" / "corpus" / "bad_indirect.out").read_text().splitlines()
    want = {int(line.split(":")[1]): line.split(": error: ", 1)[1].rsplit("  [", 1)[0] for line in out}
    ax = AxisSet(V=64, D=64, T=16)
    m = ax.m
    ctx = Context.acquire()
    _, table = _table(ctx, m, 64, 64)
    ids = _ids(ctx, m, np.arange(16))
    with pytest.raises(LayoutError) as e17:
        table.view().gather(m["V"], ids).to_hbm(m["1"], m["V, D"], ctx.tdma, 1 << 20)
    assert e17.value.describe() == want[17]
    with pytest.raises(LayoutError) as e23:
        table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["1 # 256"], m["D"], ctx.tdma, 0)
    assert e23.value.describe() == want[23]


def test_gather_from_a_dm_table_and_scatter_into_one() -> None:
    # Token_Rank = gather(Cumsum_Mask, index: TopK_Indices) (L8644) on a DM table; then a scatter back into DM.
    ax = AxisSet(V=16, D=8, T=5)
    m = ax.m
    ctx = Context.acquire()
    tab = rng.integers(-50, 50, (16, 8)).astype(np.int32)
    table = _hbm(ctx, tab, dt.i32, m, "V, D", "V D", 0).to_dm(m["1 # 2"], m["V # 256"], m["D"], ctx.tdma, 0)
    idx = np.array([15, 0, 7, 8, 3])
    ids = _ids(ctx, m, idx).to_dm(m["1 # 2"], m["1 # 256"], m["T # 8"], ctx.tdma, 4096)
    out = table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 8192)
    assert np.array_equal(out.logical("T D"), tab[idx])
    perm = np.array([1, 2, 3, 4, 5])
    out.to_dm_view(table.view().scatter(m["V"], _ids(ctx, m, perm, address=96 * MB)), ctx.tdma)
    want = tab.copy()
    want[perm] = tab[idx]
    assert np.array_equal(table.logical("V D"), want)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v=st.integers(2, 9), d=st.sampled_from([2, 4, 8]), t=st.integers(1, 6), inner=st.booleans(),
       to_dm=st.booleans(), data=st.data())
def test_gather_and_scatter_agree_with_numpy(v: int, d: int, t: int, inner: bool, to_dm: bool,
                                             data: st.DataObject) -> None:
    # brute force: numpy fancy indexing; the table lays V out outermost or split around D
    ax = AxisSet(V=v, D=d, T=t)
    m = ax.m
    ctx = Context.acquire()
    tab = np.arange(v * d, dtype=np.int32).reshape(v, d) * 3 - 7
    element = "D / 2, V, D % 2" if inner else "V, D"
    table = _hbm(ctx, tab, dt.i32, m, element, "V D", 0)
    idx = np.array(data.draw(st.lists(st.integers(0, v - 1), min_size=t, max_size=t)))
    ids = _ids(ctx, m, idx)
    g = table.view().gather(m["V"], ids)
    out = (g.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0) if to_dm
           else g.to_hbm(m["1"], m["T, D"], ctx.tdma, 8 * MB))
    axes = "T D" if t > 1 else "D"  # an axis of size 1 is no axis: a single index (API.md §7)
    assert np.array_equal(out.logical(axes).reshape(t, d), tab[idx])
    if len(set(idx.tolist())) == len(idx):
        dst = _hbm(ctx, np.zeros((v, d), np.int32), dt.i32, m, "V, D", "V D", 16 * MB)
        out.to_hbm_view(dst.view().scatter(m["V"], ids), ctx.tdma)
        want = np.zeros((v, d), np.int32)
        want[idx] = tab[idx]
        assert np.array_equal(dst.logical("V D"), want)


def test_in_place_write_is_ordered_against_its_readers_by_bytes_l7042() -> None:
    """An in-place DMA is ordered by the bytes it writes ("Scheduling", L7042–7070): it waits for an earlier
    DMA reading the same cache (write after read), a read of another tile issued next does not (independent
    bytes, another DMA engine), and a read of the written tile waits for it (read after write, through the
    tile)."""
    ax = AxisSet(S=8, D=64)
    m = ax.m
    ctx = Context.acquire()
    cache = _hbm(ctx, np.zeros((8, 64), np.int32), dt.i32, m, "S, D", "S D", 0)
    new = _hbm(ctx, np.ones(64, np.int32), dt.i32, m, "D", "D", 8 * MB)
    before = cache.view().to_hbm(m["1"], m["S, D"], ctx.tdma, 16 * MB)
    read_before = ctx.schedule.ops[-1]
    new.to_hbm_view(cache.view().tile(m["S"], 1, m["S = 1, D"], 5), ctx.tdma)
    write = ctx.schedule.ops[-1]
    assert write.start >= read_before.end  # WAR: the whole cache was being read
    cache.view().tile(m["S"], 1, m["S = 1, D"], 2).to_hbm(m["1"], m["S = 1, D"], ctx.tdma, 32 * MB)
    other = ctx.schedule.ops[-1]
    assert other.start < write.end  # other bytes: no dependency on the write (issued in order, L7046-7055)
    cache.view().tile(m["S"], 1, m["S = 1, D"], 5).to_hbm(m["1"], m["S = 1, D"], ctx.tdma, 24 * MB)
    raw = ctx.schedule.ops[-1]
    assert raw.start >= write.end  # RAW through the tile
    assert before.logical("S D").sum() == 0


def test_gather_and_scatter_footprints_are_the_rows_touched_l1684() -> None:
    """A scatter into rows {9, 0, 15} and a gather of rows {3, 4} of the same table touch different bytes: the
    gather does not wait for the scatter; a gather of row 0 does (issue 27 item 7: the footprints were the whole
    table, so the schedule serialised independent work)."""
    ax = AxisSet(V=16, D=32, T=3, B=2)
    m = ax.m
    ctx = Context.acquire()
    table = _hbm(ctx, rng.integers(-9, 9, (16, 32)).astype(np.int32), dt.i32, m, "V, D", "V D", 0)
    src = _hbm(ctx, np.ones((3, 32), np.int32), dt.i32, m, "T, D", "T D", 8 * MB)
    far = _ids(ctx, m, np.array([3, 4]), element="B", address=80 * MB)
    near = _ids(ctx, m, np.array([0, 4]), element="B", address=88 * MB)
    scatter_ids = _ids(ctx, m, np.array([9, 0, 15]))
    src.to_hbm_view(table.view().scatter(m["V"], scatter_ids), ctx.tdma)
    scatter = ctx.schedule.ops[-1]
    table.view().gather(m["V"], far).to_hbm(m["1"], m["B, D"], ctx.tdma, 16 * MB)
    independent = ctx.schedule.ops[-1]
    table.view().gather(m["V"], near).to_hbm(m["1"], m["B, D"], ctx.tdma, 24 * MB)
    dependent = ctx.schedule.ops[-1]
    assert scatter.index not in {d.op for d in independent.deps}
    assert scatter.index in {d.op for d in dependent.deps} and dependent.start >= scatter.end
    # the spans are the rows: 3 rows of 32 i32 written, 2 read
    assert sum(s.bytes_per_unit for s in scatter.writes.spans) == 3 * 32 * 4
    assert sum(s.bytes_per_unit for s in independent.reads.spans if s.memory == "hbm" and int(s.lo[0]) < MB) == 256


def test_an_in_place_write_into_an_inner_axis_tile_keeps_the_other_columns_l8286() -> None:
    """A DMA into a tile of a tensor's innermost axis (``Dv, S = 256 # 512``: columns 0..255 of every row) writes
    only the tile: its packets stop at the tile's row end (issue 27: they ran on over the tile's padding — the
    base's other columns — and the next row's first columns, read past the source's rows)."""
    ax = AxisSet(Dv=4, S=64, Tt=32)
    m = ax.m
    ctx = Context.acquire()
    base = np.full((4, 64), -1, np.int32)
    dst = _hbm(ctx, base, dt.i32, m, "Dv, S", "Dv S", 0)
    src = _hbm(ctx, np.arange(4 * 32, dtype=np.int32).reshape(4, 32), dt.i32, m, "Dv, Tt", "Dv Tt", 8 * MB)
    for start in (32, 0):  # the second tile first: the first's write must not reach into it
        src.view().relabel(m["Dv, S = 32"]).to_hbm_view(dst.view().tile(m["S"], 32, m["Dv, S = 32 # 64"], start),
                                                        ctx.tdma)
    want = np.concatenate([np.arange(128).reshape(4, 32)] * 2, axis=1)
    assert np.array_equal(dst.logical("Dv S"), want)
    op = ctx.schedule.ops[-1]
    assert "stride0 128" in op.engines[0].config  # one row of the tile per packet


@pytest.mark.parametrize("dtype", [dt.i32, dt.i4])
def test_rows_span_same_bytes_when_kept(dtype: Any) -> None:
    """The rows a gather reads (``rows_span``, L1684–1688) are kept per (Element, axis, offset, width, rows): a
    tile of the table at another offset, and the same rows asked again, cover the bytes the positions do."""
    from visa.tensors.indirect import rows_span

    ctx = Context.acquire()
    m = AxisSet(V=64, D=32).m
    _, tab = _table(ctx, m, 64, 32, dtype)
    bits = dtype.size_bits
    for view, offset in ((tab.view(), 0), (tab.view().tile(m["V"], 16, m["V = 16, D"], 8), 8 * 32)):
        rows = np.array([5, 1, 5, 3, 0])
        for _ in range(2):
            span = rows_span(view, "V", rows)
            pos = np.array([(r * 32 + d + offset) for r in (0, 1, 3, 5) for d in range(32)])
            want = np.zeros(1 << 16, bool)
            for q in pos.tolist():
                want[(q * bits) // 8: ((q + 1) * bits + 7) // 8] = True
            got = np.zeros_like(want)
            for lo, hi in zip(span.lo.tolist(), span.hi.tolist(), strict=True):
                got[lo - tab.address: hi - tab.address] = True
            assert np.array_equal(got, want)
            assert span.memory == "hbm" and span.chips == 1
