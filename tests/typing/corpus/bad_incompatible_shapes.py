"""The manual's failure example "Incompatible Shapes" (L1660–1683): base 5 against base 3.

The manual's packet (15 bytes of i8) is padded to 16 so that the fetch adapter's 8-byte alignment (L1711)
passes and the sequencer is the rule that refuses.
"""

from visa import Context, DmTensor, axes, i8, m

axes(A=15)


def read_incompatible(ctx: Context, buf: DmTensor[i8, m["1"], m["1 # 2"], m["1 # 256"], m["A % 5, A / 5"]]) -> None:
    ctx.main.begin(buf.view()).fetch(i8, m["1"], m["[A % 3, A / 3] # 16"])
