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


T = 16 / 3  # a 256-byte unit: 4 controller cycles at 0.75 GHz, in 1 GHz core cycles (L2980)
SWITCH = 40  # a row switch, 40 ns (L2987)


def test_row_switches_serialise_on_their_bank_l2987() -> None:
    # rows k·(2^21 + 2^25): bits 21-24 and 25-28 cancel in the channel hash, so one channel, one bank, a new
    # row every time: the first row opens free (rows start closed), each later one switches (40 ns, L2987)
    rows = np.arange(8, dtype=np.int64) * ((1 << 21) | (1 << 25))
    assert len(set(perf.hbm_channel(RNGD, rows).tolist())) == 1
    load = perf.hbm_load(RNGD, np.zeros(8, np.int64), rows, np.ones(8))
    assert load.busy.max() == pytest.approx(8 * T + 7 * SWITCH) and load.activations == 7
    # other banks' transfers in the same window go on meanwhile (L2989-2993): the window lasts as long as the
    # busier of the bus (64 transfers) and the switching bank (7 switches and its 8 transfers)
    other = np.full(7, (1 << 17) | (1 << 9), dtype=np.int64)  # another bank of the same channel, one row
    mixed = np.concatenate([np.concatenate([[r], other]) for r in rows])
    assert len(set(perf.hbm_channel(RNGD, mixed).tolist())) == 1
    busy = perf.hbm_busy(RNGD, np.zeros(mixed.size, np.int64), mixed, np.ones(mixed.size))
    assert busy.max() == pytest.approx(max(mixed.size * T, 8 * T + 7 * SWITCH))
    # the same with 16 other transfers per switch: the bus is the longer, every switch hidden
    other = np.full(15, (1 << 17) | (1 << 9), dtype=np.int64)
    mixed = np.concatenate([np.concatenate([[r], other]) for r in rows])
    busy = perf.hbm_busy(RNGD, np.zeros(mixed.size, np.int64), mixed, np.ones(mixed.size))
    assert busy.max() == pytest.approx(mixed.size * T)


def test_fr_fcfs_serves_a_row_already_asked_for_in_its_window_l2981_l2990() -> None:
    # two rows of one bank (and one channel) asked for alternately, 32 times each: FCFS would switch on every
    # request; the 64-entry queue (L2981) holds them all and FR-FCFS serves each row's requests together
    # (L2990-2993), so the bank opens the first row and switches once
    r0, r1 = 0, (1 << 21) | (1 << 25)  # bits 21-24 and 25-28 cancel in the channel hash
    stream = np.array([r0, r1] * 32, dtype=np.int64)
    assert len(set(perf.hbm_channel(RNGD, stream).tolist())) == 1
    assert len(set(perf.hbm_bank(RNGD, stream).tolist())) == 1
    chips, ones = np.zeros(64, np.int64), np.ones(64)
    assert perf.hbm_busy(RNGD, chips, stream, ones).max() == pytest.approx(64 * T + SWITCH)
    # 128 requests: two windows; the second starts with the row the first left open (r1, its last to arrive)
    stream = np.array([r0, r1] * 64, dtype=np.int64)
    assert perf.hbm_busy(RNGD, np.zeros(128, np.int64), stream, np.ones(128)).max() == pytest.approx(
        128 * T + 2 * SWITCH)
    # the same requests as two stretches served apart (two engines, or a long DMA's sampled windows): no window
    # joins them and no row stays open from one to the next, so each opens its first row and switches once
    segment = np.repeat(np.arange(2), 64)
    busy = perf.hbm_busy(RNGD, np.zeros(128, np.int64), stream, np.ones(128), segment)
    assert busy.max() == pytest.approx(128 * T + 2 * SWITCH)


def test_read_modify_write_occupies_the_channel_50_times_l2985() -> None:
    load = perf.hbm_load(RNGD, np.zeros(2, np.int64), np.array([0, 0]), np.array([1.0, 50.0]))  # one unit, twice
    assert load.busy.max() == pytest.approx(51 * T) and load.rmw == 1


def _hbm_reference(chips: np.ndarray, units: np.ndarray, factor: np.ndarray,
                   segment: np.ndarray | None = None) -> np.ndarray:
    """``hbm_load``'s busy cycles, one window at a time in plain Python (the model of its docstring)."""
    q = RNGD.hbm.channel_command_queue_entries
    seg = np.zeros(units.size, dtype=np.int64) if segment is None else segment
    ch = (chips * RNGD.hbm.channels + perf.hbm_channel(RNGD, units)).tolist()
    bank, row = perf.hbm_bank(RNGD, units).tolist(), perf.hbm_row(RNGD, units).tolist()
    busy = np.zeros(max(ch) + 1)
    streams: dict[tuple[int, int], list[int]] = {}
    for i, (c, s) in enumerate(zip(ch, seg.tolist(), strict=True)):
        streams.setdefault((c, s), []).append(i)
    for (c, _), idx in streams.items():
        open_row: dict[int, int] = {}
        for w in range(0, len(idx), q):
            window = idx[w: w + q]
            bus = sum(factor[i] * T for i in window)
            longest = 0.0
            for b in dict.fromkeys(bank[i] for i in window):
                mine = [i for i in window if bank[i] == b]
                rows = list(dict.fromkeys(row[i] for i in mine))  # by first arrival
                prev = open_row.get(b)
                switches = sum(1 for r in rows if r != prev) - (1 if prev is None else 0)
                longest = max(longest, switches * SWITCH + sum(factor[i] * T for i in mine))
                open_row[b] = rows[-1]
            busy[c] += max(bus, longest)
    return busy


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**32), st.sampled_from([1, 2, 4]), st.sampled_from([1, 3, 8]),
       st.sampled_from(["random", "stride", "rows"]))
def test_hbm_load_is_the_reference_model(n: int, seed: int, chips: int, segments: int, kind: str) -> None:
    """The vectorised windows give the busy cycles of the window-by-window reference, channel for channel."""
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
    got = perf.hbm_busy(RNGD, ch, units, factor, seg)
    assert np.allclose(got, _hbm_reference(ch, units, factor, seg)[: got.size])
    got = perf.hbm_busy(RNGD, ch, units, factor)
    assert np.allclose(got, _hbm_reference(ch, units, factor)[: got.size])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40), unique=True, max_size=16), st.integers(0, 2**32))
def test_field_gathers_bits_in_order(bits: list[int], seed: int) -> None:
    """``_field`` by runs of consecutive bits is the bit-by-bit gather."""
    addr = np.random.default_rng(seed).integers(0, 1 << 41, 64, dtype=np.int64)
    want = np.zeros(addr.shape, dtype=np.int64)
    for k, b in enumerate(bits):
        want |= ((addr >> b) & 1) << k
    assert np.array_equal(perf._field(addr, tuple(bits)), want)
