"""The images' fast path ``memory.image-words`` (:mod:`visa.fastpaths`): :func:`visa.memory.images.load` and
:func:`~visa.memory.images.store` move each element as one machine word (``DenseImage._gather_words``,
``_scatter_words``) instead of byte by byte, and a store of one run of consecutive elements is one strided copy
(:func:`store_run`).  The bytes and the written-state are the reference's (L1071–1093)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.memory.images import BoolArray, DenseImage, Image, IntArray, store_nest

__all__ = ["store_run"]


def store_run(dtype: type[dt.Scalar], image: Image, offs: IntArray, vals: npt.NDArray[Any],
               sel: BoolArray | None) -> bool:
    """``images.store`` of consecutive elements (``offs`` one run, one element apart, every one selected: a tensor
    placed whole, ``visa.testing.place_dm``) as a one-loop ``store_nest`` — one strided copy instead of a
    scatter by index.  False (nothing written) otherwise."""
    step = dtype.image_bits
    if not isinstance(image, DenseImage) or offs.ndim != 1 or offs.size < 2 or (sel is not None and not sel.all()):
        return False
    if vals.size != math.prod(image.lead_shape) * offs.size:  # values broadcast over units: the scatter path
        return False
    if int(offs[-1]) - int(offs[0]) != step * (offs.size - 1) or not bool((np.diff(offs) == step).all()):
        return False
    return store_nest(dtype, image, int(offs[0]), ((int(offs.size), 1),), vals, True)
