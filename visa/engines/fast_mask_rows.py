"""Fast path ``fetch.mask-rows`` (issue 24): the masking stage's per-index ranges found for every index of the
masked axis at once, instead of one index at a time.

The Fetch Engine's plan (:func:`visa.engines.fetch._mask`, manual L1877–1935) asks, for each index ``i`` of the
masked axis, which packet digits hold an element (a row of ``used``): the first and one past the last, refusing
the mask when a row has a hole.  A first launch whose masked axis has a thousand indices (the row max of
``benchmarks/bench_first_launch.py``: ``C / 4`` by ``C % 4 # 8``) spent milliseconds in that loop; the same
ranges are two ``argmax`` reductions over the rows, and a hole is a row whose count of used digits is not its
range's width.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["ROWS", "row_ranges"]

ROWS = fastpaths.register("fetch.mask-rows", "the masking stage's per-index ranges of used packet digits found "
                          "for every index at once (two argmax reductions) instead of index by index")


def row_ranges(used: npt.NDArray[np.bool_]) -> tuple[list[int], list[int]] | None:
    """``(lo, hi)`` per row of ``used`` (``(indices, digits)``): the first used digit and one past the last,
    ``(0, 0)`` for a row with none; None when a row has a hole (an unused digit between two used ones)."""
    n = used.shape[1]
    some = used.any(axis=1)
    lo = np.where(some, np.argmax(used, axis=1), 0)
    hi = np.where(some, n - np.argmax(used[:, ::-1], axis=1), 0)
    if not np.array_equal(np.count_nonzero(used, axis=1), hi - lo):
        return None
    return lo.tolist(), hi.tolist()
