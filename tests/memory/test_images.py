"""Byte images: memory starts poisoned, HBM is sparse by region (manual L134–140, L2949)."""

from __future__ import annotations

import numpy as np
import pytest

from visa import RNGD, Context
from visa import dtypes as dt
from visa.errors import AddressError
from visa.memory.images import DenseImage, PagedImage, load, store


def test_dense_image_starts_poisoned_and_tracks_writes() -> None:
    img = DenseImage((2, 64))
    store(dt.i32, img, np.array([0, 32]), np.array([[1, 2], [3, 4]]))
    vals, known = load(dt.i32, img, np.array([0, 32, 64]))
    assert vals[:, :2].tolist() == [[1, 2], [3, 4]]
    assert known.tolist() == [[True, True, False], [True, True, False]]
    img.poison(0, 4)
    assert load(dt.i32, img, np.array([0]))[1].tolist() == [[False], [False]]


def test_i4_element_zero_is_the_low_nibble() -> None:
    img = DenseImage((8,))
    store(dt.i4, img, np.array([0, 4]), np.array([1, -2]))
    assert int(img.data[0]) == 0xE1
    assert load(dt.i4, img, np.array([0, 4]))[0].tolist() == [1, -2]


def test_paged_image_is_sparse_by_region() -> None:
    img = PagedImage(RNGD.hbm.chip_bytes)
    data, written = img.window(40 << 30, (40 << 30) + 16)
    data[:] = 5
    written[:] = True
    assert img.regions() == [(40 << 30, (40 << 30) + 16)]  # 48 GB modelled by the 16 bytes touched
    vals, known = img.gather(np.array([(40 << 30) - 1, 40 << 30]))
    assert vals.tolist() == [0, 5] and known.tolist() == [False, True]


def test_paged_window_merges_regions_and_keeps_their_bytes() -> None:
    img = PagedImage(1 << 30)
    img.scatter(np.array([10, 11]), np.array([1, 2], np.uint8))
    img.scatter(np.array([100]), np.array([3], np.uint8))
    assert img.regions() == [(10, 12), (100, 101)]
    data, written = img.window(0, 200)
    assert img.regions() == [(0, 200)]
    assert data[[10, 11, 100]].tolist() == [1, 2, 3]
    assert written.sum() == 3


def test_paged_scatter_far_apart_makes_separate_regions() -> None:
    img = PagedImage(1 << 40)
    img.scatter(np.array([0, 1 << 35]), np.array([7, 8], np.uint8))
    assert len(img.regions()) == 2
    assert img.gather(np.array([0, 1 << 35]))[0].tolist() == [7, 8]


def test_paged_image_refuses_addresses_outside_the_chip() -> None:
    img = PagedImage(RNGD.hbm.chip_bytes)
    with pytest.raises(AddressError):
        img.window(RNGD.hbm.chip_bytes - 4, RNGD.hbm.chip_bytes + 4)


def test_chip_memories_have_the_profile_sizes() -> None:
    ctx = Context.acquire()
    chip = ctx.memory.chip(0)
    assert chip.dm.data.shape == (RNGD.dm.clusters_per_chip, RNGD.dm.slices_per_cluster, RNGD.dm.slice_bytes)
    assert chip.vrf.data.shape[-1] == RNGD.vrf.slice_bytes
    assert chip.trf.data.shape[2] == RNGD.trf.rows
    assert chip.hbm.nbytes == 48 << 30
    assert not chip.dm.written.any()
