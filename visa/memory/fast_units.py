"""Fast path ``memory.unit-selection-memo`` (issue 24): the units a slice bitmap selects, and whether they form a
box, found once per bitmap, not again at every fetch, commit and register load.

:class:`visa.memory.units.UnitSelection` turns an ``enabled`` mask over an image's units (the slices a stream
occupies, L2314–2319; a TRF's bank rows) into the flat unit numbers and, when they are a range of clusters × a
range of slices × a range of rows, that box (what lets a loop nest run as one strided copy).  That is a handful of
numpy reductions per selection — a few µs each, several selections a pass — for an answer that depends on the mask
alone.  Here it is kept per ``(units' shape, mask bytes)``, the unit numbers read-only.  With the path off, each
selection finds them afresh (the reference).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["SELECTION", "selection"]

SELECTION = fastpaths.register("memory.unit-selection-memo", "the units an enabled mask selects and their box kept "
                                                             "per mask, not found again at every selection")

Box = tuple[slice, ...] | None
_LIMIT = 1024  # masks remembered (one bool per unit each: at most a few KiB)
_MEMO: dict[tuple[tuple[int, ...], bytes], tuple[npt.NDArray[np.int64], Box]] = {}


def selection(enabled: npt.NDArray[np.bool_], find: Callable[[npt.NDArray[np.bool_]], Box]
              ) -> tuple[npt.NDArray[np.int64], Box]:
    """The flat units where ``enabled`` (the image's leading shape) and their box (``find(enabled)``, None when
    they are no box): remembered per mask with the path on (the units then read-only), found afresh with it off."""
    if not SELECTION.on:
        return np.flatnonzero(enabled).astype(np.int64), find(enabled)
    key = (enabled.shape, enabled.tobytes())
    got = _MEMO.get(key)
    if got is None:
        units = np.flatnonzero(enabled).astype(np.int64)
        units.flags.writeable = False
        got = (units, find(enabled))
        if len(_MEMO) >= _LIMIT:
            _MEMO.clear()
        _MEMO[key] = got
    return got
