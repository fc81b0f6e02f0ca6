"""The intra-slice pipeline: stage order, lanes, dtypes, ALUs, stash, and the manual's worked chains
(manual L4590–5051, L5250–5273; spec digest §12 T1, T3–T12, T14, T20; errors E1–E9, E13–E16)."""

from __future__ import annotations

import numpy as np
import pytest

from visa import AxisSet, Context, f32, i32
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpMulAlu,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    Stash,
    UnaryArgMode,
)
from visa.errors import DtypeError, LayoutError, ResourceError, TypestateError

from .helpers import I32_MAX, I32_MIN, collect, layout, logical, rand_f32, rand_i32, same_f32

AX = AxisSet(A=512)
M = AX.m
RNG = np.random.default_rng(7)


@pytest.fixture
def ctx() -> Context:
    return Context.acquire()


def hello(ctx: Context, dtype: type = i32, data: np.ndarray | None = None) -> tuple:
    """The manual's running example stream: ``[A / 2]; [1]; [A % 2 # 8]`` with A = 512 (L4657–4677)."""
    lay = layout(AX, dtype, "1", "1 # 2", "A / 2", "1", "A % 2 # 8")
    if data is None:
        data = rand_i32(RNG, 512) if dtype is i32 else rand_f32(RNG, 512)
    return collect(ctx, lay, data), data


def branch(ctx: Context, dtype: type = i32, data: np.ndarray | None = None) -> tuple:
    s, x = hello(ctx, dtype, data)
    return s.vector_init().vector_intra_slice_branch(BranchMode.Unconditional), x


# --------------------------------------------------------------------------------- worked examples


def test_t1_relu_after_contraction_l4590() -> None:
    """T1 (L4590–4606): ReLU ``max(x, 0)`` on an f32 [K]; [M]; [N] stream, mapping unchanged."""
    ctx = Context.acquire()
    ax = AxisSet(M=128, N=8, K=64)
    lay = layout(ax, f32, "1", "1", "K", "M", "N")
    x = rand_f32(RNG, (64, 128, 8))
    out = (collect(ctx, lay, x, "K M N").vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_clip(ClipBinaryOpF32.Max, 0.0).vector_final())
    assert out.layout == lay
    assert same_f32(logical(out, "K M N"), np.fmax(x, np.float32(0.0)))


def test_t3_staged_pipeline_l4657(ctx: Context) -> None:
    """T3 (L4657–4677): round(sigmoid(x + 100)) then ReLU: 1 where x + 100 ≥ 0 (0.5 rounds away), else 0."""
    x = RNG.integers(-1000, 1000, 512).astype(np.int32)
    s, _ = hello(ctx, i32, x)
    out = (s.vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, 100).vector_fxp_to_fp(31).vector_trim_way4(M["A % 2 # 4"])
           .vector_fp_unary(FpUnaryOp.Sigmoid).vector_pad_way8(M["A % 2 # 8"]).vector_fp_to_fxp(31)
           .vector_clip(ClipBinaryOpI32.Max, 0).vector_final())
    assert np.array_equal(logical(out), (x + 100 >= 0).astype(np.int32))
    assert out.layout.packet == M["A % 2 # 8"] and out.dtype is i32


def test_t4_add_constant_wraps_l4755(ctx: Context) -> None:
    b, x = branch(ctx)
    out = b.vector_fxp(FxpBinaryOp.AddFxp, 100).vector_final()
    assert np.array_equal(logical(out), (x.astype(np.int64) + 100).astype(np.int32))


def test_t5_sigmoid_l4774(ctx: Context) -> None:
    b, x = branch(ctx, f32, np.clip(rand_f32(RNG, 512, extremes=False), -80, 80))
    out = b.vector_trim_way4(M["A % 2 # 4"]).vector_fp_unary(FpUnaryOp.Sigmoid).vector_pad_way8(M["A % 2 # 8"])
    got = logical(out.vector_final())
    want = (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    assert np.allclose(got, want, rtol=1e-6, atol=0)


def test_t6_t7_split_concat_round_trip_l4852() -> None:
    """T6/T7 (L4852–4947, Q3 fixed: S = 16): split puts lane // 4 as the new innermost Time factor, lane % 4 in
    the packet; concat reverses it."""
    ctx = Context.acquire()
    ax = AxisSet(S=16, A=8)
    lay = layout(ax, i32, "1", "1 # 2", "S / 4", "S % 4", "A % 8")
    x = rand_i32(RNG, (16, 8))
    b = collect(ctx, lay, x, "S A").vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    n = b.vector_split(ax.m["S % 4, A / 4 % 2"], ax.m["A % 4"])
    assert n.layout.time.size == 8 and n.layout.packet.size == 4
    assert np.array_equal(n.data.values[0, 0, 1, 3], b.data.values[0, 0, 1, 1, 4:])  # time 1, upper half
    assert np.array_equal(logical(n, "S A"), x)
    w = n.vector_concat(ax.m["S % 4"], ax.m["A % 8"])
    assert w.layout.time == ax.m["S % 4"] and np.array_equal(w.data.values, b.data.values)
    assert np.array_equal(logical(w.vector_final(), "S A"), x)


def test_t6_trim_and_t7_pad_are_type_only(ctx: Context) -> None:
    b, x = branch(ctx, f32)
    t = b.vector_trim_way4(M["A % 2 # 4"])
    assert t.layout.time == b.layout.time and t.layout.packet == M["A % 2 # 4"]
    p = t.vector_pad_way8(M["A % 2 # 8"])
    assert not p.data.known[..., 4:].any()
    assert same_f32(logical(p.vector_final()), x)


def test_t8_exp_sqrt_alu_plan_fits_one_pass_l4905(ctx: Context) -> None:
    """T8 (L4905–4906): exp(sqrt(((x+1)·2)·3)) uses FpFma, FpMul0, FpMul1, FpFpu, FpExp once each."""
    x = np.clip(np.abs(rand_f32(RNG, 512, extremes=False)), 0, 1000)
    b, _ = branch(ctx, f32, x)
    out = (b.vector_trim_way4(M["A % 2 # 4"]).vector_fp_binary(FpBinaryOp.AddF, 1.0)
           .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 2.0).vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul1), 3.0)
           .vector_fp_unary(FpUnaryOp.Sqrt).vector_fp_unary(FpUnaryOp.Exp).vector_pad_way8(M["A % 2 # 8"])
           .vector_final())
    x1 = ((x + np.float32(1)) * np.float32(2)) * np.float32(3)
    root = np.sqrt(x1.astype(np.float64)).astype(np.float32)
    want = np.exp(root.astype(np.float64)).astype(np.float32)
    assert same_f32(logical(out), want)
    assert out.reports[-1].latency == 5  # one cycle per ALU (L5274-5277)


def test_t9_tanh_sqrt_same_alu_panics_l4750(ctx: Context) -> None:
    b, _ = branch(ctx, f32)
    s = b.vector_trim_way4(M["A % 2 # 4"]).vector_fp_unary(FpUnaryOp.Sqrt)
    with pytest.raises(ResourceError, match="FpFpu is already in use"):
        s.vector_fp_unary(FpUnaryOp.Tanh)


def test_t10_stash_then_mul_l4991(ctx: Context) -> None:
    """T10 (L4991–5008): stash x, 2x in Way4, widen, max(2x, stash) = max(2x, x)."""
    x = rand_f32(RNG, 512, extremes=False)
    b, _ = branch(ctx, f32, x)
    out = (b.vector_stash().vector_trim_way4(M["A % 2 # 4"]).vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 2.0)
           .vector_pad_way8(M["A % 2 # 8"]).vector_clip(ClipBinaryOpF32.Max, Stash).vector_final())
    assert same_f32(logical(out), np.fmax(x * np.float32(2), x))


def test_t11_stash_fxp_path_l5010(ctx: Context) -> None:
    b, x = branch(ctx)
    out = b.vector_stash().vector_fxp(FxpBinaryOp.AddFxp, 100).vector_clip(ClipBinaryOpI32.Max, Stash).vector_final()
    assert np.array_equal(logical(out), np.maximum((x.astype(np.int64) + 100).astype(np.int32), x))


def test_t12_stash_across_narrow_widen_l5030(ctx: Context) -> None:
    x = np.clip(rand_f32(RNG, 512, extremes=False), -80, 80)
    b, _ = branch(ctx, f32, x)
    out = (b.vector_stash().vector_trim_way4(M["A % 2 # 4"]).vector_fp_unary(FpUnaryOp.Sigmoid)
           .vector_pad_way8(M["A % 2 # 8"]).vector_clip(ClipBinaryOpF32.Max, Stash).vector_final())
    sig = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    assert np.allclose(logical(out), np.fmax(sig, x), rtol=1e-6)


def test_stash_follows_the_mapping_across_split() -> None:
    """The stash is re-laid out to the current mapping (L4981): stash in Way8, read after a split."""
    ctx = Context.acquire()
    ax = AxisSet(A=16)
    lay = layout(ax, f32, "1", "1", "1", "A / 8", "A % 8")
    x = rand_f32(RNG, 16, extremes=False)
    out = (collect(ctx, lay, x).vector_init().vector_intra_slice_branch(BranchMode.Unconditional).vector_stash()
           .vector_split(ax.m["A / 8, A % 8 / 4"], ax.m["A % 4"]).vector_fp_binary(FpBinaryOp.SubF, Stash)
           .vector_concat(ax.m["A / 8"], ax.m["A % 8"]).vector_final())
    assert np.array_equal(logical(out), np.zeros(16, np.float32))


def test_t14_mode10_computes_seven_minus_x_l5120(ctx: Context) -> None:
    b, x = branch(ctx)
    out = b.vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 7).vector_final()
    assert np.array_equal(logical(out), (7 - x.astype(np.int64)).astype(np.int64).astype(np.int32))


@pytest.mark.parametrize("mode,fn", [
    (BinaryArgMode.Mode00, lambda x, o: x - x), (BinaryArgMode.Mode01, lambda x, o: x - o),
    (BinaryArgMode.Mode10, lambda x, o: o - x), (BinaryArgMode.Mode11, lambda x, o: o - o)])
def test_binary_arg_modes_l5094(ctx: Context, mode: BinaryArgMode, fn: object) -> None:
    b, x = branch(ctx, i32, RNG.integers(-1000, 1000, 512).astype(np.int32))
    out = b.vector_fxp_with_mode(FxpBinaryOp.SubFxp, mode, 5).vector_final()
    assert np.array_equal(logical(out), np.broadcast_to(fn(x, 5), x.shape))  # type: ignore[operator]


def test_unary_mode1_reads_the_operand_l5092(ctx: Context) -> None:
    b, _ = branch(ctx, f32)
    out = (b.vector_trim_way4(M["A % 2 # 4"]).vector_fp_unary_with_mode(FpUnaryOp.Exp, UnaryArgMode.Mode1, 0.0)
           .vector_pad_way8(M["A % 2 # 8"]).vector_final())
    assert np.array_equal(logical(out), np.ones(512, np.float32))
    b2, _ = branch(ctx, f32)
    with pytest.raises(TypestateError, match="Mode1"):
        b2.vector_trim_way4(M["A % 2 # 4"]).vector_fp_unary_with_mode(FpUnaryOp.Exp, UnaryArgMode.Mode1)


def test_ternary_fma_and_modes_l4898(ctx: Context) -> None:
    x = rand_f32(RNG, 512, extremes=False)
    b, _ = branch(ctx, f32, x)
    n = b.vector_trim_way4(M["A % 2 # 4"])
    out = n.vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 1.0)).vector_pad_way8(M["A % 2 # 8"]).vector_final()
    want = (x.astype(np.float64) * 2 + 1).astype(np.float32)
    assert same_f32(logical(out), want)
    from visa.engines.vector import TernaryArgMode

    b2, _ = branch(ctx, f32, x)
    out2 = (b2.vector_trim_way4(M["A % 2 # 4"]).vector_fp_ternary_with_mode(FpTernaryOp.FmaF, TernaryArgMode.Mode002,
                                                                            (9.0, 1.0))
            .vector_pad_way8(M["A % 2 # 8"]).vector_final())
    assert same_f32(logical(out2), (x.astype(np.float64) ** 2 + 1).astype(np.float32))
    with pytest.raises(DtypeError, match="operand1"):
        branch(ctx, f32, x)[0].vector_trim_way4(M["A % 2 # 4"]).vector_fp_ternary(FpTernaryOp.FmaF, (2.0, Stash))


def test_fp_div_stage_after_reduce_l4914(ctx: Context) -> None:
    x = rand_f32(RNG, 512, extremes=False)
    b, _ = branch(ctx, f32, x)
    out = (b.vector_trim_way4(M["A % 2 # 4"]).vector_fp_binary(FpBinaryOp.DivF, 3.0)
           .vector_fp_div(FpDivBinaryOp.DivF, 2.0).vector_pad_way8(M["A % 2 # 8"]).vector_final())
    assert same_f32(logical(out), (x / np.float32(3)) / np.float32(2))
    assert "ReduceFpDiv" in dict(out.reports[-1].details)["alus"]


def test_logic_f32_and_i32_l4803(ctx: Context) -> None:
    b, x = branch(ctx, f32)
    out = b.vector_logic(LogicBinaryOpF32.BitAnd, np.float32(-0.0).item() * 0 + 3.0).vector_final()
    mask = np.array([3.0], np.float32).view(np.uint32)[0]
    assert np.array_equal(logical(out).view(np.uint32), x.view(np.uint32) & mask)
    b2, y = branch(ctx)
    out2 = (b2.vector_logic(LogicBinaryOpI32.LeftShift, 3).vector_logic(LogicBinaryOpI32.ArithRightShift, 3)
            .vector_final())
    assert np.array_equal(logical(out2), ((y.astype(np.int64) << 3).astype(np.int32).astype(np.int64) >> 3))


def test_t20_alu_conflict_l5260(ctx: Context) -> None:
    """T20 (L5260–5268): AddFxp, MulInt, SubFxp → "FxpAdd is already in use"; the first two give (x+10)·2."""
    b, x = branch(ctx)
    two = b.vector_fxp(FxpBinaryOp.AddFxp, 10).vector_fxp(FxpBinaryOp.MulInt, 2)
    with pytest.raises(ResourceError, match="FxpAdd is already in use") as err:
        two.vector_fxp(FxpBinaryOp.SubFxp, 5)
    assert err.value.call == "vector_fxp"
    b2, _ = branch(ctx, i32, x)
    out = b2.vector_fxp(FxpBinaryOp.AddFxp, 10).vector_fxp(FxpBinaryOp.MulInt, 2).vector_final()
    assert np.array_equal(logical(out), ((x.astype(np.int64) + 10) * 2).astype(np.int32))


@pytest.mark.parametrize("alu_ops", [
    ("vector_clip", ClipBinaryOpI32.Max, ClipBinaryOpI32.AbsMax),
    ("vector_clip", ClipBinaryOpI32.AddFxp, ClipBinaryOpI32.AddFxpSat),
    ("vector_logic", LogicBinaryOpI32.LogicRightShift, LogicBinaryOpI32.ArithRightShift),
    ("vector_fxp", FxpBinaryOp.MulFxp, FxpBinaryOp.MulInt),
])
def test_e1_each_alu_once_per_pass(ctx: Context, alu_ops: tuple) -> None:
    name, a, b = alu_ops
    s, _ = branch(ctx)
    s = getattr(s, name)(a, 1)
    with pytest.raises(ResourceError, match=f"{a.alu} is already in use"):
        getattr(s, name)(b, 1)


def test_relu_then_clamp_uses_two_clip_alus(ctx: Context) -> None:
    b, x = branch(ctx)
    out = b.vector_clip(ClipBinaryOpI32.Max, 0).vector_clip(ClipBinaryOpI32.Min, 1000).vector_final()
    assert np.array_equal(logical(out), np.clip(x, 0, 1000))


# ------------------------------------------------------------------------------------ typestate


def test_e2_fp_in_way8_is_refused(ctx: Context) -> None:
    b, _ = branch(ctx, f32)
    for call in ("vector_fp_unary", "vector_fp_div", "vector_intra_slice_reduce"):
        with pytest.raises(TypestateError, match="Way4") as err:
            getattr(b, call)
        assert err.value.call == call


def test_e3_way8_ops_in_way4_are_refused(ctx: Context) -> None:
    b, _ = branch(ctx, f32)
    n = b.vector_trim_way4(M["A % 2 # 4"])
    for call in ("vector_clip", "vector_fp_to_fxp", "vector_final", "vector_filter", "vector_inter_slice_reduce"):
        with pytest.raises(TypestateError, match="Way"):
            getattr(n, call)


def test_e4_backwards_and_repeated_single_stages(ctx: Context) -> None:
    b, _ = branch(ctx)
    c = b.vector_clip(ClipBinaryOpI32.Max, 0)
    with pytest.raises(TypestateError, match="never backwards") as err:
        _ = c.vector_fxp
    assert err.value.line == 4730
    f = branch(ctx, f32)[0].vector_trim_way4(M["A % 2 # 4"])
    w = f.vector_pad_way8(M["A % 2 # 8"])
    with pytest.raises(TypestateError):
        _ = w.vector_concat
    with pytest.raises(TypestateError):
        _ = w.vector_trim_way4
    g = branch(ctx, i32)[0].vector_fxp_to_fp(31)
    with pytest.raises(TypestateError):
        _ = g.vector_fxp_to_fp


def test_e5_unzip_only_from_init(ctx: Context) -> None:
    b, _ = branch(ctx)
    with pytest.raises(TypestateError):
        _ = b.vector_intra_slice_unzip


def test_e8_stash_rules(ctx: Context) -> None:
    b, _ = branch(ctx)
    s = b.vector_stash()
    with pytest.raises(TypestateError, match="one slot per pass"):
        s.vector_stash()
    b2, _ = branch(ctx)
    c = b2.vector_fxp_to_fp(31)
    with pytest.raises(TypestateError):
        _ = c.vector_stash  # FxpToFp is not Stashable (L4983)
    b3, _ = branch(ctx)
    with pytest.raises(TypestateError, match="needs a vector_stash"):
        b3.vector_clip(ClipBinaryOpI32.Max, Stash)
    b4, _ = branch(ctx)
    used = b4.vector_stash().vector_clip(ClipBinaryOpI32.Max, Stash)
    with pytest.raises(TypestateError, match="already consumed"):
        used.vector_clip(ClipBinaryOpI32.Min, Stash)
    b5, _ = branch(ctx)
    conv = b5.vector_stash().vector_fxp_to_fp(31)
    with pytest.raises(DtypeError, match="stash holds i32"):
        conv.vector_clip(ClipBinaryOpF32.Max, Stash)


def test_e9_dtype_rules(ctx: Context) -> None:
    b, _ = branch(ctx, f32)
    with pytest.raises(DtypeError, match="Fxp stage works on i32"):
        b.vector_fxp(FxpBinaryOp.AddFxp, 1)
    b2, _ = branch(ctx, i32)
    n = b2.vector_trim_way4(M["A % 2 # 4"])
    with pytest.raises(DtypeError, match="Fp stage works on f32"):
        n.vector_fp_unary(FpUnaryOp.Exp)
    b3, _ = branch(ctx, i32)
    with pytest.raises(DtypeError, match="ClipBinaryOpI32"):
        b3.vector_clip(ClipBinaryOpF32.Max, 0.0)
    b4, _ = branch(ctx, i32)
    with pytest.raises(DtypeError, match="integer constant"):
        b4.vector_fxp(FxpBinaryOp.AddFxp, 1.5)
    b5, _ = branch(ctx, i32)
    with pytest.raises(DtypeError, match="FpToFxp stage works on f32"):
        b5.vector_fp_to_fxp(31)
    b6, _ = branch(ctx, f32)
    with pytest.raises(DtypeError, match="int_width"):
        b6.vector_fp_to_fxp(32)


def test_vector_init_only_i32_f32_l4551() -> None:
    ctx = Context.acquire()
    from visa import bf16

    lay = layout(AX, bf16, "1", "1 # 2", "A / 2", "1", "A % 2 # 16")
    with pytest.raises(DtypeError, match="f32 / i32 only"):
        collect(ctx, lay, np.zeros(512, np.float32)).vector_init()


def test_e13_trim_with_real_upper_lanes_l4851() -> None:
    ctx = Context.acquire()
    lay = layout(AX, i32, "1", "1 # 2", "A / 8 # 256", "1", "A % 8")
    b = collect(ctx, lay, rand_i32(RNG, 512)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    with pytest.raises(LayoutError, match="back 4 lanes of the packet must be dummy") as err:
        b.vector_trim_way4(M["A % 4"])
    assert err.value.level == "Packet" and err.value.axis == "A"


def test_e14_e15_split_concat_pad_mappings_checked(ctx: Context) -> None:
    b, _ = branch(ctx)
    with pytest.raises(LayoutError, match="innermost Time factor") as err:
        b.vector_split(M["1"], M["A % 2 # 4"])
    assert err.value.level == "Time"
    b2, _ = branch(ctx)
    n = b2.vector_split(M["A % 2 # 8 / 4"], M["A % 2 # 4"])
    with pytest.raises(LayoutError, match="upper packet half") as err2:
        n.vector_concat(M["1"], M["A % 2 # 4"])
    assert err2.value.level == "Packet"
    b3, _ = branch(ctx)
    t = b3.vector_trim_way4(M["A % 2 # 4"])
    with pytest.raises(LayoutError, match="pad appends"):
        t.vector_pad_way8(M["A % 2 # 16"])


def test_e16_branch_needs_packet_of_8() -> None:
    ctx = Context.acquire()
    lay = layout(AX, i32, "1", "1 # 2", "A / 4 # 256", "1", "A % 4")
    with pytest.raises(LayoutError, match="Packet of 8") as err:
        collect(ctx, lay, rand_i32(RNG, 512)).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
    assert err.value.level == "Packet"


def test_narrow_and_widen_take_i32_q1(ctx: Context) -> None:
    """Q1: the stage table says f32 for Narrow/Widen (L4739, L4743), the i32 examples narrow i32 (L5414)."""
    b, x = branch(ctx)
    out = b.vector_trim_way4(M["A % 2 # 4"]).vector_pad_way8(M["A % 2 # 8"]).vector_final()
    assert np.array_equal(logical(out), x)


def test_a_stream_value_flows_once(ctx: Context) -> None:
    b, _ = branch(ctx)
    b.vector_fxp(FxpBinaryOp.AddFxp, 1)
    with pytest.raises(TypestateError, match="already consumed"):
        b.vector_fxp(FxpBinaryOp.AddFxp, 1)


def test_commit_is_not_a_vector_stage_method(ctx: Context) -> None:
    b, _ = branch(ctx)
    with pytest.raises(TypestateError):
        _ = b.commit


def test_poison_propagates_and_padding_stays_invalid(ctx: Context) -> None:
    b, x = branch(ctx)
    out = b.vector_fxp(FxpBinaryOp.AddFxpSat, I32_MAX).vector_clip(ClipBinaryOpI32.Min, I32_MIN).vector_final()
    assert not out.data.known[..., 2:].any()
    assert np.array_equal(logical(out), np.full(512, I32_MIN, np.int32))


def test_filter_drops_other_execution_ids(ctx: Context) -> None:
    from visa.engines.vector import GroupId

    ax = AxisSet(A=8, I=4)
    lay = layout(ax, i32, "1", "1", "1", "I", "A")
    x = rand_i32(RNG, (4, 8))
    b = collect(ctx, lay, x, "I A").vector_init().vector_intra_slice_branch(BranchMode.AxisToggle("I"))
    out = b.vector_filter(GroupId.One).vector_final()
    known = out.data.known[0, 0, 0]
    assert known[1::2].all() and not known[::2].any()
