"""``fetch.padded-known`` (visa/engines/fast_padded.py) against the Fetch Engine's reference read (issue 24;
L1094–1151: the stream's padding is poison): a fetch whose packet is padded (``C % 4 # 8``, ``W # 8``) and whose
padding is not masked — the main context's row-max layout (the masking stage cannot take it) and the sub
context (no masking stage, L1870) — gives the same stream (values and known-mask) and the same cycles with the
path on and off, also when the padding lanes hold bytes written before and when an element read was never
written (then the path is not taken)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, fastpaths, i8, i16, i32
from visa.testing import place_dm

AX = AxisSet(K=2, S=256, C=64, V=4, W=7, X=8)
M = AX.m
#: (context, the DM Element and its axes, the fetch's Time and Packet): the padding is an unmasked cut
LAYOUTS = [("main", "C", "C", "C / 4", "C % 4 # 8"),  # the row max of bench_first_launch at 64 columns
           ("sub", "V, W # 8", "V W", "V", "W # 8"),
           ("sub", "V, W", "V W", "V", "W # 8")]  # (no padding in DM: the last lane reads the next row)


def _fetch(dtype: Any, layout: tuple[str, str, str, str, str], x: np.ndarray, garbage: bool,
           hole: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The stream's values and known-mask (read whole) and the schedule's cycles, in a fresh context."""
    context, element, axes, time, packet = layout
    ctx = Context(RNGD)
    if garbage:  # the bytes under the padding lanes written before (the largest value everywhere)
        junk = np.full((2, 256, 64), dtype.max, dtype=dtype.storage)
        place_dm(ctx, junk, dtype, M["1"], M["K"], M["S"], M["C"], 0, axes="K S C")
    t = place_dm(ctx, x, dtype, M["1"], M["K"], M["S"], M[element], 0, axes=f"K S {axes}")
    if hole:  # one byte of a valid element in slice 3 never written: poison there, the path not taken
        enabled = np.zeros((2, 256, 1), dtype=bool)
        enabled[0, 3] = True
        ctx.memory.chip(0).dm.unwrite(np.array([dtype.size_bits // 8 * 2]), enabled)
    s = getattr(ctx, context).begin(t.view()).fetch(dtype, M[time], M[packet])
    values, known = np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()
    return values, known, tuple(op.cycles for op in ctx.schedule.ops)


def _data(dtype: Any, layout: tuple[str, ...], seed: int) -> np.ndarray:
    shape = (2, 256, 64) if layout[2] == "C" else (2, 256, 4, 7)
    return np.random.default_rng(seed).integers(dtype.min, dtype.max, size=shape, endpoint=True).astype(dtype.storage)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([i8, i16, i32]), st.sampled_from(LAYOUTS), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_padded_known_is_the_reference(dtype: Any, layout: tuple[str, str, str, str, str], garbage: bool,
                                       hole: bool, seed: int) -> None:
    x = _data(dtype, layout, seed)
    runs = []
    for off in (None, ("fetch.padded-known",), ()):  # on; this path off; every path off
        with fastpaths.disabled(*off) if off is not None else contextlib.nullcontext():
            runs.append(_fetch(dtype, layout, x, garbage, hole))
    fast = runs[0]
    for other in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(fast, other, strict=True))
    assert not fast[1][..., 4:].any() and not fast[0][..., 4:].any() if layout[2] == "C" else True


@pytest.mark.parametrize("layout", LAYOUTS)
def test_padded_stream_carries_its_validity_as_a_broadcast(layout: tuple[str, str, str, str, str]) -> None:
    """The path's own structure: the known-mask is the validity broadcast over the slices (no bool per
    position and slice), the padding reads 0 and the rest is the tensor."""
    needs("fetch.padded-known", "fetch.all-known")
    x = _data(i32, layout, 7)
    context, element, axes, time, packet = layout
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i32, M["1"], M["K"], M["S"], M[element], 0, axes=f"K S {axes}")
    s = getattr(ctx, context).begin(t.view()).fetch(i32, M[time], M[packet])
    known = s.data.known
    assert known.strides[:3] == (0, 0, 0)
    values = np.asarray(s.data.values)[0]
    lanes = 4 if layout[2] == "C" else 7
    assert np.array_equal(values[..., :lanes].reshape(x.shape), x) and not values[..., lanes:].any()
    assert np.asarray(known)[0, ..., :lanes].all() and not np.asarray(known)[0, ..., lanes:].any()


BIG = AxisSet(K=2, S=256, C=512).m  # a stream of 2 MiB: read into a pooled buffer (visa.memory.rowpool)


def _big_fetch(x: np.ndarray, garbage: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The row max's fetch of ``x`` (``(K, S, C)`` i32) in a fresh context: values, known-mask and cycles."""
    ctx = Context(RNGD)
    if garbage:  # the bytes under the padding lanes' over-reads written before (the largest value everywhere)
        junk = np.full((2, 256, 1024), i32.max, dtype=np.int32)
        place_dm(ctx, junk, i32, BIG["1"], BIG["K"], BIG["S"], AxisSet(K=2, S=256, C=1024).m["C"], 0,
                 axes="K S C")
    t = place_dm(ctx, x, i32, BIG["1"], BIG["K"], BIG["S"], BIG["C"], 0, axes="K S C")
    s = ctx.main.begin(t.view()).fetch(i32, BIG["C / 4"], BIG["C % 4 # 8"])
    values, known = np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()
    return values, known, tuple(op.cycles for op in ctx.schedule.ops)


@pytest.mark.parametrize("garbage", [False, True])
@pytest.mark.parametrize("reused", [False, True])
def test_padded_cut_read_is_the_reference(garbage: bool, reused: bool) -> None:
    """``fetch.padded-cut-read``: the padded fetch read into a new pooled buffer (its padding lanes zeros, not
    read) gives the reference's stream and cycles; so does one into a buffer handed out again (``reused``: a
    stream of the same shape died before, its padding lanes hold what it read: the path is not taken)."""
    from visa.memory.rowpool import ROW_POOL

    rng = np.random.default_rng(11)
    x = rng.integers(i32.min, i32.max, size=(2, 256, 512), endpoint=True).astype(np.int32)
    runs = []
    for off in (None, ("fetch.padded-cut-read",), ("fetch.padded-known",), ()):
        with fastpaths.disabled(*off) if off is not None else contextlib.nullcontext():
            ROW_POOL.clear()
            if reused:  # a stream of the same shape read (over bytes that are not zero) and dropped
                _big_fetch(np.full_like(x, -1), True)
            runs.append(_big_fetch(x, garbage))
    fast = runs[0]
    for other in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(fast, other, strict=True))
    assert not fast[0][..., 4:].any() and not fast[1][..., 4:].any()
    assert np.array_equal(fast[0][0].reshape(2, 256, 128, 8)[..., :4].reshape(x.shape), x)
