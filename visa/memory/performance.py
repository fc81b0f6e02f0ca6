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

import numpy as np
import numpy.typing as npt

from visa.hw import HardwareProfile

__all__ = ["hbm_channel", "hbm_bank", "hbm_row", "dm_dmn", "dm_engine_time", "dm_busy", "hbm_transfers",
           "hbm_packet_transfers", "hbm_busy"]

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
    n = int(packets.size)
    if n == 0:
        return 0.0
    c = -(-packet_bytes // hw.dm.dmn_bytes_per_cycle)
    dmn = dm_dmn(hw, packets)
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


def hbm_busy(hw: HardwareProfile, chips: IntArray, units: IntArray, factor: npt.NDArray[np.float64],
             segment: IntArray | None = None) -> npt.NDArray[np.float64]:
    """Busy cycles of every HBM channel (``chip · channels + channel``) serving these transfers in order.

    A channel moves one 256-byte unit in 4 controller cycles at 0.75 GHz (L2980), 16/3 core cycles.  A
    transfer to a bank whose open row differs costs a row switch of 40 ns (L2987, at the 1 GHz core clock);
    the controller hides a switch behind transfers to other banks (L2990–2993), so only the part of the
    switch not covered by the channel's transfers since that bank's previous access is added.

    The controller holds 64 requests per channel (L2981) and serves those to an already open row first
    (FR-FCFS, L2990–2993): a request to a bank and row that an earlier request in the same window of 64
    arrivals on that channel already asked for is served with that request and never pays a switch (several
    engines streaming different rows of the same banks, for instance).  ``segment`` (one id per transfer)
    marks stretches of requests that are not adjacent in time (the sampled windows of a long DMA): a window
    of 64 never spans two of them.
    """
    if units.size == 0:
        return np.zeros(0)
    h, clk = hw.hbm, hw.clocks
    t = h.access_unit_channel_cycles * clk.core_hz / clk.hbm_controller_hz
    switch = h.row_switch_ns[0] * clk.core_hz / 1e9
    queue = h.channel_command_queue_entries
    n = units.size
    seg = np.zeros(n, dtype=np.int64) if segment is None else np.asarray(segment, dtype=np.int64)
    ch = chips * h.channels + hbm_channel(hw, units)
    nch = int(ch.max()) + 1
    # arrival rank of each transfer on its channel (gaps), and within its channel and segment (windows)
    rank = _ranks(ch, _stable_order(ch, nch), nch)
    nseg = int(seg.max()) + 1
    cs = ch * nseg + seg
    seg_rank = _ranks(cs, _stable_order(cs, nch * nseg), nch * nseg)
    window = seg * (-(-n // queue)) + seg_rank // queue
    bank = ch * 64 + hbm_bank(hw, units)
    row = hbm_row(hw, units)
    o2 = _stable_order(bank, nch * 64)  # each bank's transfers in arrival order
    k2, r2, g2, w2 = bank[o2], row[o2], rank[o2], window[o2]
    switched = np.zeros(n, dtype=bool)
    switched[1:] = (k2[1:] == k2[:-1]) & (r2[1:] != r2[:-1])
    # requests already asked for in their window (same bank, window and row, after the first of them)
    group = (k2 * (int(window.max()) + 1) + w2) * (int(row.max()) + 1) + r2
    o3 = np.argsort(group, kind="stable")
    g3 = group[o3]
    repeat = np.zeros(n, dtype=bool)
    repeat[o3[1:][g3[1:] == g3[:-1]]] = True
    switched &= ~repeat
    gap = np.zeros(n)
    gap[1:] = g2[1:] - g2[:-1] - 1
    extra = np.where(switched, np.maximum(0.0, switch - t - gap * t), 0.0)
    busy = np.bincount(ch, weights=factor * t, minlength=nch) + np.bincount(ch[o2], weights=extra, minlength=nch)
    return np.asarray(busy, dtype=np.float64)


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
