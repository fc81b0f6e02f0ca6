"""Stream data whose values are one elementwise numpy ufunc not computed yet (issue 15).

An elementwise Vector Engine op whose arithmetic is exactly one ufunc on the storage type (``AddFxp`` is int32
``add``, wrapping; ``Max`` of i32 is ``maximum``; ``MulF`` is float32 ``multiply``;
:data:`visa.engines.vector.arith.UFUNC`) over the stream and constants leaves its result as
:class:`DeferredData`: the ufunc and its arguments.  Its ``values`` are computed on first access, so any consumer
sees ordinary data; the Commit Engine, when the stream goes straight to DM, computes them into the DM image instead
(:meth:`DeferredData.into`, one pass instead of a pass into a new array and a copy of it;
:func:`visa.memory.images.store_nest_into`).  The known-mask is computed when the op runs (it does not depend on
the values).

:class:`PaddedLanes` is the Cast Engine's output kept as the converted lanes: the flit padding (poison, L6780–6784)
is made only if a consumer reads ``values``; the commit, which writes the first lanes of each flit, reads the
converted ones directly (half the bytes of a padded bf16 stream, no strided pass to pad it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.common import LazyData, StreamLayout

__all__ = ["DeferredData", "PaddedLanes", "DEFERRED"]

DEFERRED = fastpaths.register("vector.deferred-ufunc", "an elementwise op that is one ufunc is left uncomputed "
                              "(DeferredData) until read, or computed into DM by the commit")


class DeferredData(LazyData):
    """``ufunc(*args)`` of stream shape ``shape`` in ``dtype`` (storage), with its known-mask ``known``.

    ``args`` are 0-d constants and arrays of the ``split`` shape (the stream's shape, or its axes split into
    digits: a C-contiguous view of the stream and the strided view of an operand,
    :func:`visa.engines.vector.relayout.gather_view`), all of ``dtype``; none is written later (stream arrays are
    never written in place)."""

    def __init__(self, ufunc: np.ufunc, args: tuple[npt.NDArray[Any], ...], dtype: np.dtype[Any],
                 shape: tuple[int, ...], known: npt.NDArray[np.bool_], split: tuple[int, ...] | None = None) -> None:
        self.split = shape if split is None else split
        assert int(np.prod(self.split)) == int(np.prod(shape)) and self.split[0] == shape[0]
        assert all(a.dtype == dtype and (a.ndim == 0 or a.shape == self.split) for a in args)
        self.ufunc = ufunc
        self.args = args
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self._known = known
        self.replicas = None

    @property
    def pending(self) -> bool:
        """Are the values still to be computed?"""
        return not self._made()

    def _build(self) -> tuple[npt.NDArray[Any], None]:
        with np.errstate(all="ignore"):
            got = np.asarray(self.ufunc(*self.args))
        return np.ascontiguousarray(np.broadcast_to(got, self.split)).reshape(self.shape), None

    def into(self, chip: int, out: npt.NDArray[Any]) -> bool:
        """Compute chip ``chip``'s values straight into ``out`` (``dtype``, the chip's elements in stream order,
        e.g. a strided view of DM); False (nothing written) when ``out`` cannot be seen in the split shape without
        a copy (the writes would not reach it)."""
        if out.dtype != self.dtype or out.size * self.shape[0] != int(np.prod(self.shape)):
            return False
        target = out.view()
        try:
            target.shape = self.split[1:]
        except AttributeError:
            return False
        with np.errstate(all="ignore"):
            self.ufunc(*(a if a.ndim == 0 else a[chip] for a in self.args), out=target)
        return True

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape, without computing it."""
        assert self.shape == layout.shape, (self.shape, layout.shape)
        assert self.known.shape == layout.shape


class PaddedLanes(LazyData):
    """A stream whose packets are ``lanes`` (``(..., n)``) followed by poison padding up to ``width`` elements
    (zeros, unknown): ``values`` builds the padded array on first access; ``known`` is given whole (stream
    shape)."""

    def __init__(self, lanes: npt.NDArray[Any], width: int, known: npt.NDArray[np.bool_]) -> None:
        assert width >= lanes.shape[-1] and known.shape == (*lanes.shape[:-1], width)
        self.lanes = lanes
        self.width = width
        self._known = known
        self.replicas = None

    def _build(self) -> tuple[npt.NDArray[Any], None]:
        n = self.lanes.shape[-1]
        out = np.empty((*self.lanes.shape[:-1], self.width), dtype=self.lanes.dtype)
        out[..., :n] = self.lanes
        out[..., n:] = 0
        return out, None

    def first(self, n: int) -> npt.NDArray[Any]:
        """``values[..., :n]`` without building the padding when ``n`` lanes are converted ones."""
        return self.lanes[..., :n] if n <= self.lanes.shape[-1] else self.values[..., :n]

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape, without building it."""
        assert (*self.lanes.shape[:-1], self.width) == layout.shape, (self.lanes.shape, layout.shape)
        assert self.known.shape == layout.shape
