"""What a DMA costs (manual L2465–2504, L2595–2605, L2809–2847; "Memory Performance", L2848–3009).

See :func:`cycles` and docs/manual-notes.md for the model and the manual figures it reproduces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.cache import cached
from visa.engines.dma import fast_cost, fast_dm_time, fast_relative, fast_translates
from visa.engines.dma.config import DmaCost, DmaLoop, DmaPlan
from visa.hw import HardwareProfile
from visa.memory import fast_load_order, fast_transfers
from visa.memory import performance as perf
from visa.memory.transfer import AddressSpace, address_space

__all__ = ["cycles"]

_SAMPLE = 1 << 17  # requests modelled per DMA; longer DMAs are modelled on evenly spaced windows and scaled
_WINDOWS = 8


def _packet_indices(n: int, budget: int) -> tuple[npt.NDArray[Any], float, npt.NDArray[Any]]:
    """Indices of the packets to model (all, or evenly spaced contiguous windows), the scale factor, and the
    window of each index (the HBM model does not join two windows into one stretch of requests)."""
    if n <= budget:
        return np.arange(n, dtype=np.int64), 1.0, np.zeros(n, dtype=np.int64)
    width = max(1, budget // _WINDOWS)
    starts = (np.arange(_WINDOWS, dtype=np.int64) * (n - width)) // max(1, _WINDOWS - 1)
    idx = (starts[:, None] + np.arange(width, dtype=np.int64)).reshape(-1)
    return idx, n / idx.size, np.repeat(np.arange(_WINDOWS, dtype=np.int64), width)


def _addresses(loops: Sequence[DmaLoop], idx: npt.NDArray[Any], base: tuple[int, int],
               indirect: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None = None
               ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    sizes = tuple(lp.size for lp in loops)
    src = np.full(idx.shape, base[0], dtype=np.int64)
    dst = np.full(idx.shape, base[1], dtype=np.int64)
    if indirect is not None:  # the IndirectLoop entry, outermost: iteration k adds its own offsets (L1684–1688)
        per = max(1, math.prod(sizes))
        it, idx = np.divmod(idx, per)
        src += indirect[0][it]
        dst += indirect[1][it]
    if sizes:
        digits = np.unravel_index(idx, sizes)
        for dgt, lp in zip(digits, loops, strict=True):
            src += dgt * lp.src
            dst += dgt * lp.dst
    return src, dst


def _engine_bases(spatial: Sequence[DmaLoop], base: tuple[int, int]) -> list[tuple[int, int]]:
    """The bases of every combination of the loops' indices, the last loop's fastest (``np.ndindex``'s order):
    ``base`` plus each loop's index times its strides (integers: any order of the additions)."""
    out = [base]
    for lp in spatial:
        out = [(s + i * lp.src, d + i * lp.dst) for s, d in out for i in range(lp.size)]
    return out or [base]


def cycles(p: DmaPlan, indirect: tuple[Sequence[int], Sequence[int]] | None = None) -> DmaCost:
    """Cycles of the DMA (see the module docstring and docs/manual-notes.md for the model and its sources).

    ``indirect=(source offsets, destination offsets)`` (bytes, one pair per iteration) adds an IndirectLoop
    entry (L1684–1688) outermost in each command's sequencer: every packet of the plan is sent once per
    iteration, at the plan's addresses plus that iteration's offsets, and costed like any other packet.

    Each engine runs its commands one after another, each paying the startup (L2467, L2827) and then lasting
    as long as its slowest part: its requests (one 256-byte request per cycle, L2469, L2596), PCIe (30 B/cycle,
    L2845), DM (:func:`~visa.memory.performance.dm_engine_time`) and HBM (the busiest channel,
    :func:`~visa.memory.performance.hbm_busy`).  Engines run in parallel but share the DMNs and HBM channels:
    the DMA also lasts at least as long as the busiest DMN or channel serving all of them (L2595–2605, L2705).
    """
    if indirect is not None:
        return _cycles(p, (tuple(int(x) for x in indirect[0]), tuple(int(x) for x in indirect[1])))
    # a plan is costed several times per DMA (the move itself, its lanes, its traffic): the cost, a pure function of
    # the plan and the fast paths' switches, is kept on the plan (in its ``__dict__``, not a field: a copy made by
    # ``replace`` starts without it) with the switches it was made under
    state = tuple([path.on for path in _PATHS])
    memo: dict[str, Any] = p.__dict__
    kept: tuple[tuple[bool, ...], DmaCost] | None = memo.get(_KEPT)
    if kept is not None and kept[0] == state:
        return kept[1]
    cost = _cycles(p, None)
    memo[_KEPT] = (state, cost)
    return cost


_PATHS = (fast_relative.RELATIVE, fast_relative.FINE, fast_relative.PAIR, fast_cost.SHARED, fast_transfers.ALIGNED,
          fast_translates.TRANSLATED, fast_translates.SHIFTED, fast_dm_time.ONCE, fast_dm_time.SHIFTED,
          fast_load_order.ORDER)
_KEPT = "_visa_dma_cost"


@cached(2048, paths=_PATHS)
def _cycles(p: DmaPlan, indirect: tuple[tuple[int, ...], tuple[int, ...]] | None) -> DmaCost:
    if fast_relative.RELATIVE.on:
        got = fast_relative.cycles(p, indirect, model, assemble)
        if got is not None:
            return got
    return assemble(p, model(p.hw, (p.src.medium, p.dst.medium), p.spatial, p.commands, p.loops, p.base, indirect))


def model(hw: HardwareProfile, media: tuple[str, str], spatial: tuple[DmaLoop, ...], commands: tuple[DmaLoop, ...],
          loops: tuple[DmaLoop, ...], base: tuple[int, int],
          indirect: tuple[tuple[int, ...], tuple[int, ...]] | None) -> Modelled:
    """The model of a DMA given by its loops and bases (:func:`cycles`), before its HBM channels are named in a
    :class:`DmaCost`: the cost's label-free fields, the HBM load, the sampling scale and the split reads."""
    spaces = (address_space(hw, media[0]), address_space(hw, media[1]))
    nbytes = loops[-1].size
    inner = loops[:-1]
    npk = math.prod(lp.size for lp in inner)
    offsets = None
    if indirect is not None:
        offsets = (np.asarray(indirect[0], dtype=np.int64), np.asarray(indirect[1], dtype=np.int64))
        npk *= len(indirect[0])
    requests = npk * hw.dma.requests(nbytes)
    startup = hw.dma.startup_cycles
    engines = _engine_bases(spatial, base)
    ncommands = max(1, math.prod(lp.size for lp in commands))  # as many as _engine_bases(commands, ·) gives
    runs = len(engines) * ncommands
    sides = sum(1 for sp in spaces if sp.medium in ("hbm", "dm"))
    idx, scale, seg = _packet_indices(npk, max(1, _SAMPLE // (runs * hw.dma.requests(nbytes) * max(1, sides))))
    shared_dm: dict[int, float] = {}
    parts: list[tuple[int, float, float, _Transfers]] = []
    # every command walks the same loops from its own base: the addresses relative to base 0 are found once (digits,
    # strides, indirect offsets) and each command adds its base (int64 sums: the same integers in any order)
    rel = _addresses(inner, idx, (0, 0), offsets)
    hbm_sides = [k for k in (0, 1) if spaces[k].medium == "hbm"]
    span = (int(rel[hbm_sides[0]].min()), int(rel[hbm_sides[0]].max())) if len(hbm_sides) == 1 and idx.size else None
    first: tuple[int, _Transfers] | None = None  # the first command's HBM side's base and transfers
    dm_sides = [k for k in (0, 1) if spaces[k].medium == "dm"]
    first_dm: tuple[int, float, dict[int, float]] | None = None  # its DM side's base, DM time and DMNs' busy cycles
    for e, ebase in enumerate(engines):
        for cbase in _engine_bases(commands, ebase):
            addr = (rel[0] + cbase[0], rel[1] + cbase[1])
            pcie = _pcie_bytes(nbytes, spaces, addr) * scale / hw.dma.pcie_bytes_per_cycle
            dm: float | None = None
            if first_dm is not None and fast_dm_time.SHIFTED.on:
                dm = fast_dm_time.shifted(hw, first_dm, cbase[dm_sides[0]], shared_dm)
            if dm is None:
                dm = _dm_time(hw, spaces, addr, nbytes, scale, shared_dm)
            if not parts and len(dm_sides) == 1:  # (the first command: ``shared_dm`` holds its additions alone)
                first_dm = (cbase[dm_sides[0]], dm, dict(shared_dm))
            got = None
            if first is not None and span is not None and fast_translates.SHIFTED.on:
                k = hbm_sides[0]
                got = fast_translates.shifted(hw, spaces[k].chip_bytes, first[1], first[0] + span[0],
                                              first[0] + span[1], cbase[k] - first[0])
            if got is None:
                got = _hbm_transfers(hw, spaces, addr, nbytes, seg)
            if first is None and span is not None:
                first = (cbase[hbm_sides[0]], got)
            parts.append((e, pcie, dm, got))
    # HBM: every part (an engine's command) is a stretch of its own (no queue window spans two parts), so that the
    # controller serves a part's requests alike whether the parts run on one engine or on many: more engines are
    # never slower than the same parts one after another
    shared = runs > 1 and fast_cost.SHARED.on
    found = fast_translates.load(hw, [t for *_, t in parts]) if shared and fast_translates.TRANSLATED.on else None
    if found is None:
        merged = [np.concatenate([t[k] for *_, t in parts]) for k in range(3)]
        merged.append(np.concatenate([t[3] + k * _WINDOWS for k, (*_, t) in enumerate(parts)]))
        found = perf.hbm_load(hw, merged[0], merged[1], merged[2], merged[3],
                              fast_cost.groups(len(parts), _WINDOWS) if shared else None)
    load = found
    shared_hbm = float(load.busy.max()) * scale if load.busy.size else 0.0
    peaks = fast_cost.part_peaks(load, len(parts)) if shared else None
    engine_time = [0.0] * len(engines)
    worst = (0.0, 0.0, 0.0, 0.0)
    for k, (e, pcie, dm, t) in enumerate(parts):
        if runs == 1:
            hbm = shared_hbm
        elif peaks is not None:
            hbm = peaks[k] * scale
        else:
            own = perf.hbm_busy(hw, t[0], t[1], t[2], t[3])
            hbm = float(own.max()) * scale if own.size else 0.0
        busy = max(float(requests), pcie, dm, hbm)
        engine_time[e] += startup + busy
        worst = max(worst, (busy, dm, hbm, pcie))
    dm_peak = max(shared_dm.values(), default=0.0)
    total = max(max(engine_time), startup + max(dm_peak, shared_hbm))
    cost = DmaCost(total=math.ceil(total), startup=startup * ncommands, issue=requests,
                   dm=math.ceil(max(worst[1], dm_peak)), hbm=math.ceil(max(worst[2], shared_hbm)),
                   pcie=math.ceil(worst[3]), engines=len(engines), commands=ncommands, packets=npk,
                   nbytes=math.prod(lp.size for lp in spatial + commands + inner) * nbytes)
    return cost, load, scale, sum(t[4] for *_, t in parts)


#: what :func:`model` finds: the cost without its channels and reasons, the HBM load (channels by number), the
#: sampling scale, and how many modelled reads crossed a 256-byte boundary
Modelled = tuple[DmaCost, perf.HbmLoad, float, int]


def assemble(p: DmaPlan, found: Modelled) -> DmaCost:
    """The :class:`DmaCost` of plan ``p`` from its model: the busy cycles of every HBM channel it uses, and the
    manual's rules that slowed it (:func:`_why`)."""
    cost, load, scale, split = found
    hw = p.hw
    spaces = (address_space(hw, p.src.medium), address_space(hw, p.dst.medium))
    channels = tuple((int(c), float(b) * scale) for c, b in enumerate(load.busy.tolist()) if b > 0)
    cost = replace(cost, channels=channels)
    return replace(cost, why=_why(hw, p, cost, load, scale, split, spaces))


_Transfers = tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], int]


def _why(hw: HardwareProfile, p: DmaPlan, cost: DmaCost, load: perf.HbmLoad, scale: float, split: int,
         spaces: tuple[AddressSpace, AddressSpace]) -> tuple[str, ...]:
    """The manual's rules that made this DMA slower than its bytes at full bandwidth (docs/cost-model.md)."""
    out: list[str] = []
    busy = cost.total - cost.startup
    if cost.commands > 1:
        out.append(f"{cost.commands} commands per engine, each paying the {hw.dma.startup_cycles}-cycle startup "
                   "(command segmentation, L2467, L2808)")
    if p.stride0 % hw.dma.request_bytes and cost.issue >= busy:
        out.append(f"{p.stride0}-byte packets take {hw.dma.requests(p.stride0)} request(s) of "
                   f"{hw.dma.request_bytes} bytes each (packet size, L2469, L2681)")
    if cost.pcie >= busy and cost.pcie:
        out.append(f"PCIe carries {hw.dma.pcie_bytes_per_cycle} B/cycle (L2845)")
    if cost.dm >= busy and cost.dm > cost.issue:
        out.append(f"DM: the packets do not alternate the two DMNs of an engine's pair, or several engines share a "
                   f"DMN: {hw.dm.dmn_bytes_per_cycle} B/cycle per DMN (DMN interleaving, L2857, L2883–2893)")
    if load.transfers and cost.hbm >= busy:
        chips = len({c // hw.hbm.channels for c, _ in cost.channels}) or 1
        if load.channels_used < chips * hw.hbm.channels:
            out.append(f"HBM: {load.channels_used} of {chips * hw.hbm.channels} channels serve the transfers "
                       "(channel interleaving: toggle the stack bit 8 and channel bits 9–12, L2861, L2962–2977)")
        # the busiest channel, and of several tied the one whose bus is least busy: a choice by the values alone,
        # not by the channels' numbers, so that a DMA moved elsewhere (its channels renamed) reads the same
        top = int(np.lexsort((load.bus, -load.busy))[0])
        if load.busy[top] > load.bus[top] * (1 + 1e-9):
            out.append(f"HBM: {round(load.activations * scale):,} row activations for "
                       f"{round(load.transfers * scale):,} transfers; the busiest channel's banks keep it "
                       f"{load.busy[top] * scale:,.0f} cycles against its bus's {load.bus[top] * scale:,.0f} "
                       "(bank conflicts, 30–40× per row switch, L2860, L2987)")
        if load.rmw:
            out.append(f"HBM: {round(load.rmw * scale):,} writes cover part of a 256-byte unit: read-modify-write, "
                       f"×{hw.hbm.unaligned_write_penalty} (alignment, L2859, L2985)")
        if split:
            out.append(f"HBM: {round(split * scale):,} reads cross a 256-byte boundary and take two transfers "
                       f"(alignment, ×{hw.hbm.unaligned_read_penalty}, L2859, L2984)")
    return tuple(out)


def _dm_time(hw: HardwareProfile, spaces: tuple[AddressSpace, AddressSpace],
             addr: tuple[npt.NDArray[Any], npt.NDArray[Any]], nbytes: int,
             scale: float, shared: dict[int, float]) -> float:
    """One command's DM time (both sides add up when they share a DMN: reads and writes of one DMN are
    sequential, L2673), and the DMNs' busy cycles added to ``shared``."""
    sides = [k for k in (0, 1) if spaces[k].medium == "dm"]
    if fast_dm_time.ONCE.on:
        got = fast_dm_time.dm_time(hw, sides, addr, nbytes, scale, shared)
        if got is not None:
            return got
    times = [perf.dm_engine_time(hw, addr[k], nbytes) * scale for k in sides]
    for k in sides:
        for dmn, busy in perf.dm_busy(hw, addr[k], nbytes).items():
            shared[dmn] = shared.get(dmn, 0.0) + busy * scale
    if len(sides) == 2 and np.intersect1d(perf.dm_dmn(hw, addr[0]), perf.dm_dmn(hw, addr[1])).size:
        return sum(times)
    return max(times, default=0.0)


def _hbm_transfers(hw: HardwareProfile, spaces: tuple[AddressSpace, AddressSpace],
                   addr: tuple[npt.NDArray[Any], npt.NDArray[Any]], nbytes: int, seg: npt.NDArray[Any]) -> _Transfers:
    """(chips, unit addresses, cost factors, sample windows) of one command's HBM transfers in issue order —
    packet by packet, a packet's read before its write — and how many reads crossed a 256-byte boundary (an
    extra transfer each, L2984)."""
    got: list[tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]] = []
    keys: list[npt.NDArray[Any]] = []
    split = 0
    for k in (0, 1):
        if spaces[k].medium != "hbm":
            continue
        chip, off = np.divmod(addr[k], spaces[k].chip_bytes)
        units, factor, packet = perf.hbm_packet_transfers(hw, off, nbytes, write=k == 1)
        if k == 0:
            split += int(units.size - off.size * hw.dma.requests(nbytes))
        got.append((chip[packet], units, factor, seg[packet]))
        keys.append(packet * 2 + k)
    if not got:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0), empty, 0
    order = np.argsort(np.concatenate(keys), kind="stable")

    def cat(j: int) -> npt.NDArray[Any]:
        out: npt.NDArray[Any] = np.concatenate([g[j] for g in got])[order]
        return out
    return cat(0), cat(1), cat(2), cat(3), split


def _pcie_bytes(nbytes: int, spaces: tuple[AddressSpace, AddressSpace],
                addr: tuple[npt.NDArray[Any], npt.NDArray[Any]]) -> float:
    """Bytes of the modelled packets that cross PCIe: host ↔ HBM, or between chips (L2389, L2845)."""
    n = addr[0].size
    if "host" in (spaces[0].medium, spaces[1].medium):
        return float(n * nbytes)
    crossing = (addr[0] // spaces[0].chip_bytes) != (addr[1] // spaces[1].chip_bytes)
    return float(np.count_nonzero(crossing) * nbytes)

