"""Stream buffers whose rows without data stay zero from one use to the next (issue 15).

A stream holds one row of values per ``(Chip, Cluster, Slice)`` position, and a position that holds no data (a
padded cluster, ``m["1 # 2"]``; slices a mapping leaves out) is poison, whose values read as 0 (manual
L1071–1093; the fetch's convention, :mod:`visa.engines.fetch`).  Writing those zeros again on every launch is a
pass over memory that is not in cache: in the GEMM example half of each fetch's 32 MiB is a padded cluster, and
writing its 16 MiB of zeros took 2.2 ms a fetch, more than the 1.2 ms of reading the data rows.

:class:`RowPool` keeps the buffers of dead streams by shape and type, with the rows each may have written.  The
next stream of that shape takes one back once nothing refers to it any more (its reference count, as
:class:`~visa.memory.arena.Arena`), zeroes only the rows that were written then and hold no data now, and
leaves the caller to write every data row.  The caller hands the buffer out read-only (:meth:`Loan.settle`), so
that no consumer can write a row the pool believes zero.

>>> import numpy as np
>>> pool = RowPool(per_shape=1, least=0)
>>> rows = np.array([True, False, True, False])
>>> buf, loan = pool.take((4, 8), np.dtype(np.int16), rows)
>>> buf[rows] = 7                                 # the caller writes every data row
>>> out = loan.settle(rows)                       # read-only, the rows it wrote recorded
>>> out.flags.writeable, int(out[~rows].sum())
(False, 0)
>>> del buf, out
>>> buf, loan = pool.take((4, 8), np.dtype(np.int16), ~rows)   # reused: the old data rows cleared
>>> pool.reused, int(buf[rows].sum())
(1, 0)
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["RowPool", "Loan", "ROW_POOL", "POOL", "MAX_BYTES"]

POOL = fastpaths.register("memory.rowpool", "stream buffers are reused with their rows without data kept zero, "
                          "instead of allocated and zeroed for every fetch")

BoolArray = npt.NDArray[np.bool_]

#: Bytes a :class:`RowPool` keeps at most by default (over every shape): a SmolLM2 decode step's stream buffers
#: (its weights' fetches of 512 rows × 32 columns × K: 25, 19, 7 and 2 MB, and the smaller ones) fit, so that they
#: are reused step after step; at 32 MB each block's 25 MB and 19 MB buffers evicted each other, about 270 fresh
#: allocations per step at 2–3 ms each (issue 25).  Nominal bytes: a buffer's pages are resident only where
#: rows were written (its rows without data are never touched, :meth:`RowPool.take`).
MAX_BYTES = 64 << 20


class Loan:
    """One buffer lent by a :class:`RowPool`: the owner array and the rows that may hold non-zeros; ``zeroed``:
    the buffer held only zeros when lent (new memory), so a borrower that writes some positions of its data rows
    finds zeros at the others."""

    __slots__ = ("owner", "dirty", "_pool", "stamp", "zeroed")

    def __init__(self, owner: npt.NDArray[Any], dirty: BoolArray, pool: RowPool, zeroed: bool = False) -> None:
        self.owner, self.dirty, self._pool = owner, dirty, pool
        self.stamp = 0  # when it was last given back (the pool's count): the oldest goes first past the byte cap
        self.zeroed = zeroed

    def settle(self, written: BoolArray | None = None) -> npt.NDArray[Any]:
        """The buffer, read-only, given back to the pool for when it dies: ``written`` (one bool per row) are
        the rows that may now hold non-zeros; None says all of them (the caller wrote past its data rows)."""
        rows = self.owner.shape[0]
        self.dirty = np.ones(rows, dtype=bool) if written is None else np.array(written, dtype=bool).reshape(rows)
        out = self.owner.view()
        out.flags.writeable = False
        self._pool._give(self)
        return out

    def free(self) -> bool:
        """Nothing but the pool refers to the buffer (no array made from it is alive)."""
        # the loan's reference and getrefcount's argument; every view made from the owner adds one (its base)
        return sys.getrefcount(self.owner) <= 2


def _zero_rows(out: npt.NDArray[Any], rows: BoolArray) -> None:
    """Zero the rows ``rows`` of ``out`` (C-contiguous) through a byte view: the same bytes as ``out[rows] = 0``
    for every storage type (0 is all zero bytes), without numpy's per-element cast of the scalar into a
    bfloat16 or float array (25–40x slower on a decode step's 512-row streams: issue 25's wall time)."""
    if out.size:
        out.view(np.uint8).reshape(out.shape[0], -1)[rows] = 0


class RowPool:
    """Buffers of dead streams by shape and type, with the rows that may hold non-zeros (module docstring).

    ``per_shape`` bounds the buffers kept for one shape and type; ``max_bytes`` the bytes kept over all shapes
    (past it the buffers given back longest ago go first: a program that moves on to other shapes — a model's
    prefill, then its decode steps — does not keep the old ones' buffers, issue 25); ``least`` is the smallest
    buffer kept (in bytes: a small one costs less to clear than to track); ``reused`` counts the buffers handed
    out again.
    """

    __slots__ = ("_kept", "per_shape", "least", "reused", "enabled", "path", "max_bytes", "_given")

    def __init__(self, per_shape: int = 4, enabled: bool = True, least: int = 1 << 20,
                 path: fastpaths.FastPath | None = None, max_bytes: int = MAX_BYTES) -> None:
        self._kept: dict[tuple[tuple[int, ...], str], list[Loan]] = {}
        self.per_shape, self.least, self.reused, self.enabled = per_shape, least, 0, enabled
        self.path = path  # the fast path that switches this pool (the fetch's: memory.rowpool)
        self.max_bytes = max_bytes
        self._given = 0

    @property
    def kept_bytes(self) -> int:
        """Bytes of the buffers the pool keeps (in use elsewhere or free)."""
        return sum(loan.owner.nbytes for kept in self._kept.values() for loan in kept)

    def take(self, shape: tuple[int, ...], dtype: np.dtype[Any],
             data_rows: BoolArray) -> tuple[npt.NDArray[Any], Loan | None]:
        """A writable buffer of ``shape`` (rows along the first axis) whose rows outside ``data_rows`` are zero;
        the rows in ``data_rows`` hold anything, and the caller writes every one of them, then calls
        :meth:`Loan.settle` (with no loan, the buffer is the caller's own)."""
        rows = np.asarray(data_rows, dtype=bool).reshape(shape[0])
        nbytes = math.prod(shape) * dtype.itemsize  # (of a tuple of ints: numpy's prod makes an array of it first)
        if not self.enabled or (self.path is not None and not self.path.on) or nbytes < self.least:
            if 2 * int(np.count_nonzero(rows)) <= rows.size:  # (most rows zeroed: the whole buffer at once, the
                return np.zeros(shape, dtype=dtype), None  # data rows too — the caller writes them anyway)
            out = np.empty(shape, dtype=dtype)
            _zero_rows(out, ~rows)
            return out, None
        kept = self._kept.get((shape, dtype.str), [])
        for i in range(len(kept) - 1, -1, -1):  # the last given first: its memory is the one touched lately
            loan = kept[i]
            if loan.free():
                del kept[i]
                stale = loan.dirty & ~rows
                if stale.any():
                    _zero_rows(loan.owner, stale)
                loan.dirty = np.ones(shape[0], dtype=bool)  # until settled: anything may be written
                loan.zeroed = False  # (its data rows hold what the last borrower wrote)
                self.reused += 1
                return loan.owner, loan
        # zeroed by the allocator (calloc: a large buffer's pages come zero from the OS, and those of rows without
        # data are never touched unless read), not by a pass of writes over them
        owner = np.zeros(shape, dtype=dtype)
        return owner, Loan(owner, np.ones(shape[0], dtype=bool), self, zeroed=True)

    def _give(self, loan: Loan) -> None:
        kept = self._kept.setdefault((loan.owner.shape, loan.owner.dtype.str), [])
        if any(k is loan for k in kept):
            return
        if len(kept) >= self.per_shape:  # full: let go of one still in use elsewhere, else the oldest
            held = [i for i, k in enumerate(kept) if not k.free()]
            del kept[held[0] if held else 0]
        self._given += 1
        loan.stamp = self._given
        kept.append(loan)
        total = self.kept_bytes
        while total > self.max_bytes:  # over the byte cap: the one given back longest ago goes (maybe this one)
            key, i = min(((k, i) for k, ls in self._kept.items() for i in range(len(ls))),
                         key=lambda ki: self._kept[ki[0]][ki[1]].stamp)
            total -= self._kept[key].pop(i).owner.nbytes
            if not self._kept[key]:
                del self._kept[key]

    def clear(self) -> None:
        """Let every kept buffer go."""
        self._kept.clear()


#: The pool of the fetch's stream buffers; off with the fast path ``memory.rowpool``.
ROW_POOL = RowPool(enabled=hasattr(sys, "getrefcount"), path=POOL)
