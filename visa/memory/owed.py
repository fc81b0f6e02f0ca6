"""The owed-writes protocol's one entry for the layers above memory (issue 23, "Reference mode").

A dense image may *owe* writes instead of making them (:mod:`visa.memory.pending`, issue 15): zeros where a dead
image wrote its memory (fills), and the bytes of slices a broadcast left as copies of one slice (copies).  The
manual says what a memory holds, never when a simulator writes it (docs/manual-notes.md "Writes owed instead of
made"): so nothing above the memory layer may see the difference.  The image's own methods keep the protocol
(:class:`~visa.memory.images.DenseImage` makes what is owed before handing out bytes); the engines that take
part in it — a register load that writes one slice of each class of replicas (manual L4063–4113: the TRF/VRF
load of a collected stream), the fetch and the TRF window that read those slices (L1700–1841, L4085–4100) — do
it through the three functions here, and through nothing else (``tests/test_layers.py`` checks that no module
outside ``visa/memory`` names the image's protocol methods):

- :func:`read_units`: bytes of some units, read through pending copies without making them;
- :func:`holders`: which unit holds each unit's bytes now (itself, or the source of its pending copy);
- :func:`store_with_copies`: write whole rows into one unit of each class and leave the others pending copies.

>>> import numpy as np
>>> from visa.dtypes import i8
>>> from visa.memory.images import DenseImage, load
>>> img = DenseImage((4, 8))
>>> enabled = np.array([True, False, False, False])        # unit 0 is written, units 1..3 copy it
>>> store_with_copies(i8, img, 0, enabled, np.arange(1, 9).reshape(1, 8),
...                   np.array([1, 2, 3]), np.array([0, 0, 0]), slice(0, 4))
True
>>> holders(img, np.arange(4), 0, 8).tolist()               # (nothing copied yet)
[0, 0, 0, 0]
>>> read_units(img, np.array([3]), 0, 4).tolist()
[[1, 2, 3, 4]]
>>> load(i8, img, np.arange(0, 64, 8))[0][2].tolist()        # a read of the whole image makes the copies
[1, 2, 3, 4, 5, 6, 7, 8]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.memory.images import ByteArray, DenseImage, IntArray, _byte_nest, store_nest
from visa.memory.known import known_everywhere
from visa.memory.units import enabled_units

__all__ = ["read_units", "holders", "store_with_copies", "OVERWRITTEN"]

OVERWRITTEN = fastpaths.register("memory.overwritten-copies", "a store that rewrites whole rows of replicated units "
                                 "drops the pending copies it overwrites instead of making them first (issue 24)")


def read_units(image: DenseImage, units: IntArray, lo: int, hi: int) -> ByteArray:
    """A copy of bytes ``[lo, hi)`` of the (flat) ``units`` of ``image``: ``(len(units), hi - lo)``, read through
    pending copies without making them (a TRF window of slices that share their weights reads one period of
    them, L4085–4100)."""
    return image._read_units(units, lo, hi)


def holders(image: DenseImage, units: IntArray, lo: int, hi: int) -> IntArray | None:
    """For a read of bytes ``[lo, hi)`` of the (flat) ``units``: the unit that holds each one's bytes now (itself,
    or the source of its pending copy), when pending copies hold them all; else None (read the units
    themselves).  The fetch reads each class's source once (a DM read, L1700–1841)."""
    return image._sources(units, lo, hi)


def store_with_copies(dtype: type[dt.Scalar], image: DenseImage, bit_base: int, enabled: npt.NDArray[np.bool_],
                      values: npt.NDArray[Any], dst: IntArray, src: IntArray, span: slice) -> bool:
    """Write the known whole-byte elements ``values`` (``(enabled units, elements)``, in unit order) from bit
    ``bit_base`` of the units ``enabled`` marks (a mask of the image's leading shape), and make bytes of units
    ``dst`` pending copies of those of units ``src`` (each in ``enabled``): as that write into ``dst`` would,
    they are marked written at once.  ``span`` is the range of (flat) units the write and the copies cover
    together: the zeros owed there are not written.  A register load of slices whose streams are replicas
    (L4063–4113).  False (nothing written, nothing owed changed) when the rows cannot be stored as one loop
    nest of whole bytes."""
    rows = enabled_units(image, enabled)
    loops = ((values.shape[-1], 1),)
    if values.ndim != 2 or _byte_nest(dtype, rows, bit_base, loops) is None:
        return False  # (checked before anything changes: the store below then always runs)
    lo = bit_base // 8
    hi = lo + values.shape[-1] * (dtype.image_bits // 8)
    image._cover(span, lo, hi)
    if OVERWRITTEN.on:  # (the copies owed inside the box are overwritten below: not made)
        image._drop_overwritten(span, lo, hi)
    stored = store_nest(dtype, rows, bit_base, loops, values, known_everywhere(values.shape))
    assert stored, "a row of whole-byte elements inside the image stores as one loop nest"
    image._write_copies(dst, src, lo, hi)
    return True
