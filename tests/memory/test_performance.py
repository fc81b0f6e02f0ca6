"""Address decoding and the memory cost helpers (manual "Memory Performance", L2848–3009)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD
from visa.memory import performance as perf

SL = RNGD.dm.slice_address_space_bytes


def test_dm_bank_bits_l2877() -> None:
    # bank = (addr >> 3) & 0xF: 128 consecutive bytes cover the 16 banks (L2877-2879)
    assert [RNGD.dm.bank_of(a) for a in range(0, 128, 8)] == list(range(16))


def test_hbm_stack_and_channel_bits_l2962() -> None:
    ch = perf.hbm_channel(RNGD, np.arange(64) * 256)
    assert len(set(ch.tolist())) == 32  # bits 8-12 spread 256-byte units over the 32 channels (L2990)
    # without bit 8 only one stack's 16 channels are used (L2717-2751)
    assert len(set(perf.hbm_channel(RNGD, np.arange(64) * 512).tolist())) == 16


def test_hbm_channel_folds_bits_13_to_28() -> None:
    # the channel is the XOR of bits 9-12 with bits 13-28 (L2977): bit 13 and bit 9 cancel
    a = np.array([(1 << 9) | (1 << 13)])
    assert perf.hbm_channel(RNGD, a).tolist() == [0]


def test_hbm_row_and_bank() -> None:
    assert perf.hbm_row(RNGD, np.array([1 << 21, 1 << 35])).tolist() == [1, 1 << 13]
    assert perf.hbm_bank(RNGD, np.array([1 << 13, 1 << 19, 1 << 20])).tolist() == [1, 2, 16]


def test_dm_dmn_of_an_address() -> None:
    assert perf.dm_dmn(RNGD, np.array([0, 31 * SL, 32 * SL, 256 * SL])).tolist() == [0, 0, 1, 8]


def test_dmn_interleaving_halves_the_dm_time_l2883() -> None:
    dmn = 32 * SL
    alternating = np.arange(64) % 2 * dmn
    assert perf.dm_engine_time(RNGD, alternating, 256) == 64  # 256 B/cycle (L2893)
    assert perf.dm_engine_time(RNGD, np.zeros(64, np.int64), 256) == 128  # 128 B/cycle on one DMN (L2857)


def test_request_splitting_and_rmw_l2469_l2985() -> None:
    # a 2800-byte write is ten 256-byte requests and one 240-byte read-modify-write (L2985)
    units, factor = perf.hbm_transfers(RNGD, np.array([0]), 2800, write=True)
    assert units.size == 11 and factor.tolist() == [1.0] * 10 + [50.0]
    # a read crossing a 256-byte boundary takes two transfers (L2984)
    units, factor = perf.hbm_transfers(RNGD, np.array([128]), 256, write=False)
    assert units.tolist() == [0, 256] and factor.tolist() == [1.0, 1.0]
    assert RNGD.dma.requests(4095) == 16  # L2469


def test_row_switches_cost_only_when_not_hidden() -> None:
    # rows k·(2^21 + 2^25): bits 21-24 and 25-28 cancel in the channel hash, so one channel, one bank, a new
    # row every time; back to back, every switch but the first is exposed (40 cycles, L2987)
    rows = np.arange(8, dtype=np.int64) * ((1 << 21) | (1 << 25))
    assert len(set(perf.hbm_channel(RNGD, rows).tolist())) == 1
    busy = perf.hbm_busy(RNGD, np.zeros(8, np.int64), rows, np.ones(8))
    assert busy.max() == pytest.approx(8 * 16 / 3 + 7 * (40 - 16 / 3))
    # the same switches with other banks' transfers in between are hidden (L2990-2993)
    other = np.full(7, (1 << 17) | (1 << 9), dtype=np.int64)  # another bank of the same channel, one row
    mixed = np.concatenate([np.concatenate([[r], other]) for r in rows])
    assert len(set(perf.hbm_channel(RNGD, mixed).tolist())) == 1
    busy = perf.hbm_busy(RNGD, np.zeros(mixed.size, np.int64), mixed, np.ones(mixed.size))
    assert busy.max() == pytest.approx(mixed.size * 16 / 3)


def test_fr_fcfs_serves_a_row_already_asked_for_in_its_window_l2981_l2990() -> None:
    # two rows of one bank (and one channel) asked for alternately, 32 times each: FCFS would switch on every
    # request; the 64-entry queue (L2981) holds them all and FR-FCFS serves each row's requests together
    # (L2990-2993), so only the first request of the second row switches, back to back (40 - 16/3 exposed)
    r0, r1 = 0, (1 << 21) | (1 << 25)  # bits 21-24 and 25-28 cancel in the channel hash
    stream = np.array([r0, r1] * 32, dtype=np.int64)
    assert len(set(perf.hbm_channel(RNGD, stream).tolist())) == 1
    assert len(set(perf.hbm_bank(RNGD, stream).tolist())) == 1
    chips, ones = np.zeros(64, np.int64), np.ones(64)
    assert perf.hbm_busy(RNGD, chips, stream, ones).max() == pytest.approx(64 * 16 / 3 + (40 - 16 / 3))
    # the same requests as two stretches that are not adjacent in time (a long DMA's sampled windows): no
    # window joins them, so the second stretch switches to its first row and then to the other one again
    segment = np.repeat(np.arange(2), 32)
    busy = perf.hbm_busy(RNGD, chips, stream, ones, segment)
    assert busy.max() == pytest.approx(64 * 16 / 3 + 3 * (40 - 16 / 3))


def _hbm_busy_reference(hw: object, chips: np.ndarray, units: np.ndarray, factor: np.ndarray,
                        segment: np.ndarray | None = None) -> np.ndarray:
    """``hbm_busy`` as it was before issue 15's first-launch work: every rank by ``searchsorted`` over a
    ``lexsort`` (the reference for the radix sorts and per-key counts that replaced them)."""
    h, clk = RNGD.hbm, RNGD.clocks
    t = h.access_unit_channel_cycles * clk.core_hz / clk.hbm_controller_hz
    switch = h.row_switch_ns[0] * clk.core_hz / 1e9
    queue = h.channel_command_queue_entries
    seg = np.zeros(units.size, dtype=np.int64) if segment is None else np.asarray(segment, dtype=np.int64)
    ch = chips * h.channels + perf.hbm_channel(RNGD, units)
    order = np.argsort(ch, kind="stable")
    ch_sorted = ch[order]
    rank = np.empty(units.size, dtype=np.int64)
    rank[order] = np.arange(units.size) - np.searchsorted(ch_sorted, ch_sorted, side="left")
    order = np.lexsort((seg, ch))
    cs = (ch * (int(seg.max()) + 1) + seg)[order]
    seg_rank = np.empty(units.size, dtype=np.int64)
    seg_rank[order] = np.arange(units.size) - np.searchsorted(cs, cs, side="left")
    window = seg * (-(-units.size // queue)) + seg_rank // queue
    bank = ch * 64 + perf.hbm_bank(RNGD, units)
    row = perf.hbm_row(RNGD, units)
    o2 = np.argsort(bank, kind="stable")
    k2, r2, g2, w2 = bank[o2], row[o2], rank[o2], window[o2]
    switched = np.zeros(units.size, dtype=bool)
    switched[1:] = (k2[1:] == k2[:-1]) & (r2[1:] != r2[:-1])
    group = (k2 * (int(window.max()) + 1) + w2) * (int(row.max()) + 1) + r2
    o3 = np.argsort(group, kind="stable")
    g3 = group[o3]
    repeat = np.zeros(units.size, dtype=bool)
    repeat[o3[1:][g3[1:] == g3[:-1]]] = True
    switched &= ~repeat
    gap = np.zeros(units.size)
    gap[1:] = g2[1:] - g2[:-1] - 1
    extra = np.where(switched, np.maximum(0.0, switch - t - gap * t), 0.0)
    n = int(ch.max()) + 1
    return np.asarray(np.bincount(ch, weights=factor * t, minlength=n)
                      + np.bincount(ch[o2], weights=extra, minlength=n), dtype=np.float64)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**32), st.sampled_from([1, 2, 4]), st.sampled_from([1, 3, 8]),
       st.sampled_from(["random", "stride", "rows"]))
def test_hbm_busy_is_the_reference_model(n: int, seed: int, chips: int, segments: int, kind: str) -> None:
    """The radix-sorted ranks give the busy cycles of the searchsorted/lexsort ones, transfer for transfer."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        units = rng.integers(0, 1 << 30, n) // 256 * 256
    elif kind == "stride":
        units = (np.arange(n) * int(rng.integers(1, 64)) * 256 + int(rng.integers(0, 1 << 20)) * 256) % (1 << 34)
    else:  # few banks and rows: switches, repeats within a window
        units = (rng.integers(0, 4, n) << 21 | rng.integers(0, 8, n) << 13 | rng.integers(0, 2, n) << 8)
    units = units.astype(np.int64)
    ch = rng.integers(0, chips, n).astype(np.int64)
    factor = np.where(rng.random(n) < 0.1, 50.0, 1.0)
    seg = np.sort(rng.integers(0, segments, n)).astype(np.int64)
    want = _hbm_busy_reference(RNGD, ch, units, factor, seg)
    assert np.array_equal(perf.hbm_busy(RNGD, ch, units, factor, seg), want)
    assert np.array_equal(perf.hbm_busy(RNGD, ch, units, factor), _hbm_busy_reference(RNGD, ch, units, factor))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40), unique=True, max_size=16), st.integers(0, 2**32))
def test_field_gathers_bits_in_order(bits: list[int], seed: int) -> None:
    """``_field`` by runs of consecutive bits is the bit-by-bit gather."""
    addr = np.random.default_rng(seed).integers(0, 1 << 41, 64, dtype=np.int64)
    want = np.zeros(addr.shape, dtype=np.int64)
    for k, b in enumerate(bits):
        want |= ((addr >> b) & 1) << k
    assert np.array_equal(perf._field(addr, tuple(bits)), want)
