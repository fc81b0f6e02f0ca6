"""The manual's failure example "Insufficient Input" (L1639–1659): Time needs N / 512, the buffer holds N % 512."""

from visa import Context, DmTensor, axes, i8, m

axes(N=2048)


def read_insufficient(ctx: Context, buf: DmTensor[i8, m["1"], m["1 # 2"], m["1 # 256"], m["N % 512"]]) -> None:
    ctx.main.begin(buf.view()).fetch(i8, m["N / 512"], m["N % 512"])
