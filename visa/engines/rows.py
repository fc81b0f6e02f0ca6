"""Stream data whose slices are partly copies of others, the copies made only when read (issue 15).

A fetch over DM slices that a broadcast DMA left as pending copies of one another (:mod:`visa.memory.pending`;
the GEMM example's B in the 16 row blocks of slices, manual L466–525) reads the same bytes for every slice of a
class.  :class:`CopiedRows` holds the stream with only the rows of the slices that hold the bytes filled, and
which rows are copies of which.  Its ``values`` are the whole stream, the copies made on first access (a
consumer that does not know the structure sees ordinary data); the engines that know it read the rows they need
(:meth:`CopiedRows.rows`): Collect passes the structure on, and a TRF or VRF load of replicated slices writes
one slice per class (:func:`visa.engines.collect.execute_load`).

>>> import numpy as np
>>> buf = np.zeros((1, 1, 4, 1, 2), np.int8); buf[0, 0, 0] = 5; buf[0, 0, 2] = 7
>>> d = CopiedRows(buf, np.ones(buf.shape, bool), np.array([1, 3]), np.array([0, 2]))
>>> d.rows()[0][0, 0, :, 0, 0].tolist()     # the copies not made
[5, 0, 7, 0]
>>> d.values[0, 0, :, 0, 0].tolist()        # made when the values are read
[5, 5, 7, 7]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import LazyData, StreamLayout

__all__ = ["CopiedRows"]

IntArray = npt.NDArray[np.int64]


class CopiedRows(LazyData):
    """Stream data ``(Chip, Cluster, Slice, Time, Packet)`` in ``buffer``, whose flat ``(Chip, Cluster, Slice)``
    rows ``dst`` are copies of rows ``src`` not made yet (module docstring).  ``buffer`` is the caller's to
    write (the copies are made into it); ``values`` hands it out read-only."""

    def __init__(self, buffer: npt.NDArray[Any], known: npt.NDArray[np.bool_], dst: IntArray, src: IntArray,
                 replicas: npt.NDArray[np.int64] | None = None) -> None:
        self._buffer = buffer
        self._known = known
        self.dst, self.src = dst, src
        self.replicas = replicas

    def rows(self) -> tuple[npt.NDArray[Any], IntArray]:
        """The buffer as it is (read-only; rows ``dst`` not made yet, unless ``values`` was read) and, per flat
        row, the row that holds its values."""
        owner = np.arange(int(np.prod(self._buffer.shape[:3])), dtype=np.int64)
        if self._made():  # (the values made, or set: those)
            return _read_only(self.values), owner
        owner[self.dst] = self.src
        return _read_only(self._buffer), owner

    def map(self, fn: Callable[[npt.NDArray[Any], npt.NDArray[np.bool_]],
                               tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]]) -> CopiedRows:
        """The same rows and copies over ``fn(buffer, known)``: a change that treats every row alike and keeps
        it a row (padding or splitting Time and Packet), applied to the rows as they are."""
        made = self._made()
        values, known = fn(self.values if made else self._buffer, self.known)
        out = CopiedRows(values, known, self.dst, self.src, self.replicas)
        if made:  # (the rows it was given are made already)
            out._values = _read_only(values)
        return out

    def _build(self) -> tuple[npt.NDArray[Any], None]:
        flat = self._buffer.reshape(int(np.prod(self._buffer.shape[:3])), -1)
        sources, inverse = np.unique(self.src, return_inverse=True)
        inverse = inverse.reshape(-1)
        for j, row in enumerate(sources.tolist()):  # one class at a time: its row read once
            flat[self.dst[inverse == j]] = flat[row]
        return _read_only(self._buffer), None

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape, without making the copies."""
        assert self._buffer.shape == layout.shape, (self._buffer.shape, layout.shape)
        assert self.known.shape == layout.shape


def _read_only(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    view = arr.view()
    view.flags.writeable = False
    return view
