"""Address decoding for the memory performance model (manual "Memory Performance", L2848–3009).

Vectorised over numpy arrays of byte addresses:

* HBM (L2960–2977): the channel a 256-byte block lands in (stack bit 8 and the four channel bits 9–12 XOR-ed
  with bits 13–28), its bank (slice, bank group and bank bits) and its row (bits 21–33 and 35).  The manual
  names the channel hash only by example ("the channel's first bit equals the XOR of bits 9, 13, 21, and
  25", L2977) while its table marks every bit 13–28 as feeding the channel; the fold used here XORs the
  four-bit groups 9–12, 13–16, 17–20, 21–24 and 25–28 (docs/manual-notes.md).
* DM (L2862–2879): the DMN of a DMA address in the DM address space, where slices are
  ``hw.dm.slice_address_space_bytes`` apart (L2541) and 32 consecutive slices form a DMN (L2868).

>>> import numpy as np
>>> from visa.hw import RNGD
>>> hbm_channel(RNGD, np.array([0, 256, 512, 1 << 13])).tolist()
[0, 1, 2, 2]
>>> int(hbm_row(RNGD, np.array([1 << 21]))[0]), int(hbm_bank(RNGD, np.array([1 << 17]))[0])
(1, 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa.hw import HardwareProfile
from visa.memory import fast_load_order, fast_transfers

__all__ = ["hbm_channel", "hbm_bank", "hbm_row", "dm_dmn", "dm_engine_time", "dmn_engine_time", "dm_busy",
           "hbm_transfers", "hbm_packet_transfers", "hbm_busy", "hbm_load", "HbmLoad", "unit_cycles", "dm_bank_runs",
           "sequence_bank_runs"]

IntArray = npt.NDArray[np.int64]


def _field(addr: IntArray, bits: tuple[int, ...]) -> IntArray:
    """The value whose bit ``k`` is bit ``bits[k]`` of each address: one shift and mask per run of consecutive
    bits (the row bits 21–33 and 35 are two runs, not fourteen single bits)."""
    out: IntArray | None = None
    k = 0
    while k < len(bits):
        n = 1
        while k + n < len(bits) and bits[k + n] == bits[k] + n:
            n += 1
        part = (addr >> bits[k]) & ((1 << n) - 1)
        if k:
            part <<= k
        out = part if out is None else out | part
        k += n
    return np.zeros(addr.shape, dtype=np.int64) if out is None else out


def _bits(hw: HardwareProfile, component: str) -> tuple[int, ...]:
    return tuple(b for f in hw.hbm.address_map if f.component == component for b in f.bits)


def hbm_channel(hw: HardwareProfile, addr: npt.ArrayLike) -> IntArray:
    """Channel of each byte address: ``channel · stacks + stack`` (L2962–2977)."""
    a = np.asarray(addr, dtype=np.int64)
    h = hw.hbm
    width = len(h.channel_bits)
    ch = _field(a, h.channel_bits)
    xor = h.channel_xor_bits
    for k in range(0, len(xor), width):
        ch ^= _field(a, xor[k: k + width])
    return ch * h.stacks + _field(a, h.stack_bits)


def hbm_bank(hw: HardwareProfile, addr: npt.ArrayLike) -> IntArray:
    """Bank of each address within its channel: bank group, bank and slice bits together (L2962–2972)."""
    a = np.asarray(addr, dtype=np.int64)
    return _field(a, _bits(hw, "bank_group") + _bits(hw, "bank") + _bits(hw, "slice"))


def hbm_row(hw: HardwareProfile, addr: npt.ArrayLike) -> IntArray:
    """Row of each address within its bank (bits 21–33 and 35, L2970–2972)."""
    return _field(np.asarray(addr, dtype=np.int64), _bits(hw, "row"))


def dm_dmn(hw: HardwareProfile, addr: npt.ArrayLike) -> IntArray:
    """DMN (global over clusters and chips) of each address in the DMA's DM address space (L2541, L2866)."""
    a = np.asarray(addr, dtype=np.int64)
    return (a // hw.dm.slice_address_space_bytes) // hw.dm.slices_per_dmn


# ---------------------------------------------------------------------------------------------------------
# cost of a stream of DMA packets on DM and HBM
# ---------------------------------------------------------------------------------------------------------


def dm_bank_runs(hw: HardwareProfile, accesses: IntArray) -> tuple[int, ...]:
    """For each DM bank of a slice, the longest run of consecutive accesses to it in this sequence of byte
    addresses (each the first byte of one access; bank = bits 3–6, L2878): the count the bank-starvation rule
    limits (L2897–2941).  Sequential accesses walk the 16 banks; a stride of a multiple of 128 bytes (or a
    re-read of one address) stays on one.

    >>> import numpy as np
    >>> from visa.hw import RNGD
    >>> dm_bank_runs(RNGD, np.arange(4) * 128)[:2], max(dm_bank_runs(RNGD, np.arange(32) * 8))
    ((4, 0), 1)
    """
    nbanks = 1 << len(hw.dm.bank_bits)
    out = np.zeros(nbanks, dtype=np.int64)
    if accesses.size:
        banks = (accesses >> hw.dm.bank_bits[0]) & (nbanks - 1)
        edges = np.concatenate([[0], np.flatnonzero(np.diff(banks)) + 1, [banks.size]])
        np.maximum.at(out, banks[edges[:-1]], np.diff(edges))
    return tuple(int(x) for x in out)


def sequence_bank_runs(hw: HardwareProfile, sizes: tuple[int, ...], strides: tuple[int, ...], base_bits: int,
                       element_bits: int, per: int, sample: int = 1 << 14) -> tuple[int, ...]:
    """:func:`dm_bank_runs` of a sequencer's accesses: of its first ``sample`` elements (nested loops ``sizes`` ×
    ``strides`` in elements, outermost first, from bit ``base_bits``), every ``per``-th element starts an access
    of ``element_bits``-bit elements.  Only the sampled prefix is generated (a large fetch or commit is not walked
    whole)."""
    total = 1
    for n in sizes:
        total *= n
    idx = np.arange(0, min(total, sample), max(1, per), dtype=np.int64)
    offset = np.zeros(idx.shape, dtype=np.int64)
    if sizes:
        for digit, stride in zip(np.unravel_index(idx, sizes), strides, strict=True):
            offset += digit * stride
    return dm_bank_runs(hw, (base_bits + offset * element_bits) // 8)


def dm_engine_time(hw: HardwareProfile, packets: IntArray, packet_bytes: int) -> float:
    """Cycles one DMA engine spends on DM for packets starting at ``packets`` (DM addresses, in order).

    A DMN moves 128 B/cycle (L2344, L2603), so a packet occupies its DMN ``ceil(bytes / 128)`` cycles; while
    one DMN works the engine may issue to the other DMN of its pair, so a packet that alternates DMN with its
    predecessor costs half (two DMNs interleaved give 256 B/cycle, L2883–2893; without interleaving half the
    bandwidth is lost, L2857).

    >>> import numpy as np
    >>> from visa.hw import RNGD
    >>> dmn = RNGD.dm.slices_per_dmn * RNGD.dm.slice_address_space_bytes
    >>> dm_engine_time(RNGD, np.array([0, dmn, 0, dmn]), 256), dm_engine_time(RNGD, np.array([0, 0, 0, 0]), 256)
    (4.0, 8.0)
    """
    return dmn_engine_time(hw, dm_dmn(hw, packets), packet_bytes)


def dmn_engine_time(hw: HardwareProfile, dmn: IntArray, packet_bytes: int) -> float:
    """:func:`dm_engine_time` of packets whose DMNs (:func:`dm_dmn`) are ``dmn``, in order."""
    n = int(dmn.size)
    if n == 0:
        return 0.0
    c = -(-packet_bytes // hw.dm.dmn_bytes_per_cycle)
    same = int(np.count_nonzero(dmn[1:] == dmn[:-1]))
    if n == 1 or dmn[1] == dmn[0]:
        same += 1
    return c / 2 * (n + same)


def dm_busy(hw: HardwareProfile, packets: IntArray, packet_bytes: int) -> dict[int, float]:
    """Cycles each DMN is busy serving these packets (``ceil(bytes / 128)`` per packet, L2933)."""
    c = -(-packet_bytes // hw.dm.dmn_bytes_per_cycle)
    dmn, count = np.unique(dm_dmn(hw, packets), return_counts=True)
    return {int(d): float(k) * c for d, k in zip(dmn.tolist(), count.tolist(), strict=True)}


def hbm_transfers(hw: HardwareProfile, packets: IntArray, packet_bytes: int,
                  write: bool) -> tuple[IntArray, npt.NDArray[np.float64]]:
    """The unit addresses and cost factors of :func:`hbm_packet_transfers` (without the packet indices)."""
    units, factor, _ = hbm_packet_transfers(hw, packets, packet_bytes, write)
    return units, factor


def hbm_packet_transfers(hw: HardwareProfile, packets: IntArray, packet_bytes: int,
                         write: bool) -> tuple[IntArray, npt.NDArray[np.float64], IntArray]:
    """The 256-byte HBM transfers of packets starting at ``packets`` (chip-relative addresses, in order).

    A packet is split into ``ceil(bytes / 256)`` requests (L2469, L2981); a request that crosses a 256-byte
    boundary needs two transfers (unaligned read: 2×, L2984), and a write that covers only part of a 256-byte
    unit is a read-modify-write (about 50×, L2985).  Returns the unit address of every transfer in issue
    order, its cost factor (1, or the RMW penalty) and the index of the packet it belongs to.
    """
    if fast_transfers.ALIGNED.on:
        got = fast_transfers.transfers(hw, packets, packet_bytes, write)
        if got is not None:
            return got
    unit = hw.hbm.access_unit_bytes
    req = hw.dma.request_bytes
    nreq = -(-packet_bytes // req)
    start = packets[:, None] + np.arange(nreq, dtype=np.int64) * req
    end = np.minimum(start + req, packets[:, None] + packet_bytes)
    first, last = start // unit, (end - 1) // unit
    blocks = np.stack([first, last], axis=-1)
    valid = np.stack([np.ones_like(first, dtype=bool), last != first], axis=-1)
    if write:
        lo = np.maximum(blocks * unit, start[..., None])
        hi = np.minimum((blocks + 1) * unit, end[..., None])
        factor = np.where(hi - lo < unit, float(hw.hbm.unaligned_write_penalty), 1.0)
    else:
        factor = np.ones(blocks.shape)
    packet = np.broadcast_to(np.arange(packets.size, dtype=np.int64)[:, None, None], blocks.shape)
    return (blocks * unit)[valid], factor[valid], packet[valid]


@dataclass(frozen=True)
class HbmLoad:
    """What a stream of 256-byte transfers costs the HBM channels (:func:`hbm_load`): per channel
    (``chip · channels + channel``) the busy cycles and the data bus's share of them, and the counts the layout
    report quotes (row activations, transfers, read-modify-writes)."""

    busy: npt.NDArray[np.float64]
    bus: npt.NDArray[np.float64]
    activations: int
    transfers: int
    rmw: int
    #: with ``group`` given to :func:`hbm_load`: ``[group, channel]`` busy cycles of each group's stretches alone
    group_busy: npt.NDArray[np.float64] | None = None
    #: with ``keep_windows`` given to :func:`hbm_load`: every window's channel and busy cycles, in the order their
    #: channels' sums add them (channel by channel, each stretch's windows in order): what a model of several
    #: stretches needs to add windows alike
    windows: tuple[IntArray, npt.NDArray[np.float64]] | None = None

    @property
    def channels_used(self) -> int:
        """Channels that served at least one transfer."""
        return int(np.count_nonzero(self.bus))


def unit_cycles(hw: HardwareProfile) -> float:
    """Core cycles a 256-byte unit occupies its channel's data bus: 4 controller cycles at 0.75 GHz (L2980)."""
    return hw.hbm.access_unit_channel_cycles * hw.clocks.core_hz / hw.clocks.hbm_controller_hz


def hbm_load(hw: HardwareProfile, chips: IntArray, units: IntArray, factor: npt.NDArray[np.float64],
             segment: IntArray | None = None, group: IntArray | None = None, keep_windows: bool = False) -> HbmLoad:
    """The HBM channels serving these transfers, in arrival order (manual "High-Bandwidth Memory", L2948–3009).
    With ``keep_windows``, :attr:`HbmLoad.windows` too (one entry per window: asked for by the model that renames
    windows, not kept with every cached cost).

    * A 256-byte unit occupies its channel's data bus 4 controller cycles at 0.75 GHz: 16/3 core cycles (L2980);
      a read-modify-write (``factor`` 50, L2985) occupies it ``factor`` times as long.
    * Each bank has one open row; all rows start closed, and switching to another costs 40 ns (L2987), during
      which that bank serves nothing.  The first row a bank opens in a stretch has nothing to close and is not
      charged (the manual's examples never charge it, L2608–2808).
    * The controller holds 64 requests per channel (L2981), serves first those to an open row (FR-FCFS) and
      interleaves the banks it holds requests for, so that one bank's switches overlap other banks' transfers
      (L2989–2993).  So a channel serves its requests in windows of 64 arrivals: within a window a bank opens each
      row asked of it once (not again the row it left open: that of its last-arriving row in the window before),
      and the window lasts as long as its bus (16/3 per transfer) or its busiest bank (40 per activation + 16/3 per
      transfer), whichever is longer.  A channel is busy for the sum of its windows.
    * ``segment`` (one id per transfer) marks stretches of requests that are served apart (a DMA's engines and
      commands, and the sampled windows of a long DMA): no window spans two of them, nor does an open row carry
      from one to the next.
    * ``group`` (one id per segment) asks also for each group's busy cycles per channel as if its transfers were
      served alone (:attr:`HbmLoad.group_busy`): its stretches' windows, which no other stretch shares, summed
      in the same order.

    A contiguous stream keeps every channel's bus busy (1,536 B/cycle per chip, :mod:`visa.hw.paths`); a window
    whose requests open a new row of a few banks each time is bound by those banks: a row switch costs "30–40×" a
    burst to an open row (L2860, L2987).
    """
    h, clk = hw.hbm, hw.clocks
    t = unit_cycles(hw)
    switch = h.row_switch_ns[0] * clk.core_hz / 1e9
    n = int(units.size)
    if n == 0:
        empty = np.zeros(0)
        return HbmLoad(empty, empty, 0, 0, 0)
    queue = h.channel_command_queue_entries
    seg = np.zeros(n, dtype=np.int64) if segment is None else np.asarray(segment, dtype=np.int64)
    ch = chips * h.channels + hbm_channel(hw, units)
    nch = int(ch.max()) + 1
    nseg = int(seg.max()) + 1
    cs = ch * nseg + seg
    ncs = nch * nseg
    by_stretch = _stable_order(cs, ncs)
    window = _ranks(cs, by_stretch, ncs) // queue
    # one dense id per (channel, segment, window): each stretch's windows follow its channel's earlier ones
    windows = -(-np.bincount(cs, minlength=ncs) // queue)
    offset = np.zeros(ncs + 1, dtype=np.int64)
    np.cumsum(windows, out=offset[1:])
    batch = offset[cs] + window
    nb = int(offset[-1])
    bank = hbm_bank(hw, units)
    row = hbm_row(hw, units)
    cost = factor * t
    # one group per (window, bank, row) at its first arrival (a stable sort keeps arrivals in order)
    key = (batch * 64 + bank) << 15 | row  # bank ids (slice, bank group, bank bits) < 64; rows < 2^15
    order = fast_load_order.order(key, by_stretch) if fast_load_order.ORDER.on else np.argsort(key, kind="stable")
    k = key[order]
    first = np.ones(n, dtype=bool)
    first[1:] = k[1:] != k[:-1]
    group_of = np.cumsum(first) - 1  # the group of each sorted transfer
    gk, gf = k[first], order[first]
    gr = gk & ((1 << 15) - 1)
    gblock = gk >> 15  # (window, bank)
    # within a block, groups in order of first arrival; blocks of one bank and stretch follow window by window
    o = np.argsort(gblock * n + gf, kind="stable")
    gk, gf, gr, gblock = gk[o], gf[o], gr[o], gblock[o]
    start = np.ones(gk.size, dtype=bool)
    start[1:] = gblock[1:] != gblock[:-1]
    block = np.cumsum(start) - 1
    ends = np.flatnonzero(np.append(start[1:], True))
    # the block before, in bank order, is this bank's previous window of the same stretch when the windows
    # differ by one and they share the channel, segment and bank (blocks are sorted by window, then bank: reorder)
    b_batch, b_bank = gblock[ends] // 64, gblock[ends] % 64
    b_cs = cs[gf[ends]]
    bo = np.lexsort((b_batch, b_bank, b_cs))
    prev = np.full(ends.size, -1, dtype=np.int64)
    same = (b_cs[bo][1:] == b_cs[bo][:-1]) & (b_bank[bo][1:] == b_bank[bo][:-1])
    prev[bo[1:][same]] = bo[:-1][same]
    # the row a block leaves open is its last-arriving group's
    left_open = gr[ends]
    opened = np.where(prev >= 0, left_open[np.maximum(prev, 0)], -1)
    # a switch closes the open row and opens another; a bank's first row in a stretch opens with no row to close
    # (rows start closed, L2987), as the manual's examples count it
    activate = (gr != opened[block]) & ~(start & (opened[block] < 0))
    activate = activate.astype(np.float64)
    # each block's bank time: its activations and its transfers; each window's time: its bus or busiest bank
    block_of = np.empty(n, dtype=np.int64)  # the block of every transfer
    inv = np.empty(o.size, dtype=np.int64)
    inv[o] = np.arange(o.size, dtype=np.int64)
    block_of[order] = block[inv[group_of]]
    bank_time = np.bincount(block, weights=activate * switch) + np.bincount(block_of, weights=cost,
                                                                            minlength=ends.size)
    peak = np.zeros(nb)
    np.maximum.at(peak, b_batch, bank_time)
    bus_w = np.bincount(batch, weights=cost, minlength=nb)
    batch_channel = np.zeros(nb, dtype=np.int64)
    batch_channel[batch] = ch
    window_time = np.maximum(bus_w, peak)
    busy = np.asarray(np.bincount(batch_channel, weights=window_time, minlength=nch), dtype=np.float64)
    bus = np.asarray(np.bincount(ch, weights=cost, minlength=nch), dtype=np.float64)
    group_busy = None
    if group is not None:
        ng = int(np.max(group)) + 1
        batch_group = np.zeros(nb, dtype=np.int64)
        batch_group[batch] = np.asarray(group, dtype=np.int64)[seg]
        group_busy = np.asarray(np.bincount(batch_group * nch + batch_channel, weights=window_time,
                                            minlength=ng * nch), dtype=np.float64).reshape(ng, nch)
    return HbmLoad(busy, bus, int(activate.sum()), n, int(np.count_nonzero(factor > 1)), group_busy,
                   (batch_channel, window_time) if keep_windows else None)


def hbm_busy(hw: HardwareProfile, chips: IntArray, units: IntArray, factor: npt.NDArray[np.float64],
             segment: IntArray | None = None) -> npt.NDArray[np.float64]:
    """Busy cycles of every HBM channel (``chip · channels + channel``) serving these transfers in order
    (:func:`hbm_load`)."""
    return hbm_load(hw, chips, units, factor, segment).busy


def _stable_order(key: IntArray, bound: int) -> IntArray:
    """``np.argsort(key, kind="stable")`` for keys in ``[0, bound)``: numpy radix-sorts 16-bit keys (linear
    time), so keys that fit are sorted as ``int16`` (the same order)."""
    if bound <= 1 << 15:
        return np.argsort(key.astype(np.int16), kind="stable")
    return np.argsort(key, kind="stable")


def _ranks(key: IntArray, order: IntArray, bound: int) -> IntArray:
    """Each element's rank among the elements with its key (in arrival order), given ``order``, the stable
    sort of ``key`` (keys in ``[0, bound)``): its position in the sort less its key's first position."""
    first = np.zeros(bound + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=bound), out=first[1:])
    rank = np.empty(key.size, dtype=np.int64)
    rank[order] = np.arange(key.size, dtype=np.int64) - first[key[order]]
    return rank
