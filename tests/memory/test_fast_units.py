"""``memory.unit-selection-memo`` (visa/memory/fast_units.py): the units an enabled mask selects and their box,
kept per mask, are the reference's for random masks (boxes and not), and a selection reads and writes the same
bytes either way."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from visa import fastpaths
from visa.dtypes import i16
from visa.memory.images import DenseImage, load, store
from visa.memory.units import UnitSelection

SHAPES = st.sampled_from([(2, 4), (2, 3, 2), (1, 5), (3, 1, 4)])


@settings(max_examples=60, deadline=None)
@given(SHAPES.flatmap(lambda s: hnp.arrays(np.bool_, s)), st.integers(0, 2**32 - 1))
def test_the_kept_selection_is_the_reference(enabled: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(-(2**15), 2**15, size=(int(enabled.sum()), 3)).astype(np.int16)
    index = np.array([0, 32, 80])  # (bit offsets)

    def run() -> tuple[list[int], object, np.ndarray]:
        img = DenseImage((*enabled.shape, 16))
        sel = UnitSelection(img, enabled)
        again = UnitSelection(img, enabled.copy())  # (the same mask, another array: the kept answer)
        assert again.units.tolist() == sel.units.tolist() and again.box == sel.box
        store(i16, sel, index, values)
        return sel.units.tolist(), sel.box, np.asarray(load(i16, img, index)[0]).copy()

    fast = run()
    with fastpaths.disabled("memory.unit-selection-memo"):
        reference = run()
    assert fast[0] == reference[0] and fast[1] == reference[1]
    assert np.array_equal(fast[2], reference[2])
    assert fast[0] == np.flatnonzero(enabled).tolist()


def test_kept_units_are_read_only() -> None:
    if not fastpaths.get("memory.unit-selection-memo").on:
        return
    sel = UnitSelection(DenseImage((2, 4, 8)), np.array([[True, True, False, False]] * 2))
    assert not sel.units.flags.writeable
    assert sel.box == (slice(0, 2), slice(0, 2))
