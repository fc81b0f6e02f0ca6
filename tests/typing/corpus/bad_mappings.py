"""Malformed mappings and unknown axes are errors at their own line, with the runtime's message (L582–1016)."""

from visa import axes, m

axes(A=2048, B=512)
axes(B=256)

modulo = m["A % 7"]
unknown = m["Q / 2"]
escape = m["{Nowhere}, A"]
syntax = m["A /"]


def f(x: m["C"], y: m["A % 3"]) -> None:
    pass


different: m["A"] = m["A % 8"]
