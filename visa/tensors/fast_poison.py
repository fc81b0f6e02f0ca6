"""The tensor DMA's fast path ``dma.written-whole`` (:mod:`visa.fastpaths`): a move to a new HBM or DM tensor
whose plan writes every byte of the tensor in every unit it occupies does not mark those bytes poison first.

The reference (:func:`visa.tensors.moves._allocate`) marks a new tensor's bytes unwritten — fresh memory,
undefined until written (manual L150–155, L1071–1093) — and then the move writes them: a mark of the DM or HBM
image's pages each way, per DMA (about a fifth of a SmolLM2 decode step's DMA bookkeeping, issue 25).  When the
plan's destination strides form a dense mixed radix of exactly the tensor's bytes (:func:`covers`: every byte
written, no padding left) and the move does not read the bytes it writes (a source elsewhere: the poison would
otherwise be what the overlapping read sees), the write leaves every byte written either way: the images, known
masks, cycles and schedule are the reference's.
"""

from __future__ import annotations

from typing import Any

from visa import fastpaths
from visa.engines.dma.config import DmaPlan

__all__ = ["WRITTEN_WHOLE", "covers", "written_whole"]

WRITTEN_WHOLE = fastpaths.register("dma.written-whole", "a tensor DMA that writes every byte of its new destination "
                                   "(and reads none of them) does not mark the bytes poison before writing them")


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


def written_whole(p: DmaPlan | None, medium: str, address: int, nbytes: int, reads: Any) -> bool:
    """``dma.written-whole``: the move ``p`` writes every byte ``[address, address + nbytes)`` of its new
    ``medium`` tensor (:func:`covers`), and none of the regions it reads (``reads``) lies in that medium's byte
    range (so no read can see the bytes between poison and write)."""
    if p is None or not WRITTEN_WHOLE.on or not covers(p, nbytes):
        return False
    end = address + nbytes
    return all(r.memory != medium or r.hi <= address or end <= r.lo for r in reads)
