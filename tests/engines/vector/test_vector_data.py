"""Data-dependent vector work (issue 13): the branch log ``BranchMode.Vrf`` (L4802, L8090–8099), the carried
operand ``OperandRead`` / ``WriteOperand`` (cumsum, L8708–8721), FilterCompaction with valid-count packing
(L8580–8584, L2324), ``view.bitcast`` (L8547–8553, L8589) and the masking pad values (L1898–1902, L5544–5565)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, bf16, f32, i8, i16, i32
from visa.dtypes import SCALARS
from visa.engines.fetch import PadValue
from visa.engines.vector import (
    BranchMode,
    FpBinaryOp,
    FxpBinaryOp,
    GroupId,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    OperandRead,
    Stash,
    ValidBranchIds,
    VeBranchOperand,
    WriteOperand,
)
from visa.errors import (
    DtypeError,
    HardwareLimitError,
    LayoutError,
    PoisonError,
    ResourceError,
    TypestateError,
    WrongTypeError,
)
from visa.testing import place_dm, place_vrf, stream_logical

from .helpers import collect, layout, logical, rand_i32

RNG = np.random.default_rng(13)
CL, SL = "1 # 2", "1 # 256"


def ctx1() -> Context:
    ctx = Context.acquire()
    ctx.num_chips = 1
    return ctx


def _parts(err: Any) -> tuple[Any, Any, Any, Any]:
    e = err.value
    return e.call, e.level, e.axis, e.fix


# -------------------------------------------------------------------------------------------- branch log


def _log_stream(ctx: Context, ids: np.ndarray, x: np.ndarray | None = None) -> tuple[Any, Any, np.ndarray]:
    """A (T=4, L=8) i32 stream and a VRF branch log over T only (broadcast over the lanes)."""
    ax = AxisSet(T=4, L=8)
    m = ax.m
    lay = layout(ax, i32, "1", CL, SL, "T", "L")
    x = rand_i32(RNG, (4, 8)) if x is None else x
    log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T"], 0)
    return collect(ctx, lay, x, "T L").vector_init(), log, x


def test_vrf_branch_reads_execution_ids_from_the_log_l4802() -> None:
    """Each element's ExecutionId is the log's value at its index; axes the log lacks are broadcast."""
    ctx = ctx1()
    ids = np.array([0, 9, 15, 3], np.int32)
    s, log, x = _log_stream(ctx, ids)
    b = s.vector_intra_slice_branch(BranchMode.Vrf(log))
    assert np.array_equal(b.ve.exec_id[0, 0, 0], np.repeat(ids[:, None], 8, axis=1).astype(np.uint8))
    assert log in b.inputs
    # group operands follow the log's group bit (bit 3): ids 9 and 15 are group One
    out = b.vector_fxp(FxpBinaryOp.AddFxp, VeBranchOperand.group(100, GroupId.One)).vector_final()
    want = x.astype(np.int64)
    want[1:3] += 100
    assert np.array_equal(logical(out, "T L"), want.astype(np.int32))
    # a log pass costs what an Unconditional pass costs: one flit per time step (L5270)
    assert out.reports[-1].cycles == 4 and "Vrf" in out.reports[-1].config


def test_vrf_branch_refusals() -> None:
    ctx = ctx1()
    s, log, _ = _log_stream(ctx, np.array([0, 16, 1, 2], np.int32))
    with pytest.raises(LayoutError, match="holds 16 at chip 0, cluster 0, slice 0, time 1") as err:
        s.vector_intra_slice_branch(BranchMode.Vrf(log))
    call, level, axis, fix = _parts(err)
    assert call == "vector_intra_slice_branch" and level == "Element" and axis == "T" and "0..15" in fix
    ax = AxisSet(T=4)
    flog = place_vrf(ctx, np.zeros(4, np.float32), f32, ax.m["1"], ax.m[CL], ax.m[SL], ax.m["T"], 64)
    with pytest.raises(DtypeError, match="i32 VRF tensor, got f32") as err2:
        s.vector_intra_slice_branch(BranchMode.Vrf(flog))
    call, level, axis, fix = _parts(err2)
    assert call == "vector_intra_slice_branch" and level == "Element" and axis == "T" and fix
    with pytest.raises(TypestateError, match="takes the VRF tensor"):
        s.vector_intra_slice_branch(BranchMode.Vrf(np.zeros(4)))  # type: ignore[arg-type]
    # a log in another slice than the stream's element is refused (a slice reads only its own VRF)
    ax2 = AxisSet(T=4, L=8)
    m = ax2.m
    other = place_vrf(ctx, np.zeros(4, np.int32), i32, m["1"], m[CL], m["# 1 + 1 # 255"], m["T"], 128)
    with pytest.raises(LayoutError, match="reads only its own") as err3:
        s.vector_intra_slice_branch(BranchMode.Vrf(other))
    assert err3.value.level == "Slice"
    # the stream is left unconsumed by every refusal: a correct call follows
    assert s.vector_intra_slice_branch(BranchMode.Unconditional) is not None


def test_unwritten_branch_log_is_poison() -> None:
    from visa.tensors.handles import VrfTensor

    ctx = ctx1()
    s, _, _ = _log_stream(ctx, np.zeros(4, np.int32))
    ax = AxisSet(T=4)
    empty = VrfTensor(ctx, i32, ax.m["1"], ax.m[CL], ax.m[SL], ax.m["T"], 256)
    with pytest.raises(PoisonError, match="never loaded"):
        s.vector_intra_slice_branch(BranchMode.Vrf(empty))


def test_valid_count_puts_padding_lanes_in_group_one_l4800() -> None:
    """``BranchMode.ValidCount`` (the Valid Count Generator, L4800; issue 27 item 5): the lanes holding an element
    of ``L # 8`` (6 of 8) get ExecutionId 0, the padding lanes group One (bit 3), so a group operand reaches only
    one of the two."""
    ctx = ctx1()
    ax = AxisSet(T=4, L=6)
    m = ax.m
    x = rand_i32(RNG, (4, 6), extremes=False) % 1000
    b = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L # 8"), x, "T L").vector_init()
         .vector_intra_slice_branch(BranchMode.ValidCount))
    want_ids = np.zeros((4, 8), np.uint8)
    want_ids[:, 6:] = 8
    assert np.array_equal(b.ve.exec_id[0, 0, 0], want_ids)
    out = b.vector_fxp(FxpBinaryOp.AddFxp, VeBranchOperand.group(100, GroupId.Zero)).vector_final()
    assert np.array_equal(logical(out, "T L"), x + 100)
    assert "ValidCount" in out.reports[-1].config and m["L # 8"].size == 8


# ------------------------------------------------------------------------------------------ carried operand


def cumsum_ids(n: int) -> np.ndarray:
    """The manual's static branch logger for cumsum (L8712–8718): 0 first, 1 inside, 2 last."""
    ids = np.ones(n, np.int32)
    ids[0], ids[-1] = 0, 2
    return ids


def _cumsum(ctx: Context, x: np.ndarray, dtype: type, op: Any, n: int = 16) -> Any:
    ax = AxisSet(T=n, L=8)
    m = ax.m
    log = place_vrf(ctx, cumsum_ids(n), i32, m["1"], m[CL], m[SL], m["T"], 0)
    lay = layout(ax, dtype, "1", CL, SL, "T", "L")
    b = collect(ctx, lay, x, "T L").vector_init().vector_intra_slice_branch(BranchMode.Vrf(log))
    if dtype is i32:
        s = b.vector_fxp(op, OperandRead(branch=(1, 2)))
    else:
        s = b.vector_split(m["T, L / 4"], m["L % 4"]).vector_fp_binary(op, OperandRead(branch=(1, 2)))
    w = s.vector_write_operand(WriteOperand(branch=(0, 1)))
    if dtype is f32:
        w = w.vector_concat(m["T"], m["L"])
    return w.vector_final()


def test_cumsum_i32_per_lane_across_time_l8708() -> None:
    """cumsum over the Time axis, each lane its own sequence: exact (wrapping AddFxp, L4825)."""
    ctx = ctx1()
    x = rand_i32(RNG, (16, 8), extremes=False)
    out = _cumsum(ctx, x, i32, FxpBinaryOp.AddFxp)
    want = np.cumsum(x.astype(np.int64), axis=0).astype(np.int32)  # wraps as AddFxp does
    assert np.array_equal(logical(out, "T L"), want)
    rep = out.reports[-1]
    assert rep.cycles == 16 and "OperandRead(branch=(1, 2))" in rep.config and "WriteOperand" in rep.config


def test_cumsum_f32_rounds_each_step_like_numpy() -> None:
    """f32 AddF rounds once per step in time order, as numpy's float32 cumsum does: bit-exact."""
    ctx = ctx1()
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    out = _cumsum(ctx, x, f32, FpBinaryOp.AddF)
    assert np.array_equal(logical(out, "T L"), np.cumsum(x, axis=0, dtype=np.float32))
    assert out.reports[-1].cycles == 32  # the Way4 section after the split has twice the flits (L5270)


def test_running_difference_with_mode_and_restart() -> None:
    """The rule, not the example: a register restarted every 4 steps by the log (id 0 starts a segment) and
    read with Mode10 (operand first): ``y[t] = y[t-1] - x[t]``."""
    ctx = ctx1()
    ax = AxisSet(T=8, L=8)
    m = ax.m
    ids = np.array([0, 1, 1, 1, 0, 1, 1, 1], np.int32)
    log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T"], 0)
    x = rand_i32(RNG, (8, 8), extremes=False) % 1000
    from visa.engines.vector import BinaryArgMode

    b = collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), x, "T L").vector_init() \
        .vector_intra_slice_branch(BranchMode.Vrf(log))
    out = (b.vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, OperandRead(branch=1))
           .vector_write_operand(WriteOperand(branch=(0, 1))).vector_final())
    want = np.zeros_like(x, dtype=np.int64)
    for t in range(8):
        want[t] = x[t] if ids[t] == 0 else want[t - 1] - x[t]  # register − stream, restarted at id 0
    assert np.array_equal(logical(out, "T L"), want.astype(np.int32))


def test_write_before_read_sees_this_steps_value() -> None:
    """A WriteOperand earlier in the chain than the OperandRead: the read at step t sees the value written at
    step t (program order), or the last earlier one for ids that do not write."""
    ctx = ctx1()
    ax = AxisSet(T=4, L=8)
    m = ax.m
    ids = np.array([0, 1, 0, 1], np.int32)
    log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T"], 0)
    x = rand_i32(RNG, (4, 8), extremes=False) % 1000
    out = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), x, "T L").vector_init()
           .vector_intra_slice_branch(BranchMode.Vrf(log))
           .vector_write_operand(WriteOperand(branch=0))
           .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(0, 1))).vector_final())
    reg = np.where((ids == 0)[:, None], x, 0)
    reg[1], reg[3] = reg[0], reg[2]
    assert np.array_equal(logical(out, "T L"), (x.astype(np.int64) + reg).astype(np.int32))


def test_carried_operand_refusals() -> None:
    ctx = ctx1()
    ax = AxisSet(T=4, L=8)
    m = ax.m
    lay = layout(ax, i32, "1", CL, SL, "T", "L")

    def branch() -> Any:
        return collect(ctx, lay, rand_i32(RNG, (4, 8)), "T L").vector_init() \
            .vector_intra_slice_branch(BranchMode.Unconditional)

    # a read not followed by its write
    r = branch().vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0))
    with pytest.raises(TypestateError, match="only elementwise ops and .vector_write_operand") as err:
        r.vector_final()
    call, _level, _axis, fix = _parts(err)
    assert call == "vector_final" and "vector_write_operand" in fix
    # two writes in a pass
    w = branch().vector_write_operand(WriteOperand(branch=0))
    with pytest.raises(TypestateError, match="already wrote"):
        w.vector_write_operand(WriteOperand(branch=0))
    # a register of another dtype, or read at other lanes
    w2 = branch().vector_write_operand(WriteOperand(branch=0)).vector_fxp_to_fp(31)
    n = w2.vector_split(m["T, L / 4"], m["L % 4"])
    with pytest.raises(DtypeError, match="holds i32"):
        n.vector_fp_binary(FpBinaryOp.AddF, OperandRead(branch=0))
    # the manual's spelling OperandRead(branch = 1, 2) (L8716) positionally too; ids given twice are refused
    assert OperandRead(1, 2) == OperandRead(branch=(1, 2)) and WriteOperand(0, 1).branch == frozenset({0, 1})
    with pytest.raises(LayoutError, match="once"):
        OperandRead(1, branch=2)
    # ids outside 0..15, and OperandRead inside a branch operand
    with pytest.raises(LayoutError, match="0..15"):
        OperandRead(branch=16)
    with pytest.raises(LayoutError, match="not a VeBranchOperand"):
        branch().vector_fxp(FxpBinaryOp.AddFxp, VeBranchOperand.always(OperandRead(branch=0)))
    # the write is at a Stashable stage only
    f = branch().vector_fxp_to_fp(31)
    with pytest.raises(TypestateError, match="not available"):
        f.vector_write_operand(WriteOperand(branch=0))  # type: ignore[attr-defined]
    # and it does not take the ALU the read op took twice
    s = branch().vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0)).vector_write_operand(WriteOperand(0))
    with pytest.raises(ResourceError, match="FxpAdd is already in use"):
        s.vector_fxp(FxpBinaryOp.SubFxp, 1)


def test_carried_operand_after_a_split_is_refused_at_other_lanes() -> None:
    ctx = ctx1()
    ax = AxisSet(T=4, L=8)
    m = ax.m
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    s = (collect(ctx, layout(ax, f32, "1", CL, SL, "T", "L"), x, "T L").vector_init()
         .vector_intra_slice_branch(BranchMode.Unconditional).vector_write_operand(WriteOperand(branch=0))
         .vector_split(m["T, L / 4"], m["L % 4"]))
    with pytest.raises(LayoutError, match="each lane carries its own register") as err:
        s.vector_fp_binary(FpBinaryOp.AddF, OperandRead(branch=0))
    call, level, axis, fix = _parts(err)
    assert call == "vector_fp_binary" and level == "Packet" and axis == "L" and fix


# --------------------------------------------------------------------------------------- filter compaction


def _filtered(ctx: Context, x: np.ndarray, keep: tuple[int, ...]) -> tuple[Any, np.ndarray]:
    """An i32 (T=4, E=8) stream whose ExecutionIds are ``x % 4`` (low two bits: Comparison on bit tests is
    awkward, so the ids come from a log), filtered to ``keep``."""
    ax = AxisSet(T=4, E=8)
    m = ax.m
    ids = (x % 4).astype(np.int32)
    log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T, E"], 0)
    s = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "E"), x, "T E").vector_init()
         .vector_intra_slice_branch(BranchMode.Vrf(log)).vector_filter(ValidBranchIds.of(*keep)).vector_final())
    return s, ids


def _packed_rows(x: np.ndarray, ids: np.ndarray, keep: tuple[int, ...]) -> list[np.ndarray]:
    return [row[np.isin(r, keep)] for row, r in zip(x, ids, strict=True)]


def test_filter_packs_kept_elements_to_the_front_in_order_l2324() -> None:
    ctx = ctx1()
    x = RNG.integers(0, 1000, (4, 8)).astype(np.int32)
    out, ids = _filtered(ctx, x, (1, 3))
    rows = _packed_rows(x, ids, (1, 3))
    v, k = out.data.values[0, 0, 0], out.data.known[0, 0, 0]
    for t, row in enumerate(rows):
        assert np.array_equal(v[t, :row.size], row) and k[t, :row.size].all() and not k[t, row.size:].any()
    assert np.array_equal(out.carried.packed[0, 0, 0], [r.size for r in rows])
    assert "packed" in out.reports[-1].config and out.reports[-1].cycles == 4


def test_commit_of_the_packed_element_writes_only_kept_elements() -> None:
    """``.commit(m["T, K"])``: a new axis K replaces the packet's E, the kept elements are K's 0, 1, …"""
    ctx = ctx1()
    x = RNG.integers(0, 1000, (4, 8)).astype(np.int32)
    x[:, :2] = [[1, 5], [9, 13], [17, 21], [25, 29]]  # ids 1 → at least two kept per row
    ids = (x % 4)
    x[:, 2:] = np.where(ids[:, 2:] == 1, x[:, 2:] + 1, x[:, 2:])  # exactly two kept per row: ids 1 only at 0, 1
    out, ids = _filtered(ctx, x, (1,))
    ax = AxisSet(T=4, E=8, K=2)
    dm = out.commit(ax.m["T, K"], 1 << 12)
    assert np.array_equal(dm.logical("T K"), np.stack(_packed_rows(x, ids, (1,))))
    commit = ctx.schedule.ops[-1].engines[-1]
    assert commit.engine == "commit" and "commit_in_size = 8 B" in commit.config and commit.cycles == 4


def test_packed_commit_refusals() -> None:
    ctx = ctx1()
    x = RNG.integers(0, 1000, (4, 8)).astype(np.int32)
    x[0] = 4 * np.arange(8) + 1  # every element of row 0 has id 1: 8 kept
    out, _ = _filtered(ctx, x, (1,))
    ax = AxisSet(T=4, E=8, K=2, J=3)
    with pytest.raises(LayoutError, match="time 0 keeps 8 elements") as err:
        out.commit(ax.m["T, K"], 1 << 12)
    call, level, axis, fix = _parts(err)
    assert call == "commit" and level == "Packet" and axis == "K" and fix
    with pytest.raises(LayoutError, match="names J, K besides") as err2:
        out.commit(ax.m["T, K, J"], 1 << 12)
    assert err2.value.level == "Element" and err2.value.axis == "J, K"
    ax9 = AxisSet(T=4, E=8, K=9)
    with pytest.raises(LayoutError, match="packed axis K has 9 positions"):
        out.commit(ax9.m["T, K"], 1 << 12)


def test_packed_commit_of_one_kept_element_per_packet_top1() -> None:
    """Top-1 (K = 1, L8456–8460): an axis of size 1 sets no index, so ``m["T, K # 2"]`` names none of the
    Packet's axes and no new one; the packed Packet is lane 0 (``1 # 8``).  Before the fix the commit took the
    stream's own Packet and refused it ("a commit can neither broadcast nor discard"); a packet keeping two is
    refused as for any K."""
    ctx = ctx1()
    x = RNG.integers(0, 1000, (4, 8)).astype(np.int32)
    x[:, 0] = [1, 5, 9, 13]  # id 1 at lane 0 of every row
    ids = x % 4
    x[:, 1:] = np.where(ids[:, 1:] == 1, x[:, 1:] + 1, x[:, 1:])  # exactly one id 1 per row
    out, ids = _filtered(ctx, x, (1,))
    ax = AxisSet(T=4, E=8, K=1)
    dm = out.commit(ax.m["T, K # 2"], 1 << 12)
    assert np.array_equal(dm.logical("T"), x[:, 0])
    x2 = x.copy()
    x2[2, 3] = 4 * 7 + 1  # a second id 1 in row 2
    out2, _ = _filtered(ctx, x2, (1,))
    with pytest.raises(LayoutError, match="time 2 keeps 2 elements") as err:
        out2.commit(ax.m["T, K # 2"], 1 << 13)
    assert err.value.level == "Packet" and err.value.fix


def test_commit_view_leaves_dropped_elements_as_they_were() -> None:
    """The issue's bug: ``commit_view`` after a filter poisoned the dropped elements; now their bytes stay."""
    ctx = ctx1()
    x = RNG.integers(0, 1000, (4, 8)).astype(np.int32)
    out, ids = _filtered(ctx, x, (0, 2))
    ax = AxisSet(T=4, E=8)
    old = np.full((4, 8), -7, np.int32)
    dst = place_dm(ctx, old, i32, ax.m["1"], ax.m[CL], ax.m[SL], ax.m["T, E"], 1 << 12, axes="T E")
    out.commit_view(dst.view())
    want = old.copy()
    for t, row in enumerate(_packed_rows(x, ids, (0, 2))):
        want[t, :row.size] = row
    assert np.array_equal(dst.logical("T E"), want)


def test_whole_packets_dropped_by_a_time_axis_group() -> None:
    """AxisToggle on a Time axis keeps or drops whole packets: packing leaves a kept packet as it is."""
    ctx = ctx1()
    ax = AxisSet(I=4, A=8)
    x = rand_i32(RNG, (4, 8))
    b = (collect(ctx, layout(ax, i32, "1", CL, SL, "I", "A"), x, "I A").vector_init()
         .vector_intra_slice_branch(BranchMode.AxisToggle("I")))
    out = b.vector_filter(GroupId.One).vector_final()
    assert np.array_equal(out.data.values[0, 0, 0, 1::2], x[1::2])
    assert np.array_equal(out.carried.packed[0, 0, 0], [0, 8, 0, 8])


# ---------------------------------------------------------------------------------------------------- bitcast


def test_bitcast_reads_bf16_bits_as_i16_l8589() -> None:
    ctx = ctx1()
    ax = AxisSet(A=16)
    m = ax.m
    x = RNG.standard_normal(16).astype(ml_dtypes.bfloat16)
    d = place_dm(ctx, x, bf16, m["1"], m[CL], m[SL], m["A"], 0)
    v = d.view().bitcast(i16)
    assert v.dtype is i16 and v.base.dtype is i16 and d.dtype is bf16 and v.address == d.address
    s = ctx.main.begin(v).fetch(i32, m["A / 8"], m["A % 8"])
    assert np.array_equal(stream_logical(s), x.view(np.int16).astype(np.int32))
    # and back: f32 ↔ i32 keeps every bit, NaN payloads included
    y = np.array([1.5, -0.0, np.inf, np.nan, 3e-45, -2.0, 7.0, 1e30], np.float32)
    ax8 = AxisSet(B=8)
    f = place_dm(ctx, y, f32, ax8.m["1"], ax8.m[CL], ax8.m[SL], ax8.m["B"], 1024)
    s2 = ctx.main.begin(f.view().bitcast(i32)).fetch(i32, ax8.m["1"], ax8.m["B"])
    assert np.array_equal(stream_logical(s2), y.view(np.int32))


def test_bitcast_of_another_width_is_refused() -> None:
    ctx = ctx1()
    ax = AxisSet(A=16)
    d = place_dm(ctx, np.zeros(16, np.float32), f32, ax.m["1"], ax.m[CL], ax.m[SL], ax.m["A"], 0)
    with pytest.raises(DtypeError, match="f32 is 32 bits and i16 16") as err:
        d.view().bitcast(i16)
    call, level, axis, fix = _parts(err)
    assert call == "bitcast" and level == "Element" and axis == "A" and "32-bit" in fix
    with pytest.raises(DtypeError):
        d.view().bitcast(i8)


# ------------------------------------------------------------------------------------------------- pad values


def _masked(ctx: Context, dtype: type, pad: Any, values: np.ndarray, packet: str = "A # 8") -> Any:
    ax = AxisSet(A=6)
    m = ax.m
    d = place_dm(ctx, values, dtype, m["1"], m[CL], m[SL], m[packet], 0)
    return ax, ctx.main.begin(d.view()).fetch(dtype, m["1"], m[packet], pad_value=pad)


LEFT = "# 2 + A"  # a left pad: masking writes it (case 1, L1903), the VCG's leading valid count cannot skip it


def _reduce_left_padded(ctx: Context, dtype: type, pad: Any, x: np.ndarray, op: Any) -> Any:
    ax, s = _masked(ctx, dtype, pad, x, LEFT)
    m = ax.m
    return (s.collect(m["1"], m[LEFT]).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
            .vector_split(m[f"[{LEFT}] / 4"], m[f"[{LEFT}] % 4"])
            .vector_intra_slice_reduce("A", m["1"], m["1 # 4"], op))


@pytest.mark.parametrize("pad,want", [(PadValue.Zero, 0.0), (PadValue.Min, -np.inf), (PadValue.Max, np.inf),
                                      (PadValue.Custom(-1.0), -1.0)])
def test_masking_pad_values_f32(pad: Any, want: float) -> None:
    ctx = ctx1()
    _, s = _masked(ctx, f32, pad, np.arange(6, dtype=np.float32))
    v, k = s.data.values[0, 0, 0, 0], s.data.known[0, 0, 0, 0]
    assert k.all() and np.array_equal(v[6:], [want, want]) and np.array_equal(v[:6], np.arange(6))
    assert f"pad_value = {want if want != 0 else 0}" in s.reports[-1].config


def test_masking_pad_values_integers() -> None:
    ctx = ctx1()
    for pad, want in ((PadValue.Min, -(2**31)), (PadValue.Max, 2**31 - 1), (PadValue.Custom(-5), -5)):
        _, s = _masked(ctx, i32, pad, np.arange(6, dtype=np.int32))
        assert s.data.values[0, 0, 0, 0, 6:].tolist() == [want, want]
    ax = AxisSet(A=63)
    d = place_dm(ctx, np.zeros(63, np.int8), i8, ax.m["1"], ax.m[CL], ax.m[SL], ax.m["A # 64"], 4096)
    s8 = ctx.main.begin(d.view()).fetch(i8, ax.m["1"], ax.m["A # 64"], pad_value=PadValue.Min)
    assert s8.data.values[0, 0, 0, 0, 63] == -128


def test_pad_value_refusals() -> None:
    ctx = ctx1()
    with pytest.raises(DtypeError, match="not exactly representable in i32") as err:
        _masked(ctx, i32, PadValue.Custom(0.5), np.arange(6, dtype=np.int32))
    call, level, axis, fix = _parts(err)
    assert call == "fetch masking" and level == "Packet" and axis == "A" and fix
    ax = AxisSet(A=6)
    d = place_dm(ctx, np.zeros(6, np.float32), f32, ax.m["1"], ax.m[CL], ax.m[SL], ax.m["A # 8"], 512)
    with pytest.raises(HardwareLimitError, match="no masking stage") as err2:
        ctx.sub.begin(d.view()).fetch(f32, ax.m["1"], ax.m["A # 8"], pad_value=PadValue.Min)
    assert "sub context" in err2.value.call and err2.value.fix
    with pytest.raises(DtypeError, match="takes a PadValue"):
        ctx.main.begin(d.view()).fetch(f32, ax.m["1"], ax.m["A # 8"], pad_value=-1.0)
    with pytest.raises(DtypeError, match="no identity padding"):
        PadValue.identity("AbsMax")


@pytest.mark.parametrize("op,np_fn", [(IntraSliceReduceOpF32.Max, np.max), (IntraSliceReduceOpF32.Min, np.min),
                                      (IntraSliceReduceOpF32.Add, np.sum)])
def test_identity_padding_makes_an_unsupported_vcg_reduce_exact_l5556(op: Any, np_fn: Any) -> None:
    """A reduce over A = 6 left-padded to 8: the VCG's leading valid count cannot exclude the left pad, so the
    result is computed only when the pad holds the reduce's identity (L5544–5565), here written by masking
    with ``PadValue.identity(op)``.  Tolerance: one f32 rounding per step of the 8-lane reduce, 8 · 2⁻²⁴."""
    ctx = ctx1()
    x = (-np.abs(RNG.standard_normal(6)) - 1.0).astype(np.float32)
    r = _reduce_left_padded(ctx, f32, PadValue.identity(op), x, op)
    assert "identity padding" in r.ve.ops[-1]
    got = r.data.values[0, 0, 0, 0, 0]
    assert np.isclose(got, np_fn(x.astype(np.float64)), rtol=8 * 2.0**-24, atol=0)


def test_zero_padding_of_a_max_over_negatives_is_refused() -> None:
    ctx = ctx1()
    x = (-np.abs(RNG.standard_normal(6)) - 1.0).astype(np.float32)
    with pytest.raises(LayoutError, match="do not hold the identity of Max") as err:
        _reduce_left_padded(ctx, f32, PadValue.Zero, x, IntraSliceReduceOpF32.Max)
    assert err.value.axis == "A" and "pad_value" in err.value.fix


def test_integer_identity_padding() -> None:
    ctx = ctx1()
    x = np.array([-5, -9, -2, -100, -3, -7], np.int32)
    for op, want in ((IntraSliceReduceOpI32.Max, -2), (IntraSliceReduceOpI32.Min, -100),
                     (IntraSliceReduceOpI32.AddSat, int(x.sum()))):
        r = _reduce_left_padded(ctx, i32, PadValue.identity(op), x, op)
        assert r.data.values[0, 0, 0, 0, 0] == want


# the stash and comparisons still work with the log in the same pass
def test_log_with_stash_in_one_pass() -> None:
    ctx = ctx1()
    s, log, x = _log_stream(ctx, np.array([8, 0, 8, 0], np.int32))
    out = (s.vector_intra_slice_branch(BranchMode.Vrf(log)).vector_stash()
           .vector_fxp(FxpBinaryOp.AddFxp, VeBranchOperand.group(Stash, GroupId.One)).vector_final())
    want = x.astype(np.int64)
    want[0::2] *= 2
    assert np.array_equal(logical(out, "T L"), want.astype(np.int32))


def test_operand_read_is_single_stream_only() -> None:
    """Two-group mode has no carried operand (one register per lane, L8716; pair operands are per group)."""
    ctx = ctx1()
    ax = AxisSet(A=512, I=2)
    s = collect(ctx, layout(ax, i32, "1", CL, "A / 2", "I", "A % 2 # 8"), rand_i32(RNG, (512, 2)), "A I")
    p = s.vector_init().vector_intra_slice_unzip("I", ax.m["1 # 2"], ax.m["1"])
    with pytest.raises(TypestateError, match="unavailable in two-group mode") as err:
        p.vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=0), ())
    assert err.value.call == "vector_fxp" and err.value.fix
    with pytest.raises(TypestateError, match="not available"):
        p.vector_write_operand(WriteOperand(branch=0))  # type: ignore[attr-defined]


def test_bitcast_hbm_view_moves_the_bits_by_dma_and_costs_nothing() -> None:
    """An HBM view read as another type moves its bytes unchanged (the DMA takes the view's dtype); the bitcast
    itself is metadata: no operation on the schedule."""
    from visa import HostTensor

    ctx = ctx1()
    ax = AxisSet(A=64)
    m = ax.m
    x = RNG.standard_normal(64).astype(np.float32)
    hbm = HostTensor.from_numpy(x, f32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    ops = len(ctx.schedule.ops)
    v = hbm.view().bitcast(i32)
    assert len(ctx.schedule.ops) == ops
    dm = v.to_dm(m[CL], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    assert dm.dtype is i32 and np.array_equal(dm.logical("A"), x.view(np.int32))


def test_pad_value_costs_what_zero_padding_costs() -> None:
    ctx = ctx1()
    _, zero = _masked(ctx, f32, PadValue.Zero, np.arange(6, dtype=np.float32))
    ctx2 = ctx1()
    _, low = _masked(ctx2, f32, PadValue.Min, np.arange(6, dtype=np.float32))
    assert zero.reports[-1].cycles == low.reports[-1].cycles == 1


def test_filter_ids_are_execution_ids() -> None:
    ctx = ctx1()
    ax = AxisSet(T=4, L=8)
    b = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), rand_i32(RNG, (4, 8)), "T L").vector_init()
         .vector_intra_slice_branch(BranchMode.Unconditional))
    with pytest.raises(LayoutError, match="ExecutionIds are 0..15, got 16") as err:
        b.vector_filter(ValidBranchIds.of(3, 16))
    assert err.value.call == "vector_filter" and err.value.fix
    with pytest.raises(WrongTypeError, match="parameter ids must be a ValidBranchIds"):
        b.vector_filter(3.5)  # type: ignore[arg-type]


def test_exponential_moving_average_with_a_ternary_read() -> None:
    """``y[t] = a · y[t-1] + x[t]``: ``FmaF`` with ``Mode120`` (operand0 · operand1 + stream) and the register as
    operand0; fused, so each step is the exact a·y + x rounded once (checked with rationals)."""
    from fractions import Fraction

    from visa.engines.vector import FpTernaryOp, TernaryArgMode

    from .helpers import nearest_f32

    ctx = ctx1()
    ax = AxisSet(T=8, L=8)
    m = ax.m
    ids = np.ones(8, np.int32)
    ids[0] = 0
    log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T"], 0)
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    a = 0.7
    out = (collect(ctx, layout(ax, f32, "1", CL, SL, "T", "L"), x, "T L").vector_init()
           .vector_intra_slice_branch(BranchMode.Vrf(log)).vector_split(m["T, L / 4"], m["L % 4"])
           .vector_fp_ternary_with_mode(FpTernaryOp.FmaF, TernaryArgMode.Mode120, (OperandRead(branch=1), a))
           .vector_write_operand(WriteOperand(branch=(0, 1))).vector_concat(m["T"], m["L"]).vector_final())
    want = x.copy()
    fa = Fraction(float(np.float32(a)))
    for t in range(1, 8):
        want[t] = [nearest_f32(fa * Fraction(float(p)) + Fraction(float(q))) for p, q in zip(want[t - 1], x[t],
                                                                                             strict=True)]
    assert np.array_equal(logical(out, "T L"), want)


# ----------------------------------------------------------------------------------- properties (brute force)

SCALAR_NAMES = tuple(SCALARS)
_IDS = st.lists(st.integers(0, 15), min_size=32, max_size=32)
_SETS = st.sets(st.integers(0, 15), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(ids=_IDS, keep=_SETS, seed=st.integers(0, 2**16))
def test_filter_packing_matches_brute_force(ids: list[int], keep: set[int], seed: int) -> None:
    """Every packet: the elements with a kept id, in lane order, at lanes 0.. (L2324); the rest not produced."""
    ctx = ctx1()
    ax = AxisSet(T=4, E=8)
    m = ax.m
    idarr = np.array(ids, np.int32).reshape(4, 8)
    x = np.random.default_rng(seed).integers(-1000, 1000, (4, 8)).astype(np.int32)
    log = place_vrf(ctx, idarr, i32, m["1"], m[CL], m[SL], m["T, E"], 0)
    out = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "E"), x, "T E").vector_init()
           .vector_intra_slice_branch(BranchMode.Vrf(log)).vector_filter(ValidBranchIds.of(*keep)).vector_final())
    v, k = out.data.values[0, 0, 0], out.data.known[0, 0, 0]
    for t in range(4):
        row = [int(x[t, e]) for e in range(8) if int(idarr[t, e]) in keep]
        assert v[t, :len(row)].tolist() == row and k[t, :len(row)].all() and not k[t, len(row):].any()


@settings(max_examples=25, deadline=None)
@given(ids=st.lists(st.integers(0, 3), min_size=8, max_size=8), read=st.sets(st.integers(0, 3), min_size=1),
       write=st.sets(st.integers(0, 3), min_size=1), seed=st.integers(0, 2**16), before=st.booleans())
def test_carried_operand_matches_a_sequential_model(ids: list[int], read: set[int], write: set[int], seed: int,
                                                     before: bool) -> None:
    """Per lane, time step by time step, in chain order: read (op with the register), then write — or, with
    ``before``, write then read (L8708–8721).  An unwritten register reads as poison."""
    ctx = ctx1()
    ax = AxisSet(T=8, L=8)
    m = ax.m
    x = np.random.default_rng(seed).integers(-1000, 1000, (8, 8)).astype(np.int32)
    log = place_vrf(ctx, np.array(ids, np.int32), i32, m["1"], m[CL], m[SL], m["T"], 0)
    b = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), x, "T L").vector_init()
         .vector_intra_slice_branch(BranchMode.Vrf(log)))
    if before:
        s = b.vector_write_operand(WriteOperand(branch=tuple(write))).vector_fxp(
            FxpBinaryOp.SubFxp, OperandRead(branch=tuple(read)))
    else:
        s = b.vector_fxp(FxpBinaryOp.SubFxp, OperandRead(branch=tuple(read))).vector_write_operand(
            WriteOperand(branch=tuple(write)))
    out = s.vector_final()
    reg: list[int | None] = [None] * 8
    for t in range(8):
        for lane in range(8):
            val: int | None = int(x[t, lane])
            if before and ids[t] in write:
                reg[lane] = val
            if ids[t] in read:
                val = None if reg[lane] is None or val is None else val - reg[lane]
            if not before and ids[t] in write:
                reg[lane] = val
            got_k = bool(out.data.known[0, 0, 0, t, lane])
            assert got_k == (val is not None)
            if val is not None:
                assert int(out.data.values[0, 0, 0, t, lane]) == val


@given(a=st.sampled_from(sorted(SCALAR_NAMES)), b=st.sampled_from(sorted(SCALAR_NAMES)))
@settings(max_examples=40, deadline=None)
def test_bitcast_is_accepted_exactly_for_equal_widths(a: str, b: str) -> None:
    from visa import dtypes as dt
    from visa.tensors.handles import check_bitcast

    da, db = dt.scalar(a), dt.scalar(b)
    same = da.size_bits == db.size_bits and da.image_bits == db.image_bits
    if same:
        check_bitcast(da, db)
    else:
        with pytest.raises(DtypeError, match="same width"):
            check_bitcast(da, db)


def test_elementwise_steps_between_the_read_and_the_write() -> None:
    """The loop read → ops → write closes per time step: ``y[t] = (y[t-1] + x[t]) << 1`` (i32) and
    ``y[t] = 0.5 · (y[t-1] + x[t])`` (f32, each op rounded once, exact in binary32 here: halving is exact)."""
    from visa.engines.vector import ClipBinaryOpF32, FpMulAlu

    ctx = ctx1()
    ax = AxisSet(T=8, L=8)
    m = ax.m
    ids = np.ones(8, np.int32)
    ids[0] = 0
    log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T"], 0)
    x = RNG.integers(-50, 50, (8, 8)).astype(np.int32)
    out = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), x, "T L").vector_init()
           .vector_intra_slice_branch(BranchMode.Vrf(log))
           .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(1))
           .vector_fxp(FxpBinaryOp.LeftShift, 1)
           .vector_write_operand(WriteOperand(0, 1)).vector_final())
    want = np.zeros((8, 8), np.int64)
    for t in range(8):
        want[t] = (x[t] if t == 0 else want[t - 1] + x[t]) * 2
    assert np.array_equal(logical(out, "T L"), want.astype(np.int32))
    xf = RNG.standard_normal((8, 8)).astype(np.float32)
    outf = (collect(ctx, layout(ax, f32, "1", CL, SL, "T", "L"), xf, "T L").vector_init()
            .vector_intra_slice_branch(BranchMode.Vrf(log))
            .vector_split(m["T, L / 4"], m["L % 4"])
            .vector_fp_binary(FpBinaryOp.AddF, OperandRead(1))
            .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 0.5)
            .vector_write_operand(WriteOperand(0, 1)).vector_concat(m["T"], m["L"])
            .vector_clip(ClipBinaryOpF32.Max, -1e30).vector_final())
    wf = np.zeros((8, 8), np.float32)
    for t in range(8):
        wf[t] = (xf[t] if t == 0 else (wf[t - 1] + xf[t])) * np.float32(0.5)
    assert np.array_equal(logical(outf, "T L"), wf)


def test_between_the_read_and_the_write_refusals() -> None:
    from visa.engines.vector import ClipBinaryOpF32

    ctx = ctx1()
    ax = AxisSet(T=4, L=8)
    m = ax.m

    def read() -> Any:
        return (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), rand_i32(RNG, (4, 8)), "T L").vector_init()
                .vector_intra_slice_branch(BranchMode.Unconditional)
                .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(0)))

    with pytest.raises(TypestateError, match="not .vector_stash"):
        read().vector_stash()
    with pytest.raises(TypestateError, match="not .vector_split"):
        read().vector_split(m["T, L / 4"], m["L % 4"])
    with pytest.raises(TypestateError, match="one OperandRead per write"):
        read().vector_fxp(FxpBinaryOp.MulInt, OperandRead(0))
    f = read().vector_fxp_to_fp(31).vector_clip(ClipBinaryOpF32.Max, 0.0)
    with pytest.raises(DtypeError, match="works on i32, but the stream written is f32") as err:
        f.vector_write_operand(WriteOperand(0))
    assert err.value.call == "vector_write_operand" and err.value.fix


def test_a_packet_keeping_fewer_than_k_leaves_the_rest_unwritten() -> None:
    """Valid-count packing writes the leading ``count`` lanes (L2324): into a new tensor the rest of the packet's K
    is never written (reading it is a ``PoisonError``); through ``commit_view`` it keeps its old value."""
    ctx = ctx1()
    x = np.array([[1, 2, 3, 4, 6, 7, 8, 10]] * 4, np.int32)  # ids x % 4: 1, 2, 3, 0, 2, 3, 0, 2
    out, _ = _filtered(ctx, x, (1,))  # one kept per packet (the 1), K = 2
    ax = AxisSet(T=4, E=8, K=2)
    m = ax.m
    dm = out.commit(m["T, K"], 1 << 12)
    with pytest.raises(PoisonError):
        dm.logical("T K")
    out2, _ = _filtered(ctx, x, (1,))
    dst = place_dm(ctx, np.full((4, 2), -9, np.int32), i32, m["1"], m[CL], m[SL], m["T, K"], 1 << 13, axes="T K")
    out2.commit_view(dst.view())
    assert dst.logical("T K").tolist() == [[1, -9]] * 4


@pytest.mark.parametrize("name,low,high", [("f32", -np.inf, np.inf), ("bf16", -np.inf, np.inf),
                                           ("f8e5m2", -np.inf, np.inf), ("f8e4m3", -448.0, 448.0),
                                           ("i4", -8, 7), ("i8", -128, 127), ("i16", -32768, 32767)])
def test_min_max_pad_values_per_type(name: str, low: float, high: float) -> None:
    """Min/Max are the fetched type's: ±inf where the type has them (f8e4m3 has none: its finite extremes)."""
    from visa import dtypes as dt
    from visa.engines.fetch import plan_pad_value

    d = dt.scalar(name)
    assert plan_pad_value(PadValue.Min, d, "main") == low and plan_pad_value(PadValue.Max, d, "main") == high
    assert plan_pad_value(PadValue.Zero, d, "main") == 0


def test_the_carried_register_survives_into_the_next_pass_l8708() -> None:
    """A cumsum over 16 steps run as two passes of 8 (issue 27 item 5): the operand register the first pass left
    is what the second pass's first read sees, so the second pass continues the sum (its logger has no id 0)."""
    ctx = ctx1()
    ax = AxisSet(T=8, L=8)
    m = ax.m
    x = rand_i32(RNG, (16, 8), extremes=False) % 1000
    halves = []
    for k, ids in enumerate((np.array([0] + [1] * 7, np.int32), np.array([1] * 7 + [2], np.int32))):
        log = place_vrf(ctx, ids, i32, m["1"], m[CL], m[SL], m["T"], 64 * k)
        out = (collect(ctx, layout(ax, i32, "1", CL, SL, "T", "L"), x[8 * k: 8 * k + 8], "T L").vector_init()
               .vector_intra_slice_branch(BranchMode.Vrf(log))
               .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
               .vector_write_operand(WriteOperand(branch=(0, 1))).vector_final())
        halves.append(logical(out, "T L"))
    assert np.array_equal(np.concatenate(halves), np.cumsum(x.astype(np.int64), axis=0).astype(np.int32))
    # what the context keeps: an i32 register, one value per Way8 lane of each slice, known
    saved = ctx.memory.operand_registers["main"]
    assert saved[0] == "i32" and saved[1].shape[-1] == 8 and bool(saved[2][0, 0, 0].all())
