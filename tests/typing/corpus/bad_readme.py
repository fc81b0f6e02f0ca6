"""The README's example (README.md): a layout mistake and a transposed argument."""

from visa import Context, HbmTensor, axes, device, i32, launch, m

axes(A=2048)


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 16"])          # each slice holds 8 elements of A, not 16
           .collect(m["1"], m["A % 8"])
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A / 8, A % 8"], ctx.tdma, 1 << 28)   # the same type as m["A"]


def host(ctx: Context, x: HbmTensor[i32, m["1"], m["A % 8, A / 8"]]) -> None:
    launch(kernel, ctx, x)                                    # a transposed layout
