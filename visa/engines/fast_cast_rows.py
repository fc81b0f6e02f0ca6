"""Type casts over the slices that hold data (:mod:`visa.fastpaths`: ``fetch.cast-occupied``, ``cast.occupied``).

The reference adapter (:func:`visa.engines.fetch.adapt`, L1960–2021) casts the sequencer's whole output, one row
per (Chip, Cluster, Slice) position — 512 rows a chip, where a decode step's row-wise passes hold data in one to
96 of them.  A row that holds no data is poison, read as 0 (the fetch writes it so), and 0 casts to 0: this path
casts the data rows alone into a zeroed buffer.  It applies to a configuration whose only adapter stage is the
cast (no masking, whose pad value reaches rows without data; no table; no zero points), and leaves to the
reference a cast it would refuse, so that the refusal is the reference's own.

The Cast Engine's reference (:func:`visa.engines.cast.execute`, L6780–6784) likewise converts every slice of its
stream, a poisoned element as 0: ``cast.occupied`` converts the slices that hold a known element and leaves the
others' lanes 0 and unknown, what the reference gives them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.errors import DtypeError

__all__ = ["CAST_ROWS", "CAST_STREAM", "cast_occupied", "cast_stream_occupied"]

CAST_ROWS = fastpaths.register("fetch.cast-occupied", "the fetch's type cast converts the rows of the slices that "
                               "hold data and leaves the others 0 (0 casts to 0), not every row of the stream")


def cast_occupied(cfg: Any, values: npt.NDArray[Any], rows: npt.NDArray[np.bool_]) -> npt.NDArray[Any] | None:
    """``adapt``'s values for a cast-only configuration ``cfg`` whose sequencer output ``values`` (a row per
    position, ``rows`` True where a slice holds data; every other row 0) is cast from ``cfg.src`` to ``cfg.dst``:
    a new array of ``cfg.dst.storage``.  None (the caller runs the reference) when the path is off, another
    adapter stage is configured, every row holds data, or the cast refuses a value."""
    if not CAST_ROWS.on or cfg.cast is None or cfg.mask is not None or cfg.table is not None or cfg.zero_points:
        return None
    rows = np.asarray(rows, dtype=bool).reshape(-1)
    if rows.size == 0 or values.size % rows.size or bool(rows.all()):
        return None
    flat = values.reshape(rows.size, -1)
    out = np.zeros(flat.shape, dtype=cfg.dst.storage)
    if rows.any():
        try:
            out[rows] = dt.convert(flat[rows], cfg.src, cfg.dst)
        except DtypeError:
            return None
    return out.reshape(values.shape)


CAST_STREAM = fastpaths.register("cast.occupied", "the Cast Engine converts the slices whose stream holds a known "
                                 "element and leaves the others 0 and poison (a poisoned element converts as 0), "
                                 "not every slice of the stream")


def cast_stream_occupied(plan: Any, values: npt.NDArray[Any], known: npt.NDArray[np.bool_]
                         ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]] | None:
    """The Cast Engine's converted lanes and known-mask (:func:`visa.engines.cast.execute`, L6780–6784) for a
    stream ``(Chip, Cluster, Slice, …, lanes)`` some of whose slices hold no known element: the reference
    converts a poisoned element as 0, so such a slice's lanes are 0 (0 converts to 0) and unknown; the others
    are converted as the reference does.  None (the caller runs the reference) when the path is off, the
    known-mask is not the values' shape, at least half the slices hold a known element, or the conversion
    refuses a value."""
    if not CAST_STREAM.on or values.ndim < 4 or np.shape(known) != values.shape:
        return None
    lead = values.shape[:3]
    occupied = np.asarray(known).reshape(*lead, -1).any(axis=-1)
    count = int(np.count_nonzero(occupied))
    if 2 * count >= occupied.size:
        return None
    where = np.nonzero(occupied)
    sub_k = np.asarray(known[where])
    sub = np.where(sub_k, values[where], np.zeros((), dtype=values.dtype))
    try:
        converted = dt.convert(sub, plan.src, plan.dst, rounding=plan.rounding, overflow=plan.overflow)
    except DtypeError:
        return None
    out = np.zeros((*values.shape[:-1], plan.in_elements), dtype=plan.dst.storage)
    out[where] = converted
    mask = np.zeros((*values.shape[:-1], plan.out_elements), dtype=bool)
    lanes = mask[..., :plan.in_elements]  # (a view: the converted lanes; the padding stays poison)
    lanes[where] = sub_k
    return out, mask
