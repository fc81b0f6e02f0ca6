"""``dma.overwritten-copies`` (visa.memory.fast_overwritten, issue 24): a DMA writing whole rows of units drops the
pending copies wholly inside them instead of making them first; every read afterwards, and the memory handed to
the next image, are those of the same program with the path off."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from tests.memory.test_pending import _OPS, SHAPE, UNIT, UNITS, _run
from visa import RNGD, fastpaths
from visa.errors import AddressError
from visa.memory.images import DenseImage
from visa.memory.transfer import DmEndpoint, HostBuffer, copy

_OVERWRITE = st.tuples(st.just("broadcast"), st.integers(2, 6), st.sampled_from([1, 2]), st.integers(0, 4),
                       st.sampled_from([0, 64, 512]), st.sampled_from([256, 1000, 2048]), st.integers(0, 99))


@settings(max_examples=40, deadline=None)
@given(program=st.lists(st.one_of(_OPS, _OVERWRITE), min_size=2, max_size=8), whole=st.booleans())
def test_programs_read_the_same_with_overwritten_copies_dropped(program: list[tuple[Any, ...]],
                                                               whole: bool) -> None:
    """Broadcasts (their copies pending) overwritten by later broadcasts and DM-to-DM moves, among reads, writes
    and poison: every read equals the same program's with ``dma.overwritten-copies`` off."""
    with pytest.MonkeyPatch.context() as mp:
        dropped = _run(program, True, mp, whole)
        with fastpaths.disabled("dma.overwritten-copies"):
            made = _run(program, True, mp, whole)
    gc.collect()
    assert len(dropped) == len(made)
    for a, b in zip(dropped, made, strict=True):
        if isinstance(a, tuple):
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        else:
            assert np.array_equal(a, b)


@skip_unless("dma.pending-copies", "dma.overwritten-copies")
@pytest.mark.parametrize("on", [True, False])
def test_a_broadcast_over_a_broadcast_never_makes_the_first_ones_copies(on: bool) -> None:
    """Two 64 KiB broadcasts over the same 16 slices (the peer matmul's rhs tile, K tile after K tile): with the
    path on, the first one's 15 copies are never made (the slices' own bytes stay as they were), with it off they
    are made and overwritten; either way the slices read the second source."""
    img = DenseImage(SHAPE)
    dm = DmEndpoint(RNGD, lambda chip: img)
    rng = np.random.default_rng(5)
    first, second = (rng.integers(0, 256, size=1 << 16, dtype=np.uint8) for _ in range(2))
    with fastpaths.disabled("memory.pending-pieces", *(() if on else ("dma.overwritten-copies",))):
        copy([(16, 0, UNIT), (1 << 16, 1, 1)], (0, 0), HostBuffer(first), dm)
        left = img._bytes[0, 1:16, : 1 << 16].copy()  # (what the memory held: an arena's image may leave bytes)
        copy([(16, 0, UNIT), (1 << 16, 1, 1)], (0, 0), HostBuffer(second), dm)
        made = img._bytes[0, 1:16, : 1 << 16].copy()
        data = img.read_data()
    assert np.array_equal(data[0, :16, : 1 << 16], np.broadcast_to(second, (16, 1 << 16)))
    assert not data[0, 16:, : 1 << 16].any() and not data.reshape(UNITS, -1)[:, 1 << 16:].any()
    # on: the first broadcast's copies dropped, never made (the second's pending); off: made, then overwritten
    assert np.array_equal(made, left if on else np.broadcast_to(first, made.shape))
    assert not np.array_equal(left, made) or on


@pytest.mark.parametrize("on", [True, False])
def test_a_refused_dma_drops_no_copy(on: bool) -> None:
    """A DMA whose destination runs past the chip's DM is refused before it changes anything: the pending copies
    it would have overwritten stay owed (the last four units still read the broadcast, all written), with the path
    on or off (a review found the copies dropped before the refusal)."""
    img = DenseImage(SHAPE)
    dm = DmEndpoint(RNGD, lambda chip: img)
    seven, nine = np.full(1 << 16, 7, np.uint8), np.full(1 << 16, 9, np.uint8)
    with fastpaths.disabled("memory.pending-pieces", *(() if on else ("dma.overwritten-copies",))):
        copy([(4, 0, UNIT), (1 << 16, 1, 1)], (0, (UNITS - 4) * UNIT), HostBuffer(seven), dm)
        # (a broadcast: one unit written, three owed as pending copies when dma.pending-copies is on)
        assert bool(img._pending.copies) == fastpaths.get("dma.pending-copies").on
        with pytest.raises(AddressError, match="outside the memory that exists"):
            copy([(8, 0, UNIT), (1 << 16, 1, 1)], (0, (UNITS - 4) * UNIT), HostBuffer(nine), dm)
        data, written = img.read_data().reshape(UNITS, -1), img.read_view()[1].reshape(UNITS, -1)
        assert (data[UNITS - 4:, :1 << 16] == 7).all() and written[UNITS - 4:, :1 << 16].all()
