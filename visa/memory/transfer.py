"""Running a DMA's byte-level sequencer over the memory images (manual "DMA Sequencer Internals", L2555–2594).

A DMA moves bytes: its fused sequencer is a list of loops ``(size, source stride, destination stride)`` in
bytes, outermost first, whose innermost loop is the packet (``stride0`` consecutive bytes on both sides), plus
a base address on each side.  Each side addresses its medium in the DMA's *address space*
(:class:`AddressSpace`): chip after chip, and on DM slice after slice ``hw.dm.slice_address_space_bytes``
apart (the "slice_stride" of L2541), of which only ``hw.dm.slice_bytes`` exist.

:func:`copy` runs such a sequencer as one strided numpy copy per pair of chips: a loop of the sequencer is
a dimension of a strided view of the image (its stride converted from the address space to the image), so
the copy visits exactly the bytes the sequencer visits, in the order numpy chooses (the bytes a sequencer
writes are distinct, so the order does not matter).  The written-state travels with the data (a DMA of
poison is poison) by range (:mod:`visa.memory.pages`, issue 15): a source whose visited bytes were all written
(a host buffer from a numpy array, HBM or DM pages wholly written) and a destination visit that covers whole
ranges mark those ranges written page by page, with no mask read or written; otherwise the destination's mask
is made exact over the range and copied byte by byte, then its wholly written pages settle back.  Reads past
the bytes that exist (a padded packet at the end of a slice, manual L1841, L7896) come back as poison; writes
there are refused (an engine bug: placement rules keep a destination inside).

>>> import numpy as np
>>> from visa.hw import RNGD
>>> src, dst = HostBuffer(np.arange(6, dtype=np.uint8)), HostBuffer(np.zeros(6, np.uint8), written=False)
>>> copy([(3, 2, 1), (2, 1, 3)], (0, 0), src, dst)   # a 3 x 2 -> 2 x 3 transpose of bytes
>>> dst.data.tolist()
[0, 2, 4, 1, 3, 5]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.errors import AddressError
from visa.hw import HardwareProfile
from visa.memory import (
    fast_overwritten,
    fast_prefault,
    fast_raw_runs,
    fast_replica_sources,
    fast_runs,
    fast_settle,
    fast_split,
)
from visa.memory.images import BoolArray, ByteArray, DenseImage, IntArray, PagedImage
from visa.memory.pages import PageMask

__all__ = ["AddressSpace", "address_space", "Endpoint", "HostBuffer", "HbmEndpoint", "DmEndpoint", "copy",
           "ByteLoop"]

#: One loop of a byte-level sequencer: ``(size, source stride, destination stride)``.
ByteLoop = tuple[int, int, int]

_HOST_SPAN = 1 << 62

WORDS = fastpaths.register("dma.words", "a DMA's runs move 8-, 4- or 2-byte words instead of bytes")
ADOPT = fastpaths.register("dma.adopt", "a contiguous host → HBM copy of a frozen buffer shares it (copy on write)")
SPLIT = fastpaths.register("dma.split-regions", "a DMA reading HBM bytes of several sparse regions runs region by "
                           "region instead of merging the regions first")
PENDING_COPIES = fastpaths.register("dma.pending-copies", "a DMA broadcasting known bytes over slices writes one "
                                    "slice of each class and leaves the others pending copies")
VISITED_KNOWN = fastpaths.register("dma.visited-known", "whether a DMA's source bytes were all written asked of the "
                                   "units its loops visit, not of every unit between its first and last")


@dataclass(frozen=True)
class AddressSpace:
    """How a DMA addresses one medium: ``chip · chip_bytes + unit · unit_bytes + byte`` (bytes)."""

    medium: str
    chip_bytes: int
    unit_bytes: int
    units_per_chip: int
    backed_bytes: int

    def real_stride(self, stride: int) -> int:
        """A stride of the address space as a stride of the chip's image (units packed back to back)."""
        if self.unit_bytes == self.chip_bytes or stride % self.unit_bytes:
            return stride
        return (stride // self.unit_bytes) * self.backed_bytes

    def is_unit_level(self, stride: int) -> bool:
        """Whether a loop with this stride steps from unit to unit (slice to slice on DM, L2541)."""
        return stride != 0 and stride % self.unit_bytes == 0


def address_space(hw: HardwareProfile, medium: str) -> AddressSpace:
    """The address space of ``"host"``, ``"hbm"`` or ``"dm"`` (L2415–2423, L2541)."""
    if medium == "dm":
        d = hw.dm
        units = d.clusters_per_chip * d.slices_per_cluster
        return AddressSpace("dm", units * d.slice_address_space_bytes, d.slice_address_space_bytes, units,
                            d.slice_bytes)
    if medium == "hbm":
        return AddressSpace("hbm", hw.hbm.chip_bytes, hw.hbm.chip_bytes, 1, hw.hbm.chip_bytes)
    if medium == "host":
        return AddressSpace("host", _HOST_SPAN, _HOST_SPAN, 1, _HOST_SPAN)
    raise ValueError(medium)


class Endpoint(Protocol):
    """One side of a copy: the images of its medium.

    Ranges are image offsets of one chip: ``[lo, hi)`` the bytes a side spans (flat, units back to back) and
    ``[unit_lo, unit_hi)`` the bytes it visits in every unit of that span (on HBM and the host, one unit:
    the same range).  The written-state travels by range: a source says whether all its bytes are known
    (:meth:`known`), a destination takes whole ranges as written (:meth:`mark_written`) and hands out its mask
    (made exact) only for a copy that writes it byte by byte (:meth:`mask_for_write`)."""

    space: AddressSpace

    def contiguous(self, chip: int, lo: int, hi: int, write: bool = True, span: tuple[int, int] | None = None
                   ) -> tuple[ByteArray, int] | None:
        """A flat array holding image bytes ``[lo, hi)`` of ``chip`` and the index of ``lo`` in it; ``None``
        if those bytes do not all exist.  ``write=False``: the copy only reads them (a shared region is not
        copied for it).  ``span``: the copy reads or writes only bytes ``[span[0], span[1])`` of every unit (the
        DM's pending copies elsewhere may stay pending, :meth:`visa.memory.images.DenseImage._raw`)."""

    def known(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> BoolArray | None:
        """``None`` if every byte ``[unit_lo, unit_hi)`` of every unit of ``[lo, hi)`` was written, else whether
        each was: ``(units, unit_hi - unit_lo)`` (a new array)."""

    def gather(self, chip: int, real: IntArray) -> tuple[ByteArray, BoolArray]:
        """Bytes at image offsets ``real`` of ``chip`` (unknown where they do not exist)."""

    def mark_written(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        """The copy wrote known bytes over all of ``[unit_lo, unit_hi)`` of every unit of ``[lo, hi)``."""

    def mask_for_write(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> tuple[BoolArray, int]:
        """The flat written-mask, exact over those bytes (for a copy that writes it there), and the index of
        ``lo`` in it."""

    def settle(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        """The copy wrote the mask handed out by :meth:`mask_for_write`: pages it made wholly written (or
        wholly poison) go back to a state without mask."""


def _constant(mask: BoolArray) -> bool:
    return mask.ndim == 1 and mask.strides == (0,) and mask.dtype == bool


class HostBuffer:
    """A host buffer's bytes (the host side of a PCIe DMA).  ``written`` is a per-byte mask, or a constant
    (``True``: every byte known, the buffer of a numpy array; ``False``: a buffer to be written), kept as a
    broadcast: no mask is made or read for it until a copy writes part of it."""

    def __init__(self, data: ByteArray, written: BoolArray | bool = True, *, frozen: bool = False) -> None:
        self.data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
        #: nobody writes ``data`` again (a buffer visa owns): a destination may share it instead of copying it
        self.frozen = frozen
        if isinstance(written, bool | np.bool_):
            self.written: BoolArray = np.broadcast_to(np.bool_(written), self.data.shape)
        elif _constant(written):
            self.written = written  # a constant mask (every byte known): kept as the broadcast it is
        else:
            self.written = np.ascontiguousarray(written, dtype=bool).reshape(-1)
        self.space = AddressSpace("host", _HOST_SPAN, _HOST_SPAN, 1, _HOST_SPAN)

    @property
    def constant(self) -> bool | None:
        """The value of every byte's written flag when the mask is a constant, else None."""
        if _constant(self.written) and self.written.size:
            return bool(self.written[0])
        return None

    def contiguous(self, chip: int, lo: int, hi: int, write: bool = True, span: tuple[int, int] | None = None
                   ) -> tuple[ByteArray, int] | None:
        if chip != 0 or lo < 0 or hi > self.data.size:
            return None
        return self.data, lo

    def known(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> BoolArray | None:
        del chip, lo, hi
        part = self.written[unit_lo:unit_hi]
        if _constant(part) and (not part.size or bool(part[0])):  # (all() would still visit every byte)
            return None
        if not _constant(part) and bool(part.all()):
            return None
        return np.array(part, dtype=bool).reshape(1, -1)

    def gather(self, chip: int, real: IntArray) -> tuple[ByteArray, BoolArray]:
        ok = (real >= 0) & (real < self.data.size) & (chip == 0)
        idx = np.where(ok, real, 0)
        return self.data[idx], self.written[idx] & ok

    def mark_written(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        del chip, lo, hi
        if _constant(self.written) and (unit_lo, unit_hi) == (0, self.data.size):
            self.written = np.broadcast_to(np.True_, self.data.shape)  # all of it: a constant again
        elif not (_constant(self.written) and self.written.size and bool(self.written[0])):
            self._own()[unit_lo:unit_hi] = True

    def mask_for_write(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> tuple[BoolArray, int]:
        del chip, hi, unit_lo, unit_hi
        return self._own(), lo

    def settle(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        del chip, lo, hi, unit_lo, unit_hi  # a host buffer's mask is its bytes

    def _own(self) -> BoolArray:
        """The mask as an array of its own (a constant one made into bytes)."""
        if _constant(self.written):
            self.written = np.array(self.written, dtype=bool)
        return self.written


class HbmEndpoint:
    """The HBM images of a device (one sparse image per chip)."""

    def __init__(self, hw: HardwareProfile, chip_image: Callable[[int], PagedImage]) -> None:
        self.space = address_space(hw, "hbm")
        self._image = chip_image

    def contiguous(self, chip: int, lo: int, hi: int, write: bool = True, span: tuple[int, int] | None = None
                   ) -> tuple[ByteArray, int] | None:
        if chip < 0 or lo < 0 or hi > self.space.backed_bytes:
            return None
        data, _, at = self._image(chip).span(lo, hi, write)
        return data, at

    def bounds(self, chip: int, lo: int, hi: int) -> list[tuple[int, int]]:
        """The ``[start, end)`` of the regions of ``chip``'s image that overlap bytes ``[lo, hi)`` (none made)."""
        return self._image(chip).bounds(lo, hi)

    def adopt(self, chip: int, lo: int, data: ByteArray) -> bool:
        """Share a frozen source's bytes as HBM bytes ``[lo, lo + data.size)`` of ``chip`` (copy on write,
        :meth:`visa.memory.images.PagedImage.adopt`); False when the image cannot."""
        if chip < 0 or lo < 0 or lo + data.size > self.space.backed_bytes:
            return False
        return self._image(chip).adopt(lo, data)

    def _pages(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> tuple[PageMask, int, int]:
        """The written-state of the region holding ``[lo, hi)`` and where bytes ``[unit_lo, unit_hi)`` lie in it
        (the bytes themselves are not written: a shared region stays shared)."""
        _, pages, at = self._image(chip).span(lo, hi, write=False)
        return pages, at + unit_lo - lo, at + unit_hi - lo

    def known(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> BoolArray | None:
        pages, a, b = self._pages(chip, lo, hi, unit_lo, unit_hi)
        if pages.all_known(slice(None), a, b):
            return None
        return pages.known_span(slice(None), a, b)

    def gather(self, chip: int, real: IntArray) -> tuple[ByteArray, BoolArray]:
        ok = (real >= 0) & (real < self.space.backed_bytes) & (chip >= 0)
        if chip < 0:
            return np.zeros(real.shape, np.uint8), np.zeros(real.shape, bool)
        data, known = self._image(chip).gather(np.where(ok, real, 0))
        return data, known & ok

    def mark_written(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        pages, a, b = self._pages(chip, lo, hi, unit_lo, unit_hi)
        pages.mark(slice(None), a, b, True)

    def mask_for_write(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> tuple[BoolArray, int]:
        _, pages, at = self._image(chip).span(lo, hi, write=False)
        pages.materialise(slice(None), at + unit_lo - lo, at + unit_hi - lo)
        return pages.mask[0], at

    def mask_for_view(self, chip: int, lo: int, hi: int, offset: int, shape: tuple[int, ...],
                      strides: tuple[int, ...]) -> tuple[BoolArray, int] | None:
        """:meth:`mask_for_write` for a write of the byte view at ``offset`` (from ``lo``) of ``shape`` and
        ``strides`` only: the pages it touches made exact, the others left as they are
        (``dma.mask-touched-pages``, :mod:`visa.memory.fast_settle`); None when the view is not runs of bytes."""
        _, pages, at = self._image(chip).span(lo, hi, write=False)
        touched = fast_settle.touched_pages(pages.page, at + offset, shape, strides)
        if touched is None:
            return None
        pages.materialise_pairs(np.zeros(touched.size, np.int64), touched)
        return pages.mask[0], at

    def settle(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        pages, a, b = self._pages(chip, lo, hi, unit_lo, unit_hi)
        pages.settle_range(slice(None), a, b)


class DmEndpoint:
    """The DM images of a device (clusters × slices × bytes per chip)."""

    def __init__(self, hw: HardwareProfile, chip_image: Callable[[int], DenseImage]) -> None:
        self.space = address_space(hw, "dm")
        self._image = chip_image

    def _units(self, lo: int, hi: int) -> slice:
        b = self.space.backed_bytes
        return slice(lo // b, (hi - 1) // b + 1)

    def contiguous(self, chip: int, lo: int, hi: int, write: bool = True, span: tuple[int, int] | None = None
                   ) -> tuple[ByteArray, int] | None:
        if chip < 0:
            return None
        image = self._image(chip)  # (a write says which bytes: mark_written, mask_for_write)
        if write:  # (the bytes change before mark_written says so: a stream viewing them reads them first)
            image._settle_readers()
        data = image.flat_data(0, 0) if span is None else image._flat_raw(*span)
        if lo < 0 or hi > data.size:
            return None
        return data, lo

    def known(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> BoolArray | None:
        return self._image(chip)._known_units(self._units(lo, hi), unit_lo, unit_hi)

    def all_known_units(self, chip: int, units: IntArray, unit_lo: int, unit_hi: int) -> bool:
        """Whether every byte ``[unit_lo, unit_hi)`` of each of the (flat) ``units`` of ``chip`` was written
        (``dma.visited-known``: the units a copy reads, not every unit of its span)."""
        return self._image(chip)._all_known_units(units, unit_lo, unit_hi)

    def gather(self, chip: int, real: IntArray) -> tuple[ByteArray, BoolArray]:
        if chip < 0:
            return np.zeros(real.shape, np.uint8), np.zeros(real.shape, bool)
        image = self._image(chip)
        data = image.flat_data(0, 0)
        ok = (real >= 0) & (real < data.size)
        idx = np.where(ok, real, 0)
        return data[idx], image.flat_image().gather(idx)[1] & ok

    def mark_written(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        self._image(chip).mark_written(self._units(lo, hi), unit_lo, unit_hi)

    def mask_for_write(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> tuple[BoolArray, int]:
        return self._image(chip).mask_for_write(self._units(lo, hi), unit_lo, unit_hi), lo

    def record_replicas(self, chip: int, units: IntArray, keys: IntArray, unit_lo: int, unit_hi: int) -> None:
        """The copy wrote the same known bytes ``[unit_lo, unit_hi)`` into the units of equal ``keys``
        (:meth:`visa.memory.images.DenseImage.record_replicas`)."""
        self._image(chip).record_replicas(units, keys, unit_lo, unit_hi)

    def replica_labels(self, chip: int, units: IntArray, unit_lo: int, unit_hi: int) -> IntArray | None:
        """The replica labels of the (flat) ``units`` over bytes ``[unit_lo, unit_hi)``
        (:meth:`visa.memory.images.DenseImage.replica_labels`)."""
        return self._image(chip).replica_labels(units, unit_lo, unit_hi)

    def holds(self, chip: int, lo: int, hi: int) -> bool:
        """Whether image bytes ``[lo, hi)`` of ``chip`` exist (:meth:`contiguous` gives them): asked before a write
        changes any state (:meth:`cover`, dropped pending copies), so that a refused DMA changes nothing."""
        return chip >= 0 and lo >= 0 and hi <= self.space.units_per_chip * self.space.backed_bytes

    def cover(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        """The copy writes every byte ``[unit_lo, unit_hi)`` of every unit of ``[lo, hi)``
        (:meth:`visa.memory.images.DenseImage._cover`)."""
        self._image(chip)._cover(self._units(lo, hi), unit_lo, unit_hi)

    def pending_image(self, chip: int, lo: int, hi: int) -> tuple[DenseImage, slice]:
        """The image of ``chip`` and its (flat) units of the range ``[lo, hi)``: where a DMA's pending copies are
        (:mod:`visa.memory.fast_overwritten`)."""
        return self._image(chip), self._units(lo, hi)

    def defer_copy(self, chip: int, dst: IntArray, src: IntArray, unit_lo: int, unit_hi: int) -> None:
        """Bytes ``[unit_lo, unit_hi)`` of units ``dst`` are to be those of units ``src`` (written now):
        :meth:`visa.memory.images.DenseImage._defer_copy`."""
        self._image(chip)._defer_copy(dst, src, unit_lo, unit_hi)

    def settle(self, chip: int, lo: int, hi: int, unit_lo: int, unit_hi: int) -> None:
        self._image(chip).settle(self._units(lo, hi), unit_lo, unit_hi)


@dataclass
class _Resolved:
    """One side of a copy within one chip: image strides, the image offset of the base, and bounds."""

    chip: int
    base: int
    strides: tuple[int, ...]
    lo: int
    hi: int
    in_units: bool  # every byte lies inside an existing unit (DM: inside the 512 KB of its slice)
    unit_lo: int  # the bytes [unit_lo, unit_hi) of a unit that the side visits (in every unit it visits)
    unit_hi: int
    unit_level: tuple[bool, ...]  # which loops step from unit to unit
    sizes: tuple[int, ...] = ()  # the loops' sizes


def _resolve(space: AddressSpace, base: int, loops: Sequence[tuple[int, int]]) -> _Resolved:
    chip, off = divmod(base, space.chip_bytes)
    unit, byte = divmod(off, space.unit_bytes)
    strides = tuple(space.real_stride(s) for _, s in loops)
    real_base = unit * space.backed_bytes + byte
    lo = hi = real_base
    b_lo = b_hi = byte
    for (n, s), r in zip(loops, strides, strict=True):
        span = (n - 1) * r
        lo, hi = lo + min(0, span), hi + max(0, span)
        if not space.is_unit_level(s):
            bspan = (n - 1) * s
            b_lo, b_hi = b_lo + min(0, bspan), b_hi + max(0, bspan)
    in_units = b_lo >= 0 and b_hi < space.backed_bytes
    return _Resolved(chip, real_base, strides, lo, hi + 1, in_units, b_lo, b_hi + 1,
                     tuple(space.is_unit_level(s) for _, s in loops), tuple(n for n, _ in loops))


def _view(arr: npt.NDArray[Any], offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> npt.NDArray[Any]:
    item = arr.itemsize
    if arr.ndim == 1 and arr.strides == (0,):  # a constant (broadcast) buffer: every byte reads the same
        return np.lib.stride_tricks.as_strided(arr, shape, (0,) * len(shape), writeable=False)
    return np.ndarray(shape, dtype=arr.dtype, buffer=arr, offset=offset * item,
                      strides=tuple(s * item for s in strides))


def _addresses(space: AddressSpace, base: int, loops: Sequence[tuple[int, int]]) -> tuple[IntArray, IntArray]:
    """Image offsets (per chip) of every byte a side visits, and their chips (slow path)."""
    virt = np.full((), base, dtype=np.int64)
    for n, s in loops:
        virt = virt[..., None] + np.arange(n, dtype=np.int64) * s
    chip, off = np.divmod(virt, space.chip_bytes)
    unit, byte = np.divmod(off, space.unit_bytes)
    real = np.where(byte < space.backed_bytes, unit * space.backed_bytes + byte, -1)
    return real, chip


def copy(loops: Sequence[ByteLoop], bases: tuple[int, int], src: Endpoint, dst: Endpoint) -> None:
    """Run the byte-level sequencer ``loops`` from ``src`` to ``dst`` (manual L2555–2594; see the module
    docstring)."""
    chip_level = [k for k, (_, s, d) in enumerate(loops)
                  if (s != 0 and s % src.space.chip_bytes == 0) or (d != 0 and d % dst.space.chip_bytes == 0)]
    inner = [loop for k, loop in enumerate(loops) if k not in chip_level]
    for combo in itertools.product(*(range(loops[k][0]) for k in chip_level)):
        sb = bases[0] + sum(i * loops[k][1] for i, k in zip(combo, chip_level, strict=True))
        db = bases[1] + sum(i * loops[k][2] for i, k in zip(combo, chip_level, strict=True))
        _copy_chip(inner, sb, db, src, dst)


def _coalesce(loops: Sequence[ByteLoop]) -> list[ByteLoop]:
    """The same visit with adjacent loops merged where the outer one steps exactly over the inner one on both
    sides (fewer, longer rows for numpy's copy: a contiguous move becomes one run of bytes)."""
    out: list[ByteLoop] = []
    for n, s, d in loops:
        if n == 1:
            continue
        out.append((n, s, d))
        while len(out) > 1:
            (n0, s0, d0), (n1, s1, d1) = out[-2], out[-1]
            if s0 == n1 * s1 and d0 == n1 * d1:
                out[-2:] = [(n0 * n1, s1, d1)]
            else:
                break
    return out


#: A contiguous copy of at least this many bytes from a frozen buffer shares it instead (copy on write).
ADOPT_BYTES = 1 << 16


def _adopted(loops: Sequence[ByteLoop], sb: int, db: int, src: Endpoint, dst: Endpoint) -> bool:
    """A contiguous copy of known bytes from a frozen buffer (a host tensor's own) into HBM: the HBM region
    shares the buffer, copied only when something writes it (:meth:`HbmEndpoint.adopt`).  False when the copy
    is not one."""
    adopt = getattr(dst, "adopt", None)
    if (not ADOPT.on or adopt is None or not getattr(src, "frozen", False) or len(loops) != 1 or loops[0][1:] != (1, 1)
            or loops[0][0] < ADOPT_BYTES):
        return False
    n = loops[0][0]
    r, w = _resolve(src.space, sb, [(n, 1)]), _resolve(dst.space, db, [(n, 1)])
    got = src.contiguous(r.chip, r.lo, r.hi, write=False) if r.in_units and w.in_units else None
    if got is None or src.known(r.chip, r.lo, r.hi, r.unit_lo, r.unit_hi) is not None:
        return False
    data, at = got
    return bool(adopt(w.chip, w.lo, data[at: at + n]))


def _copy_chip(loops: Sequence[ByteLoop], sb: int, db: int, src: Endpoint, dst: Endpoint) -> None:
    loops = _coalesce(loops)
    shape = tuple(n for n, _, _ in loops)
    if math.prod(shape) == 0 or _adopted(loops, sb, db, src, dst):
        return
    split = _split(loops, sb, src, dst) if SPLIT.on else None
    if split is not None:  # a copy per HBM region read, along loop ``at`` (fast_split)
        at, groups = split
        _, sk, dk = loops[at]
        for i0, i1 in groups:
            part = [*loops[:at], (i1 - i0, sk, dk), *loops[at + 1:]]
            _copy_chip(part, sb + i0 * sk, db + i0 * dk, src, dst)
        return
    # the source's views first: taking the destination's may merge HBM regions (or copy a shared one) into new
    # arrays, which views taken before still see as they were (the bytes read), but a destination view taken
    # before a later merge would write into an array nobody keeps
    r = _resolve(src.space, sb, [(n, s) for n, s, _ in loops])
    got_src = src.contiguous(r.chip, r.lo, r.hi, write=False, span=(r.unit_lo, r.unit_hi)) if r.in_units else None
    w = _resolve(dst.space, db, [(n, d) for n, _, d in loops])
    known = None if got_src is None else _source_known(src, r)
    whole = got_src is not None and known is None and w.in_units and _covers(w, dst.space, shape)
    cover, holds = getattr(dst, "cover", None), getattr(dst, "holds", None)
    # (bytes that do not all exist are refused below, before the cover and the dropped copies change the image)
    outside = whole and holds is not None and not holds(w.chip, w.lo, w.hi)
    if whole and cover is not None and not outside:  # every byte of the range is written below: no zeros owed there
        cover(w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)
        if fast_overwritten.OVERWRITTEN.on:  # (nor copies owed wholly inside it: fast_overwritten)
            fast_overwritten.drop(dst, w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)
    got = dst.contiguous(w.chip, w.lo, w.hi, span=(w.unit_lo, w.unit_hi)) if w.in_units and not outside else None
    if got is None:
        raise AddressError(f"the DMA would write bytes {w.lo}..{w.hi} of {dst.space.medium.upper()} chip {w.chip}, "
                           "outside the memory that exists", call="dma.execute")
    d_data, d_at = got
    d_off = d_at + (w.base - w.lo)
    if got_src is not None:
        s_data, s_at = got_src
        s_off = s_at + (r.base - r.lo)
        if whole:  # known bytes over whole ranges: no mask at all
            if not _defer_replicas(loops, w, dst, _view(d_data, d_off, shape, w.strides),
                                   _view(s_data, s_off, shape, r.strides)):
                _prefault(d_data, d_at, w, dst.space)
                _assign(d_data, d_off, w.strides, s_data, s_off, r.strides, shape)
            dst.mark_written(w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)
            if not _record_replicas(loops, w, dst) and fast_replica_sources.SOURCES.on:
                fast_replica_sources.record(loops, r, w, src, dst)
            return
        _assign(d_data, d_off, w.strides, s_data, s_off, r.strides, shape)
        view = getattr(dst, "mask_for_view", None) if known is None and fast_settle.TOUCHED.on else None
        got_mask = None if view is None else view(w.chip, w.lo, w.hi, w.base - w.lo, shape, w.strides)
        d_written, m_at = got_mask or dst.mask_for_write(w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)
        if known is None:
            _assign(d_written, m_at + (w.base - w.lo), w.strides, None, 0, (), shape)
        else:  # (known_span may return a non-contiguous view: the words are read from a flat copy)
            _assign(d_written, m_at + (w.base - w.lo), w.strides, np.ascontiguousarray(known).reshape(-1),
                    *_known_view(r, src.space), shape)
        dst.settle(w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)
        return
    dv = _view(d_data, d_off, shape, w.strides)
    # slow path: some bytes read lie outside the memory (reads past the data are allowed; they are poison)
    real, chips = _addresses(src.space, sb, [(n, s) for n, s, _ in loops])
    vals = np.zeros(real.shape, np.uint8)
    known_all = np.zeros(real.shape, bool)
    for c in np.unique(chips).tolist():
        sel = chips == c
        v, k = src.gather(int(c), real[sel])
        vals[sel] = v
        known_all[sel] = k & (real[sel] >= 0)
    dv[...] = vals
    d_written, m_at = dst.mask_for_write(w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)
    _view(d_written, m_at + (w.base - w.lo), shape, w.strides)[...] = known_all
    dst.settle(w.chip, w.lo, w.hi, w.unit_lo, w.unit_hi)


def _source_known(src: Endpoint, r: _Resolved) -> BoolArray | None:
    """``src.known`` of the source side ``r`` (None: every byte it reads was written).  With ``dma.visited-known``
    a source that visits some of the units between its first and last (a unit-level loop stepping over units:
    the ring sum's result, one slice in four) is first asked of those units alone: when every byte ``[unit_lo,
    unit_hi)`` of each was written, every byte the copy reads was (the reference asks every unit of the span,
    and a unit it never reads, never written, makes it hand out the span's byte mask and write the destination's
    mask byte by byte: the same bytes and written-state in the end)."""
    ask = getattr(src, "all_known_units", None)
    if VISITED_KNOWN.on and ask is not None and r.in_units and any(r.unit_level):
        units = _visited_units(src.space, r)
        if units is not None and ask(r.chip, units, r.unit_lo, r.unit_hi):
            return None
    return src.known(r.chip, r.lo, r.hi, r.unit_lo, r.unit_hi)


#: :func:`_visited_units` lists at most this many units (a chip's DM has 512 slices).
_VISITED_MAX = 1 << 12


def _visited_units(space: AddressSpace, r: _Resolved) -> IntArray | None:
    """The (flat) units a side within units visits: its base's unit plus every step of its unit-level loops
    (their strides whole units of the image, :meth:`AddressSpace.real_stride`), sorted and distinct; None when
    the loops take at least as many steps as its span has units (they may visit every one: nothing to gain) or
    too many to list."""
    b = space.backed_bytes
    steps = [(s // b) for s, lvl in zip(r.strides, r.unit_level, strict=True) if lvl]
    sizes = [n for n, lvl in zip(r.sizes, r.unit_level, strict=True) if lvl]
    visits = math.prod(sizes)
    if visits > _VISITED_MAX or visits >= (r.hi - 1) // b + 1 - r.lo // b:
        return None
    units = np.full((), r.base // b, dtype=np.int64)
    for n, step in zip(sizes, steps, strict=True):
        units = units[..., None] + np.arange(n, dtype=np.int64) * step
    return np.unique(units)


def _split(loops: Sequence[ByteLoop], sb: int, src: Endpoint, dst: Endpoint
           ) -> tuple[int, list[tuple[int, int]]] | None:
    """A loop of the largest source stride and its iterations grouped by the HBM region they read
    (:func:`fast_split.pieces`), when the source is HBM, the destination another medium and the read spans
    several regions; else None."""
    bounds = getattr(src, "bounds", None)
    if bounds is None or src.space.medium != "hbm" or dst.space.medium == "hbm" or not loops:
        return None
    r = _resolve(src.space, sb, [(n, s) for n, s, _ in loops])
    if not r.in_units or r.chip < 0 or r.lo < 0 or r.hi > src.space.backed_bytes:
        return None
    if len(regions := bounds(r.chip, r.lo, r.hi)) < 2:
        return None
    k = max(range(len(loops)), key=lambda j: r.strides[j])
    rest = _resolve(src.space, sb, [(n, s) for j, (n, s, _) in enumerate(loops) if j != k])
    if rest.chip != r.chip:
        return None
    got = fast_split.pieces(loops[k][0], r.strides[k], (rest.lo, rest.hi), regions)
    return None if got is None else (k, got)


#: A broadcast whose copies hold at least this many bytes leaves them pending (DenseImage._defer_copy).
DEFER_BYTES = 1 << 16


def _unit_grid(loops: Sequence[ByteLoop], w: _Resolved, dst: Endpoint) -> tuple[IntArray, IntArray, list[bool]]:
    """The destination units a copy visits, one axis per loop that steps from unit to unit (the others visit the
    same offsets in every unit), the source offset each one's bytes start from, and which of those loops read
    the same source for every step (stride 0: their units are replicas)."""
    unit: IntArray = np.full((), w.base // dst.space.backed_bytes, np.int64)
    source: IntArray = np.zeros((), np.int64)
    repeat: list[bool] = []
    for (n, s, _), real, lvl in zip(loops, w.strides, w.unit_level, strict=True):
        if lvl:
            i = np.arange(n, dtype=np.int64)
            unit = unit[..., None] + i * (real // dst.space.backed_bytes)
            source = source[..., None] + i * s
            repeat.append(s == 0)
    return unit, source, repeat


def _defer_replicas(loops: Sequence[ByteLoop], w: _Resolved, dst: Endpoint, dv: npt.NDArray[Any],
                    sv: npt.NDArray[Any]) -> bool:
    """A copy of known bytes covering ``[unit_lo, unit_hi)`` of every destination unit, whose unit-level loops
    read the same source for several units (a stride-0 source loop: the copies are replicas): write the units
    at index 0 of those loops, and leave the others as pending copies of them on the DM image
    (:meth:`visa.memory.images.DenseImage._defer_copy`).  False (nothing written) when the copy is not one, or
    its copies are small."""
    defer = getattr(dst, "defer_copy", None)
    repeat = [k for k, ((_, s, _), lvl) in enumerate(zip(loops, w.unit_level, strict=True)) if lvl and s == 0]
    if defer is None or not repeat or not PENDING_COPIES.on:
        return False
    shape = tuple(n for n, _, _ in loops)
    copies = math.prod(shape[k] for k in repeat) - 1
    if copies * math.prod(shape) // (copies + 1) < DEFER_BYTES:
        return False
    first = tuple(slice(0, 1) if k in repeat else slice(None) for k in range(len(shape)))
    dv[first] = sv[first]
    unit, _, rep = _unit_grid(loops, w, dst)
    source = np.broadcast_to(unit[tuple(slice(0, 1) if r else slice(None) for r in rep)], unit.shape)
    moved = (unit != source).reshape(-1)
    defer(w.chip, unit.reshape(-1)[moved], source.reshape(-1)[moved], w.unit_lo, w.unit_hi)
    return True


def _record_replicas(loops: Sequence[ByteLoop], w: _Resolved, dst: Endpoint) -> bool:
    """After a copy of known bytes that covered ``[unit_lo, unit_hi)`` of every destination unit: units whose
    bytes came from the same source offsets hold the same bytes (a source read again for each of them, a
    stride-0 loop: :mod:`visa.memory.replicas`), so two units are replicas when their source offsets are equal.
    Whether it found such a loop."""
    record = getattr(dst, "record_replicas", None)
    if record is None or not any(lvl and s == 0 for (_, s, _), lvl in zip(loops, w.unit_level, strict=True)):
        return False  # (no unit-level loop reads one source again: no replicas, no grid to build)
    unit, source, repeat = _unit_grid(loops, w, dst)
    if any(repeat):  # (else no source is read twice: no replicas)
        record(w.chip, unit.reshape(-1), source.reshape(-1), w.unit_lo, w.unit_hi)
        return True
    return False


def _prefault(data: ByteArray, at: int, side: _Resolved, space: AddressSpace) -> None:
    """Bytes ``[unit_lo, unit_hi)`` of every unit of ``side``'s span are about to be written, ``data[at]`` the
    byte at ``side.lo``: their pages are asked of the system at once (``memory.prefault``)."""
    b = space.backed_bytes
    u0, u1 = side.lo // b, (side.hi - 1) // b + 1
    if fast_prefault.asks_nothing(u1 - u0, b, side.unit_hi - side.unit_lo):
        return  # (every unit's range on a few pages of its own: nothing would be asked)
    units = np.arange(u0, u1, dtype=np.int64)
    fast_prefault.prefault(data, at - side.lo + units * b + side.unit_lo, side.unit_hi - side.unit_lo)


def _covers(side: _Resolved, space: AddressSpace, shape: tuple[int, ...]) -> bool:
    """Does a side visit every byte ``[unit_lo, unit_hi)`` of every unit of its span, each once?"""
    units = (side.hi - 1) // space.backed_bytes - side.lo // space.backed_bytes + 1
    if math.prod(shape) != units * (side.unit_hi - side.unit_lo):
        return False
    span = 1  # each loop steps past everything the inner loops visit (so no byte twice)
    for n, s in sorted(zip(shape, side.strides, strict=True), key=lambda e: abs(e[1])):
        if abs(s) < span:
            return False
        span += (n - 1) * abs(s)
    return True


def _known_view(side: _Resolved, space: AddressSpace) -> tuple[int, tuple[int, ...]]:
    """The offset and strides, in the flat array, of the view of a source's :meth:`Endpoint.known` array
    (``(units, unit_hi - unit_lo)``, from the unit of ``side.lo``) that the copy reads: a unit-level stride steps
    rows, the others bytes."""
    row = side.unit_hi - side.unit_lo
    b = space.backed_bytes
    u0 = side.lo // b
    unit, byte = divmod(side.base, b) if b < _HOST_SPAN else (0, side.base)
    offset = (unit - u0) * row + byte - side.unit_lo
    strides = tuple((s // b) * row if lvl else s for s, lvl in zip(side.strides, side.unit_level, strict=True))
    return offset, strides


#: Word sizes a copy may move at once (bytes), largest first.
_WORDS = (8, 4, 2)


def _assign(dst: npt.NDArray[Any], d_off: int, d_strides: tuple[int, ...], src: npt.NDArray[Any] | None, s_off: int,
            s_strides: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """``view(dst) = view(src)`` (``src`` None: every byte 1, a written-mask set True) over byte views of
    ``shape``: a word of 8, 4 or 2 bytes at a time when the innermost loop runs over whole words on both sides
    and every other stride is a whole number of words (the 8-byte and 32-byte runs a DMA moves), else a byte at
    a time.  ``dst`` and ``src`` are flat arrays of one-byte items."""
    if src is not None and fast_runs.assign(dst, d_off, d_strides, src, s_off, s_strides, shape):
        return  # (dma.disjoint-runs: within one image, no temporary copy of the source)
    if src is not None and fast_raw_runs.assign(dst, d_off, d_strides, src, s_off, s_strides, shape):
        return  # (dma.raw-runs: two images, runs of 16 bytes or more as raw elements)
    k = 1
    flat = dst.itemsize == 1 and dst.strides == (1,) and (src is None or (src.itemsize == 1
                                                                           and src.strides == (1,)))
    if WORDS.on and flat and shape and d_strides[-1] == 1 and (src is None or s_strides[-1] == 1):
        k = next((w for w in _WORDS if shape[-1] % w == 0 and all(x % w == 0 for x in d_strides[:-1])
                  and (src is None or all(x % w == 0 for x in s_strides[:-1]))), 1)
    if k == 1:
        dv = _view(dst, d_off, shape, d_strides)
        dv[...] = True if src is None else _view(src, s_off, shape, s_strides)
        return
    word = np.dtype(f"u{k}")
    wshape = (*shape[:-1], shape[-1] // k)
    out: npt.NDArray[Any] = np.ndarray(wshape, dtype=word, buffer=dst, offset=d_off, strides=(*d_strides[:-1], k))
    if src is None:
        out[...] = int.from_bytes(b"\x01" * k, "little")
    else:
        out[...] = np.ndarray(wshape, dtype=word, buffer=src, offset=s_off, strides=(*s_strides[:-1], k))
