"""Fast path ``sequencer.atoms-by-digit`` (issue 24): the sequencer's check that the stream digits of one axis add
up to the buffer's own addresses, decided digit by digit where no two digits can carry into each other.

The structural derivation (:func:`visa.mapping.sequencer._structural`, manual L1336–1423, L1660–1683) maps each
stream digit of an axis onto the buffer's digits of that axis on its own; two digits of one axis can still carry
into a third buffer digit when added (``A / 3`` and ``A % 3`` over ``A % 4``), so ``_verify_atoms`` enumerates
every combination of the axis's stream digits (up to a million: a first launch's DMA of a 4 × 262,144 tensor
enumerated a million positions per side) and compares.  When the buffer's digits of the axis form a plain mixed
radix (strides ``1, n₀, n₀·n₁, …``, each digit's count the next one's step) and each stream digit of the axis
steps by one of those strides and reaches only buffer digits no other stream digit reaches, the position of
every combination is written in the radix without a carry: its buffer address is the sum of each digit's own,
and checking each stream digit's values alone decides the whole product.  Anything else (and any digit whose
own values disagree) goes to the enumeration, which decides as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from visa import fastpaths

__all__ = ["ATOMS", "additive"]

ATOMS = fastpaths.register("sequencer.atoms-by-digit", "the sequencer's per-axis address check digit by digit where "
                                                       "no two stream digits carry into each other, instead of "
                                                       "enumerating every combination")


class _Factor(Protocol):
    """A buffer digit of the axis (``visa.mapping.sequencer._Factor``)."""

    @property
    def stride(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def weight(self) -> int: ...


def additive(recs: Sequence[tuple[int, int, list[tuple[int, int]]]], factors: Sequence[_Factor]) -> bool:
    """Do the stream digits ``recs`` (``(atom stride, count, pieces)``: digit value ``v`` at atom position
    ``v · stride``, buffer address ``Σ ((v // Π earlier sizes) % size) · stride`` over its pieces) add up to the
    buffer's addresses of every combination, as :func:`visa.mapping.sequencer._verify_atoms` checks?  True only
    when the check by digit decides it (module docstring); False means "not decided here", not "wrong".

    No carry: at every boundary ``s`` of the buffer's radix (each buffer digit's stride but the first), each
    stream digit steps by a multiple of ``s`` or stays below it, and those below add up to less than ``s``; and
    every combination stays below the top of the radix.  Then each buffer digit of a position is the sum of the
    stream digits' own, so the address (a sum over the buffer digits) is the sum of theirs."""
    fs = sorted((f for f in factors if f.count > 1), key=lambda f: f.stride)
    if not fs or fs[0].stride != 1 or any(b.stride != a.stride * a.count for a, b in zip(fs, fs[1:], strict=False)):
        return False
    digits = [(t, c, pieces) for t, c, pieces in recs if c > 1]  # (count 1: position 0, address 0 on both sides)
    if sum((c - 1) * t for t, c, _ in digits) >= fs[-1].stride * fs[-1].count:
        return False
    for f in fs[1:]:
        below = [(c - 1) * t for t, c, _ in digits if t % f.stride]
        if any(r >= f.stride for r in below) or sum(below) >= f.stride:
            return False
    for t, c, pieces in digits:
        v = np.arange(c, dtype=np.int64)
        addr = np.zeros(c, dtype=np.int64)
        rest = v.copy()
        for size, stride in pieces:
            addr += (rest % size) * stride
            rest //= size
        pos = v * t
        if not np.array_equal(addr, sum(((pos // f.stride) % f.count) * f.weight for f in fs)):
            return False
    return True
