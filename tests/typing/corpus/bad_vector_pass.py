"""Vector Engine passes (manual L4549–6755): the intra-slice reduce (slots, OTime, L5278–5573), the
inter-slice reduce (L6583–6755), two-group mode (unzip, zip, L5154–5249) and the stash (L4977–5051) — each
from ``visa.engines.vector`` (``plan_intra_reduce``, ``plan_inter_reduce``, ``plan_unzip``, ``claim``,
``plan_stash``, ``plan_stash_operand``, ``plan_enter``)."""

from visa import Context, DmTensor, axes, f32, i32, m
from visa.engines.vector import (
    BranchMode,
    FpBinaryOp,
    FxpBinaryOp,
    InterSliceReduceOpI32,
    IntraSliceReduceOpF32,
    Stash,
    ValidBranchIds,
)

axes(A=2048, R=4, T=16, I=2)


def intra_slots(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["R, T, A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["R, T"], m["A % 8"]).collect(m["R, T"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_split(m["R, T, A % 8 / 4"], m["A % 4"])
     .vector_intra_slice_reduce("R", m["T, A % 8 / 4"], m["A % 4"], IntraSliceReduceOpF32.Add))


def intra_otime(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["R, A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["R"], m["A % 8"]).collect(m["R"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_split(m["R, A % 8 / 4"], m["A % 4"])
     .vector_intra_slice_reduce("R", m["R"], m["A % 4"], IntraSliceReduceOpF32.Add))


def inter_packet(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_inter_slice_reduce(m["1 # 256"], m["1"], InterSliceReduceOpI32.Add))


def unzip_axis(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_unzip("I", m["1 # 2"], m["1"]))


def zip_alu(ctx: Context) -> None:
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    (ctx.main.begin_interleaved(m["I"], a.view(), b.view())
     .fetch(i32, m["I"], m["A % 8"]).collect(m["I"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_unzip("I", m["1 # 2"], m["1"])
     .vector_fxp(FxpBinaryOp.MulInt, 10, ())
     .vector_fxp_zip(FxpBinaryOp.MulFxp))


def filter_after_zip(ctx: Context) -> None:
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    (ctx.main.begin_interleaved(m["I"], a.view(), b.view())
     .fetch(i32, m["I"], m["A % 8"]).collect(m["I"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_unzip("I", m["1 # 2"], m["1"])
     .vector_fxp_zip(FxpBinaryOp.AddFxp)
     .vector_filter(ValidBranchIds.of(0)))


def stash_after_zip(ctx: Context) -> None:
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    (ctx.main.begin_interleaved(m["I"], a.view(), b.view())
     .fetch(i32, m["I"], m["A % 8"]).collect(m["I"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_unzip("I", m["1 # 2"], m["1"])
     .vector_fxp_zip(FxpBinaryOp.AddFxp)
     .vector_stash())


def stash_twice(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_stash()
     .vector_fxp(FxpBinaryOp.AddFxp, 1)
     .vector_stash())


def stash_missing(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, Stash))


def stash_dtype(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_stash()
     .vector_fxp_to_fp(31)
     .vector_split(m["A % 8 / 4"], m["A % 4"])
     .vector_fp_binary(FpBinaryOp.AddF, Stash))
