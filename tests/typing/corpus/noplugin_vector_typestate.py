"""Vector Engine typestate without the plugin (manual L4730–4751, L6603, L4626): one class per stage, so a
backwards call, a Way4 op on a Way8 stream, or the inter-slice reduce in the wrong order is an attribute or
self-type error for plain mypy."""

from typing import Any

from visa import AxisSet, i32
from visa.engines.vector import BranchMode, ClipBinaryOpI32, FpUnaryOp, FxpBinaryOp, InterSliceReduceOpI32
from visa.stream.vector import VectorInitTensor

ax = AxisSet(A=2048)


def stages(init: VectorInitTensor[i32, Any, Any, Any, Any, Any]) -> None:
    b = init.vector_intra_slice_branch(BranchMode.Unconditional)
    b.vector_fp_unary(FpUnaryOp.Exp)  # Way4 op on a Way8 stream
    c = b.vector_clip(ClipBinaryOpI32.Max, 0)
    c.vector_fxp(FxpBinaryOp.AddFxp, 1)  # backwards: Fxp before Clip
    n = c.vector_trim_way4(ax.m["A % 4"])  # backwards: Narrow before Clip
    r = init.vector_inter_slice_reduce(ax.m["A / 8"], ax.m["1"], InterSliceReduceOpI32.Add)
    r.vector_intra_slice_branch(BranchMode.Unconditional).vector_inter_slice_reduce(
        ax.m["A / 8"], ax.m["1"], InterSliceReduceOpI32.Add)  # a second inter-slice reduce (InterFirst)
    q = b.vector_inter_slice_reduce(ax.m["A / 8"], ax.m["1"], InterSliceReduceOpI32.Add)
    q.vector_intra_slice_branch(BranchMode.Unconditional)  # intra work after an IntraFirst inter-slice reduce
    print(n)
