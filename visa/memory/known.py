"""All-known masks as structure: a stream or window whose every element is known carries ``known`` as a
read-only stride-0 broadcast of True (no memory), and :func:`all_true` answers ``known.all()`` for it in O(1).

The written-mask of the byte images is kept by page (:mod:`visa.memory.pages`): where the bytes a read reaches
were all written (``DenseImage.all_written``), every element read is known (manual L1071–1093: an element is
poison when a byte of it was never written), and the engines pass that on without a per-element array.
Whoever must write into a ``known`` array first makes it writable with :func:`writable` (a copy only when it is
such a broadcast, or read-only).

>>> k = known_everywhere((512, 4, 2048))
>>> k.strides, k.flags.writeable, all_true(k), all_true(k[3:7].reshape(-1))
((0, 0, 0), False, True, True)
>>> all_true(np.array([True, False]))
False
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["known_everywhere", "broadcast_one", "all_true", "is_everywhere", "writable", "known_and", "copy_known"]

BoolArray = npt.NDArray[np.bool_]

_TRUE = np.ones(1, dtype=bool)
_TRUE.flags.writeable = False


def known_everywhere(shape: int | Sequence[int]) -> BoolArray:
    """A read-only ``known`` of ``shape`` that is True everywhere: a broadcast of one True (no memory; made
    directly as that view, every stride 0 — ``np.broadcast_to`` builds the same array in ten times the time, and a
    pass asks for several)."""
    return broadcast_one(_TRUE, shape)


def broadcast_one(one: npt.NDArray[Any], shape: int | Sequence[int]) -> npt.NDArray[Any]:
    """``np.broadcast_to(one[0], shape)`` for a read-only one-element array ``one``, made directly as that view
    (every stride 0; read-only)."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    out: npt.NDArray[Any] = np.ndarray(dims, dtype=one.dtype, buffer=one, strides=(0,) * len(dims))
    return out


def is_everywhere(known: BoolArray) -> bool:
    """Is ``known`` a broadcast of one True value (every stride 0; O(1))?"""
    return known.dtype == np.bool_ and all(s == 0 for s in known.strides) and (known.size == 0 or bool(known.flat[0]))


def all_true(known: npt.ArrayLike) -> bool:
    """``known.all()``, without reading a broadcast axis more than once: O(1) for a stride-0 broadcast of True
    (:func:`known_everywhere`, and any view of it), else the reduction over the axes that are not broadcast."""
    arr = known if type(known) is np.ndarray else np.asarray(known)
    if arr.size == 0:
        return True
    if arr.ndim and not any(arr.strides):  # (one value broadcast: a known_everywhere, or a view of one)
        return bool(arr.item(0))
    if arr.ndim and any(s == 0 for s in arr.strides):
        arr = arr[tuple(slice(0, 1) if s == 0 else slice(None) for s in arr.strides)]
    return bool(arr.all())


def writable(known: BoolArray) -> BoolArray:
    """``known`` itself when it can be written, else a writable copy (a broadcast becomes an array)."""
    if known.flags.writeable and not any(s == 0 for s, n in zip(known.strides, known.shape, strict=True) if n > 1):
        return known
    return np.array(known, dtype=bool)


def known_and(parts: Sequence[BoolArray | bool], shape: Sequence[int]) -> BoolArray:
    """The elementwise AND of known-masks (each an array broadcastable to ``shape``, or a Python bool), of
    ``shape``, read-only, and without a pass over the elements where it can: parts that are True everywhere
    (``True``, :func:`known_everywhere`) drop out; none left gives :func:`known_everywhere`; one left is
    returned as a read-only broadcast view of itself (no copy; a writer copies it with :func:`writable`); a
    ``False`` gives all-unknown.  (An element is known only where every input it reads is, L1071–1093.)

    >>> a = np.array([True, False])
    >>> known_and([True, known_everywhere(2)], (2,)).strides, known_and([a, True], (2,)).tolist()
    ((0,), [True, False])
    >>> known_and([a, np.array([False, True])], (2,)).tolist(), known_and([a, False], (2,)).tolist()
    ([False, False], [False, False])
    """
    shape = tuple(shape)
    left: list[BoolArray] = []
    for p in parts:
        if isinstance(p, (bool, np.bool_)):
            if not p:
                return np.zeros(shape, dtype=bool)
            continue
        arr = np.asarray(p, dtype=bool)
        if not is_everywhere(arr):
            left.append(arr)
    if not left:
        return known_everywhere(shape)
    if len(left) == 1:
        out: BoolArray = np.broadcast_to(left[0], shape)  # a read-only view
        return out
    acc = np.logical_and(left[0], left[1])
    for arr in left[2:]:
        acc = np.logical_and(acc, arr, out=acc if np.broadcast_shapes(acc.shape, arr.shape) == acc.shape else None)
    out = np.broadcast_to(acc, shape)
    return out


def copy_known(known: BoolArray) -> BoolArray:
    """A copy of ``known`` that a stage keeps as its own, except that a broadcast of True (read-only, no memory)
    is kept as it is: copying it would make 1 byte per element of a mask that says nothing."""
    return known if is_everywhere(known) else known.copy()
