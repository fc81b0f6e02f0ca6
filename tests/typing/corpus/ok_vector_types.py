"""Exact result types through the Vector Engine (manual L4842–4947, L5278–5573, L6583–6755, L5154–5249), the
interleaved begin (L1843–1868) and explicit axis sets: each annotation must be the type the plugin derives
(a wrong one is mypy's assignment error), and every kernel also runs on the simulator."""

from visa import AxisSet, BeginTensor, Context, DmTensor, axes, f32, i32, m
from visa.engines.vector import (
    BranchMode,
    ClipBinaryOpI32,
    FpBinaryOp,
    FxpBinaryOp,
    InterFirst,
    InterSliceReduceOpI32,
    IntraFirst,
    IntraSliceReduceOpF32,
    Stash,
)
from visa.stream.vector import (
    VectorInterSliceReduceTensor,
    VectorIntraSliceReduceTensor,
    VectorNarrowTensor,
    VectorTensorPair,
    VectorWidenTensor,
)

axes(A=2048, R=4, I=2, B=64, S=256, C=8)
ax = AxisSet(B=64)


def narrow_and_widen(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    w = (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
         .vector_init()
         .vector_intra_slice_branch(BranchMode.Unconditional)
         .vector_stash()
         .vector_fxp(FxpBinaryOp.AddFxp, Stash)
         .vector_fxp_to_fp(31))
    n: VectorNarrowTensor[f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8 / 4"], m["A % 4"], IntraFirst] = \
        w.vector_split(m["A % 8 / 4"], m["A % 4"])
    c: VectorWidenTensor[f32, m["1"], m["1 # 2"], m["A / 8"], m["1"], m["A % 8"], IntraFirst] = \
        n.vector_fp_binary(FpBinaryOp.AddF, 1.0).vector_concat(m["1"], m["A % 8"])
    c.vector_final().commit(m["A % 8"], 4096)


def intra_reduce(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["R, A % 8"], 0)
    r: VectorIntraSliceReduceTensor[f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8 / 4"], m["A % 4"],
                                    IntraFirst] = \
        (ctx.main.begin(d.view()).fetch(f32, m["R"], m["A % 8"]).collect(m["R"], m["A % 8"])
         .vector_init()
         .vector_intra_slice_branch(BranchMode.Unconditional)
         .vector_split(m["R, A % 8 / 4"], m["A % 4"])
         .vector_intra_slice_reduce("R", m["A % 8 / 4"], m["A % 4"], IntraSliceReduceOpF32.Add))
    r.vector_concat(m["1"], m["A % 8"]).vector_final()


def inter_reduce(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S"], m["C"], 0)
    s: VectorInterSliceReduceTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["1"], m["C"], InterFirst] = \
        (ctx.main.begin(d.view()).fetch(i32, m["1"], m["C"]).collect(m["1"], m["C"])
         .vector_init()
         .vector_inter_slice_reduce(m["1 # 256"], m["1"], InterSliceReduceOpI32.Add))
    s.vector_intra_slice_branch(BranchMode.Unconditional).vector_fxp(FxpBinaryOp.AddFxp, 1).vector_final()


def pair(ctx: Context) -> None:
    a = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    begin: BeginTensor[i32, m["1"], m["1 # 2"], m["A / 8"], m["I"], m["A % 8"]] = \
        ctx.main.begin_interleaved(m["I"], a.view(), b.view())
    p: VectorTensorPair[i32, m["1"], m["1 # 2"], m["A / 8"], m["1"], m["A % 8"]] = \
        (begin.fetch(i32, m["I"], m["A % 8"]).collect(m["I"], m["A % 8"])
         .vector_init()
         .vector_intra_slice_unzip("I", m["1 # 2"], m["1"]))
    p.vector_fxp(FxpBinaryOp.MulInt, 10, ()).vector_clip_zip(ClipBinaryOpI32.AddFxp).vector_final()


def explicit_axes(ctx: Context) -> None:
    d: DmTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["B"]] = \
        DmTensor(ctx, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["B"], 0)
    del d
