"""Views, tiles and interleaving: ``begin_interleaved``'s rules (L1843–1868, ``fetch.plan_interleave``), a tile's
bounds and strides (L813–832, ``layout.tile_offset``), the fetch view's start address (L1756,
``fetch.view_bit_base``) and ``commit_view`` (L2159–2163, ``commit.check_view``, ``commit.plan`` and
``registry.refuse_overlap``); the last kernel spells its mappings with an explicit AxisSet (``m2 = AxisSet(...).m``)."""

from visa import AxisSet, Context, DmTensor, axes, i4, i8, i32, m

axes(A=2048, I=2, J=4, B=16)


def interleave_three(ctx: Context) -> None:
    a = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    ctx.main.begin_interleaved(m["J"], a.view(), b.view())


def interleave_different(ctx: Context) -> None:
    a = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A % 256"], m["A / 256"], 64)
    ctx.main.begin_interleaved(m["I"], a.view(), b.view())


def interleave_dtypes(ctx: Context) -> None:
    a = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    b = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    ctx.main.begin_interleaved(m["I"], a.view(), b.view())


def tile_past_the_end(ctx: Context) -> None:
    d = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 0)
    d.view().tile(m["B"], 8, m["B = 8"], 12)


def tile_strides(ctx: Context) -> None:
    d = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 0)
    d.view().tile(m["B"], 8, m["B / 2"], 0)


def fetch_mid_byte(ctx: Context) -> None:
    d = DmTensor(ctx, i4, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 0)
    tile = d.view().tile(m["B"], 15, m["B = 15 # 16"], 1)
    ctx.main.begin(tile).fetch(i4, m["1"], m["B = 15 # 16"])


def commit_view_dtype(ctx: Context) -> None:
    src = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    dst = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8 # 32"], 4096)
    (ctx.main.begin(src.view())
     .fetch(i32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .commit_view(dst.view()))


def commit_view_slices(ctx: Context) -> None:
    src = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    dst = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A % 256"], m["A / 256"], 4096)
    (ctx.main.begin(src.view())
     .fetch(i32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .commit_view(dst.view()))


def commit_view_boundary(ctx: Context) -> None:
    src = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 0)
    dst = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 4096)
    (ctx.main.begin(src.view())
     .fetch(i32, m["B / 8"], m["B % 8"])
     .collect(m["B / 8"], m["B % 8"])
     .commit_view(dst.view().tile(m["B"], 4, m["B = 4"], 12)))


def commit_view_over_its_input(ctx: Context) -> None:
    m2 = AxisSet(X=8, Y=32).m
    src = DmTensor(ctx, i8, m2["1"], m2["1 # 2"], m2["1 # 256"], m2["X, Y"], 0)
    (ctx.main.begin(src.view())
     .fetch(i8, m2["X"], m2["Y"])
     .collect(m2["X"], m2["Y"])
     .commit_view(src.view()))
