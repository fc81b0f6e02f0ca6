"""The fast path ``vector.inter-known-rows`` (visa/engines/vector/fast_inter.py, ``members_known``): whether every
member of an inter-slice reduce's group is known, read off one flag per stream row when the known-mask is a
broadcast along its rows (a fetch's mask of the slices holding data), not from a flat copy of the mask.

``members_known`` against its reference (the flat copy) on random masks and member digits (steps of whole rows,
digits within a row, both, negative strides, several ring digits, and digits that cross rows: the reference's
case); and the ring sums of ``tests/engines/test_fast_shared_gather.py`` (data in cluster 0 only: the other
cluster's slices poison) and the first-launch benchmark's leave the result, the DM bytes and their written-state
and the schedule of the reference with the path alone on and with every path but it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.test_fast_shared_gather import _program
from tests.engines.vector.test_fast_inter_shared_strided import _ring_sum
from visa import fastpaths
from visa.engines.vector.fast_inter import members_known

NAME = "vector.inter-known-rows"


@st.composite
def _cases(draw: Any) -> tuple[np.ndarray, Any]:
    rows = draw(st.integers(1, 12))
    trail = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    row = int(np.prod(trail))
    flags = np.array(draw(st.lists(st.booleans(), min_size=rows, max_size=rows)))
    known = np.broadcast_to(flags.reshape(rows, *([1] * len(trail))), (rows, *trail))
    n = rows * row
    digits = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(-3, 3), st.booleans()), min_size=1,
                           max_size=4))
    sizes, strides = [], []
    for size, k, by_row in digits:
        sizes.append(size)
        strides.append(k * row if by_row else k)  # whole rows, or a step within (or across) rows
    lo = sum(min(0, (s - 1) * d) for s, d in zip(sizes, strides, strict=True))
    hi = sum(max(0, (s - 1) * d) for s, d in zip(sizes, strides, strict=True))
    if hi - lo >= n:  # (no base keeps every member inside the mask)
        sizes, strides, lo, hi = [1], [1], 0, 0
    base = draw(st.integers(-lo, n - 1 - hi))
    ring = draw(st.integers(1, len(sizes)))
    return np.asarray(known), SimpleNamespace(in_sizes=tuple(sizes), in_strides=tuple(strides), in_base=base,
                                              ring_axes=ring)


@settings(max_examples=400, deadline=None)
@given(case=_cases())
def test_members_known_is_the_flat_copys(case: tuple[np.ndarray, Any]) -> None:
    known, v = case
    with fastpaths.only(NAME):
        fast = members_known(known, v)
    with fastpaths.disabled(NAME):
        ref = members_known(known, v)
    assert fast.shape == ref.shape and fast.flags.c_contiguous
    assert np.array_equal(fast, ref)


def _same(alone: tuple[Any, ...], without: tuple[Any, ...]) -> None:
    for got, want in zip(alone, without, strict=True):
        if isinstance(got, np.ndarray):
            assert np.array_equal(got, want)
        else:
            assert got == want


@pytest.mark.parametrize("rows", [2, 4, 8])
@pytest.mark.parametrize("op", ["AddSat", "Max"])
@pytest.mark.parametrize("dirty", [False, True])
def test_ring_sums_are_the_reference(rows: int, op: str, dirty: bool) -> None:
    alone = _program(rows, op, dirty)  # (every path on: the ring's known-mask is the fetch's per-slice one)
    with fastpaths.disabled(NAME):
        without = _program(rows, op, dirty)
    _same(alone, without)


@pytest.mark.parametrize("n", [1 << 13, 1 << 15])
def test_first_launch_ring_sum_is_the_reference(n: int) -> None:
    alone = _ring_sum(n)
    with fastpaths.disabled(NAME):
        without = _ring_sum(n)
    _same(alone, without)
