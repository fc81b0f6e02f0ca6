"""Byte images of the memory tiers (manual "Hello, TCP!" memories L134–140; "Memory and Stream" L1070–1093).

Every tier is a byte image that starts *poisoned*: the image records which bytes were ever written, and a
value loaded from an unwritten byte comes back marked unknown (an element is known iff all its bytes were
written).  The record is kept by page (:mod:`visa.memory.pages`, issue 15): a state per page of every unit
(none written / all written / mixed) and a byte mask that only mixed pages use, so that whole ranges of known
data — a DMA, a nest of known words that covers its bytes — cost no mask memory and no mask traffic; what
hands out the byte mask itself makes its pages exact first.  Engines move data only through :func:`load` and
:func:`store` (and the nest and word paths below), which address elements by *bit offset* so that 4-bit types
pack two to a byte (element 0 in the low nibble, docs/manual-notes.md "dtypes").

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
import itertools
import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.errors import AddressError
from visa.memory import fast_nest, fast_nibbles, fast_pending, fast_prefault, fast_regions, fast_replica_sources
from visa.memory.arena import ARENA, Lease, lazy_zeros
from visa.memory.known import all_true
from visa.memory.pages import ALL, MIXED, PAGE_BYTES, PageMask, Units, nest_offsets
from visa.memory.pending import Pending
from visa.memory.replicas import Labels, ReplicaIds

__all__ = ["DenseImage", "PagedImage", "Image", "load", "store", "store_stream", "unwrite", "load_nest", "store_nest",
           "store_nest_into", "word_view", "Nest", "nest_span",
           "ByteArray", "BoolArray", "IntArray"]

_GAP = 1 << 20  # a scatter whose indices leave a larger hole writes separate regions

SLACK = fastpaths.register("memory.region-slack", "a sparse HBM region grown by an access next to it grows by "
                           "its own size at once (amortised) instead of to the bytes asked each time")
WORDS = fastpaths.register("memory.image-words", "load and store move each element as one machine word (a run of "
                           "consecutive elements as one strided copy) instead of byte by byte")
REPLICAS = fastpaths.register("memory.replicas", "units written with the same known bytes are remembered as "
                              "replicas (the engines then share one copy's work) instead of compared")

ByteArray = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

#: A loop nest over bytes: ``(size, byte stride)`` per loop, outermost first (a sequencer in bytes).
Nest = tuple[tuple[int, int], ...]

#: The unsigned little-endian word of each element size, and the written-mask word of an element whose bytes
#: were all written (a bool is one byte holding 0 or 1).
_WORD: dict[int, np.dtype[Any]] = {1: np.dtype(np.uint8), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_ALL_WRITTEN = {nb: int.from_bytes(b"\x01" * nb, "little") for nb in _WORD}


def word_view(arr: npt.NDArray[Any], nb: int) -> npt.NDArray[Any] | None:
    """The ``nb``-byte little-endian words starting at every byte of the last axis of ``arr`` (a C-contiguous
    uint8 or bool array): shape ``(..., n - nb + 1)``, a view (no copy).  None if ``arr`` is not contiguous.

    Elements of whole bytes are read and written through this view, one word per element, instead of one
    byte at a time (the image is still bytes: any byte offset is an element start).
    """
    if nb not in _WORD or not arr.flags.c_contiguous:
        return None
    if nb == 1:
        return arr.view(np.uint8)
    shape = (*arr.shape[:-1], max(arr.shape[-1] - nb + 1, 0))
    out: npt.NDArray[Any] = np.ndarray(shape, dtype=_WORD[nb], buffer=arr, strides=(*arr.strides[:-1], 1))
    return out


def void_view(arr: npt.NDArray[Any], nb: int) -> npt.NDArray[Any] | None:
    """:func:`word_view` with the words as opaque ``nb``-byte runs (numpy's ``V{nb}``, any ``nb`` ≥ 1): a
    strided copy of such words moves ``nb`` bytes per element (``fetch.padded-cut-read`` reads a packet's
    elements so, one word each).  None if ``arr`` is not contiguous."""
    if nb < 1 or not arr.flags.c_contiguous:
        return None
    shape = (*arr.shape[:-1], max(arr.shape[-1] - nb + 1, 0))
    out: npt.NDArray[Any] = np.ndarray(shape, dtype=np.dtype(f"V{nb}"), buffer=arr, strides=(*arr.strides[:-1], 1))
    return out


def _all_written(words: npt.NDArray[Any], nb: int) -> BoolArray:
    """Elementwise: were all ``nb`` bytes written (``words`` from :func:`word_view` of a written-mask)."""
    out: BoolArray = np.equal(words, _ALL_WRITTEN[nb])
    return out


def _put_known(data: npt.NDArray[Any], written: npt.NDArray[Any], words: npt.NDArray[Any], known: BoolArray,
               nb: int) -> None:
    """``data = known ? words : 0`` and ``written = known`` (all bytes or none), written into word views in
    one pass each (no temporary arrays)."""
    w = words.reshape(data.shape)
    k = known.reshape(data.shape)
    np.multiply(w, k, out=data)
    np.multiply(k, np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb]), out=written)


#: Stamps of a dense image's state: an image takes a new one when it is made and whenever its bytes or its
#: written-state may change (``DenseImage._forget``, which every write path reaches), so that a stamp names one
#: state of one image, never reused (what :mod:`visa.memory.fast_written` remembers answers by).
STAMPS = itertools.count(1)

#: ``DenseImage.add_reader`` drops its dead readers when their list reaches this length or a larger power of two.
_PRUNE_FROM = 64


class DenseImage:
    """A dense byte image ``(..., nbytes)`` with its written-state (a :class:`~visa.memory.pages.PageMask`
    over the units, pages of ``page_bytes``); allocated lazily by the operating system.

    A unit is one slice of DM (each slice has its own address space, L2874), one bank row of a slice's TRF or
    VRF; a byte never written holds 0 and reads as unknown (poison: docs/manual-notes.md).  The public
    surface, for the engines and the tensor handles (issue 23; everything else is the memory layer's own, and
    the owed-writes protocol is entered through :mod:`visa.memory.owed` only):

    - shape: :attr:`nbytes`, :attr:`lead_shape`, :attr:`state` (the page states), ``name``;
    - reading: :meth:`read_data` with :meth:`all_written` / :meth:`known_bytes` (nothing changes),
      :meth:`read_view`, :meth:`gather`, :meth:`flat_image` (the image as one unit, for a flat byte index);
    - writing: :meth:`scatter` (bytes at an index), :meth:`flat_data` (or :meth:`flat_range`, which makes only the
      range's pending writes) with :meth:`mark_written` or
      :meth:`mask_for_write` and :meth:`settle` (a caller that writes a byte range of every unit: a DMA, a
      memset, a copy between slices), :meth:`poison` and :meth:`unwrite` (bytes back to unwritten), and the
      whole arrays :attr:`data` / :attr:`written` and :meth:`flat` (whoever takes them may write them;
      :attr:`handed` says whether they were taken);
    - replicas: :meth:`record_replicas`, :meth:`replica_labels` (units known to hold the same bytes,
      :mod:`visa.memory.replicas`), :attr:`knows_replicas` (were any ever recorded);
    - deferred readers: :meth:`add_reader` (a view of the bytes read later, settled before any change: issue 24's
      ``fetch.dm-read``, :mod:`visa.memory.nest_view`).

    The loop-nest and word paths (``_read_nest``, ``_write_nest``, ``_gather_words``, ``_scatter_words``) are
    reached through the module's functions (:func:`load`, :func:`store`, :func:`load_nest`,
    :func:`store_nest`), which choose them.

    Nothing hands out the byte mask without first making the pages it covers exact (*materialised*):
    :attr:`written`, :meth:`read_view`, :meth:`flat` and :meth:`_flat_span` do so over the whole image (and
    leave it so: their caller may write it).  Hot paths ask :meth:`all_written` or :meth:`known_bytes`
    instead, which change nothing.
    """

    __slots__ = ("_bytes", "_written", "_pages", "_dirty", "_dirty_units", "name", "_leases", "_replicas", "_handed",
                 "_pending", "_stamp", "_readers", "__weakref__")

    def __init__(self, shape: tuple[int, ...], name: str = "memory", page_bytes: int = PAGE_BYTES) -> None:
        self._bytes: ByteArray
        self._written: BoolArray
        self._leases: tuple[Lease | None, Lease | None] = (None, None)  # (set first: __del__ reads it)
        self._bytes, data_lease, stale = ARENA.take(shape, np.dtype(np.uint8))
        self._written, written_lease = ARENA.zeros(shape, np.dtype(bool))
        self._leases = (data_lease, written_lease)
        n = int(shape[-1])
        units = int(np.prod(shape[:-1], dtype=np.int64))
        self._pages = PageMask(self._written.reshape(units, n), max(1, min(page_bytes, n or 1)))
        self._pending = Pending(units)  # (the zeros owed where a dead image wrote this memory: visa.memory.pending)
        if stale is not None:
            self._pending.fill(*stale)
        self._dirty = (0, 0)
        self._dirty_units = (0, 0)  # the (flat) units those writes reached, a range
        self._replicas: ReplicaIds | None = None  # (visa.memory.replicas: created by the first record)
        self._handed = False  # the bytes or the mask were handed out whole (data, written, flat, flat_span)
        self._stamp = next(STAMPS)  # (a new one at every change: _forget)
        self._readers: list[Any] = []  # (views of the bytes read later: settled before any change, add_reader)
        self.name = name

    def __del__(self) -> None:
        # The image's memory goes back to the arena (visa.memory.arena), which clears what may have been
        # written — bytes [lo, hi) of the units its writes reached — before another image of this shape takes
        # it.  The byte mask holds zeros outside MIXED pages (visa.memory.pages): only those need clearing.
        if hasattr(self, "_dirty"):  # (not when its construction failed)
            data, written = self._leases
            (lo, hi), (u_lo, u_hi) = self._dirty, self._dirty_units
            owed = self._pending.fill_box()  # (zeros never written: those bytes still hold the last image's)
            if owed is not None:
                (f_lo, f_hi), (fu_lo, fu_hi) = owed
                lo, hi = (f_lo, f_hi) if hi <= lo else (min(lo, f_lo), max(hi, f_hi))
                u_lo, u_hi = (fu_lo, fu_hi) if u_hi <= u_lo else (min(u_lo, fu_lo), max(u_hi, fu_hi))
            ARENA.give(data, lo, hi, units=(u_lo, u_hi))
            if written is not None and self._handed:
                # a caller holding the mask may have written it after its pages settled (a True under a page
                # NONE or ALL): the page states do not say where, so all of it is cleared
                ARENA.give(written, 0, self.nbytes)
            elif written is not None:
                units, pages = np.nonzero(self._pages.state == MIXED)
                ARENA.give(written, 0, 0, (units.astype(np.int64), pages.astype(np.int64), self._pages.page))

    def __deepcopy__(self, memo: dict[int, Any]) -> DenseImage:
        out = object.__new__(type(self))
        out._leases = (None, None)
        out._bytes = self._data.copy()
        out._pending = Pending(self._pages.state.shape[0])
        out._written = self._written.copy()
        out._pages = PageMask(out._written.reshape(self._pages.shape), self._pages.page,
                              self._pages.state.copy())
        out._dirty, out._dirty_units = self._dirty, self._dirty_units
        out._replicas = None
        out._handed = self._handed
        out._stamp = next(STAMPS)
        out._readers = []
        out.name = self.name
        return out

    # -- pending fills and copies (visa.memory.pending, issue 15) -----------------------------------------------

    @property
    def _data(self) -> ByteArray:
        """The bytes, everything pending made (every access to the bytes goes through here or :meth:`_raw`)."""
        if self._pending:
            self._pending.make(self._bytes.reshape(-1, self.nbytes), 0, self.nbytes)
        return self._bytes

    def _raw(self, lo: int, hi: int) -> ByteArray:
        """The bytes, for a caller that reads or writes bytes ``[lo, hi)`` of units only: what is pending there
        is made, the rest stays pending."""
        if self._pending:
            self._pending.make(self._bytes.reshape(-1, self.nbytes), lo, hi)
        return self._bytes

    def _cover(self, units: slice, lo: int, hi: int) -> None:
        """Every byte ``[lo, hi)`` of the (flat) ``units`` (a range) is about to be written, or left a pending
        copy (:meth:`_defer_copy`): the zeros still owed there are not written (:meth:`Pending.cover`)."""
        if self._pending.fills:
            u_lo, u_hi, _ = units.indices(self._pages.state.shape[0])
            self._pending.cover(u_lo, u_hi, lo, hi)

    def _drop_overwritten(self, units: slice, lo: int, hi: int) -> None:
        """Every byte ``[lo, hi)`` of the (flat) ``units`` (a range) is about to be written: the pending copies wholly
        inside are dropped, not made (:meth:`Pending.drop`)."""
        if self._pending.copies:
            u_lo, u_hi, _ = units.indices(self._pages.state.shape[0])
            self._pending.drop(u_lo, u_hi, lo, hi)

    def _defer_copy(self, dst: IntArray, src: IntArray, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of the (flat) units ``dst`` are to be those of the units ``src`` (one each, never
        in ``dst``), which hold them now: a pending copy (:mod:`visa.memory.pending`).  The caller marks the
        written-state of ``dst`` as it would for the copy, and made what was pending there before writing
        ``src`` (:meth:`_raw`, :meth:`_cover`)."""
        self._settle_readers()  # (the bytes of dst change, though none is written now)
        self._pending.copy(dst, src, lo, hi)

    def _write_copies(self, dst: IntArray, src: IntArray, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of the (flat) units ``dst`` are now those of units ``src`` (one each, none in
        ``dst``), which were just written there with known bytes: as that write into ``dst`` would, mark them
        written, but leave the bytes a pending copy (:mod:`visa.memory.pending`).  The caller covered the range
        (:meth:`_cover`) before writing ``src``; whatever is still pending there is made first."""
        if hi <= lo or not dst.size:
            return
        self._raw(lo, hi)  # (nothing, after the caller's cover and write)
        self._touch(lo, hi, dst)
        self._pages.mark(dst, lo, hi, True)
        self._pending.copy(dst, src, lo, hi)

    def _read_units(self, units: IntArray, lo: int, hi: int) -> ByteArray:
        """A copy of bytes ``[lo, hi)`` of the (flat) ``units``: ``(len(units), hi - lo)``, read through pending
        copies without making them (:meth:`_sources`)."""
        owner = self._sources(units, lo, hi)
        rows = (self._bytes if owner is not None else self._raw(lo, hi)).reshape(-1, self.nbytes)
        out: ByteArray = rows[units if owner is None else owner, lo:hi]
        return out

    def _sources(self, units: IntArray, lo: int, hi: int,
                 pieces: Sequence[tuple[int, int]] | None = None) -> IntArray | None:
        """For a read of bytes ``[lo, hi)`` of the (flat) ``units``: the unit that holds each one's bytes now
        (itself, or the source of its pending copy), when a pending copy holds them all; then the caller reads
        ``_bytes`` itself (no other pending write reaches those bytes).  None otherwise: read :meth:`_raw`.
        ``pieces``: the ranges inside ``[lo, hi)`` the read reaches, for ``memory.pending-pieces``
        (:mod:`visa.memory.fast_pending`)."""
        if not self._pending.copies:
            return None
        self._pending.make(self._bytes.reshape(-1, self.nbytes), lo, hi, copies=False)
        owner = self._pending.sources(units, lo, hi)
        if owner is None and pieces is not None and fast_pending.PIECES.on:
            owner = fast_pending.sources(self._pending, units, pieces)
        return owner

    # The bytes ``[lo, hi)`` of a unit (the same range in every unit) outside of which nothing was ever written
    # (``_dirty``): a unit that receives only poison there holds poison already (UnitSelection._changing).
    # Every write through the methods below widens it; handing out the arrays themselves (``data``,
    # ``written``, :meth:`flat`) counts as writing everywhere.

    @property
    def _page_bytes(self) -> int:
        """The page of the written-state (bytes)."""
        return self._pages.page

    @property
    def state(self) -> npt.NDArray[np.uint8]:
        """The page states (``NONE``/``ALL``/``MIXED`` of :mod:`visa.memory.pages`), ``(..., pages)``; read only."""
        out = self._pages.state.reshape(*self._bytes.shape[:-1], self._pages.npages).view()
        out.flags.writeable = False
        return out

    @property
    def handed(self) -> bool:
        """Whether the bytes or the written-mask were handed out whole (:attr:`data`, :attr:`written`): whoever
        took them may write them without the image knowing, so nothing may view its bytes lazily
        (``fetch.dm-read``) or remember replicas (:meth:`record_replicas`)."""
        return self._handed

    @property
    def data(self) -> ByteArray:
        """The bytes, ``(..., nbytes)`` (whoever takes the array may write it; writing bytes does not change
        whether they count as written).  The image then records no replicas any more (:meth:`record_replicas`):
        a write through the array would not take them away."""
        self._touch(0, self.nbytes)
        self._handed = True
        return self._data

    @property
    def written(self) -> BoolArray:
        """The written-mask, same shape as :attr:`data`, made exact everywhere first (whoever takes the array
        may write it, until the next call that changes the image: a page that call settles to ``ALL`` or
        ``NONE`` keeps no mask, and a mask byte set under it afterwards breaks the invariant of
        :mod:`visa.memory.pages`)."""
        self._touch(0, self.nbytes)
        self._handed = True  # (as for data; and all of the mask is cleared when the memory goes back to the arena)
        self._pages.materialise(slice(None), 0, self.nbytes)
        return self._written

    def _touch(self, lo: int, hi: int, units: Units | None = None) -> None:
        """Bytes ``[lo, hi)`` of the (flat) ``units`` (all by default) may be written (every write path calls
        this first)."""
        if hi > lo:
            d_lo, d_hi = self._dirty
            self._dirty = (lo, hi) if d_hi <= d_lo else (min(d_lo, lo), max(d_hi, hi))
            self._forget(lo, hi, units if fast_replica_sources.FORGET_UNITS.on else None)
            if isinstance(units, slice):
                u_lo, u_hi, _ = units.indices(self._pages.state.shape[0])
            elif units is not None and units.size:
                u_lo, u_hi = int(units.min()), int(units.max()) + 1
            else:
                u_lo, u_hi = 0, self._pages.state.shape[0]
            o_lo, o_hi = self._dirty_units
            self._dirty_units = (u_lo, u_hi) if o_hi <= o_lo else (min(o_lo, u_lo), max(o_hi, u_hi))

    def _prefault(self, units: Units, lo: int, hi: int) -> None:
        """Every byte ``[lo, hi)`` of the (flat) ``units`` is about to be written: their pages are asked of the
        system at once, where they are new (``memory.prefault``, :mod:`visa.memory.fast_prefault`)."""
        if fast_prefault.PREFAULT.on and hi > lo:
            u = np.arange(*units.indices(self._pages.state.shape[0])) if isinstance(units, slice) else units
            fast_prefault.prefault(self._bytes.reshape(-1), u.astype(np.int64) * self.nbytes + lo, hi - lo)

    def _forget(self, lo: int, hi: int, units: Units | None = None) -> None:
        """Bytes ``[lo, hi)`` of some units (``units``, when the caller knows which: ``memory.forget-units``,
        :mod:`visa.memory.fast_replica_sources`) change (their bytes or whether they are written): no unit is
        known to replicate another there any more (:mod:`visa.memory.replicas`), and the image takes a new stamp
        (:data:`STAMPS`)."""
        self._stamp = next(STAMPS)
        if self._replicas is not None:
            self._replicas.forget(lo, hi, units)
        self._settle_readers()

    def add_reader(self, reader: Any) -> None:
        """``reader`` (an object with a ``settle()`` method, held weakly) holds a view of this image's bytes that
        it reads later (issue 24, ``fetch.dm-read``): before any change to the image (:meth:`_forget`, a pending
        copy), every reader still alive settles — reads its bytes as they are — and is forgotten.  The readers
        that died meanwhile are dropped here, each time the list reaches a power of two (from
        :data:`_PRUNE_FROM`): a long read-only loop over the image keeps at most about twice the live ones."""
        readers = self._readers
        n = len(readers)
        if n >= _PRUNE_FROM and not n & (n - 1):
            readers[:] = [ref for ref in readers if ref() is not None]
        readers.append(weakref.ref(reader))

    def _settle_readers(self) -> None:
        if self._readers:
            readers, self._readers = self._readers, []
            for ref in readers:
                reader = ref()
                if reader is not None:
                    reader.settle()

    def record_replicas(self, units: IntArray, keys: IntArray, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of the (flat) ``units`` were just written with known bytes, the same bytes in
        units of equal ``keys`` (a DMA broadcasting its source, a register load of replicated slices): remember
        it (:class:`~visa.memory.replicas.ReplicaIds`), for the pages all written.  Nothing is recorded once
        the image handed out its arrays (:attr:`data`, :attr:`written`): a write through them takes nothing away."""
        if not REPLICAS.on or self._handed or not units.size or not self._pages.all_known(units, lo, hi):
            return
        if self._replicas is None:
            self._replicas = ReplicaIds(self._pages.state.shape[0], self.nbytes, self._pages.page)
        self._replicas.record(units, keys, lo, hi)

    @property
    def knows_replicas(self) -> bool:
        """Were units of this image ever recorded as replicas of others?  When not, :meth:`replica_labels` is None
        for every range (a caller may skip what it would compute before asking)."""
        return self._replicas is not None

    def replica_labels(self, units: IntArray, lo: int, hi: int) -> Labels | None:
        """Labels of the (flat) ``units``, in that order, for bytes ``[lo, hi)``: equal non-negative labels for
        units known to hold the same bytes there (:meth:`~visa.memory.replicas.ReplicaIds.labels`); None when
        none are."""
        if self._replicas is None:
            return None
        return self._replicas.labels(units, max(lo, 0), min(hi, self.nbytes))

    def read_view(self) -> tuple[ByteArray, BoolArray]:
        """Read-only views of the bytes and the written-mask (made exact everywhere first: prefer
        :meth:`all_written` and :meth:`known_bytes`, which change nothing)."""
        self._pages.materialise(slice(None), 0, self.nbytes)
        data, written = self._data.view(), self._written.view()
        data.flags.writeable = False
        written.flags.writeable = False
        return data, written

    def read_data(self) -> ByteArray:
        """A read-only view of the bytes (reading marks nothing as written; pair it with :meth:`all_written`
        or :meth:`known_bytes`)."""
        data = self._data.view()
        data.flags.writeable = False
        return data

    def _units(self, lead: tuple[Any, ...]) -> Units:
        """The flat unit indices ``lead`` (an index of the leading shape) selects, or a slice for all."""
        if not lead:
            return slice(None)
        ids = np.arange(self._pages.state.shape[0], dtype=np.int64).reshape(self._bytes.shape[:-1])
        return np.asarray(ids[lead], dtype=np.int64).reshape(-1)

    def all_written(self, lo: int, hi: int, lead: tuple[Any, ...] = ()) -> bool:
        """Were all bytes ``[lo, hi)`` of the units ``lead`` selects (an index of the leading shape; all by
        default) written?  Reads no mask when their pages are all written."""
        return self._pages.all_known(self._units(lead), max(lo, 0), min(hi, self.nbytes))

    def known_bytes(self, lo: int, hi: int, lead: tuple[Any, ...] = ()) -> BoolArray:
        """Whether each byte ``[lo, hi)`` of the units ``lead`` selects was written: a new array of shape
        ``(*selected leading shape, hi - lo)`` (exact; nothing changes)."""
        shape = np.empty(self._bytes.shape[:-1], dtype=np.bool_)[lead].shape if lead else self._bytes.shape[:-1]
        return self._pages.known_span(self._units(lead), lo, hi).reshape(*shape, hi - lo)

    def _touch_index(self, byte_index: IntArray, nb: int = 1, units: Units | None = None) -> None:
        if byte_index.size:
            self._touch(int(byte_index.min()), int(byte_index.max()) + nb, units)

    @property
    def nbytes(self) -> int:
        """Bytes along the last axis (one slice, one row, ...)."""
        return int(self._bytes.shape[-1])

    @property
    def lead_shape(self) -> tuple[int, ...]:
        """The shape of the units (everything but the bytes): what reads return before the index's shape."""
        return tuple(self._bytes.shape[:-1])

    def _mask2(self) -> BoolArray:
        return self._pages.mask

    def _known(self, byte_index: IntArray) -> BoolArray:
        return self._pages.known_at(slice(None), byte_index).reshape(*self.lead_shape, *byte_index.shape)

    def gather(self, byte_index: IntArray) -> tuple[ByteArray, BoolArray]:
        """Bytes at ``byte_index`` along the last axis, for every leading position: ``(..., len(index))``."""
        self._check(byte_index)
        return self._data[..., byte_index], self._known(byte_index)

    def _before_mask_write(self, byte_index: IntArray, nb: int, mask: BoolArray | None) -> bool:
        """Materialise the pages a write of ``nb`` bytes at ``byte_index`` (where ``mask``, broadcast to the
        leading shape and the index's) reaches; False if they are all written already (no mask to write)."""
        if not byte_index.size:
            return False
        lo, hi = int(byte_index.min()), int(byte_index.max()) + nb
        pm = self._pages
        if mask is not None and bool(np.all(mask)):
            mask = None
        if mask is None:
            if pm.all_known(slice(None), lo, hi):
                return False
            pm.materialise_index(slice(None), byte_index, nb)
            return True
        shape = (*self.lead_shape, *byte_index.shape)
        nz = np.nonzero(np.broadcast_to(mask, shape))
        k = byte_index.ndim
        lead = nz[: len(nz) - k]
        u = np.ravel_multi_index(lead, self.lead_shape) if lead else np.zeros(nz[0].shape, np.int64)
        pm.materialise_bytes(np.asarray(u, np.int64), byte_index[tuple(nz[len(nz) - k:])], nb)
        return True

    def scatter(self, byte_index: IntArray, values: ByteArray, mask: BoolArray | None = None) -> None:
        """Write bytes at ``byte_index`` (last axis); ``mask`` (same shape as values) selects which."""
        self._check(byte_index)
        self._touch_index(byte_index)
        if mask is None:
            self._data[..., byte_index] = values
            if self._before_mask_write(byte_index, 1, None):
                self._written[..., byte_index] = True
            return
        lead = self._bytes.shape[:-1]
        shape = np.broadcast_shapes(mask.shape, values.shape, (*lead, byte_index.shape[-1]))
        full = np.broadcast_to(mask, shape)
        nz = np.nonzero(full)
        where = (*nz[:-1], byte_index[nz[-1]])
        self._data[where] = np.broadcast_to(values, shape)[nz]
        flat = np.ravel_multi_index(where, self._bytes.shape) if where[0].size else np.zeros(0, np.int64)
        unit, byte = np.divmod(np.asarray(flat, np.int64), self.nbytes)
        self._pages.materialise_bytes(unit, byte)
        self._written[where] = True

    def _gather_words(self, byte_index: IntArray, nb: int) -> tuple[npt.NDArray[Any], BoolArray] | None:
        """The ``nb``-byte words at ``byte_index`` (last axis) and whether all their bytes were written, for
        every leading position; None when the image cannot be seen as words (see :func:`word_view`)."""
        wv = word_view(self._data, nb)
        if wv is None:
            return None
        self._check_words(byte_index, nb)
        return wv[..., byte_index], _known_words(self._pages, slice(None), byte_index, nb).reshape(
            *self.lead_shape, *byte_index.shape)

    def _scatter_words(self, byte_index: IntArray, nb: int, words: npt.NDArray[Any],
                      mask: BoolArray | None = None) -> bool:
        """Write ``nb``-byte words at ``byte_index`` (last axis; ``words`` broadcast to the leading shape and
        the index's), marking their bytes written; ``mask`` selects which.  False (nothing written) when the
        image cannot be seen as words."""
        wv, kv = word_view(self._data, nb), word_view(self._written, nb)
        if wv is None or kv is None:
            return False
        self._check_words(byte_index, nb)
        self._touch_index(byte_index, nb)
        ones = np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb])
        if mask is None:
            wv[..., byte_index] = words
            if self._before_mask_write(byte_index, nb, None):
                kv[..., byte_index] = ones
            return True
        shape = np.broadcast_shapes(mask.shape, words.shape, (*self._bytes.shape[:-1], *byte_index.shape))
        nz = np.nonzero(np.broadcast_to(mask, shape))
        k = byte_index.ndim
        where = (*nz[: len(nz) - k], byte_index[tuple(nz[len(nz) - k:])])
        wv[where] = np.broadcast_to(words, shape)[nz]
        if self._before_mask_write(byte_index, nb, np.broadcast_to(mask, shape)):
            kv[where] = ones
        return True

    def _read_nest(self, nb: int, byte_base: int, nest: Nest, words: npt.NDArray[Any],
                  known: BoolArray | None, signed: bool = False, void: bool = False) -> bool:
        """Copy the words a byte loop nest visits from ``byte_base`` into ``words``, and whether all their bytes
        were written into ``known`` (C-contiguous, ``leading × sizes`` elements; None: the caller knows they all
        were, :meth:`_nest_written`); False if the image cannot be seen as words.  The caller keeps the nest
        inside the image (:func:`load_nest`).  Where every page the nest reaches was written, no mask is read.
        ``signed`` reads the words as signed integers (a wider ``words`` receives them sign-extended); ``void``
        as opaque runs of ``nb`` bytes, any ``nb`` (:func:`void_view`, for :func:`load_nest_view`)."""
        lo, hi = _nest_bounds(nest)
        r_lo, r_hi = byte_base + lo, byte_base + hi + nb
        owner = self._sources(np.arange(self._pages.state.shape[0], dtype=np.int64), r_lo, r_hi)
        raw = self._bytes if owner is not None else self._raw(r_lo, r_hi)
        wv = void_view(raw, nb) if void else word_view(raw, nb)
        if wv is None:
            return False
        if signed:
            wv = wv.view(np.dtype(f"i{nb}"))
        src = _nest_view(wv, byte_base, nest)
        if owner is not None:  # pending copies read from their sources
            src = src.reshape(owner.size, *src.shape[len(self.lead_shape):])[owner].reshape(src.shape)
        np.copyto(words.reshape(src.shape), src)
        if known is not None:
            _nest_known(self._pages, slice(None), self._written, nb, byte_base, nest, known.reshape(src.shape))
        return True

    def _nest_written(self, lo: int, hi: int) -> bool:
        """Were bytes ``[lo, hi)`` of every unit this image reads written (:meth:`all_written`; a selection of
        units asks of its own)?"""
        return self.all_written(lo, hi)

    def _nest_words_written(self, nb: int, byte_base: int, nest: Nest) -> bool:
        """Were all bytes of every ``nb``-byte word a byte loop nest visits written, in every unit: the nest's own
        bytes, not its hull (:func:`nest_elements_written`)?"""
        return _nest_words_written(self._pages, slice(None), self._written, nb, byte_base, nest,
                                   lambda kv, loops: _nest_view(kv, byte_base, loops))

    def _write_nest(self, nb: int, byte_base: int, nest: Nest, words: npt.NDArray[Any], known: BoolArray) -> bool:
        """Write ``words`` where ``known`` and poison (unwritten zeros) elsewhere at the positions of a byte loop
        nest (which visits every byte at most once, :func:`store_nest`), for every leading position (``words``
        and ``known`` hold ``leading × sizes`` elements in that order).  A nest of known words that covers its
        byte range (or one over pages written already) changes page states only (no mask bytes)."""
        lo, hi = _nest_bounds(nest)
        r_lo, r_hi = byte_base + lo, byte_base + hi + nb
        covering = math.prod(n for n, _ in nest) * nb == r_hi - r_lo
        if covering and nb in _WORD:
            self._cover(slice(None), r_lo, r_hi)  # every byte of the range written below: no zeros owed there
        wv, kv = word_view(self._raw(r_lo, r_hi), nb), word_view(self._written, nb)
        if wv is None or kv is None:
            return False
        self._touch(r_lo, r_hi)
        target = _nest_view(wv, byte_base, nest)
        pm = self._pages
        if all_true(known):
            np.copyto(target, words.reshape(target.shape))
            if covering:
                pm.mark(slice(None), r_lo, r_hi, True)
            elif not pm.all_known(slice(None), r_lo, r_hi):
                pm.materialise(slice(None), r_lo, r_hi)
                _nest_view(kv, byte_base, nest)[...] = np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb])
            return True
        if covering and not known.any():
            target[...] = 0
            pm.mark(slice(None), r_lo, r_hi, False)
            return True
        pm.materialise(slice(None), r_lo, r_hi)
        _put_known(target, _nest_view(kv, byte_base, nest), words, known, nb)
        return True

    def _check_words(self, byte_index: IntArray, nb: int) -> None:
        if byte_index.size:
            lo, hi = int(byte_index.min()), int(byte_index.max()) + nb - 1
            if lo < 0 or hi >= self.nbytes:
                self._check(np.array([lo, hi], dtype=np.int64))

    def flat(self) -> tuple[ByteArray, BoolArray]:
        """The data and written-mask as flat (C-order) views: unit ``u`` (a slice, a row...) starts at
        ``u * nbytes`` (the mask made exact everywhere first)."""
        return self.data.reshape(-1), self.written.reshape(-1)

    def _flat_span(self, lo: int, hi: int) -> tuple[ByteArray, BoolArray]:
        """:meth:`flat`, for a caller that writes bytes ``[lo, hi)`` of units only (or nothing); the mask is
        made exact everywhere first."""
        self._touch(lo, hi)
        self._handed = True  # (the whole mask: see written)
        self._pages.materialise(slice(None), 0, self.nbytes)
        return self._data.reshape(-1), self._written.reshape(-1)

    def flat_data(self, lo: int, hi: int) -> ByteArray:
        """The bytes as a flat view (unit ``u`` at ``u * nbytes``), for a caller that writes bytes ``[lo, hi)``
        of units only (or nothing) and says what it wrote by :meth:`mark_written` or :meth:`mask_for_write`."""
        self._touch(lo, hi)
        return self._data.reshape(-1)

    def flat_range(self, lo: int, hi: int, write: bool = True) -> ByteArray:
        """:meth:`flat_data` for a caller that reads or writes bytes ``[lo, hi)`` of units only (``write``: it
        writes them): what is pending there is made, what is pending elsewhere stays pending (issue 24: an
        asymmetric slice of one partial does not make the pending copies of every other tensor in DM)."""
        if write:
            self._touch(lo, hi)
        return self._flat_raw(lo, hi)

    def _flat_raw(self, lo: int, hi: int) -> ByteArray:
        """The bytes as a flat view (unit ``u`` at ``u * nbytes``), for a caller that reads or writes bytes
        ``[lo, hi)`` of units only, and says what it wrote by :meth:`mark_written` or :meth:`mask_for_write`
        (a DMA): pending copies elsewhere stay pending."""
        return self._raw(lo, hi).reshape(-1)

    def mark_written(self, units: slice, lo: int, hi: int, known: bool = True) -> None:
        """Bytes ``[lo, hi)`` of the (flat) ``units`` are now all written (or all poison, ``known=False``)."""
        self._touch(lo, hi, units)
        self._pages.mark(units, lo, hi, known)

    def mask_for_write(self, units: slice, lo: int, hi: int) -> BoolArray:
        """The flat written-mask, made exact over bytes ``[lo, hi)`` of the (flat) ``units``, for a caller that
        writes it there."""
        self._touch(lo, hi, units)
        self._pages.materialise(units, lo, hi)
        return self._written.reshape(-1)

    def settle(self, units: slice, lo: int, hi: int) -> None:
        """After a write of the mask :meth:`mask_for_write` handed out: pages of bytes ``[lo, hi)`` of the
        (flat) ``units`` now wholly written (or wholly poison) keep no mask."""
        self._pages.settle_range(units, lo, hi)

    def _all_known_units(self, units: IntArray, lo: int, hi: int) -> bool:
        """Whether every byte ``[lo, hi)`` of each of the (flat) ``units`` was written (nothing changes but the
        settling of pages the page mask shows wholly written, as :meth:`_known_units` does)."""
        return self._pages.all_known(units, lo, hi)

    def _known_units(self, units: slice, lo: int, hi: int) -> BoolArray | None:
        """None if every byte ``[lo, hi)`` of the (flat) ``units`` was written, else whether each was:
        ``(units, hi - lo)`` (a new array; nothing changes)."""
        if self._pages.all_known(units, lo, hi):
            return None
        return self._pages.known_span(units, lo, hi)

    def flat_image(self) -> DenseImage:
        """The same image seen as one flat unit, for reading (views, no copy, when a unit is a whole number of
        pages: the page states are this image's; else the mask is made exact everywhere and the flat image reads
        a copy of it — its own page bookkeeping, settling pages as it reads, must not clear this image's mask
        bytes under pages this image still keeps MIXED)."""
        self._forget(0, self.nbytes)  # (its writes would not reach this image's replica ids)
        flat = object.__new__(DenseImage)
        flat._leases = (None, None)  # (views of this image's memory, which goes back with this image)
        flat._replicas = None
        flat._handed = False
        flat._readers = []
        flat._bytes = self._data.reshape(-1).view()
        flat._pending = Pending(1)
        flat._bytes.flags.writeable = False  # (for reading: a write would reach neither _dirty nor the replica ids)
        pm = self._pages
        if pm.n % pm.page:  # pages do not line up across units: every page exact, and the flat one all MIXED
            pm.materialise(slice(None), 0, pm.n)
            flat._written = self._written.reshape(-1).copy()  # (its reads settle pages in this copy only)
            flat._pages = PageMask(flat._written.reshape(1, -1), pm.page)
            flat._pages.state[...] = MIXED
        else:
            flat._written = self._written.reshape(-1)
            flat._pages = PageMask(flat._written.reshape(1, -1), pm.page, pm.state.reshape(1, -1))
        flat._dirty, flat._dirty_units = (0, int(flat._bytes.size)), (0, 1)
        flat.name = self.name
        return flat

    def unwrite(self, byte_index: IntArray, where: BoolArray) -> None:
        """Mark the bytes ``byte_index`` (last axis) as never written where ``where`` (the leading shape
        followed by the index's)."""
        self._check(byte_index)
        shape = (*self._bytes.shape[:-1], *byte_index.shape)
        nz = np.nonzero(np.broadcast_to(where, shape))
        k = byte_index.ndim
        where_ = (*nz[: len(nz) - k], byte_index[tuple(nz[len(nz) - k:])])
        if not where_[0].size:
            return
        flat = np.ravel_multi_index(where_, self._bytes.shape)
        unit, byte = np.divmod(np.asarray(flat, np.int64), self.nbytes)
        self._forget(int(byte.min()), int(byte.max()) + 1)
        self._pages.materialise_bytes(unit, byte)
        self._written[where_] = False

    def poison(self, lo: int, hi: int, units: Units = slice(None)) -> None:
        """Mark bytes ``[lo, hi)`` of the (flat) ``units`` (every unit by default) unwritten (fresh, undefined
        memory)."""
        lo, hi = max(lo, 0), min(hi, self.nbytes)
        if hi > lo:
            self._forget(lo, hi)
            self._pages.mark(units, lo, hi, False)

    def _check(self, byte_index: IntArray) -> None:
        if byte_index.size and (int(byte_index.min()) < 0 or int(byte_index.max()) >= self.nbytes):
            lo, hi = int(byte_index.min()), int(byte_index.max())
            raise AddressError(f"bytes {lo}..{hi} fall outside the {self.nbytes}-byte {self.name}",
                               call=self.name, fix="move the tensor's address, or shrink its Element mapping")


def _known_words(pm: PageMask, us: Units, byte_index: IntArray, nb: int) -> BoolArray:
    """Whether all ``nb`` bytes of the word at each of ``byte_index`` (the same in every unit) were written:
    ``(units, *byte_index.shape)``."""
    if not byte_index.size:
        return np.zeros((pm.state[us].shape[0], *byte_index.shape), bool)
    lo, hi = int(byte_index.min()), int(byte_index.max()) + nb
    if pm.all_known(us, lo, hi):
        return np.ones((pm.state[us].shape[0], *byte_index.shape), bool)
    out = pm.known_at(us, byte_index)
    for b in range(1, nb):
        out &= pm.known_at(us, byte_index + b)
    return out


#: Words × units at most that :func:`_nest_known` asks byte by byte (more: through the mask's word view).
_BY_INDEX = 1 << 16


def _nest_known(pm: PageMask, us: Units, mask: BoolArray, nb: int, byte_base: int, nest: Nest,
                known: BoolArray) -> None:
    """Fill ``known`` (the nest's view shape, units first) with whether all bytes of each word a byte loop nest
    visits were written in the units ``us``; ``mask`` is the image's byte mask (leading shape, bytes) when
    ``us`` is all units, else ``(all units, bytes)``."""
    lo, hi = _nest_bounds(nest)
    r_lo, r_hi = byte_base + lo, byte_base + hi + nb
    p0, p1 = r_lo // pm.page, -(-r_hi // pm.page)
    st = pm.state[us, p0:p1]
    if bool((st == ALL).all()):
        known.fill(True)
        return
    k2 = known.reshape(st.shape[0], -1)
    off = nest_offsets(byte_base, nest).reshape(-1)
    first, last = off // pm.page, (off + nb - 1) // pm.page
    st_u = pm.state[us]
    if st.shape[0] and bool((st == st[:1]).all()):
        # every unit's pages alike (a tensor written whole, a nest reaching into a page of another): the page
        # states decide the words for one unit, broadcast to all; only the words on a mixed page ask the bytes
        # — by index when they are few, else through the mask's word view below (issue 24: a padded lane on
        # every word's page asked every byte of every unit by index, 512 × 1M-element temporaries)
        in_first, in_last = st_u[0, first], st_u[0, last]
        k2[...] = (in_first == ALL) & (in_last == ALL)
        on_mixed = np.flatnonzero((in_first == MIXED) | (in_last == MIXED))
        if on_mixed.size * nb * st.shape[0] <= _BY_INDEX:
            if on_mixed.size:
                pos = off[on_mixed]
                exact = pm.known_at(us, pos)
                for b in range(1, nb):
                    exact &= pm.known_at(us, pos + b)
                k2[:, on_mixed] = exact
            return
    else:
        np.logical_and(st_u[:, first] == ALL, st_u[:, last] == ALL, out=k2)
    if bool((st == MIXED).any()):
        kv = word_view(mask, nb)
        assert kv is not None
        if isinstance(us, slice):
            words = _nest_view(kv, byte_base, nest).reshape(k2.shape)
        else:
            rows = np.lib.stride_tricks.as_strided(kv, shape=(pm.state.shape[0], kv.shape[-1]),
                                                   strides=(kv.strides[-2] if kv.ndim >= 2 else 0, kv.strides[-1]))
            words = _nest_view(rows, byte_base, nest)[us].reshape(k2.shape)
        k2 |= words == _ALL_WRITTEN[nb]
    straddle = np.flatnonzero(first != last)
    if straddle.size:  # a word over two pages or more: byte by byte
        pos = off[straddle]
        exact = pm.known_at(us, pos)
        for b in range(1, nb):
            exact &= pm.known_at(us, pos + b)
        k2[:, straddle] = exact


class PagedImage:
    """A sparse byte image modelled by *region* (HBM: 48 GB per chip, manual L137, L2949).

    Only the byte ranges something touched exist: a sorted list of disjoint regions, each a contiguous byte
    array with its written-state (a :class:`~visa.memory.pages.PageMask` of one unit, pages from the region's
    start).  :meth:`span` returns contiguous views of ``[lo, hi)`` and the region's state (creating or merging
    regions as needed), which is what a DMA's strided copy runs over; :meth:`window` hands out the byte mask
    itself (made exact first); :meth:`gather` and :meth:`scatter` take arbitrary byte indices.  Bytes outside
    every region were never written: they read back as poison.

    >>> img = PagedImage(1 << 30)
    >>> data, written = img.window(4096, 4104)
    >>> data[:] = 7; written[:] = True
    >>> vals, known = img.gather(np.array([4095, 4096, 4103]))
    >>> vals.tolist(), known.tolist(), img.regions()
    ([0, 7, 7], [False, True, True], [(4096, 4104)])
    """

    __slots__ = ("size", "name", "page_bytes", "_starts", "_data", "_pages", "_shared", "_asked")

    def __init__(self, size: int, name: str = "HBM", page_bytes: int = PAGE_BYTES) -> None:
        self.size = size
        self.name = name
        self.page_bytes = page_bytes
        self._starts: list[int] = []
        self._data: list[ByteArray] = []
        self._pages: list[PageMask] = []
        self._shared: list[bool] = []  # a region whose bytes are another owner's frozen buffer (see adopt)
        self._asked: list[tuple[int, int]] = []  # the regions the bytes asked make (an allocation may hold more)

    @property
    def nbytes(self) -> int:
        """Bytes the image addresses (HBM: one chip's 48 GB, manual L137)."""
        return self.size

    def regions(self) -> list[tuple[int, int]]:
        """The ``[start, end)`` byte ranges that exist: the bytes asked of each region (the reference allocates
        exactly those; :mod:`visa.memory.fast_regions` may allocate more, unwritten)."""
        return list(self._asked)

    def _check_range(self, lo: int, hi: int) -> None:
        if lo < 0 or hi > self.size:
            raise AddressError(f"bytes {lo}..{hi} fall outside the {self.size}-byte {self.name}", call=self.name,
                               fix="HBM addresses run from 0 to the chip's capacity")

    def _overlapping(self, lo: int, hi: int) -> tuple[int, int]:
        """The regions ``[first, last)`` that overlap bytes ``[lo, hi)``."""
        first = bisect.bisect_right(self._starts, lo) - 1
        if first >= 0 and self._starts[first] + self._data[first].size <= lo:
            first += 1
        return max(first, 0), bisect.bisect_left(self._starts, hi)

    def bounds(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The ``[start, end)`` of the regions that overlap bytes ``[lo, hi)``, ascending (no region is made; the
        bytes count as asked, :meth:`regions`, as by :meth:`span`)."""
        self._check_range(lo, hi)
        self._ask(lo, hi)
        first, last = self._overlapping(lo, hi)
        return [(self._starts[k], self._starts[k] + self._data[k].size) for k in range(first, last)]

    def span(self, lo: int, hi: int, write: bool = True) -> tuple[ByteArray, PageMask, int]:
        """The region holding bytes ``[lo, hi)`` (created or merged as needed): its bytes, its written-state,
        and the index of ``lo`` in them.  ``write=False`` promises not to write the bytes (the written-state
        may change): a region adopted from a frozen buffer is then not copied."""
        self._check_range(lo, hi)
        first, last = self._overlapping(lo, hi)
        if last - first == 1:
            s = self._starts[first]
            if s <= lo and hi <= s + self._data[first].size:
                if write and self._shared[first]:  # copy on write: the buffer stays its owner's
                    self._data[first] = self._data[first].copy()
                    self._shared[first] = False
                self._ask(lo, hi)
                return self._data[first], self._pages[first], lo - s
        self._ask(lo, hi)
        new_lo, new_hi = lo, hi
        if last > first:
            old_lo, old_hi = self._starts[first], self._starts[last - 1] + self._data[last - 1].size
            new_lo, new_hi = min(lo, old_lo), max(hi, old_hi)
            if SLACK.on:
                floor = self._starts[first - 1] + self._data[first - 1].size if first else 0
                ceiling = self._starts[last] if last < len(self._starts) else self.size
                new_lo, new_hi = fast_regions.grown(new_lo, new_hi, old_lo, old_hi, floor, ceiling)
        data = lazy_zeros((new_hi - new_lo,), np.dtype(np.uint8))
        pages = PageMask((1, new_hi - new_lo), max(1, min(self.page_bytes, new_hi - new_lo)))
        for k in range(first, last):
            s = self._starts[k]
            data[s - new_lo: s - new_lo + self._data[k].size] = self._data[k]
            pages.copy_from(self._pages[k], s - new_lo)
        self._starts[first:last] = [new_lo]
        self._data[first:last] = [data]
        self._pages[first:last] = [pages]
        self._shared[first:last] = [False]
        return data, pages, lo - new_lo

    def _ask(self, lo: int, hi: int) -> None:
        """Note bytes ``[lo, hi)`` asked: they join the regions they overlap (:meth:`regions`, the reference's
        allocations, whatever slack an allocation holds)."""
        first = bisect.bisect_right(self._asked, lo, key=_start) - 1
        if first >= 0 and self._asked[first][1] <= lo:
            first += 1
        first = max(first, 0)
        last = bisect.bisect_left(self._asked, hi, key=_start)
        if last - first == 1 and self._asked[first][0] <= lo and hi <= self._asked[first][1]:
            return
        if last > first:
            lo, hi = min(lo, self._asked[first][0]), max(hi, self._asked[last - 1][1])
        self._asked[first:last] = [(lo, hi)]

    def adopt(self, lo: int, data: ByteArray) -> bool:
        """Make bytes ``[lo, lo + data.size)`` the bytes of ``data``, all written, without copying them: the
        region shares ``data`` (which its owner never writes again: a frozen host buffer) until something writes
        it (:meth:`span` copies it then).  Only where every region it overlaps lies inside it (they are
        replaced); False (nothing done) otherwise."""
        hi = lo + data.size
        self._check_range(lo, hi)
        first, last = self._overlapping(lo, hi)
        if any(self._starts[k] < lo or self._starts[k] + self._data[k].size > hi for k in range(first, last)):
            return False
        pages = PageMask((1, data.size), max(1, min(self.page_bytes, data.size)))
        pages.mark(slice(None), 0, data.size, True)
        view = data.view()
        view.flags.writeable = False  # a write that bypassed span would raise, not change the owner's buffer
        self._starts[first:last] = [lo]
        self._data[first:last] = [view]
        self._pages[first:last] = [pages]
        self._shared[first:last] = [True]
        self._ask(lo, hi)
        return True

    def window(self, lo: int, hi: int) -> tuple[ByteArray, BoolArray]:
        """Contiguous (data, written) views of bytes ``[lo, hi)``, the mask made exact there (the caller may
        write both); regions are created or merged as needed."""
        if hi <= lo:
            self._check_range(lo, hi)
            return np.zeros(0, np.uint8), np.zeros(0, bool)
        data, pages, at = self.span(lo, hi)
        pages.materialise(slice(None), at, at + hi - lo)
        return data[at: at + hi - lo], pages.mask[0, at: at + hi - lo]

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
        for s, d, pm in zip(self._starts, self._data, self._pages, strict=True):
            if s >= hi or s + d.size <= lo:
                continue
            sel = (idx >= s) & (idx < s + d.size)
            out[sel] = d[idx[sel] - s]
            known[sel] = pm.known_at(slice(None), idx[sel] - s)[0]
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
            data, pages, at = self.span(lo, int(part_idx[-1]) + 1)
            data[at + part_idx - lo] = part_val
            pos = at + part_idx - lo
            if pages.all_known(slice(None), int(pos[0]), int(pos[-1]) + 1):
                continue
            pages.materialise_bytes(np.zeros(1, np.int64), pos)
            pages.mask[0, pos] = True

    def poison(self, lo: int, hi: int) -> None:
        """Mark bytes ``[lo, hi)`` unwritten (fresh, undefined memory)."""
        if hi > lo:
            _, pages, at = self.span(lo, hi, write=False)
            pages.mark(slice(None), at, at + hi - lo, False)


Image = DenseImage | PagedImage


def _start(region: tuple[int, int]) -> int:
    """A region's first byte (the key the regions are sorted by)."""
    return region[0]


def _nest_view(words: npt.NDArray[Any], byte_base: int, nest: Nest) -> npt.NDArray[Any]:
    """A strided view of ``words`` (a :func:`word_view`, one word per byte offset): the word at
    ``byte_base + Σ i_k · stride_k`` for every leading position and loop index ``(i_0, i_1, ...)``."""
    start = words[..., byte_base:]
    out: npt.NDArray[Any] = np.lib.stride_tricks.as_strided(
        start, shape=(*words.shape[:-1], *(n for n, _ in nest)),
        strides=(*words.strides[:-1], *(s * words.strides[-1] for _, s in nest)))
    return out


def _nest_bounds(nest: Nest) -> tuple[int, int]:
    """Smallest and largest byte offset (relative to the base) a nest visits."""
    lo = sum(min(0, (n - 1) * s) for n, s in nest)
    hi = sum(max(0, (n - 1) * s) for n, s in nest)
    return lo, hi


def nest_span(dtype: type[dt.Scalar], bit_base: int, loops: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The bytes ``[lo, hi)`` of a unit that a loop nest over elements (``(size, stride)``, strides in
    elements) from bit ``bit_base`` reads, for whole-byte elements starting on a byte; else None."""
    if dtype.image_bits % 8 or bit_base % 8:
        return None
    nb = dtype.image_bits // 8
    lo, hi = _nest_bounds(tuple((int(n), int(s) * nb) for n, s in loops if n != 1))
    return bit_base // 8 + lo, bit_base // 8 + hi + nb


def _byte_nest(dtype: type[dt.Scalar], image: Image, bit_base: int,
               loops: Sequence[tuple[int, int]]) -> tuple[int, int, Nest] | None:
    """``(bytes per element, byte base, byte nest)`` of a loop nest over elements (``(size, stride)``,
    strides in elements) starting at bit ``bit_base``, if it can run on words of the image: whole-byte
    elements starting on a byte, every element inside the image."""
    if dtype.image_bits % 8 or bit_base % 8 or not isinstance(image, DenseImage):
        return None
    nb = dtype.image_bits // 8
    if nb not in _WORD:
        return None
    nest = tuple((int(n), int(s) * nb) for n, s in loops if n != 1)
    if any(n <= 0 for n, _ in nest) or not _inside(image, bit_base // 8, nest, nb):
        return None
    return nb, bit_base // 8, nest


def _inside(image: DenseImage, base: int, nest: Nest, nb: int) -> bool:
    """Does every ``nb``-byte word a byte nest visits from ``base`` lie inside the image's units?"""
    lo, hi = _nest_bounds(nest)
    return base + lo >= 0 and base + hi + nb <= image.nbytes


def _injective(nest: Nest, nb: int) -> bool:
    """Does the nest visit every byte at most once (each loop steps past everything the inner loops span)?"""
    span = nb
    for n, s in sorted(nest, key=lambda e: abs(e[1])):
        if abs(s) < span:
            return False
        span += (n - 1) * abs(s)
    return True


def _from_words(dtype: type[dt.Scalar], words: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Values (``dtype.storage``) from their little-endian image words; as :func:`visa.dtypes.from_bits`."""
    vals: npt.NDArray[Any] = words.view(dtype.storage)
    if dtype.kind == "int" and dtype.bits != dtype.image_bits and vals.size:
        if vals.min() < dtype.min or vals.max() > dtype.max:
            dt.from_bits(dtype, words)  # raises the sign-extension error
    return vals


def _to_words(dtype: type[dt.Scalar], vals: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The little-endian image words of storage-typed values; as :func:`visa.dtypes.to_bits`."""
    out: npt.NDArray[Any] = np.asarray(vals, dtype=dtype.storage).view(_WORD[_nbytes_per(dtype)])
    return out


def load_nest(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
              out: tuple[npt.NDArray[Any], BoolArray] | None = None) -> tuple[npt.NDArray[Any], BoolArray] | None:
    """:func:`load` of the elements a loop nest visits: ``loops`` are ``(size, stride)`` (strides in elements,
    outermost first, a sequencer's entries) from bit ``bit_base``.  One strided copy of the image (a stride-0
    loop is a broadcast).  Returns values and known of shape ``(*leading, *sizes)`` (or fills ``out``,
    C-contiguous arrays of ``dtype.storage`` and bool holding that many elements), or None when the nest cannot
    run on words (4-bit elements, an element outside the image): then use :func:`load`.
    """
    if dtype.image_bits == 4:
        return _load_nibbles(dtype, image, bit_base, loops, out)
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None:
        return None
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    shape = (*image.lead_shape, *(n for n, _ in loops))
    if out is None:
        out = np.empty(shape, dtype=dtype.storage), np.empty(shape, dtype=bool)
    values, known = out
    if not (values.flags.c_contiguous and known.flags.c_contiguous and values.dtype == dtype.storage):
        return None
    if not image._read_nest(nb, base, nest, values.view(_WORD[nb]), known):
        return None
    _from_words(dtype, values.view(_WORD[nb]))  # the range check of i5 and i9 images
    return values.reshape(shape), known.reshape(shape)


def nest_all_written(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]]) -> bool:
    """Were all bytes of the byte range a loop nest (:func:`load_nest`) spans written, in every unit of
    ``image``?  Then every element it reads is known (L1071–1093), and :func:`load_nest_values` reads the values
    alone.  Reads no mask where the pages are all written (:mod:`visa.memory.pages`); False when the nest cannot
    run on words."""
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None:
        return False
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    return all(image._nest_written(base + lo, base + hi) for lo, hi in _hulls(nest, nb))


def nest_elements_written(dtype: type[dt.Scalar], image: Image, bit_base: int,
                          loops: Sequence[tuple[int, int]]) -> bool:
    """Was every byte of every element a loop nest (:func:`load_nest`) visits written, in every unit of
    ``image``: the elements' own bytes, where :func:`nest_all_written` asks of the nest's hull (a padded lane
    left unwritten between the elements read fails that; issue 24, ``fetch.masked-known``).  Exact where the
    pages the nest reaches are all written (no mask read) or all keep a mask (the mask read over the nest, as
    words); False — not known to be — otherwise, and when the nest cannot run on words."""
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None:
        return False
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    split = fast_nest.pieces(nest, nb) if fast_nest.PIECES.on else None
    if split is not None:  # (memory.written-pieces: each step of the widest loop apart)
        return all(image._nest_words_written(nb, base + off, rest) for off, rest in split)
    return image._nest_words_written(nb, base, nest)


def _nest_words_written(pm: PageMask, us: Units, written: BoolArray, nb: int, byte_base: int, nest: Nest,
                        view: Callable[[npt.NDArray[Any], Nest], npt.NDArray[Any]]) -> bool:
    """:meth:`DenseImage._nest_words_written` over the units ``us`` of a page mask whose byte mask is ``written``
    (the image's shape): ``view(word view of written, nest)`` is the nest's view over those units."""
    lo, hi = _nest_bounds(nest)
    p0, p1 = (byte_base + lo) // pm.page, -(-(byte_base + hi + nb) // pm.page)
    st = pm.state[us, p0:p1]
    if bool((st == ALL).all()):
        return True
    if not bool((st == MIXED).all()):  # (the mask is authoritative in MIXED pages only, pages.py)
        return False
    # each word's bytes as a run of the byte nest, read as the widest words that run allows (fast_nest.widen)
    wide = fast_nest.widen(1, (*nest, (nb, 1))) if nb > 1 else None
    word, loops = wide if wide is not None else (nb, nest)
    kv = word_view(written, word)
    if kv is None:
        return False
    words = view(kv, loops)
    return words.size == 0 or int(words.min()) == _ALL_WRITTEN[word]


def _hulls(nest: Nest, nb: int, pieces: int = 16) -> list[tuple[int, int]]:
    """Byte ranges ``[lo, hi)`` (relative to the base) that together cover every ``nb``-byte word a byte nest
    visits: its hull, or, when the loop of the largest stride steps past everything the other loops span (an
    interleaved pair far apart, :func:`visa.engines.fetch._pair_nest`), the hulls of each of its steps, at most
    ``pieces`` ranges (the bytes between the steps are not read, so they need not be written)."""
    lo, hi = _nest_bounds(nest)
    if nest:
        k = max(range(len(nest)), key=lambda i: abs(nest[i][1]))
        n, s = nest[k]
        rest = nest[:k] + nest[k + 1:]
        r_lo, r_hi = _nest_bounds(rest)
        if 1 < n <= pieces and r_hi - r_lo + nb <= abs(s):
            inner = _hulls(rest, nb, pieces // n)
            return [(a + i * s, b + i * s) for i in range(n) for a, b in inner]
    return [(lo, hi + nb)]


def load_nest_values(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
                     values: npt.NDArray[Any]) -> bool:
    """:func:`load_nest` into ``values`` (C-contiguous, ``dtype.storage``) without the known-mask, for a nest
    :func:`nest_all_written` says is all written; False (nothing read) when the nest cannot run on words."""
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None or not (values.flags.c_contiguous and values.dtype == dtype.storage):
        return False
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    wide = fast_nest.widen(nb, nest) if fast_nest.WIDE.on else None
    if wide is not None and wide[1] and wide[1][-1][1] == wide[0] and wide[1][-1][0] > 1:
        # a run of several words read as one opaque word (void_view: the same bytes, one numpy element a run)
        run = wide[1][-1][0] * wide[0]
        if not image._read_nest(run, base, wide[1][:-1], values.reshape(-1).view(np.dtype(f"V{run}")), None,
                                void=True):
            return False
    elif wide is not None:  # runs of contiguous elements read as wider words (the same bytes, fast_nest.py)
        if not image._read_nest(wide[0], base, wide[1], values.reshape(-1).view(_WORD[wide[0]]), None):
            return False
    elif not image._read_nest(nb, base, nest, values.view(_WORD[nb]), None):
        return False
    _from_words(dtype, values.view(_WORD[nb]))  # the range check of i5 and i9 images
    return True


def load_nest_view(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
                   view: npt.NDArray[Any]) -> bool:
    """:func:`load_nest_values` into ``view``: a writable ``dtype.storage`` view ``(units, *sizes)`` of the loops'
    sizes that may be strided — the unpadded lanes of a wider stream buffer (issue 24, ``fetch.padded-cut-read``,
    :mod:`visa.engines.fast_padded`) — for a nest :func:`nest_all_written` says is all written.  Only for types
    whose elements fill their storage (``i8``, ``i32``, ``bf16``, ``f32``…: no range check of the words read);
    False (nothing read) for others, or when the nest cannot run on words."""
    storage = np.dtype(dtype.storage)
    if not (dtype.bits == dtype.image_bits == 8 * storage.itemsize) or view.dtype != storage or \
            not view.flags.writeable:
        return False
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None:
        return False
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    words = view.view(_WORD[nb])  # (the same itemsize: a view of the same strided memory)
    try:  # the nest's sizes (size-1 loops dropped): a view of the same memory, or not read at all
        words.shape = (view.shape[0], *(n for n, _ in nest))
    except AttributeError:
        return False
    if nest and nest[-1][1] == nb and words.strides[-1] == nb and int(words.shape[-1]) > 1:
        # the innermost run of contiguous elements (contiguous in the view too) read as one opaque word each
        run = nest[-1][0] * nb
        runs = words.view(np.dtype(f"V{run}"))  # (the last axis: one run)
        runs.shape = runs.shape[:-1]
        return image._read_nest(run, base, nest[:-1], runs, None, void=True)
    return image._read_nest(nb, base, nest, words, None)


def load_nest_widened(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
                      values: npt.NDArray[Any]) -> bool:
    """:func:`load_nest_values` converting on the way (issue 24, ``fetch.widen-read``): ``values`` (C-contiguous,
    a signed integer storage wider than ``dtype``'s) receives the elements sign-extended — every value of an
    integer type that fills its storage (i8, i16, i32) is a value of the wider type, so this is the widening
    cast (L1960–2021) of the elements read, with no copy in ``dtype``'s storage between.  For a nest
    :func:`nest_all_written` says is all written; False (nothing read) when it cannot run so: another type, the
    nest not on words."""
    storage = np.dtype(dtype.storage)
    if (dtype.kind != "int" or storage.kind != "i" or dtype.image_bits != 8 * storage.itemsize
            or values.dtype.kind != "i" or values.itemsize <= storage.itemsize or not values.flags.c_contiguous):
        return False
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None:
        return False
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    return bool(image._read_nest(nb, base, nest, values, None, signed=True))


def store_nest(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
               values: npt.ArrayLike, known: npt.ArrayLike) -> bool:
    """Write the elements a loop nest visits (see :func:`load_nest`): ``values`` where ``known``, poison
    (unwritten bytes holding 0) elsewhere; ``values``/``known`` hold ``leading × sizes`` elements in that order
    (e.g. shape ``(*leading, *sizes)``).  One strided copy.  False (nothing written) when the nest cannot run
    on words or may visit an element twice: then use :func:`store_stream`.
    """
    if dtype.image_bits == 4:
        return _store_nibbles(dtype, image, bit_base, loops, values, known)
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None or not _injective(got[2], got[0]):
        return False
    nb, base, nest = got
    assert isinstance(image, DenseImage)
    vals = dt.as_storage(dtype, values)
    k = known if type(known) is np.ndarray and known.dtype == np.bool_ and known.shape == vals.shape \
        else np.broadcast_to(np.asarray(known, dtype=bool), vals.shape)  # (already so: as it is; only read)
    return image._write_nest(nb, base, nest, _to_words(dtype, vals), k)


def store_nest_into(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
                    produce: Callable[[npt.NDArray[Any]], bool]) -> bool:
    """:func:`store_nest` of elements all known, computed by ``produce(view)`` straight into the image: ``view`` is
    a writable ``dtype.storage`` view ``(units, *sizes)`` of the elements the nest visits in the selected units
    (one pass, no array of the values).  Only for types whose storage is their image (``i32``, ``f32``, …) and a
    nest :func:`store_nest` writes in one strided copy; False (nothing written) otherwise, or when ``produce``
    declines (returns False before writing)."""
    storage = np.dtype(dtype.storage)
    if dtype.image_bits != 8 * storage.itemsize:
        return False
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None or not _injective(got[2], got[0]) or not hasattr(image, "_write_nest_into"):
        return False
    nb, base, nest = got
    ok: bool = image._write_nest_into(nb, base, nest, lambda words: produce(words.view(storage)))
    return ok


def _nibble_nest(image: Image, bit_base: int, loops: Sequence[tuple[int, int]]) -> tuple[int, Nest] | None:
    """``(byte base, byte nest)`` of a loop nest over 4-bit elements whose innermost loop runs over whole bytes
    (stride 1, an even count, from a byte boundary) and whose other loops step whole bytes: element ``2j`` of
    the innermost loop is the low nibble of its byte, ``2j + 1`` the high one (docs/manual-notes.md "dtypes")."""
    if bit_base % 8 or not isinstance(image, DenseImage) or not loops:
        return None
    n_in, s_in = (int(v) for v in loops[-1])
    outer = [(int(n), int(s)) for n, s in loops[:-1] if n != 1]
    if s_in != 1 or n_in <= 0 or n_in % 2 or any(n <= 0 or s % 2 for n, s in outer):
        return None
    nest = tuple((n, s) for n, s in (*((n, s // 2) for n, s in outer), (n_in // 2, 1)) if n != 1)
    return (bit_base // 8, nest) if _inside(image, bit_base // 8, nest, 1) else None


def _load_nibbles(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
                  out: tuple[npt.NDArray[Any], BoolArray] | None) -> tuple[npt.NDArray[Any], BoolArray] | None:
    """:func:`load_nest` of 4-bit elements: one strided copy of the bytes, then each byte's two nibbles (both
    known or neither: a byte has one written flag)."""
    got = _nibble_nest(image, bit_base, loops)
    if got is None:
        return None
    base, nest = got
    assert isinstance(image, DenseImage)
    shape = (*image.lead_shape, *(int(n) for n, _ in loops))
    pairs = (*shape[:-1], shape[-1] // 2)
    raw, raw_known = np.empty(pairs, np.uint8), np.empty(pairs, bool)
    if not image._read_nest(1, base, nest, raw, raw_known):
        return None
    if out is None:
        out = np.empty(shape, dtype=dtype.storage), np.empty(shape, dtype=bool)
    values, known = out
    if not (values.flags.c_contiguous and known.flags.c_contiguous and values.dtype == dtype.storage):
        return None
    if dtype.kind == "int" and fast_nibbles.NIBBLE_WORDS.on and fast_nibbles.unpack(raw, raw_known, values, known):
        return values.reshape(shape), known.reshape(shape)
    v, k = values.reshape(*pairs, 2), known.reshape(*pairs, 2)
    if dtype.kind == "int" and values.dtype == np.int8:  # two's complement: arithmetic shifts sign-extend
        np.right_shift(np.left_shift(raw, 4).view(np.int8), 4, out=v[..., 0])
        np.right_shift(raw.view(np.int8), 4, out=v[..., 1])
    else:
        v[..., 0] = dt.from_bits(dtype, raw & 0xF)
        v[..., 1] = dt.from_bits(dtype, raw >> 4)
    k[..., 0] = raw_known
    k[..., 1] = raw_known
    return values.reshape(shape), known.reshape(shape)


def _store_nibbles(dtype: type[dt.Scalar], image: Image, bit_base: int, loops: Sequence[tuple[int, int]],
                   values: npt.ArrayLike, known: npt.ArrayLike) -> bool:
    """:func:`store_nest` of 4-bit elements, two to a byte, when every element is known (a poisoned nibble
    poisons its byte, and a nibble of stream padding does not: only :func:`store_stream` knows which is which)."""
    got = _nibble_nest(image, bit_base, loops)
    if got is None or not _injective(got[1], 1) or not all_true(np.asarray(known, dtype=bool)):
        return False
    base, nest = got
    assert isinstance(image, DenseImage)
    bits = dt.to_bits(dtype, dt.as_storage(dtype, values).reshape(-1)).reshape(-1, 2)
    packed = np.bitwise_or(bits[:, 0], np.left_shift(bits[:, 1], 4, dtype=np.uint8), dtype=np.uint8)
    return image._write_nest(1, base, nest, packed, np.broadcast_to(True, packed.shape))


def _nbytes_per(dtype: type[dt.Scalar]) -> int:
    return max(1, dtype.image_bits // 8)


def load(dtype: type[dt.Scalar], image: Image, bit_offsets: npt.ArrayLike) -> tuple[npt.NDArray[Any], BoolArray]:
    """Load elements of ``dtype`` at ``bit_offsets`` (one element each; last axis of a dense image; the byte
    layout of manual L1071–1093).

    Returns storage-typed values and a mask that is False where any byte of the element was never written.
    For a dense image the result has the image's leading shape followed by the offsets' shape.  The reference
    gathers every byte; the fast path ``memory.image-words`` reads whole words.
    """
    offs = np.asarray(bit_offsets, dtype=np.int64)
    if dtype.image_bits == 4:
        raw, known = image.gather(offs >> 3)
        nib = np.where(((offs >> 2) & 1).astype(bool), raw >> 4, raw & 0xF).astype(np.uint8)
        return dt.from_bits(dtype, nib), known
    if offs.size and np.any(offs & 7):
        raise AddressError(f"{dtype!r} elements must start on a byte boundary", call="load")
    nb = _nbytes_per(dtype)
    if isinstance(image, DenseImage) and WORDS.on:
        got = image._gather_words(offs >> 3, nb)
        if got is not None:
            return _from_words(dtype, got[0]), got[1]
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
    """Store ``values`` (storage-typed or exactly representable) at ``bit_offsets``; ``mask`` selects elements
    (the byte layout of manual L1071–1093).

    4-bit elements are merged into their bytes (read, modify, write of the other nibble).  The reference
    scatters every byte; the fast path ``memory.image-words`` writes a run as one strided copy, or whole words.
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
    if WORDS.on:  # (memory/fast_images.py: a run as one strided copy; whole words)
        from visa.memory import fast_images

        if fast_images.store_run(dtype, image, offs, vals, sel):
            return
        if isinstance(image, DenseImage) and image._scatter_words(offs >> 3, nb, _to_words(dtype, vals), sel):
            return
    raw = dt.to_bytes(dtype, vals.reshape(-1)).reshape(*vals.shape, nb)
    idx = (offs >> 3)[..., None] + np.arange(nb, dtype=np.int64)
    bmask = None if sel is None else np.broadcast_to(sel[..., None], sel.shape + (nb,))
    if isinstance(image, DenseImage):
        lead = raw.shape[: raw.ndim - idx.ndim]
        flat = math.prod(raw.shape[len(lead):])  # (spelled out, not -1: a store into no unit has a lead of 0)
        image.scatter(idx.reshape(-1), raw.reshape(*lead, flat),
                      None if bmask is None else np.broadcast_to(bmask, raw.shape).reshape(*lead, flat))
    else:
        image.scatter(idx, np.broadcast_to(raw, idx.shape), bmask)


def unwrite(image: DenseImage, bits: IntArray, where: BoolArray, dtype: type[dt.Scalar]) -> None:
    """Poison the elements at bit offsets ``bits`` where ``where`` (the image's leading shape followed by
    ``bits``' shape): their bytes read back as never written (a 4-bit element poisons its whole byte)."""
    if not where.any():
        return
    first = bits >> 3
    for b in range(max(1, dtype.image_bits // 8)):
        image.unwrite(first + b, where)


def store_stream(dtype: type[dt.Scalar], image: DenseImage, bit_offsets: IntArray, values: npt.ArrayLike,
                 known: BoolArray, held: BoolArray | None = None) -> None:
    """Write a stream's elements at ``bit_offsets`` (one position each, at most once): known values, and
    poison (unwritten bytes holding 0) for the others, as :func:`store_nest` does.

    ``held`` (broadcast like ``known``; default everywhere) is False at positions that hold no element of
    the stream (its padding).  Poison belongs to elements: a byte is unwritten when it receives a poisoned
    element or no known one.  Whole-byte elements fill their bytes alone, so this is ``written = known``; two
    4-bit elements share a byte, and one known element next to a padding nibble leaves the byte written (the
    padding holds no value anyone reads as an element) while a poisoned element poisons its neighbour too (a
    byte has one written flag; poison must never read back as known).
    """
    vals = dt.as_storage(dtype, values)
    k = np.broadcast_to(np.asarray(known, dtype=bool), vals.shape)
    store(dtype, image, bit_offsets, vals if all_true(k) else np.where(k, vals, np.zeros((), dtype=vals.dtype)))
    if dtype.image_bits != 4 or held is None:
        unwrite(image, bit_offsets, ~k, dtype)
        return
    h = np.broadcast_to(np.asarray(held, dtype=bool), vals.shape)
    byte = np.asarray(bit_offsets, dtype=np.int64) >> 3
    first, slot = np.unique(byte, return_inverse=True)  # the bytes written, and each position's byte
    slot = slot.reshape(byte.shape)
    lead = vals.shape[: vals.ndim - byte.ndim]
    got_known = np.zeros((*lead, first.size), dtype=bool)
    got_poison = np.zeros((*lead, first.size), dtype=bool)
    high = ((np.asarray(bit_offsets, dtype=np.int64) >> 2) & 1).astype(bool)
    for half in (False, True):  # a byte takes at most one low and one high nibble of a stream
        at = high == half
        got_known[..., slot[at]] |= k[..., at]
        got_poison[..., slot[at]] |= (~k & h)[..., at]
    unwrite(image, first << 3, got_poison | ~got_known, dtype)
