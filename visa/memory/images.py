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

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.errors import AddressError

__all__ = ["DenseImage", "PagedImage", "load", "store", "ByteArray", "BoolArray", "IntArray"]

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

    def _check(self, byte_index: IntArray) -> None:
        if byte_index.size and (int(byte_index.min()) < 0 or int(byte_index.max()) >= self.nbytes):
            lo, hi = int(byte_index.min()), int(byte_index.max())
            raise AddressError(f"bytes {lo}..{hi} fall outside the {self.nbytes}-byte {self.name}",
                               call=self.name, fix="move the tensor's address, or shrink its Element mapping")


class PagedImage:
    """A sparse byte image (HBM: 48 GB per chip is modelled by the pages actually touched, manual L2949)."""

    __slots__ = ("pages", "size", "name", "page_bits")

    def __init__(self, size: int, name: str = "HBM", page_bits: int = 20) -> None:
        self.pages: dict[int, tuple[ByteArray, BoolArray]] = {}
        self.size = size
        self.name = name
        self.page_bits = page_bits

    @property
    def nbytes(self) -> int:
        return self.size

    def _page(self, k: int, create: bool) -> tuple[ByteArray, BoolArray] | None:
        got = self.pages.get(k)
        if got is None and create:
            n = 1 << self.page_bits
            got = (np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=bool))
            self.pages[k] = got
        return got

    def _check(self, byte_index: IntArray) -> None:
        if byte_index.size and (int(byte_index.min()) < 0 or int(byte_index.max()) >= self.size):
            lo, hi = int(byte_index.min()), int(byte_index.max())
            raise AddressError(f"bytes {lo}..{hi} fall outside the {self.size}-byte {self.name}", call=self.name,
                               fix="HBM addresses run from 0 to the chip's capacity")

    def gather(self, byte_index: IntArray) -> tuple[ByteArray, BoolArray]:
        """Bytes at ``byte_index`` (any shape)."""
        self._check(byte_index)
        out = np.zeros(byte_index.shape, dtype=np.uint8)
        known = np.zeros(byte_index.shape, dtype=bool)
        pages = byte_index >> self.page_bits
        offs = byte_index & ((1 << self.page_bits) - 1)
        for k in np.unique(pages).tolist():
            page = self._page(int(k), create=False)
            if page is None:
                continue
            sel = pages == k
            out[sel] = page[0][offs[sel]]
            known[sel] = page[1][offs[sel]]
        return out, known

    def scatter(self, byte_index: IntArray, values: ByteArray, mask: BoolArray | None = None) -> None:
        """Write bytes at ``byte_index`` (same shape as values); ``mask`` selects which."""
        self._check(byte_index)
        vals = np.broadcast_to(values, byte_index.shape)
        sel_all = np.ones(byte_index.shape, dtype=bool) if mask is None else np.broadcast_to(mask, byte_index.shape)
        pages = byte_index >> self.page_bits
        offs = byte_index & ((1 << self.page_bits) - 1)
        for k in np.unique(pages[sel_all]).tolist():
            page = self._page(int(k), create=True)
            assert page is not None
            sel = (pages == k) & sel_all
            page[0][offs[sel]] = vals[sel]
            page[1][offs[sel]] = True


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
