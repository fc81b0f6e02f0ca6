"""Tests of the Contraction Engine: Aligner (Stream Adapter, TRF Sequencer) and Reducer (manual L3670–4548;
digest 2 §2.4–2.6, §5.3–5.4 cases AL-1 … AL-4, TS-1, TS-2, RD-1 … RD-5 and their negatives).

Inputs are placed directly (``make_stream`` for the collected activation, ``place_trf`` for the weights), so each
test exercises the three calls ``align → contract → accumulate`` alone.  Results are compared with
``numpy.einsum`` of the logical tensors: exactly for i8, and for bf16 within ``n · 2^-23 · Σ|x·w|`` (the f32
accumulation in another order than the Reducer's tree; ``n`` terms per output).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visa import dtypes as dt
from visa.context import Context
from visa.engines import contraction as CE
from visa.engines.common import StreamLayout
from visa.errors import (
    AddressError,
    DtypeError,
    HardwareLimitError,
    InsufficientInputError,
    LayoutError,
    TypestateError,
)
from visa.hw import RNGD
from visa.mapping import AxisSet, Mapping, pair_of
from visa.stream.stages import AccumulationKind, AccumulationTensor, AlignedTensor, CollectTensor, ContractionTensor
from visa.tensors.handles import TrfAddress
from visa.testing import make_stream, place_trf, read_held, stream_logical

Interleaved, Sequential = AccumulationKind.Interleaved, AccumulationKind.Sequential
F32_EPS = 2.0 ** -23


class Case:
    """A collected activation and a TRF tensor on one slice (of 256, one cluster of 2), holding random data."""

    def __init__(self, sizes: dict[str, int], dtype: type[dt.Scalar], time: str, packet: str, xaxes: str,
                 row: str, element: str, waxes: str, mode: TrfAddress = TrfAddress.Full, seed: int = 0,
                 tu: str = "main") -> None:
        self.ax = AxisSet(**sizes)
        self.m = self.ax.m
        self.sizes = sizes
        self.dtype = dtype
        rng = np.random.default_rng(seed)
        self.ctx = Context.acquire()
        self.x = dt.random_values(dtype, tuple(sizes[a] for a in xaxes.split()), rng)
        self.w = dt.random_values(dtype, tuple(sizes[a] for a in waxes.split()), rng)
        self.xaxes, self.waxes = xaxes, waxes
        m = self.m
        layout = StreamLayout(dtype, m["1"], m["1 # 2"], m["1 # 256"], m[time], m[packet])
        self.stream = make_stream(getattr(self.ctx, tu), CollectTensor, layout, self.x, axes=xaxes)
        self.trf = place_trf(self.ctx, self.w, dtype, m["1"], m["1 # 2"], m["1 # 256"], m[row], m[element], mode,
                             axes=waxes)

    def reference(self, spec: str) -> npt.NDArray[np.float64]:
        return np.einsum(spec, self.x.astype(np.float64), self.w.astype(np.float64))

    def bound(self, spec: str, terms: int) -> float:
        if self.dtype.kind == "int":
            return 0.0
        mag = np.einsum(spec, np.abs(self.x.astype(np.float64)), np.abs(self.w.astype(np.float64)))
        return float(terms * F32_EPS * mag.max()) + 1e-30


def _close(got: npt.NDArray[Any], want: npt.NDArray[np.float64], bound: float) -> None:
    if bound == 0.0:
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))
    else:
        assert float(np.abs(got.astype(np.float64) - want).max()) <= bound


def _details(stream: Any) -> dict[str, object]:
    return dict(stream.reports[-1].details)


# ------------------------------------------------------------------------------------------------ Aligner


def test_al1_batched_matmul_L3816_L3873() -> None:
    c = Case(dict(M=32, N=8, K=16, L=2, O=2), dt.bf16, "M, O, L", "K", "M O L K", "N", "O, M, K", "N O M K",
             TrfAddress.FirstHalf)
    m = c.m
    a = c.stream.align(m["M, O"], m["L, K"], c.trf)
    assert isinstance(a, AlignedTensor)
    plan: CE.AlignPlan = a.carried.contraction.align
    assert (plan.collect_flits, plan.reg_read_bytes, plan.rows) == (2, 32, 8)      # L3852-3857
    assert plan.byte_entries == ((32, 32.0), (2, 1024.0))                             # E1 {32, 32}, E0 {2, 1024}
    assert plan.entries_text() == "E1 {size: 32, stride: 32 B}, E0 {size: 2, stride: 1024 B}"
    r = a.contract(m["L"]).accumulate(m["M, O, L"], m["N"], Interleaved)
    assert r.carried.contraction.contract.depth == 4
    got = stream_logical(r, axes="M O L N")
    _close(got, c.reference("molk,nomk->moln"), c.bound("molk,nomk->moln", 16))
    assert _details(r)["kind"] == "Interleaved"


def test_al2_collect_flits_2_rows_broadcast_L3961_L3985() -> None:
    c = Case(dict(M=32, N=8, K=16, L=2, O=2), dt.bf16, "M, O, L", "K", "M O L K", "N", "O, K", "N O K")
    m = c.m
    a = c.stream.align(m["M, O"], m["L, K"], c.trf)
    assert a.layout.time == m["M, O"] and a.layout.packet == m["L, K"]
    plan = a.carried.contraction.align
    assert plan.collect_flits == 2 and plan.reg_read_bytes == 32 and plan.rows == 8
    assert plan.byte_entries == ((32, 0.0), (2, 32.0))     # M broadcast (stride 0), O from the TRF
    # the activation in the computation mapping: the same for every Row (the data is the stream's)
    np.testing.assert_array_equal(stream_logical(a, axes="M O L K"), c.x)


def test_al3_collect_flits_1_zero_padding_L3986_L4008() -> None:
    c = Case(dict(M=32, N=8, K=16), dt.bf16, "M", "K", "M K", "N", "K", "N K")
    m = c.m
    a = c.stream.align(m["M"], m["K # 32"], c.trf)
    plan = a.carried.contraction.align
    assert plan.collect_flits == 1 and plan.reg_read_bytes == 32          # the 16 K common to both: 32 bytes
    act = a.data.values.reshape(2, 256, 32, 32)[0, 0]
    assert a.data.known.reshape(2, 256, 32, 32)[0, 0, :, 16:].all()
    assert (act[:, 16:] == 0).all(), "the upper 32 bytes are zeros (L3926)"
    r = a.contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    _close(stream_logical(r, axes="M N"), c.reference("mk,nk->mn"), c.bound("mk,nk->mn", 16))


def test_al4_time_broadcast_L4010_L4033() -> None:
    c = Case(dict(M=32, N=8, K=16, T=5), dt.bf16, "M", "K", "M K", "N", "T, K", "N T K")
    m = c.m
    a = c.stream.align(m["M, T"], m["K # 32"], c.trf)
    plan = a.carried.contraction.align
    assert (plan.tiles, plan.act_time, plan.out_time) == (5, 32, 160)
    held = stream_logical(a, axes="M T K")                    # repeated 5× per M, the same data
    np.testing.assert_array_equal(held, np.broadcast_to(c.x[:, None, :], held.shape))
    r = a.contract(m["1"]).accumulate(m["M, T"], m["N"], Interleaved)
    _close(stream_logical(r, axes="M T N"), c.reference("mk,ntk->mtn"), c.bound("mk,ntk->mtn", 16))


def test_al4_tiling_axis_not_innermost_is_refused_L3945() -> None:
    c = Case(dict(M=32, N=8, K=16, T=5), dt.bf16, "M", "K", "M K", "N", "T, K", "N T K")
    with pytest.raises(LayoutError) as err:
        c.stream.align(c.m["T, M"], c.m["K # 32"], c.trf)
    assert err.value.axis == "T" and err.value.level == "Time"


def test_align_refusals() -> None:
    c = Case(dict(M=32, N=8, K=32, L=2), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    m = c.m
    with pytest.raises(HardwareLimitError) as err:            # OutPacket must be 64 bytes (L3921)
        c.stream.align(m["M, K / 16"], m["K % 16"], c.trf)
    assert err.value.level == "Packet"
    c = Case(dict(M=32, N=8, K=32, L=2), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    with pytest.raises(LayoutError) as err:                   # not the collected flits
        c.stream.align(c.m["M"], c.m["K % 16, K / 16"], c.trf)
    assert err.value.level == "Packet"
    c = Case(dict(M=32, N=8, K=64), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    with pytest.raises(LayoutError) as err:                   # the Stream Adapter does not reorder time
        c.stream.align(c.m["K / 32, M"], c.m["K % 32"], c.trf)
    assert err.value.level == "Time"


def test_align_type_and_placement_must_match() -> None:
    c = Case(dict(M=32, N=8, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    m = c.m
    trf8 = place_trf(c.ctx, np.zeros((8, 32), np.int8), dt.i8, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"],
                     TrfAddress.SecondHalf, axes="N K")
    with pytest.raises(DtypeError):
        c.stream.align(m["M"], m["K"], trf8)


def test_align_rows_must_be_1_2_4_8_L4160_L4168() -> None:
    c = Case(dict(M=4, N=3, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    with pytest.raises(HardwareLimitError) as err:
        c.stream.align(c.m["M"], c.m["K"], c.trf)
    assert err.value.level == "Row" and err.value.axis == "N"


def test_align_on_the_sub_context_is_refused() -> None:
    c = Case(dict(M=4, N=8, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K", tu="sub")
    with pytest.raises(TypestateError):
        c.stream.align(c.m["M"], c.m["K"], c.trf)


def test_row_axis_in_the_computation_is_refused() -> None:
    c = Case(dict(M=4, N=8, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    with pytest.raises(LayoutError) as err:
        c.stream.align(c.m["M, N"], c.m["K"], c.trf)
    assert err.value.axis == "N"


def test_trf_axis_never_read_is_refused() -> None:
    c = Case(dict(M=4, N=8, K=32, T=2), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "T, K", "N T K")
    with pytest.raises(LayoutError) as err:
        c.stream.align(c.m["M"], c.m["K"], c.trf)
    assert err.value.axis == "T" and err.value.level == "Element"


def test_weights_the_trf_lacks_are_insufficient_input() -> None:
    """The TRF holds K < 32 only; the computation walks K / 32 too."""
    m = AxisSet(M=4, N=8, K=64).m
    trf = CE.TrfOperand(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K % 32"], "Full", 0)
    with pytest.raises(InsufficientInputError) as err:
        CE.plan_align(RNGD, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M, K / 16"], m["K % 16"], trf,
                      m["M, K / 32"], m["K % 32"])
    assert err.value.axis == "K"


# ------------------------------------------------------------------------------------------------ TRF Sequencer


def test_ts1_reg_read_64_L4200_L4248() -> None:
    c = Case(dict(M=32, N=8, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    m = c.m
    a = c.stream.align(m["M"], m["K"], c.trf)
    plan = a.carried.contraction.align
    assert (plan.collect_flits, plan.reg_read_bytes, plan.byte_entries) == (2, 64, ((32, 0.0),))
    r = a.contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    _close(stream_logical(r, axes="M N"), c.reference("mk,nk->mn"), c.bound("mk,nk->mn", 32))


def test_ts2_reg_read_32_L4249_L4296() -> None:
    c = Case(dict(M=32, N=8, K=16, L=2, O=2), dt.bf16, "O, M, L", "K", "O M L K", "N", "O, K", "N O K",
             TrfAddress.FirstHalf)
    m = c.m
    a = c.stream.align(m["O, M"], m["L, K"], c.trf)
    plan = a.carried.contraction.align
    assert plan.reg_read_bytes == 32
    assert plan.entries_text() == "E1 {size: 2, stride: 32 B}, E0 {size: 32, stride: 0 B}"   # L4276-4278
    r = a.contract(m["L"]).accumulate(m["O, M, L"], m["N"], Interleaved)
    _close(stream_logical(r, axes="O M L N"), c.reference("omlk,nok->omln"), c.bound("omlk,nok->omln", 16))


def test_trf_second_half_address_mode_L4149_L4157() -> None:
    c = Case(dict(M=8, N=8, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K", TrfAddress.SecondHalf)
    a = c.stream.align(c.m["M"], c.m["K"], c.trf)
    plan = a.carried.contraction.align
    assert plan.mode == "SecondHalf" and plan.base_bytes == RNGD.trf.half_row_bytes
    assert int(CE.addresses(plan)[0]) == RNGD.trf.half_row_bytes
    r = a.contract(c.m["1"]).accumulate(c.m["M"], c.m["N"], Interleaved)
    _close(stream_logical(r, axes="M N"), c.reference("mk,nk->mn"), c.bound("mk,nk->mn", 32))


def test_wide_read_needs_64_byte_alignment_L4110_L4111() -> None:
    """A 64-byte reg_read_size with a TRF stride of 72 bytes (K padded to 36 bf16) is refused."""
    ax = AxisSet(M=2, N=8, K=32, T=2)
    m = ax.m
    trf = CE.TrfOperand(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["T, K # 36"], "Full", 0)
    with pytest.raises(AddressError) as err:
        CE.plan_align(RNGD, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M, K / 16"], m["K % 16"], trf,
                      m["M, T"], m["K"])
    assert err.value.level == "Element" and "64" in str(err.value)
    ok = CE.TrfOperand(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["T, K # 64"], "Full", 0)
    plan = CE.plan_align(RNGD, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M, K / 16"], m["K % 16"], ok,
                         m["M, T"], m["K"])
    assert plan.byte_entries == ((2, 0.0), (2, 128.0))


def test_trf_sequencer_entry_limit_L4169_L4175() -> None:
    """Nine tiling axes walked against the TRF's order need nine entries that cannot merge; the TRF sequencer
    has eight.  Walked in the TRF's order they merge into one."""
    names = "ABCDEFGHI"
    m = AxisSet(**{n: 2 for n in names}, N=8, K=32).m
    trf = CE.TrfOperand(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m[", ".join(names) + ", K"], "Full", 0)
    args = (RNGD, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["K / 16"], m["K % 16"], trf)
    with pytest.raises(HardwareLimitError) as err:
        CE.plan_align(*args, m[", ".join(reversed(names))], m["K"])
    assert "8" in str(err.value) and err.value.level == "Time"
    plan = CE.plan_align(*args, m[", ".join(names)], m["K"])
    assert plan.byte_entries == ((512, 64.0),)


def test_trf_cache_misses_L4177_L4199() -> None:
    """TS-1 reads the same 64 bytes 32 times: one miss.  AL-1's innermost entry alternates two addresses 1024
    bytes apart, which map to the same cache entry of the direct-mapped cache: every read misses."""
    m = AxisSet(M=32, N=8, K=32).m
    trf = CE.TrfOperand(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"], "Full", 0)
    p = CE.plan_align(RNGD, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M, K / 16"], m["K % 16"], trf, m["M"],
                      m["K"])
    assert CE.cache_misses(p) == 1
    m = AxisSet(M=32, N=8, K=16, L=2, O=2).m
    trf = CE.TrfOperand(dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["O, M, K"], "FirstHalf", 0)
    p = CE.plan_align(RNGD, dt.bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M, O, L"], m["K"], trf, m["M, O"],
                      m["L, K"])
    assert CE.cache_misses(p) == 64
    assert CE.addresses(p)[:4].tolist() == [0, 1024, 32, 1056]


# ------------------------------------------------------------------------------------------------ Reducer


def test_rd1_matmul_depth_5_L4333_L4359() -> None:
    c = Case(dict(A=32, B=32, C=8), dt.bf16, "A, B / 16", "B % 16", "A B", "C", "B", "C B")
    m = c.m
    k = c.stream.align(m["A"], m["B"], c.trf).contract(m["1"])
    assert isinstance(k, ContractionTensor)
    plan: CE.ContractPlan = k.carried.contraction.contract
    assert (plan.depth, plan.tree_depth, plan.columns, plan.out_dtype) == (5, 5, 1, dt.f32)
    assert k.reports[-1].latency == 5                                        # spatial latency 5 cycles (L4543)
    # the ContractionTensor's data: [Chip, Cluster, Slice, Row, Time, Packet] (L3811-3812)
    cv = k.data.values
    held = read_held(cv, k.data.known, dt.f32, [m["1"], m["1 # 2"], m["1 # 256"], m["C"], m["A"], m["1"]],
                     axes="C A")
    _close(held, c.reference("ab,cb->ca"), c.bound("ab,cb->ca", 32))
    r = k.accumulate(m["A"], m["C"], Interleaved)
    assert isinstance(r, AccumulationTensor) and r.dtype is dt.f32
    _close(stream_logical(r, axes="A C"), c.reference("ab,cb->ac"), c.bound("ab,cb->ac", 32))


def test_rd2_full_reduction_plan_L4360_L4376() -> None:
    """A = 65536 bf16 over 256 slices: depth 5 over A % 32, 8 temporal steps over A / 32 % 8 (the text's
    mappings are lost; digest RD-2).  The in-slice work: 8 computation steps, tree latency 5."""
    m = AxisSet(A=65536).m
    c = CE.plan_contract(RNGD, dt.bf16, m["A % 32"], m["1"])
    assert (c.depth, CE.contract_cycles(c, 8)) == (5, (8, 5))
    acc = CE.plan_accumulate(RNGD, dt.f32, m["1"], m["A / 32 % 8"], m["1"], m["1"], m["1 # 8"], "Interleaved")
    assert acc.reduced == 8 and acc.inner_slots == 1


def test_rd3_accumulator_slot_trace_L4406_L4431() -> None:
    m = AxisSet(A=2048, B=8).m
    acc = CE.plan_accumulate(RNGD, dt.f32, m["1"], m["B / 4, A % 8"], m["1"], m["A % 8"], m["1 # 8"],
                             "Interleaved")
    slot, ops, out = CE.accumulator_trace(acc)
    assert slot.tolist() == list(range(8)) * 2
    assert ops.tolist() == ["store"] * 8 + ["accumulate"] * 8
    assert np.flatnonzero(out).tolist() == list(range(8, 16))     # flits 8..15 complete their slots
    assert acc.inner_slots == 8 and acc.reduced == 2


@pytest.mark.parametrize("kind", ["Interleaved", "Sequential"])
def test_rd4_rd5_partial_spatial_and_temporal_L4451_L4525(kind: str) -> None:
    c = Case(dict(M=4, N=8, K=64), dt.bf16, "K / 16, M", "K % 16", "M K", "N", "K", "N K")
    m = c.m
    k = c.stream.align(m["K / 16, M"], m["K % 16 # 32"], c.trf).contract(m["K % 16 / 4"])
    cp = k.carried.contraction.contract
    assert (cp.depth, cp.columns, cp.kept) == (2, 8, 4)          # 8 outputs, 4 real
    if kind == "Interleaved":
        r = k.accumulate(m["M, K % 16 / 4"], m["N"], Interleaved)
        assert r.carried.accumulate.inner_slots == 16           # M × K%16/4 ≤ 128 (L4478-4481)
        got = stream_logical(r, axes="M K N", allow_missing=True)[:, 0:16:4, :]
        out_axes = "mqn"
    else:
        r = k.accumulate(m["M, N"], m["K % 16 / 4 # 8"], Sequential)
        assert r.carried.accumulate.inner_slots == 32           # M × N ≤ 32 (L4522-4525)
        got = stream_logical(r, axes="M N K", allow_missing=True)[:, :, 0:16:4]
        out_axes = "mnq"
        pad = r.data.values.reshape(2, 256, 32, 8)[0, 0, :, 4:]
        assert (pad == 0).all() and r.data.known.reshape(2, 256, 32, 8)[0, 0, :, 4:].all()   # zeros (L4491)
    x = c.x.astype(np.float64).reshape(4, 4, 4, 4)               # (m, K/16, K%16/4, K%4)
    w = c.w.astype(np.float64).reshape(8, 4, 4, 4)
    want = np.einsum(f"mhqk,nhqk->{out_axes}", x, w)
    bound = 16 * F32_EPS * np.einsum(f"mhqk,nhqk->{out_axes}", np.abs(x), np.abs(w)).max()
    assert float(np.abs(got - want).max()) <= bound


def test_rd_neg_sequential_buffer_32_L4534_L4539() -> None:
    """RD-5 with M = 8: 64 slots inner to K / 16, more than Sequential's 32 (Interleaved's 128 is fine)."""
    m = AxisSet(M=8, N=8, K=64).m
    with pytest.raises(HardwareLimitError) as err:
        CE.plan_accumulate(RNGD, dt.f32, m["N"], m["K / 16, M"], m["K % 16 / 4"], m["M, N"], m["K % 16 / 4 # 8"],
                           "Sequential")
    assert err.value.level == "Time" and err.value.axis == "K"
    ok = CE.plan_accumulate(RNGD, dt.f32, m["N"], m["K / 16, M"], m["K % 16 / 4"], m["M, K % 16 / 4"], m["N"],
                            "Interleaved")
    assert ok.inner_slots == 32


def test_rd_neg_interleaved_buffer_128() -> None:
    m = AxisSet(M=64, N=8, K=64).m
    with pytest.raises(HardwareLimitError) as err:
        CE.plan_accumulate(RNGD, dt.f32, m["N"], m["K / 16, M"], m["K % 16 / 4"], m["M, K % 16 / 4"], m["N"],
                           "Interleaved")
    assert "128" in str(err.value) and err.value.axis == "K"


def test_rd_neg_f32_input_is_refused_L4533() -> None:
    m = AxisSet(K=16).m
    with pytest.raises(DtypeError):
        CE.plan_contract(RNGD, dt.f32, m["K"], m["1"])


def test_rd_neg_i8_depth_0_is_refused_L4532() -> None:
    m = AxisSet(K=64).m
    with pytest.raises(HardwareLimitError) as err:
        CE.plan_contract(RNGD, dt.i8, m["K"], m["K"])
    assert err.value.level == "Packet" and "32" in str(err.value)
    assert CE.plan_contract(RNGD, dt.i8, m["K"], m["K / 2"]).depth == 1      # the minimum depth for i8


def test_rd_neg_depth_beyond_the_tree_L4388() -> None:
    """A 64-element bf16 packet (128 bytes, not a legal computation packet) reduced to 1 needs depth 6 > 5."""
    m = AxisSet(K=64).m
    with pytest.raises(HardwareLimitError) as err:
        CE.plan_contract(RNGD, dt.bf16, m["K"], m["1"])
    assert "depth 5" in str(err.value)


def test_contract_slicing_real_data_is_refused_L4440() -> None:
    """Keeping 2 of the 4 real L outputs of a depth-3 tree would slice data, not padding."""
    m = AxisSet(L=4, K=8).m
    with pytest.raises(LayoutError) as err:
        CE.plan_contract(RNGD, dt.bf16, m["L, K"], m["L = 2"])
    assert err.value.level == "Packet"
    assert CE.plan_contract(RNGD, dt.bf16, m["L, K"], m["L"]).depth == 3


def test_accumulate_layout_refusals() -> None:
    m = AxisSet(M=4, N=8, K=64).m
    with pytest.raises(LayoutError) as err:           # Interleaved OutPacket is Row # 8
        CE.plan_accumulate(RNGD, dt.f32, m["N"], m["K / 16, M"], m["1"], m["M"], m["1 # 8"], "Interleaved")
    assert err.value.level == "Packet"
    with pytest.raises(LayoutError) as err:           # kept axes keep their order
        CE.plan_accumulate(RNGD, dt.f32, m["N"], m["K / 16, M"], m["1"], m["M, K / 16"], m["N"], "Interleaved")
    assert err.value.level == "Time"


def test_i8_contraction_is_exact() -> None:
    c = Case(dict(M=16, N=4, K=128), dt.i8, "M, K / 32", "K % 32", "M K", "N", "K", "N K", seed=11)
    m = c.m
    r = (c.stream.align(m["M, K / 64"], m["K % 64"], c.trf).contract(m["1"])
         .accumulate(m["M"], m["N # 8"], Interleaved))
    got = stream_logical(r, axes="M N")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, c.reference("mk,nk->mn").astype(np.int64))


def test_poison_propagates_and_zero_padding_masks_it() -> None:
    """An unwritten TRF element poisons the outputs it feeds; multiplied by the Stream Adapter's zero padding
    it does not (``1+1#`` contracted with ``1+1z`` is ``1``, L3771–3774)."""
    c = Case(dict(M=4, N=8, K=32), dt.bf16, "M, K / 16", "K % 16", "M K", "N", "K", "N K")
    m = c.m
    image = c.ctx.memory.chip(0).trf
    image.written[0, 0, 3, 2 * 5: 2 * 5 + 2] = False            # Row 3, element K = 5
    r = c.stream.align(m["M"], m["K"], c.trf).contract(m["1"]).accumulate(m["M"], m["N"], Interleaved)
    known = r.data.known.reshape(2, 256, 4, 8)[0, 0]
    assert not known[:, 3].any() and known[:, [0, 1, 2, 4, 5, 6, 7]].all()
    c2 = Case(dict(M=4, N=8, K=16), dt.bf16, "M", "K", "M K", "N", "K", "N K")
    img = c2.ctx.memory.chip(0).trf
    img.written[0, 0, :, 32:64] = False                         # the 16 elements after K: never written
    a = c2.stream.align(c2.m["M"], c2.m["K # 32"], c2.trf)
    assert a.carried.contraction.align.reg_read_bytes == 32                 # reads only K, repeated
    r2 = a.contract(c2.m["1"]).accumulate(c2.m["M"], c2.m["N"], Interleaved)
    assert r2.data.known.reshape(2, 256, 4, 8)[0, 0].all()


def test_reports_and_schedule_shape() -> None:
    c = Case(dict(A=64, B=32, C=8), dt.bf16, "A, B / 16", "B % 16", "A B", "C", "B", "C B")
    m = c.m
    r = c.stream.align(m["A"], m["B"], c.trf).contract(m["1"]).accumulate(m["A"], m["C"], Interleaved)
    engines = [rep.engine for rep in r.reports]
    assert engines == ["aligner", "reducer.tree", "reducer.accumulator"]
    assert [rep.cycles for rep in r.reports] == [64, 64, 64]
    assert r.inputs[-1] is c.trf                                  # the pass waits for the TRF load


# ------------------------------------------------------------------------------------------------ property


@st.composite
def contraction_cases(draw: st.DrawFn) -> dict[str, Any]:
    """A random legal contraction: X[M, O, K] · W[N, O, T, K] → [M, O, T, N] (K reduced in packet and time)."""
    dtype = draw(st.sampled_from([dt.i8, dt.bf16]))
    e = 256 // dtype.size_bits                              # elements per flit
    n64 = 2 * e
    rows = draw(st.sampled_from([1, 2, 4, 8]))
    msz = draw(st.sampled_from([1, 2, 3]))
    osz = draw(st.sampled_from([1, 2]))
    tsz = draw(st.sampled_from([1, 2, 3]))
    kt = draw(st.sampled_from([1, 2, 4]))
    flits = draw(st.sampled_from([1, 2]))
    kind = draw(st.sampled_from(["Interleaved", "Sequential"]))
    partial = draw(st.booleans())
    order = draw(st.permutations(["M", "O", "Kt"]))
    eorder = draw(st.permutations(["O", "T"]))
    mode = draw(st.sampled_from(["Full", "FirstHalf", "SecondHalf"]))
    seed = draw(st.integers(0, 2**16))
    return dict(dtype=dtype, e=e, n64=n64, rows=rows, M=msz, O=osz, T=tsz, kt=kt, flits=flits, kind=kind,
                partial=partial, order=order, eorder=eorder, mode=mode, seed=seed)


def _build(p: dict[str, Any]) -> tuple[Case, Mapping, Mapping, Mapping, Mapping, Mapping, Mapping, str, int]:
    e, n64, flits = p["e"], p["n64"], p["flits"]
    kblock = e * flits                                     # K per computation packet (data part)
    K = kblock * p["kt"]
    sizes = {"K": K}
    for a in ("M", "O", "T"):
        if p[a] > 1:
            sizes[a] = p[a]
    if p["rows"] > 1:
        sizes["N"] = p["rows"]
    ktime = f"K / {kblock}" if p["kt"] > 1 else None
    items = {"M": "M" if "M" in sizes else None, "O": "O" if "O" in sizes else None, "Kt": ktime}
    t_items = [items[k] for k in p["order"] if items[k]]
    act_time = ", ".join(t_items) or "1"
    if flits == 2:
        time = ", ".join([*t_items, f"K / {e} % 2"])
        out_packet = f"K % {kblock}"
    else:
        time = act_time
        out_packet = f"K % {e} # {n64}"
    packet = f"K % {e}"
    xaxes = " ".join(a for a in ("M", "O", "K") if a in sizes)
    waxes = " ".join(a for a in ("N", "O", "T", "K") if a in sizes)
    e_items = [a for a in p["eorder"] if a in sizes] + ["K"]
    row = "N" if "N" in sizes else "1"
    case = Case(sizes, p["dtype"], time, packet, xaxes, row, ", ".join(e_items), waxes,
                getattr(TrfAddress, p["mode"]), seed=p["seed"])
    m = case.m
    out_time = m[", ".join([*t_items, *(["T"] if "T" in sizes else [])]) or "1"]
    cpk = m[out_packet]
    if p["partial"]:
        g = max(1, n64 // 32) * 2
        contract_packet = cpk.stride(g)
        if flits == 1:
            contract_packet = m[f"K % {e} / {g}"]
    else:
        g = n64
        contract_packet = m["1"]
    kept = [it for it in out_time.items() if not (it.axes == {"K"} and it.size == p["kt"] and p["kt"] > 1)
            and it.size > 1]
    kept_map = pair_of(*kept) if kept else m["1"]
    rowm = m[row]
    if p["kind"] == "Interleaved":
        acc_time = pair_of(kept_map, contract_packet)
        acc_packet = rowm.pad(8)
    else:
        mcols = contract_packet.size
        padded = contract_packet.pad(-(-mcols // 8) * 8)
        acc_time = pair_of(kept_map, rowm, padded.stride(8))
        acc_packet = padded.modulo(8)
    return case, out_time, m[out_packet], contract_packet, acc_time, acc_packet, rowm, p["kind"], g


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contraction_cases())
def test_pipeline_equals_einsum_property(p: dict[str, Any]) -> None:
    """align → contract → accumulate of random legal shapes equals numpy.einsum of the logical tensors: exactly
    for i8, within n · 2^-23 · Σ|x·w| for bf16 (n the terms per output)."""
    case, out_time, out_packet, contract_packet, acc_time, acc_packet, _, kind, g = _build(p)
    kind_obj = getattr(AccumulationKind, kind)
    try:
        a = case.stream.align(out_time, out_packet, case.trf)
        k = a.contract(contract_packet)
        r = k.accumulate(acc_time, acc_packet, kind_obj)
    except HardwareLimitError as err:                     # the accumulator's slot limits: refused, by rule
        assert "slots" in str(err)
        return
    xaxes, waxes = case.xaxes.split(), case.waxes.split()
    out_axes = [a for a in ("M", "O", "T", "N") if a in case.sizes]
    K = case.sizes["K"]
    if p["partial"]:
        held = [a for a in (*out_axes, "K")]
        got = stream_logical(r, axes=held, allow_missing=True)
        q = contract_packet.size
        kblock = p["e"] * p["flits"]
        got = got[..., 0: q * g: g][..., : kblock // g]
        x = case.x.astype(np.float64).reshape(*case.x.shape[:-1], K // kblock, kblock // g, g)
        w = case.w.astype(np.float64).reshape(*case.w.shape[:-1], K // kblock, kblock // g, g)
        lx = "".join(a.lower() for a in xaxes[:-1]) + "hqj"
        lw = "".join(a.lower() for a in waxes[:-1]) + "hqj"
        lo = "".join(a.lower() for a in out_axes) + "q"
        spec = f"{lx},{lw}->{lo}"
        want = np.einsum(spec, x, w)
        mag = np.einsum(spec, np.abs(x), np.abs(w))
        got = got[..., : want.shape[-1]]
        terms = g * (K // kblock)
    else:
        got = stream_logical(r, axes=out_axes) if out_axes else stream_logical(r)
        lx = "".join(a.lower() for a in xaxes)
        lw = "".join(a.lower() for a in waxes)
        spec = f"{lx},{lw}->{''.join(a.lower() for a in out_axes)}"
        want = np.einsum(spec, case.x.astype(np.float64), case.w.astype(np.float64))
        mag = np.einsum(spec, np.abs(case.x.astype(np.float64)), np.abs(case.w.astype(np.float64)))
        terms = K
    got = np.asarray(got).reshape(want.shape)
    if p["dtype"] is dt.i8:
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))
    else:
        assert float(np.abs(got.astype(np.float64) - want).max()) <= terms * F32_EPS * float(mag.max()) + 1e-30
    assert math.prod(r.layout.shape) == r.data.values.size


def test_dense_fallback_gives_the_same_result() -> None:
    """When the time digits of the sequencer, the tiling and the accumulator have no common refinement, the
    weights are gathered per computation step instead; forcing that path must not change the result."""
    from visa import fastpaths

    def run() -> npt.NDArray[Any]:
        c = Case(dict(M=32, N=8, K=16, L=2, O=2), dt.bf16, "M, O, L", "K", "M O L K", "N", "O, M, K", "N O M K",
                 TrfAddress.FirstHalf, seed=5)
        m = c.m
        r = c.stream.align(m["M, O"], m["L, K"], c.trf).contract(m["L"]).accumulate(m["M, O, L"], m["N"],
                                                                                     Interleaved)
        return np.asarray(stream_logical(r, axes="M O L N"))

    fused = run()
    with fastpaths.disabled("contraction.time-digits"):
        dense = run()
    np.testing.assert_allclose(dense, fused, rtol=1e-6, atol=1e-5)


def test_i4_weights_and_depth_7_L4388() -> None:
    """i4 (128 elements per 64-byte packet, tree depth 7, widened to i32): exact against numpy."""
    c = Case(dict(M=8, N=4, K=256), dt.i4, "M, K / 64", "K % 64", "M K", "N", "K", "N K", seed=9)
    m = c.m
    k = c.stream.align(m["M, K / 128"], m["K % 128"], c.trf).contract(m["1"])
    assert (k.carried.contraction.contract.depth, k.carried.contraction.align.reg_read_bytes) == (7, 64)
    r = k.accumulate(m["M"], m["N # 8"], Interleaved)
    np.testing.assert_array_equal(stream_logical(r, axes="M N").astype(np.int64),
                                  c.reference("mk,nk->mn").astype(np.int64))


def test_every_chip_cluster_and_slice_contracts_with_its_own_trf() -> None:
    """Two chips × two clusters × 256 slices, each with its own activation and weights (L3811–3812)."""
    ax = AxisSet(C=2, L=2, S=256, M=2, N=2, K=32)
    m = ax.m
    ctx = Context.acquire()
    rng = np.random.default_rng(4)
    x = dt.random_values(dt.i8, (2, 2, 256, 2, 32), rng)
    w = dt.random_values(dt.i8, (2, 2, 256, 2, 32), rng)
    layout = StreamLayout(dt.i8, m["C"], m["L"], m["S"], m["M"], m["K"])
    stream = make_stream(ctx.main, CollectTensor, layout, x, axes="C L S M K")
    trf = place_trf(ctx, w, dt.i8, m["C"], m["L"], m["S"], m["N"], m["K"], TrfAddress.Full, axes="C L S N K")
    r = (stream.align(m["M"], m["K # 64"], trf).contract(m["1"])
         .accumulate(m["M"], m["N # 8"], Interleaved))
    got = stream_logical(r, axes="C L S M N")
    want = np.einsum("clsmk,clsnk->clsmn", x.astype(np.int64), w.astype(np.int64))
    np.testing.assert_array_equal(got.astype(np.int64), want)
