"""Mapping types: equivalent spellings are one type (manual L1017–1028); aliases and escapes resolve."""

from visa import Mapping, axes, m

axes(A=2048, B=512)
Slice = m["A / 8 # 256"]
Pair = m["{Slice}, A % 8"]

a: m["A/8 # 256"] = m["A / 8 # 256"]
b: m["B / 64, B % 64"] = m["B"]
c: m["A"] = Pair
d: Slice = m["A/8#256"]
e: Mapping = m["[A, B] / 512"]
f: m["A"] = m["[A, B] / 512"]  # pair projection (manual L1024)
g: m["1"] = m["1"]
h: m["A % 8 # 16"] = m["A % 8 # 16"]


def local_escapes() -> Mapping:
    inner = m["A % 8"]
    return m["{Slice}, {inner}"]  # a local escape: not checked statically, fine at run time
