"""``fetch.dm-read`` (visa/engines/fast_dm_read.py) against the reference fetch → collect → register load (issue 24;
manual L1219–1688, L3560–3564, L4049–4061, L5063–5081): the register file holds the same bytes, the stream the
same values, the schedule the same cycles with the path on and off — and a stream left a view of the DM bytes
shows them as they were when it was fetched, whatever writes them afterwards (a tensor placed over them, a
commit, bytes unwritten or poisoned, a DMA)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, TrfAddress, bf16, f32, fastpaths, i8, i16, i32
from visa.engines.fast_dm_read import DmRead
from visa.testing import place_dm

TYPES = [i8, i16, i32, f32, bf16]


def _values(dtype: Any, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "int":
        x = rng.integers(dtype.min, dtype.max, size=shape, endpoint=True).astype(dtype.storage)
        x.reshape(-1)[:2] = (dtype.min, dtype.max)  # (the ends of the type)
        return x
    return rng.standard_normal(shape).astype(dtype.storage)


def _to_vrf(dtype: Any, x: np.ndarray, address: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """The VRF tensor's elements and the schedule's cycles of fetch → collect → to_vrf, in a fresh context."""
    ctx = Context(RNGD)
    per = 32 // (dtype.size_bits // 8)
    ax = AxisSet(C=2, S=256, E=x.shape[-1])
    m = ax.m
    t = place_dm(ctx, x, dtype, m["1"], m["C"], m["S"], m["E"], address, axes="C S E")
    v = (ctx.sub.begin(t.view()).fetch(dtype, m[f"E / {per}"], m[f"E % {per}"])
         .collect(m[f"E / {per}"], m[f"E % {per}"]).to_vrf(m["E"], 0))
    return np.asarray(v.logical(axes="C S E")).copy(), tuple(op.cycles for op in ctx.schedule.ops)


def _to_trf(x: np.ndarray, address: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """fetch → collect → to_trf of ``x`` (i8, ``(2, 256, 8, E)``): the TRF tensor's elements and the cycles."""
    ctx = Context(RNGD)
    ax = AxisSet(C=2, S=256, R=8, E=x.shape[-1])
    m = ax.m
    t = place_dm(ctx, x, i8, m["1"], m["C"], m["S"], m["R, E"], address, axes="C S R E")
    trf = (ctx.sub.begin(t.view()).fetch(i8, m["R"], m["E"]).collect(m["R, E / 32"], m["E % 32"])
           .to_trf(m["R"], m["E"], TrfAddress.FirstHalf))
    return np.asarray(trf.logical(axes="C S R E")).copy(), tuple(op.cycles for op in ctx.schedule.ops)


def _same_on_and_off(run: Callable[[], tuple[np.ndarray, tuple[int, ...]]]) -> None:
    fast = run()
    with fastpaths.disabled("fetch.dm-read"):
        reference = run()
    with fastpaths.disabled():
        every_off = run()
    for got, want, off in zip(fast, reference, every_off, strict=True):
        got, want, off = np.asarray(got), np.asarray(want), np.asarray(off)
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
        assert np.array_equal(got.view(np.uint8), off.view(np.uint8))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(TYPES), st.sampled_from([1, 2, 4]), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_to_vrf_is_the_reference(dtype: Any, flits: int, where: int, seed: int) -> None:
    per = 32 // (dtype.size_bits // 8)
    x = _values(dtype, (2, 256, flits * per), np.random.default_rng(seed))
    _same_on_and_off(lambda: _to_vrf(dtype, x, 32 * where))


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([32, 64]), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_to_trf_is_the_reference(e: int, where: int, seed: int) -> None:
    x = _values(i8, (2, 256, 8, e), np.random.default_rng(seed))
    _same_on_and_off(lambda: _to_trf(x, 64 * where))


def test_the_fetch_is_left_a_view_and_the_load_reads_it() -> None:
    """Its own structure: the fetch and the collect are views of DM (nothing read), the load copies DM → VRF."""
    needs("fetch.dm-read", "fetch.all-known")
    ctx = Context(RNGD)
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 0, axes="C S E")
    f = ctx.sub.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
    assert isinstance(f.data, DmRead) and not f.data._made()
    c = f.collect(m["E / 8"], m["E % 8"])
    assert isinstance(c.data, DmRead) and not c.data._made()
    v = c.to_vrf(m["E"], 0)
    assert not c.data._made()
    assert np.array_equal(v.logical(axes="C S E"), x)


def _writes(ctx: Context, t: Any, m: Any, new: np.ndarray) -> list[Callable[[], Any]]:
    """Ways to change the DM bytes a fetch of ``t`` read."""
    dm = ctx.memory.chip(0).dm
    return [
        lambda: place_dm(ctx, new, i32, m["1"], m["C"], m["S"], m["E"], t.address, axes="C S E"),
        lambda: dm.poison(t.address, t.address + 64),
        lambda: dm.unwrite(np.array([t.address + 4]), np.ones((2, 256, 1), dtype=bool)),
        lambda: dm.data,  # (the bytes handed out: whoever takes them may write them)
        lambda: place_dm(ctx, new, i32, m["1"], m["C"], m["S"], m["E"], 4096, axes="C S E")
        .view().to_dm(m["C"], m["S"], m["E"], ctx.tdma, t.address + 32),  # (a DMA over the upper half)
    ]


def test_a_view_shows_the_bytes_as_fetched() -> None:
    """A stream read after its DM bytes changed holds what the fetch read (the image has it read first), as the
    reference's stream read at the fetch does."""
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    new = -x - 1
    for k in range(5):
        ctx = Context(RNGD)
        t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 1024, axes="C S E")
        f = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
        c = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"]).collect(m["E / 8"], m["E % 8"])
        _writes(ctx, t, m, new)[k]()
        assert np.array_equal(np.asarray(f.data.values)[0].reshape(2, 256, 16), x), k
        assert bool(np.asarray(f.data.known).all()), k
        assert np.array_equal(np.asarray(c.data.values)[0].reshape(2, 256, 16), x), k


def test_an_image_handed_out_is_read_at_the_fetch() -> None:
    """Bytes written through an array :attr:`DenseImage.data` handed out before the fetch are not seen by the
    image, so the fetch reads them at once (the path declines): its stream holds what it read (review of issue 24,
    i24v)."""
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 1024, axes="C S E")
    handed = ctx.memory.chip(0).dm.data
    f = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
    handed[..., 1024:1088] = 0xFF
    assert np.array_equal(np.asarray(f.data.values)[0].reshape(2, 256, 16), x)


def test_a_dma_into_the_fetched_bytes_is_not_seen() -> None:
    """A DMA writing into the very bytes a stream views (``to_dm_view``: no poison of the destination first, the
    source placed before the fetch) has the stream read them before it writes (review of issue 24, i24v)."""
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 1024, axes="C S E")
    s = place_dm(ctx, -x - 1, i32, m["1"], m["C"], m["S"], m["E"], 4096, axes="C S E")
    f = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
    s.view().to_dm_view(t.view(), ctx.tdma)
    assert np.array_equal(np.asarray(f.data.values)[0].reshape(2, 256, 16), x)


class _Reader:
    """A reader of an image's bytes (``DenseImage.add_reader``): counts its settles."""

    def __init__(self) -> None:
        self.settled = 0

    def settle(self) -> None:
        self.settled += 1


def test_readers_that_died_are_dropped_in_a_read_only_loop() -> None:
    """``add_reader`` drops the readers that died, so that a loop only reading an image (no change to settle them)
    keeps a bounded list; the readers still alive all settle at the next change."""
    from visa.memory.images import DenseImage

    img = DenseImage((2, 4, 64))
    kept = [_Reader() for _ in range(40)]
    for r in kept:
        img.add_reader(r)
    for _ in range(5000):
        img.add_reader(_Reader())  # (dies at once: the loop holds no reference)
    assert len(img._readers) <= 4 * len(kept) + 64
    img.poison(0, 8)  # a change: every live reader settles, once
    assert [r.settled for r in kept] == [1] * len(kept)
    assert not img._readers


def test_a_loop_of_fetches_keeps_the_readers_bounded() -> None:
    """The fetches of a read-only loop over one DM tensor (each left a view, its stream then dropped) do not grow
    the image's readers without bound."""
    needs("fetch.dm-read", "fetch.all-known")
    ctx = Context(RNGD)
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 0, axes="C S E")
    dm = ctx.memory.chip(0).dm
    for _ in range(1000):
        f = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
        assert isinstance(f.data, DmRead)
    assert len(dm._readers) <= 128
    assert np.array_equal(np.asarray(f.data.values)[0].reshape(2, 256, 16), x)
