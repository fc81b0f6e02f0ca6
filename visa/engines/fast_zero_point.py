"""Fast path of the Fetch Adapter's zero-point subtraction (issue 24), beside :mod:`visa.engines.fetch`, whose
``_subtract`` it stands for; ``tests/engines/test_fast_zero_point.py`` checks it against the reference with the
path switched off.

``fetch.zero-point-narrow``: the reference subtracts in int64 with a select for poison and tests every
difference against the target's range (L2022–2049).  When every element is known, the extremes of the values and
of the zero points bound every difference: if they stay in the target's range, the subtraction is done in the
target's own type (two's complement: a difference that is in range is exact), one pass; otherwise the reference
runs (and names the first value out of range).  An extreme the values' own type bounds already (i8 values, an
i8 target, a positive zero point: only the minimum can take a difference out of range) is not read, and the
difference is written over the stage's own buffer when it has the target's type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory.known import is_everywhere

__all__ = ["NARROW", "subtract", "bounded"]

NARROW = fastpaths.register("fetch.zero-point-narrow", "zero-point subtraction bounded by the values' extremes and "
                                                       "computed in the target's type, not in int64 with a select")


def subtract(values: npt.NDArray[Any], known: npt.NDArray[np.bool_], dst: Any, zero_points: Sequence[int],
             per_step: npt.NDArray[np.int64] | None, n_p: int) -> npt.NDArray[Any] | None:
    """``values - zp`` in ``dst``'s storage (``per_step``: the zero point of each time step, ``n_p`` elements a
    packet, on the last axis; else the one zero point), or None when this path does not compute it."""
    if not NARROW.on or not is_everywhere(known) or not bounded(values, dst, zero_points):
        return None
    storage = np.dtype(dst.storage)
    z = storage.type(zero_points[0]) if per_step is None else np.repeat(per_step.astype(storage), n_p)
    out: npt.NDArray[Any]
    if values.dtype == storage and values.flags.writeable:  # the stage's own buffer (adapt): in place
        out = np.subtract(values, z, out=values)
    else:
        out = np.subtract(values, z, dtype=storage)  # (z broadcast over the leading axes)
    return out


def bounded(values: npt.NDArray[Any], dst: Any, zero_points: Sequence[int]) -> bool:
    """Do ``values − zp`` for every zero point stay in ``dst``'s range, with the values themselves ``dst``'s (then
    the subtraction in ``dst``'s own integer type is exact)?  Reads only the extremes the values' type does not
    bound already; False for values or a target that are not integers."""
    storage = np.dtype(dst.storage)
    if values.dtype.kind not in "iu" or storage.kind != "i" or values.size == 0:
        return False
    z_lo, z_hi = min(zero_points), max(zero_points)
    if not (dst.min <= z_lo and z_hi <= dst.max):
        return False
    # an extreme the values' own type already bounds is not read (a pass fewer): with every value of that type
    # the target's, lo - z_hi >= dst.min holds when z_hi <= 0, and hi - z_lo <= dst.max when z_lo >= 0
    kind = np.iinfo(values.dtype)
    inside = dst.min <= kind.min and kind.max <= dst.max
    lo = int(values.min()) if not inside or z_hi > 0 else int(kind.min)
    hi = int(values.max()) if not inside or z_lo < 0 else int(kind.max)
    if lo - z_hi < dst.min or hi - z_lo > dst.max:
        return False  # a difference may fall outside the range: the reference decides (and names it)
    return bool(dst.min <= lo and hi <= dst.max)  # (the values themselves the target's: every step stays exact)
