"""More accumulator slots than the buffer has inner to the outermost reduced axis (manual L4534–4539)."""

from visa import AccumulationKind, CollectTensor, TrfTensor, axes, bf16, m

axes(M=64, N=8, K=64)


def reduce(c: CollectTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["K / 16, M"], m["K % 16"]],
           trf: TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["K"]]) -> None:
    (c.align(m["K / 16, M"], m["K % 16 # 32"], trf)
     .contract(m["K % 16 / 4"])
     .accumulate(m["M, K % 16 / 4"], m["N"], AccumulationKind.Interleaved))
