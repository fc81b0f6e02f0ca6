"""Stream data whose slices repeat a few distinct rows, each computed once (issue 24).

An inter-slice reduce whose result is broadcast over the slices of its group (``Slice2`` with an axis the input
lacks, manual L6654–6672: the reference's ``matmul_16384`` reduces over 32 slices and leaves the sum in all 32)
gives a stream whose ``(Chip, Cluster, Slice)`` rows are copies of one another.  :class:`SharedRows` keeps each
distinct row once (``inner``, a stream of shape ``(1, 1, rows, Time, Packet)``) and which row every position
holds (``owner``).  Its ``values`` and ``known`` are the whole stream, made on first access (a consumer that does
not know the structure sees ordinary data); the engines that know it work on the distinct rows only — the Cast
Engine converts them (:mod:`visa.engines.fast_shared`), the Commit Engine writes one slice of each class and
leaves the others pending copies of it (:mod:`visa.engines.fast_shared`).

Its ``replicas`` are the owners: positions of equal owner hold the same values and known-mask
(:mod:`visa.memory.replicas`), which the register loads and the Contraction Engine use as they are.

>>> import numpy as np
>>> from visa.engines.common import StreamData
>>> inner = StreamData(np.array([5, 7], np.int32).reshape(1, 1, 2, 1, 1), np.ones((1, 1, 2, 1, 1), bool))
>>> d = SharedRows(inner, np.array([0, 0, 1, 1]), (1, 1, 4))
>>> d.values[0, 0, :, 0, 0].tolist(), d.replicas.tolist()
([5, 5, 7, 7], [0, 0, 1, 1])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from visa.engines.common import LazyData, StreamData, StreamLayout
from visa.engines.rows import CopiedRows
from visa.memory.known import is_everywhere, known_everywhere

__all__ = ["SharedRows"]

IntArray = npt.NDArray[np.int64]


class SharedRows(LazyData):
    """Stream data of leading shape ``lead`` (``(Chip, Cluster, Slice)``) whose flat row ``i`` is row ``owner[i]``
    of ``inner`` (``(1, 1, rows, Time, Packet)``); module docstring."""

    def __init__(self, inner: StreamData, owner: IntArray, lead: tuple[int, int, int]) -> None:
        assert inner.values.ndim == 5 and inner.values.shape[:2] == (1, 1) and owner.size == int(np.prod(lead))
        self.inner = inner
        self.owner = owner
        self.lead = lead
        self.replicas = owner

    @property
    def shape(self) -> tuple[int, ...]:
        """The whole stream's shape."""
        return (*self.lead, *self.inner.values.shape[3:])

    @property
    def rows(self) -> int:
        """How many distinct rows there are."""
        return int(self.inner.values.shape[2])

    def map(self, fn: Callable[[StreamData], StreamData]) -> SharedRows:
        """The same sharing over ``fn(inner)``: an operation that treats every row alike and keeps it a row."""
        return SharedRows(fn(self.inner), self.owner, self.lead)

    def as_copied(self) -> CopiedRows:
        """The same stream as :class:`~visa.engines.rows.CopiedRows`: the first position of each class holds its
        row, the others are copies of it not made (for the engines that read such rows, a register load)."""
        flat = self.owner
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
        src = first[inverse.reshape(-1)]
        moved = np.flatnonzero(src != np.arange(flat.size))
        tail = self.inner.values.shape[3:]
        buffer = np.empty(self.shape, dtype=self.inner.values.dtype)
        buffer.reshape(flat.size, *tail)[first] = self.inner.values.reshape(self.rows, *tail)[flat[first]]
        known = self.inner.known
        if is_everywhere(known):
            full = known_everywhere(self.shape)
        else:
            full = np.broadcast_to(known, self.inner.values.shape).reshape(self.rows, *tail)[flat].reshape(self.shape)
        return CopiedRows(buffer, full, moved.astype(np.int64), src[moved].astype(np.int64), self.owner)

    def _build(self) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.bool_]]:
        tail = self.inner.values.shape[3:]
        values = self.inner.values.reshape(self.rows, *tail)[self.owner].reshape(self.shape)
        known = self.inner.known
        if is_everywhere(known):
            return values, known_everywhere(self.shape)
        full = np.broadcast_to(known, self.inner.values.shape).reshape(self.rows, *tail)[self.owner]
        return values, full.reshape(self.shape)

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape, without making it."""
        assert self.shape == layout.shape, (self.shape, layout.shape)
