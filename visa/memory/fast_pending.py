"""Fast path ``memory.pending-pieces`` (issue 24), beside :mod:`visa.memory.pending`, whose
:meth:`~visa.memory.pending.Pending.sources` it extends: a loop-nest read that reaches several pending copies reads
through them all, when they send the same units to the same sources.

A read asks the image which unit holds each unit's bytes now (the source of a pending copy, or itself); the
reference answers only when one pending copy holds the whole range of the read, and otherwise makes every copy the
range reaches (a copy of every slice's bytes).  An interleaved fetch of two partials a kernel committed as
:class:`~visa.engines.shared.SharedRows` (the reference's ``matmul_16384`` adds ``result0`` and ``temp``, each one
slice of every class written and the others pending copies of it) reads a range spanning both copies and the bytes
between them, which it does not read.  Given the byte ranges the read does reach (the hulls of its steps,
:func:`visa.memory.images._hulls`): when each lies inside one pending copy, and those copies have the same
destination units with the same sources, every unit's bytes the read reaches are its source's — the same answer the
reference gets after making the copies, without making them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory.pending import Pending

__all__ = ["PIECES", "sources"]

PIECES = fastpaths.register("memory.pending-pieces", "a read reaching several pending copies of the same units "
                                                     "from the same sources reads through them, not making them")

IntArray = npt.NDArray[np.int64]


def sources(pending: Pending, units: IntArray, pieces: Sequence[tuple[int, int]]) -> IntArray | None:
    """The unit holding each of ``units``' bytes in every range of ``pieces`` (as
    :meth:`~visa.memory.pending.Pending.sources`), when each piece lies inside one pending copy and all those copies
    map the same units to the same sources; else None.  Pending fills there must have been made."""
    used: list[tuple[IntArray, IntArray]] = []
    for lo, hi in pieces:
        if hi <= lo:
            continue
        hit = None
        for dst, src, a, b in pending.copies:
            if lo < b and a < hi:
                if not (a <= lo and hi <= b):
                    return None
                hit = (dst, src)
                break
        if hit is None:
            return None  # (bytes no copy holds: the units' own; the owner map would send them elsewhere)
        if used and not (np.array_equal(used[0][0], hit[0]) and np.array_equal(used[0][1], hit[1])):
            return None
        if not used:
            used.append(hit)
    if not used:
        return None
    owner = np.arange(pending.units, dtype=np.int64)
    owner[used[0][0]] = used[0][1]
    out: IntArray = owner[units]
    return out
