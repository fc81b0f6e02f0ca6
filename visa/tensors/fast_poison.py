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

Its sibling ``dma.written-whole-dm`` takes DM → DM moves too, when the plan's source sequencer reads no byte at the
new tensor's offsets in any slice (:func:`reads_apart`): then nothing reads a byte the reference poisons before the
write overwrites it.  An in-place or overlapping move (its own source's bytes, a raw handle's, a last packet reading
into the new tensor, L7896) keeps the reference way.
"""

from __future__ import annotations

from typing import Any

from visa import fastpaths
from visa.engines.dma.config import DmaPlan
from visa.memory.footprint import valid_positions
from visa.memory.transfer import address_space

__all__ = ["WRITTEN_WHOLE", "WRITTEN_WHOLE_DM", "covers", "dense", "reads_apart", "written_whole"]

WRITTEN_WHOLE = fastpaths.register("dma.written-whole", "a tensor DMA that writes every byte of its new destination "
                                   "from another memory, on every chip the reference poisons, does not mark the "
                                   "bytes poison first")
WRITTEN_WHOLE_DM = fastpaths.register("dma.written-whole-dm", "a DM → DM tensor DMA that writes every byte of its "
                                      "new destination and reads no byte at the destination's offsets in any slice "
                                      "does not mark the bytes poison first")


def covers(p: DmaPlan, nbytes: int) -> bool:
    """Does the plan write each of the ``nbytes`` bytes from its destination base, on every chip (and DM unit)
    it writes (its destination strides, sorted, form a dense mixed radix of exactly ``nbytes``; the loops of
    stride ``nbytes`` or more step chips or units)?"""
    return dense([(lp.dst, lp.size) for lp in p.all_loops()], nbytes)


def dense(loops: list[tuple[int, int]], nbytes: int) -> bool:
    """:func:`covers` for destination loops ``(stride, size)``: the strides below ``nbytes``, sorted, form a dense
    mixed radix of exactly ``nbytes`` (the others step chips or units)."""
    loops = sorted((stride, size) for stride, size in loops if size > 1)
    chip_loops = [lp for lp in loops if lp[0] >= nbytes]
    place = 1
    for stride, size in loops:
        if (stride, size) in chip_loops:
            continue
        if stride != place:
            return False
        place *= size
    return place == nbytes


def written_whole(p: DmaPlan | None, medium: str, nbytes: int, chip: Any, address: int = 0) -> bool:
    """``dma.written-whole``: the move ``p`` writes every byte of its new ``medium`` tensor of ``nbytes`` bytes at
    ``address`` (:func:`covers`) on every chip the reference poisons, and reads nothing in that medium (or, with
    ``dma.written-whole-dm``, a DM → DM move reads no byte at the tensor's offsets: :func:`reads_apart`).

    Both conditions are needed: the Chip level ``chip`` must hold no padding position (the reference poisons
    every chip of the level, ``range(chip.size)``; the DMA writes only the chips that hold data), and the source
    must lie in another memory — a source in the same memory (a handle from an address, or a last packet reading
    past its tensor's end, L7896) could read the destination's bytes, which the reference reads as poison."""
    if p is None or not covers(p, nbytes):
        return False
    if p.src.medium == medium:  # (dma.written-whole-dm: only when no byte read is one the reference poisons)
        if not (WRITTEN_WHOLE_DM.on and medium == "dm" and _writes_from(p, address)
                and reads_apart(p, address, address + nbytes)):
            return False
    elif not WRITTEN_WHOLE.on:
        return False
    return bool(valid_positions(chip).size == chip.size)


def _writes_from(p: DmaPlan, address: int) -> bool:
    """Does the DM plan ``p`` write from byte ``address`` of its slices (its destination base's offset in a slice,
    L2541), where :func:`covers` counts the bytes from?"""
    space = address_space(p.hw, "dm")
    return p.base[1] % space.chip_bytes % space.unit_bytes == address


def reads_apart(p: DmaPlan, lo: int, hi: int) -> bool:
    """``dma.written-whole-dm``: does the DM → DM plan ``p`` read only bytes outside ``[lo, hi)`` of every slice
    (the bytes a new DM tensor at ``lo`` of ``hi - lo`` bytes occupies in each slice, L2874)?  The read range is
    the plan's own source sequencer (every engine, command and packet, the last packet's bytes past its tensor's
    end included, L7896), within a slice (the loops that step slices, L2541, left out: the answer is the same in
    every slice, so a source in other slices at the same offsets counts as overlapping too).  A read leaving its
    slice's backed bytes is not answered (False)."""
    space = address_space(p.hw, "dm")
    b_lo = b_hi = p.base[0] % space.chip_bytes % space.unit_bytes
    for lp in p.all_loops():
        if lp.size > 1 and not space.is_unit_level(lp.src):
            span = (lp.size - 1) * lp.src
            b_lo, b_hi = b_lo + min(0, span), b_hi + max(0, span)
    if b_lo < 0 or b_hi >= space.backed_bytes:
        return False
    return b_hi < lo or b_lo >= hi
