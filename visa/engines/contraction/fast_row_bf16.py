"""One activation row on bf16 weights read where the TRF window holds them: the fast path
``contraction.float-row-bf16`` beside ``contraction.float-row-jit`` (:mod:`visa.engines.contraction.fast_row_jit`),
whose bits it computes.

A decode step's GEMV (one row ``m`` of activations) spends most of its contraction laying the weights out: the
TRF window's bf16 elements (L4085–4100) are copied, converted to f32, into a C-ordered ``w[b, s, n, j]`` before
the compiled loop reads them once (issue 25: about 80 % of the contraction's host time on SmolLM2's decode step).
Here the loop is given the window itself as a strided uint16 view over ``(b, s, n, j)`` — when each of those
groups of labels is one stride in the window (the decode GEMMs' ``n`` is the TRF Row and the column digit, whose
strides chain) — and widens each step's ``n × j`` block to f32 in a buffer of the first-level cache: a bf16 is
the f32 whose upper 16 bits are its bits (exact, every value and NaN alike), so the loop multiplies and adds the
same f32 values in the same order as ``contraction.float-row-jit`` (the tree's adjacent pairs, then the
accumulator in ascending step order, L4386–4388, L4408, L4415–4431): the same bits, compiled with fastmath off.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import ml_dtypes
import numpy as np

from visa import fastpaths
from visa.engines.contraction.fast_steps_jit import Array, Kernel, compile_loop, row_steps_bf16

__all__ = ["ROW_BF16", "kernel", "bits_view"]

ROW_BF16 = fastpaths.register("contraction.float-row-bf16", "one activation row on bf16 weights: the compiled loop "
                              "reads the TRF window's bits in place (a strided view), widening each step's block "
                              "in cache, not a laid-out f32 copy of the weights")

_BF16 = np.dtype(ml_dtypes.bfloat16)


@cache
def _compiled() -> Kernel | None:
    return compile_loop(row_steps_bf16, bits_weights=True)


def kernel() -> Kernel | None:
    """The compiled loop when this path is on and numba is installed, else None (the Reducer's tree and
    accumulator order, L4386–4388, L4408)."""
    return _compiled() if ROW_BF16.on else None


def _merged(sizes: Sequence[int], strides: Sequence[int]) -> tuple[int, int] | None:
    """The axes ``sizes``/``strides`` (outermost first) as one axis ``(size, stride)`` when they are one (each
    axis's stride the next one's times its size, axes of size 1 aside); else None."""
    kept = [(n, s) for n, s in zip(sizes, strides, strict=True) if n != 1]
    if not kept:
        return 1, 0
    for (_, outer), (n, inner) in zip(kept, kept[1:], strict=False):
        if outer != inner * n:
            return None
    size = 1
    for n, _ in kept:
        size *= n
    return size, kept[-1][1]


def bits_view(view: Array, groups: Sequence[Sequence[int]], sizes: Sequence[Sequence[int]]) -> Array | None:
    """The bf16 array ``view`` (axes of size 1 broadcast to their ``sizes``) as a uint16 view over one axis per
    group of its axes (``groups``, outermost first; ``sizes`` their sizes), when ``view`` is bf16 and each group
    is one stride; else None (the weights are then laid out).  The view reads the TRF window's elements
    (L4085–4100) where they are."""
    if view.dtype != _BF16:
        return None
    shape: list[int] = []
    steps: list[int] = []
    for axes, full in zip(groups, sizes, strict=True):
        got = _merged(full, [view.strides[k] if view.shape[k] > 1 else 0 for k in axes])
        if got is None:
            return None
        shape.append(got[0])
        steps.append(got[1])
    out: Array = np.lib.stride_tricks.as_strided(view.view(np.uint16), shape, steps, writeable=False)
    return out
