"""``fetch.masked-known`` (visa/engines/fast_masked.py) against the Fetch Engine's reference read and masking
stage (issue 24; L1877–1935): a fetch of a DM tensor with a padded lane (``W # 8``, ``# 1 + W``), its padding
never written or written with other bytes, gives the same stream (values and known-mask) and the same cycles with
the path on and off — also when an unmasked byte was never written (then the path is not taken), with each pad
value, for 1-, 2- and 4-byte elements."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, PadValue, fastpaths, i8, i16, i32
from visa.engines.fast_masked import unmasked_cut
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, V=4, W=7, X=8)
M = AX.m
#: (the DM Element, the fetch's Packet: the padded lane masked)
LAYOUTS = [("V, W # 8", "W # 8"), ("V, # 1 + W", "# 1 + W")]
PADS = [PadValue.Zero, PadValue.Min, PadValue.Max]


def _fetch(dtype: Any, layout: tuple[str, str], pad: PadValue, x: np.ndarray, garbage: bool,
           hole: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The stream's values and known-mask (read whole) and the schedule's cycles, in a fresh context."""
    element, packet = layout
    ctx = Context(RNGD)
    if garbage:  # the padding lanes hold bytes written before (8 elements a row over the same bytes)
        junk = np.full((2, 256, 4, 8), dtype.max, dtype=dtype.storage)
        place_dm(ctx, junk, dtype, M["1"], M["C"], M["S"], M["V, X"], 0, axes="C S V X")
    t = place_dm(ctx, x, dtype, M["1"], M["C"], M["S"], M[element], 0, axes="C S V W")
    if hole:  # one byte of an unmasked element in slice 3 never written: poison there, the path not taken
        enabled = np.zeros((2, 256, 1), dtype=bool)
        enabled[0, 3] = True
        ctx.memory.chip(0).dm.unwrite(np.array([dtype.size_bits // 8 * 9]), enabled)
    s = ctx.main.begin(t.view()).fetch(dtype, M["V"], M[packet], pad_value=pad)
    values, known = np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()
    return values, known, tuple(op.cycles for op in ctx.schedule.ops)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([i8, i16, i32]), st.sampled_from(LAYOUTS), st.sampled_from(PADS), st.booleans(),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_masked_known_is_the_reference(dtype: Any, layout: tuple[str, str], pad: PadValue, garbage: bool,
                                       hole: bool, seed: int) -> None:
    x = np.random.default_rng(seed).integers(dtype.min, dtype.max, size=(2, 256, 4, 7), endpoint=True
                                             ).astype(dtype.storage)
    fast = _fetch(dtype, layout, pad, x, garbage, hole)
    with fastpaths.disabled("fetch.masked-known"):
        reference = _fetch(dtype, layout, pad, x, garbage, hole)
    with fastpaths.disabled():
        every_off = _fetch(dtype, layout, pad, x, garbage, hole)
    for got, want, off in zip(fast, reference, every_off, strict=True):
        assert np.array_equal(np.asarray(got), np.asarray(want)) and np.array_equal(np.asarray(got), np.asarray(off))
    if not hole:
        assert fast[1].all()  # every position known: the masked ones hold the pad value


def test_padded_lane_is_known_without_a_mask() -> None:
    """The path's own structure: the stream's known-mask is a broadcast (no bool per position), and the lane
    holds the pad value."""
    needs("fetch.masked-known", "fetch.all-known")
    x = np.arange(2 * 256 * 4 * 7, dtype=np.int32).reshape(2, 256, 4, 7)
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i32, M["1"], M["C"], M["S"], M["V, W # 8"], 0, axes="C S V W")
    s = ctx.main.begin(t.view()).fetch(i32, M["V"], M["W # 8"], pad_value=PadValue.Custom(-5))
    known = s.data.known
    assert known.strides == (0,) * known.ndim
    values = np.asarray(s.data.values)[0]
    assert np.array_equal(values[..., :7], x) and (values[..., 7] == -5).all()


def test_a_mask_that_is_no_cut_of_one_loop_is_left_to_the_reference() -> None:
    m = np.zeros((4, 8), dtype=bool)
    m[1:, 7] = True  # the lane masked in three rows of four
    assert unmasked_cut(((4, 8), (8, 1)), m.reshape(-1)) is None
    m[:, :] = True  # every position masked: nothing to read
    assert unmasked_cut(((4, 8), (8, 1)), m.reshape(-1)) is None


def _random_cut(storage: Any, sizes: list[int], rows: int, data: Any) -> tuple[Any, np.ndarray, Any]:
    """A cut of one of the loops ``sizes`` (C order, drawn), random bytes for ``rows`` rows of them, and a pad
    value of ``storage``."""
    from visa.engines.fast_masked import Cut

    loop = data.draw(st.integers(0, len(sizes) - 1))
    lo = data.draw(st.integers(0, sizes[loop] - 1))
    hi = data.draw(st.integers(lo + 1, sizes[loop]))
    strides = [int(np.prod(sizes[k + 1:])) for k in range(len(sizes))]
    cut = Cut(tuple(zip(sizes, strides, strict=True)), loop, lo, hi)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    base = rng.integers(0, 256, size=rows * int(np.prod(sizes)) * np.dtype(storage).itemsize, dtype=np.uint8)
    pad = np.asarray(rng.integers(0, 100)).astype(storage)
    return cut, base, pad


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([np.int8, np.int16, np.int32, np.uint16, np.float32, np.int64]),
       st.lists(st.integers(1, 9), min_size=1, max_size=3), st.integers(1, 5), st.data())
def test_fill_by_words_is_the_element_fill(storage: Any, sizes: list[int], rows: int, data: Any) -> None:
    """``fetch.masked-fill-words``: the masked lanes filled a word at a time are the same bytes as filled an
    element at a time (every cut of every loop, every element size, buffers whose lanes are no whole words)."""
    from visa.engines.fast_masked import fill

    cut, base, pad = _random_cut(storage, sizes, rows, data)
    loop, lo, hi = cut.loop, cut.lo, cut.hi
    fast, want = base.view(storage).copy(), base.view(storage).copy()
    fill(fast, rows, cut, pad)
    with fastpaths.disabled("fetch.masked-fill-words"):
        fill(want, rows, cut, pad)
    assert np.array_equal(fast.view(np.uint8), want.view(np.uint8))
    view = want.reshape(rows, *sizes)
    lead = (slice(None),) * (1 + loop)
    assert (view[(*lead, slice(0, lo))] == pad).all() and (view[(*lead, slice(hi, None))] == pad).all()


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([np.int8, np.int16, np.int32, np.float32]), st.lists(st.integers(1, 9), min_size=1, max_size=3),
       st.integers(1, 7), st.integers(1, 4), st.data())
def test_fill_views_by_bands_is_the_fill(storage: Any, sizes: list[int], rows: int, band: int, data: Any) -> None:
    """:func:`~visa.engines.fast_masked.fill_views` assigned a band of rows at a time (``fetch.masked-read``'s
    loop) writes the same bytes as :func:`~visa.engines.fast_masked.fill` of the whole buffer, by words or by
    elements (whichever ``fetch.masked-fill-words`` says)."""
    from visa.engines.fast_masked import fill, fill_views

    cut, base, pad = _random_cut(storage, sizes, rows, data)
    banded, whole = base.view(storage).copy(), base.view(storage).copy()
    views = fill_views(banded, rows, cut, pad)
    for r in range(0, rows, band):
        for view, value in views:
            view[r:r + band] = value
    fill(whole, rows, cut, pad)
    assert np.array_equal(banded.view(np.uint8), whole.view(np.uint8))
