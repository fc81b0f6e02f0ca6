"""Fast path ``memory.hbm-load-order`` (issue 24): :func:`visa.memory.performance.hbm_load`'s sort of the transfers
by (window, bank, row) done on the transfers already in window order.

The reference sorts every transfer's key ``(window · 64 + bank) · 2^15 + row`` stably from arrival order: a
mergesort of tens of thousands of scattered int64 keys per DMA modelled (a first launch models two or three).
But the load model has already sorted the transfers stably by their stretch (channel and segment) to rank them
in it (``_stable_order``), and a stretch's windows are consecutive ranks: in that order the windows ascend, and
transfers of one window keep their arrival order.  Sorting the keys stably in that order leaves only each window's
few transfers (at most a queue of 64) to order, runs the mergesort finds nearly done, and gives the same
permutation: two transfers with equal keys are of one window, so of one stretch, so in arrival order in both.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["ORDER", "order"]

ORDER = fastpaths.register("memory.hbm-load-order", "the HBM load model's (window, bank, row) sort done on the "
                           "transfers already sorted by stretch (windows ascending), not from arrival order")

IntArray = npt.NDArray[np.int64]


def order(key: IntArray, by_stretch: IntArray) -> IntArray:
    """``np.argsort(key, kind="stable")``, given ``by_stretch``: a stable sort of the transfers by a coarser key
    (two transfers of equal ``key`` are of one stretch, so in arrival order in it: the same ties, the same
    permutation); that ``key``'s window part ascends along it only makes the sort quick (see the module)."""
    out: IntArray = by_stretch[np.argsort(key[by_stretch], kind="stable")]
    return out
