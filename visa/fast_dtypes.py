"""Fast path of the scalar conversions (issue 24), beside :mod:`visa.dtypes`, whose reference ``convert`` it
stands for; ``tests/test_fast_dtypes.py`` checks it against the reference with the path switched off.

``dtypes.int-convert``: the reference converts every integer to integer through int64, with a range test and
(to wrap) a modulus and a select.  The same values, in the destination's storage, come from numpy's integer
``astype`` when no value can leave the destination's range (a widening: i8 → i32 in the Fetch Adapter), from
``astype``'s truncation to the storage width plus a sign extension of the low bits when the mode wraps (i32 → i8 /
i16 / i4 in the Cast Engine: two's complement keeps the low bits), and from ``clip`` in the source's own type
when it saturates.  A conversion that raises on overflow is checked first and, if a value is out of range, left
to the reference (which raises its error).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["INT_CONVERT", "int_convert"]

INT_CONVERT = fastpaths.register("dtypes.int-convert", "integer → integer conversions by numpy's astype (widening, "
                                                       "or truncation and sign extension when wrapping) and clip "
                                                       "(saturating) instead of int64 modular arithmetic")


def int_convert(arr: npt.NDArray[Any], src: Any, dst: Any, overflow: str) -> npt.NDArray[Any] | None:
    """``dtypes.convert(arr, src, dst, overflow=overflow)`` for integer ``src`` and ``dst`` (``arr`` in
    ``src``'s storage, values of ``src``), or None when this path does not compute it."""
    if arr.dtype.kind != "i":
        return None
    storage = dst.storage
    if dst.min <= src.min and src.max <= dst.max:  # nothing can leave the range
        return arr.astype(storage)
    if overflow == "saturate":
        return np.asarray(np.clip(arr, dst.min, dst.max)).astype(storage)
    if overflow == "error":
        if arr.size and (int(arr.min()) < dst.min or int(arr.max()) > dst.max):
            return None  # the reference raises, naming the value
        return arr.astype(storage)
    if overflow != "wrap" or storage.itemsize > arr.dtype.itemsize:
        return None
    out: npt.NDArray[Any] = arr.astype(storage)  # C truncation: the low bits of the storage width
    spare = 8 * storage.itemsize - dst.bits
    if spare:  # a narrower type in its storage (i4 in int8): its low bits, sign-extended by two shifts
        unsigned = out.view(np.dtype(f"u{storage.itemsize}"))
        unsigned <<= spare
        out >>= spare
    return out
