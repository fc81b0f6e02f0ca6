"""``memory.hbm-load-order`` (visa/memory/fast_load_order.py) against the reference sort (issue 24): the HBM load
model of random transfers — scattered or strided units, few banks and rows (repeats and switches within a
window), several chips, segments (sorted, as the DMA model makes them, or not) and groups — is the same with the
path on and off, bit for bit: every channel's busy and bus cycles, each group's, and the counts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths
from visa.memory import fast_load_order
from visa.memory import performance as perf


def _units(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "random":
        return rng.integers(0, 1 << 30, n) // 256 * 256
    if kind == "stride":
        return (np.arange(n) * int(rng.integers(1, 64)) * 256 + int(rng.integers(0, 1 << 20)) * 256) % (1 << 34)
    return rng.integers(0, 4, n) << 21 | rng.integers(0, 8, n) << 13 | rng.integers(0, 2, n) << 8


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 400), st.integers(0, 2**32), st.sampled_from([1, 2]), st.sampled_from([1, 3, 8]),
       st.sampled_from(["random", "stride", "rows"]), st.booleans(), st.booleans())
def test_the_load_is_the_references_bit_for_bit(n: int, seed: int, chips: int, segments: int, kind: str,
                                                sorted_segments: bool, grouped: bool) -> None:
    rng = np.random.default_rng(seed)
    units = _units(rng, n, kind).astype(np.int64)
    ch = rng.integers(0, chips, n).astype(np.int64)
    factor = np.where(rng.random(n) < 0.1, 50.0, 1.0)
    seg = rng.integers(0, segments, n).astype(np.int64)
    if sorted_segments:
        seg = np.sort(seg)
    group = np.arange(segments, dtype=np.int64) // 2 if grouped else None
    with fastpaths.disabled("memory.hbm-load-order"):
        want = perf.hbm_load(RNGD, ch, units, factor, seg, group)
    with fastpaths.only("memory.hbm-load-order"):
        got = perf.hbm_load(RNGD, ch, units, factor, seg, group)
    for name in ("busy", "bus"):
        assert getattr(got, name).tobytes() == getattr(want, name).tobytes()
    assert (got.activations, got.transfers, got.rmw) == (want.activations, want.transfers, want.rmw)
    assert (got.group_busy is None) == (want.group_busy is None)
    if got.group_busy is not None and want.group_busy is not None:
        assert got.group_busy.tobytes() == want.group_busy.tobytes()


def test_the_order_is_numpys_stable_argsort() -> None:
    """Keys of which equal ones share a stretch (the given order is stable by stretch): ties kept in arrival
    order, whether the keys ascend along it (the model's windows) or not."""
    rng = np.random.default_rng(5)
    stretch = rng.integers(0, 6, 500)
    by_stretch = np.argsort(stretch, kind="stable")
    rank = np.empty(500, dtype=np.int64)
    rank[by_stretch] = np.arange(500)
    key = (stretch * 1000 + (rank % 7)) * 4 + rng.integers(0, 3, 500)  # windows of a stretch, then few values
    assert np.array_equal(fast_load_order.order(key, by_stretch), np.argsort(key, kind="stable"))
