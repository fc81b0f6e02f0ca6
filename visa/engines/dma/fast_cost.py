"""Fast path ``dma.cost-shared-load`` (issue 24): the HBM time of each engine's command of a DMA read off the
load model of the whole DMA instead of modelling each command's transfers again.

The reference (:func:`visa.engines.dma.cost.cycles`) models the HBM channels serving every command of a DMA
(each command a stretch of requests of its own, no queue window spanning two), then models each command alone
for its own engine time: the same windows, rows and banks a second time.  Since no window spans two stretches,
a command's windows are the same in both, and :func:`visa.memory.performance.hbm_load` sums each command's
windows per channel in the same order when asked for them by ``group`` — the same floats, one model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory.performance import HbmLoad

SHARED = fastpaths.register("dma.cost-shared-load", "a DMA's per-command HBM time read off the whole DMA's load "
                            "model instead of modelling each command's transfers again")


def groups(parts: int, windows: int) -> npt.NDArray[Any]:
    """The group (command) of each segment id: part ``k`` owns segments ``[k · windows, (k + 1) · windows)``."""
    return np.repeat(np.arange(parts, dtype=np.int64), windows)


def part_peaks(load: HbmLoad, parts: int) -> list[float]:
    """The busiest channel's cycles of each part served alone (0 for a part with no HBM transfer)."""
    busy = load.group_busy
    if busy is None or not busy.size:
        return [0.0] * parts
    peaks = busy.max(axis=1).tolist()
    return [float(v) for v in peaks] + [0.0] * (parts - len(peaks))
