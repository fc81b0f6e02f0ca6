"""Operands, branches and two-group mode (manual L4793–4802, L5052–5249; digest §12 T13, T15–T19, §12.1;
errors E1 in pair mode, E5, E8, E17, E18)."""

from __future__ import annotations

import numpy as np
import pytest

from visa import AxisSet, Context, f32, i32
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpMulAlu,
    FpUnaryOp,
    FxpBinaryOp,
    GroupId,
    InputCmp,
    LogicBinaryOpI32,
    Stash,
    VeBranchOperand,
    VeRhs,
)
from visa.errors import DtypeError, LayoutError, PoisonError, ResourceError, TypestateError, UnsupportedFeatureError
from visa.testing import place_vrf

from .helpers import collect, layout, logical, rand_f32, rand_i32, same_f32

RNG = np.random.default_rng(11)


# ------------------------------------------------------------------------------------------- VRF


def test_t13_vrf_operand_broadcasts_over_time_l5063() -> None:
    """T13 (L5063–5081): x[a, b] + v[a], the VRF [A / 2]; [A % 2 # 8] broadcast over Time B."""
    ctx = Context.acquire()
    ax = AxisSet(A=512, B=256)
    m = ax.m
    lay = layout(ax, i32, "1", "1 # 2", "A / 2", "B", "A % 2 # 8")
    x = rand_i32(RNG, (512, 256))
    v = rand_i32(RNG, 512)
    vrf = place_vrf(ctx, v, i32, m["1"], m["1 # 2"], m["A / 2"], m["A % 2 # 8"], 0)
    out = (collect(ctx, lay, x, "A B").vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, VeRhs.vrf(vrf)).vector_final())
    assert np.array_equal(logical(out, "A B"), (x.astype(np.int64) + v[:, None]).astype(np.int32))
    assert vrf in out.inputs


def test_vrf_operand_relaid_to_the_stream_mapping() -> None:
    """A VRF holding the slice's elements in another order is read at the stream's mapping (L5058)."""
    ctx = Context.acquire()
    ax = AxisSet(A=2048)
    m = ax.m
    lay = layout(ax, i32, "1", "1 # 2", "A / 8 # 256", "1", "A % 8")
    x, v = rand_i32(RNG, 2048), rand_i32(RNG, 2048)
    vrf = place_vrf(ctx, v, i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 2, A % 8 / 2"], 64)
    out = (collect(ctx, lay, x).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.MulInt, vrf).vector_final())
    assert np.array_equal(logical(out), (x.astype(np.int64) * v).astype(np.int32))


def test_vrf_in_another_slice_is_refused() -> None:
    ctx = Context.acquire()
    ax = AxisSet(A=2048)
    m = ax.m
    lay = layout(ax, i32, "1", "1 # 2", "A / 8 # 256", "1", "A % 8")
    vrf = place_vrf(ctx, rand_i32(RNG, 2048), i32, m["1"], m["1 # 2"], m["A % 256"], m["A / 256"], 0)
    b = collect(ctx, lay, rand_i32(RNG, 2048)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    with pytest.raises(LayoutError, match="reads only its own") as err:
        b.vector_fxp(FxpBinaryOp.AddFxp, vrf)
    assert err.value.level == "Slice" and "A" in (err.value.axis or "")


def test_vrf_operand_consumes_the_alu_l4750() -> None:
    """Regression: an op whose operand is a VRF tensor claims its ALU like any other (L4750, L5205); the claim
    used to be dropped, so a second op on that ALU was accepted and the pass latency left it out."""
    ctx = Context.acquire()
    ax = AxisSet(A=2048)
    m = ax.m
    lay = layout(ax, i32, "1", "1 # 2", "A / 8 # 256", "1", "A % 8")
    vrf = place_vrf(ctx, rand_i32(RNG, 2048), i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 0)
    b = collect(ctx, lay, rand_i32(RNG, 2048)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    s = b.vector_fxp(FxpBinaryOp.AddFxp, vrf)
    assert s.ve.alu_order == ("FxpAdd",)
    with pytest.raises(ResourceError, match="FxpAdd is already in use"):
        s.vector_fxp(FxpBinaryOp.SubFxp, 1)
    out = (collect(ctx, lay, rand_i32(RNG, 2048)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, VeRhs.vrf(vrf)).vector_final())
    assert out.reports[-1].latency == ctx.hw.vector.alu_latency_cycles


def test_vrf_operand_keeps_the_stash_consumed_l4984() -> None:
    """Regression: a VRF operand read after a Stash operand (branch operands of one op) keeps the stash
    consumed; a second Stash read is refused (L4984)."""
    ctx = Context.acquire()
    ax = AxisSet(A=2048)
    m = ax.m
    lay = layout(ax, i32, "1", "1 # 2", "A / 8 # 256", "1", "A % 8")
    vrf = place_vrf(ctx, rand_i32(RNG, 2048), i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 0)
    b = (collect(ctx, lay, rand_i32(RNG, 2048)).vector_init().vector_intra_slice_branch(BranchMode.AxisToggle("A"))
         .vector_stash())
    s = b.vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(Stash, GroupId.Zero),
                                          VeBranchOperand.group(vrf, GroupId.One)])
    with pytest.raises(TypestateError, match="already consumed"):
        s.vector_clip(ClipBinaryOpI32.Max, Stash)


def test_pair_vrf_operand_consumes_the_alu_l5205() -> None:
    """Regression: in two-group mode too, a VRF operand's op consumes its ALU for the pair (L5205)."""
    ctx = Context.acquire()
    p, ax = pair(ctx, i32, rand_i32(RNG, (512, 2)))
    m = ax.m
    vrf = place_vrf(ctx, rand_i32(RNG, 512), i32, m["1"], m["1 # 2"], m["A / 2"], m["A % 2 # 8"], 0)
    q = p.vector_fxp(FxpBinaryOp.AddFxp, vrf, ())  # type: ignore[attr-defined]
    with pytest.raises(ResourceError, match="FxpAdd is already in use"):
        q.vector_fxp_zip(FxpBinaryOp.SubFxp)


def test_e17_vrf_not_loaded_and_wrong_dtype() -> None:
    from visa.tensors.handles import VrfTensor

    ctx = Context.acquire()
    ax = AxisSet(A=2048)
    m = ax.m
    lay = layout(ax, i32, "1", "1 # 2", "A / 8 # 256", "1", "A % 8")
    empty = VrfTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 0)
    b = collect(ctx, lay, rand_i32(RNG, 2048)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    with pytest.raises(PoisonError, match="never loaded"):
        b.vector_fxp(FxpBinaryOp.AddFxp, empty)
    fv = place_vrf(ctx, rand_f32(RNG, 2048), f32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 4096)
    b2 = collect(ctx, lay, rand_i32(RNG, 2048)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    with pytest.raises(DtypeError, match="VRF operand is f32"):
        b2.vector_fxp(FxpBinaryOp.AddFxp, fv)


def test_e17_vrf_capacity_8kb_per_slice_l1090() -> None:
    from visa.errors import VisaError
    from visa.tensors.handles import VrfTensor

    ctx = Context.acquire()
    ax = AxisSet(E=4096)
    with pytest.raises(VisaError):
        VrfTensor(ctx, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["E"], 0)  # 16 KB > 8 KB


# -------------------------------------------------------------------------------------- branches


def stream8(ctx: Context, dtype: type, x: np.ndarray) -> object:
    ax = AxisSet(I=4, A=8)
    lay = layout(ax, dtype, "1", "1", "1", "I", "A")
    return collect(ctx, lay, x, "I A").vector_init()


def test_comparison_branch_ids_l4801() -> None:
    """§12.1: cmps [Less 0, Equal 0, Greater 100, Greater 0] give ids 1, 2, 12 for x = -5, 0, 150."""
    ctx = Context.acquire()
    x = np.zeros((4, 8), np.int32)
    x[0, :3] = [-5, 0, 150]
    c = InputCmp.I32
    b = stream8(ctx, i32, x).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.Comparison([c.Less(0), c.Equal(0), c.Greater(100), c.Greater(0)]))
    assert b.ve.exec_id[0, 0, 0, 0, :3].tolist() == [1, 2, 12]


def test_comparison_unsigned_and_type_mismatch() -> None:
    ctx = Context.acquire()
    x = np.full((4, 8), -1, np.int32)
    c = InputCmp.I32
    b = stream8(ctx, i32, x).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.Comparison([c.GreaterUnsigned(5), c.LessUnsigned(5), c.True_(), c.False_()]))
    assert b.ve.exec_id[0, 0, 0, 0, 0] == 0b0101
    with pytest.raises(DtypeError, match="Type mismatch"):
        stream8(ctx, f32, x.astype(np.float32)).vector_intra_slice_branch(  # type: ignore[attr-defined]
            BranchMode.Comparison([c.Less(0)]))
    y = np.array([[np.nan, 1.0, -1.0, 0, 0, 0, 0, 0]] * 4, np.float32)
    b2 = stream8(ctx, f32, y).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.Comparison([InputCmp.F32.Less(0.5), InputCmp.F32.Greater(0.5)]))
    assert b2.ve.exec_id[0, 0, 0, 0, :3].tolist() == [0, 2, 1]


def test_comparison_boundary_has_the_stream_type_l4801() -> None:
    """Regression: an i32 comparison with a fractional boundary was truncated (``Less(1.5)`` compared with 1)."""
    ctx = Context.acquire()
    with pytest.raises(DtypeError, match="compares with an integer") as err:
        stream8(ctx, i32, rand_i32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
            BranchMode.Comparison([InputCmp.I32.Less(1.5)]))  # type: ignore[arg-type]
    assert err.value.call == "vector_intra_slice_branch" and err.value.fix
    b = stream8(ctx, f32, rand_f32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.Comparison([InputCmp.F32.Less(1)]))
    assert b.ve.exec_id is not None


def test_axis_toggle_l4799() -> None:
    """§12.1: AxisToggle{I} gives exec ids 0 / 8 / 0 / 8 for I = 0..3 (group = bit 3)."""
    ctx = Context.acquire()
    b = stream8(ctx, i32, rand_i32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.AxisToggle("I"))
    assert b.ve.exec_id[0, 0, 0, :, 0].tolist() == [0, 8, 0, 8]


def test_branch_operands_first_match_wins_l5061() -> None:
    """§12.1: AxisToggle{I} + [group(100, Zero), group(200, One)] → even I: x + 100, odd I: x + 200."""
    ctx = Context.acquire()
    x = RNG.integers(-1000, 1000, (4, 8)).astype(np.int32)
    b = stream8(ctx, i32, x).vector_intra_slice_branch(BranchMode.AxisToggle("I"))  # type: ignore[attr-defined]
    out = b.vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(100, GroupId.Zero),
                                            VeBranchOperand.group(200, GroupId.One)]).vector_final()
    want = x + np.array([100, 200, 100, 200])[:, None]
    assert np.array_equal(logical(out, "I A"), want)
    # only group One: even rows pass through unchanged
    b2 = stream8(ctx, i32, x).vector_intra_slice_branch(BranchMode.AxisToggle("I"))  # type: ignore[attr-defined]
    out2 = b2.vector_fxp(FxpBinaryOp.AddFxp, VeBranchOperand.group(100, GroupId.One)).vector_final()
    assert np.array_equal(logical(out2, "I A"), x + np.array([0, 100, 0, 100])[:, None])
    # first match wins: group(1, One) before always(1000)
    b3 = stream8(ctx, i32, x).vector_intra_slice_branch(BranchMode.AxisToggle("I"))  # type: ignore[attr-defined]
    out3 = b3.vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(1, GroupId.One),
                                             VeBranchOperand.always(1000)]).vector_final()
    assert np.array_equal(logical(out3, "I A"), x + np.array([1000, 1, 1000, 1])[:, None])


def test_e18_branch_operand_limits() -> None:
    ctx = Context.acquire()
    x = rand_i32(RNG, (4, 8))
    b = stream8(ctx, i32, x).vector_intra_slice_branch(BranchMode.Unconditional)  # type: ignore[attr-defined]
    with pytest.raises(LayoutError, match="Multiple ValidAlways"):
        b.vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.always(1), VeBranchOperand.always(2)])
    b2 = stream8(ctx, i32, x).vector_intra_slice_branch(BranchMode.Unconditional)  # type: ignore[attr-defined]
    with pytest.raises(LayoutError, match="at most 5"):
        b2.vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(k, GroupId.Zero) for k in range(6)])


def test_every_branch_mode_of_the_manual_is_taken_q8() -> None:
    """ValidCount (issue 27) and ``BranchMode.Vrf(ids)`` (issue 13) are taken (test_vector_data.py); a mode the
    Branch stage does not have is refused."""
    ctx = Context.acquire()
    b = stream8(ctx, i32, rand_i32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.ValidCount)
    assert b.ve.exec_id is not None and not b.ve.exec_id.any()  # every lane of a full packet is valid
    with pytest.raises(UnsupportedFeatureError):
        stream8(ctx, i32, rand_i32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
            BranchMode("Bogus"))


def test_unary_ignores_groups_in_single_stream() -> None:
    ctx = Context.acquire()
    ax = AxisSet(I=4, A=4)
    lay = layout(ax, f32, "1", "1", "1", "I", "A # 8")
    x = np.clip(rand_f32(RNG, (4, 4), extremes=False), -50, 50)
    out = (collect(ctx, lay, x, "I A").vector_init().vector_intra_slice_branch(BranchMode.AxisToggle("I"))
           .vector_trim_way4(ax.m["A"]).vector_fp_unary(FpUnaryOp.Exp).vector_pad_way8(ax.m["A # 8"]).vector_final())
    assert np.allclose(logical(out, "I A"), np.exp(x), rtol=1e-6)


# -------------------------------------------------------------------------------------- two groups


def pair(ctx: Context, dtype: type, x: np.ndarray) -> object:
    """The manual's two-group input: [A / 2]; [I]; [A % 2 # 8] with A = 512, I = 2 (L5136–5249)."""
    ax = AxisSet(A=512, I=2)
    lay = layout(ax, dtype, "1", "1 # 2", "A / 2", "I", "A % 2 # 8")
    s = collect(ctx, lay, x, "A I").vector_init()
    return s.vector_intra_slice_unzip("I", ax.m["1 # 2"], ax.m["1"]), ax


def test_t15_pair_sub_reverse_l5136() -> None:
    ctx = Context.acquire()
    x = rand_f32(RNG, (512, 2), extremes=False)
    p, ax = pair(ctx, f32, x)
    out = (p.vector_trim_way4(ax.m["A % 2 # 4"])  # type: ignore[attr-defined]
           .vector_fp_zip_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10).vector_pad_way8(ax.m["A % 2 # 8"])
           .vector_final())
    assert out.layout.time == ax.m["1"]
    assert same_f32(logical(out, "A"), x[:, 1] - x[:, 0])


def test_t16_pair_add_l5168() -> None:
    ctx = Context.acquire()
    x = rand_i32(RNG, (512, 2))
    p, _ = pair(ctx, i32, x)
    out = p.vector_clip_zip(ClipBinaryOpI32.AddFxp).vector_final()  # type: ignore[attr-defined]
    assert np.array_equal(logical(out, "A"), (x[:, 0].astype(np.int64) + x[:, 1]).astype(np.int32))


def test_t17_pair_one_side_l5184() -> None:
    ctx = Context.acquire()
    x = rand_i32(RNG, (512, 2))
    p, _ = pair(ctx, i32, x)
    out = (p.vector_fxp(FxpBinaryOp.MulInt, 10, ())  # type: ignore[attr-defined]
           .vector_clip_zip(ClipBinaryOpI32.AddFxp).vector_final())
    want = ((x[:, 0].astype(np.int64) * 10).astype(np.int32).astype(np.int64) + x[:, 1]).astype(np.int32)
    assert np.array_equal(logical(out, "A"), want)


def test_t18_pair_fp_mul_zip_l5211() -> None:
    ctx = Context.acquire()
    x = rand_f32(RNG, (512, 2), extremes=False)
    p, ax = pair(ctx, f32, x)
    out = (p.vector_trim_way4(ax.m["A % 2 # 4"])  # type: ignore[attr-defined]
           .vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0)).vector_pad_way8(ax.m["A % 2 # 8"]).vector_final())
    assert same_f32(logical(out, "A"), x[:, 0] * x[:, 1])


def test_t19_pair_asymmetric_exp_l5231() -> None:
    ctx = Context.acquire()
    x = np.clip(rand_f32(RNG, (512, 2), extremes=False), -50, 50)
    p, ax = pair(ctx, f32, x)
    out = (p.vector_trim_way4(ax.m["A % 2 # 4"])  # type: ignore[attr-defined]
           .vector_fp_unary(FpUnaryOp.Exp, True, False).vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0))
           .vector_pad_way8(ax.m["A % 2 # 8"]).vector_final())
    want = np.exp(x[:, 0].astype(np.float64)).astype(np.float32) * x[:, 1]
    assert same_f32(logical(out, "A"), want)


def test_pair_alu_is_shared_l5205() -> None:
    """An ALU used by either group is consumed for the pair (L5205)."""
    ctx = Context.acquire()
    p, _ = pair(ctx, i32, rand_i32(RNG, (512, 2)))
    q = p.vector_fxp(FxpBinaryOp.AddFxp, 1, ())  # type: ignore[attr-defined]
    with pytest.raises(ResourceError, match="FxpAdd is already in use"):
        q.vector_fxp(FxpBinaryOp.SubFxp, (), 1)


def test_pair_has_no_stash_filter_or_final_l5202() -> None:
    ctx = Context.acquire()
    p, _ = pair(ctx, i32, rand_i32(RNG, (512, 2)))
    for call in ("vector_stash", "vector_final", "vector_filter", "vector_intra_slice_reduce"):
        with pytest.raises((TypestateError, AttributeError)):
            getattr(p, call)
    z, _ = pair(ctx, i32, rand_i32(RNG, (512, 2)))
    zipped = z.vector_clip_zip(ClipBinaryOpI32.AddFxp)  # type: ignore[attr-defined]
    with pytest.raises(TypestateError, match="two-group"):
        zipped.vector_stash()
    z2, _ = pair(ctx, i32, rand_i32(RNG, (512, 2)))
    with pytest.raises(TypestateError, match="_zip"):
        z2.vector_clip_zip(ClipBinaryOpI32.AddFxp).vector_filter([0])  # type: ignore[attr-defined]


def test_unzip_checks_its_mappings() -> None:
    ctx = Context.acquire()
    ax = AxisSet(A=512, I=2)
    lay = layout(ax, i32, "1", "1 # 2", "A / 2", "I", "A % 2 # 8")
    with pytest.raises(LayoutError, match="SplitTime") as err:
        collect(ctx, lay, rand_i32(RNG, (512, 2)), "A I").vector_init().vector_intra_slice_unzip(
            "I", ax.m["1 # 2"], ax.m["I"])
    assert err.value.level == "Time"
    with pytest.raises(LayoutError, match="not in Time") as err2:
        collect(ctx, lay, rand_i32(RNG, (512, 2)), "A I").vector_init().vector_intra_slice_unzip(
            "A", ax.m["1 # 2"], ax.m["1"])
    assert err2.value.axis == "A"
    # the grouping axis is one axis (a string or a one-axis mapping): a refusal, not a TypeError
    with pytest.raises(LayoutError, match="one-axis mapping") as err3:
        collect(ctx, lay, rand_i32(RNG, (512, 2)), "A I").vector_init().vector_intra_slice_unzip(
            ax.m["I, A"], ax.m["1 # 2"], ax.m["1"])
    assert err3.value.call == "vector_intra_slice_unzip" and err3.value.axis == "A, I"


def test_e23_execution_ids_are_four_bits_l5255() -> None:
    """E23 (L4795, L5255): 4-bit ExecutionIds, at most 4 comparisons (one bit each); a fifth is refused."""
    ctx = Context.acquire()
    c = InputCmp.I32
    with pytest.raises(LayoutError, match="up to 4 comparisons"):
        stream8(ctx, i32, rand_i32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
            BranchMode.Comparison([c.True_()] * 5))
    b = stream8(ctx, i32, rand_i32(RNG, (4, 8))).vector_intra_slice_branch(  # type: ignore[attr-defined]
        BranchMode.Comparison([c.True_()] * 4))
    assert int(b.ve.exec_id.max()) == 15


def test_branch_log_broadcast_over_a_stream_axis_l4802() -> None:
    """``BranchMode.Vrf(ids)`` (L4802) with a branch log that holds one id per key ``T`` and none per row ``Q``
    (a key-padding mask shared by a slice's rows): each element's ExecutionId is the log's value at its own
    ``T``.  The log is read as a strided view in the split shape (Q, T / 8), which the Branch stage took as the
    ids' shape: the first Logic op with per-group constants crashed (numpy could not broadcast the group mask,
    found by ``benchmarks/bench_heldout4``'s masked softmax)."""
    ctx = Context.acquire()
    ax = AxisSet(A=512, Q=2, T=16)
    m = ax.m
    lay = layout(ax, i32, "1", "A / 256", "A % 256", "Q, T / 8", "T % 8")
    x = rand_i32(RNG, (512, 2, 16))
    keep = RNG.integers(0, 2, size=(512, 16)).astype(np.int32)
    log = place_vrf(ctx, np.where(keep == 1, 0, 8).astype(np.int32), i32, m["1"], m["A / 256"], m["A % 256"],
                    m["T"], 0)
    out = (collect(ctx, lay, x, "A Q T").vector_init().vector_intra_slice_branch(BranchMode.Vrf(log))
           .vector_logic(LogicBinaryOpI32.BitAnd, VeBranchOperand.group(0, GroupId.One))
           .vector_fxp(FxpBinaryOp.AddFxp, [VeBranchOperand.group(1, GroupId.Zero),
                                            VeBranchOperand.group(-7, GroupId.One)])
           .vector_final())
    want = np.where(keep[:, None, :] == 1, x.astype(np.int64) + 1, -7).astype(np.int32)
    assert np.array_equal(logical(out, "A Q T"), want)


def test_branch_log_broadcast_with_a_bad_id_names_the_stream_position_l4795() -> None:
    """An id past 15 in a branch log shared by the rows is refused (L4795), naming a stream position (chip,
    cluster, slice, time, lane) as for a log of the stream's own shape."""
    ctx = Context.acquire()
    ax = AxisSet(A=512, Q=2, T=16)
    m = ax.m
    lay = layout(ax, i32, "1", "A / 256", "A % 256", "Q, T / 8", "T % 8")
    ids = np.zeros((512, 16), np.int32)
    ids[300, 13] = 16  # cluster 1, slice 44, key 13: time 1 (row 0), lane 5
    log = place_vrf(ctx, ids, i32, m["1"], m["A / 256"], m["A % 256"], m["T"], 0)
    with pytest.raises(LayoutError, match=r"holds 16 at chip 0, cluster 1, slice 44, time 1, lane 5"):
        collect(ctx, lay, rand_i32(RNG, (512, 2, 16)), "A Q T").vector_init().vector_intra_slice_branch(
            BranchMode.Vrf(log))
