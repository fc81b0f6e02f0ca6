"""``fetch.masked-read`` (visa/engines/fast_masked_read.py) against ``fetch.masked-known``'s copy-then-fill and the
Fetch Engine's reference read and masking stage (issue 24; L1877–1935, the pad value L1898): fetches of DM tensors
with a padded lane (``W # 8``, ``# 1 + W``) over every slice of a chip, more slices than one band, in 1-, 2- and
4-byte integer and float types, each pad value, the padding never written or holding other bytes, fetched twice
(the pooled buffer handed out again holds the first fetch's bytes) — the same stream (values and known-mask) and
cycles with the path on, off, and every path off."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, PadValue, bf16, f32, fastpaths, i8, i16, i32
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, V=64, W=7, X=8)
M = AX.m
#: (the DM Element, the fetch's Packet: the padded lane masked)
LAYOUTS = [("V, W # 8", "W # 8"), ("V, # 1 + W", "# 1 + W")]
PADS = [PadValue.Zero, PadValue.Min, PadValue.Max, PadValue.Custom(3)]


def _data(dtype: Any, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is f32:
        return rng.standard_normal((2, 256, 64, 7)).astype(np.float32)
    if dtype is bf16:
        return rng.standard_normal((2, 256, 64, 7)).astype(ml_dtypes.bfloat16)
    return rng.integers(dtype.min, dtype.max, size=(2, 256, 64, 7), endpoint=True).astype(dtype.storage)


def _fetch(dtype: Any, layout: tuple[str, str], pad: PadValue, x: np.ndarray,
           garbage: bool) -> list[tuple[np.ndarray, np.ndarray, tuple[int, ...]]]:
    """Two fetches' values and known-masks (read whole, copied) and the schedule's cycles, in a fresh context."""
    element, packet = layout
    ctx = Context(RNGD)
    if garbage:  # the padding lanes hold bytes written before (8 elements a row over the same bytes)
        junk = np.ones((2, 256, 64, 8), dtype=x.dtype)
        place_dm(ctx, junk, dtype, M["1"], M["C"], M["S"], M["V, X"], 0, axes="C S V X")
    t = place_dm(ctx, x, dtype, M["1"], M["C"], M["S"], M[element], 0, axes="C S V W")
    out = []
    for _ in range(2):
        s = ctx.main.begin(t.view()).fetch(dtype, M["V"], M[packet], pad_value=pad)
        out.append((np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy(),
                    tuple(op.cycles for op in ctx.schedule.ops)))
    return out


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([i8, i16, i32, f32, bf16]), st.sampled_from(LAYOUTS), st.sampled_from(PADS),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_banded_copy_and_fill_is_the_reference(dtype: Any, layout: tuple[str, str], pad: PadValue, garbage: bool,
                                               seed: int) -> None:
    if dtype in (f32, bf16) and pad == PadValue.Custom(3):
        pad = PadValue.Custom(3.0)
    x = _data(dtype, seed)
    fast = _fetch(dtype, layout, pad, x, garbage)
    with fastpaths.disabled("fetch.masked-read"):
        copy_then_fill = _fetch(dtype, layout, pad, x, garbage)
    with fastpaths.disabled():
        every_off = _fetch(dtype, layout, pad, x, garbage)
    for runs in zip(fast, copy_then_fill, every_off, strict=True):
        for got, want, off in zip(*runs, strict=True):
            a, b, c = (np.ascontiguousarray(v) for v in (got, want, off))
            assert a.shape == b.shape == c.shape
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)) and np.array_equal(a.view(np.uint8),
                                                                                         c.view(np.uint8))
    assert fast[0][1].all()  # every position known: the masked ones hold the pad value


def test_the_padded_lane_holds_the_pad_value_in_every_slice() -> None:
    """The path's own result on a stream of 512 slices (16 bands): the elements read, the pad value in the lane."""
    needs("fetch.masked-read", "fetch.masked-known", "fetch.all-known")
    x = np.arange(2 * 256 * 64 * 7, dtype=np.int32).reshape(2, 256, 64, 7)
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i32, M["1"], M["C"], M["S"], M["V, W # 8"], 0, axes="C S V W")
    s = ctx.main.begin(t.view()).fetch(i32, M["V"], M["W # 8"], pad_value=PadValue.Custom(-5))
    values = np.asarray(s.data.values)[0]
    assert np.array_equal(values[..., :7], x) and (values[..., 7] == -5).all()
    assert s.data.known.strides == (0,) * s.data.known.ndim
