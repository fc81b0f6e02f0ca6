"""Fast path ``dma.raw-runs`` (issue 24): a DMA between two images whose runs are 16 bytes or longer moves each
run as one element of a raw-bytes dtype (``V<run>``), not as 8-byte words.

The reference (:func:`visa.memory.transfer._assign`, with ``dma.words``) assigns a strided view of the destination
from one of the source, 8, 4 or 2 bytes an element: a tensor DMA of 64-byte runs (a row of 64 i8 to each slice,
the peer matmul's lhs tile) is then a loop of 8 words per run, the run loop numpy's innermost.  Viewed as one
``V64`` element a run, the innermost loop is over the runs, each one ``memcpy`` of its bytes.  The bytes written
are the same (a raw copy of the same runs); source and destination are different buffers (two images: no byte
of the source can be overwritten before it is read), else the reference runs (``dma.disjoint-runs`` takes a
copy within one image).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["RAW", "assign"]

RAW = fastpaths.register("dma.raw-runs", "a DMA between two images moves each run of 16 bytes or more as one raw "
                                         "element (V<run>), not as 8-byte words")

#: Shortest run (bytes) moved as one raw element (shorter runs: words are as fast).
_MIN_RUN = 16


def assign(dst: npt.NDArray[Any], d_off: int, d_strides: tuple[int, ...], src: npt.NDArray[Any], s_off: int,
           s_strides: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """``view(dst) = view(src)`` over byte views of ``shape`` (flat arrays of one-byte items, as
    :func:`visa.memory.transfer._assign`) with each innermost run one raw element; False (nothing written)
    when the path is off, the innermost loop is not a run of at least 16 contiguous bytes on both sides, or the
    two arrays may share bytes."""
    if not (RAW.on and shape and shape[-1] >= _MIN_RUN and d_strides[-1] == 1 and s_strides[-1] == 1
            and dst.strides == (1,) and src.strides == (1,) and dst.itemsize == 1 and src.itemsize == 1):
        return False
    if np.may_share_memory(dst, src):
        return False
    run = np.dtype((np.void, shape[-1]))
    out: npt.NDArray[Any] = np.ndarray(shape[:-1], dtype=run, buffer=dst, offset=d_off, strides=d_strides[:-1])
    out[...] = np.ndarray(shape[:-1], dtype=run, buffer=src, offset=s_off, strides=s_strides[:-1])
    return True
