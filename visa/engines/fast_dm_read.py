"""Fast path ``fetch.dm-read`` (issue 24): a plain fetch is left a view of the DM bytes, read when its stream is;
a register load (``to_vrf``, ``to_trf``) copies the DM bytes straight into the register file.

The reference Fetch Engine (:func:`visa.engines.fetch.execute`, manual L1219–1688) reads every element into the
stream when the fetch is called; then ``collect`` pads and splits the packets (L3560–3564) and the register load
writes the flits into the TRF or VRF (L4049–4061, L5063–5081): the bytes cross memory twice.  With this path, a
fetch with no adapter stage (no mask, table, cast or zero point), whose every element is known and whose loop nest
is a strided view of one chip's DM image (:func:`visa.memory.nest_view.nest_view`), returns a :class:`DmRead`:
the values are read on first access (into a pooled buffer, as the reference's fetch reads), a collect that only
splits packets (no padding) keeps it a view, and the register load reads the view itself — one copy, DM to the
register file.

What makes the view the bytes *as the fetch saw them*: the :class:`DmRead` registers with the DM image
(:meth:`~visa.memory.images.DenseImage.add_reader`), which has it read its values before any change to its bytes
(every write path, pending copies).  The cycles, reports and schedule are the fetch's as before (the plan does not
change); only when the bytes are copied does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.common import LazyData
from visa.memory.images import DenseImage
from visa.memory.known import known_everywhere
from visa.memory.nest_view import nest_view
from visa.memory.rowpool import ROW_POOL
from visa.memory.units import enabled_units

__all__ = ["DM_READ", "DmRead", "view_of", "source_of", "element_rows"]

DM_READ = fastpaths.register("fetch.dm-read", "a plain all-known fetch is a view of the DM bytes read when its stream "
                             "is (the image has it read before any change); a register load copies DM to the "
                             "register file at once")


class DmRead(LazyData):
    """Stream data ``(Chip, Cluster, Slice, Time, Packet)`` (one chip, every element known) still a read-only view
    of the DM bytes (``view``), registered with the image so that it reads them before they change."""

    def __init__(self, view: npt.NDArray[Any], image: DenseImage, replicas: npt.NDArray[np.int64] | None = None
                 ) -> None:
        self._view: npt.NDArray[Any] | None = view
        self._known = known_everywhere(view.shape)
        self._image = image
        self.replicas = replicas
        image.add_reader(self)

    def source(self) -> npt.NDArray[Any]:
        """The values without reading them: the view of the DM bytes (read only), or the values once read."""
        return self._view if self._view is not None else self.values

    def settle(self) -> None:
        """Read the values now (the image is about to change the bytes the view shows)."""
        self._get()

    def reshaped(self, shape: tuple[int, ...]) -> DmRead | None:
        """The same elements in ``shape`` (a split of Time and Packet), still a view; None when reshaping the view
        would copy, or the values were read already."""
        if self._view is None:
            return None
        view = self._view.view()
        try:
            view.shape = shape  # (raises where numpy would copy)
        except (AttributeError, ValueError):
            return None
        return DmRead(view, self._image, self.replicas)

    def __repr__(self) -> str:
        return f"DmRead(shape={self._known.shape if self._known is not None else None}, read={self._made()})"

    def check(self, layout: Any) -> None:
        """Assert that the data has the layout's shape, without reading the values."""
        assert self._known is not None and self._known.shape == layout.shape, layout.shape

    def _build(self) -> tuple[npt.NDArray[Any], None]:
        view = self._view
        assert view is not None
        rows = math.prod(view.shape[:3])
        pooled, loan = ROW_POOL.take((rows, math.prod(view.shape[3:])), view.dtype, np.ones(rows, dtype=bool))
        np.copyto(*_words(pooled.reshape(view.shape), view))
        out = pooled if loan is None else loan.settle(None)
        self._view = None
        return out.reshape(view.shape), None


def view_of(cfg: Any, images: Any, bases: npt.NDArray[np.int64], lv: npt.NDArray[np.bool_],
            valid: npt.NDArray[np.bool_], nest: tuple[int, tuple[tuple[int, int], ...]] | None,
            shape: tuple[int, ...], zero_points: bool = False) -> npt.NDArray[Any] | None:
    """The fetch's values ``shape`` (Chip, Cluster, Slice, Time, Packet) as a view of the one chip's DM bytes, for
    a fetch this path takes (module docstring; the caller asked that every element read was written); else None.
    With ``zero_points``, a fetch whose only adapter stage is a zero point (``fetch.zero-point-read``, which reads
    the view at once)."""
    if nest is None or len(images) != 1 or not bool(lv.all()) or not bool(valid.all()):
        return None
    if cfg.table is not None or cfg.cast is not None or cfg.mask is not None or len(bases) != 1 \
            or bool(cfg.zero_points) != zero_points:
        return None
    image = images[0]
    if not isinstance(image, DenseImage) or image.handed:  # (an array handed out may be written unseen)
        return None
    view = nest_view(cfg.src, enabled_units(image, lv[0]), nest[0], nest[1])
    if view is None or view.size != math.prod(shape):
        return None
    out = view.view()
    try:
        out.shape = shape
    except (AttributeError, ValueError):
        return None
    return out


def source_of(data: Any) -> npt.NDArray[Any]:
    """A register load's values: a :class:`DmRead`'s view of the DM bytes (not read into the stream), else the
    stream's values."""
    return data.source() if isinstance(data, DmRead) else data.values


def element_rows(values: npt.NDArray[Any], e: int, lead: tuple[int, int]) -> npt.NDArray[Any]:
    """A register load's ``(slices, rows, e)`` values as ``(slices · rows, e)`` where that is a view; a view of the
    DM bytes whose rows are not evenly spaced (a TRF slice's rows, a slice's address space apart) is instead split
    into ``(*lead, rows, e)`` (``lead``: the chip's clusters and slices, when the load covers every slice) — the
    store's own shape, so that it takes the elements with no copy between."""
    n, rows = values.shape[0], values.shape[1]
    if n == 1 or rows == 1 or values.strides[0] == rows * values.strides[1]:
        return values.reshape(-1, e)  # (a view)
    if n == lead[0] * lead[1]:
        return values.reshape(*lead, rows, e)  # (splitting an axis: a view)
    return values.reshape(-1, e)


def _words(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """``dst`` and ``src`` (same shape and type, the last axis contiguous in both) as 8-byte words where the last
    axis is a whole number of them (the same bytes: a copy moves a word at a time, not an element)."""
    item = src.dtype.itemsize
    if (item < 8 and (src.shape[-1] * item) % 8 == 0 and src.strides[-1] == item and dst.strides[-1] == item
            and src.shape[-1] > 0):
        return dst.view(np.uint64), src.view(np.uint64)
    return dst, src
