"""The Fetch Adapter's type cast over the slices that hold data (:mod:`visa.fastpaths`: ``fetch.cast-occupied``).

The reference adapter (:func:`visa.engines.fetch.adapt`, L1960–2021) casts the sequencer's whole output, one row
per (Chip, Cluster, Slice) position — 512 rows a chip, where a decode step's row-wise passes hold data in one to
96 of them.  A row that holds no data is poison, read as 0 (the fetch writes it so), and 0 casts to 0: this path
casts the data rows alone into a zeroed buffer.  It applies to a configuration whose only adapter stage is the
cast (no masking, whose pad value reaches rows without data; no table; no zero points), and leaves to the
reference a cast it would refuse, so that the refusal is the reference's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.errors import DtypeError

__all__ = ["CAST_ROWS", "cast_occupied"]

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
