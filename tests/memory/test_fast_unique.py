"""``memory.dense-unique`` (visa.memory.fast_unique, issue 24): the distinct values, first indices and inverse of
integer keys equal ``np.unique``'s, whether the keys span a small range (the table) or a wide one (the sort)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import fastpaths
from visa.memory import fast_unique

DTYPES = [np.int64, np.int32, np.int8, np.uint8, np.intp]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), spread=st.sampled_from([1, 2, 5, 100, 10**6]),
       offset=st.integers(-(10**9), 10**9), dtype=st.sampled_from(DTYPES), first=st.booleans(),
       shape2=st.booleans())
def test_dense_unique_is_nps(seed: int, n: int, spread: int, offset: int, dtype: type, first: bool,
                             shape2: bool) -> None:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo = max(int(info.min), min(offset, int(info.max) - spread))
    keys = rng.integers(lo, min(int(info.max), lo + spread) + 1, size=(2, n) if shape2 else n).astype(dtype)
    want = np.unique(keys.reshape(-1), return_index=True, return_inverse=True)
    for on in (True, False):
        with fastpaths.only("memory.dense-unique") if on else fastpaths.disabled("memory.dense-unique"):
            values, index, inverse = fast_unique.unique(keys, first=first)
        assert values.dtype == keys.dtype and np.array_equal(values, want[0])
        assert inverse.dtype == np.int64 and np.array_equal(inverse, want[2].reshape(-1))
        assert np.array_equal(index, want[1]) if first else index.size == 0


def test_small_ranges_take_the_table() -> None:
    """Replica labels of 512 slices in 16 classes, within the table's range: the same arrays as np.unique."""
    keys = np.repeat(np.arange(16, dtype=np.int64) * 3 + 1000, 32)[::-1].copy()
    with fastpaths.only("memory.dense-unique"):
        values, index, inverse = fast_unique.unique(keys, first=True)
    want = np.unique(keys, return_index=True, return_inverse=True)
    assert np.array_equal(values, want[0]) and np.array_equal(index, want[1]) and np.array_equal(inverse, want[2])
