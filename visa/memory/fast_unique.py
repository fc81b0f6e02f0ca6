"""Fast path ``memory.dense-unique`` (issue 24): ``np.unique`` of integer keys that span a small range — replica
labels, the owners of shared rows, classes of slices: a few hundred keys a call, a hundred calls a tile of the
peer matmul — by a table over their range (which values occur, their ranks by a running count) instead of
``np.unique``'s sort.  The same arrays: the sorted distinct values (in the keys' type), the index of each one's
first occurrence and the inverse (each key's rank), ``tests/memory/test_fast_unique.py`` checks it against
``np.unique``.  Keys spread wider than twice their count (plus a little) take ``np.unique`` itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["DENSE", "unique"]

IntArray = npt.NDArray[np.int64]

DENSE = fastpaths.register("memory.dense-unique", "np.unique of integer keys spanning a small range by a table "
                                                  "over the range (a running count ranks them), not a sort")

_SLACK = 64  # (a range this much wider than twice the keys still takes the table)


def unique(keys: npt.NDArray[Any], first: bool = False) -> tuple[npt.NDArray[Any], IntArray, IntArray]:
    """``np.unique(keys, return_index=first, return_inverse=True)`` of the flattened ``keys``: the distinct
    values, the index of each one's first occurrence (empty unless ``first``) and each key's rank."""
    k = np.asarray(keys).reshape(-1)
    if DENSE.on and k.dtype.kind in "iu" and k.size > 1:
        lo, hi = int(k.min()), int(k.max())
        span = hi - lo + 1
        if span <= 2 * k.size + _SLACK:
            off = k.astype(np.int64) - lo
            seen = np.zeros(span, dtype=bool)
            seen[off] = True
            rank = np.cumsum(seen, dtype=np.int64) - 1
            at = np.flatnonzero(seen)
            values = (at + lo).astype(k.dtype)
            index = np.empty(0, dtype=np.int64)
            if first:
                earliest = np.full(span, k.size, dtype=np.int64)
                np.minimum.at(earliest, off, np.arange(k.size, dtype=np.int64))
                index = earliest[at]
            return values, index, rank[off]
    if first:
        values, index, inverse = np.unique(k, return_index=True, return_inverse=True)
        return values, index.astype(np.int64), inverse.reshape(-1).astype(np.int64)
    values, inverse = np.unique(k, return_inverse=True)
    return values, np.empty(0, dtype=np.int64), inverse.reshape(-1).astype(np.int64)
