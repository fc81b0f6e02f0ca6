"""A store of known elements over a box of units as a plan: the decisions of :func:`visa.memory.images.store_nest`
made once, the write replayed (issue 24, the register loads' ``collect.load-plan``, :mod:`visa.engines.fast_load_plan`).

:func:`~visa.memory.images.store_nest` of values all known into a :class:`~visa.memory.units.UnitSelection` that is
a box of units, over a loop nest that covers every byte of its range, is one strided copy
(``UnitSelection._write_nest``): before it come a dozen small decisions — the byte nest and whether it is injective,
the units the mask selects and their box, the nest's bounds, whether it covers them, its runs as wider words, the
strided view of the image's words — each a pure function of the image's shape, the element type, the bit base, the
loops, the mask and the values' shape and strides.  :func:`plan` makes them once (``None`` when the store is not such
a copy); :meth:`NestStore.run` then does what ``_write_nest`` does with them, the same calls on the image in the same
order (the owed zeros covered, what is pending in the range made, the touch, the pages asked for, the copy, the
pages marked written), for values of that shape and strides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.memory import fast_nest, fast_prefault
from visa.memory.images import (
    _WORD,
    DenseImage,
    _byte_nest,
    _injective,
    _nest_bounds,
    _nest_view,
    word_view,
)
from visa.memory.units import UnitSelection

__all__ = ["NestStore", "plan"]


@dataclass(frozen=True, eq=False)
class NestStore:
    """The decisions of one store (module docstring): the selected ``units`` (flat, read-only) and ``span`` (them as
    a range, or None), the written bytes ``[lo, hi)`` of each unit, the word each value is written as
    (``word``: its type), the image's byte array the write is planned over (``data``) and ``target``, the words
    written there (a strided view of it, in the values' shape unless ``reshape``); ``starts`` the units' first bytes
    written (the pages :mod:`visa.memory.fast_prefault` asks for)."""

    units: npt.NDArray[np.int64]
    span: slice | None
    lo: int
    hi: int
    word: np.dtype[Any]
    data: npt.NDArray[np.uint8]
    target: npt.NDArray[Any]
    reshape: bool
    starts: npt.NDArray[np.int64]
    asked: tuple[Any, int, int] | None

    def run(self, image: DenseImage, values: npt.NDArray[Any]) -> bool:
        """Write ``values`` (of the shape, strides and type planned for) into ``image`` as ``_write_nest`` does;
        False (nothing written) when the image's bytes are no longer the array planned over."""
        if image._bytes is not self.data:
            return False
        lo, hi = self.lo, self.hi
        words = values.view(self.word)
        if self.span is not None:  # every byte of the range written: no zeros owed there
            image._cover(self.span, lo, hi)
        image._raw(lo, hi)  # (what is pending in the range made)
        us = self.units if self.span is None else self.span  # (a range as a slice: the same units, no reductions)
        image._touch(lo, hi, us)
        if fast_prefault.PREFAULT.on:  # (DenseImage._prefault, its starts planned; nothing to ask: no call)
            asked = self.asked
            if asked is None or not asked[0][asked[1]:asked[2]].all():
                fast_prefault.prefault(self.data.reshape(-1), self.starts, hi - lo)
        np.copyto(self.target, np.reshape(words, self.target.shape) if self.reshape else words)
        image._pages.mark(us, lo, hi, True)
        return True


def plan(dtype: type[dt.Scalar], image: DenseImage, bit_base: int, loops: tuple[tuple[int, int], ...],
         enabled: npt.NDArray[np.bool_], values: npt.NDArray[Any]) -> NestStore | None:
    """The plan of ``store_nest(dtype, enabled_units(image, enabled), bit_base, loops, values, known)`` with every
    element known, for values of ``values``' shape, strides and type; None when that store is not one strided copy
    over a box of units covering its range (the caller stores as the reference does)."""
    if type(image) is not DenseImage or dtype.image_bits % 8 or values.dtype != np.dtype(dtype.storage) \
            or dtype.image_bits != 8 * values.itemsize:
        return None
    sel = UnitSelection(image, enabled)
    got = _byte_nest(dtype, sel, bit_base, loops)
    if got is None or not _injective(got[2], got[0]) or sel.box is None:
        return None
    nb, base, nest = got
    if nb not in _WORD:
        return None
    lo, hi = _nest_bounds(nest)
    r_lo, r_hi = base + lo, base + hi + nb
    if math.prod(n for n, _ in nest) * nb != r_hi - r_lo:  # (not covering: the mask's pages asked, not planned)
        return None
    words = values.view(_WORD[nb])
    wide = fast_nest.widen_values(nb, nest, words) if fast_nest.WIDE.on else None
    if wide is not None:
        nb, nest, words = wide
    wv, kv = word_view(image._bytes, nb), word_view(image._written, nb)
    if wv is None or kv is None:
        return None
    target = _nest_view(wv[sel.box], base, nest)
    reshape = False
    if np.ndim(words) and np.shape(words) != target.shape:
        t = target.view()
        try:  # (UnitSelection._write_units: the image's view in the values' shape, else the values reshaped)
            t.shape = words.shape
        except (AttributeError, ValueError):
            reshape = True
        else:
            target = t
    units = sel.units
    starts = units.astype(np.int64) * image.nbytes + r_lo  # (DenseImage._prefault's, of the units)
    starts.flags.writeable = False
    asked = fast_prefault.asked_range(image._bytes.reshape(-1), starts, r_hi - r_lo)
    return NestStore(units, sel.span, r_lo, r_hi, words.dtype, image._bytes, target, reshape, starts, asked)
