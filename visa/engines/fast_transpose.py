"""The Transpose Engine's fast path (:mod:`visa.fastpaths`): ``transpose.tiles`` computes exactly what
:func:`visa.engines.transpose.execute` computes by :func:`~visa.engines.transpose.source_index`, as array views of
each ``[in_rows × in_cols]`` tile and one copy per array (Unpack, Transpose, Trim, Align, L6841–6856); the
known-mask of an all-known stream is the tile's pattern, broadcast (no copy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import StreamData
from visa.engines.transpose import TransposeConfig
from visa.memory.known import is_everywhere

__all__ = ["execute"]


def execute(config: TransposeConfig, data: StreamData) -> StreamData:
    """:func:`visa.engines.transpose.execute` by tile views (the caller checked the data's shape)."""
    c = config
    lead = data.values.shape[:3]
    rows = min(c.out_rows, c.in_cols)

    def run(x: npt.NDArray[Any]) -> npt.NDArray[Any]:  # alignment padding is poison: value zero, known False
        tile = x.reshape(*lead, c.iterations, c.in_rows, c.packets_per_col, c.in_packet)
        tile = tile[..., : c.elements_per_packet].reshape(*lead, c.iterations, c.in_rows, c.in_cols)
        out = np.zeros((*lead, c.iterations, c.out_rows, c.output_alignment), dtype=x.dtype)
        out[..., :rows, : c.in_rows] = np.swapaxes(tile, -1, -2)[..., :rows, :]
        return out.reshape(*lead, c.out_time, c.output_alignment)

    if is_everywhere(data.known):  # all known: the known-mask is the tile's pattern, broadcast (no copy)
        pattern = np.zeros((c.iterations, c.out_rows, c.output_alignment), dtype=bool)
        pattern[:, :rows, : c.in_rows] = True
        known = np.broadcast_to(pattern.reshape(c.out_time, c.output_alignment), (*lead, c.out_time,
                                                                                   c.output_alignment))
        return StreamData(run(data.values), known)
    return StreamData(run(data.values), run(data.known))
