"""``contraction.window-owed`` (visa/engines/contraction/fast_window.py, issue 24): the TRF window of every slice of
a range of clusters, when no period is known from the writes, read through the pending copies a register load left
— the same values, known-mask and period as the window read with the path off (copies made, the window copied),
and a snapshot: a later load of the TRF does not change what the window holds (L4063–4070).
The peer matmul's loads leave such copies (tests/kernels/test_peer_matmul.py runs it with the path off alone)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, Context, TrfAddress, fastpaths, i8
from visa.stream import contraction as SC
from visa.testing import place_trf

SLICES = RNGD.dm.slices_per_cluster


def window_twice(weights: np.ndarray, loaded: int, valid: np.ndarray, lo: int, hi: int,
                 dtype: type = i8) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Weights placed in the TRF of the first ``loaded`` clusters' slices, 8 Rows; the window (elements ``lo`` …
    ``hi - 1``) of the ``(Chip, Cluster, Slice)`` positions ``valid``: its values, known, period, and its values
    again after a second load of the TRF (negated weights).  Shared with tests/engines/test_fast_window_run.py."""
    m = AxisSet(C=loaded, A=SLICES, R=8, K=64).m
    ctx = Context()
    ctx.num_chips = 1
    cl = m["C"] if loaded == 2 else m["C # 2"]
    data, axes = (weights, "C A R K") if loaded == 2 else (weights[0], "A R K")  # (an axis of size 1 is none)
    trf = place_trf(ctx, data, dtype, m["1"], cl, m["A"], m["R"], m["K"], TrfAddress.Full, axes=axes)
    window = SC.trf_window(trf, valid, lo, hi)
    values, known = np.array(window.values), np.array(window.known)
    place_trf(ctx, -data, dtype, m["1"], cl, m["A"], m["R"], m["K"], TrfAddress.Full, axes=axes)
    return values, known, window.period, np.array(window.values)


def _window(weights: np.ndarray, clusters: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """:func:`window_twice` of every slice of the first ``clusters`` clusters, the whole element."""
    valid = np.zeros((1, RNGD.dm.clusters_per_chip, SLICES), bool)
    valid[0, :clusters] = True
    return window_twice(weights, clusters, valid, 0, 64)


@settings(max_examples=8, deadline=None)
@given(clusters=st.sampled_from([1, 2]), period=st.sampled_from([0, 1, 4, 64]), seed=st.integers(0, 2**16))
def test_the_window_through_pending_copies_is_the_reference(clusters: int, period: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = clusters * SLICES
    distinct = rng.integers(-128, 128, size=(period or n, 8, 64), dtype=np.int8)
    weights = np.ascontiguousarray(distinct[np.arange(n) % (period or n)].reshape(clusters, SLICES, 8, 64))
    got = _window(weights, clusters)
    with fastpaths.disabled("contraction.window-owed"):
        want = _window(weights, clusters)
    assert got[2] == want[2]
    for a, b in zip(got[:2], want[:2], strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(got[3], got[0])  # a snapshot: the second load changed nothing the window holds
