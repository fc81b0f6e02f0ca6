"""Fast path ``dma.cost-dm-once`` (issue 24): a DMA command's DM time and its DMNs' busy cycles from one
evaluation of each side's DMNs, counted by ``np.bincount``.

The reference (:func:`visa.engines.dma.cost._dm_time`) finds the DMN of every sampled packet of a side three
times — for the engine's DM time (:func:`~visa.memory.performance.dm_engine_time`), for each DMN's busy cycles
(:func:`~visa.memory.performance.dm_busy`, by ``np.unique``: a sort) and for whether the two sides share a DMN
(``np.intersect1d``, two more sorts) — and does so for every engine's command: a chip shuffle of 4 chips models
16 commands, a first launch a few hundred sorts.  DMNs are small non-negative numbers (a chip's clusters' slices
over ``slices_per_dmn``), so one evaluation and a count per DMN answer all three: the same DM time, the same busy
cycles added to the shared sums in the same (ascending DMN) order — the same floats — and the same sharing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.hw import HardwareProfile
from visa.memory import performance as perf

__all__ = ["ONCE", "SHIFTED", "dm_time", "shifted"]

ONCE = fastpaths.register("dma.cost-dm-once", "a DMA command's DM time, DMN busy cycles and DMN sharing from one "
                                              "evaluation of its DMNs, counted by bincount (not three evaluations "
                                              "and np.unique/intersect1d sorts)")

SHIFTED = fastpaths.register("dma.cost-shifted-dm", "the DM time and DMN busy cycles of a DMA's command whose only "
                             "DM side walks the first command's loops whole DMNs away read off the first command's "
                             "(its DMNs renamed), not evaluated packet by packet again")

#: DMN numbers above this are counted by the reference (a count array that long is not worth it).
_MOST = 1 << 16


def dm_time(hw: HardwareProfile, sides: list[int], addr: tuple[npt.NDArray[Any], npt.NDArray[Any]], nbytes: int,
            scale: float, shared: dict[int, float]) -> float | None:
    """What ``cost._dm_time`` returns for the DM ``sides`` of a command (and its additions to ``shared``); None,
    nothing added, when a DMN lies outside ``[0, _MOST]``."""
    dmns = [perf.dm_dmn(hw, addr[k]) for k in sides]
    if any(d.size and (int(d.min()) < 0 or int(d.max()) > _MOST) for d in dmns):
        return None
    times = [perf.dmn_engine_time(hw, d, nbytes) * scale for d in dmns]
    c = -(-nbytes // hw.dm.dmn_bytes_per_cycle)
    counts = [np.bincount(d) for d in dmns]
    for count in counts:
        used = np.flatnonzero(count)
        for dmn, k in zip(used.tolist(), count[used].tolist(), strict=True):
            shared[dmn] = shared.get(dmn, 0.0) + float(k) * c * scale
    if len(counts) == 2:
        n = min(counts[0].size, counts[1].size)
        if np.any((counts[0][:n] > 0) & (counts[1][:n] > 0)):
            return sum(times)
    return max(times, default=0.0)


def shifted(hw: HardwareProfile, first: tuple[int, float, dict[int, float]], base: int,
            shared: dict[int, float]) -> float | None:
    """Path ``dma.cost-shifted-dm``: what ``cost._dm_time`` returns (and adds to ``shared``) for a command whose
    only DM side's packets are those of the first command moved to ``base`` from ``first``'s base, given the first
    command's ``(base, DM time, busy cycles it added per DMN)``; None when the move is not a whole number of DMNs.

    A DM address counts only as its DMN, ``address // (slice bytes · slices per DMN)`` (L2541, L2866): a move by
    ``m`` whole DMNs adds ``m`` to every packet's DMN.  The DM time counts only which packets' DMNs equal their
    predecessors' (:func:`~visa.memory.performance.dmn_engine_time`, L2883–2893), which a renaming keeps, and DMN
    ``d``'s busy cycles become DMN ``d + m``'s: the same floats, added in the same order (each command's additions
    after the commands before it, DMN by DMN)."""
    span = hw.dm.slice_address_space_bytes * hw.dm.slices_per_dmn
    start, time, busy = first
    if (base - start) % span:
        return None
    m = (base - start) // span
    for dmn, cycles in busy.items():
        shared[dmn + m] = shared.get(dmn + m, 0.0) + cycles
    return time
