"""``fetch.mask-rows`` (visa/engines/fast_mask_rows.py): the masking stage's ranges per index of the masked axis
(manual L1877–1935) are the reference loop's, for every pattern of used digits (holes, empty rows, full rows),
and a fetch's masking plan is the same with the path on and off."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from visa import RNGD, AxisSet, fastpaths, i8, i32
from visa.engines import fetch
from visa.engines.fast_mask_rows import row_ranges


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.bool_, st.tuples(st.integers(1, 12), st.integers(1, 9))))
def test_row_ranges_are_the_reference_loop(used: np.ndarray) -> None:
    assert row_ranges(used) == fetch._row_ranges(used)


def test_a_padded_row_and_a_hole() -> None:
    used = np.array([[True, True, False], [False, False, False], [False, True, True]])
    assert row_ranges(used) == ([0, 0, 1], [2, 0, 3])
    assert row_ranges(np.array([[True, False, True]])) is None


def test_the_fetch_plan_masks_the_same() -> None:
    """The masking stage of fetches whose masked axis has many indices: a right pad on the last index (cases 1
    and 3), an empty first index (a left dummy), and the row max's layout (no mask: the right count is past the
    limit), for 4- and 1-byte elements."""
    m = AxisSet(C=30, D=4093, E=4096).m
    cases = [(m["[C # 32] / 4"], m["[C # 32] % 4 # 8"]), (m["[D # 4096] / 8"], m["[D # 4096] % 8"]),
             (m["# 1 + [C # 32] / 8"], m["[C # 32] % 8"]), (m["E / 4"], m["E % 4 # 8"])]
    found = 0
    for time, packet in cases:
        for dtype in (i32, i8):
            got = fetch._mask(RNGD, dtype, time, packet, "main")
            with fastpaths.disabled("fetch.mask-rows"):
                want = fetch._mask(RNGD, dtype, time, packet, "main")
            assert got == want
            found += got is not None
    assert found == 6
