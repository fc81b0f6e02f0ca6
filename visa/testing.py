"""Helpers for tests and examples: build and read buffers and streams by the tensor they hold.

These bypass the engines on purpose: an engine test places its input with :func:`place_dm` or
:func:`make_stream` and checks its output with :func:`stream_logical` / ``tensor.logical()``, so that it
tests one engine at a time against the mathematical meaning of the layouts (manual "Tensor Functions",
L1162–1197: every move is the identity on the tensor).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.common import StreamData, StreamLayout
from visa.errors import LayoutError, PoisonError
from visa.mapping import Mapping, pair_of
from visa.mapping.core import symbol
from visa.mapping.evaluate import _axis_sizes, forward
from visa.memory.images import store
from visa.tensors.handles import DeviceTensor, DmTensor, TrfTensor, VrfTensor, logical_axes, to_storage

__all__ = ["level_coords", "hold", "place_dm", "place_trf", "place_vrf", "make_stream", "stream_logical",
           "read_held"]


def level_coords(mappings: Sequence[Mapping]) -> tuple[dict[str, npt.NDArray[np.int64]], npt.NDArray[np.bool_]]:
    """Coordinates of the index held at every position of a multi-level buffer, and its validity.

    The result arrays have shape ``tuple(m.size for m in mappings)``; coordinates of one axis add across
    levels (the union of partial indices, manual L1152–1161).
    """
    shape = tuple(m.size for m in mappings)
    if not mappings:
        return {}, np.broadcast_to(np.ones((), dtype=bool), shape)
    # coordinates of one axis add across levels; an axis padded and split across levels (R # 32 / 8 in Slice,
    # R # 32 % 8 in Packet) is valid only where the whole index is inside the axis: decide on the joint mapping
    # a composite cut by two levels (a left-padded B' = # 2 + B split as B' / 32 in Time and B' % 32 in Packet)
    # is decoded once, from the position its parts add up to: take the coordinates from the joint mapping too
    joint = forward(pair_of(*mappings).canon, digits_shape=True)
    jvalid = np.ascontiguousarray(joint.valid).reshape(shape)
    out = {a: np.where(joint.valid, c, 0).reshape(shape) for a, c in joint.coords.items()}
    return out, jvalid


def _held_index(mappings: Sequence[Mapping], order: Sequence[str], sizes: dict[str, int]
                ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64] | None, npt.NDArray[np.int64]]:
    """Where a multi-level buffer holds an element, and which: :func:`level_coords` folded into the flat index
    (C order over the axes ``order``) of the tensor element, computed over the joint mapping's digits.

    Returns ``(valid, positions, index)``: ``valid`` has the levels' shape; when most positions hold an element,
    ``positions`` is None and ``index`` has the levels' shape too (0 at padding); otherwise ``positions`` are the
    flat positions that hold one and ``index`` their elements (a buffer that is mostly padding, a tensor in one
    slice of 512, costs the size of the tensor).
    """
    shape = tuple(m.size for m in mappings)
    canon = pair_of(*mappings).canon
    joint = forward(canon, digits_shape=True)
    valid = np.ascontiguousarray(joint.valid).reshape(shape)
    count = int(np.count_nonzero(valid))
    if 4 * count < valid.size:
        positions = np.flatnonzero(valid)
        joint = forward(canon, positions)
    flat: npt.NDArray[np.int64] = np.zeros((), dtype=np.int64)
    for a in order:
        c = joint.coords.get(a)
        flat = flat * sizes[a] + c if c is not None else flat * sizes[a]
    if 4 * count < valid.size:
        return valid, positions, np.broadcast_to(flat, positions.shape).astype(np.int64)
    index = np.empty(joint.valid.shape, dtype=np.int64)
    np.multiply(flat, joint.valid, out=index)  # 0 at padding
    return valid, None, index.reshape(shape)


def _axes_and_sizes(mappings: Sequence[Mapping], axes: str | Sequence[str] | None
                    ) -> tuple[list[str], dict[str, int]]:
    """The axis order of the logical tensor (``axes``, default: first appearance) and the size of every axis."""
    sizes: dict[str, int] = {}
    for mp in mappings:
        sizes.update(_axis_sizes(mp.canon))
    return logical_axes(mappings, axes), sizes


def hold(array: npt.ArrayLike, dtype: type[dt.Scalar], mappings: Sequence[Mapping],
         axes: str | Sequence[str] | None = None) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """Values (storage-typed) and validity of a buffer with these level mappings holding ``array`` (manual
    L1152–1161).

    Axes of ``array`` (named by ``axes``, default: first appearance) that no level uses must have size 1
    or are broadcast; axes a level uses beyond ``array`` are an error.
    """
    order, sizes = _axes_and_sizes(mappings, axes)
    arr = np.asarray(array)
    want = tuple(sizes[a] for a in order)
    if arr.shape != want:
        raise LayoutError(f"array shape {arr.shape} does not match axes {' '.join(order)} of sizes {want}",
                          call="hold", fix="reshape the array, or pass axes= in the array's dimension order")
    stored = to_storage(dtype, arr, "hold")
    shape = tuple(mp.size for mp in mappings)
    if order and pair_of(*mappings) == pair_of(*(symbol(a, sizes[a]) for a in order)):
        # the levels lay the axes out in the array's own order, without padding: position p holds element p
        return np.array(stored.reshape(shape), dtype=dtype.storage), np.ones(shape, dtype=bool)
    valid, positions, index = _held_index(mappings, order, sizes)
    if positions is not None:  # mostly padding: write the elements into zeros
        values = np.zeros(valid.size, dtype=stored.dtype)
        values[positions] = np.ravel(stored)[index]
        values = values.reshape(valid.shape)
    else:
        values = np.ravel(stored)[index] if order else np.array(np.broadcast_to(stored, valid.shape))
        if not valid.all():
            np.copyto(values, np.zeros((), dtype=values.dtype), where=~valid)
    return values.astype(dtype.storage, copy=False), valid


def _enter_kernel(ctx: Any, chip: Mapping) -> None:
    """Placing a tensor directly acts as a kernel on ``chip.size`` chips would (manual L1079)."""
    if ctx.num_chips is None:
        ctx.num_chips = chip.size


def _write(tensor: DeviceTensor, values: npt.NDArray[Any], valid: npt.NDArray[np.bool_]) -> None:
    """Write :func:`hold`'s values (chip first, element last) straight into a tensor's images (no engine, no
    cost)."""
    bits = tensor.element_bit_offset() + np.arange(values.shape[-1], dtype=np.int64) * tensor.dtype.image_bits
    for c in range(values.shape[0]):
        store(tensor.dtype, tensor.image(c), bits, values[c], valid[c])


def place_dm(ctx: Any, array: npt.ArrayLike, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping,
             slice_: Mapping, element: Mapping, address: int, axes: str | Sequence[str] | None = None
             ) -> DmTensor[Any, Any, Any, Any, Any]:
    """A DM tensor holding ``array``, written straight into the DM image (no DMA, no cost; manual L1049)."""
    values, valid = hold(array, dtype, [chip, cluster, slice_, element], axes)  # refused before anything changes
    _enter_kernel(ctx, chip)
    tensor: DmTensor[Any, Any, Any, Any, Any] = DmTensor(ctx, dtype, chip, cluster, slice_, element, address,
                                                         call="place_dm")
    _write(tensor, values, valid)
    return tensor


def place_trf(ctx: Any, array: npt.ArrayLike, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping,
              slice_: Mapping, row: Mapping, element: Mapping, address: Any,
              axes: str | Sequence[str] | None = None, zero_padding: bool = False) -> Any:
    """A TRF tensor holding ``array``, written straight into the TRF image (no StoTRF, no cost).

    ``address`` is a :class:`~visa.tensors.handles.TrfAddress`; Row ``r`` of the tensor lives in the TRF's bank
    row ``r`` (manual L4114–4148), its element ``e`` at ``element_bit_offset() + e · image_bits``.  With
    ``zero_padding`` the Element's padding positions are written as zeros (the TRF's zero dummies, ``1z``,
    L3771), as a masked fetch's padding would be; otherwise they are left unwritten (poison).
    """
    values, valid = hold(array, dtype, [chip, cluster, slice_, row, element], axes)
    if zero_padding:
        values = np.where(valid, values, np.zeros((), dtype=values.dtype))
        valid = np.ones_like(valid)
    _enter_kernel(ctx, chip)
    tensor: Any = TrfTensor(ctx, dtype, chip, cluster, slice_, row, element, address, call="place_trf")
    rows = [(0, 0)] * 3 + [(0, ctx.hw.trf.rows - row.size), (0, 0)]  # the rows past Row are not written
    _write(tensor, np.pad(values, rows), np.pad(valid, rows))
    return tensor


def place_vrf(ctx: Any, array: npt.ArrayLike, dtype: type[dt.Scalar], chip: Mapping, cluster: Mapping,
              slice_: Mapping, element: Mapping, address: int, axes: str | Sequence[str] | None = None
              ) -> VrfTensor[Any, Any, Any, Any, Any]:
    """A VRF tensor holding ``array``, written straight into the VRF image (no ``to_vrf`` pass, no cost; manual
    L1057)."""
    values, valid = hold(array, dtype, [chip, cluster, slice_, element], axes)
    _enter_kernel(ctx, chip)
    tensor: VrfTensor[Any, Any, Any, Any, Any] = VrfTensor(ctx, dtype, chip, cluster, slice_, element, address,
                                                           call="place_vrf")
    _write(tensor, values, valid)
    return tensor


def make_stream(tu: Any, cls: type[Any], layout: StreamLayout, array: npt.ArrayLike,
                axes: str | Sequence[str] | None = None) -> Any:
    """A stream stage object (``cls``, e.g. ``CollectTensor``) of ``layout`` holding ``array`` (Time and
    Packet levels, manual L1152–1161)."""
    maps = [layout.level(n) for n in ("Chip", "Cluster", "Slice", "Time", "Packet")]
    values, valid = hold(array, layout.dtype, maps, axes)
    return cls(tu, layout, StreamData(values, valid))


def read_held(values: npt.NDArray[Any], known: npt.NDArray[np.bool_], dtype: type[dt.Scalar],
              mappings: Sequence[Mapping], axes: str | Sequence[str] | None = None, *,
              allow_missing: bool = False) -> npt.NDArray[Any]:
    """The logical tensor held by ``values`` under these level mappings (manual L1152–1161).

    Every valid position must be known (else :class:`~visa.errors.PoisonError`); positions holding the same
    index must agree (else ``AssertionError``: the buffer does not hold one tensor).
    """
    order, sizes = _axes_and_sizes(mappings, axes)
    shape = tuple(sizes[a] for a in order)
    valid, positions, flat = _held_index(mappings, order, sizes)
    every = positions is None and bool(valid.all())
    if every:
        fv, vv, kv = flat.reshape(-1), np.reshape(values, -1), np.broadcast_to(known, valid.shape).reshape(-1)
    elif positions is not None:
        fv, vv, kv = flat, np.reshape(values, -1)[positions], np.broadcast_to(known, valid.shape).reshape(-1)[positions]
    else:
        fv, vv, kv = flat[valid], values[valid], np.broadcast_to(known, valid.shape)[valid]
    if not np.all(kv):
        raise PoisonError(f"{int(np.count_nonzero(valid & ~known))} valid position(s) hold poison",
                          call="read_held")
    n = int(np.prod(shape)) if shape else 1
    out = np.zeros(n, dtype=values.dtype)
    seen = np.zeros(n, dtype=bool)
    out[fv] = vv
    seen[fv] = True
    back = out[fv]
    same = (back == vv) | (np.isnan(back) & np.isnan(vv)) if values.dtype.kind == "f" else back == vv
    assert np.all(same), "two positions holding the same index disagree"
    if not allow_missing and not seen.all():
        raise LayoutError(f"{int(n - seen.sum())} index(es) of the tensor are not held anywhere", call="read_held")
    return out.reshape(shape)


def stream_logical(stream: Any, axes: str | Sequence[str] | None = None, *, allow_missing: bool = False
                   ) -> npt.NDArray[Any]:
    """The logical tensor a stream stage object holds (manual L1152–1161)."""
    layout: StreamLayout = stream.layout
    maps = [layout.level(n) for n in ("Chip", "Cluster", "Slice", "Time", "Packet")]
    return read_held(stream.data.values, stream.data.known, layout.dtype, maps, axes, allow_missing=allow_missing)
