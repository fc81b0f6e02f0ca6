"""``fetch.zero-point-read`` (visa/engines/fast_zero_point_read.py) against the Fetch Adapter's reference zero-point
subtraction (issue 24; L2022–2049): i8, i16 and i32 fetched with one zero point into their own type, the values
drawn near the type's ends so that some differences leave the range — the same stream (values and known-mask) and
cycles with the path on, off, and every path off, and the same refusal (class and message) where one leaves it."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, fastpaths, i8, i16, i32
from visa.engines.common import StreamData
from visa.errors import DtypeError
from visa.testing import place_dm

M = AxisSet(C=2, S=256, E=64).m


def _fetch(dtype: Any, x: np.ndarray, z: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    ctx = Context(RNGD)
    per = 32 // (dtype.size_bits // 8)
    a = place_dm(ctx, x, dtype, M["1"], M["C"], M["S"], M["E"], 64, axes="C S E")
    s = ctx.main.begin(a.view()).fetch_with_zero_point(dtype, M[f"E / {per}"], M[f"E % {per}"], z)
    return (np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy(),
            tuple(op.cycles for op in ctx.schedule.ops))


def _run(dtype: Any, x: np.ndarray, z: int, *off: str) -> Any:
    """The fetch's result with the named paths off (every one with ``off == ("*",)``), or its refusal's text."""
    with fastpaths.disabled() if off == ("*",) else fastpaths.disabled(*off) if off else nullcontext():
        try:
            return _fetch(dtype, x, z)
        except DtypeError as err:
            return str(err)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([i8, i16, i32]), st.integers(-3, 3), st.integers(0, 3), st.sampled_from([0, 1, 2]),
       st.integers(0, 2**32 - 1))
def test_subtraction_on_the_read_is_the_reference(dtype: Any, z_small: int, margin: int, end: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lo, hi = int(dtype.min), int(dtype.max)
    z = z_small * (hi // 4)  # (zero points near 0 and near the ends of the type)
    x = rng.integers(lo // 2, hi // 2, size=(2, 256, 64), endpoint=True).astype(dtype.storage)
    if end == 1:  # values at the edge the zero point pushes out of range (exactly at it, or past it)
        edge = lo + max(z, 0) - margin + 1 if z > 0 else hi + min(z, 0) + margin - 1
        x[1, 7, 3] = min(max(edge, lo), hi)  # (a value the type holds: with z = 0 nothing is past the edge)
    elif end == 2:
        x[0, 0, 0], x[1, 255, 63] = lo, hi
    fast = _run(dtype, x, z)
    reference = _run(dtype, x, z, "fetch.zero-point-read")
    every_off = _run(dtype, x, z, "*")
    if isinstance(reference, str):
        assert fast == reference == every_off
        return
    for got, want, off in zip(fast, reference, every_off, strict=True):
        got, want, off = np.asarray(got), np.asarray(want), np.asarray(off)
        assert got.dtype == want.dtype and np.array_equal(got, want) and np.array_equal(got, off)


def test_an_out_of_range_difference_is_refused() -> None:
    """-128 − 1 leaves i8: the path leaves it to the reference, which names the value."""
    x = np.zeros((2, 256, 64), np.int8)
    x[1, 3, 5] = -128
    with pytest.raises(DtypeError, match="-129"):
        _fetch(i8, x, 1)
    x[1, 3, 5] = 127
    with pytest.raises(DtypeError, match="128"):
        _fetch(i8, x, -1)


def test_the_path_subtracts_as_it_reads() -> None:
    """Its own structure: a plain all-known stream (no lazy structure), every difference exact at the ends."""
    needs("fetch.zero-point-read")
    ctx = Context(RNGD)
    x = np.tile(np.array([-125, 127, 0, -1], np.int8), (2, 256, 16))
    a = place_dm(ctx, x, i8, M["1"], M["C"], M["S"], M["E"], 0, axes="C S E")
    s = ctx.main.begin(a.view()).fetch_with_zero_point(i8, M["E / 32"], M["E % 32"], 3)
    assert type(s.data) is StreamData and bool(np.asarray(s.data.known).all())
    assert np.array_equal(np.asarray(s.data.values).reshape(2, 256, 64), (x.astype(np.int16) - 3).astype(np.int8))
