"""The TRF image's written-state in pages of ``TRF_PAGE_BYTES`` (visa.memory.device, issue 24): a register load of
a few hundred bytes of every row marks whole pages (a state, no byte mask), and the known bytes are the same as in
pages of the default size."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD
from visa.memory.device import TRF_PAGE_BYTES, ChipMemory
from visa.memory.images import DenseImage
from visa.memory.pages import ALL, MIXED, PAGE_BYTES


def test_partial_row_load_keeps_no_mask() -> None:
    """Bytes 0–511 of every TRF row (the reference's ``matmul_16384`` load) mark whole pages only."""
    trf = ChipMemory(RNGD, 0).trf
    assert trf._pages.page == TRF_PAGE_BYTES < PAGE_BYTES
    trf.mark_written(slice(None), 0, 512)
    assert not (trf.state == MIXED).any() and (trf.state[..., :2] == ALL).all()
    assert trf.all_written(0, 512) and not trf.all_written(0, 513)


@settings(max_examples=40, deadline=None)
@given(writes=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 8191), st.integers(1, 3000), st.booleans()),
                       min_size=1, max_size=6))
def test_known_bytes_same_at_any_page(writes: list[tuple[int, int, int, bool]]) -> None:
    """Random ranges written (or poisoned) in some units: the known bytes and range queries of pages of 256 bytes
    equal those of 4 KiB pages."""
    shape = (2, 4, 8192)
    imgs = [DenseImage(shape, page_bytes=p) for p in (TRF_PAGE_BYTES, PAGE_BYTES)]
    for u, lo, size, known in writes:
        hi = min(lo + size, shape[-1])
        for img in imgs:
            img.mark_written(slice(u, u + 1 + u % 3), lo, hi, known)
    a, b = (img.known_bytes(0, shape[-1]) for img in imgs)
    assert np.array_equal(a, b)
    for u, lo, size, _ in writes:
        hi = min(lo + size, shape[-1])
        assert imgs[0].all_written(lo, hi, (u // 4, u % 4)) == imgs[1].all_written(lo, hi, (u // 4, u % 4))
