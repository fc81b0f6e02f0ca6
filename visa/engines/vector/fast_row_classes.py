"""Fast path ``vector.inter-shared-rows`` (issue 24): the classes of equal output rows that
:mod:`visa.engines.vector.fast_inter_shared` needs, found by a key of a few sampled columns, checked exactly row
by row, and the distinct rows sorted as bytes.

Without it, ``fast_inter_shared._unique_rows`` keys every row by a hash of all its elements (a full-size
product and sum: 16 MiB of int64 temporaries for a ring sum's 512 rows × 4,096 positions, touched for the first
time on a first launch), checks every row against its key's first by a full-size gather, and sorts the distinct
rows with ``np.unique(axis=0)`` (a structured sort: 14 ms for 65 rows × 4,096).  Both answer
``np.unique(rows, axis=0, return_inverse=True)``.  Here:

* the key of a row is a hash of at most 64 of its columns, evenly spaced (no full-size temporary);
* every row is compared with its key's first row exactly, a block of rows at a time (a small temporary reused);
  a row that differs (a key shared by two distinct rows) returns ``None`` and the caller takes the full hash;
* the distinct rows are sorted by their bytes: each int64 as big-endian with its sign bit flipped, so that the
  bytes of two rows compare as their elements do, first differing element first (``np.unique``'s order).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["ROWS", "from_labels", "from_row_constants", "unique_rows"]

ROWS = fastpaths.register("vector.inter-shared-rows", "the inter-shared row classes keyed by a few sampled columns, "
                                                      "checked row by row and sorted as bytes, not by a hash of "
                                                      "every element and np.unique(axis=0)")

IntArray = npt.NDArray[np.int64]

_COLUMNS = 64  # columns sampled into a row's key
_BLOCK = 1 << 16  # elements compared at a time (a 512 KiB temporary: 16 rows of 4,096 a step, not 2)


def unique_rows(rows: IntArray, weights: IntArray | None = None) -> tuple[IntArray, IntArray] | None:
    """``np.unique(rows, axis=0, return_inverse=True)`` (the inverse flat) of a 2-D integer array, or ``None``
    when two distinct rows share a key (``weights``, one per sampled column, replaces the hash's: a test passes
    zeros to give every row one key).

    >>> r = np.array([[3, 1], [0, 2], [3, 1], [-1, 2], [0, 1]])
    >>> u, inverse = np.unique(r, axis=0, return_inverse=True)
    >>> [a.tolist() for a in unique_rows(r)] == [u.tolist(), inverse.reshape(-1).tolist()]
    True
    """
    a = np.asarray(rows, dtype=np.int64)
    n, m = a.shape
    cols = np.unique(np.linspace(0, max(0, m - 1), min(m, _COLUMNS)).astype(np.int64))
    w: IntArray = (np.asarray(np.random.default_rng(0x5EED).integers(1, 1 << 62, size=cols.size), np.int64)
                   if weights is None else np.asarray(weights, dtype=np.int64))
    with np.errstate(over="ignore"):
        keys = (a[:, cols] * w).sum(axis=1) if m else np.zeros(n, dtype=np.int64)
    _, first, by_key = np.unique(keys, return_index=True, return_inverse=True)
    by_key = by_key.reshape(-1)
    rep = first[by_key]
    step = max(1, _BLOCK // max(1, m))
    for s in range(0, n, step):
        if not np.array_equal(a[s: s + step], a[rep[s: s + step]]):
            return None
    return _ranked(a[first], by_key)


def _ranked(distinct: IntArray, of: IntArray) -> tuple[IntArray, IntArray]:
    """``distinct`` (one row per class, in any order) sorted as ``np.unique(axis=0)`` sorts rows, and the rank of
    the class ``of[i]`` of each row in that order: each int64 as big-endian bytes with its sign bit flipped, so
    that two rows' bytes compare as their elements do, first differing element first."""
    flipped = (distinct.view(np.uint64) ^ np.uint64(1 << 63)).astype(">u8")
    keyed = [flipped[k].tobytes() for k in range(distinct.shape[0])]
    order = np.array(sorted(range(len(keyed)), key=keyed.__getitem__), dtype=np.int64)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return distinct[order], rank[of]


def from_labels(rows: IntArray, labels: IntArray) -> tuple[IntArray, IntArray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` (the inverse flat) of a 2-D integer array whose rows of
    one label are equal and rows of two labels differ (``vector.inter-row-labels``,
    :func:`visa.engines.vector.fast_inter_plan._row_labels`): one row of each label is read, not every row.

    >>> r = np.array([[3, 1], [0, 2], [3, 1], [-1, 2], [0, 2]])
    >>> u, inverse = np.unique(r, axis=0, return_inverse=True)
    >>> got = from_labels(r, np.array([7, 4, 7, -1, 4]))
    >>> [a.tolist() for a in got] == [u.tolist(), inverse.reshape(-1).tolist()]
    True
    """
    picked, of = _one_row_each(rows, labels)
    return _ranked(picked, of)


def from_row_constants(rows: IntArray | Callable[[IntArray], IntArray], labels: IntArray
                       ) -> tuple[IntArray, IntArray]:
    """:func:`from_labels` for labels that are the rows' constants (``vector.inter-row-labels``,
    :func:`visa.engines.vector.fast_inter_plan._row_labels`): -1 for a row of no valid position (all -1), else a
    constant ``k >= 0`` such that the row is ``k`` plus one column pattern of non-negative values where valid and -1
    elsewhere, the same pattern in every row.  Such rows compare as their labels do: an all -1 row is below every
    other (at the first column valid in the others, -1 against a value of at least 0), and two rows of constants
    ``k1 < k2`` are -1 alike up to that column and ``k1 + c < k2 + c`` there.  So the labels' order is
    ``np.unique``'s order of the rows, and the rows need not be compared or sorted: one row per label is read
    (``rows`` the array, or a function giving the rows at the indices it is passed).

    >>> r = np.array([[-1, 5, 6], [-1, -1, -1], [-1, 2, 3], [-1, 5, 6]])
    >>> u, inverse = np.unique(r, axis=0, return_inverse=True)
    >>> got = from_row_constants(r, np.array([3, -1, 0, 3]))
    >>> [a.tolist() for a in got] == [u.tolist(), inverse.reshape(-1).tolist()]
    True
    """
    return _one_row_each(rows, labels)


def _one_row_each(rows: IntArray | Callable[[IntArray], IntArray], labels: IntArray) -> tuple[IntArray, IntArray]:
    """The first row of each distinct label in the labels' ascending order (``rows`` the array, or a function giving
    the rows at the indices it is passed), and each row's index among them."""
    _, first, of = np.unique(np.asarray(labels, dtype=np.int64), return_index=True, return_inverse=True)
    picked = rows(first) if callable(rows) else np.asarray(rows, dtype=np.int64)[first]
    return np.asarray(picked, dtype=np.int64), of.reshape(-1)
