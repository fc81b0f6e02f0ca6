"""Vector Engine stages (manual L4679–5273): the dtype of each stage, the operator family, the operands,
Narrow/Widen (split, trim, concat, pad), the fixed-point width, the branch mode — each from
``visa.engines.vector.plan`` (and ``elementwise.check_constant`` / ``plan_branch``, ``relayout.plan_gather``)."""

from visa import Context, DmTensor, VrfTensor, axes, f32, i32, m
from visa.engines.vector import BranchMode, FxpBinaryOp, InputCmp, LogicBinaryOpF32

axes(A=2048, B=1024)


def fxp_on_f32(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, 1))


def logic_family(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_logic(LogicBinaryOpF32.BitAnd, 1))


def float_constant(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, 1.5))


def vrf_dtype(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    v = VrfTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, v))


def vrf_other_slice(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    v = VrfTensor(ctx, i32, m["1"], m["1 # 2"], m["A % 256"], m["A / 256"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp(FxpBinaryOp.AddFxp, v))


def int_width(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_fxp_to_fp(40))


def split_time(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_split(m["1"], m["A % 4"]))


def trim_data(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_trim_way4(m["A % 4"]))


def concat_odd(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["B / 4"], m["B % 4"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["1"], m["B % 4 # 8"]).collect(m["1"], m["B % 4 # 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_trim_way4(m["B % 4"])
     .vector_concat(m["1"], m["B % 4 # 8"]))


def pad_packet(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["B / 4"], m["B % 4"], 0)
    (ctx.main.begin(d.view()).fetch(f32, m["1"], m["B % 4 # 8"]).collect(m["1"], m["B % 4 # 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_trim_way4(m["B % 4"])
     .vector_pad_way8(m["B % 8"]))


def branch_comparison(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.Comparison([InputCmp.I32.Less(0), InputCmp.F32.Greater(0.5)])))


def branch_valid_count(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view()).fetch(i32, m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
     .vector_init()
     .vector_intra_slice_branch(BranchMode.ValidCount))
