"""Fast path ``fetch.zero-point-read`` (issue 24): a fetch whose only adapter stage is one zero point subtracts it
as it reads the DM bytes — one pass, DM to the stream buffer.

The reference reads the elements into the stream (:func:`visa.engines.fetch.execute`) and then subtracts the zero
point (L2022–2049, :func:`visa.engines.fetch.adapt`; ``fetch.zero-point-narrow`` in the target's type when the
extremes allow it): a copy, then a pass over the copy.  Here the elements are a view of the DM bytes
(:func:`visa.engines.fast_dm_read.view_of`: one chip, every element known, the nest a strided view), ``x − zp``
is written straight into a pooled stream buffer (:mod:`visa.memory.rowpool`) in the target's type: where the values
fill that type's storage, wrapping, and the result's extreme then says whether a difference left the range (a
wrapped one lands above ``max − zp``, every exact one at or below it, for ``zp > 0``); else after the view's
extremes bound every difference (``fetch.zero-point-narrow``'s test).
A difference out of range, or a case the narrow subtraction does not cover, goes to the reference, which names
the value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.common import StreamData
from visa.engines.fast_zero_point import bounded
from visa.memory.known import known_everywhere
from visa.memory.rowpool import ROW_POOL

__all__ = ["ZP_READ", "subtract_read"]

ZP_READ = fastpaths.register("fetch.zero-point-read", "a one-chip all-known fetch with one zero point subtracts it "
                             "while reading the DM bytes into the stream buffer (one pass), not after a copy")


def subtract_read(view: npt.NDArray[Any], dst: Any, zero_points: Sequence[int], in_range: bool = False
                  ) -> StreamData | None:
    """The stream ``view − zp`` (``view``: the fetch's elements, a view of DM in ``(Chip, Cluster, Slice, Time,
    Packet)``) in ``dst``'s storage, every element known; None when this path does not compute it (more than one
    zero point, a difference that may leave the target's range).  ``in_range``: the caller knows that this
    subtraction of these bytes was computed here before (``fetch.view-memo``, the same state of the image), so
    every difference is in range and the checks are not made again."""
    storage = np.dtype(dst.storage)
    if len(set(zero_points)) != 1 or storage.kind != "i" or not dst.min <= zero_points[0] <= dst.max:
        return None
    z = int(zero_points[0])
    # the values fill dst's own storage: the difference is taken wrapping, and checked after on the result (below)
    wraps = view.dtype == storage and dst.bits == 8 * storage.itemsize
    if not wraps and not in_range and not bounded(view, dst, zero_points):
        return None
    rows = math.prod(view.shape[:3])
    pooled, loan = ROW_POOL.take((rows, math.prod(view.shape[3:])), storage, np.ones(rows, dtype=bool))
    out = pooled.reshape(view.shape)
    np.subtract(view, storage.type(z), out=out, dtype=storage, casting="unsafe")
    # x − z wrapped out of range (z > 0: x < min + z) lands in [max + 1 − z, max], every exact one in [min, max − z]
    # (and symmetrically for z < 0): the result's extreme tells whether one did — then the reference names it
    if wraps and not in_range and ((z > 0 and int(out.max()) > dst.max - z)
                                   or (z < 0 and int(out.min()) < dst.min - z)):
        if loan is not None:
            loan.settle(None)
        return None
    values = pooled if loan is None else loan.settle(None)
    return StreamData(values.reshape(view.shape), known_everywhere(view.shape))
