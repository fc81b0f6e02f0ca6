"""The schedule (manual "Scheduling", L7042–7070): hazards by address on every memory, through aliases and across
chips; the DMA engines and PCIe as resources (L2389, L2473–2504); contention (L2897–2941); the roofline
report; the Chrome trace at true time."""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from visa import (
    AccumulationKind,
    AxisSet,
    Context,
    DmTensor,
    HbmTensor,
    HostTensor,
    TrfAddress,
    bf16,
    device,
    i32,
    launch,
)
from visa import dtypes as dt
from visa.engines.common import EngineReport
from visa.errors import BankStarvationWarning
from visa.hw import RNGD
from visa.memory.footprint import Span, intervals_overlap, merge_intervals
from visa.schedule import KernelReport, Schedule, footprint
from visa.tensors.handles import TrfTensor, VrfTensor
from visa.testing import place_dm

AX = AxisSet(A=2048, N=64, K=16)
m = AX.m
HERE = Path(__file__).name
H = RNGD.timing.context_handoff_cycles  # a dependency between two contexts (issue 22)


def _ctx(chips: int = 1) -> Context:
    ctx = Context.acquire()
    ctx.num_chips = chips
    return ctx


def _op(ctx: Context, track: str, cycles: int, *, reads: Any = (), writes: Any = (), **kw: Any) -> Any:
    return ctx.record(track, f"{track} {cycles}", [EngineReport("x", "", cycles, **kw)], reads=reads, writes=writes)


# ------------------------------------------------------------------------------------------ footprints


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=6),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=6))
def test_interval_sets_agree_with_byte_sets(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    def as_bytes(ivs: list[tuple[int, int]]) -> set[int]:
        return {x for lo, n in ivs for x in range(lo, lo + n)}

    alo, ahi = merge_intervals([lo for lo, _ in a], [lo + n for lo, n in a])
    blo, bhi = merge_intervals([lo for lo, _ in b], [lo + n for lo, n in b])
    assert {x for lo, hi in zip(alo, ahi, strict=True) for x in range(lo, hi)} == as_bytes(a)
    assert np.all(alo[1:] > ahi[:-1])  # sorted, disjoint, not adjacent
    assert intervals_overlap(alo, ahi, blo, bhi) == bool(as_bytes(a) & as_bytes(b))


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=6),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=6),
       st.integers(-50, 50), st.integers(-50, 50))
def test_shifted_spans_agree_with_their_bytes(a: list[tuple[int, int]], b: list[tuple[int, int]], sa: int,
                                              sb: int) -> None:
    """A span kept as shared intervals and a shift (issue 24) covers and overlaps the bytes it names."""
    def as_bytes(ivs: list[tuple[int, int]], shift: int) -> set[int]:
        return {x + shift for lo, n in ivs for x in range(lo, lo + n)}

    alo, ahi = merge_intervals([lo for lo, _ in a], [lo + n for lo, n in a])
    blo, bhi = merge_intervals([lo for lo, _ in b], [lo + n for lo, n in b])
    x, y = Span("dm", 1, 1, -1, alo, ahi, sa), Span("dm", 1, 1, -1, blo, bhi, sb)
    assert {v for lo, hi in zip(x.lo.tolist(), x.hi.tolist(), strict=True) for v in range(lo, hi)} == \
        as_bytes(a, sa)
    assert x.overlaps(y) == y.overlaps(x) == bool(as_bytes(a, sa) & as_bytes(b, sb))
    assert x.nbytes == len(as_bytes(a, sa)) and x.count == alo.size
    assert x.extent() == ((min(as_bytes(a, sa)), max(as_bytes(a, sa)) + 1) if a and any(n for _, n in a) else (0, 0))


_I64 = st.integers(-(1 << 63), (1 << 63) - 1)


@given(st.lists(_I64, max_size=8), st.lists(_I64, max_size=8), st.integers(-(1 << 66), 1 << 66),
       st.sampled_from([0, 1, -1, 1 << 63, -(1 << 63), 1 << 64, (1 << 63) - 1]))
def test_intervals_overlap_for_any_shift_and_any_int64_bounds(a: list[int], b: list[int], shift: int,
                                                              near: int) -> None:
    """Interval sets anywhere in int64 and shifts 2^63 apart or more: the answer of Python's ints (no wrap, no
    overflow), the shift given as a Python int or a numpy one."""
    def intervals(points: list[int]) -> tuple[np.ndarray, np.ndarray]:
        p = sorted(set(points))[: len(set(points)) // 2 * 2]  # (sorted, disjoint: pairs of distinct points)
        return np.array(p[0::2], dtype=np.int64), np.array(p[1::2], dtype=np.int64)

    (alo, ahi), (blo, bhi) = intervals(a), intervals(b)
    for s in (shift, near, near - 1, (int(alo[0]) - int(bhi[-1]) + 1) if alo.size and blo.size else 0):
        want = any(max(x, y + s) < min(u, v + s) for x, u in zip(alo.tolist(), ahi.tolist(), strict=True)
                   for y, v in zip(blo.tolist(), bhi.tolist(), strict=True))
        assert intervals_overlap(alo, ahi, blo, bhi, s) == want, s
        assert intervals_overlap(blo, bhi, alo, ahi, -s) == want, s
        if -(1 << 63) <= s < (1 << 63) and s != -(1 << 63):
            assert intervals_overlap(alo, ahi, blo, bhi, np.int64(s)) == want


def test_intervals_overlap_with_a_shift_past_int64() -> None:
    """A shift outside int64 whose shifted bounds are inside it (a review's failing case: the int64 branch
    computed ``alo - shift`` and overflowed)."""
    big = 1 << 62
    alo, ahi = np.array([-big - 100, -big + 50, -big + 200]), np.array([-big - 90, -big + 100, -big + 300])
    blo, bhi = np.array([big, big + 60]), np.array([big + 30, big + 100])
    s = -(1 << 63) - 10
    want = any(max(x, y + s) < min(u, v + s) for x, u in zip(alo.tolist(), ahi.tolist(), strict=True)
               for y, v in zip(blo.tolist(), bhi.tolist(), strict=True))
    assert want and intervals_overlap(alo, ahi, blo, bhi, s) and intervals_overlap(blo, bhi, alo, ahi, -s)


def test_tile_views_share_their_elements_intervals() -> None:
    """Two tiles of one tensor: spans of the same intervals, shifted (the schedule's record holds them once)."""
    ax = AxisSet(N=256, K=1024)
    ctx = Context.acquire()
    w = HbmTensor(ctx, dt.i8, ax.m["1"], ax.m["N, K"], 1 << 20)
    tiles = [w.view().tile(ax.m["K"], 256, ax.m["N, K = 256 # 1024"], k * 256) for k in range(2)]
    s0, s1 = (footprint(t).spans[0] for t in tiles)
    assert s0.rel_lo is s1.rel_lo and s1.shift - s0.shift == 256
    assert s0.lo.tolist() == [(1 << 20) + 1024 * i for i in range(256)] and s0.hi.tolist() == (s0.lo + 256).tolist()
    assert s1.lo.tolist() == (s0.lo + 256).tolist() and not s0.overlaps(s1)


def test_equal_engine_reports_are_kept_once_with_their_types() -> None:
    """Equal reports of two operations are one object; equal values of other types (1 and 1.0) are not merged."""
    ctx = _ctx()
    a = ctx.record("main", "a", [EngineReport("x", "c", 5, details=(("k", 1),))])
    b = ctx.record("main", "b", [EngineReport("x", "c", 5, details=(("k", 1),))])
    c = ctx.record("main", "c", [EngineReport("x", "c", 5, details=(("k", 1.0),))])
    assert a.engines[0] is b.engines[0] and a.engines == b.engines
    assert c.engines[0] is not a.engines[0] and repr(dict(c.engines[0].details)["k"]) == "1.0"


def test_engine_reports_are_shared_only_when_exactly_the_same() -> None:
    """Reports equal by ``==`` but told apart by a nested type, a float's sign or a NaN's bits are each kept as
    recorded, in the whole record and in the compact one (:meth:`Operation.compact`); the same bits are shared."""
    nan, other_nan = float("nan"), struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    pairs = [(("k", (1, (2,))), ("k", (1, (2.0,)))),  # a nested tuple's item: an int and a float
             (("k", 0.0), ("k", -0.0)),  # the sign of zero
             (("k", (0.0,)), ("k", (-0.0,))),
             (("k", nan), ("k", other_nan)),  # two NaNs' payloads
             (("k", np.float32(0.0)), ("k", np.float32(-0.0)))]
    for first, second in pairs:
        ctx = _ctx()
        a = ctx.record("main", "a", [EngineReport("x", "c", 5, details=(first,), hbm_channels=((0, 0.0),))])
        b = ctx.record("main", "b", [EngineReport("x", "c", 5, details=(second,), hbm_channels=((0, 0.0),))])
        assert _bits(a.engines[0].details) == _bits((first,)) and _bits(b.engines[0].details) == _bits((second,))
        assert a.engines[0] is not b.engines[0]
    ctx = _ctx()
    ops = [ctx.record("main", "a", [EngineReport("x", "c", 5, details=(("k", (0.0, -0.0)),))]) for _ in range(2)]
    assert ops[0].engines[0] is ops[1].engines[0]  # (the same bits: one object)
    # compact records (each engine's cycles and bytes kept, the details let go): a float's sign is kept
    sched = Schedule(RNGD, timeline=False)
    for cycles in (0.0, -0.0, 0):
        op = sched.record("main", "a", [EngineReport("x", "c", cycles)])  # type: ignore[arg-type]
        op.compact(sched.shared)
        assert _bits(op.engines[0].cycles) == _bits(cycles)
    op = sched.record("main", "a", [EngineReport("x", "c", 1)], traffic={"HBM": 1.0})  # type: ignore[dict-item]
    op.compact(sched.shared)
    assert type(op.traffic["HBM"]) is float


def _bits(value: object) -> object:
    """``value`` with every float as its bits and every item's type beside it (what ``==`` overlooks)."""
    if isinstance(value, tuple):
        return type(value), tuple(_bits(v) for v in value)
    if isinstance(value, (float, np.floating)):
        return type(value), np.asarray(value).tobytes()
    return type(value), value


def test_a_view_covers_its_bytes_only_and_aliases_are_the_same_bytes() -> None:
    ctx = _ctx()
    ax = AxisSet(R=8, C=64)
    t = DmTensor(ctx, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["R, C"], 0, register=False)
    top = t.view().tile(ax.m["R"], 4, ax.m["R = 4, C"], 0)
    bottom = t.view().tile(ax.m["R"], 4, ax.m["R = 4, C"], 4)
    (s_top,), (s_bottom,) = footprint(top).spans, footprint(bottom).spans
    assert (s_top.lo.tolist(), s_top.hi.tolist()) == ([0], [4 * 64 * 4])
    assert (s_bottom.lo.tolist(), s_bottom.hi.tolist()) == ([4 * 64 * 4], [8 * 64 * 4])
    assert not s_top.overlaps(s_bottom)
    alias = DmTensor.from_addr(ctx, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["C"], 4 * 64 * 4)
    relabelled = t.relabel(Element=ax.m["C, R"])
    assert footprint(alias).overlaps(footprint(bottom)) and not footprint(alias).overlaps(footprint(top))
    assert footprint(relabelled).overlaps(footprint(top))
    # a slice the tensor does not hold is not its bytes (only slice 0 of cluster 0 is valid here)
    other = DmTensor(ctx, i32, ax.m["1"], ax.m["1 # 2"], ax.m["C / 32 # 256"], ax.m["C % 32"], 0, register=False)
    assert footprint(t).spans[0].unit_count() == 1 and footprint(other).spans[0].unit_count() == 2
    assert footprint(t).overlaps(footprint(other))


# ------------------------------------------------------------------------------------------ hazards


def _handles(ctx: Context, memory: str) -> tuple[Any, Any, Any]:
    """Two handles on the same bytes of ``memory`` (the second an alias) and one on other bytes."""
    c1, cl, sl = m["1"], m["1 # 2"], m["1 # 256"]
    if memory == "hbm":
        a = HbmTensor(ctx, i32, c1, m["A"], 0, register=False)
        return a, HbmTensor.from_addr(ctx, i32, c1, m["N"], 64 * 4), HbmTensor(ctx, i32, c1, m["A"], 1 << 20,
                                                                              register=False)
    if memory == "dm":
        a = DmTensor(ctx, i32, c1, cl, sl, m["A"], 0, register=False)
        return (a, a.view().tile(m["A"], 64, m["A = 64"], 64),
                DmTensor(ctx, i32, c1, cl, sl, m["A"], 1 << 14, register=False))
    if memory == "vrf":
        a = VrfTensor(ctx, i32, c1, cl, sl, m["N"], 0, register=False)
        return a, a.relabel(Element=m["N"]), VrfTensor(ctx, i32, c1, cl, sl, m["N"], 1024, register=False)
    first = TrfTensor(ctx, bf16, c1, cl, sl, m["1"], m["A"], TrfAddress.FirstHalf, register=False)
    full = TrfTensor(ctx, bf16, c1, cl, sl, m["1"], m["K"], TrfAddress.Full, register=False)
    second = TrfTensor(ctx, bf16, c1, cl, sl, m["1"], m["A"], TrfAddress.SecondHalf, register=False)
    return first, full, second


@pytest.mark.parametrize("memory", ["hbm", "dm", "trf", "vrf"])
@pytest.mark.parametrize("kind", ["RAW", "WAR", "WAW"])
def test_each_hazard_waits_on_each_memory_through_an_alias(memory: str, kind: str) -> None:
    ctx = _ctx()
    a, alias, other = _handles(ctx, memory)
    first = {"RAW": "writes", "WAR": "reads", "WAW": "writes"}[kind]
    second = {"RAW": "reads", "WAR": "writes", "WAW": "writes"}[kind]
    x = _op(ctx, "main", 300, **{first: [a]})
    y = _op(ctx, "sub", 50, **{second: [alias]})
    z = _op(ctx, "sub", 50, **{second: [other]})  # other bytes: no hazard, only the sub context's order
    assert x.end == 300 and y.start == x.end + H and [(d.op, d.kinds) for d in y.deps] == [(x.index, (kind,))]
    assert z.start == y.end and not z.deps
    assert ctx.schedule.makespan == 400 + H


def test_two_reads_do_not_conflict_and_trf_halves_are_independent() -> None:
    ctx = _ctx()
    first, full, second = _handles(ctx, "trf")
    a = _op(ctx, "main", 300, reads=[first])
    b = _op(ctx, "sub", 100, reads=[first])        # read after read: no hazard
    c = _op(ctx, "sub", 100, writes=[second])      # the other half: no hazard
    d = _op(ctx, "sub", 100, writes=[full])        # 32 bytes of the row, in the half main reads
    assert (a.start, b.start, c.start, d.start) == (0, 0, 100, 300 + H)
    assert [(dep.op, dep.kinds) for dep in d.deps] == [(a.index, ("WAR",))]


def test_hazards_across_chips() -> None:
    ctx = _ctx(2)
    ax = AxisSet(C=2, A=2048)
    both = HbmTensor(ctx, i32, ax.m["C"], ax.m["A"], 0, register=False)           # chips 0 and 1
    only0 = HbmTensor(ctx, i32, ax.m["1 # 2"], ax.m["A"], 0, register=False)      # chip 0 of the same bytes
    assert footprint(both).chips() == 0b11 and footprint(only0).chips() == 0b01
    w = _op(ctx, "main", 200, writes=[both])
    r = _op(ctx, "sub", 10, reads=[only0])
    assert r.start == w.end + H and r.deps[0].kinds == ("RAW",)
    # a write on chip 1 only does not wait for a read of chip 0 only; a write on chip 0 does
    ctx2 = _ctx(2)
    s0 = Span.of("hbm", [0], [0], [4096])
    s1 = Span.of("hbm", [1], [0], [4096])
    a = ctx2.record("main", "read chip 0", [EngineReport("x", "", 100)], reads=[s0])
    b = ctx2.record("sub", "write chip 1", [EngineReport("x", "", 10)], writes=[s1])
    c = ctx2.record("tdma", "write chip 0", [EngineReport("x", "", 10)], writes=[s0])
    assert (a.start, b.start, c.start) == (0, 0, 100 + H) and c.deps[0].kinds == ("WAR",)


def test_program_order_is_authoritative_an_operation_never_starts_before_the_previous_one() -> None:
    ctx = _ctx()
    x = _op(ctx, "main", 500)
    y = _op(ctx, "main", 100)  # waits for main: starts at 500
    z = _op(ctx, "sub", 10)    # free resource, no hazard, but written after y: issues when y starts (L7046)
    assert (x.start, y.start, z.start) == (0, 500, 500)


# ------------------------------------------------------------------------------------------ DMA engines, PCIe


def test_independent_transfers_overlap_on_different_engines_and_pcie_is_its_own_resource() -> None:
    ctx = _ctx()
    rng = np.random.default_rng(0)
    x = HostTensor.rand(i32, m["A"], rng)
    h0 = x.to_hbm(m["1"], m["A"], ctx.pdma, 0)
    h1 = x.to_hbm(m["1"], m["A"], ctx.pdma, 1 << 20)
    p0, p1 = ctx.schedule.ops
    assert p0.lanes == ((0, "pcie"),) and p1.start == p0.end  # one PCIe link: serialised
    # two HBM -> DM moves onto slices 0..63 (DMNs 0 and 1): both on engine 0, so the second waits for it
    d0 = h0.to_dm(m["1 # 2"], m["A / 32 # 256"], m["A % 32"], ctx.tdma, 0)
    d1 = h1.to_dm(m["1 # 2"], m["A / 32 # 256"], m["A % 32"], ctx.tdma, 1 << 12)
    t0, t1 = ctx.schedule.ops[2:]
    assert t0.lanes == t1.lanes == ((0, "dma0"),)
    assert t0.start == p0.end + H and t1.start == max(p1.end + H, t0.end)
    # HBM -> HBM moves have no DM side: each takes the engine free first, so they overlap
    c0 = h0.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 22)
    c1 = h1.to_hbm(m["1"], m["A"], ctx.tdma, 1 << 23)
    u0, u1 = ctx.schedule.ops[4:]
    assert u0.lanes != u1.lanes and u0.start == u1.start == t1.start
    # a move over all 512 slices occupies all eight engines
    wide = h0.to_dm(m["A / 1024 # 2"], m["A / 4 % 256"], m["A % 4"], ctx.tdma, 1 << 13)
    op = ctx.schedule.ops[-1]
    assert sorted(ln for _, ln in op.lanes) == [f"dma{e}" for e in range(8)]
    assert op.traffic["DMA"] == 2048 * 4 and op.traffic["HBM"] == 2048 * 4
    del d0, d1, c0, c1, wide


def test_transfers_with_disjoint_engines_run_concurrently() -> None:
    ctx = _ctx()
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0, register=False)
    e0 = ctx.record("tdma", "on dma0", [EngineReport("dma", "", 100)], writes=[a], lanes=[(0, "dma0")])
    e1 = ctx.record("tdma", "on dma1", [EngineReport("dma", "", 100)], lanes=[(0, "dma1")])
    e2 = ctx.record("tdma", "any engine", [EngineReport("dma", "", 100)])  # picks the earliest free: dma2
    assert (e0.start, e1.start, e2.start) == (0, 0, 0) and e2.lanes == ((0, "dma2"),)


# ------------------------------------------------------------------------------------------ contention


def test_a_bank_hammering_pass_occupies_the_dma_engines_with_a_warning() -> None:
    ctx = _ctx()
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0, register=False)
    d = ctx.record("tdma", "dma", [EngineReport("dma", "", 400)], lanes=[(0, "dma3")])
    with pytest.warns(BankStarvationWarning, match="L2841"):
        p = _op(ctx, "main", 100, reads=[a], bank_run=RNGD.dm.bank_starvation_limit)
    assert p.start == d.end == 400 and (0, "dma3") in p.lanes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = _op(ctx, "main", 100, reads=[a], bank_run=RNGD.dm.bank_starvation_limit - 1)
    assert (0, "dma3") not in q.lanes
    assert any("NoC" in w for w in ctx.report().warnings)


def test_main_and_sub_sharing_banks_stretch_toward_main_plus_sub() -> None:
    ctx = _ctx()
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0, register=False)
    b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 1 << 14, register=False)
    limit = RNGD.dm.bank_starvation_limit
    with pytest.warns(BankStarvationWarning):
        _op(ctx, "main", 1000, reads=[a], bank_run=limit)
    sub = _op(ctx, "sub", 300, reads=[b])  # same slice 0, other bytes: waits for the bank the whole overlap
    assert (sub.start, sub.stretch, sub.end) == (0, 300, 600)
    ctx2 = _ctx()
    with pytest.warns(BankStarvationWarning):
        _op(ctx2, "main", 1000, reads=[a], bank_run=limit)
    quiet = _op(ctx2, "sub", 300, reads=[b], bank_run=1)
    assert quiet.stretch == 300  # the main pass hammers the slice's bank
    ctx3 = _ctx()
    _op(ctx3, "main", 1000, reads=[a])
    ideal = _op(ctx3, "sub", 300, reads=[b])  # neither hammers a bank: max(main, sub)
    assert ideal.stretch == 0 and ctx3.schedule.makespan == 1000


# ------------------------------------------------------------------------------------------ real kernels


def test_dma_waits_for_the_pass_reading_its_destination_and_the_pass_for_the_dma_writing_its_source() -> None:
    ctx = _ctx()
    rng = np.random.default_rng(1)
    x = dt.random_values(i32, (2048,), rng)
    h = HostTensor.from_numpy(x, i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    src = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0)
    out = (ctx.main.begin(src.view()).fetch(i32, m["A / 8"], m["A % 8"]).commit(m["A"], 1 << 13))
    # overwrite the bytes the pass read: write-after-read, through a new handle at the same address
    again = h.to_dm(m["1 # 2"], m["1 # 256"], m["A"], ctx.tdma, 0)
    # read the committed bytes through from_addr: read-after-write through an alias
    alias = DmTensor.from_addr(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 1 << 13)
    back = alias.to_hbm(m["A"], ctx.tdma, 1 << 20)
    load, pas, war, raw = ctx.schedule.ops
    assert pas.start == 0 and war.start == max(pas.end, load.end) + H  # each in another context
    assert [(d.op, d.kinds) for d in war.deps] == [(load.index, ("RAW",)), (pas.index, ("WAR",))]
    # both DMAs run on engine 0 (slice 0's DMN pair): the second waits for the engine as well as the pass
    assert war.lanes == raw.lanes == ((0, "dma0"),) and raw.start == max(pas.end + H, war.end)
    assert not raw.deps  # its RAW on the pass was over before it issued (after the WAR move started)
    assert np.array_equal(back.to_host(m["A"], ctx.pdma).numpy(), x) and np.array_equal(out.logical(), x)
    assert np.array_equal(again.logical(), x)


def _weights_kernel(double: bool, tiles: int = 3, timeline: bool = True
                    ) -> tuple[Context, list[Any], list[Any], list[float]]:
    """A dot product per tile: the sub context loads tile k's weights into a TRF half, the main context
    contracts the activation with them.  Double-buffered: tiles alternate halves; single: always FirstHalf.
    ``timeline``: the schedule's record mode (``Schedule.timeline``)."""
    ctx = _ctx()
    ctx.schedule.timeline = timeline
    ax = AxisSet(A=1024)
    mm = ax.m
    rng = np.random.default_rng(7)
    x = dt.random_values(bf16, 1024, rng)
    ws = [dt.random_values(bf16, 1024, rng) for _ in range(tiles)]
    lhs = place_dm(ctx, x, bf16, mm["1"], mm["1 # 2"], mm["1 # 256"], mm["A"], 0)
    wdm = [place_dm(ctx, w, bf16, mm["1"], mm["1 # 2"], mm["1 # 256"], mm["A"], (k + 1) << 12)
           for k, w in enumerate(ws)]
    got = []
    for k in range(tiles):
        half = TrfAddress.SecondHalf if double and k % 2 else TrfAddress.FirstHalf
        trf = (ctx.sub.begin(wdm[k].view()).fetch(bf16, mm["1"], mm["A"]).collect(mm["1, A / 16"], mm["A % 16"])
               .to_trf(mm["1"], mm["A"], half))
        out = (ctx.main.begin(lhs.view()).fetch(bf16, mm["1"], mm["A"]).collect(mm["A / 16"], mm["A % 16"])
               .align(mm["A / 32"], mm["A % 32"], trf).contract(mm["1"])
               .accumulate(mm["1"], mm["1 # 8"], AccumulationKind.Interleaved)
               .cast(bf16, mm["1 # 16"]).commit(mm["1 # 8"], (8 + k) << 12))
        got.append(float(np.asarray(out.logical(), dtype=np.float64).reshape(-1)[0]))
    loads = [op for op in ctx.schedule.ops if op.track == "sub"]
    passes = [op for op in ctx.schedule.ops if op.track == "main"]
    want = [float(np.dot(x.astype(np.float64), w.astype(np.float64))) for w in ws]
    for g, w in zip(got, want, strict=True):
        assert abs(g - w) <= 2.0**-7 * abs(w) + 1024 * 2.0**-20  # bf16 output rounding + f32 accumulation
    return ctx, loads, passes, got


def test_double_buffered_weights_overlap_and_single_buffered_serialise() -> None:
    ctx, loads, passes, _ = _weights_kernel(double=False)
    # single buffer: load k+1 overwrites the half pass k reads (WAR), pass k+1 reads load k+1 (RAW)
    # (each waits for the other context: a hand-off, issue 22)
    t = 0
    for ld, ps in zip(loads, passes, strict=True):
        assert ld.start == t and ps.start == ld.end + H
        t = ps.end + H
    assert ctx.schedule.makespan == sum(op.cycles for op in loads + passes) + H * (2 * len(loads) - 1)
    ctx2, loads2, passes2, _ = _weights_kernel(double=True)
    # double buffer, by hand: load k (sub) starts when the sub context is free, the pass that read its half
    # (k - 2) has ended and pass k - 1 has issued; pass k starts when main is free and load k has ended (a
    # dependency on the other context adds the hand-off)
    sub_free = main_free = issue = 0
    pass_end: list[int] = []
    for k, (ld, ps) in enumerate(zip(loads2, passes2, strict=True)):
        start = max(sub_free, pass_end[k - 2] + H if k >= 2 else 0, issue)
        assert ld.start == start
        sub_free = start + ld.cycles
        pstart = max(main_free, sub_free + H)
        assert ps.start == pstart
        main_free = pstart + ps.cycles
        pass_end.append(main_free)
        issue = pstart
    assert ctx2.schedule.makespan == main_free < ctx.schedule.makespan
    assert loads2[1].start < passes2[0].end  # the next half loads while main computes


# ------------------------------------------------------------------------------------------ report, trace


def test_report_is_data_with_a_roofline_and_renders_the_table() -> None:
    ctx, loads, passes, _ = _weights_kernel(double=True, tiles=2)
    rep = ctx.report()
    assert isinstance(rep, KernelReport) and rep.makespan == ctx.schedule.makespan
    assert [p.index for p in rep.passes] == [op.index for op in passes]
    p = rep.passes[0]
    # one slice, one Row, 1024 bf16 products: MAC-bound = 1024 / (8 rows × 32 × 512 slices) cycles (L4378–4388)
    assert p.roofline.macs == 1024
    assert p.roofline.mac_cycles == pytest.approx(1024 / (8 * 32 * 512))
    # DM traffic: the main context fetches 2 KB of activation and commits 8 bf16 outputs, each port its own path
    # at 32 B/cycle per slice × 512 slices (visa.hw.paths)
    assert p.roofline.bytes["fetch"] == 2048 and p.roofline.bytes["commit"] == 16
    assert p.roofline.path_cycles["fetch"] == pytest.approx(2048 / (32 * 512))
    assert p.roofline.utilisation == pytest.approx(p.roofline.bound_cycles / passes[0].cycles)
    main = next(t for t in rep.tracks if t.track == "main")
    assert main.busy == sum(op.cycles for op in passes) and main.idle == rep.makespan - main.busy
    assert rep.critical_path[-1] == max(ctx.schedule.ops, key=lambda o: o.end).index
    # by hand: load 1 starts with pass 0 (issued with it, its half free), and pass 1 waits for load 1 when a
    # load is longer than a pass; else for main
    ld, ps = loads[0].cycles, passes[0].cycles
    if ld >= ps:
        assert rep.critical_path == [loads[0].index, loads[1].index, passes[1].index]
        sub = next(t for t in rep.tracks if t.track == "sub")
        assert sub.critical == sub.busy and main.critical == passes[1].cycles
    else:
        assert rep.critical_path == [loads[0].index, passes[0].index, passes[1].index]
    text = str(rep)
    assert "roofline" in text and "critical path" in text and "chip 0 main" in text
    assert ctx.report_text().startswith(text) and "waits for" in ctx.report_text()


def _check_trace(ctx: Context, path: Path) -> list[dict[str, Any]]:
    """Load the written trace and check what holds for every schedule: units, names, ids, nesting per thread,
    args, one flow per dependency across threads; returns the events."""
    ctx.write_trace(str(path))
    events: list[dict[str, Any]] = json.loads(path.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    ops = ctx.schedule.ops
    assert len(slices) == sum(len(op.lanes) for op in ops)  # one slice per operation and resource it occupies
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    for e in slices:
        op = ops[e["args"]["op"]]
        assert isinstance(e["args"]["cycles"], int) and e["args"]["cycles"] == op.cycles
        assert e["ts"] == pytest.approx(op.start / 1000) and e["dur"] == pytest.approx(op.cycles / 1000)  # 1 GHz
        assert e["pid"] > 0 and e["tid"] > 0 and e["name"] == op.name
        chip, resource = next(ln for ln in op.lanes if threads[(e["pid"], e["tid"])] == ln[1])
        assert procs[e["pid"]] == f"device 0 (RNGD) chip {chip}"
        assert e["args"]["source"].split(":")[0].endswith(HERE) and int(e["args"]["source"].split(":")[1]) > 0
        assert all(r.engine in e["args"] for r in op.engines) and e["args"]["bytes"]
    for key in threads:  # slices of one thread never overlap (one operation at a time)
        row = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if (e["pid"], e["tid"]) == key)
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(row, row[1:], strict=False))
    cross = [(d.op, op.index) for op in ops for d in op.deps if ops[d.op].lanes[0] != op.lanes[0]]
    starts = sorted((e for e in events if e["ph"] == "s"), key=lambda e: e["id"])
    finishes = sorted((e for e in events if e["ph"] == "f"), key=lambda e: e["id"])
    assert len(starts) == len(finishes) == len(cross)
    for s, f in zip(starts, finishes, strict=True):
        assert s["id"] == f["id"] and f["bp"] == "e" and s["ts"] <= f["ts"]
    return events


def test_trace_is_at_true_time_with_names_ids_nesting_args_flows_and_counters(tmp_path: Path) -> None:
    ctx, loads, passes, _ = _weights_kernel(double=True, tiles=3)
    events = _check_trace(ctx, tmp_path / "trace.json")
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads == {"main", "sub"} and any(e["ph"] == "s" for e in events)
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and all(e["name"] == "live DM bytes" and e["args"]["bytes"] >= 0 for e in counters)
    assert max(e["args"]["bytes"] for e in counters) >= 4 * 2048  # activation + three weight tiles, 2 KB each


def test_trace_of_dma_engines_and_pcie(tmp_path: Path) -> None:
    ctx = _ctx()
    x = HostTensor.rand(i32, m["A"], np.random.default_rng(3))
    h = x.to_hbm(m["1"], m["A"], ctx.pdma, 0)
    d = h.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)  # 256 slices: engines 0-3
    out = ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).commit(m["A % 8"], 1 << 12)
    back = out.to_hbm(m["A"], ctx.tdma, 1 << 20).to_host(m["A"], ctx.pdma)
    assert np.array_equal(back.numpy(), x.numpy())
    events = _check_trace(ctx, tmp_path / "dma.json")
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads == {"main", "pcie", *(f"dma{e}" for e in range(4))}
    assert len([e for e in events if e["ph"] == "s"]) >= 3  # PCIe -> DMA -> main -> DMA -> PCIe


def test_a_transfer_between_chips_occupies_their_pcie_links() -> None:
    ax = AxisSet(C=2, A=1024)
    ctx = _ctx(2)
    x = HostTensor.rand(i32, ax.m["C, A"], np.random.default_rng(0))
    h = x.to_hbm(ax.m["C"], ax.m["A"], ctx.pdma, 0)
    load = ctx.schedule.ops[-1]
    assert load.lanes == ((0, "pcie"), (1, "pcie"))  # host -> HBM of both chips
    gathered = h.to_hbm(ax.m["1 # 2"], ax.m["C, A"], ctx.tdma, 1 << 20)  # chip 1's half crosses to chip 0
    op = ctx.schedule.ops[-1]
    assert {(0, "pcie"), (1, "pcie")} <= set(op.lanes) and op.start == load.end + H
    assert op.traffic["PCIe"] == 1024 * 4 and op.traffic["DMA"] == 2 * 1024 * 4
    assert np.array_equal(gathered.logical(axes="C A"), x.numpy(axes="C A"))
    rep = ctx.report()
    assert rep.roofline.bytes["PCIe"] == 2 * 1024 * 4 + 1024 * 4
    assert rep.roofline.path_cycles["PCIe"] == pytest.approx(3 * 1024 * 4 / (30 * 2))


def test_fetch_reports_its_longest_same_bank_run() -> None:
    # i32 rows of 32 elements (128 bytes): walking down a column stays in one bank (address bits 3–6, L2878);
    # C = 0 and C = 1 share the bank's 8 bytes, so the run is two columns of 128 rows
    ax = AxisSet(R=128, C=8)
    ctx = _ctx()
    x = np.arange(128 * 8, dtype=np.int32).reshape(128, 8)
    d = place_dm(ctx, x, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["R, C # 32"], 0, axes="R C")
    column = ctx.main.begin(d.view()).fetch(i32, ax.m["C, R"], ax.m["1 # 2"])
    assert column.reports[-1].bank_run == 256 >= RNGD.dm.bank_starvation_limit
    rows = ctx.main.begin(d.view()).fetch(i32, ax.m["R"], ax.m["C # 32"])
    assert rows.reports[-1].bank_run == 1  # 128-byte fetches sweep all 16 banks


def test_the_kernel_roofline_covers_what_the_launched_kernel_issued() -> None:
    @device(chip=1)
    def kernel(ctx: Context, h: Any) -> Any:
        return h.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0).to_hbm(m["A"], ctx.tdma, 1 << 20)

    ctx = Context.acquire()
    x = HostTensor.rand(i32, m["A"], np.random.default_rng(5))
    y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
    assert np.array_equal(y.numpy(), x.numpy())
    inside = [op for op in ctx.schedule.ops if op.in_kernel]
    assert [op.track for op in inside] == ["tdma", "tdma"] and len(ctx.schedule.ops) == 4
    rep = ctx.report()
    assert rep.kernel is not None and rep.kernel.cycles == inside[-1].end - inside[0].start
    assert rep.kernel.bytes == {"DMA": 2 * 8192, "HBM": 2 * 8192} and rep.roofline.bytes["PCIe"] == 2 * 8192
    # the one HBM figure: 32 channels × 64 B at 0.75 GHz = 1,536 B/cycle (visa.hw.paths, L2980)
    assert rep.kernel.bound == "HBM" and rep.kernel.path_cycles["HBM"] == pytest.approx(2 * 8192 / 1536)
    assert "kernel roofline" in str(rep) and "run roofline" in str(rep)


def test_device_span_counts_device_operations_since_an_index() -> None:
    """``Schedule.device_span(first)``: from the first to the last device operation recorded since ``first``;
    the host's PCIe DMA (``pdma``) is not the device's time."""
    ctx = _ctx()
    _op(ctx, "pdma", 100)
    first = len(ctx.schedule.ops)
    a = _op(ctx, "main", 40)
    b = _op(ctx, "tdma", 70)
    _op(ctx, "pdma", 500)
    assert ctx.schedule.device_span(first) == max(a.end, b.end) - min(a.start, b.start)
    assert ctx.schedule.device_span(len(ctx.schedule.ops)) == 0


def test_a_commit_hammering_one_bank_occupies_the_dma_engines_too_l2913() -> None:
    """Commits count toward the bank-starvation rule as fetches do (L2897–2941, L2913): 128 writes of 32 bytes,
    128 bytes apart (one bank, address bits 3–6, L2878), while the fetch sweeps the banks."""
    ax = AxisSet(R=128, P=8)
    ctx = _ctx()
    x = np.arange(128 * 8, dtype=np.int32).reshape(128, 8)
    d = place_dm(ctx, x, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["R, P"], 0, axes="R P")
    with pytest.warns(BankStarvationWarning, match="commit"):
        out = ctx.main.begin(d.view()).fetch(i32, ax.m["R"], ax.m["P"]).commit(ax.m["R, P # 32"], 1 << 14)
    op = ctx.schedule.ops[-1]
    commit = next(r for r in op.engines if r.engine == "commit")
    assert commit.bank_run == 128 and max(op.bank_load) >= 128
    assert {f"dma{e}" for e in range(8)} <= {ln for _, ln in op.lanes}
    assert np.array_equal(out.logical(axes="R P"), x)


def test_the_64_access_count_is_summed_over_concurrent_commands_l2913() -> None:
    """main 30 + sub 20 (+ the waiting DMA request) is safe; main 30 + sub 35 = 65 is not: the later command is
    scheduled as if it occupied the DMA engines, with a warning naming the sum (L2913, L2920–2926)."""
    def runs(n: int) -> tuple[int, ...]:
        return (0, 0, n) + (0,) * 13  # n consecutive accesses to bank 2

    for sub_run, starved in ((20, False), (35, True)):
        ctx = _ctx()
        a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0, register=False)
        b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 1 << 14, register=False)
        ctx.record("main", "main", [EngineReport("fetch", "", 1000, bank_run=30, bank_runs=runs(30))], reads=[a])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sub = ctx.record("sub", "sub", [EngineReport("fetch", "", 300, bank_run=sub_run, bank_runs=runs(sub_run))],
                             reads=[b])
        said = [str(w.message) for w in caught if issubclass(w.category, BankStarvationWarning)]
        assert bool(said) is starved and ((0, "dma0") in sub.lanes) is starved
        if starved:
            assert "sub fetch 35 + main #0 30 = 65" in said[0] and "bank 2" in said[0]
