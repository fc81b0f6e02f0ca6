"""Byte images of the memory tiers (manual "Hello, TCP!" memories L134–140; "Memory and Stream" L1070–1093).

Every tier is a byte image that starts *poisoned*: a parallel mask records which bytes were ever written, and
a value loaded from an unwritten byte comes back marked unknown.  Engines move data only through
:func:`load` and :func:`store`, which address elements by *bit offset* so that 4-bit types pack two to a
byte (element 0 in the low nibble, docs/manual-notes.md "dtypes").

>>> import numpy as np
>>> from visa.dtypes import i4, i32
>>> img = DenseImage((2, 16))
>>> store(i32, img, np.array([0, 32]), np.array([[7, -1], [8, 9]]))
>>> vals, known = load(i32, img, np.array([0, 32, 64]))
>>> vals.tolist(), known.tolist()
([[7, -1, 0], [8, 9, 0]], [[True, True, False], [True, True, False]])
>>> store(i4, img, np.array([64, 68]), np.array([[3, -2], [1, 1]]))
>>> load(i4, img, np.array([64, 68]))[0].tolist()
[[3, -2], [1, 1]]
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.errors import AddressError

__all__ = ["DenseImage", "PagedImage", "Image", "load", "store", "ByteArray", "BoolArray", "IntArray"]

_GAP = 1 << 20  # a scatter whose indices leave a larger hole writes separate regions

ByteArray = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class DenseImage:
    """A dense byte image ``(..., nbytes)`` with a written-mask; allocated lazily by the operating system."""

    __slots__ = ("data", "written", "name")

    def __init__(self, shape: tuple[int, ...], name: str = "memory") -> None:
        self.data: ByteArray = np.zeros(shape, dtype=np.uint8)
        self.written: BoolArray = np.zeros(shape, dtype=bool)
        self.name = name

    @property
    def nbytes(self) -> int:
        """Bytes along the last axis (one slice, one row, ...)."""
        return int(self.data.shape[-1])

    def gather(self, byte_index: IntArray) -> tuple[ByteArray, BoolArray]:
        """Bytes at ``byte_index`` along the last axis, for every leading position: ``(..., len(index))``."""
        self._check(byte_index)
        return self.data[..., byte_index], self.written[..., byte_index]

    def scatter(self, byte_index: IntArray, values: ByteArray, mask: BoolArray | None = None) -> None:
        """Write bytes at ``byte_index`` (last axis); ``mask`` (same shape as values) selects which to write."""
        self._check(byte_index)
        if mask is None:
            self.data[..., byte_index] = values
            self.written[..., byte_index] = True
            return
        lead = self.data.shape[:-1]
        shape = np.broadcast_shapes(mask.shape, values.shape, (*lead, byte_index.shape[-1]))
        full = np.broadcast_to(mask, shape)
        nz = np.nonzero(full)
        where = (*nz[:-1], byte_index[nz[-1]])
        self.data[where] = np.broadcast_to(values, shape)[nz]
        self.written[where] = True

    def flat(self) -> tuple[ByteArray, BoolArray]:
        """The data and written-mask as flat (C-order) views: unit ``u`` (a slice, a row...) starts at
        ``u * nbytes``."""
        return self.data.reshape(-1), self.written.reshape(-1)

    def poison(self, lo: int, hi: int) -> None:
        """Mark bytes ``[lo, hi)`` of every unit unwritten (fresh, undefined memory)."""
        part = self.written[..., max(lo, 0): min(hi, self.nbytes)]
        if part.any():  # reading memory never touched is cheap; writing it would allocate it
            part[...] = False

    def _check(self, byte_index: IntArray) -> None:
        if byte_index.size and (int(byte_index.min()) < 0 or int(byte_index.max()) >= self.nbytes):
            lo, hi = int(byte_index.min()), int(byte_index.max())
            raise AddressError(f"bytes {lo}..{hi} fall outside the {self.nbytes}-byte {self.name}",
                               call=self.name, fix="move the tensor's address, or shrink its Element mapping")


class PagedImage:
    """A sparse byte image modelled by *region* (HBM: 48 GB per chip, manual L137, L2949).

    Only the byte ranges something touched exist: a sorted list of disjoint regions, each a contiguous byte
    array with its written-mask.  :meth:`window` returns contiguous views of ``[lo, hi)`` (creating or merging
    regions as needed), which is what a DMA's strided copy runs over; :meth:`gather` and :meth:`scatter` take
    arbitrary byte indices.  Bytes outside every region were never written: they read back as poison.

    >>> img = PagedImage(1 << 30)
    >>> data, written = img.window(4096, 4104)
    >>> data[:] = 7; written[:] = True
    >>> vals, known = img.gather(np.array([4095, 4096, 4103]))
    >>> vals.tolist(), known.tolist(), img.regions()
    ([0, 7, 7], [False, True, True], [(4096, 4104)])
    """

    __slots__ = ("size", "name", "_starts", "_data", "_written")

    def __init__(self, size: int, name: str = "HBM", page_bits: int = 20) -> None:
        del page_bits  # kept for compatibility: the image is no longer paged
        self.size = size
        self.name = name
        self._starts: list[int] = []
        self._data: list[ByteArray] = []
        self._written: list[BoolArray] = []

    @property
    def nbytes(self) -> int:
        return self.size

    def regions(self) -> list[tuple[int, int]]:
        """The ``[start, end)`` byte ranges that exist."""
        return [(s, s + d.size) for s, d in zip(self._starts, self._data, strict=True)]

    def _check_range(self, lo: int, hi: int) -> None:
        if lo < 0 or hi > self.size:
            raise AddressError(f"bytes {lo}..{hi} fall outside the {self.size}-byte {self.name}", call=self.name,
                               fix="HBM addresses run from 0 to the chip's capacity")

    def window(self, lo: int, hi: int) -> tuple[ByteArray, BoolArray]:
        """Contiguous (data, written) views of bytes ``[lo, hi)``; regions are created or merged as needed."""
        self._check_range(lo, hi)
        if hi <= lo:
            return np.zeros(0, np.uint8), np.zeros(0, bool)
        first = bisect.bisect_right(self._starts, lo) - 1
        if first >= 0 and self._starts[first] + self._data[first].size <= lo:
            first += 1
        first = max(first, 0)
        last = bisect.bisect_left(self._starts, hi)  # regions [first, last) overlap [lo, hi)
        if last - first == 1:
            s = self._starts[first]
            if s <= lo and hi <= s + self._data[first].size:
                return self._data[first][lo - s: hi - s], self._written[first][lo - s: hi - s]
        new_lo, new_hi = lo, hi
        if last > first:
            new_lo = min(lo, self._starts[first])
            new_hi = max(hi, self._starts[last - 1] + self._data[last - 1].size)
        data = np.zeros(new_hi - new_lo, np.uint8)
        written = np.zeros(new_hi - new_lo, bool)
        for k in range(first, last):
            s = self._starts[k]
            data[s - new_lo: s - new_lo + self._data[k].size] = self._data[k]
            written[s - new_lo: s - new_lo + self._data[k].size] = self._written[k]
        self._starts[first:last] = [new_lo]
        self._data[first:last] = [data]
        self._written[first:last] = [written]
        return data[lo - new_lo: hi - new_lo], written[lo - new_lo: hi - new_lo]

    def _check(self, byte_index: IntArray) -> None:
        if byte_index.size and (int(byte_index.min()) < 0 or int(byte_index.max()) >= self.size):
            self._check_range(int(byte_index.min()), int(byte_index.max()) + 1)

    def gather(self, byte_index: IntArray) -> tuple[ByteArray, BoolArray]:
        """Bytes at ``byte_index`` (any shape); bytes outside every region come back unknown."""
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check(idx)
        out = np.zeros(idx.shape, dtype=np.uint8)
        known = np.zeros(idx.shape, dtype=bool)
        if not idx.size or not self._starts:
            return out, known
        lo, hi = int(idx.min()), int(idx.max()) + 1
        for s, d, w in zip(self._starts, self._data, self._written, strict=True):
            if s >= hi or s + d.size <= lo:
                continue
            sel = (idx >= s) & (idx < s + d.size)
            out[sel] = d[idx[sel] - s]
            known[sel] = w[idx[sel] - s]
        return out, known

    def scatter(self, byte_index: IntArray, values: ByteArray, mask: BoolArray | None = None) -> None:
        """Write bytes at ``byte_index`` (same shape as values); ``mask`` selects which."""
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check(idx)
        vals = np.broadcast_to(values, idx.shape)
        sel = np.ones(idx.shape, dtype=bool) if mask is None else np.broadcast_to(mask, idx.shape)
        where, what = idx[sel], vals[sel]
        if not where.size:
            return
        order = np.argsort(where, kind="stable")
        where, what = where[order], what[order]
        cuts = np.nonzero(np.diff(where) > _GAP)[0] + 1
        for part_idx, part_val in zip(np.split(where, cuts), np.split(what, cuts), strict=True):
            lo = int(part_idx[0])
            data, written = self.window(lo, int(part_idx[-1]) + 1)
            data[part_idx - lo] = part_val
            written[part_idx - lo] = True

    def poison(self, lo: int, hi: int) -> None:
        """Mark bytes ``[lo, hi)`` unwritten (fresh, undefined memory)."""
        if hi > lo:
            written = self.window(lo, hi)[1]
            if written.any():  # a region just created is unwritten already; writing it would allocate it
                written[:] = False


Image = DenseImage | PagedImage


def _nbytes_per(dtype: type[dt.Scalar]) -> int:
    return max(1, dtype.image_bits // 8)


def load(dtype: type[dt.Scalar], image: Image, bit_offsets: npt.ArrayLike) -> tuple[npt.NDArray[Any], BoolArray]:
    """Load elements of ``dtype`` at ``bit_offsets`` (one element each; last axis of a dense image).

    Returns storage-typed values and a mask that is False where any byte of the element was never written.
    For a dense image the result has the image's leading shape followed by the offsets' shape.
    """
    offs = np.asarray(bit_offsets, dtype=np.int64)
    if dtype.image_bits == 4:
        raw, known = image.gather(offs >> 3)
        nib = np.where(((offs >> 2) & 1).astype(bool), raw >> 4, raw & 0xF).astype(np.uint8)
        return dt.from_bits(dtype, nib.astype(np.int64)), known
    if offs.size and np.any(offs & 7):
        raise AddressError(f"{dtype!r} elements must start on a byte boundary", call="load")
    nb = _nbytes_per(dtype)
    idx = (offs >> 3)[..., None] + np.arange(nb, dtype=np.int64)
    raw, known = image.gather(idx.reshape(-1) if isinstance(image, DenseImage) else idx)
    if isinstance(image, DenseImage):
        raw = raw.reshape(*raw.shape[:-1], *idx.shape)
        known = known.reshape(*known.shape[:-1], *idx.shape)
    flat = np.ascontiguousarray(raw).reshape(-1, nb)
    vals: npt.NDArray[Any] = dt.from_bytes(dtype, flat.reshape(-1), flat.shape[0]).reshape(raw.shape[:-1])
    return vals, np.asarray(known.all(axis=-1), dtype=bool)


def store(dtype: type[dt.Scalar], image: Image, bit_offsets: npt.ArrayLike, values: npt.ArrayLike,
          mask: npt.ArrayLike | None = None) -> None:
    """Store ``values`` (storage-typed or exactly representable) at ``bit_offsets``; ``mask`` selects elements.

    4-bit elements are merged into their bytes (read, modify, write of the other nibble).
    """
    offs = np.asarray(bit_offsets, dtype=np.int64)
    vals = dt.as_storage(dtype, values)
    sel: BoolArray | None = None if mask is None else np.asarray(mask, dtype=bool)
    if dtype.image_bits == 4:
        bits = (dt.to_bits(dtype, vals).astype(np.int64) & 0xF).astype(np.uint8)
        byte = offs >> 3
        high = ((offs >> 2) & 1).astype(bool)
        for half in (False, True):  # low nibbles first, then high ones: two may share a byte
            want = high == half if sel is None else (high == half) & sel
            if not np.any(want):
                continue
            cur, _ = image.gather(byte)
            new = (cur & 0x0F) | (bits << 4) if half else (cur & 0xF0) | bits
            image.scatter(byte, np.asarray(new, dtype=np.uint8), np.asarray(want))
        return
    if offs.size and np.any(offs & 7):
        raise AddressError(f"{dtype!r} elements must start on a byte boundary", call="store")
    nb = _nbytes_per(dtype)
    raw = dt.to_bytes(dtype, vals.reshape(-1)).reshape(*vals.shape, nb)
    idx = (offs >> 3)[..., None] + np.arange(nb, dtype=np.int64)
    bmask = None if sel is None else np.broadcast_to(sel[..., None], sel.shape + (nb,))
    if isinstance(image, DenseImage):
        lead = raw.shape[: raw.ndim - idx.ndim]
        image.scatter(idx.reshape(-1), raw.reshape(*lead, -1),
                      None if bmask is None else np.broadcast_to(bmask, raw.shape).reshape(*lead, -1))
    else:
        image.scatter(idx, np.broadcast_to(raw, idx.shape), bmask)
