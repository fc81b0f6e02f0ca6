"""The inter-slice reduce's group sets by table (issue 15: numpy's hash-based ``unique`` took most of a first
launch over a million group ids) against ``np.unique``, the old path (L6603–6653)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.engines.vector import inter


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3000), st.integers(0, 400), st.integers(0, 2**32), st.booleans())
def test_unique_ids_and_counts_are_numpys(bound: int, n: int, seed: int, table: bool) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, bound, n).astype(np.int64)
    if not table:  # the np.unique branch: a bound far above the ids
        ids = ids * (inter._TABLE_FROM + 1)
        bound = bound * (inter._TABLE_FROM + 1)
    got = inter.unique_ids(ids, bound)
    assert np.array_equal(got, np.unique(ids)) and got.dtype == np.unique(ids).dtype
    srt = np.sort(ids, kind="stable")
    for mine, theirs in zip(inter.unique_counts(srt, bound),
                            np.unique(srt, return_index=True, return_counts=True), strict=True):
        assert np.array_equal(mine, theirs)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3000), st.integers(0, 300), st.integers(0, 300), st.integers(0, 2**32), st.booleans())
def test_rank_of_is_searchsorted(bound: int, n: int, k: int, seed: int, table: bool) -> None:
    rng = np.random.default_rng(seed)
    uniq = np.unique(rng.integers(0, bound, k).astype(np.int64))
    ids = rng.integers(0, bound, n).astype(np.int64)
    if not table:
        far = inter._TABLE_FROM + 1
        uniq, ids, bound = uniq * far, ids * far, bound * far
    assert np.array_equal(inter.rank_of(uniq, ids, bound), np.searchsorted(uniq, ids))
