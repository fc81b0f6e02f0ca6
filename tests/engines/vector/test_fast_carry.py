"""``vector.carry-fill-sparse`` (visa/engines/vector/fast_carry.py) against the reference gather of
:func:`visa.engines.vector.elementwise.carry_fill` (issue 24; ``WriteOperand``, L8708–8721): random write sets
(dense, sparse, none), folds, poison and a previous pass's register give the same values and known-mask with the
path on and off."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import fastpaths
from visa.engines.vector.elementwise import carry_fill


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2]), st.sampled_from([0.0, 0.05, 0.5, 0.97, 1.0]),
       st.booleans(), st.booleans(), st.sampled_from([6, 40]))
def test_sparse_carry_fill_is_the_reference(seed: int, fold: int, unwritten: float, poison: bool,
                                            initial: bool, steps: int) -> None:
    """(40 steps: a lane whose step does not write for 20 steps and more goes back past the path's search.)"""
    rng = np.random.default_rng(seed)
    shape = (1, 2, 3, steps * fold, 4 if fold == 2 else 8)
    values = rng.integers(-(2**31), 2**31, size=shape, dtype=np.int64).astype(np.int32)
    known = rng.random(shape) > 0.2 if poison else np.ones(shape, dtype=bool)
    ids = np.where(rng.random(shape) < unwritten, 3, 1).astype(np.uint8)
    if steps > 6:
        ids[0, 1, 2, 3:25] = 3  # (one run of unwritten steps longer than the path searches)
    lanes = shape[4] * fold
    init = ((rng.integers(-9, 9, size=(1, 2, 3, lanes)).astype(np.int32), rng.random((1, 2, 3, lanes)) > 0.5)
            if initial else None)
    fast = carry_fill(values, known, ids, frozenset({0, 1}), fold, init)
    with fastpaths.disabled("vector.carry-fill-sparse"):
        want = carry_fill(values, known, ids, frozenset({0, 1}), fold, init)
    for got, ref in zip(fast, want, strict=True):
        assert got.dtype == ref.dtype and got.shape == ref.shape and np.array_equal(got, ref)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sets(st.integers(0, 15), max_size=4))
def test_id_mask_by_comparisons_is_the_table(seed: int, keep: set[int]) -> None:
    """``vector.id-mask-compare``: the same mask as the table lookup, for every set of ids (up to two compared)."""
    from visa.engines.vector.elementwise import id_mask

    ids = np.random.default_rng(seed).integers(0, 16, size=(2, 3, 50), dtype=np.uint8)
    got = id_mask(ids, frozenset(keep))
    with fastpaths.disabled("vector.id-mask-compare"):
        want = id_mask(ids, frozenset(keep))
    assert got.dtype == want.dtype and np.array_equal(got, want)
