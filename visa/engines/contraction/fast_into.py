"""``contraction.product-into``: the integer products of the Contraction Engine written by each worker straight
into the accumulation's output, in its layout and its type (issue 24), beside
:mod:`visa.engines.contraction.compute`, whose reference it stands for.

The reference (:func:`visa.engines.contraction.compute._contract`) multiplies a batch of matrices whose columns
are the weights' own labels in their memory order (a view BLAS reads as a transposed operand), collects the
products into one float32 batch, reorders that batch to the output's labels (a strided copy of the whole
output) and converts it to i32 (another pass).  Here, when every sum is exact in float32 (at most
:func:`~visa.engines.contraction.fast_compute.exact_f32_terms` products, ``contraction.f32-sums``), each worker
converts its piece of the weights with the output's column labels in the output's order (a contiguous matrix:
BLAS's fastest form), multiplies its piece and writes it into the output, converting as it goes (the sums are
integers below 2^24: the conversion is exact, the same i32 values as the reference's).  The Reducer's sums are
the same numbers in any order (L4384–4548), so the accumulated values are identical with the path on or off;
``tests/engines/test_fast_compute.py`` checks that.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.contraction.blas import parallel_pieces

__all__ = ["INTO", "FOLD", "product_into", "fold_into"]

Array = npt.NDArray[Any]

INTO = fastpaths.register("contraction.product-into", "integer products exact in float32 written by each worker "
                                                      "into the output in its layout and type (weights converted in "
                                                      "the output's column order), not a float32 batch reordered "
                                                      "and converted after")
FOLD = fastpaths.register("contraction.fold-into", "integer products exact in float32 of slices sharing weights (a "
                                                   "period, or a period within blocks: the TRF window's fold) "
                                                   "multiplied once per distinct weight matrix, the activations "
                                                   "stacked, each worker writing into the output in its layout and "
                                                   "type, not a float32 batch reordered and converted after")


def product_into(out: Array, a: Array, la: list[str], w: Array, lw: list[str], lo: list[str],
                 sizes: dict[str, int], labels: tuple[list[str], list[str], list[str], list[str]],
                 piece_elements: int, convert: Any) -> bool:
    """Write ``einsum(a, w → lo)`` into ``out`` (laid out as ``lo``, any numeric type holding the sums), the batch
    split into pieces of about ``piece_elements`` operand elements over the worker threads; False (nothing
    written) when ``out`` is not a view of the product's ``(batch, m, n)`` matrices in some order of its labels.

    ``labels`` are the product's ``(batch, m, k, n)`` labels (every label of ``lo`` in ``a`` or ``w``; the
    first batch label the one split); ``convert(x, order, shape)`` is the reference's operand conversion to
    float32 (:func:`visa.engines.contraction.compute._matrix`).  Every sum must be exact in float32 (the caller
    checks the term count)."""
    batch, mm, kk, nn = labels
    if not batch or set(lo) != set(batch + mm + nn):
        return False
    nn = [lab for lab in lo if lab in nn]  # the output's own order: its rows are the product's rows
    mm = [lab for lab in lo if lab in mm]
    bshape = [sizes[lab] for lab in batch]
    nm, nk, n_n = (math.prod(sizes[lab] for lab in part) for part in (mm, kk, nn))
    view = out.transpose([lo.index(lab) for lab in batch + mm + nn])
    target = view.reshape(*bshape, nm, n_n)
    if out.size and not np.may_share_memory(target, out):
        return False  # (the output's axes do not merge: the reshape copied)
    ta = a.transpose([la.index(lab) for lab in batch + mm + kk])
    tw = w.transpose([lw.index(lab) for lab in batch + kk + nn])
    rest = math.prod(bshape[1:])
    piece = max(1, min(-(-bshape[0] // 8), piece_elements // max(1, (nm * nk + nk * n_n) * rest)))

    def run(lo_: int, hi: int) -> None:
        n = hi - lo_
        a2 = convert(ta[lo_:hi], list(range(ta.ndim)), (n, *bshape[1:], nm, nk))
        w2 = convert(tw[lo_:hi], list(range(tw.ndim)), (n, *bshape[1:], nk, n_n))
        np.copyto(target[lo_:hi], np.matmul(a2, w2), casting="unsafe")

    parallel_pieces(bshape[0], piece, run)
    return True


def fold_into(out: Array, a: Array, la: list[str], w: Array, lw: list[str], lo: list[str], sizes: dict[str, int],
              labels: tuple[list[str], list[str], list[str], list[str]], period: int, span: int,
              piece_elements: int, convert: Any) -> bool:
    """:func:`product_into` when the weights repeat (``contraction.fold-into``): ``w``'s axis ``b`` holds one
    period of every block of ``span`` batch positions (``span`` 0: the whole batch is one block), position ``b``
    reading entry ``(b // span) · period + b % period`` (:class:`~visa.engines.contraction.compute.TrfWindow`).
    The positions sharing an entry (one per group of ``period`` in the block) are stacked into one taller
    product by that entry's weights — the reference's ``matmul_16384``: the 8 row groups of slices that share a
    slice's weights, one 1024-row product instead of eight of 128 — and written into ``out`` converting as they go.
    The products and their sums are the same integers (exact in float32: the caller checks the term count); False
    (nothing written) when ``out`` is not a view of the product's matrices or the batch is not ``b`` alone."""
    batch, mm, kk, nn = labels
    if batch[:1] != ["b"] or any(sizes[lab] != 1 for lab in batch[1:]) or set(lo) != set(batch + mm + nn):
        return False
    nn = [lab for lab in lo if lab in nn]  # the output's own order: its rows are the product's rows
    mm = [lab for lab in lo if lab in mm]
    total = sizes["b"]
    span = span or total
    blocks, groups = total // span, span // period
    nm, nk, n_n = (math.prod(sizes[lab] for lab in part) for part in (mm, kk, nn))
    view = out.transpose([lo.index(lab) for lab in batch + mm + nn])
    target = view.reshape(total, nm, n_n)
    if out.size and not np.may_share_memory(target, out):
        return False  # (the output's axes do not merge: the reshape copied)
    target5 = target.reshape(blocks, groups, period, nm, n_n)  # (splits the first axis: a view)
    ta = a.transpose([la.index(lab) for lab in batch + mm + kk])
    ta = ta.reshape(blocks, groups, period, *ta.shape[1:])  # (the same)
    tw = w.transpose([lw.index(lab) for lab in batch + kk + nn])
    entries = blocks * period
    piece = max(1, min(-(-entries // 8), piece_elements // max(1, groups * nm * nk + nk * n_n)))

    def run(lo_: int, hi: int) -> None:
        for x in range(lo_ // period, (hi - 1) // period + 1):  # (a piece may reach over blocks)
            y0, y1 = max(lo_ - x * period, 0), min(hi - x * period, period)
            n = y1 - y0
            a2 = convert(ta[x, :, y0:y1], [1, 0, *range(2, ta.ndim - 1)], (n, groups * nm, nk))
            w2 = convert(tw[x * period + y0: x * period + y1], list(range(tw.ndim)), (n, nk, n_n))
            prod = np.matmul(a2, w2).reshape(n, groups, nm, n_n)
            np.copyto(target5[x, :, y0:y1], prod.transpose(1, 0, 2, 3), casting="unsafe")

    parallel_pieces(entries, piece, run)
    return True
