"""Adversarial review of the owed writes and copied rows (issue 15): each mechanism against the same computation
with the mechanism off (docs/manual-notes.md, "Review of owed writes and copied rows").

The switches are the registry's (:mod:`visa.fastpaths`): ``dma.pending-copies`` off makes every broadcast's
copies at once; ``memory.rowpool`` off gives every fetch a buffer of its own; ``collect.replica-load`` off stores
every slice of a register load.  With them on, ``transfer.DEFER_BYTES`` and the pool's ``least`` are 0 (the
tuning constants: the smallest broadcast and buffer take the mechanism too).
"""

from __future__ import annotations

import functools
import gc
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import visa.memory.transfer as transfer
from tests.fastpath_switch import skip_unless
from visa import RNGD, AxisSet, Context, TrfAddress, fastpaths, i8
from visa.memory import owed
from visa.memory.rowpool import ROW_POOL
from visa.memory.transfer import DmEndpoint, HostBuffer, address_space, copy
from visa.testing import place_dm

UNIT = address_space(RNGD, "dm").unit_bytes
SLICES = RNGD.dm.slices_per_cluster

Broadcast = tuple[int, int, int, int]  # (copies, slice step, first slice, seed)

#: The mechanisms under review, as registered fast paths.
MECHANISMS = ("dma.pending-copies", "memory.rowpool", "collect.replica-load")


def _switched(flag: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Run the decorated helper with the mechanisms on (and taken at any size) when its argument ``flag`` is
    true, else with them off (:func:`visa.fastpaths.disabled`)."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            on, mp = bool(bound.arguments[flag]), bound.arguments["mp"]
            mp.setattr(transfer, "DEFER_BYTES", 0)
            mp.setattr(ROW_POOL, "least", 0)
            if on:
                return fn(*args, **kwargs)
            with fastpaths.disabled(*MECHANISMS):
                return fn(*args, **kwargs)
        return run
    return wrap



@_switched("pending")
def _fetch_over_broadcasts(broadcasts: list[Broadcast], first: int, count: int, pending: bool,
                           mp: pytest.MonkeyPatch, masked: bool = False
                           ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Broadcast DMAs of 32 host bytes over slices of cluster 0 (their copies pending or made), then a fetch of
    the slices ``[first, first + count)`` (``masked``: 31 bytes of each and a pad, through the masking stage): the
    stream's values and known-mask."""
    m = AxisSet(A=count, B=31 if masked else 32).m
    ctx = Context()
    ctx.num_chips = 1
    slices = " + ".join([f"# {first}"] * bool(first) + ["A"] + [f"# {SLICES - first - count}"])
    element = m["B # 32"] if masked else m["B"]
    t = place_dm(ctx, np.zeros((count, 31 if masked else 32), np.int8), i8, m["1"], m["1 # 2"], m[slices], element,
                 0, axes="A B")
    img = ctx.memory.chip(0).dm
    dm = DmEndpoint(RNGD, lambda chip: img)
    for n, step, u0, seed in broadcasts:
        src = np.random.default_rng(seed).integers(0, 256, size=32, dtype=np.uint8)
        copy([(n, 0, step * UNIT), (32, 1, 1)], (0, u0 * UNIT), HostBuffer(src), dm)
    s = ctx.main.begin(t.view()).fetch(i8, m["1"], element)
    out = np.array(s.data.values), np.array(s.data.known)
    del s, t, ctx
    gc.collect()
    return out


@pytest.mark.parametrize("first", [8, 9])
def test_a_masked_fetch_over_broadcast_slices_reads_as_made(first: int) -> None:
    """The masking stage (no rows left copies: the general read through the pending copies' sources)."""
    with pytest.MonkeyPatch.context() as mp:
        got = _fetch_over_broadcasts([(8, 1, 8, 1)], first, 4, True, mp, masked=True)
        want = _fetch_over_broadcasts([(8, 1, 8, 1)], first, 4, False, mp, masked=True)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_fetch_of_copies_whose_source_slice_it_does_not_read() -> None:
    """Defect found by this review: slices 9–12 are pending copies of slice 8 (a broadcast over 8–15), and the
    fetch reads 9–12 only.  The fetch read only the slices that hold their bytes *among those it reads* and
    noted 9–12 as copies of row 8 of the stream, which it never read (poison, zeros): the stream was zeros.
    Now the first slice read of such a class is read and the others copy it."""
    with pytest.MonkeyPatch.context() as mp:
        got = _fetch_over_broadcasts([(8, 1, 8, 1)], 9, 4, True, mp)
        want = _fetch_over_broadcasts([(8, 1, 8, 1)], 9, 4, False, mp)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0][0, 0, 9:13].any()


@settings(max_examples=40, deadline=None)
@example(broadcasts=[(6, 1, 0, 12)], first=3, count=8)  # (the sources of 3-5 outside the window)
@given(broadcasts=st.lists(st.tuples(st.integers(2, 6), st.integers(1, 3), st.integers(0, 12),
                                     st.integers(0, 99)), min_size=1, max_size=3),
       first=st.integers(0, 16), count=st.integers(2, 8))
def test_a_fetch_over_broadcast_slices_reads_as_made(broadcasts: list[Broadcast], first: int, count: int) -> None:
    """Broadcasts over overlapping slice patterns, then a fetch of any window of slices (sources inside or outside
    it): the stream with the copies pending and the pool on equals the one with every copy made, no pool."""
    with pytest.MonkeyPatch.context() as mp:
        got = _fetch_over_broadcasts(broadcasts, first, count, True, mp)
        want = _fetch_over_broadcasts(broadcasts, first, count, False, mp)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@_switched("on")
def _to_trf_over_broadcasts(broadcasts: list[Broadcast], first: int, count: int, rows: int, on: bool,
                            mp: pytest.MonkeyPatch) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Slices ``[first, first + count)`` written by one DMA (4 KiB each: a page, so that the broadcasts' replica
    ids hold), broadcasts over some of them, then fetch → collect → TRF load of ``rows`` Rows: the TRF's bytes
    and written-mask, with every mechanism on (copies pending in DM, the pool, the replicated load) or off."""
    from visa.tensors.handles import DmTensor
    from visa.testing import _enter_kernel

    m = AxisSet(A=count, R=rows, B=4096 // rows).m
    ctx = Context()
    ctx.num_chips = 1
    _enter_kernel(ctx, m["1"])
    slices = " + ".join([f"# {first}"] * bool(first) + ["A"] + [f"# {SLICES - first - count}"])
    t: Any = DmTensor(ctx, i8, m["1"], m["1 # 2"], m[slices], m["R, B"], 0, call="test")
    img = ctx.memory.chip(0).dm
    dm = DmEndpoint(RNGD, lambda chip: img)
    base = np.random.default_rng(7).integers(0, 256, size=count * 4096, dtype=np.uint8)
    copy([(count, 4096, UNIT), (4096, 1, 1)], (0, first * UNIT), HostBuffer(base), dm)
    for n, step, u0, seed in broadcasts:
        src = np.random.default_rng(seed).integers(0, 256, size=4096, dtype=np.uint8)
        copy([(n, 0, step * UNIT), (4096, 1, 1)], (0, u0 * UNIT), HostBuffer(src), dm)
    (ctx.main.begin(t.view()).fetch(i8, m["R"], m["B"]).collect(m["R, B / 32"], m["B % 32"])
     .to_trf(m["R"], m["B"], TrfAddress.Full))
    trf = ctx.memory.chip(0).trf
    out = trf.read_data()[..., : 4096 // rows].copy(), trf.known_bytes(0, 4096 // rows).copy()
    del t, ctx, dm, trf
    gc.collect()
    return out


@pytest.mark.parametrize(("broadcasts", "first", "count", "rows"), [
    ([(8, 1, 8, 1)], 9, 4, 8),   # the class's source slice outside the window (the defect above), 8 Rows
    ([(8, 1, 8, 1)], 8, 6, 8),   # the source inside
    ([(3, 2, 8, 1), (2, 1, 12, 2)], 8, 6, 8),   # two classes and slices of their own
    ([(8, 1, 8, 1)], 9, 4, 2),   # fewer Rows than a bank's: the replicated load declines
])
def test_a_trf_load_of_broadcast_slices_writes_as_made(broadcasts: list[Broadcast], first: int, count: int,
                                                      rows: int) -> None:
    """The TRF after fetch → collect → load of slices a DMA broadcast: the same bytes and written-mask with the
    copies pending in DM, the rows left copies in the stream and the load's copies pending in the TRF, as with
    every copy made."""
    with pytest.MonkeyPatch.context() as mp:
        got = _to_trf_over_broadcasts(broadcasts, first, count, rows, True, mp)
    with pytest.MonkeyPatch.context() as mp:
        want = _to_trf_over_broadcasts(broadcasts, first, count, rows, False, mp)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@skip_unless("contraction.window-in-place", "contraction.window-nest", "memory.replicas")
def test_the_trf_window_is_a_snapshot_when_one_period_is_contiguous() -> None:
    """Defect found by this review: align reads the TRF window as a snapshot, so that a later load of the TRF
    cannot change what a pending contraction multiplies (L4063–4070; the contraction is computed when its
    result is read).  Weights written without replica ids whose period (found in the bytes) is one slice of one
    Row span contiguous bytes of the image, and ``np.ascontiguousarray`` returned the image itself: a later
    write of the TRF changed the window.  Now the window is a copy."""
    from visa.stream import contraction as SC
    from visa.testing import place_trf

    m = AxisSet(A=SLICES, K=64).m
    ctx = Context()
    ctx.num_chips = 1
    w = np.broadcast_to(np.random.default_rng(0).integers(-128, 128, size=(1, 64), dtype=np.int8), (SLICES, 64))
    trf = place_trf(ctx, w, i8, m["1"], m["1 # 2"], m["A"], m["1"], m["K"], TrfAddress.Full, axes="A K")
    valid = np.zeros((1, RNGD.dm.clusters_per_chip, SLICES), bool)
    valid[0, 0] = True
    window = SC.trf_window(trf, valid, 0, 64)
    assert window.period == 1  # (the path of the defect: the period found in the bytes)
    before = window.values.copy()
    place_trf(ctx, -w, i8, m["1"], m["1 # 2"], m["A"], m["1"], m["K"], TrfAddress.Full, axes="A K")
    np.testing.assert_array_equal(window.values, before)
    assert not np.shares_memory(window.values, trf.image(0).read_data())


# ------------------------------------------------------------------------------------------------ DMA programs

_SHAPE = (RNGD.dm.clusters_per_chip, SLICES, RNGD.dm.slice_bytes)


@_switched("pending")
def _dma_program(program: list[tuple[Any, ...]], pending: bool, mp: pytest.MonkeyPatch) -> list[Any]:
    """Run DMAs on a DM image over memory a dead image wrote: host broadcasts with one or two stride-0 slice loops
    and slice strides of either sign, DM → DM moves and broadcasts (reading what earlier ones left pending), and
    loop-nest reads of some slices, 4-bit ones included; every read, the whole image at the end, and what the
    next image receives."""
    import visa.memory.images as images
    from visa.dtypes import i4, i16
    from visa.memory.arena import Arena
    from visa.memory.images import DenseImage, load_nest
    from visa.memory.units import enabled_units

    mp.setattr(images, "ARENA", Arena(least=1))
    junk = DenseImage(_SHAPE, page_bytes=256)
    junk.flat_data(0, 2048).reshape(-1, _SHAPE[-1])[:, :2048] = 0x5A
    junk.mark_written(slice(None), 0, 2048)
    del junk
    img = DenseImage(_SHAPE, page_bytes=256)
    held = [img]
    dm = DmEndpoint(RNGD, lambda chip: held[0])
    reads: list[Any] = []
    for op in program:
        kind = op[0]
        if kind == "host":  # n1 classes of n2 slices each (outer slice stride ±n2: one range of slices) from slice
            _, n1, sign, n2, z2, u0, b, size, seed = op  # u0, byte b; the source read again for every class,
            src_n = size * (1 if z2 else n2)  # and (z2) for every slice of a class: two stride-0 slice loops
            src = HostBuffer(np.random.default_rng(seed).integers(0, 256, size=src_n, dtype=np.uint8))
            copy([(n1, 0, sign * n2 * UNIT), (n2, 0 if z2 else size, UNIT), (size, 1, 1)], (0, u0 * UNIT + b), src,
                 dm)
        elif kind == "dm":  # slices [u0, u0 + n) (stride 0: slice u0 only) to slices u1 + k·s1, bytes b → b1
            _, n, zero, u0, b, size, u1, s1, b1 = op
            copy([(n, 0 if zero else UNIT, s1 * UNIT), (size, 1, 1)], (u0 * UNIT + b, u1 * UNIT + b1), dm, dm)
        else:  # a loop-nest read of some slices
            _, units, b, count, nibbles = op
            en = np.zeros(_SHAPE[0] * _SHAPE[1], bool)
            en[list(units)] = True
            got = load_nest(i4 if nibbles else i16, enabled_units(img, en.reshape(_SHAPE[:2])), 8 * b,
                            [(2 * count if nibbles else count, 1)])
            assert got is not None
            reads.append((got[0].copy(), got[1].copy()))
            span = (b, b + 2 * count) if not nibbles else (b, b + count)  # (read_units: the TRF window's way)
            reads.append((owed.read_units(img, np.asarray(sorted(set(units)), np.int64), *span), None))
    reads.append((img._raw(0, 2200)[..., :2200].copy(), img.known_bytes(0, 2200)))  # (what is owed there, made)
    held.clear()
    del img, dm
    reads.append(DenseImage(_SHAPE, page_bytes=256).read_data()[..., :2200].copy())
    return reads


_SL = st.integers(20, 40)  # first slices (room for negative strides)
_B = st.sampled_from([0, 100, 700])  # byte offsets and sizes from few values: reads often inside a copy's range
_PROGRAM = st.lists(st.one_of(
    st.tuples(st.just("host"), st.integers(2, 4), st.sampled_from([1, -1]), st.integers(1, 3), st.booleans(), _SL,
              _B, st.sampled_from([100, 600, 37]), st.integers(0, 99)),
    st.tuples(st.just("dm"), st.integers(2, 4), st.booleans(), _SL, _B, st.sampled_from([100, 600, 37]),
              _SL, st.sampled_from([1, 2, -1]), _B),
    st.tuples(st.just("read"), st.lists(st.integers(8, 52), min_size=1, max_size=5), _B,
              st.sampled_from([1, 30, 50, 300]), st.booleans()),
    st.tuples(st.just("read"), st.lists(st.integers(8, 52), min_size=1, max_size=5), _B,
              st.sampled_from([1, 30, 50, 300]), st.booleans()),
), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@example(program=[("host", 2, 1, 1, False, 20, 0, 600, 1), ("read", [21, 30], 0, 30, False)])
@example(program=[("host", 3, -1, 2, True, 30, 100, 600, 2), ("read", [25, 26, 31], 100, 50, True),
                  ("dm", 3, True, 27, 100, 600, 40, 1, 0), ("read", [40, 41, 42, 29], 0, 300, False)])
@example(program=[("host", 2, 1, 3, True, 20, 0, 600, 3), ("host", 2, 1, 1, False, 22, 100, 100, 4),
                  ("read", [20, 21, 23, 24], 0, 50, False), ("dm", 2, False, 23, 0, 100, 22, 1, 0),
                  ("read", [20, 21, 22, 23, 24, 25], 0, 300, False)])
@example(program=[("host", 3, 1, 1, False, 20, 0, 600, 1), ("dm", 2, False, 30, 100, 100, 20, 1, 100),
                  ("read", [21, 22], 0, 300, False)])  # the source and a copy partly overwritten
@given(program=_PROGRAM)
def test_dma_programs_read_as_made(program: list[tuple[Any, ...]]) -> None:
    """Random DMA programs (module: two stride-0 slice loops, negative slice strides, partial byte ranges, DM → DM
    broadcasts of bytes left pending, overlapping writes, 4-bit reads): every read and the memory handed on are
    those of the same program with every copy made at once."""
    with pytest.MonkeyPatch.context() as mp:
        got = _dma_program(program, True, mp)
    with pytest.MonkeyPatch.context() as mp:
        want = _dma_program(program, False, mp)
    gc.collect()
    for a, b in zip(got, want, strict=True):
        if isinstance(a, tuple):
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
        else:
            np.testing.assert_array_equal(a, b)
            assert not a.any()


@_switched("pending")
def _two_chip_fetch(broadcasts: list[tuple[int, Broadcast]], first: int, count: int, pending: bool,
                    mp: pytest.MonkeyPatch) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """:func:`_fetch_over_broadcasts` over two chips, each with its own broadcasts ``(chip, broadcast)``."""
    m = AxisSet(C=2, A=count, B=32).m
    ctx = Context()
    ctx.num_chips = 2
    slices = " + ".join([f"# {first}"] * bool(first) + ["A"] + [f"# {SLICES - first - count}"])
    t = place_dm(ctx, np.zeros((2, count, 32), np.int8), i8, m["C"], m["1 # 2"], m[slices], m["B"], 0,
                 axes="C A B")
    for chip, (n, step, u0, seed) in broadcasts:
        images = [ctx.memory.chip(chip).dm]
        src = np.random.default_rng(seed).integers(0, 256, size=32, dtype=np.uint8)
        copy([(n, 0, step * UNIT), (32, 1, 1)], (0, u0 * UNIT), HostBuffer(src),
             DmEndpoint(RNGD, lambda c, images=images: images[0]))
    s = ctx.main.begin(t.view()).fetch(i8, m["1"], m["B"])
    out = np.array(s.data.values), np.array(s.data.known)
    del s, t, ctx
    gc.collect()
    return out


@pytest.mark.parametrize("broadcasts", [
    [(0, (4, 1, 8, 1)), (1, (6, 1, 8, 2))],       # both chips' classes from a slice outside the window
    [(0, (3, 1, 10, 1)), (1, (2, 1, 9, 2)), (1, (2, 1, 11, 3))],   # several classes on chip 1, sources inside
])
def test_a_two_chip_fetch_over_broadcast_slices_reads_as_made(broadcasts: list[tuple[int, Broadcast]]) -> None:
    """Two chips (the stream's rows of chip 1 offset by a chip's rows): the same stream as with every copy made."""
    with pytest.MonkeyPatch.context() as mp:
        got = _two_chip_fetch(broadcasts, 9, 4, True, mp)
    with pytest.MonkeyPatch.context() as mp:
        want = _two_chip_fetch(broadcasts, 9, 4, False, mp)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@_switched("on")
def _to_vrf_over_broadcasts(broadcasts: list[Broadcast], first: int, count: int, on: bool,
                            mp: pytest.MonkeyPatch, accepted: list[bool]) -> tuple[np.ndarray[Any, Any], ...]:
    """:func:`_to_trf_over_broadcasts` with a VRF load of one 4 KiB element per slice; ``accepted`` collects
    whether the replicated load took it."""
    from visa.engines import collect
    from visa.tensors.handles import DmTensor
    from visa.testing import _enter_kernel

    load = collect._load_replicas
    mp.setattr(collect, "_load_replicas", lambda *args: accepted.append(load(*args)) or accepted[-1])
    m = AxisSet(A=count, B=4096).m
    ctx = Context()
    ctx.num_chips = 1
    _enter_kernel(ctx, m["1"])
    slices = " + ".join([f"# {first}"] * bool(first) + ["A"] + [f"# {SLICES - first - count}"])
    t: Any = DmTensor(ctx, i8, m["1"], m["1 # 2"], m[slices], m["B"], 0, call="test")
    images = [ctx.memory.chip(0).dm]
    dm = DmEndpoint(RNGD, lambda chip: images[0])
    base = np.random.default_rng(7).integers(0, 256, size=count * 4096, dtype=np.uint8)
    copy([(count, 4096, UNIT), (4096, 1, 1)], (0, first * UNIT), HostBuffer(base), dm)
    for n, step, u0, seed in broadcasts:
        src = np.random.default_rng(seed).integers(0, 256, size=4096, dtype=np.uint8)
        copy([(n, 0, step * UNIT), (4096, 1, 1)], (0, u0 * UNIT), HostBuffer(src), dm)
    ctx.sub.begin(t.view()).fetch(i8, m["1"], m["B"]).collect(m["B / 32"], m["B % 32"]).to_vrf(m["B"], 0)
    vrf = ctx.memory.chip(0).vrf
    out = vrf.read_data()[..., :4096].copy(), vrf.known_bytes(0, 4096).copy()
    del t, ctx, dm, vrf
    gc.collect()
    return out


@pytest.mark.parametrize(("broadcasts", "first", "count"), [
    ([(8, 1, 8, 1)], 9, 4),   # the class's source outside the window
    ([(8, 1, 8, 1)], 8, 6),
])
@skip_unless("collect.replica-load", "memory.replicas", "fetch.replica-labels", "fetch.all-known")
def test_a_vrf_load_of_broadcast_slices_writes_as_made(broadcasts: list[Broadcast], first: int, count: int) -> None:
    """A VRF load of replicated slices (one slice written, the others pending copies) writes what the plain
    load writes."""
    accepted: list[bool] = []
    with pytest.MonkeyPatch.context() as mp:
        got = _to_vrf_over_broadcasts(broadcasts, first, count, True, mp, accepted)
    with pytest.MonkeyPatch.context() as mp:
        want = _to_vrf_over_broadcasts(broadcasts, first, count, False, mp, [])
    assert accepted == [True]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
