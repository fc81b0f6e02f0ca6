"""``memory.pending-pieces`` (visa.memory.fast_pending, issue 24): a loop-nest read reaching several pending copies
of the same units from the same sources reads through them, and reads the same as with the path off (the copies
made first)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import fastpaths
from visa.dtypes import i8
from visa.memory.images import DenseImage, load_nest
from visa.memory.units import enabled_units

SHAPE = (2, 4, 256)
UNITS = SHAPE[0] * SHAPE[1]


def _image(seed: int, n_src: int, ranges: list[tuple[int, int]], same: bool) -> DenseImage:
    """Units ``[0, n_src)`` written with random bytes over each range, the others pending copies of them (unit
    ``u`` of unit ``u % n_src``; with ``same`` False the last range's copies come from other sources)."""
    rng = np.random.default_rng(seed)
    img = DenseImage(SHAPE, page_bytes=32)
    rows = img.flat_data(0, SHAPE[2]).reshape(UNITS, -1)
    dst = np.arange(n_src, UNITS, dtype=np.int64)
    for k, (lo, hi) in enumerate(ranges):
        rows[:n_src, lo:hi] = rng.integers(0, 256, size=(n_src, hi - lo), dtype=np.uint8)
        img.mark_written(slice(0, n_src), lo, hi)
        src = dst % n_src if same or k < len(ranges) - 1 else (dst + 1) % n_src
        img._write_copies(dst, src, lo, hi)
    return img


@skip_unless("memory.pending-pieces")
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_src=st.sampled_from([1, 2, 4]), size=st.integers(1, 40),
       gap=st.integers(0, 60), same=st.booleans(), mask=st.integers(1, 2**UNITS - 1))
def test_interleaved_read_through_copies_equals_copies_made(seed: int, n_src: int, size: int, gap: int,
                                                            same: bool, mask: int) -> None:
    """Two tensors far apart, each a pending copy of the same units: an interleaved read of both (a loop of two
    steps over them) reads the same bytes and known-mask with the path on as off, and, on, leaves the copies
    pending when they map the units alike."""
    a0 = 8
    b0 = a0 + size + gap
    ranges = [(a0, a0 + size), (b0, b0 + size)]
    enabled = np.array([(mask >> u) & 1 for u in range(UNITS)], dtype=bool).reshape(SHAPE[:2])
    nest = [(2, b0 - a0), (size, 1)]
    got = {}
    for on in (True, False):
        img = _image(seed, n_src, ranges, same)
        with fastpaths.disabled() if not on else fastpaths.only("memory.pending-pieces", "memory.nest-words"):
            out = load_nest(i8, enabled_units(img, enabled), 8 * a0, nest)
        assert out is not None
        got[on] = (out[0].copy(), out[1].copy())
        if on and same and gap > 0:
            assert len(img._pending.copies) == 2  # read through, not made
    assert np.array_equal(got[True][0], got[False][0]) and np.array_equal(got[True][1], got[False][1])
