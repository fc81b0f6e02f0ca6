"""``contraction.window-fold`` and ``contraction.fold-into`` (issue 24): weights that repeat with a period within
blocks of slices (the reference's ``matmul_16384``: slice ``(cluster, row group, s)`` holds the weights of
``(cluster, s)``).  :func:`visa.memory.replicas.fold_of` finds the fold the labels show; the Contraction Engine's
product over such a window (one entry per period of each block, :class:`~visa.engines.contraction.compute.
TrfWindow`) is the reference's — the weights repeated at every position and multiplied slice by slice — exactly,
whether the product is written into the output (``contraction.fold-into``) or stacked by period
(``contraction.weight-period``).  The peer matmul with both paths off alone writes the same bytes and schedule
(``tests/kernels/test_peer_matmul.py``)."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import fastpaths
from visa.engines.contraction import compute
from visa.memory.replicas import fold_of


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _brute(labels: np.ndarray) -> int:
    """The most positions per distinct entry any fold of ``labels`` gives (1: none)."""
    n, best = labels.size, 1
    for span in _divisors(n):
        for p in _divisors(span):
            block = labels.reshape(n // span, span // p, p)
            if p < span and (block[:, 0] >= 0).all() and (block == block[:, :1]).all():
                best = max(best, span // p)
    return best


@settings(max_examples=200, deadline=None)
@given(blocks=st.sampled_from([1, 2, 3, 4]), groups=st.sampled_from([1, 2, 4, 8]), period=st.sampled_from([1, 2, 3, 8]),
       unique=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_the_fold_of_labels_holds_and_is_the_largest(blocks: int, groups: int, period: int, unique: int,
                                                     seed: int) -> None:
    rng = np.random.default_rng(seed)
    entries = rng.integers(0, 4, size=(blocks, 1, period))
    labels = np.broadcast_to(entries, (blocks, groups, period)).reshape(-1).copy()
    for k in rng.integers(0, labels.size, size=unique):  # a unique label (negative) somewhere
        labels[k] = -1 - k
    p, span = fold_of(labels)
    best = _brute(labels)
    if best == 1:
        assert (p, span) == (0, 0)
        return
    n = labels.size
    assert n % span == 0 and span % p == 0 and span // p == best
    ids = np.arange(n)
    assert np.array_equal(labels, labels[ids // span * span + ids % p])


@st.composite
def _folded(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, int, dict[str, int]]:
    """i8 activations ``(b, m, k)`` and weights ``(entries, k, n)`` for a fold of ``blocks × groups × period``
    positions (``span`` 0 when there is one block)."""
    blocks, groups, period = (draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 6)))
    sizes = {"b": blocks * groups * period, "m": draw(st.integers(1, 9)), "k": draw(st.integers(1, 70)),
             "n": draw(st.integers(1, 9))}
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = rng.integers(-128, 128, size=(sizes["b"], sizes["m"], sizes["k"])).astype(np.int8)
    w = rng.integers(-128, 128, size=(blocks * period, sizes["k"], sizes["n"])).astype(np.int8)
    if draw(st.booleans()):  # the activations repeat within each block of `period` (the stacked product's shortcut)
        a = np.ascontiguousarray(np.broadcast_to(a[::period][:, None], (sizes["b"] // period, period, *a.shape[1:]))
                                 .reshape(a.shape))
    span = groups * period if blocks > 1 else 0
    return a, w, period, span, sizes


@settings(max_examples=80, deadline=None)
@given(_folded(), st.booleans())
def test_the_folded_product_is_the_reference(case: tuple[np.ndarray, np.ndarray, int, int, dict[str, int]],
                                             into: bool) -> None:
    a, w, period, span, sizes = case
    ids = np.arange(sizes["b"])
    every = w[ids // span * period + ids % period if span else ids % period]  # each position's weights
    la, lw, lo = ["b", "m", "k"], ["b", "k", "n"], ["b", "m", "n"]
    with fastpaths.disabled():
        want = compute._contract(a, la, every, lw, lo, sizes, ["k"], np.float32).astype(np.int32)
    out = np.full([sizes[x] for x in lo], -1, dtype=np.int32)
    with contextlib.nullcontext() if into else fastpaths.disabled("contraction.fold-into"):
        got = compute._contract(a, la, w, lw, lo, sizes, ["k"], np.float32, period, out=out if into else None,
                                w_span=span)
    if got is not out:
        out[...] = got
    assert np.array_equal(out, want)
    brute = np.einsum(a.astype(np.int64), [0, 1, 2], every.astype(np.int64), [0, 2, 3], [0, 1, 3])
    assert np.array_equal(want, brute)
    with fastpaths.disabled("contraction.weight-period"):  # (the window's fold unrepeated: the reference's product)
        off = compute._contract(a, la, w, lw, lo, sizes, ["k"], np.float32, period, w_span=span)
    assert np.array_equal(np.asarray(off).astype(np.int32), want)


def test_a_window_fold_reads_the_entries_of_each_block() -> None:
    """:meth:`TrfWindow.positions` and :meth:`~TrfWindow.entries`: a fold of 2 blocks × 3 groups × 2 positions."""
    values = np.arange(4 * 1 * 2, dtype=np.int8).reshape(4, 1, 2)
    window = compute.TrfWindow(values, np.ones(values.shape, bool), 0, 2, 6)
    assert window.entries(np.arange(12)).tolist() == [0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3]
    v, _, p, s = window.positions(slice(0, 12))
    assert (p, s) == (2, 6) and v.shape[0] == 4
    v, _, p, s = window.positions(slice(6, 12))  # one block: a period alone
    assert (p, s) == (2, 0) and v.tolist() == values[2:].tolist()
    v, _, p, s = window.positions(slice(1, 4))  # not whole blocks: every position
    assert (p, s) == (0, 0) and v.tolist() == values[[1, 0, 1]].tolist()
    # the float steps take a period only: the fold unrepeated, each position its entry
    assert np.array_equal(compute._unfold(values, 2, 6, 12), values[window.entries(np.arange(12))])
