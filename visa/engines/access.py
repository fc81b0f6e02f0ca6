"""The few element reads and writes a stream stage asks of a memory besides its engines' own passes, as typed
requests the engine layer executes over the byte images (issue 23, "Reference mode": the stream layer reads no
memory bytes itself).

- :class:`RowRead` — ``elements`` consecutive elements of one row of every slice (unit) of an image, from bit
  ``bit_base``: a VRF operand of the Vector Engine (the register file's row, L5063–5081), a commit's per-slice
  valid count (one i32 in each slice's DM, L2337–2345);
- :class:`ElementWrite` — one element written into the slices a mask selects: the commit engine's ``generate``
  (ITOS: a 32-bit value written to DM, L2337).

>>> import numpy as np
>>> from visa.dtypes import i32
>>> from visa.memory.images import DenseImage
>>> img = DenseImage((2, 16))
>>> write_element(ElementWrite(i32, 32, np.array([7], dtype=np.int32)), img, np.array([True, False]))
>>> values, known = read_row(RowRead(i32, 32, 1), img)
>>> values[:, 0].tolist(), known[:, 0].tolist()
([7, 0], [True, False])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.memory.images import DenseImage, Image, load, load_nest, load_nest_values, nest_all_written, store
from visa.memory.known import known_everywhere

__all__ = ["RowRead", "ElementWrite", "read_row", "write_element"]

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class RowRead:
    """``elements`` consecutive ``dtype`` elements from bit ``bit_base`` of every unit of an image."""

    dtype: type[dt.Scalar]
    bit_base: int
    elements: int


@dataclass(frozen=True)
class ElementWrite:
    """One ``dtype`` element, ``value`` (its storage, shape ``(1,)``), at bit ``bit`` of the units a mask selects."""

    dtype: type[dt.Scalar]
    bit: int
    value: npt.NDArray[Any]


def read_row(req: RowRead, image: Image) -> tuple[npt.NDArray[Any], BoolArray]:
    """Values and known-mask of the row ``req`` names in every unit of ``image``: shape ``(*units, elements)``.
    One strided copy (a loop nest), without a known-mask where every byte was written; element by element when
    the row cannot be read as words (4-bit elements off a byte)."""
    loops = ((req.elements, 1),)
    shape = (*(image.lead_shape if isinstance(image, DenseImage) else ()), req.elements)  # (HBM: one unit)
    if nest_all_written(req.dtype, image, req.bit_base, loops):
        values = np.empty(shape, dtype=req.dtype.storage)
        if load_nest_values(req.dtype, image, req.bit_base, loops, values):
            return values, known_everywhere(shape)
    got = load_nest(req.dtype, image, req.bit_base, loops)
    if got is not None:
        return got
    return load(req.dtype, image, req.bit_base + np.arange(req.elements, dtype=np.int64) * req.dtype.image_bits)


def write_element(req: ElementWrite, image: Image, units: BoolArray) -> None:
    """Write the element ``req`` into the units ``units`` selects (a mask of ``image``'s leading shape)."""
    value = np.broadcast_to(np.asarray(req.value).reshape((1,) * units.ndim), (*units.shape, 1))
    store(req.dtype, image, np.array([req.bit], dtype=np.int64), value, units[..., None])
