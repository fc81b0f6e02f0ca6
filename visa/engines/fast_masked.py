"""Fast path ``fetch.masked-known`` (issue 24): a masked fetch (manual L1877–1935) whose unmasked positions were
all written is known everywhere: it is read as one strided copy, and its masked lanes are then filled.

The reference (:func:`visa.engines.fetch.read`, then :func:`visa.engines.fetch.adapt`) reads every position's
value and known-mask, makes the stream's padding poison, then writes ``pad_value`` at the masked positions and
marks them known.  When every invalid (padding) position is masked and every unmasked position's bytes were
written, the result is known everywhere: the bytes read at the unmasked positions, ``pad_value`` at the masked
ones.  Where the mask is one loop of the sequencer's nest cut to a range (a padded lane: ``W # 8`` masks index 7
of the innermost loop), the written-state of the unmasked positions is asked of the image over the nest with that
loop cut (:func:`visa.memory.images.nest_elements_written`: the elements' own bytes, the padding between them
left out), and the masked lanes are filled by one strided assignment (:func:`fill`).

``fetch.masked-fill-words``: that assignment writes the pad value an element at a time, a few elements a row (four
bf16 lanes of eight: ``H0 % 4 # 8``), where numpy's loop costs more than the stores.  When the masked lanes of
every row are whole 8-, 4- or 2-byte words of a C-ordered buffer, the same bytes are written a word at a time
(the pad value's bytes repeated across the word): 1.6 → 0.12 ms for a 512 × 1024 × 8 bf16 stream.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.memory.fast_written import elements_written
from visa.memory.images import DenseImage
from visa.memory.units import enabled_units

__all__ = ["MASKED", "FILL_WORDS", "Cut", "unmasked_cut", "written_cut", "fill", "fill_views"]

MASKED = fastpaths.register("fetch.masked-known", "a masked fetch whose unmasked positions were all written is "
                            "known everywhere: asked of the nest without its masked lanes, read in one strided "
                            "copy, the masked lanes filled by one assignment")

FILL_WORDS = fastpaths.register("fetch.masked-fill-words", "the masked lanes of a masked fetch filled with the pad "
                                "value a whole word (8, 4 or 2 bytes: the pad's bytes repeated) at a time, not an "
                                "element at a time")

BoolArray = npt.NDArray[np.bool_]
Loops = tuple[tuple[int, int], ...]


class Cut:
    """The mask as loop ``loop`` of a nest (``(size, stride)``, outermost first) cut to ``[lo, hi)``: the
    positions whose index along that loop is outside the range are the masked ones, whatever the other loops'
    indices.  ``loops`` is the nest of the unmasked positions, ``shift`` elements after the nest's base."""

    __slots__ = ("loop", "lo", "hi", "loops", "shift", "sizes")

    def __init__(self, loops: Loops, loop: int, lo: int, hi: int) -> None:
        self.loop, self.lo, self.hi = loop, lo, hi
        self.sizes = tuple(n for n, _ in loops)
        self.loops = tuple((hi - lo, s) if k == loop else (n, s) for k, (n, s) in enumerate(loops))
        self.shift = lo * loops[loop][1]


def unmasked_cut(loops: Loops, mask: BoolArray) -> Cut | None:
    """The :class:`Cut` that ``mask`` (one bool per stream position, in the nest's C order) is, or None (no
    loop cut to one non-empty range masks exactly those positions).

    >>> m = np.zeros((4, 8), dtype=bool); m[:, 7] = True
    >>> c = unmasked_cut(((4, 8), (8, 1)), m.reshape(-1))
    >>> (c.loop, c.lo, c.hi, c.loops, c.shift)
    (1, 0, 7, ((4, 8), (7, 1)), 0)
    >>> m[:, 0] = True; unmasked_cut(((4, 8), (8, 1)), m.reshape(-1)).loops, c.shift
    (((4, 8), (6, 1)), 0)
    >>> m[0, 3] = True; unmasked_cut(((4, 8), (8, 1)), m.reshape(-1)) is None
    True
    """
    if not loops or math.prod(n for n, _ in loops) != mask.size:
        return None
    # (a pure function of the loops and the mask's bits: remembered under them, packed — a fetch's mask is
    # asked again on every launch, and finding the cut costs a dozen numpy calls)
    return _cut_of(tuple(loops), mask.size, np.packbits(mask).tobytes())


@functools.lru_cache(maxsize=256)
def _cut_of(loops: Loops, size: int, bits: bytes) -> Cut | None:
    """:func:`unmasked_cut` of the mask whose ``size`` bits are packed in ``bits`` (remembered: the result is
    never modified)."""
    sizes = tuple(n for n, _ in loops)
    mask = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), count=size).astype(bool)
    if not mask.any():
        return None
    m = mask.reshape(sizes)
    for k, n in enumerate(sizes):
        line = m[(0,) * k + (slice(None),) + (0,) * (len(sizes) - k - 1)]
        kept = np.flatnonzero(~line)
        if kept.size == 0 or int(kept[-1]) - int(kept[0]) + 1 != kept.size:
            continue  # every index masked, or a hole inside the range
        shape = [1] * len(sizes)
        shape[k] = n
        if np.array_equal(m, np.broadcast_to(line.reshape(shape), m.shape)):
            return Cut(loops, k, int(kept[0]), int(kept[-1]) + 1)
    return None


def written_cut(src: type[dt.Scalar], images: Sequence[DenseImage], lv: BoolArray,
                nest: tuple[int, tuple[tuple[int, int], ...]], cut_out: BoolArray) -> Cut | None:
    """The :class:`Cut` that ``cut_out`` (one bool per position of the nest ``(bit base, loops)``) is, when every
    element of the nest so cut was written in every slice that holds data (``lv``, per chip;
    :func:`~visa.memory.images.nest_elements_written`, remembered by ``memory.written-memo``); else None."""
    cut = unmasked_cut(nest[1], cut_out)
    if cut is None:
        return None
    base = nest[0] + cut.shift * src.image_bits
    ok = all(elements_written(src, enabled_units(img, lv[c]), base, cut.loops)  # (memory.written-memo)
             for c, img in enumerate(images) if lv[c].any())
    return cut if ok else None


def fill(values: npt.NDArray[Any], rows: int, cut: Cut, pad: Any) -> None:
    """Write ``pad`` at the masked positions of ``values`` (``rows`` stream rows, each the nest's positions in C
    order): the cut loop's indices below ``lo`` and from ``hi`` on, by strided assignment."""
    for view, value in fill_views(values, rows, cut, pad):
        view[...] = value


def fill_views(values: npt.NDArray[Any], rows: int, cut: Cut, pad: Any) -> list[tuple[npt.NDArray[Any], Any]]:
    """The views of ``values`` that :func:`fill` assigns and the value each is assigned (the pad, or its bytes
    repeated as a word by ``fetch.masked-fill-words``), each view's first axis the ``rows`` stream rows: assigning
    the same rows of every view fills those rows (a band of them while in the cache,
    :mod:`visa.engines.fast_masked_read`)."""
    if FILL_WORDS.on:
        words = _fill_words(values, rows, cut, pad)
        if words is not None:
            return words
    view = values.reshape(rows, *cut.sizes)
    lead = (slice(None),) * (1 + cut.loop)  # the rows and the loops outside the cut one
    out = []
    if cut.lo:
        out.append((view[(*lead, slice(0, cut.lo))], pad))
    if cut.hi < cut.sizes[cut.loop]:
        out.append((view[(*lead, slice(cut.hi, None))], pad))
    return out


def _fill_words(values: npt.NDArray[Any], rows: int, cut: Cut,
                pad: Any) -> list[tuple[npt.NDArray[Any], Any]] | None:
    """:func:`fill_views` by words (``fetch.masked-fill-words``): the same bytes, when ``values`` is C-ordered and
    the masked lanes of every index of the loops outside the cut one are whole words of it; None otherwise."""
    item = values.dtype.itemsize
    if not values.flags.c_contiguous or values.size == 0 or item >= 8:
        return None
    inner = int(np.prod(cut.sizes[cut.loop + 1:], dtype=np.int64)) * item  # bytes of one index of the cut loop
    run = cut.sizes[cut.loop] * inner  # bytes of one index of the loops outside it
    pieces = [(a * inner, b * inner) for a, b in ((0, cut.lo), (cut.hi, cut.sizes[cut.loop])) if b > a]
    for word in (8, 4, 2):
        if word <= item or word % item or run % word or any(a % word or b % word for a, b in pieces):
            continue
        kind = np.dtype(f"u{word}")
        patt = np.full(word // item, pad, dtype=values.dtype).view(kind)[0]
        words = values.reshape(-1).view(np.uint8).view(kind).reshape(rows, -1, run // word)
        return [(words[:, :, a // word: b // word], patt) for a, b in pieces]
    return None
