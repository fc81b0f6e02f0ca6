"""Fast path ``dma.pcie-same-chip`` (issue 24): whether a DMA's cost model counts PCIe time, answered "no"
without running the model when every packet reads and writes on one chip, as its loops show.

The schedule asks whether a tensor DMA crosses chips (:func:`visa.schedule.resources.dma_lanes`,
``dma_traffic``): when both sides span the same chips it asks the cost model (:func:`visa.engines.dma.cost.
cycles`) whether it counted PCIe time (``pcie > 0``: a chip permutation, L2389, L2845).  The model counts a
packet's bytes over PCIe when its source and destination addresses lie on different chips (``cost._pcie_bytes``:
``address // chip_bytes`` of each side); a packet of a DMA between two non-host media that reads and writes on one
chip adds nothing, so when none can cross, every command's PCIe time is 0 and so is the cost's ``pcie``.  A chip
shuffle's plan (the layout change on every chip, each chip to itself: :func:`visa.tensors.collective.
shuffled_move`) is modelled only for that answer on a first launch: 64 commands per shuffle.

None can cross when each side's base and every loop's offsets, apart from loops that step both sides by the same
whole number of chips, stay within the base's chip, and the two bases lie on the same chip: then every packet's
two chips are the bases' chip plus the same number of chips.  Otherwise (or with the path off) the model answers.
"""

from __future__ import annotations

from visa import fastpaths
from visa.engines.dma.config import DmaPlan
from visa.memory.transfer import address_space

__all__ = ["SAME_CHIP", "same_chip"]

SAME_CHIP = fastpaths.register("dma.pcie-same-chip", "a DMA whose every packet reads and writes on one chip (read "
                                                     "off its loops) counts no PCIe time: the schedule does not run "
                                                     "its cost model to find that out")


def same_chip(p: DmaPlan) -> bool:
    """True when every packet of ``p`` (no IndirectLoop) has its source and destination addresses on one chip,
    so that its cost model counts no PCIe time (manual L2389, L2845); False when that is not shown (or the path is
    off, or a side is the host's: host ↔ device always crosses PCIe)."""
    if not SAME_CHIP.on or "host" in (p.src.medium, p.dst.medium):
        return False
    cbs = (address_space(p.hw, p.src.medium).chip_bytes, address_space(p.hw, p.dst.medium).chip_bytes)
    chips = (p.base[0] // cbs[0], p.base[1] // cbs[1])
    if chips[0] != chips[1]:
        return False
    lo = [p.base[0] - chips[0] * cbs[0], p.base[1] - chips[1] * cbs[1]]
    hi = list(lo)
    for lp in (*p.spatial, *p.commands, *p.loops[:-1]):  # (the packet's own bytes: the model reads its start)
        if lp.size <= 1:
            continue
        if lp.src % cbs[0] == 0 and lp.dst % cbs[1] == 0 and lp.src // cbs[0] == lp.dst // cbs[1]:
            continue  # both sides step by the same whole chips
        for k, stride in enumerate((lp.src, lp.dst)):
            reach = (lp.size - 1) * stride
            lo[k] += min(0, reach)
            hi[k] += max(0, reach)
    return all(0 <= lo[k] and hi[k] < cbs[k] for k in (0, 1))
