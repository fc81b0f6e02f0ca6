"""Vector Engine rules: i32/f32 input only (L4551); each ALU once per pass (L4750)."""

from visa import Context, DmTensor, axes, i8, i32, m
from visa.engines.vector import BranchMode, FxpBinaryOp

axes(A=2048)


def wrong_dtype(ctx: Context, d: DmTensor[i8, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"]]) -> None:
    (ctx.main.begin(d.view())
     .fetch(i8, m["A % 8 / 4"], m["A % 4 # 8"])
     .collect(m["A % 8 / 4"], m["A % 4 # 32"])
     .vector_init())


def alu_twice(ctx: Context, d: DmTensor[i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"]]) -> None:
    (ctx.main.begin(d.view())
     .fetch(i32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, 1)
     .vector_fxp(FxpBinaryOp.AddFxp, 2)
     .vector_final())
