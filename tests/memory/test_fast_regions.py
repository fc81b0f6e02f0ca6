"""``memory.region-slack`` (visa/memory/fast_regions.py) against exact regions (issue 24): a sparse HBM image
that grows its regions with slack holds the same bytes, the same written-state and reports the same regions as
one allocating exactly the bytes asked, for random sequences of windows, scatters and poisonings; and a band of
rows written a few columns at a time (an output written tile by tile) is not copied for every tile."""

from __future__ import annotations

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
