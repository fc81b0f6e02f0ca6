"""Issue 13 under the plugin: the branch log, the carried operand (cumsum), a compacted commit, bitcast, pad values."""

from visa import Context, DmTensor, PadValue, VrfTensor, axes, bf16, f32, i16, i32, m
from visa.engines.vector import (
    BranchMode,
    FxpBinaryOp,
    IntraSliceReduceOpF32,
    OperandRead,
    ValidBranchIds,
    WriteOperand,
)

axes(T=16, L=8, K=2, A=6, S=16)


def cumsum(ctx: Context, x: DmTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"]],
           ids: DmTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["T / 8, T % 8"]]) -> None:
    log: VrfTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["T"]] = (
        ctx.sub.begin(ids.view()).fetch(i32, m["T / 8"], m["T % 8"]).collect(m["T / 8"], m["T % 8"])
        .to_vrf(m["T"], 0))
    out = (ctx.main.begin(x.view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
           .vector_intra_slice_branch(BranchMode.Vrf(log))
           .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(branch=(1, 2)))
           .vector_write_operand(WriteOperand(branch=(0, 1)))
           .vector_final()
           .commit(m["T, L"], 1 << 12))
    assert out.dtype is i32


def topk(ctx: Context, x: DmTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"]],
         ranks: VrfTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"]]) -> None:
    packed = (ctx.main.begin(x.view()).fetch(i32, m["T"], m["L"]).collect(m["T"], m["L"]).vector_init()
              .vector_intra_slice_branch(BranchMode.Vrf(ranks))
              .vector_filter(ValidBranchIds.of(0, 1))
              .vector_final()
              .commit(m["T, K"], 1 << 12))
    assert packed.dtype is i32


def bits(ctx: Context, s: DmTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["S"]]) -> None:
    st = ctx.main.begin(s.view().bitcast(i16)).fetch(i32, m["S / 8"], m["S % 8"])
    assert st.dtype is i32


def padded_max(ctx: Context,
               x: DmTensor[f32, m["1"], m["1 # 2"], m["1 # 256"], m["# 2 + A"]]) -> None:  # noqa: F722
    r = (ctx.main.begin(x.view()).fetch(f32, m["1"], m["# 2 + A"], pad_value=PadValue.Min)
         .collect(m["1"], m["# 2 + A"]).vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
         .vector_split(m["[# 2 + A] / 4"], m["[# 2 + A] % 4"])
         .vector_intra_slice_reduce("A", m["1"], m["1 # 4"], IntraSliceReduceOpF32.Max))
    assert r.dtype is f32
