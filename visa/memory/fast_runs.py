"""Fast path ``dma.disjoint-runs`` (issue 24): a DMA whose source and destination lie in one image (DM → DM, a
cluster swap) copies its runs as one flat loop of whole runs, without numpy's temporary copy of the source.

The reference (:func:`visa.memory.transfer._assign`) assigns a strided view of the destination from one of the
source.  When both views are of the same buffer, numpy cannot tell from their extents that the bytes are
disjoint, and a multi-dimensional assignment then copies the whole source into a temporary first (two copies of
every byte, the second from a fresh allocation).  A DM → DM move of 32 KiB a slice is such a copy: its
destination rows and source rows interleave in the one image.

When the two views share no byte (:func:`numpy.shares_memory`, exact), the order in which the runs are copied
cannot change the result.  The loops are then ordered by destination stride and merged where they step over one
another on both sides (``(n0, d0, s0), (n1, d1, s1)`` with ``d0 = n1 · d1`` and ``s0 = n1 · s1``); when what is
left is one loop of runs of contiguous bytes on both sides, each run is one element of a ``V<run>`` (raw bytes)
dtype, and a one-dimensional assignment copies them with no temporary (numpy's one-dimensional copy needs
none).  Any other shape, or views that do share bytes, take the reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["RUNS", "runs", "assign"]

RUNS = fastpaths.register("dma.disjoint-runs", "a DMA within one image whose source and destination share no "
                          "byte copies its runs as one flat loop of raw runs, without numpy's temporary copy")

Loop = tuple[int, int, int]


def runs(shape: tuple[int, ...], d_strides: tuple[int, ...], s_strides: tuple[int, ...]) -> tuple[int, int, int,
                                                                                                     int] | None:
    """``(count, destination stride, source stride, run bytes)``: the byte visit of ``shape`` (strides in bytes on
    each side) as ``count`` runs of ``run`` contiguous bytes on both sides, or None when it is not one loop of
    runs (a negative or zero stride, loops that do not merge).

    >>> runs((8, 32, 8, 2, 4096), (1 << 25, 1 << 19, 4096, 1 << 24, 1), (1 << 25, 1 << 19, 4096, 1 << 24, 1))
    (512, 524288, 524288, 32768)
    >>> runs((4, 3), (1, 4), (3, 1)) is None                      # a transpose: no run of contiguous bytes
    True
    """
    loops: list[Loop] = [(n, d, s) for n, d, s in zip(shape, d_strides, s_strides, strict=True) if n != 1]
    if not loops or any(d <= 0 or s <= 0 for _, d, s in loops):
        return None
    loops.sort(key=lambda lp: lp[1], reverse=True)
    merged: list[Loop] = []
    for n, d, s in loops:
        merged.append((n, d, s))
        while len(merged) > 1:
            (n0, d0, s0), (n1, d1, s1) = merged[-2], merged[-1]
            if d0 != n1 * d1 or s0 != n1 * s1:
                break
            merged[-2:] = [(n0 * n1, d1, s1)]
    if merged[-1][1:] != (1, 1):
        return None
    run = merged[-1][0]
    if len(merged) == 1:
        return 1, run, run, run
    if len(merged) != 2:
        return None
    count, d, s = merged[0]
    return count, d, s, run


def assign(dst: npt.NDArray[Any], d_off: int, d_strides: tuple[int, ...], src: npt.NDArray[Any], s_off: int,
           s_strides: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """:func:`visa.memory.transfer._assign` of a source (flat one-byte arrays, byte strides) in the destination's
    own buffer, as one flat loop of raw runs (module docstring); False, nothing written, when this path does not
    apply (the buffers differ, or the views' extents do not meet: the reference copies once already)."""
    if not RUNS.on or dst.strides != (1,) or src.strides != (1,) or dst.itemsize != 1 or src.itemsize != 1:
        return False
    got = runs(shape, d_strides, s_strides)
    if got is None:
        return False
    count, d, s, run = got
    lo_d, lo_s = d_off, s_off  # the views' extents (bytes), which is all numpy compares before its temporary
    if min(lo_d + (count - 1) * d + run, lo_s + (count - 1) * s + run) <= max(lo_d, lo_s) \
            or not np.may_share_memory(dst, src):
        return False  # (extents apart, or two buffers: the reference copies once already)
    raw = np.dtype((np.void, run))
    dv: npt.NDArray[Any] = np.ndarray((count,), dtype=raw, buffer=dst, offset=d_off, strides=(d,))
    sv: npt.NDArray[Any] = np.ndarray((count,), dtype=raw, buffer=src, offset=s_off, strides=(s,))
    if np.shares_memory(dv, sv):  # (exact; two one-dimensional views: a small problem)
        return False
    dv[...] = sv
    return True
