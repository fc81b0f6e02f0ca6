"""The constant-add kernel spelt for pyright/Pylance: M[Literal["..."]] in annotations, m["..."] as values."""

from typing import Literal

import numpy as np

from visa import BranchMode, Context, FxpBinaryOp, HbmTensor, HostTensor, M, axes, device, i32, launch, m

axes(A=2048)


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, M[Literal["1"]], M[Literal["A"]]]) -> HbmTensor[i32, M[Literal["1"]],
                                                                                           M[Literal["A"]]]:
    dm = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])
           .collect(m["1"], m["A % 8"])
           .vector_init()
           .vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, 1)
           .vector_final()
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 1 << 28)


def host(ctx: Context, x: HbmTensor[i32, M[Literal["1"]], M[Literal["A / 8, A % 8"]]]) -> None:
    launch(kernel, ctx, x)  # the same layout as m["A"], spelt otherwise: fine


def wrong(ctx: Context, x: HbmTensor[i32, M[Literal["1"]], M[Literal["A % 8, A / 8"]]]) -> None:
    launch(kernel, ctx, x)  # a transposed layout: the plugin refuses it


def main() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(i32, m["A"], np.random.default_rng(0))
    y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
    assert np.array_equal(y.numpy(), x.numpy() + 1)
