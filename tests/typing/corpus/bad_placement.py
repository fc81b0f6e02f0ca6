"""Slice and Cluster sizes (L1080–1081, L1707–1709), capacities (L1088–1090), chips (L1079), alignment (L1071)."""

from visa import Context, DmTensor, HbmTensor, TrfTensor, VrfTensor, axes, device, i32, m

axes(A=2048, B=262144)
Slice = m["A / 8 # 256"]

annotated_slice: DmTensor[i32, m["1"], m["1 # 2"], m["A / 16"], m["A % 16"]]
annotated_capacity: VrfTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["B"]]
annotated_rows: TrfTensor[i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["1"]]


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]], y: HbmTensor[i32, m["1"], m["B"]]) -> None:
    x.to_dm(m["1"], Slice, m["A % 8"], ctx.tdma, 0)
    x.to_dm(m["1 # 2"], m["A / 16"], m["A % 16"], ctx.tdma, 0)
    y.to_dm(m["1 # 2"], m["1 # 256"], m["B"], ctx.tdma, 0)
    x.to_dm(m["1 # 2"], Slice, m["A % 8"], ctx.tdma, 6)
    x.to_hbm(m["1 # 2"], m["A"], ctx.tdma, 0)
