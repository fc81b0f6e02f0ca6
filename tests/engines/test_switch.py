"""Tests of the Switch Engine (manual "Switch Engine", L3054–3542; digest 2 §2.1, §5.1 cases SW-1 … SW-14).

Each worked case is checked three ways: the plan (ring size, bitmaps, cycles: ``ring_size × input_time ×
cycles_per_packet``) at the manual's sizes; the routing on data, against the manual's index formula written out
independently with numpy; and the logical tensor (a switch moves packets, it never changes the tensor, L3085).
Negative cases check the error class, the level and the axis.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import dtypes as dt
from visa.context import Context
from visa.engines import switch as S
from visa.engines.common import StreamLayout
from visa.errors import HardwareLimitError, IncompatibleShapesError, InsufficientInputError, LayoutError, VisaError
from visa.hw import RNGD
from visa.mapping import AxisSet
from visa.stream.stages import FetchTensor, SwitchTensor
from visa.stream.switch import forwarding_report
from visa.testing import make_stream, stream_logical

SwitchConfig = S.SwitchConfig


def _fetch(ctx: Context, m: Any, dtype: type[dt.Scalar], slice_: str, time: str, packet: str, array: Any,
           axes: str, chip: str = "1", cluster: str = "1") -> Any:
    layout = StreamLayout(dtype, m[chip], m[cluster], m[slice_], m[time], m[packet])
    return make_stream(ctx.main, FetchTensor, layout, array, axes=axes)


def _physical(stream: Any) -> npt.NDArray[Any]:
    """``(chip·cluster, slice, time, packet)`` values of a stream."""
    v = stream.data.values
    return v.reshape(-1, *v.shape[2:])


# ------------------------------------------------------------------------------------------------ SW-3 Broadcast01


def test_sw3_broadcast01_plan_cycles_512_L3161_L3209() -> None:
    m = AxisSet(A=256, B=64, C=63, D=8, X=4).m
    p = S.plan(RNGD, dt.i8, m["A"], m["B"], m["C # 64"], m["A / 4, X"], m["B / 4, A / 2 % 2, B % 4, A % 2"],
               SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4))
    assert (p.ring_size, p.ring_groups, p.in_time, p.flits_per_packet) == (4, 64, 64, 2)   # L3210-3212
    assert S.cycles(p) == 4 * 64 * 64 // 32 == 512                                           # L3207-3209
    # the bitmap table of L3176-3185: rows 0-3 snoop {0, 1, 2, 3}, row 4 {4..7}, row 255 {252..255}
    assert [p.bitmap(o) for o in (0, 1, 2, 3)] == [(0, 1, 2, 3)] * 4
    assert p.bitmap(4) == (4, 5, 6, 7) and p.bitmap(255) == (252, 253, 254, 255)


def test_sw3_broadcast01_routes_the_manual_formula_L3146_L3204() -> None:
    """out[s2, x][t1, a1, t0, a0] = in[4·s2 + 2·a1 + a0][4·t1 + t0], for every broadcast x (digest SW-3)."""
    ax = AxisSet(A=256, B=8, C=63, D=2, X=4)
    m = ax.m
    rng = np.random.default_rng(3)
    arr = rng.integers(-128, 128, size=(2, 256, 8, 63), dtype=np.int64).astype(np.int8)
    ctx = Context.acquire()
    f = _fetch(ctx, m, dt.i8, "A", "B", "C # 64", arr, "D A B C", chip="D / 2", cluster="D % 2")
    out = f.switch(m["A / 4, X"], m["B / 4, A / 2 % 2, B % 4, A % 2"],
                   SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4))
    assert isinstance(out, SwitchTensor)
    got = _physical(out).reshape(2, 64, 4, 2, 2, 4, 2, 64)           # (k, s2, x, t1, a1, t0, a0, p)
    src = _physical(f).reshape(2, 64, 2, 2, 2, 4, 64)                # (k, s2, a1, a0, t1, t0, p)
    want = src.transpose(0, 1, 4, 2, 5, 3, 6)[:, :, None]            # (k, s2, 1, t1, a1, t0, a0, p)
    np.testing.assert_array_equal(got, np.broadcast_to(want, got.shape))
    # the logical tensor is unchanged (X is a broadcast axis: every X holds the same values)
    held = stream_logical(out, axes="D A B C X")
    assert np.array_equal(held, np.broadcast_to(arr[..., None], held.shape))
    assert out.reports[-1].engine == "switch" and out.reports[-1].cycles == 4 * 8 * 2


def test_sw3_broadcast01_wrong_time_order_is_refused_L3498() -> None:
    m = AxisSet(A=256, B=64, C=63, X=4).m
    with pytest.raises(IncompatibleShapesError) as err:
        S.plan(RNGD, dt.i8, m["A"], m["B"], m["C # 64"], m["A / 4, X"], m["B / 4, A % 2, B % 4, A / 2 % 2"],
               SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4))
    assert err.value.axis == "A" and err.value.level == "Time"
    assert "B / 4, A / 2 % 2, B % 4, A % 2" in str(err.value)  # the fix shows the topology's layout


def test_sw4_broadcast01_time_formula_L3213_L3217() -> None:
    """The second example's Time [B/4, A/8%8, B/2%2, A%8] (slice1 = slice0 = 8, time0 = 2), on a full cluster
    (the text's Slice m[A] with A = 64 is not 256 slices and overlaps Time with Packet; digest Q4)."""
    m = AxisSet(A=256, B=64, P=32, X=64).m
    p = S.plan(RNGD, dt.i8, m["A"], m["B / 2"], m["P"], m["A / 64, X"], m["B / 4, A / 8 % 8, B / 2 % 2, A % 8"],
               SwitchConfig.Broadcast01(slice1=8, slice0=8, time0=2))
    assert p.ring_size == 64 and S.cycles(p) == 64 * 32 * 1


# ------------------------------------------------------------------------------------------------ SW-5 .. SW-7


def test_sw5_broadcast1_L3236_L3254() -> None:
    """out[s2, x, a0][t, a1] = in[32·s2 + 8·a1 + a0][t]."""
    ax = AxisSet(A=256, B=4, C=63, X=4)
    m = ax.m
    arr = np.random.default_rng(5).integers(-128, 128, size=(256, 4, 63)).astype(np.int8)
    f = _fetch(Context.acquire(), m, dt.i8, "A", "B", "C # 64", arr, "A B C")
    out = f.switch(m["A / 32, X, A % 8"], m["B, A / 8 % 4"], SwitchConfig.Broadcast1(slice1=4, slice0=8))
    got = _physical(out).reshape(8, 4, 8, 4, 4, 64)        # (s2, x, a0, t, a1, p)
    src = _physical(f).reshape(8, 4, 8, 4, 64)             # (s2, a1, a0, t, p)
    want = src.transpose(0, 2, 3, 1, 4)[:, None]           # (s2, 1, a0, t, a1, p)
    assert np.array_equal(got, np.broadcast_to(want, got.shape))
    assert out.reports[-1].details[1] == ("ring_size", 32)


def test_sw6_transpose_L3264_L3284() -> None:
    """out[s2, a0, a1] = in[64·s2 + 2·a1 + a0]: slice1 and slice0 swap, Time unchanged."""
    m = AxisSet(A=256, B=3, C=63).m
    arr = np.random.default_rng(6).integers(-128, 128, size=(256, 3, 63)).astype(np.int8)
    f = _fetch(Context.acquire(), m, dt.i8, "A", "B", "C # 64", arr, "A B C")
    out = f.switch(m["A / 64, A % 2, A / 2 % 32"], m["B"], SwitchConfig.Transpose(slice1=32, slice0=2))
    got = _physical(out).reshape(4, 2, 32, 3, 64)          # (s2, a0, a1, t, p)
    src = _physical(f).reshape(4, 32, 2, 3, 64)            # (s2, a1, a0, t, p)
    np.testing.assert_array_equal(got, src.transpose(0, 2, 1, 3, 4))
    np.testing.assert_array_equal(stream_logical(out, axes="A B C"), arr)


def test_sw7_inter_transpose_L3304_L3331() -> None:
    """out[s2, b1, a0][t2, b0, a1] = in[32·s2 + 16·a1 + a0][4·t2 + 2·b1 + b0]."""
    m = AxisSet(A=8, B=32, C=256).m
    arr = np.random.default_rng(7).integers(-128, 128, size=(256, 8, 32)).astype(np.int8)
    f = _fetch(Context.acquire(), m, dt.i8, "C", "A", "B # 32", arr, "C A B")
    out = f.switch(m["C / 32, A / 2 % 2, C % 16"], m["A / 4, A % 2, C / 16 % 2"],
                   SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2))
    got = _physical(out).reshape(8, 2, 16, 2, 2, 2, 32)    # (s2, b1, a0, t2, b0, a1, p)
    src = _physical(f).reshape(8, 2, 16, 2, 2, 2, 32)      # (s2, a1, a0, t2, b1, b0, p)
    np.testing.assert_array_equal(got, src.transpose(0, 4, 2, 3, 5, 1, 6))
    np.testing.assert_array_equal(stream_logical(out, axes="C A B"), arr)
    assert out.reports[-1].cycles == 32 * 8 * 1


# ------------------------------------------------------------------------------------------------ custom topologies


CUSTOM = AxisSet(A=16, B=16, C=8, D=8, E=8, X=4, Y=2, Z=2)


def test_sw8_custom_permutation_ring_256_cycles_4096_L3342_L3380() -> None:
    m = CUSTOM.m
    p = S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["B % 4, B / 4, A % 4, A / 4"], m["C"],
               SwitchConfig.CustomBroadcast(ring_size=256))
    assert S.cycles(p) == 256 * 8 * 64 // 32 == 4096
    # bitmap index → source: 0→0, 1→64, 2→128, 3→192, 4→16, 5→80 (the table's 1 and 65 are wrong, digest Q5)
    assert [p.bitmap(o) for o in range(6)] == [(0,), (64,), (128,), (192,), (16,), (80,)]
    assert p.bitmap(255) == (255,)
    assert p.bitmap(3) == (192,)  # "input slice 192 reaches output slice 3" (L3365 says 196; digest Q5)
    with pytest.raises(HardwareLimitError) as err:  # the permutation needs the whole ring
        S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["B % 4, B / 4, A % 4, A / 4"], m["C"],
               SwitchConfig.CustomBroadcast(ring_size=128))
    assert err.value.level == "Slice" and "ring_size 256" in str(err.value)


def test_sw8_custom_permutation_data() -> None:
    m = CUSTOM.m
    arr = np.random.default_rng(8).integers(-128, 128, size=(16, 16, 2, 8)).astype(np.int8)
    mm = AxisSet(A=16, B=16, C=2, D=8).m
    f = _fetch(Context.acquire(), mm, dt.i8, "A, B", "C", "D", arr, "A B C D")
    out = f.switch(mm["B % 4, B / 4, A % 4, A / 4"], mm["C"], SwitchConfig.CustomBroadcast(ring_size=256))
    got = _physical(out).reshape(4, 4, 4, 4, 2, 8)         # (b0, b1, a0, a1, c, d)
    src = _physical(f).reshape(4, 4, 4, 4, 2, 8)           # (a1, a0, b1, b0, c, d)
    np.testing.assert_array_equal(got, src.transpose(3, 2, 1, 0, 4, 5))
    assert m is not None


def test_sw9_custom_multi_axis_broadcast_ring_32_cycles_512_L3381_L3415() -> None:
    m = CUSTOM.m
    p = S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["A / 2, Y, B / 2, Z"], m["C, A % 2, B % 2"],
               SwitchConfig.CustomBroadcast(ring_size=32))
    assert S.cycles(p) == 32 * 8 * 2 == 512
    assert p.bitmap(0) == p.bitmap(1) == (0, 1, 16, 17)
    assert p.bitmap(2) == p.bitmap(3) == (2, 3, 18, 19)
    assert p.bitmap(255) == (238, 239, 254, 255)


def test_sw9_custom_multi_axis_broadcast_data() -> None:
    mm = AxisSet(A=16, B=16, C=2, D=8, Y=2, Z=2).m
    arr = np.random.default_rng(9).integers(-128, 128, size=(16, 16, 2, 8)).astype(np.int8)
    f = _fetch(Context.acquire(), mm, dt.i8, "A, B", "C", "D", arr, "A B C D")
    out = f.switch(mm["A / 2, Y, B / 2, Z"], mm["C, A % 2, B % 2"], SwitchConfig.CustomBroadcast(ring_size=32))
    got = _physical(out).reshape(8, 2, 8, 2, 2, 2, 2, 8)   # (a1, y, b1, z, c, a0, b0, d)
    src = _physical(f).reshape(8, 2, 8, 2, 2, 8)           # (a1, a0, b1, b0, c, d)
    want = src.transpose(0, 2, 4, 1, 3, 5)[:, None, :, None]   # (a1, 1, b1, 1, c, a0, b0, d)
    np.testing.assert_array_equal(got, np.broadcast_to(want, got.shape))


def test_sw10_custom_partial_extraction_ring_4_cycles_128_L3420_L3458() -> None:
    m = CUSTOM.m
    p = S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["A, B / 4, X"], m["C, B % 4 = 3"],
               SwitchConfig.CustomBroadcast(ring_size=4))
    # ring_size × input_time × cycles_per_packet with ring 4 (not 3): L3447–3449 writes "4 × 8 × 2 = 128", but
    # the product of its own terms is 64 (i8 [D, E] = 64 bytes = 2 flits); the formula wins (docs/manual-notes.md)
    assert (p.ring_size, p.in_time, p.flits_per_packet) == (4, 8, 2)
    assert S.cycles(p) == 4 * 8 * 2 == 64
    assert [p.bitmap(o) for o in (0, 1, 2, 3, 4)] == [(0, 1, 2)] * 4 + [(4, 5, 6)]
    assert p.bitmap(255) == (252, 253, 254)
    assert p.out_time == 8 * 3


def test_sw11_order_violation_is_refused_L3459_L3470() -> None:
    m = CUSTOM.m
    cfg = SwitchConfig.CustomBroadcast(ring_size=4)
    for time2 in ("C, B % 2, B / 2 % 2", "C, B % 2, B / 2"):     # the intended B / 2 % 2, and the text (digest Q6)
        with pytest.raises(LayoutError) as err:
            S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["A, B / 4, X"], m[time2], cfg)
        assert err.value.axis == "B" and err.value.level == "Time"
        assert "order" in str(err.value)
    ok = S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["A, B / 4, X"], m["C, B / 2 % 2, B % 2"], cfg)
    assert ok.bitmap(0) == (0, 1, 2, 3)


def test_sw12_innermost_violation_is_refused_L3471_L3482() -> None:
    m = CUSTOM.m
    with pytest.raises(LayoutError) as err:
        S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["A / 2, Y, B / 2, Z"], m["A % 2, C, B % 2"],
               SwitchConfig.CustomBroadcast(ring_size=32))
    assert err.value.axis == "A" and err.value.level == "Time" and "innermost" in str(err.value)


def test_sw13_cost_formula_L3526_L3529() -> None:
    """ring_size 4, input_time 64, 64-byte packets: 512 cycles (the Performance section's example)."""
    m = AxisSet(A=256, B=64, C=64, X=4).m
    p = S.plan(RNGD, dt.i8, m["A"], m["B"], m["C"], m["A / 4, X"], m["B, A % 4"],
               SwitchConfig.Broadcast01(slice1=1, slice0=4, time0=1))
    assert (p.ring_size, p.in_time, p.flits_per_packet, S.cycles(p)) == (4, 64, 2, 512)


def test_sw14_gemv_broadcast_L383_L401() -> None:
    """Broadcast01 {256, 1, 1} of a vector held by slice 0: every slice gets it at time step 0; the other
    time steps carry the padding slices' packets (poison), which Time2 = 1 # 256 marks as padding."""
    m = AxisSet(I=256, J=32).m
    vec = np.random.default_rng(14).integers(-128, 128, size=32).astype(np.int8)
    f = _fetch(Context.acquire(), m, dt.i8, "1 # 256", "1", "J", vec, "J")
    out = f.switch(m["I"], m["1 # 256"], SwitchConfig.Broadcast01(slice1=256, slice0=1, time0=1))
    vals, known = _physical(out), out.data.known.reshape(-1, 256, 256, 32)
    np.testing.assert_array_equal(vals[0, :, 0, :], np.broadcast_to(vec, (256, 32)))
    assert known[0, :, 0].all() and not known[0, :, 1:].any()
    held = stream_logical(out, axes="I J")
    np.testing.assert_array_equal(held, np.broadcast_to(vec, (256, 32)))
    assert out.reports[-1].cycles == 256 * 1 * 1


def test_sw1_router_example_as_broadcast01_L3104_L3119() -> None:
    """Slice [A/2, 2], Time [B/2, B%2, A%2] is Broadcast01 with slice0 = 2, slice1 = 1 (L3118–3119); on a full
    cluster its time order is B-major, [0, 2, 1, 3] for value 2A + B (the cycle table's [0, 1, 2, 3] is
    A-major; digest Q1: the mapping is what is tested)."""
    m = AxisSet(A=256, B=2, C=64, X=2).m
    arr = (2 * np.arange(256)[:, None] + np.arange(2)[None, :])[..., None] % 128 + np.zeros((1, 1, 64), int)
    f = _fetch(Context.acquire(), m, dt.i8, "A", "B", "C", arr.astype(np.int8), "A B C")
    out = f.switch(m["A / 2, X"], m["B / 2, B % 2, A % 2"], SwitchConfig.Broadcast01(slice1=1, slice0=2, time0=2))
    assert _physical(out)[0, 0, :, 0].tolist() == [0, 2, 1, 3]
    assert _physical(out)[0, 1, :, 0].tolist() == [0, 2, 1, 3]


# ------------------------------------------------------------------------------------------------ rules


def test_partial_cluster_is_refused_L3501_L3502() -> None:
    m = AxisSet(A=128, B=4, C=32, X=2).m
    with pytest.raises(HardwareLimitError) as err:
        S.plan(RNGD, dt.i8, m["A"], m["B"], m["C"], m["A / 2, X"], m["B, A % 2"],
               SwitchConfig.Broadcast01(slice1=1, slice0=2, time0=1))
    assert err.value.level == "Slice" and err.value.axis == "A"


def test_parameters_must_divide() -> None:
    m = AxisSet(A=256, B=6, C=32, X=4).m
    with pytest.raises(IncompatibleShapesError) as err:
        S.plan(RNGD, dt.i8, m["A"], m["B"], m["C"], m["A / 4, X"], m["B, A % 4"],
               SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4))
    assert err.value.level == "Time" and err.value.axis == "B"
    with pytest.raises(VisaError):
        S.plan(RNGD, dt.i8, m["A"], m["B"], m["C"], m["A"], m["B"], SwitchConfig.Transpose(slice1=0, slice0=2))


def test_ring_size_must_be_a_power_of_two_L3364() -> None:
    m = CUSTOM.m
    for bad in (3, 0, 512):
        with pytest.raises(HardwareLimitError):
            S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D, E"], m["A, B"], m["C"], SwitchConfig.CustomBroadcast(bad))


def test_custom_insufficient_input() -> None:
    m = AxisSet(A=16, B=16, C=8, D=8, X=4, F=4).m
    with pytest.raises(InsufficientInputError) as err:
        S.plan(RNGD, dt.i8, m["A, B"], m["C"], m["D"], m["A, B / 4, X"], m["C, F"],
               SwitchConfig.CustomBroadcast(ring_size=4))
    assert err.value.axis == "F" and err.value.level == "Time"


def test_forwarding_cost_ring_1_L3120_L3138() -> None:
    """Forwarding (collect() on the FetchTensor): ring size 1 (L3138); f32 [C = 32] is 128 bytes: 4 flits."""
    m = AxisSet(A=256, B=64, C=32).m
    p = S.forwarding(RNGD, dt.f32, m["A"], m["B"], m["C"])
    assert (p.ring_size, S.cycles(p)) == (1, 64 * 4)
    report = forwarding_report(RNGD, StreamLayout(dt.f32, m["1"], m["1"], m["A"], m["B"], m["C"]))
    assert report.engine == "switch" and report.cycles == 256


def test_switch_config_spelling() -> None:
    cfg = SwitchConfig.Broadcast01(slice1=256, slice0=1, time0=1)
    assert cfg == S.Broadcast01(256, 1, 1) and cfg.describe() == "Broadcast01 { slice1: 256, slice0: 1, time0: 1 }"
    assert hash(SwitchConfig.CustomBroadcast(ring_size=4)) == hash(S.CustomBroadcast(4))


# ------------------------------------------------------------------------------------------------ property


@settings(max_examples=40, deadline=None)
@given(s1=st.sampled_from([1, 2, 4, 8]), s0=st.sampled_from([1, 2, 4]), t0=st.sampled_from([1, 2]),
       t1=st.sampled_from([1, 2]), seed=st.integers(0, 2**16))
def test_broadcast01_property(s1: int, s0: int, t0: int, t1: int, seed: int) -> None:
    """Any Broadcast01 routes out[s2, x][t1, a1, t0, a0] = in[s2, a1, a0][t1, t0] and keeps the tensor."""
    ring = s1 * s0
    ax = AxisSet(A=256, B=2 * t1 * t0, P=8, X=ring)
    m = ax.m
    time2 = f"B / {t0}, A / {s0} % {s1}, B % {t0}, A % {s0}"
    t1 *= 2
    arr = np.random.default_rng(seed).integers(-128, 128, size=(256, t1 * t0, 8)).astype(np.int8)
    f = _fetch(Context.acquire(), m, dt.i8, "A", "B", "P", arr, "A B P")
    out = f.switch(m[f"A / {ring}, X"], m[time2], SwitchConfig.Broadcast01(slice1=s1, slice0=s0, time0=t0))
    got = _physical(out).reshape(256 // ring, ring, t1, s1, t0, s0, 8)
    src = _physical(f).reshape(256 // ring, s1, s0, t1, t0, 8).transpose(0, 3, 1, 4, 2, 5)[:, None]
    np.testing.assert_array_equal(got, np.broadcast_to(src, got.shape))
    assert out.reports[-1].cycles == ring * t1 * t0
