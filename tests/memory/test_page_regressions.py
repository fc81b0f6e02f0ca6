"""Regressions found by review of the page-kept written-mask and of HBM copies (issue 15): each was a silent
wrong known-mask or value, none an error."""

from __future__ import annotations

import numpy as np

from visa.dtypes import i8, i32
from visa.hw import RNGD
from visa.memory.images import DenseImage, PagedImage, load, store, store_stream
from visa.memory.transfer import HbmEndpoint, HostBuffer, copy
from visa.memory.units import UnitSelection


def test_an_all_poison_write_through_selected_units_poisons_written_pages() -> None:
    """``UnitSelection.unwrite`` over pages already wholly written cleared mask bytes the page state ignored: the
    poison was lost and the old bytes read as known (what the Commit Engine's fallback path writes)."""
    img = DenseImage((2, 4, 8192))
    sel = UnitSelection(img, np.array([[True, True, False, True], [False] * 4]))
    offs = np.arange(2048) * 32  # 8 KiB of i32 in each selected unit: whole pages
    store_stream(i32, sel, offs, np.ones((3, 2048), np.int32), np.ones((3, 2048), bool))
    assert load(i32, sel, offs)[1].all()
    store_stream(i32, sel, offs, np.full((3, 2048), 5, np.int32), np.zeros((3, 2048), bool))
    assert not load(i32, sel, offs)[1].any()


def test_reading_through_a_flat_image_keeps_the_images_mask() -> None:
    """Units that are not whole pages: a read through ``flat_image()`` settled pages of its own bookkeeping and
    cleared mask bytes the image still kept MIXED, which then read as poison."""
    img = DenseImage((2, 5000))
    store(i8, img, np.arange(5000) * 8, np.ones(5000, np.int8), np.arange(5000) % 2 == 0)
    store(i8, img, np.arange(5000) * 8, np.ones(5000, np.int8), np.arange(5000) % 2 == 1)
    img.read_view()  # every page MIXED with its exact mask, as any hand-out of the mask leaves it
    assert load(i32, img.flat_image(), np.arange(0, 4096 * 8, 32))[1].all()
    assert img.known_bytes(0, 4)[0].tolist() == [True] * 4 and img.all_written(0, 5000)


def test_an_hbm_copy_whose_source_merges_regions_writes_the_kept_array() -> None:
    """HBM → HBM: taking the destination's view before the source's let the source merge regions into a new
    array, and the copy went into the discarded one (its bytes then read back stale, and marked known)."""
    img = PagedImage(RNGD.hbm.chip_bytes)
    ep = HbmEndpoint(RNGD, lambda c: img)
    n = 1 << 17
    copy([(n, 1, 1)], (0, 0), HostBuffer(np.full(n, 1, np.uint8)), ep)
    copy([(n - 4096, 1, 1)], (0, n + 4096), HostBuffer(np.full(n - 4096, 2, np.uint8)), ep)
    copy([(n, 1, 1)], (n // 2, 0), ep, ep)  # A's second half, the gap, B's start → into A
    v, k = img.gather(np.arange(0, n))
    assert np.array_equal(v, np.concatenate([np.full(n // 2, 1), np.zeros(4096), np.full(n // 2 - 4096, 2)]))
    assert np.array_equal(k, np.concatenate([np.ones(n // 2, bool), np.zeros(4096, bool),
                                             np.ones(n // 2 - 4096, bool)]))
