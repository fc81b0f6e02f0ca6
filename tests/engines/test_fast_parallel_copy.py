"""``parallel_copy.strided`` (visa/engines/fast_parallel_copy.py) against ParallelCopy's reference ``execute``
(issue 24): an asymmetric chip or cluster slice (L7400–7441, L7603–7606) leaves the same bytes and the same
written-mask in DM with the path on and off — the Element's outermost digit, whole or an axis's top part, 1-, 2-
and 4-byte elements, sources partly poisoned, and a destination padded to the sub context's 8-byte writes
(L2330)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, Context, fastpaths, i8, i16, i32
from visa.testing import place_dm

#: (Element, sliced digit, its size): the digit is the Element's outermost (ParallelCopy keeps one contiguous block
#: a slice, L7603–7606), whole or the top part of an axis
DIGITS = [("B, C", "B", 2), ("C, B", "C / 4", 2), ("C, B", "C / 2", 4), ("C, B", "C", 8)]


def _slice(level: str, dtype: Any, element: str, digit: str, indices: list[int], x: np.ndarray,
           hole: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The DM bytes and written-mask of every slice after the slice (in a fresh context), and the cycles."""
    n = len(indices)
    ax = AxisSet(U=n, B=2, C=8, S=256)
    m = ax.m
    ctx = Context(RNGD)
    ctx.num_chips = n if level == "chip" else 1
    chip, cluster = (m["U"], m["1 # 2"]) if level == "chip" else (m["1"], m["U"])
    t = place_dm(ctx, x, dtype, chip, cluster, m["S"], m[element], 0, axes="U S B C")
    if hole is not None:  # poison some source bytes (as unwritten memory reads): ``hole`` (clusters, slices, bytes)
        for c in range(ctx.num_chips):
            img = ctx.memory.chip(c).dm
            img.unwrite(np.arange(hole.shape[-1]), hole)
    call = t.asymmetric_chip_slice if level == "chip" else t.asymmetric_cluster_slice
    out = call(m[digit], ctx.sub, indices, 1 << 12)
    lo, hi = 1 << 12, (1 << 12) + 64  # (read without materialising the images' masks: read_data, known_bytes)
    data = np.stack([ctx.memory.chip(c).dm.read_data()[..., lo:hi].copy() for c in range(ctx.num_chips)])
    written = np.stack([ctx.memory.chip(c).dm.known_bytes(lo, hi) for c in range(ctx.num_chips)])
    cycles = tuple(op.cycles for op in ctx.schedule.ops)
    assert out.levels["Element"].size > 0
    return data, written, cycles


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["chip", "cluster"]), st.sampled_from([i8, i16, i32]), st.sampled_from(DIGITS),
       st.integers(0, 2**32 - 1), st.booleans())
def test_strided_copy_is_the_reference(level: str, dtype: Any, digit: tuple[str, str, int], seed: int,
                                       poison: bool) -> None:
    rng = np.random.default_rng(seed)
    n = 2
    element, digit_text, size = digit
    indices = [int(i) for i in rng.integers(0, size, n)]
    lo, hi = (dtype.min, dtype.max)
    x = rng.integers(lo, hi, size=(n, 256, 2, 8), endpoint=True).astype(dtype.storage)
    hole = None
    if poison:
        width = 16 * dtype.size_bits // 8  # the source's bytes in a slice
        hole = np.zeros((2, 256, width), dtype=bool)
        hole[rng.integers(0, 2, 6), rng.integers(0, 256, 6), rng.integers(0, width, 6)] = True
    fast = _slice(level, dtype, element, digit_text, indices, x, hole)
    with fastpaths.disabled("parallel_copy.strided"):
        reference = _slice(level, dtype, element, digit_text, indices, x, hole)
    for got, want in zip(fast, reference, strict=True):
        assert np.array_equal(np.asarray(got), np.asarray(want))
