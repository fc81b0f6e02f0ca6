"""The sub context has no compute engines (manual L3046–3051) and its commits follow fetch only (L2337): cast,
transpose and the Contraction Engine are refused there (``check_context`` of each engine)."""

from visa import Context, DmTensor, TrfAddress, axes, bf16, f32, i8, m

axes(A=2048, K=32, N=8)


def cast_in_sub(ctx: Context) -> None:
    d = DmTensor(ctx, f32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.sub.begin(d.view())
     .fetch(f32, m["1"], m["A % 8"])
     .collect(m["1"], m["A % 8"])
     .cast(bf16, m["A % 8 # 16"]))


def transpose_in_sub(ctx: Context) -> None:
    d = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"], 0)
    (ctx.sub.begin(d.view())
     .fetch(i8, m["A % 8"], m["1 # 8"])
     .transpose(m["1"], m["A % 8"]))


def align_in_sub(ctx: Context) -> None:
    w = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N, K"], 0)
    trf = (ctx.sub.begin(w.view())
           .fetch(bf16, m["N"], m["K % 16"])
           .collect(m["N"], m["K % 16"])
           .to_trf(m["N"], m["K % 16"], TrfAddress.Full))
    x = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["K"], 4096)
    (ctx.sub.begin(x.view())
     .fetch(bf16, m["1"], m["K % 16"])
     .collect(m["1"], m["K % 16"])
     .align(m["1"], m["K % 16 # 32"], trf))
