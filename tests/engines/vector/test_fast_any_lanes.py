"""``vector.any-lanes`` (visa/engines/vector/fast_reduce.py): a poison mask reduced over a last axis of 2, 4 or 8
lanes, read as one word per position, equals numpy's ``any(axis=-1)`` (the reference), whatever the lanes hold;
other shapes and non-contiguous masks take the reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import fastpaths
from visa.engines.vector.fast_reduce import LANES, any_last


@skip_unless("vector.any-lanes")
@settings(max_examples=60, deadline=None)
@given(lead=st.lists(st.integers(1, 5), min_size=0, max_size=3), lanes=st.sampled_from([1, 2, 3, 4, 8, 16]),
       density=st.floats(0, 1), seed=st.integers(0, 2**16), transpose=st.booleans())
def test_any_last_is_any_over_the_last_axis(lead: list[int], lanes: int, density: float, seed: int,
                                            transpose: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random((*lead, lanes)) < density
    if transpose and x.ndim > 1:
        x = np.swapaxes(x, 0, -1)  # (a non-contiguous mask: the reference)
    want = x.any(axis=-1)
    got = any_last(x)
    assert got.shape == want.shape and np.array_equal(got, want)
    with fastpaths.disabled("vector.any-lanes"):
        assert np.array_equal(any_last(x), want)


def test_any_last_reads_words_of_four_lanes() -> None:
    """The shape a decode step's reduce gives (chips, clusters, slices, steps, four lanes): one slice with a
    poisoned lane, the rest clear."""
    x = np.zeros((1, 2, 256, 72, 4), dtype=bool)
    x[0, 1, 3, 70, 2] = True
    got = any_last(x)
    assert got.shape == (1, 2, 256, 72) and int(got.sum()) == 1 and bool(got[0, 1, 3, 70])
    assert LANES.name == "vector.any-lanes"
