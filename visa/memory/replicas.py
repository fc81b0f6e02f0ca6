"""Which units of an image hold the same bytes, known from how they were written (issue 15).

A layout that spreads a tensor over slices it does not split repeats it: the GEMM example (manual L466–525)
puts each row block of A in the 16 slices of its row, each column block of B in the 16 of its column, and B
again in every TRF.  The Contraction Engine shares one product among the slices that hold the same operands;
finding them by comparing the bytes costs a pass over every copy (16 MB each for A and B in that example).
Yet the DMA that made the copies knew: it read the same source bytes for each of them.

:class:`ReplicaIds` keeps, for every unit (a slice, a TRF row) and page of an image, a content id: two units
whose ids are equal and non-zero at a page hold the same bytes there, all written.  Ids are given by a write
that knows it wrote the same known bytes into several units (a DMA broadcasting its source over slices,
:func:`visa.memory.transfer.copy`; a register load of a stream whose slices are replicas,
:func:`visa.engines.collect.execute_load`), and taken away, over every unit, from every page any other write
reaches (:meth:`ReplicaIds.forget`, called by every write path of the image).  Readers turn the ids into
*labels* (:meth:`ReplicaIds.labels`): equal non-negative labels mean equal bytes; a negative label is unique.
A stream carries the labels of its slices (:class:`~visa.engines.common.StreamData` ``replicas``) through the
stages that treat every slice alike.

Nothing relies on a label without a fallback: where the labels prove nothing, the bytes are compared as
before.  With ``VISA_VERIFY_REPLICAS=1`` (the test suite sets it) every claim the labels make is checked
against the bytes as well (:func:`verifying`).

>>> rep = ReplicaIds(units=4, n=16, page=8)
>>> rep.record(np.array([0, 1, 2, 3]), np.array([5, 5, 7, 7]), 0, 16)
>>> rep.labels(np.arange(4), 0, 16).tolist()
[0, 0, 1, 1]
>>> rep.forget(8, 9)                     # a write into page 1 of some unit: no unit is sure of page 1 any more
>>> rep.labels(np.arange(4), 0, 8).tolist(), rep.labels(np.arange(4), 0, 16) is None
([0, 0, 1, 1], True)
"""

from __future__ import annotations

import functools
import os

import numpy as np
import numpy.typing as npt

__all__ = ["ReplicaIds", "verifying", "period_of", "fold_of", "same_in_blocks", "combine", "Labels"]

IntArray = npt.NDArray[np.int64]

#: Per position (a unit, a slice of a stream): equal non-negative labels ⇒ equal bytes; negative ones are unique.
Labels = npt.NDArray[np.int64]

_NEXT_ID = [1]  # the next content id to give (0 means none)


def verifying() -> bool:
    """Check every claim of the labels against the data too (``VISA_VERIFY_REPLICAS=1``; the test suite)."""
    return os.environ.get("VISA_VERIFY_REPLICAS") == "1"


def _fresh(n: int) -> int:
    """The first of ``n`` content ids never given before (in this process)."""
    first = _NEXT_ID[0]
    _NEXT_ID[0] += n
    return first


class ReplicaIds:
    """Content ids ``(units, pages)`` of an image whose units have ``n`` bytes in pages of ``page`` (module
    docstring); 0 means "nothing known"."""

    __slots__ = ("ids", "page", "n")

    def __init__(self, units: int, n: int, page: int) -> None:
        self.page, self.n = page, n
        self.ids: IntArray = np.zeros((units, -(-n // page)), np.int64)

    def forget(self, lo: int, hi: int, units: slice | IntArray | None = None) -> None:
        """Bytes ``[lo, hi)`` of ``units`` (of some units, when None) change: the pages they reach hold no id in
        those units (in any unit)."""
        if hi > lo:
            self.ids[slice(None) if units is None else units, lo // self.page: -(-hi // self.page)] = 0

    def record(self, units: IntArray, keys: npt.NDArray[np.int64], lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of ``units`` were just written with known bytes, the same in units of equal
        ``keys``: the pages wholly inside the range get one new id per key (the partial pages at its ends
        keep none: their other bytes were not written here)."""
        p0 = -(-lo // self.page)
        p1 = self.ids.shape[1] if hi >= self.n else hi // self.page  # (the last page may be short)
        if p1 <= p0 or not units.size:
            return
        _, inverse = np.unique(keys, return_inverse=True)
        first = _fresh(int(inverse.max()) + 1)
        self.ids[units, p0:p1] = (first + inverse.reshape(-1))[:, None]

    def labels(self, units: IntArray, lo: int, hi: int) -> Labels | None:
        """Labels of ``units`` (in that order) for bytes ``[lo, hi)``: equal non-negative labels where every
        page the range reaches has the same non-zero id; None when no two units are known to be equal."""
        if hi <= lo or not units.size:
            return None
        rows = self.ids[units, lo // self.page: -(-hi // self.page)]
        ok = (rows != 0).all(axis=1)
        if int(ok.sum()) < 2:
            return None
        out = -np.arange(1, units.size + 1, dtype=np.int64)
        classes = _classes(rows[ok])
        if int(classes.max()) + 1 == classes.size:
            return None  # all different
        out[ok] = classes
        return out


def _classes(rows: IntArray) -> IntArray:
    """A class index per row of ``rows`` (``(n, k)``): equal rows, equal classes (``np.unique(axis=0)``'s
    inverse, without its sort of structured rows: one column when all columns agree, else a lexical sort)."""
    if rows.shape[1] == 1 or bool((rows == rows[:, :1]).all()):
        inverse: npt.NDArray[np.int64] = np.unique(rows[:, 0], return_inverse=True)[1].reshape(-1).astype(np.int64)
        return inverse
    order = np.lexsort(rows.T[::-1])
    ranked = rows[order]
    new = np.concatenate(([True], (ranked[1:] != ranked[:-1]).any(axis=1)))
    out = np.empty(rows.shape[0], np.int64)
    out[order] = np.cumsum(new) - 1
    return out


def combine(*parts: Labels) -> Labels:
    """Labels of tuples: positions are equal when they are equal in every part (each of the same length)."""
    stack = np.stack(parts, axis=1)
    ok = (stack >= 0).all(axis=1)
    out = -np.arange(1, stack.shape[0] + 1, dtype=np.int64)
    if ok.any():
        out[ok] = _classes(stack[ok])
    return out


def period_of(labels: Labels | None) -> int:
    """The smallest ``p`` < ``n`` dividing ``n`` (the positions) with ``labels[b] == labels[b mod p]`` (equal
    bytes) for every ``b``, or 0 when the labels show none.

    >>> period_of(np.array([0, 1, 0, 1, 0, 1])), period_of(np.array([0, 1, -3, 1]))
    (2, 0)
    """
    if labels is None:
        return 0
    n = labels.size
    for p in range(1, n):
        if n % p:
            continue
        block = labels.reshape(n // p, p)
        if bool((block[0] >= 0).all()) and bool((block == block[:1]).all()):
            return p
    return 0


def fold_of(labels: Labels | None) -> tuple[int, int]:
    """``(period, span)``: the positions repeat with ``period`` within each block of ``span`` positions —
    ``labels[b] == labels[(b // span) · span + b % period]`` (equal bytes) for every ``b`` — ``span`` dividing
    ``n`` (the positions) and ``period`` dividing ``span``, the fold with the most positions per distinct entry
    (``span / period``, at least 2; the larger span on a tie), or ``(0, 0)`` when the labels show none.  A
    :func:`period_of` is a fold whose span is ``n``.

    >>> fold_of(np.array([0, 1, 0, 1, 2, 3, 2, 3])), fold_of(np.array([0, 0, 1, 1])), fold_of(np.array([0, 1, 2]))
    ((2, 4), (1, 2), (0, 0))
    """
    if labels is None:
        return 0, 0
    return _fold(np.ascontiguousarray(labels, dtype=np.int64).tobytes())


@functools.lru_cache(maxsize=64)
def _fold(data: bytes) -> tuple[int, int]:
    """:func:`fold_of` of the labels whose int64 bytes are ``data`` (kept: a kernel's register loads give the same
    labels again and again, and the search compares some dozens of reshapes)."""
    labels = np.frombuffer(data, dtype=np.int64)
    n = labels.size
    best, found = 1, (0, 0)
    for span in range(n, 1, -1):
        if n % span or span <= best:
            continue
        for p in range(1, span):
            if span % p:
                continue
            if span // p <= best:
                break
            block = labels.reshape(n // span, span // p, p)
            if bool((block[:, 0] >= 0).all()) and bool((block == block[:, :1]).all()):
                best, found = span // p, (p, span)
                break
    return found


def same_in_blocks(labels: Labels | None, groups: int, period: int) -> bool:
    """Do the labels show that positions ``g · period + j`` hold the same bytes for every ``j`` of each block
    ``g`` (``groups`` blocks)?

    >>> same_in_blocks(np.array([3, 3, 0, 0]), 2, 2), same_in_blocks(np.array([3, 3, 0, -4]), 2, 2)
    (True, False)
    """
    if labels is None or labels.size != groups * period:
        return False
    block = labels.reshape(groups, period)
    return bool((block >= 0).all()) and bool((block == block[:, :1]).all())
