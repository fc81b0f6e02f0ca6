"""Issue 13's static rules: the branch log (L4802), the carried operand (L8708–8721), compacted commits (L2324),
bitcast (L8589) and pad values (L1870, L1898) — the same plan functions the stream calls, so each kernel, run,
raises the message mypy reports."""

from visa import Context, DmTensor, PadValue, VrfTensor, axes, f32, i16, i32, m
from visa.engines.vector import (
    BranchMode,
    ClipBinaryOpF32,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    OperandRead,
    ValidBranchIds,
    WriteOperand,
)

axes(T=16, L=8, K=2, J=3, W=9, A=6)


def _x(ctx: Context) -> DmTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"]]:
    return DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"], 0)


def float_log(ctx: Context) -> None:
    log = VrfTensor(ctx, f32, m["1"], m["1 # 2"], m["1 # 256"], m["T"], 0)
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Vrf(log)))


def log_in_another_slice(ctx: Context) -> None:
    log = VrfTensor(ctx, i32, m["1"], m["1 # 2"], m["# 1 + 1 + # 254"], m["T"], 0)
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Vrf(log)))


def read_without_write(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
     .vector_final())


def two_writes(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_write_operand(WriteOperand(branch=0))
     .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
     .vector_write_operand(WriteOperand(branch=0)))


def bad_ids(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=16)))


def packed_two_axes(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional).vector_filter(ValidBranchIds.of(0)).vector_final()
     .commit(m["T, K, J"], 1 << 12))


def packed_too_wide(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional).vector_filter(ValidBranchIds.of(0)).vector_final()
     .commit(m["T, W"], 1 << 12))


def bitcast_width(ctx: Context) -> None:
    x = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["1 # 256"], m["T"], 0)
    x.view().bitcast(i16)


def pad_custom(ctx: Context) -> None:
    x = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A # 8"], 0)
    ctx.main.begin(x.view()).fetch(i32, m["1"], m["A # 8"], pad_value=PadValue.Custom(0.5))


def pad_in_sub(ctx: Context) -> None:
    x = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A # 8"], 0)
    ctx.sub.begin(x.view()).fetch(i32, m["1"], m["A # 8"], pad_value=PadValue.Min)


def filter_ids(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional).vector_filter(ValidBranchIds.of(3, 16)))


def ternary_read_without_write(ctx: Context) -> None:
    x = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"], 0)
    (ctx.main.begin(x.view()).fetch(f32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_split(m["T, L / 4"], m["L % 4"])
     .vector_fp_ternary(FpTernaryOp.FmaF, (OperandRead(branch=1), 0.5))
     .vector_fp_unary(FpUnaryOp.Exp)
     .vector_concat(m["T"], m["L"]))


def write_other_dtype(ctx: Context) -> None:
    (ctx.main.begin(_x(ctx).view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=1))
     .vector_fxp_to_fp(31)
     .vector_clip(ClipBinaryOpF32.Max, 0.0)
     .vector_write_operand(WriteOperand(branch=1)))
