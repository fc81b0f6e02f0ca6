"""Fast path of the scalar conversions (issue 24), beside :mod:`visa.dtypes`, whose reference ``convert`` it
stands for; ``tests/test_fast_dtypes.py`` checks it against the reference with the path switched off.

``dtypes.int-convert``: the reference converts every integer to integer through int64, with a range test and
(to wrap) a modulus and a select.  The same values, in the destination's storage, come from numpy's integer
``astype`` when no value can leave the destination's range (a widening: i8 → i32 in the Fetch Adapter), from
``astype``'s truncation to the storage width plus a sign extension of the low bits when the mode wraps (i32 → i8 /
i16 / i4 in the Cast Engine: two's complement keeps the low bits), and from ``clip`` in the source's own type
when it saturates.  A conversion that raises on overflow is checked first and, if a value is out of range, left
to the reference (which raises its error).

``dtypes.float-nan-after``: a float → float conversion rounding to nearest even into a type with infinities is
numpy's (or ml_dtypes') ``astype`` when no value is NaN (NaN payloads are made canonical by the reference's
slower path).  The reference asks ``isnan`` of the source first; for a bf16 source that is ml_dtypes' scalar loop,
several times slower than the cast itself (2 ms against 0.35 ms for 4 Mi elements).  A cast makes NaN of NaN
and of nothing else (a value beyond the range becomes ±inf, never NaN), so the same question is asked of the
cast's result when that is a native numpy float and the source is not: the result is returned when it holds no
NaN, and the reference runs otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["INT_CONVERT", "int_convert", "FLOAT_NAN_AFTER", "float_cast_without_nan"]

INT_CONVERT = fastpaths.register("dtypes.int-convert", "integer → integer conversions by numpy's astype (widening, "
                                                       "or truncation and sign extension when wrapping) and clip "
                                                       "(saturating) instead of int64 modular arithmetic")


FLOAT_NAN_AFTER = fastpaths.register("dtypes.float-nan-after", "a float → float cast asks isnan of its native numpy "
                                     "result (f32) instead of its ml_dtypes source (bf16): the same answer, a cast "
                                     "makes NaN of NaN alone")


def float_cast_without_nan(arr: npt.NDArray[Any], storage: Any) -> npt.NDArray[Any] | None:
    """``arr.astype(storage)`` (a float → float cast, rounding to nearest even, overflow to ±inf) when neither
    holds a NaN, asked of the result when it is a native numpy float and ``arr`` is not; None when this path
    does not answer (the caller's reference test, or a NaN: the reference makes its payload canonical)."""
    if arr.dtype.kind == "f" or np.dtype(storage).kind != "f":
        return None  # (the source is native: the reference's own test is as fast)
    with np.errstate(over="ignore", invalid="ignore"):
        out: npt.NDArray[Any] = arr.astype(storage)
    if np.isnan(out).any():
        return None
    return out


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
