"""The "Hello, TCP!" kernel of design API.md §2: fetch, collect, the Vector Engine (+1), commit."""

import numpy as np

from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m
from visa.engines.vector import BranchMode, FxpBinaryOp

axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A / 8 # 256"]


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm = x.to_dm(Cluster, Slice, m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])
           .collect(m["1"], m["A % 8"])
           .vector_init()
           .vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, 1)
           .vector_final()
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 1 << 28)


def main() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(i32, m["A"], np.random.default_rng(42))
    y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
    assert np.array_equal(y.numpy(), x.numpy() + 1)
