"""Writes a dense image owes its bytes, made only when something needs those bytes (issue 15).

Two kinds, both cheaper to remember than to make:

- **Fills.**  An image that takes the memory of a dead one (:mod:`visa.memory.arena`) must read as fresh memory:
  zeros wherever the dead image wrote.  That region (a box: a range of units × a range of bytes) is a pending
  fill.  A write that covers a byte range of every unit of the fill writes those bytes anyway: it takes the
  range out of the fill, so that the zeros are never written (:meth:`Pending.cover`).
- **Copies.**  A DMA that broadcasts known bytes over units (a stride-0 source loop: the GEMM example's A over its
  16 column blocks, manual L466–525) writes one unit of each class; bytes ``[lo, hi)`` of the others are pending
  copies of it (:meth:`Pending.copy`).  Their written-state and replica ids are already the copy's (the DMA marked
  them, :mod:`visa.memory.transfer`); only the bytes wait.  A loop-nest read of those bytes reads each unit's
  bytes from the unit that holds them (:meth:`Pending.sources`).

Every access to an image's bytes goes through :attr:`~visa.memory.images.DenseImage._data`, which makes all that is
pending; the paths that say which bytes they touch make only what reaches those bytes
(:meth:`~visa.memory.images.DenseImage._raw`).  Pending copies never overlap one another, nor a pending fill of
their units: recording one makes whatever reached its bytes first.

>>> import numpy as np
>>> rows = np.arange(4 * 6, dtype=np.uint8).reshape(4, 6)     # what a dead image left
>>> p = Pending(units=4)
>>> p.fill(0, 4, 0, 6)
>>> p.cover(0, 4, 0, 3)                                       # a write of bytes 0..2 of every unit
>>> rows[:, :3] = 7; rows[0, :3] = 1                           # ... which writes unit 0 only,
>>> p.copy(np.array([1, 2, 3]), np.array([0, 0, 0]), 0, 3)     # the others being copies of it
>>> p.sources(np.arange(4), 0, 3).tolist()
[0, 0, 0, 0]
>>> p.make(rows, 0, 6)
>>> rows.tolist()
[[1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0]]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Pending"]

IntArray = npt.NDArray[np.int64]

#: A pending fill: zeros in bytes ``[lo, hi)`` of units ``[u_lo, u_hi)``.
Fill = tuple[int, int, int, int]
#: A pending copy: bytes ``[lo, hi)`` of units ``dst`` are those of units ``src``.
Copy = tuple[IntArray, IntArray, int, int]


def _meets(lo: int, hi: int, a: int, b: int) -> bool:
    return lo < b and a < hi


class Pending:
    """The pending fills and copies of one image of ``units`` units (module docstring)."""

    __slots__ = ("units", "fills", "copies")

    def __init__(self, units: int) -> None:
        self.units = units
        self.fills: list[Fill] = []
        self.copies: list[Copy] = []

    def __bool__(self) -> bool:
        return bool(self.fills or self.copies)

    def fill(self, u_lo: int, u_hi: int, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of units ``[u_lo, u_hi)`` are to read as zeros (they hold what a dead image left)."""
        if hi > lo and u_hi > u_lo:
            self.fills.append((u_lo, u_hi, lo, hi))

    def copy(self, dst: IntArray, src: IntArray, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of units ``dst`` are to be those of units ``src`` (one each, none in ``dst``), which
        hold them now.  The caller made whatever was pending there first (:meth:`make`)."""
        if hi > lo and dst.size:
            assert not any(_meets(lo, hi, a, b) for _, _, a, b in self.copies), "pending copies overlap"
            self.copies.append((dst.astype(np.int64), src.astype(np.int64), lo, hi))

    def cover(self, u_lo: int, u_hi: int, lo: int, hi: int) -> None:
        """Every byte ``[lo, hi)`` of units ``[u_lo, u_hi)`` is about to be written (or left a pending copy):
        the fills there need not be made.  A fill with units outside that range keeps the range (it is made
        when something reaches it)."""
        out: list[Fill] = []
        for f in self.fills:
            f_ulo, f_uhi, a, b = f
            if not _meets(lo, hi, a, b) or not (u_lo <= f_ulo and f_uhi <= u_hi):
                out.append(f)
                continue
            if a < lo:
                out.append((f_ulo, f_uhi, a, lo))
            if hi < b:
                out.append((f_ulo, f_uhi, hi, b))
        self.fills = out

    def drop(self, u_lo: int, u_hi: int, lo: int, hi: int) -> None:
        """Every byte ``[lo, hi)`` of units ``[u_lo, u_hi)`` is about to be written: the copies wholly inside that
        box are not made (their bytes would be overwritten); the others stay."""
        self.copies = [c for c in self.copies if not (lo <= c[2] and c[3] <= hi and c[0].size
                                                      and u_lo <= int(c[0].min()) and int(c[0].max()) < u_hi)]

    def make(self, rows: npt.NDArray[np.uint8], lo: int, hi: int, copies: bool = True) -> None:
        """Make what is pending in bytes ``[lo, hi)`` of ``rows`` (the image as ``(units, bytes)``): the fills'
        part there, and (``copies``) every copy that reaches those bytes (whole)."""
        if self.fills:
            out: list[Fill] = []
            for f in self.fills:
                f_ulo, f_uhi, a, b = f
                if not _meets(lo, hi, a, b):
                    out.append(f)
                    continue
                rows[f_ulo:f_uhi, max(a, lo):min(b, hi)] = 0
                if a < lo:
                    out.append((f_ulo, f_uhi, a, lo))
                if hi < b:
                    out.append((f_ulo, f_uhi, hi, b))
            self.fills = out
        if copies and self.copies:
            keep: list[Copy] = []
            for c in self.copies:
                dst, src, a, b = c
                if _meets(lo, hi, a, b):
                    rows[dst, a:b] = rows[src, a:b]
                else:
                    keep.append(c)
            self.copies = keep

    def sources(self, units: IntArray, lo: int, hi: int) -> IntArray | None:
        """For a read of bytes ``[lo, hi)`` of ``units``: the unit that holds each one's bytes (itself, or the
        source of its pending copy), when one pending copy holds all of those bytes; else None (the caller
        makes what is pending there and reads the units themselves).  Fills there must have been made."""
        for dst, src, a, b in self.copies:
            if not _meets(lo, hi, a, b):
                continue
            if not (a <= lo and hi <= b):
                return None
            owner = np.arange(self.units, dtype=np.int64)
            owner[dst] = src
            out: IntArray = owner[units]
            return out
        return None

    def fill_box(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """``((lo, hi), (u_lo, u_hi))`` bounding the fills not made (bytes that still hold what a dead image
        left), or None."""
        if not self.fills:
            return None
        return ((min(f[2] for f in self.fills), max(f[3] for f in self.fills)),
                (min(f[0] for f in self.fills), max(f[1] for f in self.fills)))
