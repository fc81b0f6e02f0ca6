"""Batch positions whose weights repeat with a period laid out once: the fast path ``contraction.float-weight-period``
beside the f32 layout of ``contraction.float-steps`` (:func:`visa.engines.contraction.fast_steps.contract`), whose
bits it computes.

Slices given the same TRF contents (the GEMM example: one column block of B in the 16 slices of its ``J / 32``; the
tiled bf16 GEMM 1024³: 32 slices per block) repeat their weights every ``period`` batch positions, and the TRF
window keeps one period of them (:class:`~visa.engines.contraction.compute.TrfWindow` ``period``: known from the
replica ids of the writes, checked against the bytes with ``VISA_VERIFY_REPLICAS=1``, or found in the bytes).  The
float layout copied those repeats back out and converted every position's weights to f32 (the GEMM example: 256
copies of 16 distinct blocks).  With this path the distinct blocks are laid out once and the compiled loop
(:mod:`~visa.engines.contraction.fast_steps_jit`, :mod:`~visa.engines.contraction.fast_row_jit`,
:mod:`~visa.engines.contraction.fast_tree32`) multiplies each position's activations by the block ``b mod period``
— the same operands, so the same products and sums in the same order (L4386–4388, L4408, L4415–4431).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["PERIOD", "expand", "index"]

Array = npt.NDArray[Any]

PERIOD = fastpaths.register("contraction.float-weight-period", "batch positions whose weights repeat with a period "
                            "(the TRF window's) share one laid-out f32 block per distinct weight in the compiled "
                            "float loop, not one copy and conversion per position")


def expand(w: Array, axis: int, positions: int, period: int) -> Array:
    """``w`` (``period`` blocks along ``axis``) over all ``positions`` (position ``b`` holds block ``b mod period``):
    the repeats as a copy, what the layout reads when this path does not apply."""
    return np.take(w, np.arange(positions, dtype=np.int64) % period, axis=axis)


def index(lo: int, hi: int, period: int, rest: int) -> Array:
    """The laid-out weight block of each batch entry of positions ``lo .. hi - 1`` (each ``rest`` entries, the
    batch's later labels): position ``b`` reads the block of ``b mod period``."""
    pos = np.arange(lo, hi, dtype=np.int64) % period
    return (pos[:, None] * rest + np.arange(rest, dtype=np.int64)).reshape(-1)
