"""The Fetch Engine's output packet must be 8-byte aligned (manual L1711–1716)."""

from visa import Context, DmTensor, axes, i8, m

axes(A=2048)


def short_packet(ctx: Context, d: DmTensor[i8, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"]]) -> None:
    (ctx.main.begin(d.view())
     .fetch(i8, m["A % 2"], m["A / 2 % 4"]))
