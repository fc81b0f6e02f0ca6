"""The Reducer's worked example (manual L4451–4481): contract to f32 and accumulate over K / 16."""

from visa import AccumulationKind, AccumulationTensor, CollectTensor, TrfTensor, axes, bf16, f32, m

axes(M=4, N=8, K=64)


def reduce(c: CollectTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["K / 16, M"], m["K % 16"]],
           trf: TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"]]
           ) -> AccumulationTensor[f32, m["1"], m["1 # 2"], m["1 # 256"], m["M, K % 16 / 4"], m["N"]]:
    return (c.align(m["K / 16, M"], m["K % 16 # 32"], trf)
            .contract(m["K % 16 / 4"])
            .accumulate(m["M, K % 16 / 4"], m["N"], AccumulationKind.Interleaved))
