"""The written-mask of a byte image, kept by page (issue 15; docs/manual-notes.md "Written-mask by page").

Every byte of a memory image starts *poisoned* and becomes known when written (manual L134–140; a value read
from a byte never written is poison).  A mask of one bool per byte states that exactly, but costs a byte of
memory and a byte of traffic per data byte, although almost every write writes whole ranges of known data.

:class:`PageMask` keeps, for every *unit* (a slice, a row...) and every page of ``page`` bytes of it, a state:

* ``NONE`` — no byte of the page was written (poison);
* ``ALL`` — every byte of the page was written (known);
* ``MIXED`` — the byte mask of the page says which were written.

The byte mask (an array the image allocates lazily: pages of it never touched cost no memory) is authoritative
in ``MIXED`` pages only, and holds zeros everywhere else (the invariant every method keeps).  So a byte is
known iff its page is ``ALL`` or its mask byte is set: ``known = mask | (state == ALL)``.  Whole ranges
written with known data (or poisoned) change the states of the pages they cover and write mask bytes only on
the partial pages at their two ends (:meth:`PageMask.mark`); anything else first *materialises* its pages
(``ALL`` → mask filled with True, ``NONE`` → the zeros already there; both become ``MIXED``) and then writes
the mask bytes as before.  Reads ask :meth:`PageMask.all_known` first and read no mask when it holds.

>>> import numpy as np
>>> pm = PageMask(np.zeros((2, 40), bool), page=16)
>>> pm.mark(slice(None), 4, 36, True)           # pages 0 and 2 partial (mask bytes), page 1 whole (state only)
>>> pm.state.tolist(), int(pm.mask.sum())
([[2, 1, 2], [2, 1, 2]], 32)
>>> pm.all_known(slice(None), 4, 36), pm.all_known(slice(None), 3, 36)
(True, False)
>>> pm.known_at(slice(None), np.array([3, 4, 20, 35, 36]))[0].tolist()
[False, True, True, True, False]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa.memory import fast_settle
from visa.memory.arena import lazy_zeros

__all__ = ["PageMask", "NONE", "ALL", "MIXED", "PAGE_BYTES", "Units"]

NONE, ALL, MIXED = 0, 1, 2

#: The default page: the system's page, so that a page of mask never written is a page of memory never mapped.
PAGE_BYTES = 4096

#: Which units an operation concerns: a slice of them, or their (flat) indices.
Units = slice | npt.NDArray[np.int64]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class PageMask:
    """The written-state of ``units × n`` bytes: a state per page of every unit, and the byte mask ``mask``
    (``(units, n)`` bools, a view of the image's mask) authoritative in ``MIXED`` pages (module docstring).

    Given only the mask's shape ``(units, n)``, the mask is made (zeros, mapped lazily: :func:`lazy_zeros`) the
    first time something asks for it: a region only ever written whole (a host buffer an HBM region adopted, a
    weight a kernel only reads) never has one, and a mask of zeros is what a page never ``MIXED`` holds anyway.

    ``page`` is the page size in bytes (any positive size: tests use small ones); the last page of a unit may
    be shorter.  Every method takes the units it concerns as a slice or an array of unit indices.
    """

    __slots__ = ("_mask", "shape", "state", "page", "n", "npages")

    def __init__(self, mask: BoolArray | tuple[int, int], page: int = PAGE_BYTES,
                 state: npt.NDArray[np.uint8] | None = None) -> None:
        self._mask = None if isinstance(mask, tuple) else mask
        self.shape: tuple[int, int] = (int(mask[0]), int(mask[1])) if isinstance(mask, tuple) else (
            int(mask.shape[0]), int(mask.shape[1]))
        self.n = self.shape[1]
        self.page = max(1, int(page))  # (a page holds at least one byte)
        self.npages = -(-self.n // self.page)
        self.state: npt.NDArray[np.uint8] = (np.zeros((self.shape[0], self.npages), np.uint8) if state is None
                                             else state)

    @property
    def mask(self) -> BoolArray:
        """The byte mask, ``(units, n)`` bools (made on first use when only its shape was given)."""
        if self._mask is None:
            self._mask = lazy_zeros(self.shape, np.dtype(bool))
        return self._mask

    @property
    def has_mask(self) -> bool:
        """Whether the byte mask exists yet (False: every byte of it is zero)."""
        return self._mask is not None

    # -- page arithmetic ------------------------------------------------------------------------------------
    def _pages(self, lo: int, hi: int) -> tuple[int, int]:
        """The pages ``[p0, p1)`` that bytes ``[lo, hi)`` touch."""
        return lo // self.page, -(-hi // self.page)

    def _end(self, p: int) -> int:
        return min((p + 1) * self.page, self.n)

    def _ids(self, us: Units) -> IntArray:
        if isinstance(us, slice):
            return np.arange(self.state.shape[0], dtype=np.int64)[us]
        return np.asarray(us, dtype=np.int64)

    def _blocks(self) -> npt.NDArray[np.bool_]:
        """The mask as ``(units, full pages, page)`` (a view: the last, shorter page left out)."""
        full = self.n // self.page
        out: BoolArray = np.lib.stride_tricks.as_strided(
            self.mask, shape=(self.mask.shape[0], full, self.page),
            strides=(self.mask.strides[0], self.page * self.mask.strides[1], self.mask.strides[1]))
        return out

    def _fill(self, units: IntArray, pages: IntArray, value: bool) -> None:
        """Set the mask bytes of the pages ``(units[k], pages[k])``."""
        if not units.size:
            return
        full = self.n // self.page
        whole = pages < full
        if whole.any():
            self._blocks()[units[whole], pages[whole]] = value
        if not whole.all():  # the shorter last page
            self.mask[units[~whole], full * self.page:] = value

    # -- queries --------------------------------------------------------------------------------------------
    def all_known(self, us: Units, lo: int, hi: int) -> bool:
        """Were all bytes ``[lo, hi)`` of the units written (True for an empty range)?  Reads no mask."""
        if hi <= lo:
            return True
        p0, p1 = self._pages(lo, hi)
        st = self.state[us, p0:p1]
        if bool((st == ALL).all()):
            return True
        if bool((st == NONE).any()):
            return False
        if fast_settle.EDGES.on and p1 - p0 <= 2 and not self._covers_page(lo, hi):
            return self._edges_known(self._ids(us), lo, hi)  # (memory.edge-pages-unsettled)
        # some pages keep a mask: those it shows wholly written lose it (a mask written by hand, a strided
        # copy), so that the next query reads none; then the pages the range covers in part
        self.settle_range(us, lo, hi)
        st = self.state[us, p0:p1]
        if bool((st == ALL).all()):
            return True
        if bool((st == NONE).any()):
            return False
        ids = self._ids(us)
        if not self._edges_known(ids, lo, hi):
            return False
        inner = self.state[ids, p0:p1]  # the pages the range covers whole: settled, so MIXED is not all written
        if p0 * self.page < lo:
            inner = inner[:, 1:]
        if p1 > p0 and self._end(p1 - 1) > hi and inner.shape[1]:
            inner = inner[:, :-1]
        return not bool((inner == MIXED).any())

    def _covers_page(self, lo: int, hi: int) -> bool:
        """Whether bytes ``[lo, hi)`` cover some page whole."""
        p0, p1 = self._pages(lo, hi)
        return any((max(lo, p * self.page), min(hi, self._end(p))) == (p * self.page, self._end(p))
                   for p in range(p0, p1))

    def _edges_known(self, ids: IntArray, lo: int, hi: int) -> bool:
        """Were the bytes of ``[lo, hi)`` in the pages it covers in part (its first and last) written in every
        unit ``ids`` whose page there is ``MIXED`` (the mask bytes read; the others are not asked)?"""
        p0, p1 = self._pages(lo, hi)
        for p in sorted({p0, p1 - 1}):
            a, b = max(lo, p * self.page), min(hi, self._end(p))
            if a >= b or (a, b) == (p * self.page, self._end(p)):
                continue
            units = ids[self.state[ids, p] == MIXED]
            if units.size and not bool(self.mask[units, a:b].all()):
                return False
        return True

    def none_known(self, us: Units, lo: int, hi: int) -> bool:
        """Was no byte ``[lo, hi)`` of the units written?"""
        if hi <= lo:
            return True
        p0, p1 = self._pages(lo, hi)
        st = self.state[us, p0:p1]
        if bool((st == NONE).all()):
            return True
        if bool((st == ALL).any()):
            return False
        return not bool(self.mask[us, lo:hi].any())

    def known_span(self, us: Units, lo: int, hi: int) -> BoolArray:
        """Whether each byte ``[lo, hi)`` of the units was written: a new ``(units, hi - lo)`` array (exact;
        nothing changes)."""
        p0, p1 = self._pages(lo, hi)
        st = self.state[us, p0:p1]
        if bool((st == ALL).all()):
            return np.ones((st.shape[0], hi - lo), bool)
        whole = np.repeat(st == ALL, self.page, axis=1)[:, lo - p0 * self.page: hi - p0 * self.page]
        if bool((st == MIXED).any()):
            whole |= self.mask[us, lo:hi]
        out: BoolArray = whole
        return out

    def known_at(self, us: Units, idx: IntArray) -> BoolArray:
        """Whether the bytes ``idx`` (any shape, the same in every unit) were written: ``(units, *idx.shape)``."""
        st = self.state[us][:, idx // self.page]
        out: BoolArray = st == ALL
        if bool((st == MIXED).any()):
            out |= self.mask[us][:, idx] if isinstance(us, slice) else self.mask[us[:, None], idx.reshape(-1)
                                                                                  ].reshape(out.shape)
        return out

    # -- changes --------------------------------------------------------------------------------------------
    def materialise(self, us: Units, lo: int, hi: int) -> None:
        """Make the pages bytes ``[lo, hi)`` of the units touch ``MIXED`` (their mask bytes become exact), so
        that the caller may read and write ``mask`` there directly."""
        if hi <= lo:
            return
        p0, p1 = self._pages(lo, hi)
        st = self.state[us, p0:p1]
        if bool((st == MIXED).all()):
            return
        uu, pp = np.nonzero(st == ALL)
        if uu.size:
            self._fill(self._ids(us)[uu], p0 + pp.astype(np.int64), True)
        self.state[us, p0:p1] = MIXED

    def materialise_pairs(self, units: IntArray, pages: IntArray) -> None:
        """:meth:`materialise` the pages ``(units[k], pages[k])`` (repeats allowed)."""
        if not units.size:
            return
        st = self.state[units, pages]
        a = st == ALL
        if a.any():
            self._fill(units[a], pages[a], True)
        self.state[units, pages] = MIXED

    def _word_pages(self, byte: IntArray, nb: int) -> IntArray:
        """The pages of bytes ``byte .. byte + nb - 1`` (flat, with repeats)."""
        b = np.asarray(byte, np.int64).reshape(-1)
        pages = b // self.page
        if nb > 1:  # every page of the word: its first and last byte's, and any between (pages under nb bytes)
            steps = [nb - 1] if self.page >= nb else list(range(1, nb))
            pages = np.concatenate([pages, *[(b + j) // self.page for j in steps]])
        return pages

    def materialise_index(self, us: Units, byte: IntArray, nb: int = 1) -> None:
        """:meth:`materialise` the pages holding bytes ``byte[k] .. byte[k] + nb - 1`` (the same in every unit)
        of the units."""
        if not np.size(byte):
            return
        pages = np.unique(self._word_pages(byte, nb))
        ids = self._ids(us)
        st = self.state[ids[:, None], pages[None, :]]
        uu, pp = np.nonzero(st == ALL)
        if uu.size:
            self._fill(ids[uu], pages[pp], True)
        self.state[ids[:, None], pages[None, :]] = MIXED

    def materialise_bytes(self, units: IntArray, byte: IntArray, nb: int = 1) -> None:
        """:meth:`materialise` the pages holding bytes ``byte[k] .. byte[k] + nb - 1`` of unit ``units[k]``."""
        u, b = np.broadcast_arrays(np.asarray(units, np.int64), np.asarray(byte, np.int64))
        u, b = u.reshape(-1), b.reshape(-1)
        pages = self._word_pages(b, nb)
        u = np.tile(u, pages.size // max(u.size, 1))
        key = np.unique(u * self.npages + pages)
        self.materialise_pairs(key // self.npages, key % self.npages)

    def mark(self, us: Units, lo: int, hi: int, known: bool) -> None:
        """Bytes ``[lo, hi)`` of the units are now all written (``known``) or all poison: the pages they cover
        change state only; the partial pages at the ends get mask bytes (and settle, :meth:`settle`)."""
        if hi <= lo:
            return
        p0, p1 = self._pages(lo, hi)
        f0 = -(-lo // self.page)
        f1 = self.npages if hi >= self.n else hi // self.page
        target = ALL if known else NONE
        if f1 > f0:  # whole pages: mask bytes of MIXED ones back to zero, then the state
            mixed = self.state[us, f0:f1] == MIXED
            if mixed.any():  # (np.nonzero only then: it costs a few µs even when nothing is found)
                uu, pp = np.nonzero(mixed)
                self._fill(self._ids(us)[uu], f0 + pp.astype(np.int64), False)
            self.state[us, f0:f1] = target
        edges = [p for p in {p0, p1 - 1} if not f0 <= p < f1]
        for p in edges:
            a, b = max(lo, p * self.page), min(hi, self._end(p))
            st = self.state[us, p]
            change = np.flatnonzero(st != target)
            if not change.size:
                continue
            units = self._ids(us)[change]
            self.materialise_pairs(units, np.full(units.size, p, np.int64))
            self.mask[units, a:b] = known
            self.settle(units, p)

    def settle(self, units: IntArray, p: int) -> None:
        """Pages ``p`` of ``units`` that are ``MIXED`` but wholly written (or wholly poison) become ``ALL``
        (``NONE``), their mask bytes zero."""
        units = units[self.state[units, p] == MIXED]
        if not units.size:
            return
        a, b = p * self.page, self._end(p)
        if fast_settle.SAMPLES.on and b - a == self.page:  # (a few sampled bytes first: a page cut by a write)
            full, empty = fast_settle.classify(self._blocks(), units, np.full(units.size, p, np.int64))
        else:
            block = self.mask[units, a:b]
            full, empty = np.asarray(block.all(axis=1)), ~np.asarray(block.any(axis=1))
        if full.any():
            self.mask[units[full], a:b] = False
            self.state[units[full], p] = ALL
        if empty.any():
            self.state[units[empty], p] = NONE

    def settle_range(self, us: Units, lo: int, hi: int) -> None:
        """:meth:`settle` every page bytes ``[lo, hi)`` of the units touch (after a write of their mask)."""
        if hi <= lo:
            return
        ids = self._ids(us)
        p0, p1 = self._pages(lo, hi)
        full = self.n // self.page
        if p1 > full:  # the shorter last page
            self.settle(ids, full)
            p1 = full
        if p1 <= p0:
            return
        uu, pp = np.nonzero(self.state[ids, p0:p1] == MIXED)
        for k in range(0, uu.size, 1024):  # a few MB of mask at a time
            units, pages = ids[uu[k: k + 1024]], p0 + pp[k: k + 1024].astype(np.int64)
            if fast_settle.SAMPLES.on:
                whole, empty = fast_settle.classify(self._blocks(), units, pages)
            else:
                block = self._blocks()[units, pages]
                whole, empty = np.asarray(block.all(axis=1)), ~np.asarray(block.any(axis=1))
            if whole.any():
                self._fill(units[whole], pages[whole], False)
                self.state[units[whole], pages[whole]] = ALL
            if empty.any():
                self.state[units[empty], pages[empty]] = NONE

    def copy_from(self, other: PageMask, at: int) -> None:
        """Take ``other``'s states (one unit) as bytes ``[at, at + other.n)`` of unit 0 (a region merged into a
        larger one)."""
        n = other.n
        if other.all_known(slice(None), 0, n):
            self.mark(slice(None), at, at + n, True)
        elif not other.none_known(slice(None), 0, n):
            self.materialise(slice(None), at, at + n)
            self.mask[0, at: at + n] = other.known_span(slice(None), 0, n)[0]


def nest_offsets(byte_base: int, nest: Any) -> IntArray:
    """The byte offset of every position of a byte loop nest (``(size, stride)`` per loop, outermost first):
    an array of the nest's shape."""
    off = np.full((), byte_base, dtype=np.int64)
    for n, s in nest:
        off = off[..., None] + np.arange(n, dtype=np.int64) * s
    return off
