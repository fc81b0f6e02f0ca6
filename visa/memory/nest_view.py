"""A loop nest's elements as a read-only view of an image's bytes, to be read later (issue 24, ``fetch.dm-read``).

:func:`visa.memory.images.load_nest_values` copies the elements a loop nest visits out of the image at once.
:func:`nest_view` gives the same elements as a strided view of the image's bytes instead (no copy), for a reader
that registers with the image (:meth:`~visa.memory.images.DenseImage.add_reader`): the image has the reader
read the bytes before anything changes them, so the view always shows the bytes as they were when it was taken.
Only where the bytes are the values themselves: a type whose storage is its image words (no range check, no
sign extension: i8, i16, i32, f32, bf16, ...), a box of units, no pending copy in the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.memory.images import _WORD, _byte_nest, _nest_bounds, _nest_view, word_view
from visa.memory.units import UnitSelection

__all__ = ["nest_view"]


def nest_view(dtype: type[dt.Scalar], units: UnitSelection, bit_base: int,
              loops: Sequence[tuple[int, int]]) -> npt.NDArray[Any] | None:
    """The elements of ``dtype`` the loop nest (``(size, stride)`` in elements, from bit ``bit_base``) visits in
    the selected units, ``(*box shape, *sizes)`` in ``dtype.storage``: a read-only view of the image's bytes as
    they are now (what is owed there made first).  None when it cannot be one (see the module docstring); the
    caller reads the elements before the image changes (:meth:`~visa.memory.images.DenseImage.add_reader`)."""
    image = units.base
    storage = np.dtype(dtype.storage)
    if units.box is None or image._pending.copies or dtype.image_bits != 8 * storage.itemsize:  # noqa: SLF001
        return None
    if dtype.kind == "int" and dtype.bits != dtype.image_bits:
        return None  # (the words need a range check: _from_words)
    got = _byte_nest(dtype, image, bit_base, loops)
    if got is None or got[0] not in _WORD:
        return None
    nb, base, nest = got
    lo, hi = _nest_bounds(nest)
    words = word_view(image._raw(base + lo, base + hi + nb), nb)  # noqa: SLF001  (owed zeros made there)
    if words is None:
        return None
    view = _nest_view(words[units.box], base, nest)
    if view.dtype.itemsize != storage.itemsize:
        return None
    out: npt.NDArray[Any] = view.view(storage)
    out.flags.writeable = False
    return out
