"""Stream data whose values are one elementwise numpy ufunc not computed yet (issue 15).

An elementwise Vector Engine op whose arithmetic is exactly one ufunc on the storage type (``AddFxp`` is int32
``add``, wrapping; ``Max`` of i32 is ``maximum``; ``MulF`` is float32 ``multiply``;
:data:`visa.engines.vector.arith.UFUNC`) over the stream and constants leaves its result as
:class:`DeferredData`: the ufunc and its arguments.  Its ``values`` are computed on first access, so any consumer
sees ordinary data; the Commit Engine, when the stream goes straight to DM, computes them into the DM image instead
(:meth:`DeferredData.into`, one pass instead of a pass into a new array and a copy of it;
:func:`visa.memory.images.store_nest_into`).  The known-mask is computed when the op runs (it does not depend on
the values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import StreamData, StreamLayout

__all__ = ["DeferredData"]


class DeferredData(StreamData):
    """``ufunc(*args)`` of stream shape ``shape`` in ``dtype`` (storage), with its known-mask ``known``.

    ``args`` are C-contiguous arrays of the stream's shape and 0-d constants, all of ``dtype``; none is written
    later (stream arrays are never written in place)."""

    def __init__(self, ufunc: np.ufunc, args: tuple[npt.NDArray[Any], ...], dtype: np.dtype[Any],
                 shape: tuple[int, ...], known: npt.NDArray[np.bool_]) -> None:
        assert all(a.dtype == dtype and (a.ndim == 0 or a.shape == shape) for a in args)
        self.ufunc = ufunc
        self.args = args
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self._values: npt.NDArray[Any] | None = None
        self._known = known
        self.replicas = None

    @property
    def pending(self) -> bool:
        """Are the values still to be computed?"""
        return self._values is None

    def _compute(self) -> npt.NDArray[Any]:
        with np.errstate(all="ignore"):
            got: npt.NDArray[Any] = np.asarray(self.ufunc(*self.args))
        return got

    @property
    def values(self) -> npt.NDArray[Any]:
        """The values (computed on first access)."""
        if self._values is None:
            self._values = np.ascontiguousarray(np.broadcast_to(self._compute(), self.shape))
        return self._values

    @values.setter
    def values(self, value: npt.NDArray[Any]) -> None:
        self._values = value

    @property
    def known(self) -> npt.NDArray[np.bool_]:
        """The poison mask (computed when the op ran)."""
        return self._known

    @known.setter
    def known(self, value: npt.NDArray[np.bool_]) -> None:
        self._known = value

    def into(self, chip: int, out: npt.NDArray[Any]) -> bool:
        """Compute chip ``chip``'s values straight into ``out`` (``dtype``, as many elements as the chip holds, in
        stream order, e.g. a strided view of DM); False (nothing written) when an argument cannot be seen in
        ``out``'s shape without a copy."""
        if out.dtype != self.dtype or out.size * self.shape[0] != int(np.prod(self.shape)):
            return False
        args = []
        for a in self.args:
            if a.ndim == 0:
                args.append(a)
                continue
            part = a[chip]
            if not part.flags.c_contiguous:
                return False
            args.append(part.reshape(out.shape))
        self._compute_into(args, out)
        return True

    def _compute_into(self, args: list[npt.NDArray[Any]], out: npt.NDArray[Any]) -> None:
        with np.errstate(all="ignore"):
            self.ufunc(*args, out=out)

    def check(self, layout: StreamLayout) -> None:
        """Assert that the data has the layout's shape, without computing it."""
        assert self.shape == layout.shape, (self.shape, layout.shape)
        assert self._known.shape == layout.shape
