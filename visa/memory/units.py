"""Some units of a dense image (the enabled slices of a DM image, the rows of a TRF...) seen as one image.

Engines move data only through :class:`UnitSelection`: it reads and writes the selected units only.  When the
selection is a box (a range of clusters × a range of slices × a range of rows: what a slice bitmap and a Row
count give), it is a view of the image, and a sequencer's loop nest runs on it as one strided copy
(:func:`visa.memory.images.load_nest`); otherwise units are picked by index.  No index of ``units × bytes``
is ever materialised.  The written-state is the base image's, by page (:mod:`visa.memory.pages`): a nest of
known words that covers its bytes marks the selected units' pages written without touching their mask.

>>> import numpy as np
>>> from visa.dtypes import i16
>>> from visa.memory.images import DenseImage, load, store
>>> img = DenseImage((2, 3, 8))
>>> rows = UnitSelection(img, np.array([[True, False, True], [False, False, False]]))
>>> store(i16, rows, np.array([0, 16]), np.array([[1, 2], [3, 4]]))
>>> load(i16, img, np.array([0, 16]))[0][0].tolist(), rows.count
([[1, 2], [0, 0], [3, 4]], 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.memory import fast_nest, fast_units
from visa.memory.images import (
    _ALL_WRITTEN,
    _WORD,
    BoolArray,
    DenseImage,
    IntArray,
    Nest,
    _hulls,
    _known_words,
    _nest_bounds,
    _nest_known,
    _nest_view,
    _nest_words_written,
    _put_known,
    unwrite,
    void_view,
    word_view,
)
from visa.memory.known import all_true
from visa.memory.pages import NONE, PageMask, nest_offsets

__all__ = ["UnitSelection", "enabled_units", "unwrite"]


def _box(enabled: BoolArray) -> tuple[slice, ...] | None:
    """The slices whose product is exactly the True positions of ``enabled``, if it is such a box."""
    box = []
    for k in range(enabled.ndim):
        others = tuple(a for a in range(enabled.ndim) if a != k)
        idx = np.flatnonzero(enabled.any(axis=others) if others else enabled)
        if idx.size == 0:
            return tuple(slice(0, 0) for _ in range(enabled.ndim))
        if int(idx[-1]) - int(idx[0]) + 1 != idx.size:
            return None
        box.append(slice(int(idx[0]), int(idx[-1]) + 1))
    out = tuple(box)
    return out if bool(enabled[out].all()) else None


class UnitSelection(DenseImage):
    """The units of ``base`` (its leading positions) where ``enabled`` is True, as an image of shape
    ``(count, nbytes)``, in C order of the leading positions.

    It gathers and scatters the selected units only; reads return ``(count, *index shape)``.
    """

    __slots__ = ("base", "units", "box")

    def __init__(self, base: DenseImage, enabled: npt.ArrayLike) -> None:  # noqa: D107
        self.base = base
        self.name = base.name
        en = np.broadcast_to(np.asarray(enabled, dtype=bool), base.lead_shape)
        self.units: IntArray
        self.units, self.box = fast_units.selection(en, _box)

    @property
    def nbytes(self) -> int:
        return self.base.nbytes

    @property
    def lead_shape(self) -> tuple[int, ...]:
        return (self.count,)

    @property
    def count(self) -> int:
        """Number of units selected."""
        return int(self.units.size)

    # -- picking the units of an array shaped like the image (data, written-mask, or a word view of them) ----
    def _rows(self, arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """``arr`` (leading shape of the image, then one axis; units equally spaced, as in the image and its
        word views) as ``(all units, last)``: always a view, so that writes reach the image."""
        units = int(np.prod(arr.shape[:-1]))
        step = arr.strides[-2] if arr.ndim >= 2 else 0
        out: npt.NDArray[Any] = np.lib.stride_tricks.as_strided(arr, shape=(units, arr.shape[-1]),
                                                                strides=(step, arr.strides[-1]))
        return out

    def _take(self, arr: npt.NDArray[Any], index: IntArray) -> npt.NDArray[Any]:
        if self.box is not None:
            out: npt.NDArray[Any] = arr[self.box][..., index]
            return out.reshape(self.count, *index.shape)
        picked: npt.NDArray[Any] = self._rows(arr)[self.units.reshape(-1, *([1] * index.ndim)), index]
        return picked

    def _put(self, arr: npt.NDArray[Any], index: IntArray, values: npt.ArrayLike, mask: npt.ArrayLike | None) -> None:
        shape = (self.count, *index.shape)
        vals = np.broadcast_to(values, shape)
        if mask is None:
            if self.box is not None:
                target = arr[self.box]
                target[..., index] = vals.reshape(*target.shape[:-1], *index.shape)
            else:
                self._rows(arr)[self.units.reshape(-1, *([1] * index.ndim)), index] = vals
            return
        nz = np.nonzero(np.broadcast_to(mask, shape))
        self._rows(arr)[(self.units[nz[0]], index[tuple(nz[1:])])] = vals[nz]

    # -- the image interface -----------------------------------------------------------------------------------
    def _pm(self) -> PageMask:
        return self.base._pages

    def gather(self, byte_index: IntArray) -> tuple[npt.NDArray[np.uint8], BoolArray]:
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check(idx)
        return self._take(self.base._data, idx), self._pm().known_at(self.units, idx)

    def _materialise(self, idx: IntArray, nb: int, mask: npt.ArrayLike | None, known: bool = True) -> bool:
        """Materialise the pages a write of ``nb`` bytes at ``idx`` of the selected units (where ``mask``)
        reaches, for a mask write of ``known``; False if there is no mask to write: a write of True over pages
        all written already (a write of False — poison — always has its mask bytes to clear)."""
        if not idx.size or not self.count:
            return False
        pm = self._pm()
        if mask is not None and bool(np.all(mask)):
            mask = None
        if mask is None:
            if known and pm.all_known(self.units, int(idx.min()), int(idx.max()) + nb):
                return False
            pm.materialise_index(self.units, idx, nb)
            return True
        nz = np.nonzero(np.broadcast_to(mask, (self.count, *idx.shape)))
        pm.materialise_bytes(self.units[nz[0]], idx[tuple(nz[1:])], nb)
        return True

    def scatter(self, byte_index: IntArray, values: npt.NDArray[np.uint8], mask: BoolArray | None = None) -> None:
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check(idx)
        self.base._touch_index(idx, 1, self.units)
        self._put(self.base._data, idx, values, mask)
        if self._materialise(idx, 1, mask):
            self._put(self.base._written, idx, True, mask)

    def unwrite(self, byte_index: IntArray, where: BoolArray) -> None:
        """Mark the bytes ``byte_index`` of the units where ``where`` (``(count, len)``) as never written."""
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check(idx)
        if not np.any(where):
            return
        self.base._forget(int(idx.min()), int(idx.max()) + 1)
        if self._materialise(idx, 1, where, known=False):
            self._put(self.base._written, idx, False, where)

    def _gather_words(self, byte_index: IntArray, nb: int) -> tuple[npt.NDArray[Any], BoolArray] | None:
        wv = word_view(self.base._data, nb)
        if wv is None:
            return None
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check_words(idx, nb)
        return self._take(wv, idx), _known_words(self._pm(), self.units, idx, nb)

    def _scatter_words(self, byte_index: IntArray, nb: int, words: npt.NDArray[Any],
                      mask: BoolArray | None = None) -> bool:
        wv, kv = word_view(self.base._data, nb), word_view(self.base._written, nb)
        if wv is None or kv is None:
            return False
        idx = np.asarray(byte_index, dtype=np.int64)
        self._check_words(idx, nb)
        self.base._touch_index(idx, nb, self.units)
        self._put(wv, idx, words, mask)
        if self._materialise(idx, nb, mask):
            self._put(kv, idx, np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb]), mask)
        return True

    def _nest(self, words: npt.NDArray[Any], byte_base: int, nest: Nest) -> npt.NDArray[Any]:
        """The nest's view over the selected units: ``(*box shape, *sizes)``, or over all units (picked by
        the caller) when the selection is not a box."""
        if self.box is not None:
            return _nest_view(words[self.box], byte_base, nest)
        return _nest_view(self._rows(words), byte_base, nest)

    def _read_nest(self, nb: int, byte_base: int, nest: Nest, words: npt.NDArray[Any],
                  known: BoolArray | None, signed: bool = False, void: bool = False) -> bool:
        lo, hi = _nest_bounds(nest)
        r_lo, r_hi = byte_base + lo, byte_base + hi + nb
        # (not None: no other pending copy reaches the bytes the nest reads, the hulls of its steps)
        pieces = [(byte_base + a, byte_base + b) for a, b in _hulls(nest, nb)] if self.base._pending.copies else None
        owner = self.base._sources(self.units, r_lo, r_hi, pieces)
        # (``void``: the words as opaque runs of ``nb`` bytes, any ``nb``: :func:`~visa.memory.images.load_nest_view`)
        raw = self.base._bytes if owner is not None else self.base._raw(r_lo, r_hi)
        wv = void_view(raw, nb) if void else word_view(raw, nb)
        if wv is None:
            return False
        if signed:  # the words as signed integers: a wider ``words`` receives them sign-extended
            wv = wv.view(np.dtype(f"i{nb}"))
        sizes = tuple(n for n, _ in nest)
        if owner is not None:  # pending copies read from their sources (DenseImage._sources)
            _gather_rows(_nest_view(self._rows(wv), byte_base, nest), owner, words.reshape(self.count, *sizes))
        elif self.box is not None:
            src = self._nest(wv, byte_base, nest)
            dst = words.reshape(src.shape)
            if not (fast_nest.SPLIT.on and fast_nest.copy_split(dst, src)):  # (memory.nest-copy-split)
                np.copyto(dst, src)
        else:
            words.reshape(self.count, *sizes)[...] = self._nest(wv, byte_base, nest)[self.units]
        if known is None:  # the caller knows every byte read was written (nest_written)
            return True
        _nest_known(self._pm(), self.units, self.base._pages.mask, nb, byte_base, nest,
                    known.reshape(self.count, *sizes))
        return True

    def _nest_words_written(self, nb: int, byte_base: int, nest: Nest) -> bool:
        def view(kv: npt.NDArray[Any], loops: Nest) -> npt.NDArray[Any]:
            words = self._nest(kv, byte_base, loops)  # (the box's view, or every unit's: the selected picked)
            return words if self.box is not None else words[self.units]

        return _nest_words_written(self._pm(), self.units, self.base._written, nb, byte_base, nest, view)

    def _nest_written(self, lo: int, hi: int) -> bool:
        """Were bytes ``[lo, hi)`` of every selected unit written?  Reads no mask where the pages are all written."""
        return self._pm().all_known(self.units, max(lo, 0), min(hi, self.nbytes))

    @property
    def span(self) -> slice | None:
        """The selected units as a range of the image's units (C order), if they are consecutive."""
        if self.count and int(self.units[-1]) - int(self.units[0]) + 1 == self.count:
            return slice(int(self.units[0]), int(self.units[-1]) + 1)
        return None

    def _write_units(self, arr: npt.NDArray[Any], byte_base: int, nest: Nest, values: npt.ArrayLike,
                     keep: BoolArray | None) -> None:
        """Write ``values`` (``(units written, *sizes)``, or broadcast to it) at the nest's positions of the
        selected units (those ``keep`` says, if given) of ``arr`` (a word view of the data or the mask)."""
        if keep is None and self.box is not None:
            target = self._nest(arr, byte_base, nest)
            if np.ndim(values) and np.shape(values) != target.shape:
                v = np.asarray(values)
                t = target.view()
                try:  # the image's view in the values' shape (no copy of the values, e.g. lanes of wider flits)
                    t.shape = v.shape
                except (AttributeError, ValueError):
                    values = np.reshape(v, target.shape)
                else:
                    np.copyto(t, v)
                    return
            np.copyto(target, values)
            return
        units = self.units if keep is None else self.units[keep]
        _nest_view(self._rows(arr), byte_base, nest)[units] = values

    def _write_nest(self, nb: int, byte_base: int, nest: Nest, words: npt.NDArray[Any], known: BoolArray) -> bool:
        lo, hi = _nest_bounds(nest)
        r_lo, r_hi = byte_base + lo, byte_base + hi + nb
        sizes = tuple(n for n, _ in nest)
        if nb not in _WORD:
            return False
        pm = self._pm()
        covering = math.prod(sizes) * nb == r_hi - r_lo
        ones = np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb])
        span = self.span
        if self.box is not None and all_true(known):  # every element known: one strided copy, no reshaped masks
            if covering and span is not None:  # every byte of the range written: no zeros owed there
                self.base._cover(span, r_lo, r_hi)
            wide = fast_nest.widen_values(nb, nest, words) if fast_nest.WIDE.on else None
            if wide is not None:  # runs of contiguous elements written as wider words (the same bytes)
                nb, nest, words = wide
                ones = np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb])
            wv, kv = word_view(self.base._raw(r_lo, r_hi), nb), word_view(self.base._written, nb)
            if wv is None or kv is None:
                return False
            self.base._touch(r_lo, r_hi, self.units)
            if covering:
                self.base._prefault(self.units, r_lo, r_hi)
            self._write_units(wv, byte_base, nest, words, None)
            us = self.units if span is None else span  # (consecutive units as a slice: basic indexing)
            if covering:
                pm.mark(us, r_lo, r_hi, True)
            elif not pm.all_known(us, r_lo, r_hi):
                pm.materialise(us, r_lo, r_hi)
                self._write_units(kv, byte_base, nest, ones, None)
            return True
        keep = self._changing(nb, byte_base, nest, known, (r_lo, r_hi))
        if keep is None and covering and span is not None:  # every byte of the range written: no zeros owed
            self.base._cover(span, r_lo, r_hi)
        wv, kv = word_view(self.base._raw(r_lo, r_hi), nb), word_view(self.base._written, nb)
        if wv is None or kv is None:
            return False
        self.base._touch(r_lo, r_hi, self.units)
        w = words.reshape(self.count, *sizes)
        k = known.reshape(self.count, *sizes)
        if keep is not None:  # some units stay as they are: write the others, picked by index
            w, k = w[keep], k[keep]
        units = self.units if keep is None else self.units[keep]
        if all_true(k):
            self._write_units(wv, byte_base, nest, w, keep)
            if covering:
                pm.mark(units, r_lo, r_hi, True)
            elif not pm.all_known(units, r_lo, r_hi):
                pm.materialise(units, r_lo, r_hi)
                self._write_units(kv, byte_base, nest, ones, keep)
            return True
        if covering and not k.any():
            self._write_units(wv, byte_base, nest, np.zeros((), wv.dtype), keep)
            pm.mark(units, r_lo, r_hi, False)
            return True
        pm.materialise(units, r_lo, r_hi)
        if keep is None and self.box is not None:
            _put_known(self._nest(wv, byte_base, nest), self._nest(kv, byte_base, nest), words, known, nb)
        else:
            self._write_units(wv, byte_base, nest, w * k, keep)
            self._write_units(kv, byte_base, nest, k * ones, keep)
        return True

    def _write_nest_into(self, nb: int, byte_base: int, nest: Nest,
                        produce: Callable[[npt.NDArray[Any]], bool]) -> bool:
        """:meth:`_write_nest` of elements all known whose words ``produce(view)`` computes straight into the image:
        ``view`` is the nest's writable view ``(units, *sizes)`` of the selected units' words.  False, nothing
        written, when the selection is not a box, the view cannot take that shape, or ``produce`` declines (it
        returns False before writing)."""
        lo, hi = _nest_bounds(nest)
        r_lo, r_hi = byte_base + lo, byte_base + hi + nb
        wv, kv = word_view(self.base._raw(r_lo, r_hi), nb), word_view(self.base._written, nb)
        if wv is None or kv is None or self.box is None:
            return False
        sizes = tuple(n for n, _ in nest)
        target = self._nest(wv, byte_base, nest).view()
        try:
            target.shape = (self.count, *sizes)  # (raises rather than copy: the writes must reach the image)
        except AttributeError:
            return False
        self.base._touch(r_lo, r_hi, self.units)
        if math.prod(sizes) * nb == r_hi - r_lo:  # (every byte of the range about to be written)
            self.base._prefault(self.units, r_lo, r_hi)
        if not produce(target):
            return False
        pm = self._pm()
        if math.prod(sizes) * nb == r_hi - r_lo:  # covering: every byte of the range written, all known
            pm.mark(self.units, r_lo, r_hi, True)
        elif not pm.all_known(self.units, r_lo, r_hi):
            pm.materialise(self.units, r_lo, r_hi)
            self._write_units(kv, byte_base, nest, np.asarray(_ALL_WRITTEN[nb], dtype=_WORD[nb]), None)
        return True

    def _changing(self, nb: int, byte_base: int, nest: Nest, known: BoolArray,
                  span: tuple[int, int]) -> BoolArray | None:
        """The units a nest write changes, if it leaves some as they are (else None): a unit that receives
        only poison where it holds poison already — a slice or cluster a stream holds no data in, over memory
        never written.  (The bytes under poison are undefined: their value is never read as an element.)
        Skipping those keeps memory never written untouched: the system allocates a page of the image on its
        first write."""
        dead = ~known.reshape(self.count, -1).any(axis=1)
        units = self.units[dead]
        if not units.size:
            return None
        clean = np.ones(units.size, dtype=bool)
        d_lo, d_hi = self.base._dirty
        if max(d_lo, span[0]) < min(d_hi, span[1]):  # else no unit was ever written there
            pm = self._pm()
            p0, p1 = span[0] // pm.page, -(-span[1] // pm.page)
            clean = (pm.state[units, p0:p1] == NONE).all(axis=1)
            maybe = np.flatnonzero(~clean)  # some page there was written: is a byte the nest visits?
            if maybe.size:
                off = nest_offsets(byte_base, nest).reshape(-1, 1) + np.arange(nb, dtype=np.int64)
                for lo in range(0, maybe.size, 64):  # a few units at a time
                    part = maybe[lo: lo + 64]
                    clean[part] = ~pm.known_at(units[part], off).reshape(part.size, -1).any(axis=1)
        if not clean.any():
            return None
        keep = np.ones(self.count, dtype=bool)
        keep[np.flatnonzero(dead)[clean]] = False
        return keep


def _gather_rows(rows: npt.NDArray[Any], owner: IntArray, out: npt.NDArray[Any]) -> None:
    """``out[i] = rows[owner[i]]``: few distinct rows (replicas) are written one class at a time, each read
    once (no temporary of the whole result)."""
    uniq, inverse = np.unique(owner, return_inverse=True)
    if 4 * uniq.size > owner.size:
        out[...] = rows[owner]
        return
    inverse = inverse.reshape(-1)
    for j, u in enumerate(uniq.tolist()):
        out[inverse == j] = rows[u]


def enabled_units(image: DenseImage, enabled: npt.ArrayLike) -> UnitSelection:
    """The :class:`UnitSelection` of ``image``'s units where ``enabled`` (the image's leading shape)."""
    return UnitSelection(image, enabled)
