"""Rules about addresses written as constants in the call (manual L150–155, L2424–2427): a DMA source's read
alignment (``dma.plan`` with the source's address), a result over the bytes of the tensor the same operation
reads (``registry.refuse_overlap``), for DMAs and commits."""

from visa import Context, DmTensor, HostTensor, axes, i32, m

axes(A=2048)


def hbm_source_alignment(ctx: Context) -> None:
    x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 4)
    x.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 0)


def hbm_overlap(ctx: Context) -> None:
    x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    x.to_hbm(m["1"], m["A % 8, A / 8"], ctx.tdma, 4096)


def dm_overlap(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 64)
    d.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 48)


def commit_overlap(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view())
     .fetch(i32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .commit(m["A % 8"], 16))


def vrf_past_the_end(ctx: Context) -> None:
    d = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.main.begin(d.view())
     .fetch(i32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .to_vrf(m["A % 8"], 8176))


def dma_stream(ctx: Context) -> None:
    x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    x.to_dm(m["1 # 2"], m["A / 8"], m["A % 8"], ctx.tdma, 0, stream=(m["A % 8"], m["A / 8"]))
