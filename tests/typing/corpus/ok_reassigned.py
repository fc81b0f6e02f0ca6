"""A local the function assigns more than once — here again in a ``finally`` block — has no single origin: the
plugin leaves the rules that need its address to run time instead of checking the first assignment's.  At run
time ``dm`` is the tensor at 1 << 14, so the commit at 0 overlaps nothing the pass reads (manual L150–155)."""

from visa import Context, DmTensor, axes, i32, m

axes(A=2048)


def reassigned_in_finally(ctx: Context) -> None:
    dm = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    try:
        pass
    finally:
        dm = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 1 << 14)
    (ctx.main.begin(dm.view())
     .fetch(i32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .commit(m["A % 8"], 0))
