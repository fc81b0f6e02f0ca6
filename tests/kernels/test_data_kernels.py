"""Kernels of issue 13 against numpy: a causal-mask softmax through the branch log (L8090–8099), a cumsum with
the carried operand (L8708–8721) and a TopK with FilterCompaction (L8540–8589).  Every intermediate moves
through the engines (sub-context VRF loads, commits); only the inputs are placed with ``visa.testing``."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from visa import AxisSet, Context, bf16, f32, i16, i32
from visa.engines.vector import (
    BinaryArgMode,
    BranchMode,
    FpBinaryOp,
    FpDivBinaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    GroupId,
    InputCmp,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    OperandRead,
    ValidBranchIds,
    VeBranchOperand,
    WriteOperand,
)
from visa.testing import place_dm

RNG = np.random.default_rng(2026)
CL = "1 # 2"
NEG_INF_BITS = float(np.array([0xFF800000], np.uint32).view(np.float32)[0])


def ctx1() -> Context:
    ctx = Context.acquire()
    ctx.num_chips = 1
    return ctx


def to_vrf(ctx: Context, dm: Any, dtype: type, time: Any, packet: Any, element: Any, address: int) -> Any:
    """The sub context loads a DM tensor into each slice's VRF (Fetch → Collect → to_vrf, L278–285)."""
    return ctx.sub.begin(dm.view()).fetch(dtype, time, packet).collect(time, packet).to_vrf(element, address)


# --------------------------------------------------------------------------------------------- softmax


def test_causal_mask_softmax_through_the_branch_log_l8090() -> None:
    """``softmax(where(j <= i, s, -inf))`` over j, per head h (one head per slice), s_in = 8.

    The mask is written to the branch log: an i32 VRF tensor holding ExecutionId 8 (group One) where j > i
    (L8090–8099).  Three main passes read it: row max, row sum of exp(s - max), and exp(s - max) / sum; the row
    results reach the VRF through sub-context passes.  Masked elements become -inf with two Logic ops on the
    group (bits AND 0, OR -inf's bits).  Tolerance (float path): exp is rounded once, the subtraction once,
    the 8-term sum once per step and the division once, each within 2⁻²⁴ relative, and exp amplifies the
    subtraction's error by at most |s - max| ≤ 8: |err| ≤ (8 + 8 + 3) · 2⁻²⁴ ≈ 1.1e-6 relative.
    """
    ctx = ctx1()
    ax = AxisSet(h=4, i=8, j=8)
    m = ax.m
    chip, sl = m["1"], m["h # 256"]
    scores = (RNG.standard_normal((4, 8, 8)) * 2).astype(np.float32)
    causal = np.tril(np.ones((8, 8), bool))
    s_dm = place_dm(ctx, scores, f32, chip, m[CL], sl, m["i, j"], 0, axes="h i j")
    ids = np.broadcast_to(np.where(causal, 0, 8).astype(np.int32), (4, 8, 8))
    ids_dm = place_dm(ctx, ids, i32, chip, m[CL], sl, m["i, j"], 1 << 10, axes="h i j")
    log = to_vrf(ctx, ids_dm, i32, m["i"], m["j"], m["i, j"], 0)

    def masked() -> Any:
        return (ctx.main.begin(s_dm.view()).fetch(f32, m["i"], m["j"]).collect(m["i"], m["j"]).vector_init()
                .vector_intra_slice_branch(BranchMode.Vrf(log))
                .vector_logic(LogicBinaryOpF32.BitAnd, VeBranchOperand.group(0.0, GroupId.One))
                .vector_logic(LogicBinaryOpF32.BitOr, VeBranchOperand.group(NEG_INF_BITS, GroupId.One))
                .vector_split(m["i, j / 4"], m["j % 4"]))

    def row_to_vrf(stream: Any, address: int, vrf_address: int) -> Any:
        out = stream.vector_pad_way8(m["1 # 8"]).vector_final().commit(m["i, 1 # 2"], address)
        return to_vrf(ctx, out, f32, m["i / 4"], m["i % 4, 1 # 2"], m["i, 1 # 2"], vrf_address)

    row_max = row_to_vrf(masked().vector_intra_slice_reduce("j", m["i"], m["1 # 4"], IntraSliceReduceOpF32.Max),
                         1 << 11, 1 << 10)
    row_sum = row_to_vrf(masked().vector_fp_binary(FpBinaryOp.SubF, row_max).vector_fp_unary(FpUnaryOp.Exp)
                         .vector_intra_slice_reduce("j", m["i"], m["1 # 4"], IntraSliceReduceOpF32.Add),
                         1 << 12, 1 << 11)
    out = (masked().vector_fp_binary(FpBinaryOp.SubF, row_max).vector_fp_unary(FpUnaryOp.Exp)
           .vector_fp_div(FpDivBinaryOp.DivF, row_sum).vector_concat(m["i"], m["j"]).vector_final()
           .commit(m["i, j"], 1 << 13))
    got = out.logical("h i j")
    ref = np.where(causal, scores.astype(np.float64), -np.inf)
    ref = np.exp(ref - ref.max(axis=-1, keepdims=True))
    ref /= ref.sum(axis=-1, keepdims=True)
    assert np.all(got[:, ~causal] == 0.0)  # masked positions: exp(-inf) = 0 exactly
    assert np.allclose(got, ref, rtol=19 * 2.0**-24, atol=1e-12)
    # cycles: each main pass streams 8 Way8 flits per slice, 16 Way4 flits after the split (L5270)
    passes = [op for op in ctx.schedule.ops if op.track == "main"]
    assert [max(r.cycles for r in op.engines if r.engine == "vector") for op in passes] == [16, 16, 16]


# ---------------------------------------------------------------------------------------------- cumsum


def test_cumsum_kernel_with_a_static_branch_logger_l8708() -> None:
    """``cumsum`` over n = 32 tokens for 8 lanes × 2 slices (i32, exact): the manual's static branch logger
    (0 first, 1 inside, 2 last) is written by a sub-context pass, the main pass adds ``OperandRead(1, 2)`` and
    writes ``WriteOperand(0, 1)``; then the result is committed and read back."""
    ctx = ctx1()
    ax = AxisSet(s=2, n=32, c=8)
    m = ax.m
    chip, sl = m["1"], m["s # 256"]
    x = RNG.integers(-(2**20), 2**20, (2, 32, 8)).astype(np.int32)
    x_dm = place_dm(ctx, x, i32, chip, m[CL], sl, m["n, c"], 0, axes="s n c")
    branch = np.ones(32, np.int32)
    branch[0], branch[-1] = 0, 2
    ids_dm = place_dm(ctx, np.broadcast_to(branch, (2, 32)), i32, chip, m[CL], sl, m["n / 8, n % 8"], 1 << 11,
                      axes="s n")
    log = to_vrf(ctx, ids_dm, i32, m["n / 8"], m["n % 8"], m["n"], 0)
    out = (ctx.main.begin(x_dm.view()).fetch(i32, m["n"], m["c"]).collect(m["n"], m["c"]).vector_init()
           .vector_intra_slice_branch(BranchMode.Vrf(log))
           .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
           .vector_write_operand(WriteOperand(branch=(0, 1)))
           .vector_final().commit(m["n, c"], 1 << 12))
    assert np.array_equal(out.logical("s n c"), np.cumsum(x.astype(np.int64), axis=1).astype(np.int32))
    main = [op for op in ctx.schedule.ops if op.track == "main"][-1]
    assert next(r for r in main.engines if r.engine == "vector").cycles == 32
    assert main.start >= log.ready_at > 0  # the pass reads the log: it waits for the sub pass that wrote it


# ------------------------------------------------------------------------------------------------- TopK


def _packed_reference(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's TopK in the manual's encoding (L8547–8589): ``(bf16 bits << 16) | index``, ranked by the
    bit-flipped integer, the kept ones in expert order; and the ranks."""
    bits = scores.view(np.int16).astype(np.int64)
    packed = ((bits << 16) | np.arange(scores.shape[1])).astype(np.int64)
    packed = ((packed + 2**31) % 2**32 - 2**31).astype(np.int32)
    cmp = np.where(packed >= 0, packed, packed ^ 0x7FFF0000)
    rank = (cmp[:, None, :] > cmp[:, :, None]).sum(axis=-1)
    kept = np.stack([row[r < k] for row, r in zip(packed, rank, strict=True)])
    return kept, rank


def test_topk_with_filter_compaction_l8580() -> None:
    """Top-2 of E = 8 expert scores (bf16) for T = 16 tokens, as the manual's MoE routing does it:

    1. pack ``(score bits << 16) | index`` with the bf16 bits read as i16 (``view().bitcast(i16)``, L8589) and
       the comparison trick (XOR 0x7fff0000 on negatives, L8555) — the Branch stage's Comparison sets the group
       bit of the negative ones;
    2. rank every expert by an all-to-all compare (L8563–8575): a Fxp difference against the VRF, its sign bit,
       and a saturating reduce over j;
    3. the ranks are the branch log: ``vector_filter`` keeps ids 0 and 1 and packs them, the packed Element
       ``m["t, k"]`` receives exactly the kept values (FilterCompaction, L8580–8584); unpack with >> 16, & 0xffff.
    """
    ctx = ctx1()
    ax = AxisSet(t=16, e=8, i=8, j=8, k=2)
    m = ax.m
    chip, sl = m["1"], m["1 # 256"]
    scores = RNG.standard_normal((16, 8)).astype(ml_dtypes.bfloat16)
    s_dm = place_dm(ctx, scores, bf16, chip, m[CL], sl, m["t, e"], 0, axes="t e")
    index = place_dm(ctx, np.arange(8, dtype=np.int32), i32, chip, m[CL], sl, m["e"], 1 << 8)
    index_vrf = to_vrf(ctx, index, i32, m["1"], m["e"], m["e"], 0)
    negative = BranchMode.Comparison([InputCmp.I32.False_(), InputCmp.I32.False_(), InputCmp.I32.False_(),
                                      InputCmp.I32.Less(0)])  # bit 3, the group bit, for negative scores

    def pack(flip: bool, address: int) -> Any:
        s = (ctx.main.begin(s_dm.view().bitcast(i16)).fetch(i32, m["t"], m["e"]).collect(m["t"], m["e"])
             .vector_init().vector_intra_slice_branch(negative)
             .vector_logic(LogicBinaryOpI32.LeftShift, 16).vector_logic(LogicBinaryOpI32.BitOr, index_vrf))
        if flip:
            s = s.vector_logic(LogicBinaryOpI32.BitXor, VeBranchOperand.group(0x7FFF0000, GroupId.One))
        return s.vector_final().commit(m["t, e"], address)

    packed = pack(False, 1 << 10)
    cmp = pack(True, 1 << 11)
    # rank[t, i] = #{j : cmp[t, j] > cmp[t, i]}: the stream is cmp[t, j] broadcast over i, the VRF cmp[t, i]
    cmp_i = to_vrf(ctx, cmp.relabel(Element=m["t, i"]), i32, m["t"], m["i"], m["t, i"], 1 << 10)
    rank = (ctx.main.begin(cmp.relabel(Element=m["t, j"]).view()).fetch(i32, m["t, i"], m["j"])
            .collect(m["t, i"], m["j"]).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
            .vector_fxp_with_mode(FxpBinaryOp.SubFxpSat, BinaryArgMode.Mode10, cmp_i)  # cmp_i - cmp_j
            .vector_fxp(FxpBinaryOp.LogicRightShift, 31)  # 1 where cmp_j > cmp_i
            .vector_split(m["t, i, j / 4"], m["j % 4"])
            .vector_intra_slice_reduce("j", m["t, i"], m["1 # 4"], IntraSliceReduceOpI32.AddSat)
            .vector_pad_way8(m["1 # 8"]).vector_final().commit(m["t, i, 1 # 2"], 1 << 12))
    log = to_vrf(ctx, rank.relabel(Element=m["t, e, 1 # 2"]), i32, m["t, e / 4"], m["e % 4, 1 # 2"],
                 m["t, e, 1 # 2"], 1 << 11)
    topk = (ctx.main.begin(packed.view()).fetch(i32, m["t"], m["e"]).collect(m["t"], m["e"]).vector_init()
            .vector_intra_slice_branch(BranchMode.Vrf(log)).vector_filter(ValidBranchIds.of(0, 1))
            .vector_final().commit(m["t, k"], 1 << 13))
    want, want_rank = _packed_reference(scores, 2)
    assert np.array_equal(rank.logical("t i"), want_rank)
    got = topk.logical("t k")
    assert np.array_equal(got, want)
    # unpacked: the scores are the bf16 bits in the upper half, the indices the lower half (L8588–8589)
    top_scores = (got >> 16).astype(np.int16).view(ml_dtypes.bfloat16)
    top_index = got & 0xFFFF
    assert np.array_equal(top_scores, np.take_along_axis(scores, top_index, axis=1))
    order = np.argsort(-scores.astype(np.float64), axis=1, kind="stable")[:, :2]
    assert np.array_equal(np.sort(top_index, axis=1), np.sort(order, axis=1))
    # the compacted commit writes 8 bytes (two i32) per token: 16 DM writes (L2236)
    commit = [op for op in ctx.schedule.ops if op.track == "main"][-1].engines[-1]
    assert commit.engine == "commit" and commit.cycles == 16 and "commit_in_size = 8 B" in commit.config
