"""With the plugin too: a method on the wrong stage (manual L1107, pipeline order L3792)."""

from visa import Context, DmTensor, axes, i8, m

axes(A=2048)


def wrong_stage(ctx: Context, d: DmTensor[i8, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"]]) -> None:
    fetched = ctx.main.begin(d.view()).fetch(i8, m["1"], m["A % 8"])
    fetched.contract(m["1"])
    fetched.fetch(i8, m["1"], m["A % 8"])
