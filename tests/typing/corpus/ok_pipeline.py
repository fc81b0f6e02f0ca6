"""A fetch → collect → commit kernel (design API.md §2, without the vector stages) and its host side."""

import numpy as np

from visa import Context, DmTensor, HbmTensor, HostTensor, axes, device, i32, launch, m

axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A / 8 # 256"]
Element = m["A % 8"]
Row = m["{Slice}, {Element}"]  # an escape: the same mapping as m["A"]


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm: DmTensor[i32, Chip, Cluster, m["A/8 # 256"], m["A % 8"]] = x.to_dm(Cluster, Slice, Element, ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])
           .collect(m["1"], m["A % 8"])
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(Row, ctx.tdma, 1 << 28)


def main() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(i32, m["A"], np.random.default_rng(42))
    y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
    assert np.array_equal(y.numpy(), x.numpy())
