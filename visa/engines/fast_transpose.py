"""The Transpose Engine's fast path (:mod:`visa.fastpaths`): ``transpose.tiles`` computes exactly what
:func:`visa.engines.transpose.execute` computes by :func:`~visa.engines.transpose.source_index`, as array views of
each ``[in_rows × in_cols]`` tile and one copy per array (Unpack, Transpose, Trim, Align, L6841–6856); the
known-mask of an all-known stream is the tile's pattern, broadcast (no copy).

``transpose.known-rows`` (issue 24): a known-mask that is the same in every slice — its Chip, Cluster and Slice axes
broadcast, or its rows compared equal (the padded lanes of a stream, L6850, as the ``transpose 8 × 8 i8 blocks``
row of ``benchmarks/bench_engines.py`` holds them) — is transposed for one slice and broadcast over the others:
the same mask, where the tiles' copy would write a second stream-sized array as large as the values'.  The
comparison reads the mask once, a band of rows at a time, and stops at the first band that differs (the last row
is compared first: a mask that differs somewhere usually differs there).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import StreamData
from visa.engines.transpose import KNOWN_ROWS, TransposeConfig
from visa.memory.known import is_everywhere

__all__ = ["execute", "KNOWN_ROWS", "same_rows"]

#: Rows (slices) of the known-mask compared at once by :func:`same_rows` (64 rows of a 32 KiB row: 2 MiB).
BAND = 64


def execute(config: TransposeConfig, data: StreamData) -> StreamData:
    """:func:`visa.engines.transpose.execute` by tile views (the caller checked the data's shape)."""
    c = config
    lead = data.values.shape[:3]
    rows = min(c.out_rows, c.in_cols)

    def run(x: npt.NDArray[Any]) -> npt.NDArray[Any]:  # alignment padding is poison: value zero, known False
        at = x.shape[:3]
        tile = x.reshape(*at, c.iterations, c.in_rows, c.packets_per_col, c.in_packet)
        tile = tile[..., : c.elements_per_packet].reshape(*at, c.iterations, c.in_rows, c.in_cols)
        out = np.zeros((*at, c.iterations, c.out_rows, c.output_alignment), dtype=x.dtype)
        out[..., :rows, : c.in_rows] = np.swapaxes(tile, -1, -2)[..., :rows, :]
        return out.reshape(*at, c.out_time, c.output_alignment)

    known = data.known
    if is_everywhere(known):  # all known: the known-mask is the tile's pattern, broadcast (no copy)
        pattern = np.zeros((c.iterations, c.out_rows, c.output_alignment), dtype=bool)
        pattern[:, :rows, : c.in_rows] = True
        known = np.broadcast_to(pattern.reshape(c.out_time, c.output_alignment), (*lead, c.out_time,
                                                                                   c.output_alignment))
        return StreamData(run(data.values), known)
    one = same_rows(known) if KNOWN_ROWS.on else None
    if one is not None:  # (transpose.known-rows: one slice's mask transposed, broadcast over the slices)
        return StreamData(run(data.values), np.broadcast_to(run(one[None, None, None]),
                                                            (*lead, c.out_time, c.output_alignment)))
    return StreamData(run(data.values), run(np.broadcast_to(known, data.values.shape)))  # (a mask of the values' shape)


def same_rows(known: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_] | None:
    """The mask of the first slice (``known[0, 0, 0]``) when every slice's (the first three axes) is the same:
    the first three axes broadcast, or a C-ordered mask whose rows compare equal (a band at a time, the last row
    first); else None."""
    lead = known.shape[:3]
    n = math.prod(lead)
    if n == 0 or known.ndim < 4:
        return None
    first: npt.NDArray[np.bool_] = known[0, 0, 0]
    if n == 1 or all(s == 0 or k == 1 for s, k in zip(known.strides[:3], lead, strict=True)):
        return first
    if not known.flags.c_contiguous or known.dtype != np.bool_:
        return None
    flat = known.reshape(n, -1).view(np.uint8)
    if flat.shape[1] % 8 == 0:  # (whole words: compared 8 bytes at a time)
        flat = flat.view(np.uint64)
    row = flat[0]
    if not np.array_equal(flat[-1], row):
        return None
    for r in range(1, n - 1, BAND):
        if not bool((flat[r: min(r + BAND, n - 1)] == row).all()):
            return None
    return first
