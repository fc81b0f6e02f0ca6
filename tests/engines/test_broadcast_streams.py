"""Broadcast streams as views (issue 15): a fetch whose sequencer repeats whole packets along Time (a stride-0
loop, the GEMM example's ``J / 8 % 4``, manual L466–525) reads them once and passes the repetition on as
structure (:class:`visa.engines.broadcast.BroadcastData`) through collect and align to the Reducer.

Each test compares the structural path with the materialised one (``fetch._repeat`` disabled: every repeated
packet read and stored, as before): the same values, the same poison, the same cycles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests import two_slice_gemm
from tests.fastpath_switch import needs
from visa import RNGD, AccumulationKind, AxisSet, Context, bf16, i8
from visa import dtypes as dt
from visa.engines import collect as collect_engine
from visa.engines import fetch as F
from visa.engines import fetch_fast
from visa.engines.broadcast import BroadcastData, expand, normal_digits
from visa.engines.common import StreamData
from visa.testing import place_dm

RNG = np.random.default_rng(1515)


def _materialised(reference: Callable[..., None]) -> None:
    """The fetch without the structural path: every repeated packet read (the behaviour before issue 15)."""
    reference("fetch.repeat")


def _gemm(dtype: Any, x: np.ndarray, y: np.ndarray, poison: bool) -> tuple[Any, Any]:
    """A 64 × 32 GEMM on two slices whose fetch broadcasts A over ``J / 8`` (as examples/gemm.py); ``poison``
    unwrites the first 16 bytes of A in slice 128 (I / 32 = 1: row I = 32, the first K elements) before the
    fetch.  Returns the FetchTensor and a callable finishing the pipeline to the AccumulationTensor."""
    ax = AxisSet(I=64, J=32, K=128)
    m = ax.m
    ctx = Context.acquire()
    a_dm, trf, n, flit = two_slice_gemm.operands(ctx, ax, x, y, dtype)
    if poison:  # (after the TRF load, before the fetch: only A's bytes are poisoned)
        image = ctx.memory.chip(0).dm
        where = np.zeros((*image.lead_shape, 16), dtype=bool)
        where[0, 128] = True
        image.unwrite(np.arange(16, dtype=np.int64), where)
    fetched = ctx.main.begin(a_dm.view()).fetch(dtype, m["I % 32, J / 8"], m["K"])

    def finish(s: Any) -> Any:
        return (s.collect(m[f"I % 32, J / 8, K / {flit}"], m[f"K % {flit}"])
                .align(m[f"I % 32, J / 8, K / {n}"], m[f"K % {n}"], trf)
                .contract(m["1"])
                .accumulate(m["I % 32, J / 8"], m["J % 8"], AccumulationKind.Interleaved))

    return fetched, finish


def _inputs(dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    return dt.random_values(dtype, (64, 128), RNG), dt.random_values(dtype, (128, 32), RNG)


@pytest.mark.parametrize("poison", [False, True])
def test_fetch_broadcast_is_structure_with_the_same_values_and_cycles(poison: bool,
                                                                      reference: Callable[..., None]) -> None:
    needs("fetch.repeat")
    x, y = _inputs(bf16)
    got, _ = _gemm(bf16, x, y, poison)
    assert isinstance(got.data, BroadcastData)
    assert got.data.digits == ((32, False), (4, True))
    assert got.data.compact_values.shape[3] == 32  # the activation's size: the repeats are not stored
    _materialised(reference)
    want, _ = _gemm(bf16, x, y, poison)
    assert not isinstance(want.data, BroadcastData)
    assert np.array_equal(got.data.values.view(np.uint16), want.data.values.view(np.uint16))
    assert np.array_equal(got.data.known, want.data.known)
    assert poison == (not bool(want.data.known[0, 0, 128].all())) and bool(want.data.known[0, 0, 0].all())
    assert [(r.engine, r.cycles, r.config) for r in got.reports] == [(r.engine, r.cycles, r.config)
                                                                      for r in want.reports]


@pytest.mark.parametrize("dtype", [i8, bf16])
@pytest.mark.parametrize("poison", [False, True])
def test_contraction_over_a_broadcast_activation_equals_the_materialised_one(
        dtype: Any, poison: bool, reference: Callable[..., None]) -> None:
    x, y = _inputs(dtype)
    fetched, finish = _gemm(dtype, x, y, poison)
    got = finish(fetched)
    _materialised(reference)
    fetched2, finish2 = _gemm(dtype, x, y, poison)
    want = finish2(fetched2)
    # the same products in the same matrix shapes (the materialised path finds the repeats in the data): bit for bit
    assert np.array_equal(got.data.values.view(np.uint32), want.data.values.view(np.uint32))
    assert np.array_equal(got.data.known, want.data.known)
    assert [(r.engine, r.cycles) for r in got.reports] == [(r.engine, r.cycles) for r in want.reports]
    k = got.data.known[0, 0, 128]  # row block I / 32 = 1: (OutTime = I % 32, J / 8; OutPacket = J % 8 # 16)
    if poison:  # row I = 32 read unwritten bytes: every output of that row is poison, the others known
        assert not k[:4, :8].any() and k[4:, :8].all()
    else:
        assert k[:, :8].all()
    assert got.data.known[0, 0, 0, :, :8].all()


def test_a_padded_repeat_is_not_structure() -> None:
    # B # 4 over an Element without B: a stride-0 loop whose last two steps are padding (poison), not repeats
    ax = AxisSet(A=64, B=2)
    m = ax.m
    cfg = F.plan(RNGD, i8, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["B # 4, A / 32"], m["A % 32"])
    assert fetch_fast._repeat(cfg) is None
    ok = F.plan(RNGD, i8, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["A / 32, B"], m["A % 32"])
    rep = fetch_fast._repeat(ok)
    assert rep is not None and rep.digits == ((2, False), (2, True))
    ctx = Context(RNGD)
    ctx.num_chips = 1
    x = dt.random_values(i8, (64,), RNG)
    t = place_dm(ctx, x, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A"], 0)
    s = ctx.main.begin(t.view()).fetch(i8, m["B # 4, A / 32"], m["A % 32"])
    v, k = s.data.values[0, 0, 0], s.data.known[0, 0, 0]
    assert np.array_equal(v[:4], np.tile(x.reshape(2, 32), (2, 1))) and k[:4].all() and not k[4:].any()


def test_collect_pads_the_compact_stream() -> None:
    # a 24-element i8 packet padded to one 32-byte flit, and a 48-element one split into two: the same as the
    # collect of the materialised stream
    rng = np.random.default_rng(2)
    for p in (24, 48):
        ax = AxisSet(T=3, R=4, P=p)
        m = ax.m
        digits = ((3, False), (4, True))
        vals = rng.integers(-128, 128, size=(1, 2, 2, 3, p)).astype(np.int8)
        known = rng.random(vals.shape) < 0.9
        data = BroadcastData(vals, known, digits)
        plain = StreamData(data.values.copy(), data.known.copy())
        time2, packet2 = collect_engine.normalise(RNGD, i8, m["T, R"], m["P"])
        cfg = collect_engine.plan(RNGD, i8, m["T, R"], m["P"], time2, packet2)
        assert cfg.pad_elements and cfg.flits_per_packet == p // 24
        got, want = collect_engine.execute(cfg, data), collect_engine.execute(cfg, plain)
        assert isinstance(got, BroadcastData) and got.compact_values.shape[3] == 3 * cfg.flits_per_packet
        assert np.array_equal(got.values, want.values) and np.array_equal(got.known, want.known)


def test_digits_and_expand() -> None:
    assert normal_digits(((2, False), (1, True), (3, False), (4, True), (5, True))) == ((6, False), (20, True))
    x = np.arange(2 * 3).reshape(1, 1, 1, 6, 1)
    full = expand(x, ((2, False), (2, True), (3, False))).reshape(1, 1, 1, 12, 1)
    assert full[0, 0, 0, :, 0].tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]
    data = BroadcastData(x, np.ones_like(x, dtype=bool), ((2, False), (2, True), (3, False)))
    assert np.array_equal(data.values, full) and data.time_size == 12 and data.repeats


def test_switch_reads_the_compact_stream() -> None:
    # the Broadcast1 routing of the manual's SW-5 (L3236–3254) over a stream whose Time B repeats its second half
    from visa.engines import switch as S

    ax = AxisSet(A=256, B=4, C=64, X=4)
    m = ax.m
    plan = S.plan(RNGD, i8, m["A"], m["B"], m["C"], m["A / 32, X, A % 8"], m["B, A / 8 % 4"],
                  S.SwitchConfig.Broadcast1(slice1=4, slice0=8))
    rng = np.random.default_rng(3)
    vals = rng.integers(-128, 128, size=(1, 2, 256, 2, 64)).astype(np.int8)
    data = BroadcastData(vals, rng.random(vals.shape) < 0.9, ((2, False), (2, True)))
    got = S.execute(plan, data)
    want = S.execute(plan, StreamData(data.values.copy(), data.known.copy()))
    assert np.array_equal(got.values, want.values) and np.array_equal(got.known, want.known)


def test_dense_time_digits_materialise_the_repeats(reference: Callable[..., None]) -> None:
    # without a common refinement of the time structures the Reducer gathers per step ("dense"): the compact
    # activation is then expanded first, and the result is the structural path's

    x, y = _inputs(i8)
    fetched, finish = _gemm(i8, x, y, True)
    want = finish(fetched)
    reference("contraction.time-digits")
    fetched2, finish2 = _gemm(i8, x, y, True)
    got = finish2(fetched2)
    assert np.array_equal(got.data.values, want.data.values) and np.array_equal(got.data.known, want.data.known)
