"""The reference's newer surface (design API.md §8, issue 26): with literal mappings, permutations, indices and
scalar types the plugin reports the runtime's refusals at the call line."""

from visa import (
    Context,
    DmTensor,
    HbmScalar,
    HbmTensor,
    axes,
    bf16,
    device,
    i32,
    i64,
    m,
    u32,
)

axes(A=128, H=2, V=16, X=2, G=4, Q=4, B=4, C=2, D=8, S=256, K=512)


@device(chip=1)
def lifts(ctx: Context, x: HbmTensor[bf16, m["1"], m["A, H, V"]]) -> None:
    dm = x.to_dm(m["1 # 2"], m["A, X"], m["H, V"], ctx.tdma, 0)
    ok = ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"]).fetch_slice_lift(m["A, H"], m["1"])  # fine
    ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"]).fetch_slice_lift(m["A"], m["1"])
    ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"]).fetch_slice_lift(m["A, H"], m["H"])
    ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"]).fetch_cluster_lift(m["H"], m["1"])
    del ok


@device(chip=4)
def slices(ctx: Context, x: HbmTensor[i32, m["Q"], m["S, C, B, D"]]) -> None:
    d = x.to_dm(m["1 # 2"], m["S"], m["C, B, D"], ctx.tdma, 0)
    d.view().chip_slice(m["B"], m["C, D"], [3, 0, 1, 2])  # fine
    d.view().chip_slice(m["B"], m["C, D"], [3, 0, 1])
    d.view().chip_slice(m["B"], m["C, D"], [3, 0, 1, 9])
    d.view().chip_slice(m["B"], m["D, C"], [3, 0, 1, 2])
    d.view().chip_shuffle([1, 2, 3, 0]).chip_slice(m["B"], m["C, D"], [0, 1, 2, 3])  # fine (staged)
    d.view().chip_shuffle([1, 2, 3, 0]).chip_slice(m["B"], m["C, D"], [0, 1, 2, 4])


@device(chip=1)
def fills(ctx: Context, x: HbmTensor[i32, m["1"], m["K"]]) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["S"], m["D"], 0)
    d.view().memset(7, ctx.sub)  # fine
    d.view().memset(1.5, ctx.sub)
    x.view().memset(0, ctx.sub)
    x.view().memset(0, ctx.tdma)  # fine


def scalars(ctx: Context) -> None:
    HbmScalar.from_host(ctx, 3, u32, 0)  # fine
    HbmScalar.from_host(ctx, -1, u32, 8)
    HbmScalar.from_host(ctx, 2**40, i64, 16)  # fine
    HbmScalar.from_host(ctx, 1, bf16, 24)


@device(chip=1)
def spm(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["K / 2"], m["K % 2"], 0)
    d.to_spm(m["1 # 4"], m["K"], ctx.tdma, 0)  # fine
    d.to_spm(m["1 # 2"], m["K"], ctx.tdma, 0)
