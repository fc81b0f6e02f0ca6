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

__all__ = ["INTO", "product_into"]

Array = npt.NDArray[Any]

INTO = fastpaths.register("contraction.product-into", "integer products exact in float32 written by each worker "
                                                      "into the output in its layout and type (weights converted in "
                                                      "the output's column order), not a float32 batch reordered "
                                                      "and converted after")


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
