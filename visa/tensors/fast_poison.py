"""The tensor DMA's fast path ``dma.written-whole`` (:mod:`visa.fastpaths`): a move to a new HBM or DM tensor
whose plan writes every byte of the tensor in every unit it occupies does not mark those bytes poison first.

The reference (:func:`visa.tensors.moves._allocate`) marks a new tensor's bytes unwritten — fresh memory,
undefined until written (manual L150–155, L1071–1093) — and then the move writes them: a mark of the DM or HBM
image's pages each way, per DMA (about a fifth of a SmolLM2 decode step's DMA bookkeeping, issue 25).  When the
plan's destination strides form a dense mixed radix of exactly the tensor's bytes (:func:`covers`: every byte
written, no padding left) and the move does not read the bytes it writes (a source elsewhere: the poison would
otherwise be what the overlapping read sees), on every chip the tensor's Chip level names (no padding chip, which
the reference poisons and the move does not write), the write leaves every byte written either way: the images, known
masks, cycles and schedule are the reference's.
"""

from __future__ import annotations

from typing import Any

from visa import fastpaths
from visa.engines.dma.config import DmaPlan
from visa.memory.footprint import valid_positions

__all__ = ["WRITTEN_WHOLE", "covers", "written_whole"]

WRITTEN_WHOLE = fastpaths.register("dma.written-whole", "a tensor DMA that writes every byte of its new destination "
                                   "from another memory, on every chip the reference poisons, does not mark the "
                                   "bytes poison first")


def covers(p: DmaPlan, nbytes: int) -> bool:
    """Does the plan write each of the ``nbytes`` bytes from its destination base, on every chip (and DM unit)
    it writes (its destination strides, sorted, form a dense mixed radix of exactly ``nbytes``; the loops of
    stride ``nbytes`` or more step chips or units)?"""
    loops = sorted((lp.dst, lp.size) for lp in p.all_loops() if lp.size > 1)
    chip_loops = [lp for lp in loops if lp[0] >= nbytes]
    place = 1
    for stride, size in loops:
        if (stride, size) in chip_loops:
            continue
        if stride != place:
            return False
        place *= size
    return place == nbytes


def written_whole(p: DmaPlan | None, medium: str, nbytes: int, chip: Any) -> bool:
    """``dma.written-whole``: the move ``p`` writes every byte of its new ``medium`` tensor of ``nbytes`` bytes
    (:func:`covers`) on every chip the reference poisons, and reads nothing in that medium.

    Both conditions are needed: the Chip level ``chip`` must hold no padding position (the reference poisons
    every chip of the level, ``range(chip.size)``; the DMA writes only the chips that hold data), and the source
    must lie in another memory — a source in the same memory (a handle from an address, or a last packet reading
    past its tensor's end, L7896) could read the destination's bytes, which the reference reads as poison."""
    if p is None or not WRITTEN_WHOLE.on or p.src.medium == medium or not covers(p, nbytes):
        return False
    return bool(valid_positions(chip).size == chip.size)
