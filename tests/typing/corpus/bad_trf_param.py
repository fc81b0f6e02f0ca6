"""The Contraction Engine when the chain does not show the TRF tensor's ``to_trf`` or the stream's ``align``
(manual L3789–4548): ``align`` is checked with the TrfTensor's type (for every address a TRF tensor may have),
and ``accumulate`` with the Row that ``contract``'s result type carries (``ContractionTensor[..., Row]``)."""

from visa import (
    AccumulationKind,
    CollectTensor,
    Context,
    ContractionTensor,
    DmTensor,
    TrfAddress,
    TrfTensor,
    axes,
    bf16,
    f32,
    m,
)

axes(M=64, N=8, K=64, R=3)


def aligned(c: CollectTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["1"], m["K % 16"]],
            trf: TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["R"], m["K % 16"]]) -> None:
    c.align(m["1"], m["K % 16 # 32"], trf)


def three_rows(ctx: Context) -> None:
    x = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["K % 16"], 0)
    c = ctx.main.begin(x.view()).fetch(bf16, m["1"], m["K % 16"]).collect(m["1"], m["K % 16"])
    aligned(c, TrfTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["R"], m["K % 16"], TrfAddress.Full))


def accumulated(k: ContractionTensor[f32, m["1"], m["1 # 2"], m["1 # 256"], m["K / 16, M"], m["K % 16 / 4"],
                                     m["N"]]) -> None:
    k.accumulate(m["M, K % 16 / 4"], m["N"], AccumulationKind.Interleaved)


def too_many_slots(ctx: Context) -> None:
    x = DmTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["K / 16, M, K % 16"], 0)
    trf = TrfTensor(ctx, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"], TrfAddress.Full)
    accumulated(ctx.main.begin(x.view())
                .fetch(bf16, m["K / 16, M"], m["K % 16"])
                .collect(m["K / 16, M"], m["K % 16"])
                .align(m["K / 16, M"], m["K % 16 # 32"], trf)
                .contract(m["K % 16 / 4"]))
