"""Collectives (design API.md §7; manual L7382–7610): with literal permutations, indices and mappings the
plugin reports the runtime's refusals of ``chip_shuffle``, ``cluster_swap`` and the asymmetric slices."""

from visa import Context, DmTensor, HbmTensor, axes, device, i32, launch, m

axes(A=4, B=4, S=256, D=8, C=8)


@device(chip=4)
def shuffles(ctx: Context, x: HbmTensor[i32, m["A"], m["B, S, D"]]) -> None:
    x.view().chip_shuffle([1, 2, 3, 0])  # fine
    x.view().chip_shuffle([1, 2, 3])
    x.view().chip_shuffle([0, 0, 1, 2])
    x.view().chip_shuffle([0, 1, 2, 7])
    x.view().cluster_swap()


@device(chip=1)
def one_chip(ctx: Context, x: HbmTensor[i32, m["1"], m["B, S, D"]]) -> None:
    x.view().chip_shuffle([0])


@device(chip=4)
def slices(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["A"], m["1 # 2"], m["S"], m["B, D"], 0)
    ok: DmTensor[i32, m["A"], m["1 # 2"], m["S"], m["D"]] = d.asymmetric_chip_slice(m["B"], ctx.sub, [3, 0, 1, 2],
                                                                                     4096)
    d.asymmetric_chip_slice(m["S"], ctx.sub, [0, 1, 2, 3], 4096)
    d.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2, 4], 4096)
    d.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2], 4096)
    d.asymmetric_chip_slice(m["B"], ctx.main, [0, 1, 2, 3], 4096)
    d.asymmetric_cluster_slice(m["C / 4 % 2"], ctx.sub, [0, 1], 4096)
    d.view().cluster_swap()  # Cluster 1 # 2 holds one cluster: the swap would read the padding (issue 23)
    del ok


@device(chip=1)
def cluster(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S"], m["C, D"], 0)
    d.asymmetric_cluster_slice(m["C / 4 % 2"], ctx.sub, [1, 0], 4096)  # fine
    d.asymmetric_cluster_slice(m["C / 4 % 2"], ctx.sub, [1, 2], 4096)


@device(chip=4)
def staged_moves(ctx: Context, x: HbmTensor[i32, m["A"], m["B, S, D"]]) -> None:
    good: DmTensor[i32, m["A"], m["1 # 2"], m["S"], m["B, D"]] = x.view().chip_shuffle([1, 2, 3, 0]).to_dm(
        m["1 # 2"], m["S"], m["B, D"], ctx.tdma, 0)
    hb: HbmTensor[i32, m["A"], m["S, D, B"]] = good.view().chip_shuffle([3, 2, 1, 0]).to_hbm(
        m["A"], m["S, D, B"], ctx.tdma, 1 << 20)
    x.view().chip_shuffle([1, 2, 3, 0]).to_dm(m["1 # 2"], m["S"], m["D"], ctx.tdma, 0)
    x.view().chip_shuffle([1, 2, 3, 0]).chip_shuffle([1, 2])
    good.view().chip_shuffle([1, 2, 3, 0]).cluster_swap().to_dm(m["1 # 2"], m["S"], m["B, D"], ctx.tdma, 4096)
    wrong: DmTensor[i32, m["A"], m["1 # 2"], m["S"], m["D, B"]] = good.view().cluster_swap().to_dm(
        m["1 # 2"], m["S"], m["B, D"], ctx.tdma, 8192)
    del hb, wrong


# A kernel parameter annotated with another chip count than @device(chip=N), and an argument spanning another
# count: launch refuses both at run time (visa.context.check_argument_chips); the plugin reports a wrong annotation
# once, at the parameter (issue 27 item 9), and an argument of another type at the launch call (mypy's own error).
@device(chip=4)
def four_chips(ctx: Context, x: HbmTensor[i32, m["1"], m["B, S, D"]], y: HbmTensor[i32, m["A"], m["B, S, D"]]) -> None:
    del x, y


@device(chip=2)
def two_chips(ctx: Context, y: HbmTensor[i32, m["A"], m["B, S, D"]]) -> None:
    del y


def host(ctx: Context, x: HbmTensor[i32, m["1"], m["B, S, D"]], y: HbmTensor[i32, m["A"], m["B, S, D"]]) -> None:
    launch(four_chips, ctx, x, y)  # x is as annotated: the annotation's error is at the parameter, not again here
    launch(two_chips, ctx, y)  # the same: y spans 4 chips as its parameter does (reported at the parameter)
