"""Fast path ``fetch.masked-read`` (issue 24): a masked fetch that ``fetch.masked-known`` reads whole fills its
padding band by band, while each band of the stream buffer is still in the cache.

``fetch.masked-known`` (:mod:`visa.engines.fast_masked`) reads a masked fetch whose unmasked positions were all
written as one strided copy of the nest into the stream buffer, then writes the pad value at the masked positions
(manual L1877–1935: masking writes ``pad_value`` into the padding, L1898): a second pass over the whole buffer —
a padded lane of every 32-byte packet is a write into every cache line, and by then the 16 MiB buffer of a large
fetch has left the cache (~0.2–0.26 ms of a 1.1 ms fetch, against ~0.14 ms for the same fill of a buffer in cache).
Here the elements are a view of the one chip's DM bytes (:func:`visa.memory.nest_view.nest_view`: what is owed in
the range made first, no pending copies), copied into the stream buffer :data:`BAND` rows (slices) at a time, each
band's masked positions filled right after its copy (the band's rows of :func:`~visa.engines.fast_masked.fill_views`,
made once a fetch: what :func:`~visa.engines.fast_masked.fill` assigns, the same cut and pad value).  The same bytes
land in the same places: the rows are disjoint and every row gets its copy, then its fill.
The same mask, cut and written-state test as ``fetch.masked-known`` (:func:`~visa.engines.fast_masked.written_cut`,
asked by the caller); one chip whose every slice holds the stream, no table, cast or zero point, no time
selection; anything else, or a nest that is no view of the image, goes that path's way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.common import StreamData
from visa.engines.fast_masked import Cut, fill_views
from visa.memory.known import known_everywhere
from visa.memory.nest_view import nest_view
from visa.memory.rowpool import ROW_POOL
from visa.memory.units import enabled_units

__all__ = ["MASKED_READ", "masked_read"]

MASKED_READ = fastpaths.register("fetch.masked-read", "a masked fetch read whole (fetch.masked-known) copies and "
                                 "fills its padding a band of slices at a time, not the whole buffer and then a "
                                 "second pass over it")

#: Stream rows (slices) copied and then filled together: 32 rows of a 16 MiB fetch are 1 MiB, within L2.
BAND = 32


def masked_read(cfg: Any, images: Any, lv: npt.NDArray[np.bool_], nest: tuple[int, tuple[tuple[int, int], ...]],
                cut: Cut, shape: tuple[int, ...]) -> StreamData | None:
    """The masked fetch's stream ``shape`` (Chip, Cluster, Slice, Time, Packet) in a pooled buffer (settled), every
    position known, read as the module docstring says, for a fetch whose mask ``fetch.masked-known`` found to be a
    cut of ``nest`` over written elements (the caller asked :func:`~visa.engines.fast_masked.written_cut`); None when
    this path does not read it (nothing read or written)."""
    if not MASKED_READ.on or len(images) != 1 or not bool(lv.all()) or cfg.table is not None \
            or cfg.cast is not None or cfg.zero_points or cfg.mask is None:
        return None
    storage = np.dtype(cfg.src.storage)
    if np.dtype(cfg.dst.storage) != storage:
        return None
    rows, positions = math.prod(shape[:3]), math.prod(shape[3:])  # (Chip · Cluster · Slice, Time · Packet)
    if math.prod(cut.sizes) != positions:
        return None
    view = nest_view(cfg.src, enabled_units(images[0], lv[0]), nest[0], nest[1])
    if view is None or view.size != rows * positions:
        return None
    src = view.view()
    try:
        src.shape = (rows, positions)  # (a view, or this path does not read it: no copy first)
    except (AttributeError, ValueError):
        return None
    pad = np.asarray(cfg.mask.pad_value).astype(storage)
    pooled, loan = ROW_POOL.take((rows, positions), storage, lv.reshape(-1))
    pads = fill_views(pooled, rows, cut, pad)  # (made once: a band's are their rows r to r + BAND)
    for r in range(0, rows, BAND):  # a band copied, then its masked positions filled while it is in the cache
        np.copyto(pooled[r:r + BAND], src[r:r + BAND])
        for view, value in pads:
            view[r:r + BAND] = value
    values = pooled if loan is None else loan.settle(None)  # (every row written: the padding of each too)
    return StreamData(values.reshape(shape), known_everywhere(shape))

