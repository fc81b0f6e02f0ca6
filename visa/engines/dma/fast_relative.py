"""Fast path ``dma.cost-relative`` (issue 24): a DMA's cost model run once per *shape and placement relative to
the address decoding*, not once per absolute address.

The reference (:func:`visa.engines.dma.cost.cycles`) models every DMA plan afresh (its cache is keyed by the
whole plan, absolute addresses included), so a kernel that moves tile after tile of one shape to new HBM
addresses models each again (a tile of the reference's ``matmul_16384``).  What the model reads of an address:

* HBM (L2960–2977): the chip, whether a packet crosses a 256-byte unit, and each unit's channel, bank and row.
  If every byte a side touches lies in one aligned ``2^k``-byte block of one chip (``k ≥ 8``), each address is
  ``low + high`` with ``high`` that block's base; the channel is an XOR of address bits, so
  ``channel(low + high) = channel(low) ^ channel(high)`` (bits of ``low`` and ``high`` are disjoint), and bank and
  row are fields of the bits, so ``high`` renames banks and rows one to one.  :func:`~visa.memory.performance.
  hbm_load` uses banks and rows only through equality and sums every channel's windows in arrival order, so the
  model of the side moved to ``high = 0`` on chip 0 gives the same floats channel by channel, channel ``c``
  becoming ``chip · channels + (c ^ channel(high))``.
* DM (L2866): each address's DMN (``address // (slice space · 32)``): a move by a multiple of that renames the
  DMNs one to one, and the model uses them only through equality (runs, per-DMN sums, the busiest).
* the host: nothing (the PCIe bytes are the packets' bytes whatever their addresses).
* PCIe between chips: both non-host sides on one chip (else the reference runs).

``dma.cost-relative-bits`` moves an HBM side by more than the block above its span: when each loop's offsets and
the packet's bytes have bit ranges of their own (:func:`offset_bits`: e.g. rows 16 KiB apart, 64-byte packets),
every base bit outside those ranges and above the 256-byte unit is the ``high`` of the XOR above
(:func:`hbm_placement`): the columns of a row of tiles (``64 · c`` bytes apart, bits 6–13 between a packet's and the
rows' bits) share one model, their base within the unit kept in the key.

``dma.cost-relative-dm-pair`` moves a DM → DM DMA (a chip shuffle's part, :func:`visa.engines.dma.shuffle.
chip_parts`: one per chip, 16 commands each) whose sides each lie on one chip (:func:`dm_pair`).  Its model reads
the DMNs of both sides only through equality — within a side, and between the sides for whether a command's reads
and writes share a DMN — and PCIe only through whether a packet's two chips differ.  Sides on two chips: their
DMNs never meet and every packet crosses, so each side moves by its own whole DMNs to the start of its chip and
the chips are named 0 (source) and 1 (destination); sides on one chip: both move by the same whole DMNs to chip 0.
The DMNs are renamed one to one, each DMN's busy cycles summed in the same order: the same floats.

So the model is cached under the loops and the bases moved so (``dma.cost-relative`` off, or a DMA with two HBM
sides or two DM sides not placed so — their channels or DMNs meet — runs the reference), and each plan's channels
are renamed and its cost assembled from the cached model by the reference's own :func:`~visa.engines.dma.cost.
assemble`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from visa import fastpaths
from visa.engines.cache import exact_key
from visa.engines.dma import fast_cost, fast_dm_time, fast_translates
from visa.engines.dma.config import DmaCost, DmaLoop, DmaPlan
from visa.hw import HardwareProfile
from visa.memory import fast_load_order, fast_transfers
from visa.memory import performance as perf
from visa.memory.performance import HbmLoad
from visa.memory.transfer import address_space

__all__ = ["RELATIVE", "FINE", "PAIR", "dm_pair", "cycles", "placement", "hbm_placement", "offset_bits"]

RELATIVE = fastpaths.register("dma.cost-relative", "a DMA's cost model cached by its loops and its bases relative "
                              "to the HBM address decoding (aligned block, chip) and the DMNs, its channels "
                              "renamed, instead of modelling every absolute address afresh")

PAIR = fastpaths.register("dma.cost-relative-dm-pair", "with dma.cost-relative, a DM → DM DMA (a chip shuffle's "
                          "part) each of whose sides lies on one chip is modelled once per shape and DMN placement "
                          "relative to its chips: the sides' chips renamed 0 and 1 (or both 0), each moved by whole "
                          "DMNs")

FINE = fastpaths.register("dma.cost-relative-bits", "with dma.cost-relative, an HBM side whose offsets' bits are "
                          "known (disjoint per loop) moved by every base bit outside them, not only by the block "
                          "above its span: the columns of a row of tiles share one model")

Indirect = tuple[tuple[int, ...], tuple[int, ...]] | None
Model = tuple[DmaCost, HbmLoad, float, int]
ModelFn = Callable[[HardwareProfile, tuple[str, str], tuple[DmaLoop, ...], tuple[DmaLoop, ...], tuple[DmaLoop, ...],
                    tuple[int, int], Indirect], Model]

_LIMIT = 4096
_STORE: dict[Hashable, Model] = {}


def _span(loops: tuple[DmaLoop, ...], side: int, extra: tuple[int, ...] | None) -> tuple[int, int]:
    """The lowest and highest byte offset (from the base) a side touches: every loop at its extremes, the
    packet's last byte, and the indirect offsets'."""
    lo = hi = 0
    for lp in loops[:-1]:
        step = (lp.size - 1) * (lp.src if side == 0 else lp.dst)
        lo, hi = lo + min(0, step), hi + max(0, step)
    hi += loops[-1].size - 1
    if extra is not None:
        lo, hi = lo + min(extra), hi + max(extra)
    return lo, hi


def placement(hw: HardwareProfile, medium: str, lo: int, hi: int) -> tuple[int, int, int] | None:
    """How a side touching bytes ``[lo, hi]`` (absolute, in its DMA address space) is moved to its canonical
    place: ``(shift, chip, high)`` — the model of the side at ``address - shift`` names channel ``c`` as
    ``chip · channels + (c ^ channel(high))`` — or ``None`` when no move keeps the model (see the module)."""
    if medium == "host":
        return lo, 0, 0
    space = address_space(hw, medium)
    chip = lo // space.chip_bytes
    if lo < 0 or hi // space.chip_bytes != chip:
        return None
    first, last = lo - chip * space.chip_bytes, hi - chip * space.chip_bytes
    if medium == "hbm":
        h = hw.hbm
        if h.stacks != 1 << len(h.stack_bits) or h.channels & (h.channels - 1):
            return None  # the channel number is an XOR of address bits only for these
        k = max((first ^ last).bit_length(), (h.access_unit_bytes - 1).bit_length())
        high = (first >> k) << k
        return chip * space.chip_bytes + high, chip, high
    dmn = hw.dm.slice_address_space_bytes * hw.dm.slices_per_dmn
    if space.chip_bytes % dmn:
        return None
    shift = chip * space.chip_bytes + (first // dmn) * dmn
    if hi - shift >= space.chip_bytes:  # keep the canonical side on chip 0 (PCIe crossing)
        shift = chip * space.chip_bytes
    return shift, chip, 0


def offset_bits(loops: tuple[DmaLoop, ...], side: int) -> int | None:
    """The bits any byte offset (from the base) a side touches may have, when each loop's offsets (``d ·
    stride``, ``d < size``) and the packet's bytes lie in bit ranges of their own, disjoint from one another (so
    every offset is their sum without a carry: their OR); None when two ranges meet or a stride is negative."""
    ranges = []
    for lp in loops[:-1]:
        stride = lp.src if side == 0 else lp.dst
        if stride < 0:
            return None
        if lp.size > 1 and stride:
            ranges.append(((stride & -stride).bit_length() - 1, ((lp.size - 1) * stride).bit_length()))
    if loops[-1].size > 1:
        ranges.append((0, (loops[-1].size - 1).bit_length()))
    mask = 0
    for lo, hi in sorted(ranges):
        if mask >> lo:
            return None  # (two ranges meet: an offset may carry into another's bits)
        mask |= (1 << hi) - (1 << lo)
    return mask


def hbm_placement(hw: HardwareProfile, base: int, bits: int, lo: int, hi: int) -> tuple[int, int, int] | None:
    """As :func:`placement` for an HBM side at ``base`` touching ``[lo, hi]`` whose offsets from ``base`` have only
    the bits ``bits`` (:func:`offset_bits`): the side moved by ``high``, every bit of the base outside ``bits`` and
    above the 256-byte unit — a side moved within a block (the columns of a tile of rows, the next tile of a
    row) keeps its model too.  Every address is ``high | low`` with ``low`` the canonical side's (no carry: the
    base's bits above the unit miss ``bits``, and its bits within the unit plus the offsets' stay within it), so
    channels, banks and rows are renamed by XOR as :func:`placement`'s; None when that does not hold."""
    space = address_space(hw, "hbm")
    chip = lo // space.chip_bytes
    if lo < 0 or hi // space.chip_bytes != chip:
        return None
    h = hw.hbm
    if h.stacks != 1 << len(h.stack_bits) or h.channels & (h.channels - 1):
        return None
    unit = h.access_unit_bytes - 1
    own = base - chip * space.chip_bytes
    if own & bits & ~unit or (own & unit) + (bits & unit) > unit:
        return None
    high = own & ~(bits | unit)
    return chip * space.chip_bytes + high, chip, high


def cycles(p: DmaPlan, indirect: Indirect, model: ModelFn, assemble: Callable[[DmaPlan, Model], DmaCost]
           ) -> DmaCost | None:
    """The cost of ``p`` from the model cached under its relative key (modelled now if new), or ``None`` when
    the reference must run (two HBM or two DM sides, a side over two chips, two chips)."""
    hw = p.hw
    media = (p.src.medium, p.dst.medium)
    loops = p.spatial + p.commands + p.loops
    if media == ("dm", "dm") and PAIR.on and indirect is None:
        moved = dm_pair(hw, loops, p.base)
        return None if moved is None else assemble(p, _model(hw, media, p, moved, None, model))
    if media.count("hbm") > 1 or media.count("dm") > 1 or (indirect is not None and not indirect[0]):
        return None
    bases: list[int] = []
    chips: list[int] = []
    rename: tuple[int, int] | None = None
    for k, medium in enumerate(media):
        lo, hi = _span(loops, k, None if indirect is None else indirect[k])
        got = None
        if medium == "hbm" and indirect is None and FINE.on:
            bits = offset_bits(loops, k)
            if bits is not None:
                got = hbm_placement(hw, p.base[k], bits, p.base[k] + lo, p.base[k] + hi)
        if got is None:
            got = placement(hw, medium, p.base[k] + lo, p.base[k] + hi)
        if got is None:
            return None
        shift, chip, high = got
        bases.append(p.base[k] - shift)
        if medium != "host":
            chips.append(chip)
        if medium == "hbm":
            rename = (chip * hw.hbm.channels, int(perf.hbm_channel(hw, np.array([high]))[0]))
    if len(chips) == 2 and chips[0] != chips[1]:
        return None
    found = _model(hw, media, p, (bases[0], bases[1]), indirect, model)
    if rename is not None:
        found = (found[0], _renamed(found[1], *rename), found[2], found[3])
    return assemble(p, found)


def _model(hw: HardwareProfile, media: tuple[str, str], p: DmaPlan, base: tuple[int, int], indirect: Indirect,
           model: ModelFn) -> Model:
    """The model of ``p``'s loops at the canonical bases ``base``, from the store (modelled now if new)."""
    loops = p.spatial + p.commands + p.loops
    key = (exact_key(hw), media, tuple((lp.size, lp.src, lp.dst) for lp in loops),
           len(p.spatial), len(p.commands), base, indirect, fast_cost.SHARED.on, fast_transfers.ALIGNED.on,
           fast_translates.TRANSLATED.on, fast_translates.SHIFTED.on, fast_dm_time.ONCE.on,
           fast_dm_time.SHIFTED.on, fast_load_order.ORDER.on)  # (the switches it reads)
    found = _STORE.get(key)
    if found is None:
        if len(_STORE) >= _LIMIT:
            _STORE.clear()
        found = _STORE[key] = model(hw, media, p.spatial, p.commands, p.loops, base, indirect)
    return found


def dm_pair(hw: HardwareProfile, loops: tuple[DmaLoop, ...], base: tuple[int, int]) -> tuple[int, int] | None:
    """The canonical bases of a DM → DM DMA (``dma.cost-relative-dm-pair``, see the module) whose sides each lie
    on one chip, or None.  Sides on two chips: each moved by its own whole DMNs to the start of its chip, the
    source's chip named 0 and the destination's 1 (their DMNs stay apart, every packet still crosses PCIe);
    sides on one chip: both moved by the same whole DMNs to chip 0 (their DMNs meet as before, none crosses).  (The
model reads a DM address only as its DMN, L2866, and a packet's two chips only as equal or not, L2389, L2845.)"""
    space = address_space(hw, "dm")
    cb = space.chip_bytes
    dmn = hw.dm.slice_address_space_bytes * hw.dm.slices_per_dmn
    if cb % dmn:
        return None
    chips, firsts = [], []
    for k in (0, 1):
        lo, hi = _span(loops, k, None)
        lo, hi = base[k] + lo, base[k] + hi
        chip = lo // cb
        if lo < 0 or hi // cb != chip:
            return None
        chips.append(chip)
        firsts.append((lo - chip * cb) // dmn * dmn)
    if chips[0] == chips[1]:
        common = min(firsts)
        return base[0] - chips[0] * cb - common, base[1] - chips[1] * cb - common
    return base[0] - chips[0] * cb - firsts[0], base[1] - chips[1] * cb - firsts[1] + cb


def _renamed(load: HbmLoad, offset: int, xor: int) -> HbmLoad:
    """The load with canonical channel ``c`` named ``offset + (c ^ xor)`` (arrays as long as the highest
    channel used plus one, as :func:`~visa.memory.performance.hbm_load` makes them)."""
    if (offset, xor) == (0, 0) or not load.bus.size:
        return load
    used = np.flatnonzero((load.bus != 0) | (load.busy != 0))
    names = offset + (used ^ xor)
    size = int(names.max()) + 1
    busy, bus = np.zeros(size), np.zeros(size)
    busy[names], bus[names] = load.busy[used], load.bus[used]
    return HbmLoad(busy, bus, load.activations, load.transfers, load.rmw)
