"""``ax.m["..."]`` on an explicit AxisSet (manual L587–595): the mapping's type, and its errors at their line."""

from visa import AxisSet, Context, DmTensor, i32

ax = AxisSet(A=2048)
Slice = ax.m["A / 8"]


def wrong_modulo(ctx: Context) -> None:
    local = AxisSet(B=64)
    local.m["B % 7"]


def fetch_too_much(ctx: Context) -> None:
    d = DmTensor(ctx, i32, ax.m["1"], ax.m["1 # 2"], Slice, ax.m["A % 8"], 0)
    ctx.main.begin(d.view()).fetch(i32, ax.m["1"], ax.m["A % 16"])
