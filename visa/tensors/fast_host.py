"""The host side's fast path ``host.plain-layout`` (:mod:`visa.fastpaths`): a host buffer whose mapping is plain
(no padding, windows or skew: :func:`~visa.mapping.evaluate.plain_dims`) is laid out, read back and re-laid out as
strided copies of the logical array, instead of evaluating the mapping at every position (the reference:
``HostTensor.from_numpy``, ``HostTensor.numpy``, ``moves._rearrange``; L44–57, L1017–1028).  The buffers are the
reference's, value for value and known for known."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.mapping import Mapping
from visa.mapping.evaluate import covers_once, plain_dims, strided_view
from visa.memory.known import all_true

__all__ = ["PLAIN", "STAGED", "lay_out_plain", "plain_logical", "rearrange_plain", "staged_values"]

BoolArray = npt.NDArray[np.bool_]

PLAIN = fastpaths.register("host.plain-layout", "a host buffer whose mapping is plain is laid out and read back as "
                           "strided copies of the logical array, not evaluated at every position")
STAGED = fastpaths.register("host.staged-view", "an HBM → host read of a type whose image is its storage (i8, i16, "
                            "i32) takes the staged bytes as its values, not a decoded copy of them")


def staged_values(dtype: type[dt.Scalar], data: npt.NDArray[np.uint8], count: int) -> npt.NDArray[Any] | None:
    """``host.staged-view``: the ``count`` values of the staged byte buffer ``data`` (the PCIe DMA's host side,
    exactly ``count`` elements' bytes, owned by the caller and not written again) as a view of it, where the
    reference decodes a copy (:func:`visa.dtypes.from_bytes`): an integer type whose image is its storage
    (every bit pattern a value, two's complement little-endian, L1071–1093).  None otherwise.

    >>> data = np.array([1, 0, 255, 255], np.uint8)
    >>> with fastpaths.disabled("host.staged-view"):
    ...     staged_values(dt.i16, data, 2) is None
    True
    >>> out = staged_values(dt.i16, data, 2)   # on, the view; off (VISA_FASTPATHS=off), None
    >>> out is None or (out.tolist() == [1, -1] and out.base is data)
    True
    """
    storage = np.dtype(dtype.storage)
    if (not STAGED.on or dtype.kind != "int" or storage.kind != "i" or not np.little_endian
            or not dtype.bits == dtype.image_bits == 8 * storage.itemsize
            or data.dtype != np.uint8 or not data.flags.c_contiguous or data.size != count * storage.itemsize):
        return None
    return data.view(storage)


def lay_out_plain(dtype: type[dt.Scalar], mapping: Mapping, stored: npt.NDArray[Any],
                  order: Sequence[str]) -> npt.NDArray[Any] | None:
    """The buffer of ``mapping`` over the logical array ``stored`` (numpy dims in the axis ``order``) as one
    strided copy, when the mapping is plain; None otherwise (the caller evaluates it)."""
    plain = plain_dims(mapping.canon)
    if plain is None:
        return None
    out: npt.NDArray[Any] = np.array(strided_view(stored, list(order), plain), dtype=dtype.storage,
                                     order="C").reshape(-1)
    return out


def plain_logical(element: Mapping, axes: str | Sequence[str] | None, values: npt.NDArray[Any], known: BoolArray,
                   dtype: type[dt.Scalar]) -> npt.NDArray[Any] | None:
    """The logical tensor of a fully known buffer whose mapping is plain and holds every index once (one strided
    copy, :func:`~visa.mapping.evaluate.plain_dims`); None otherwise (the general path)."""
    plain = plain_dims(element.canon)
    if plain is None:
        return None
    from visa.tensors.handles import _logical_shape

    order, shape = _logical_shape([element], axes)
    if not order or not covers_once(plain, dict(zip(order, shape, strict=True))) or not all_true(known):
        return None
    out = np.empty(shape, dtype=dtype.storage)
    strided_view(out, order, plain, writeable=True)[...] = values.reshape([n for _, _, n in plain])
    return out




def rearrange_plain(values: npt.NDArray[Any], known: npt.NDArray[Any], src: Mapping,
                     dst: Mapping) -> tuple[npt.NDArray[Any], npt.NDArray[Any]] | None:
    """``moves._rearrange`` as two strided copies, when both mappings are plain (no padding or windows), ``src``
    holds every index once and every value is known; None otherwise."""
    sp, dp = plain_dims(src.canon), plain_dims(dst.canon)
    if sp is None or dp is None or not all_true(known):
        return None
    sizes: dict[str, int] = {}
    for axis, stride, size in sp:
        sizes[axis] = max(sizes.get(axis, 1), stride * size)
    reach: dict[str, int] = {}
    for axis, stride, size in dp:
        reach[axis] = reach.get(axis, 0) + stride * (size - 1)
    if not covers_once(sp, sizes) or any(a not in sizes or r >= sizes[a] for a, r in reach.items()):
        return None
    order = sorted(sizes)
    logical = np.empty([sizes[a] for a in order], dtype=values.dtype)
    strided_view(logical, order, sp, writeable=True)[...] = values.reshape([n for _, _, n in sp])
    out = np.ascontiguousarray(strided_view(logical, order, dp)).reshape(-1)
    return out, np.broadcast_to(np.True_, out.shape)
