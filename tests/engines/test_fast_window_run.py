"""``contraction.window-run`` (visa/engines/contraction/fast_window.py, issue 25): the TRF window of a run of
consecutive slices of one chip that is not whole clusters (a decode step's GEMV loads as many slices as its weights
fill) — the same values, known-mask and period as the window read with the path off, and a snapshot: a later load
of the TRF does not change what the window holds (L4063–4070).  A run reaching slices whose TRF was never loaded is
read as before (their elements unknown)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.test_fast_window_owed import SLICES, window_twice
from visa import RNGD, bf16, fastpaths, i8


def _window(weights: np.ndarray, loaded: int, start: int, stop: int, dtype: type) -> tuple[np.ndarray, ...]:
    """:func:`window_twice` (weights in the first ``loaded`` clusters' slices) of the window (elements 8 … 56) of
    the flat slices ``start … stop - 1``."""
    valid = np.zeros((1, RNGD.dm.clusters_per_chip, SLICES), bool)
    valid.reshape(-1)[start:stop] = True
    values, known, period, again = window_twice(weights, loaded, valid, 8, 56, dtype)
    return values, known, np.array(period), again


@settings(max_examples=10, deadline=None)
@given(loaded=st.sampled_from([1, 2]), start=st.integers(0, 2 * SLICES - 1), size=st.integers(1, 2 * SLICES),
       wide=st.booleans(), seed=st.integers(0, 2**16))
def test_the_window_of_a_run_of_slices_is_the_reference(loaded: int, start: int, size: int, wide: bool,
                                                        seed: int) -> None:
    stop = min(start + size, 2 * SLICES)
    rng = np.random.default_rng(seed)
    shape = (loaded, SLICES, 8, 64)
    if wide:  # (bf16: the decode GEMV's elements)
        weights = rng.standard_normal(shape).astype(np.float32)
        dtype: type = bf16
    else:
        weights = rng.integers(-128, 128, size=shape, dtype=np.int8)
        dtype = i8
    got = _window(weights, loaded, start, stop, dtype)
    with fastpaths.disabled("contraction.window-run"):
        want = _window(weights, loaded, start, stop, dtype)
    assert got[2] == want[2]
    for a, b in zip(got[:2], want[:2], strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    assert np.array_equal(got[3].view(np.uint8), got[0].view(np.uint8))  # a snapshot: the second load changed nothing
