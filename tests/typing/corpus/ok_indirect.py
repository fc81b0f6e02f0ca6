"""Gather, scatter, in-place DMA and a guard that type-check (issue 13)."""

from visa import Context, DmTensor, HbmTensor, axes, i32, m

axes(V=64, D=64, T=16, S=8)


def embed(ctx: Context, table: HbmTensor[i32, m["1"], m["V, D"]], ids: HbmTensor[i32, m["1"], m["T"]],
          cache: HbmTensor[i32, m["1"], m["S, D"]]) -> None:
    x = table.view().gather(m["V"], ids).to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0)
    y = table.view().gather(m["V"], ids).to_hbm(m["1"], m["T, D"], ctx.tdma, 1 << 24)
    x.to_hbm_view(table.view().scatter(m["V"], ids), ctx.tdma)
    y.to_hbm_view(table.view().scatter(m["V"], ids), ctx.tdma)
    row: DmTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["D"]] = DmTensor(
        ctx, i32, m["1"], m["1 # 2"], m["1 # 256"], m["D"], 1 << 16)
    if ctx.tdma.when(ids, lambda n: (n > 0).any()):
        row.to_hbm_view(cache.view().tile(m["S"], 1, m["S = 1, D"], 3), ctx.tdma)
