"""The Contraction Engine's arithmetic fast paths (:mod:`visa.fastpaths`), beside the reference product of
:mod:`visa.engines.contraction.compute` (the Reducer's sums, L4384–4548, as one batched matrix product in float64
for integer operands and float32 for float ones):

- ``contraction.exact-f32`` (:func:`exact_f32_terms`): integer operands multiplied in float32 (BLAS's fastest)
  in runs of as many terms as a float32 sum holds exactly (below 2^24), the runs summed in float64 — the same
  integers as one float64 product;
- ``contraction.repeats`` (:func:`drop_repeats`): an activation the data shows repeated along a weight digit is
  multiplied once by every weight column it pairs with (a wider product instead of a batch of narrow ones);
- ``contraction.weight-period`` (:func:`weight_period`, :func:`contract_by_period`): batch positions whose
  weights repeat with a period share one product per distinct weight matrix, the repeats never copied.

They compute integer contractions only (float ones sum in the Reducer's own order, step by step:
:func:`visa.engines.contraction.reference.run`): the products are the same numbers and the sums exact, so the
results are identical with each path on or off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.contraction.blas import parallel_pieces
from visa.engines.contraction.compute import _PIECE_ELEMENTS, _bits_view, _matmul, _matrix
from visa.memory.replicas import Labels, same_in_blocks, verifying

__all__ = ["exact_f32_terms", "weight_period", "has_period", "contract_by_period", "drop_repeats"]

Array = npt.NDArray[Any]
BoolArray = npt.NDArray[np.bool_]


#: Integers up to 2^24 are exact in float32 (a 24-bit significand).
_F32_EXACT = 1 << 24


def exact_f32_terms(a: Array, w: Array) -> int:
    """How many products of integer operands ``a`` and ``w`` a float32 sum may hold and stay exact: every
    partial sum of ``n`` products is an integer of magnitude at most ``n · max|a| · max|w|``, exact in float32
    while that is at most 2^24 (the storage types bound the values: i8 gives 2^14 per product, so 1024 terms).
    0 when the operands are not integers or fewer than 64 terms would fit (then float64 does it, exact below
    2^53)."""
    if a.dtype.kind not in "iub" or w.dtype.kind not in "iub":
        return 0

    def bound(dtype: np.dtype[Any]) -> int:
        if dtype.kind == "b":
            return 1
        info = np.iinfo(dtype)
        return max(abs(int(info.min)), int(info.max))

    terms = _F32_EXACT // (bound(a.dtype) * bound(w.dtype))
    return terms if terms >= 64 else 0


def weight_period(w: Array) -> int:
    """The smallest ``p`` < the batch size ``B`` (the first axis of ``w``) with ``w[b] == w[b mod p]`` for every
    ``b`` (bit for bit), or 0.  Each divisor is tried on a sample of every position's weights first (the first
    64 elements of one row), then on all of them (:func:`_same_along`); on any view, nothing is copied but the
    sample."""
    b = w.shape[0]
    if w.size == 0 or w.ndim < 2:
        return 0
    bits = _bits_view(w)
    sample = np.ascontiguousarray(bits[(slice(None),) + (0,) * (w.ndim - 2) + (slice(0, 64),)])
    for p in range(1, b):
        if b % p:
            continue
        s3 = sample.reshape(b // p, p, -1)
        if not np.array_equal(s3, np.broadcast_to(s3[:1], s3.shape)):
            continue
        if _same_along(w.reshape(1, b // p, p, *w.shape[1:])):  # splits the first axis: a view
            return p
    return 0


def has_period(w: Array, p: int) -> bool:
    """Is ``w[b] == w[b mod p]`` for every ``b`` of the first axis, bit for bit (``p`` divides its size)?"""
    b = w.shape[0]
    return b % p == 0 and _same_along(w.reshape(1, b // p, p, *w.shape[1:]))


def _words(x: Array) -> Array | None:
    """``x`` as ``(x.shape[0], x.shape[1], words)``: the bits of each ``x[g, k]`` as the widest unsigned words that
    divide them — a view, when each ``x[g, k]`` is one run of memory, its axes in any order (else None: no copy
    is made)."""
    g, n = x.shape[:2]
    m = math.prod(x.shape[2:])
    bits = _bits_view(x)
    if bits.dtype.kind == "u" and _dense(x.shape[2:], x.strides[2:], x.itemsize):
        flat = np.lib.stride_tricks.as_strided(bits, (g, n, m), (*x.strides[:2], x.itemsize), writeable=False)
        word = next(w for w in (8, 4, 2, 1) if (m * x.itemsize) % w == 0 and w >= x.itemsize)
        return flat.view(np.dtype(f"u{word}"))
    return None


def _dense(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """Do the elements of ``shape``/``strides`` fill one run of memory from the first (index 0) on, in some order of
    the axes?  Then comparing two such blocks word by word compares the same elements."""
    expect = itemsize
    for size, stride in sorted(((n, s) for n, s in zip(shape, strides, strict=True) if n > 1), key=lambda a: a[1]):
        if stride != expect:
            return False
        expect *= size
    return True


def _same_along(x: Array) -> bool:
    """Is ``x`` (shape ``(G, N, ...)``) the same, bit for bit, at every position of its second axis, for each
    ``g``?  A sample (the first 64 words of each position) is compared first, then every word; positions are
    compared as 64-bit words when their bits allow (a fraction of the element compares), element by element
    otherwise (a strided view is not copied)."""
    if x.shape[1] < 2 or x.size == 0:
        return True
    v = _words(x)
    if v is None:
        v = _bits_view(x)
        index: tuple[Any, ...] = (slice(None), slice(None), *((0,) * (v.ndim - 3)), slice(0, 64))
        head = v[index] if v.ndim > 2 else v
    else:
        head = v[:, :, :64]
    if not np.array_equal(head[:, 1:], np.broadcast_to(head[:, :1], head[:, 1:].shape)):
        return False
    return bool(np.array_equal(v[:, 1:], np.broadcast_to(v[:, :1], v[:, 1:].shape)))


def contract_by_period(a: Array, w: Array, order_a: list[int], order_w: list[int], bshape: list[int], nm: int,
                       nk: int, nn_: int, n_w_labels: int, period: int, terms: int, ctype: type[np.floating[Any]],
                       mtype: type[np.floating[Any]], a_labels: Labels | None, span: int = 0) -> Array:
    """The batched product ``(batch, m, n)`` of ``compute._contract`` when the weights repeat every ``period``
    batch positions (slices sharing a TRF content, e.g. one column block of B broadcast to every row block of A)
    — within each block of ``span`` positions when ``span`` > 0 (a fold, :class:`~visa.engines.contraction.
    compute.TrfWindow`): the activations of the positions that share weights are stacked into one taller product
    per distinct weight matrix (the same products, fewer and larger BLAS calls); when the activations also repeat
    within each block (one row block of A broadcast to every column block), one product of the distinct
    activations by the distinct weights.  ``a``/``w`` are the operands (``w``'s first axis ``period`` — one
    period per block — or the whole batch), ``order_a``/``order_w`` their axes in (batch, m, k) / (batch, k, n)
    order, ``n_w_labels`` the weights' own axes."""
    blocks = bshape[0] // span if span else 1
    groups = (span or bshape[0]) // period
    res = np.empty((*bshape, nm, nn_), dtype=ctype if terms else mtype)
    res5 = res.reshape(blocks, groups, period, nm, nn_)
    ta = a.transpose(order_a)
    ta = ta.reshape(blocks, groups, period, *ta.shape[1:])
    tw = w.transpose(order_w)
    entries = blocks * period
    piece = max(1, min(-(-entries // 8), _PIECE_ELEMENTS // max(1, groups * nm * nk + nk * nn_)))
    if blocks == 1 and _activations_repeat(a, groups, period, a_labels):
        # and the activations repeat within each block of `period` positions (one row block of A broadcast to
        # every column block): one product of the distinct activations by the distinct weights
        a_u = _matrix(ta[0, :, 0], list(range(ta.ndim - 2)), (groups * nm, nk), mtype)
        nkd = tw.ndim - 1 - n_w_labels  # the contracted axes of tw, after the batch axis
        w_order = [*range(1, 1 + nkd), 0, *range(1 + nkd, tw.ndim)]

        def run_unique(lo: int, hi: int) -> None:
            n = hi - lo
            w_u = _matrix(tw[lo:hi], w_order, (nk, n * nn_), mtype)
            out = _matmul(a_u, w_u, terms, ctype, np.matmul)
            res5[0, :, lo:hi] = out.reshape(groups, nm, n, nn_).transpose(0, 2, 1, 3)

        parallel_pieces(period, max(1, -(-period // 4)), run_unique)
        return res

    def run_shared(lo: int, hi: int) -> None:
        for x in range(lo // period, (hi - 1) // period + 1):  # (a piece may reach over blocks)
            y0, y1 = max(lo - x * period, 0), min(hi - x * period, period)
            n = y1 - y0
            a2 = _matrix(ta[x, :, y0:y1], [1, 0, *range(2, ta.ndim - 1)], (n, groups * nm, nk), mtype)
            w2 = _matrix(tw[x * period + y0: x * period + y1], list(range(tw.ndim)), (n, nk, nn_), mtype)
            out = _matmul(a2, w2, terms, ctype, np.matmul)
            res5[x, :, y0:y1] = out.reshape(n, groups, nm, nn_).transpose(1, 0, 2, 3)

    parallel_pieces(entries, piece, run_shared)
    return res


def _activations_repeat(a: Array, groups: int, period: int, labels: Labels | None) -> bool:
    """Do the activations repeat within each block of ``period`` batch positions?  Known from how their bytes were
    written (the positions' replica labels, :mod:`visa.memory.replicas`), else compared."""
    if same_in_blocks(labels, groups, period):
        assert not verifying() or _same_along(a.reshape(groups, period, *a.shape[1:])), (
            "replica labels claim activations the bytes do not repeat")
        return True
    return _same_along(a.reshape(groups, period, *a.shape[1:]))


def drop_repeats(a: Array, ak: BoolArray, la: list[str], lw: list[str],
                  lo: list[str]) -> tuple[Array, BoolArray, list[str]]:
    """Drop the activation's time digits along which it repeats itself (values and known alike) and that the
    weights and the output also index: such a digit then multiplies one activation by several weight columns — a
    wider matrix product instead of a batch of narrow ones.  The products are the same numbers: the result does
    not change, only how many BLAS calls compute it.  A fetch's broadcast (``J / 8 % 4`` in the GEMM example,
    L466–525) arrives as structure and is never compared here (:func:`_digits`); this finds the repeats only the
    data shows (a broadcast materialised on the way, e.g. by an engine that does not keep the structure)."""
    for lab in [x for x in la if x.startswith("d") and x in lw and x in lo]:
        axis = la.index(lab)
        if a.shape[axis] < 2:
            continue
        if _repeats(a, axis) and _repeats(ak, axis):  # the same bits, the same products
            a, ak = np.take(a, [0], axis=axis).squeeze(axis), np.take(ak, [0], axis=axis).squeeze(axis)
            la = [x for x in la if x != lab]
    return a, ak, la


def _repeats(x: Array, axis: int) -> bool:
    """Is ``x`` the same, bit for bit, at every position of ``axis``?  A C-ordered array is compared as the
    64-bit (or narrower) words of each block the axis steps over: the same bits, a fraction of the compares
    and of the temporary mask an element-wise comparison of a 2-byte type would make."""
    n = x.shape[axis]
    if n < 2 or x.size == 0 or x.strides[axis] == 0:
        return True
    if x.flags.c_contiguous:
        return _same_along(x.reshape(math.prod(x.shape[:axis]), n, *x.shape[axis + 1:]))
    bits = _bits_view(x)
    return bool(np.array_equal(bits, np.broadcast_to(np.take(bits, [0], axis=axis), bits.shape)))


