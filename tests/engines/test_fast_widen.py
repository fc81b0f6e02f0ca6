"""``fetch.widen-read`` (visa/engines/fast_widen.py) against the Fetch Adapter's reference widening cast (issue 24;
L1960–2021): i8 → i9 / i32 and i16 → i32 fetches — one tensor, an interleaved pair (as the reference matmul's
partial sums are added), the values at the types' ends, a byte never written (then poison, and the path not
taken) — give the same stream (values and known-mask) and the same cycles with the path on and off."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, fastpaths, i8, i9, i16, i32
from visa.engines.fast_widen import widened_type
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, E=64, I=2)
M = AX.m
PAIRS = [(i8, i9), (i8, i32), (i16, i32)]  # (the casts RNGD fetches, L1962–1979)


def _fetch(src: Any, dst: Any, x: np.ndarray, pair: bool, hole: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The stream's values and known-mask, and the schedule's cycles, in a fresh context."""
    ctx = Context(RNGD)
    per = 32 // (src.size_bits // 8)
    a = place_dm(ctx, x[0], src, M["1"], M["C"], M["S"], M["E"], 0, axes="C S E")
    if hole:  # one byte never written: the stream has poison
        ctx.memory.chip(0).dm.unwrite(np.array([5]), np.arange(2 * 256).reshape(2, 256, 1) == 7)
    if pair:
        b = place_dm(ctx, x[1], src, M["1"], M["C"], M["S"], M["E"], 1 << 12, axes="C S E")
        s = ctx.main.begin_interleaved(M["I"], a.view(), b.view()).fetch(dst, M[f"E / {per}, I"], M[f"E % {per}"])
    else:
        s = ctx.main.begin(a.view()).fetch(dst, M[f"E / {per}"], M[f"E % {per}"])
    values, known = np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()
    return values, known, tuple(op.cycles for op in ctx.schedule.ops)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(PAIRS), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_widening_read_is_the_reference(types: tuple[Any, Any], pair: bool, hole: bool, seed: int) -> None:
    src, dst = types
    rng = np.random.default_rng(seed)
    x = rng.integers(src.min, src.max, size=(2, 2, 256, 64), endpoint=True).astype(src.storage)
    x[..., 0], x[..., 1] = src.min, src.max  # the ends of the type: sign extension, not zero extension
    fast = _fetch(src, dst, x, pair, hole)
    with fastpaths.disabled("fetch.widen-read"):
        reference = _fetch(src, dst, x, pair, hole)
    with fastpaths.disabled():
        every_off = _fetch(src, dst, x, pair, hole)
    for got, want, off in zip(fast, reference, every_off, strict=True):
        got, want, off = np.asarray(got), np.asarray(want), np.asarray(off)
        assert got.dtype == want.dtype and np.array_equal(got, want) and np.array_equal(got, off)


def test_the_path_reads_into_the_wider_type() -> None:
    """Its own structure: the stream is i32 read whole (known everywhere), -128 and 127 sign-extended."""
    needs("fetch.widen-read", "fetch.all-known")
    x = np.tile(np.array([-128, 127, -1, 0], dtype=np.int8), (2, 2, 256, 16))
    values, known, _ = _fetch(i8, i32, x, False, False)
    assert values.dtype == np.int32 and known.all()
    assert np.array_equal(values[0].reshape(2, 256, 64), x[0].astype(np.int32))


def test_only_a_lone_widening_cast_takes_the_path() -> None:
    """Narrowing, the same width, or another adapter stage leave the fetch to the reference."""
    needs("fetch.widen-read")
    ctx = Context(RNGD)
    t = place_dm(ctx, np.zeros((2, 256, 64), np.int8), i8, M["1"], M["C"], M["S"], M["E"], 0, axes="C S E")
    widen = ctx.main.begin(t.view()).fetch(i32, M["E / 32"], M["E % 32"])
    same = ctx.main.begin(t.view()).fetch(i8, M["E / 32"], M["E % 32"])
    zp = ctx.main.begin(t.view()).fetch_with_zero_point(i32, M["E / 32"], M["E % 32"], 3)
    assert np.asarray(widen.data.values).dtype == np.int32
    assert widened_type(_config(same)) is None and widened_type(_config(zp)) is None
    assert widened_type(_config(widen)) is i32


def _config(stream: Any) -> Any:
    """The FetchConfig the fetch ran (the stage's recorded configuration)."""
    return stream.carried.fetch
