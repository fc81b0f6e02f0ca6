"""Fast path ``memory.nest-words`` (issue 24): a loop nest of elements of whole bytes whose innermost loop runs
over contiguous elements is read as 8-, 4- or 2-byte words (and written so, when its values' last axis is such a
run).

The reference (:func:`visa.memory.images.load_nest_values`) reads a nest one element word at a time: an i8 fetch
whose packets are runs of 8 bytes (a lane of 8 i8) steps numpy's copy 8 bytes at a time, a loop of its own for
every run.  A run of ``n`` contiguous ``nb``-byte elements is the same bytes as ``n · nb / W`` contiguous ``W``-byte
words: the nest with its innermost loop ``(n, nb)`` replaced by ``(n · nb / W, W)`` reads, into the same
C-contiguous buffer viewed as ``W``-byte words, every byte the reference reads, in the same order.

``memory.written-pieces`` (:func:`visa.memory.images.nest_elements_written`): whether every element a nest visits
was written, asked of each step of its widest loop apart when that loop steps past everything the others span
(an interleaved pair far apart: two tensors with unwritten bytes between them).  The reference asks of the
pages over the whole span, finds the unwritten ones between the pieces and answers "not known to be"; every
element of the nest is an element of one piece, so the pieces' answers together are the nest's (exact where
each piece's pages are all written or all keep a mask, as the reference is), and a fetch of such a pair takes
the paths that need its elements written (``fetch.padded-known``, ``fetch.masked-known``).

``memory.nest-copy-split``: a strided copy between a nest's view and a buffer whose last axes are a few words
(a padded packet: two 8-byte words a time step) makes numpy run its inner loop over those few words, once per
time step of every slice.  Copying each index of those short axes apart (the same elements, each written once)
makes the long axis the inner loop: 1.6 → 0.4 ms for ``(2, 256, 512, 2, 2)`` words.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

WIDE = fastpaths.register("memory.nest-words", "a byte loop nest whose innermost loop runs over contiguous "
                          "elements is read as 8-, 4- or 2-byte words, not element by element")

PIECES = fastpaths.register("memory.written-pieces", "whether a nest's elements were all written asked of each "
                            "step of its widest loop apart when that loop steps past the others' span (an "
                            "interleaved pair far apart), not of the pages over the whole span")

SPLIT = fastpaths.register("memory.nest-copy-split", "a strided copy whose last axes are a few words is made one "
                           "index of those axes at a time, so that numpy's inner loop runs over a long axis")

#: Steps of the widest loop asked apart at most (:data:`PIECES`).
PIECE_LIMIT = 16

#: Word sizes a run may be read as (bytes), largest first.
_WORDS = (8, 4, 2)
_UNSIGNED = {w: np.dtype(f"<u{w}") for w in _WORDS}  # (each word's type, made once)

Nest = tuple[tuple[int, int], ...]


def widen(nb: int, nest: Nest) -> tuple[int, Nest] | None:
    """``(W, nest')``: the nest of ``nb``-byte elements read as ``W``-byte words (``W > nb``), or None when its
    innermost loop is not a run of contiguous elements whose bytes ``W`` divides.

    Loops that continue the run (an outer loop whose stride is the run's bytes) join it first, and a run of one
    word is no loop.

    >>> widen(1, ((128, 32), (2, 16384), (8, 1)))
    (8, ((128, 32), (2, 16384)))
    >>> widen(1, ((128, 64), (64, 1)))
    (8, ((1024, 8),))
    >>> widen(4, ((64, 4),)), widen(1, ((3, 1),)), widen(1, ((8, 2),))
    ((8, ((32, 8),)), None, None)
    """
    if not nest:
        return None
    n, stride = nest[-1]
    if stride != nb:
        return None
    run, outer = n * nb, list(nest[:-1])
    while outer and outer[-1][1] == run:  # (m, run) around a run of `run` bytes: one run of m · run bytes
        run *= outer.pop()[0]
    word = next((w for w in _WORDS if w > nb and run % w == 0), None)
    if word is None:
        return None
    return word, (*outer, (run // word, word)) if run > word else tuple(outer)


def widen_values(nb: int, nest: Nest, words: npt.NDArray[Any]) -> tuple[int, Nest, npt.NDArray[Any]] | None:
    """:func:`widen` for a write: ``(W, nest', words')`` with ``words`` (``nb``-byte words, in the nest's C order
    after the units; its last axis contiguous) seen as ``W``-byte words, or None when its last axis cannot be
    (a broadcast, a stride, a length whose bytes ``W`` does not divide).

    >>> w = np.arange(32, dtype=np.uint8).reshape(2, 16)
    >>> word, nest, wide = widen_values(1, ((2, 64), (16, 1)), w)
    >>> word, nest, wide.shape, bool((wide.view(np.uint8).reshape(2, 16) == w).all())
    (8, ((2, 64), (2, 8)), (2, 2), True)
    """
    got = widen(nb, nest)
    if got is None or words.ndim == 0 or words.strides[-1] != words.itemsize or words.itemsize != nb:
        return None
    word, wide = got
    if (words.shape[-1] * nb) % word:
        return None
    out = words.view(_UNSIGNED[word])  # (the last axis contiguous: a view, no copy)
    return word, wide, out


def pieces(nest: Nest, nb: int) -> list[tuple[int, Nest]] | None:
    """``(byte offset, nest)`` of each step of the widest loop of ``nest`` (``(size, stride)`` of ``nb``-byte
    words, outermost first) with the other loops, when it has 2 to :data:`PIECE_LIMIT` steps and each step lies
    past the span of the others (no word of one piece inside another's hull); else None."""
    if len(nest) < 2:
        return None
    k = max(range(len(nest)), key=lambda i: abs(nest[i][1]))
    n, s = nest[k]
    rest = nest[:k] + nest[k + 1:]
    lo = sum(min(0, (m - 1) * t) for m, t in rest)
    hi = sum(max(0, (m - 1) * t) for m, t in rest)
    if not 1 < n <= PIECE_LIMIT or hi - lo + nb > abs(s):
        return None
    return [(i * s, rest) for i in range(n)]


#: The short trailing axes a copy is split over: each at most this long, together at most :data:`_SPLIT_MAX`.
_SHORT = 4
_SPLIT_MAX = 16


def copy_split(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> bool:
    """``np.copyto(dst, src)`` (the same shape) one index of its short trailing axes at a time
    (:data:`SPLIT`), when they are short and the axis before them is long; False (nothing copied) otherwise."""
    shape = dst.shape
    if np.shape(src) != shape or dst.ndim < 2:
        return False
    peel, count = 0, 1
    while peel < dst.ndim - 1 and shape[-1 - peel] <= _SHORT and count * shape[-1 - peel] <= _SPLIT_MAX:
        count *= shape[-1 - peel]
        peel += 1
    if peel == 0 or count == 1 or shape[-1 - peel] < 8 * _SHORT:
        return False
    for idx in np.ndindex(*shape[dst.ndim - peel:]):
        key: tuple[Any, ...] = (Ellipsis, *idx)  # (typed: numpy 2.0's stubs refuse the literal tuple)
        np.copyto(dst[key], src[key])
    return True
