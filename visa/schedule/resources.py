"""Which DMA engines and PCIe links a transfer occupies (manual L2389, L2473–2504, L2546–2549, L2843–2847).

A chip has eight DMA engines, one per pair of DMNs (L2404, L2831).  The DMA plan already spreads a transfer's
outer loops over engines (:func:`visa.engines.dma.plan.plan`: ``spatial`` loops, each engine's base moved by
their strides).  The engine of each part is the one that owns its DM side's DMN pair — the source's when both
sides are DM (L2549) — so a transfer occupies exactly the engines its parts run on.  A transfer with no DM side
(HBM ↔ HBM) takes, per part, the chip's DMA engine that is free first.  A transfer that crosses PCIe (host ↔
HBM, or between chips, L2389, L2845) also occupies the PCIe link of every chip it touches.
"""

from __future__ import annotations

import itertools
from typing import Any

from visa.engines.dma import fast_pcie
from visa.engines.dma.config import DmaPlan
from visa.engines.dma.cost import cycles
from visa.memory.footprint import Footprint
from visa.memory.transfer import AddressSpace, address_space
from visa.schedule.core import Lane, Schedule, dma_lane

__all__ = ["dma_lanes", "dma_traffic", "engine_parts"]


def engine_parts(p: DmaPlan) -> list[tuple[int, int]]:
    """The ``(source, destination)`` byte bases of the plan's parts, one per engine it spreads over."""
    out = []
    for combo in itertools.product(*(range(lp.size) for lp in p.spatial)):
        out.append((p.base[0] + sum(i * lp.src for i, lp in zip(combo, p.spatial, strict=True)),
                    p.base[1] + sum(i * lp.dst for i, lp in zip(combo, p.spatial, strict=True))))
    return out or [p.base]


def dma_lanes(schedule: Schedule, p: DmaPlan, reads: Footprint, writes: Footprint) -> tuple[Lane, ...]:
    """The lanes a DMA occupies (module docstring): its engines, and the PCIe links when it crosses PCIe."""
    hw = p.hw
    media = (p.src.medium, p.dst.medium)
    spaces = tuple(address_space(hw, m) for m in media)
    lanes: list[Lane] = []
    pcie: set[int] = set()
    host = "host" in media
    if host:  # ctx.pdma: the PCIe link of each chip the HBM side touches
        pcie |= set((reads + writes).chip_indices())
        return tuple((c, "pcie") for c in sorted(pcie)) or ((0, "pcie"),)
    dm_side = 0 if media[0] == "dm" else 1 if media[1] == "dm" else None
    if dm_side is not None:  # (the engines and chips of the parts: the plan's alone, kept on it)
        memo: dict[str, Any] = p.__dict__
        kept: tuple[tuple[Lane, ...], frozenset[int]] | None = memo.get(_PARTS)
        if kept is None:
            kept = memo[_PARTS] = _dm_parts(p, spaces, dm_side)
        lanes, pcie = list(kept[0]), set(kept[1])
    for base in engine_parts(p) if dm_side is None else ():
        chips = [base[k] // spaces[k].chip_bytes for k in (0, 1)]
        if chips[0] != chips[1]:
            pcie |= set(chips)
        lane = schedule.earliest_engine(chips[0], lanes)
        if lane not in lanes:
            lanes.append(lane)
    # a chip loop inside one engine's commands still crosses PCIe (the cost model counts those bytes)
    if _crosses(p, reads, writes):
        pcie |= set((reads + writes).chip_indices())
    return tuple(lanes) + tuple((c, "pcie") for c in sorted(pcie))


#: Where a plan with a DM side keeps its parts' engines and the chips they cross between (:func:`_dm_parts`: a pure
#: function of the plan, a frozen dataclass, as the cost model keeps its cycles on it).
_PARTS = "_visa_dma_parts"


def _dm_parts(p: DmaPlan, spaces: tuple[AddressSpace, ...], dm_side: int) -> tuple[tuple[Lane, ...], frozenset[int]]:
    """The DMA engines of the parts of a plan with a DM side, in the order the parts first name them — each part's
    the one that owns its DM side's DMN pair (L2549) — and the chips of the parts whose sides lie on two chips."""
    hw, d = p.hw, p.hw.dm
    lanes: list[Lane] = []
    pcie: set[int] = set()
    sp = spaces[dm_side]
    for base in engine_parts(p):
        chips = [base[k] // spaces[k].chip_bytes for k in (0, 1)]
        if chips[0] != chips[1]:
            pcie |= set(chips)
        chip, off = divmod(base[dm_side], sp.chip_bytes)
        engine = off // sp.unit_bytes // d.slices_per_dmn // hw.dma.dmns_per_engine
        lane = dma_lane(chip, engine)
        if lane not in lanes:
            lanes.append(lane)
    return tuple(lanes), frozenset(pcie)


def _crosses(p: DmaPlan, reads: Footprint, writes: Footprint) -> bool:
    """Whether a tensor DMA moves bytes between chips: its sides' chips differ, or its cost model counts PCIe
    time (a chip permutation, L2389, L2845)."""
    rd, wr = reads.chips(), writes.chips()
    return bool(rd and wr and rd != wr) or (not fast_pcie.same_chip(p) and cycles(p).pcie > 0)


def _pcie_bytes(p: DmaPlan, reads: Footprint, writes: Footprint) -> int:
    """Bytes a tensor DMA moves between chips: those read on a chip it does not write and written on a chip it
    does not read; when both sides span the same chips but the cost model counts PCIe time (a permutation of
    chips), every byte."""
    rd, wr = reads.chips(), writes.chips()
    if rd != wr:
        out = sum(s.nbytes * bin(s.chips & ~wr).count("1") // max(1, bin(s.chips).count("1")) for s in reads.spans)
        return max(out, sum(s.nbytes * bin(s.chips & ~rd).count("1") // max(1, bin(s.chips).count("1"))
                            for s in writes.spans))
    return p.nbytes if cycles(p).pcie > 0 else 0


def dma_traffic(p: DmaPlan, reads: Footprint, writes: Footprint) -> dict[str, int]:
    """The bytes a DMA moves per roofline path: through the DMA engines (``DMA``; not for host ↔ HBM, which is
    the PCIe DMA), across PCIe (host ↔ HBM, or every byte when the sides' chips differ, L2389, L2845), and the
    HBM bytes it reads and writes (``HBM``)."""
    out: dict[str, int] = {}
    host = "host" in (p.src.medium, p.dst.medium)
    if not host:
        out["DMA"] = p.nbytes
    if host:
        out["PCIe"] = p.nbytes
    elif _crosses(p, reads, writes):
        out["PCIe"] = _pcie_bytes(p, reads, writes)
    hbm = reads.nbytes("hbm") + writes.nbytes("hbm")
    if hbm:
        out["HBM"] = hbm
    return {k: v for k, v in out.items() if v}
