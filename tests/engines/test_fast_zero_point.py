"""``fetch.zero-point-narrow`` (visa/engines/fast_zero_point.py) against the Fetch Adapter's reference zero-point
subtraction (issue 24; L2022–2049): the same stream (values and known-mask) with the path on and off — one zero
point and an interleaved pair with one each, i8 into i8, i16 and i32, values near the target's ends — the same
refusal when a difference leaves the range, and the reference's answer for a stream with poison."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, Context, fastpaths, i8, i16, i32
from visa.errors import DtypeError
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, E=64, I=2)
M = AX.m


def _fetch(x: np.ndarray, dst: Any, zps: tuple[int, ...], hole: bool) -> tuple[np.ndarray, np.ndarray]:
    ctx = Context(RNGD)
    a = place_dm(ctx, x[0], i8, M["1"], M["C"], M["S"], M["E"], 0, axes="C S E")
    if hole:  # one byte never written: the stream has poison
        ctx.memory.chip(0).dm.unwrite(np.array([5]), np.arange(2 * 256).reshape(2, 256, 1) == 7)
    if len(zps) == 1:
        s = ctx.main.begin(a.view()).fetch_with_zero_point(dst, M["E / 32"], M["E % 32"], zps[0])
    else:
        b = place_dm(ctx, x[1], i8, M["1"], M["C"], M["S"], M["E"], 1 << 12, axes="C S E")
        s = (ctx.main.begin_interleaved(M["I"], a.view(), b.view())
             .fetch_with_zero_points(dst, M["I, E / 32"], M["E % 32"], (zps[0], zps[1])))
    return np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([i8, i16, i32]), st.integers(1, 2), st.integers(-128, 127), st.integers(-128, 127),
       st.integers(0, 2**32 - 1), st.booleans())
def test_narrow_subtraction_is_the_reference(dst: Any, count: int, z0: int, z1: int, seed: int, hole: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(2, 2, 256, 64)).astype(np.int8)
    zps = (z0, z1)[:count]
    try:
        with fastpaths.disabled("fetch.zero-point-narrow"):
            reference = _fetch(x, dst, zps, hole)
    except DtypeError as e:
        with pytest.raises(DtypeError) as err:
            _fetch(x, dst, zps, hole)
        assert str(err.value) == str(e)
        return
    fast = _fetch(x, dst, zps, hole)
    for got, want in zip(fast, reference, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_differences_in_range_are_narrowed_and_exact() -> None:
    """-128 … 127 minus 0 stays an i8; the path takes it (no int64 pass) and every difference is exact."""
    if not fastpaths.get("fetch.zero-point-narrow").on:
        pytest.skip("switched off by VISA_FASTPATHS")
    from visa.engines import fast_zero_point

    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    got = fast_zero_point.subtract(x, np.broadcast_to(np.True_, x.shape), i8, (0,), None, 256)
    assert got is not None and got.dtype == np.int8 and np.array_equal(got, x)
    assert fast_zero_point.subtract(x, np.broadcast_to(np.True_, x.shape), i8, (1,), None, 256) is None  # -129


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([np.int8, np.int16]), st.sampled_from([i8, i16, i32]), st.integers(-128, 127),
       st.integers(-128, 127), st.booleans(), st.integers(0, 2**32 - 1))
def test_extremes_the_type_bounds_are_not_needed(src: Any, dst: Any, z0: int, z1: int, per_step: bool,
                                                 seed: int) -> None:
    """The path reads only the extremes its values' type does not bound (i8 values into i8 with zero points
    of one sign), writes over a writable buffer of the target's type, and answers as the int64 reference: the
    same differences when every one is in range, None (the reference decides) otherwise."""
    from visa.engines import fast_zero_point

    rng = np.random.default_rng(seed)
    info = np.iinfo(src)
    x = rng.integers(max(info.min, -300), min(info.max, 300), size=(3, 4 * 8), endpoint=True).astype(src)
    x[0, 0] = rng.integers(info.min, info.max, endpoint=True)  # (an end of the range, sometimes)
    zps = (z0, z1) if per_step else (z0,)
    steps = np.array([z0, z1, z1, z0], dtype=np.int64) if per_step else None
    z = np.repeat(steps, 8) if steps is not None else np.int64(z0)
    want = x.astype(np.int64) - z
    writable = x.copy()
    with fastpaths.only("fetch.zero-point-narrow"):
        got = fast_zero_point.subtract(writable, np.broadcast_to(np.True_, x.shape), dst, zps, steps, 8)
    if got is None:  # some value of x is outside dst's range, or the extremes allow a difference outside
        assert (not fastpaths.get("fetch.zero-point-narrow").on or x.min() < dst.min or x.max() > dst.max
                or int(x.min()) - max(zps) < dst.min or int(x.max()) - min(zps) > dst.max)
        return
    assert want.min() >= dst.min and want.max() <= dst.max
    assert got.dtype == np.dtype(dst.storage) and np.array_equal(got.astype(np.int64), want)
    assert (got is writable) == (np.dtype(src) == np.dtype(dst.storage))  # in place when the types agree
