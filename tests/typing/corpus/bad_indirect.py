"""Gather and scatter DMAs (IndirectLoop, manual L1684–1688; design API.md §7): what the types decide."""

from visa import Context, DmTensor, HbmTensor, axes, i16, i32, m

axes(V=64, D=64, T=16, E=4)


def bad_ids_dtype(ctx: Context, table: HbmTensor[i32, m["1"], m["V, D"]], ids: HbmTensor[i16, m["1"], m["T"]]) -> None:
    table.view().gather(m["V"], ids)


def v_not_in_table(ctx: Context, table: HbmTensor[i32, m["1"], m["V, D"]], ids: HbmTensor[i32, m["1"], m["T"]]) -> None:
    table.view().gather(m["E"], ids)


def dst_names_v(ctx: Context, table: HbmTensor[i32, m["1"], m["V, D"]], ids: HbmTensor[i32, m["1"], m["T"]]) -> None:
    table.view().gather(m["V"], ids).to_hbm(m["1"], m["V, D"], ctx.tdma, 1 << 20)


def dst_lacks_index(ctx: Context, table: HbmTensor[i32, m["1"], m["V, D"]],
                    ids: HbmTensor[i32, m["1"], m["T"]]) -> None:
    g = table.view().gather(m["V"], ids)
    g.to_dm(m["1 # 2"], m["1 # 256"], m["D"], ctx.tdma, 0)


def scatter_src_names_v(ctx: Context, dst: HbmTensor[i32, m["1"], m["V, D"]],
                        src: DmTensor[i32, m["1"], m["1 # 2"], m["V / 16 # 256"], m["V % 16, D"]],
                        ids: HbmTensor[i32, m["1"], m["T"]]) -> None:
    src.to_hbm_view(dst.view().scatter(m["V"], ids), ctx.tdma)
