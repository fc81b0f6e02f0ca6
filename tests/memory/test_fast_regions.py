"""``memory.region-slack`` (visa/memory/fast_regions.py) against exact regions (issue 24): a sparse HBM image
that grows its regions with slack holds the same bytes, the same written-state and reports the same regions as
one allocating exactly the bytes asked, for random sequences of windows, scatters and poisonings; and a band of
rows written a few columns at a time (an output written tile by tile) is not copied for every tile."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import fastpaths
from visa.memory.images import PagedImage

SIZE = 1 << 14

_op = st.tuples(st.sampled_from(["window", "scatter", "poison", "read"]), st.integers(0, SIZE - 1),
                st.integers(1, 600), st.integers(0, 255))


def _replay(ops: list[tuple[str, int, int, int]]) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    img = PagedImage(SIZE, page_bytes=64)
    for kind, lo, n, v in ops:
        hi = min(lo + n, SIZE)
        if kind == "window":
            data, written = img.window(lo, hi)
            data[::2] = v
            written[::2] = True
        elif kind == "scatter":
            img.scatter(np.arange(lo, hi, 3, dtype=np.int64), np.full((hi - lo + 2) // 3, v, np.uint8))
        elif kind == "poison":
            img.poison(lo, hi)
        else:
            img.span(lo, hi, write=False)
    vals, known = img.gather(np.arange(SIZE, dtype=np.int64))
    if not fastpaths.get("memory.region-slack").on:  # the reference's regions are its allocations
        assert img.regions() == [(s, s + d.size) for s, d in zip(img._starts, img._data, strict=True)]  # noqa: SLF001
    return vals, known, img.regions()


@settings(max_examples=80, deadline=None)
@given(st.lists(_op, min_size=1, max_size=12))
def test_slack_regions_hold_what_exact_regions_hold(ops: list[tuple[str, int, int, int]]) -> None:
    fast = _replay(ops)
    with fastpaths.disabled("memory.region-slack"):
        ref = _replay(ops)
    assert np.array_equal(fast[0], ref[0]) and np.array_equal(fast[1], ref[1])
    assert fast[2] == ref[2]


@skip_unless("memory.region-slack")
def test_a_band_written_tile_by_tile_is_copied_a_few_times() -> None:
    img = PagedImage(1 << 30)
    row, rows, cols = 1 << 14, 256, 64
    grown = 0
    for t in range(64):  # tile t: every row's columns [64 t, 64 t + 64)
        lo, hi = t * cols, (rows - 1) * row + (t + 1) * cols
        before = img._data[:]  # noqa: SLF001 (the allocation the reference would replace)
        data, written = img.window(lo, hi)
        grown += not any(d is img._data[0] for d in before)  # noqa: SLF001
        band = data[:rows * row - row + cols].reshape(-1)
        band[np.arange(rows)[:, None] * row + np.arange(cols)[None, :]] = t
        written[...] = True
    assert img.regions() == [(0, (rows - 1) * row + 64 * cols)]
    assert grown <= 3


def _replay_reserved(ops: list[tuple[str, int, int, int]], reserved: list[tuple[int, int]]) -> tuple[Any, ...]:
    img = PagedImage(1 << 24, page_bytes=4096)
    for lo, hi in reserved:
        img.reserve(lo, hi)
    scale = (1 << 24) // SIZE  # (the ops' offsets spread over the image: reservations from 4 MiB up)
    for kind, lo, n, v in ops:
        lo, hi = lo * scale, min(lo * scale + n * 97, 1 << 24)
        if kind == "window":
            data, written = img.window(lo, hi)
            data[::2] = v
            written[::2] = True
        elif kind == "scatter":
            img.scatter(np.arange(lo, hi, 3, dtype=np.int64), np.full((hi - lo + 2) // 3, v, np.uint8))
        elif kind == "poison":
            img.poison(lo, hi)
        else:
            img.span(lo, hi, write=False)
    probe = np.unique(np.concatenate([np.arange(0, 1 << 24, 4093), *(np.arange(lo * scale, min(lo * scale + n * 97,
                                                                                                1 << 24))
                                                                      for _, lo, n, _ in ops)])).astype(np.int64)
    vals, known = img.gather(probe)
    return vals, known, img.regions()


@settings(max_examples=40, deadline=None)
@given(st.lists(_op, min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3)), min_size=1, max_size=3))
def test_reserved_regions_hold_what_exact_regions_hold(ops: list[tuple[str, int, int, int]],
                                                       tensors: list[tuple[int, int]]) -> None:
    """``memory.region-reserve``: tensors' bytes noted (4 MiB and up) change no byte, written-state or region
    reported, against the path off (and ``memory.region-slack`` off too)."""
    reserved = [(a << 22, (a + b) << 22) for a, b in tensors]
    fast = _replay_reserved(ops, reserved)
    with fastpaths.disabled("memory.region-reserve"), fastpaths.disabled("memory.region-slack"):
        ref = _replay_reserved(ops, reserved)
    assert np.array_equal(fast[0], ref[0]) and np.array_equal(fast[1], ref[1])
    assert fast[2] == ref[2]


@skip_unless("memory.region-reserve")
def test_a_reserved_output_written_tile_by_tile_is_one_region() -> None:
    """Issue 24 (the peer matmul's output): a tensor's bytes noted, its band of rows written a few columns at a
    time is one region from the first tile on, never copied."""
    img = PagedImage(1 << 30)
    row, rows, cols = 1 << 14, 256, 64
    img.reserve(0, rows * row)
    first = None
    for t in range(64):
        data, written = img.window(t * cols, (rows - 1) * row + (t + 1) * cols)
        first = img._data[0] if first is None else first  # noqa: SLF001
        assert img._data[0] is first and len(img._data) == 1  # noqa: SLF001
        written[...] = True
    assert img.regions() == [(0, (rows - 1) * row + 64 * cols)]


@skip_unless("memory.region-reserve")
def test_an_hbm_tensor_notes_its_bytes_allocated_or_named() -> None:
    """Issue 24: an HBM tensor's bytes (4 MiB and up) are noted whether it is allocated or named by ``from_addr``
    (the peer matmul's output); a smaller one's are not."""
    from visa import AxisSet, Context, HbmTensor, i8

    m = AxisSet(A=4096, C=4096, B=64).m
    ctx = Context.acquire()
    HbmTensor.from_addr(ctx, i8, m["1"], m["A, C"], 1 << 26)
    HbmTensor.from_addr(ctx, i8, m["1"], m["B, C"], 1 << 28)
    assert ctx.memory.chip(0).hbm._reserved == [(1 << 26, (1 << 26) + (1 << 24))]  # noqa: SLF001
