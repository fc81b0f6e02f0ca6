"""``vector.inter-shared-rows`` (visa/engines/vector/fast_row_classes.py) against numpy's
``unique(rows, axis=0, return_inverse=True)`` (issue 24): the same sorted distinct rows and the same inverse —
with repeats, -1 (invalid) entries, values over the whole int64 range (the sign decides the order), rows wider
than the sampled columns and longer than a compared block — or ``None`` when two distinct rows share a key, which
the inter-shared path then answers by its full hash."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.engines.vector import fast_inter_shared, fast_row_classes


def _numpy(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, inverse = np.unique(rows, axis=0, return_inverse=True)
    return u, inverse.reshape(-1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 300), st.integers(1, 4), st.booleans(), st.integers(0, 2**32 - 1))
def test_row_classes_equal_numpy_unique(n: int, width: int, distinct: int, wide: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lo, hi = (-(2**63), 2**63 - 1) if wide else (-1, 3)
    pool = rng.integers(lo, hi, size=(distinct, width), dtype=np.int64, endpoint=True)
    rows = pool[rng.integers(0, distinct, size=n)]
    got = fast_row_classes.unique_rows(rows)
    assert got is not None  # (distinct rows differ in a sampled column almost surely; equal rows never collide)
    want = _numpy(rows)
    assert got[0].dtype == np.int64
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_rows_differing_outside_the_sampled_columns_decline_and_the_hash_answers() -> None:
    """Two rows equal in every sampled column share a key: the exact check finds them different, the path
    returns None and the inter-shared path's full hash gives numpy's answer."""
    rows = np.zeros((6, 200), dtype=np.int64)
    rows[1::2, 1] = 7  # column 1 is not sampled (64 of 200 columns, evenly spaced: 0, 3, 6, …)
    assert fast_row_classes.unique_rows(rows) is None
    u, inverse = fast_inter_shared._unique_rows(rows)
    want = _numpy(rows)
    assert np.array_equal(u, want[0]) and np.array_equal(inverse, want[1])


def test_forced_collisions_decline() -> None:
    """Weights of zero give every row one key: distinct rows are caught by the exact check."""
    rows = np.array([[1, 2], [1, 2], [0, 5]], dtype=np.int64)
    assert fast_row_classes.unique_rows(rows, np.zeros(2, dtype=np.int64)) is None
    same = np.array([[4, 4], [4, 4]], dtype=np.int64)
    got = fast_row_classes.unique_rows(same, np.zeros(2, dtype=np.int64))
    assert got is not None and got[0].tolist() == [[4, 4]] and got[1].tolist() == [0, 0]
