"""Fast path ``vector.carry-fill-sparse`` (issue 24), beside :func:`visa.engines.vector.elementwise.carry_fill`,
whose values it computes.

The register an element sees after ``WriteOperand`` (manual L8708–8721) is, per lane, the value written at the
last time step up to its own whose ExecutionId is written.  The reference gathers every element from that step
(``take_along_axis`` over the whole stream).  Where a step writes, the element sees its own value; a carried
accumulation (a cumsum: every step but the first and last adds and writes) has only a few elements that do not.
This path copies the stream and gathers those few alone: the same values and known-mask
(``tests/engines/vector/test_fast_carry.py``).

``vector.id-mask-compare``: where an element's ExecutionId is one of a set of at most two ids, by comparisons of
the ``uint8`` ids (numpy's table lookup ``table[ids]`` first converts every id to an index: 4 ms for the 2^20
elements of the cumsum, three times a pass).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["CARRY_FILL", "ID_COMPARE", "seen_sparse", "id_mask"]

CARRY_FILL = fastpaths.register("vector.carry-fill-sparse", "the register each element sees after WriteOperand: "
                                "the stream itself where its own step writes, a gather only of the elements "
                                "whose step does not (instead of a gather of every element)")

ID_COMPARE = fastpaths.register("vector.id-mask-compare", "where the ExecutionId is one of at most two ids, by "
                                "comparisons of the ids instead of a table lookup")


def id_mask(ids: npt.NDArray[np.uint8], keep: frozenset[int] | set[int]) -> npt.NDArray[np.bool_]:
    """Whether each id is in ``keep`` (at most two ids; the others give False everywhere)."""
    kept = sorted(keep)
    if not kept:
        return np.zeros(ids.shape, dtype=bool)
    out: npt.NDArray[np.bool_] = ids == kept[0]
    if len(kept) > 1:
        out |= ids == kept[1]
    return out


#: The share of elements not written at their own step above which the whole gather is made instead.
_SPARSE = 1 / 8
#: Steps a search goes back for the last write at most (a longer run of unwritten steps: the reference).
_BACK = 16


def seen_sparse(values: npt.NDArray[Any], known: npt.NDArray[np.bool_], w: npt.NDArray[np.bool_],
                initial: tuple[npt.NDArray[Any], npt.NDArray[np.bool_]] | None
                ) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]] | None:
    """What :func:`~visa.engines.vector.elementwise.carry_fill` gives for ``values``/``known`` (time on axis 3),
    ``w`` (whether each element's step writes the register) and ``initial``, when few elements' steps do not
    write and each finds the last write within :data:`_BACK` steps back (or none: before the first write, the
    register ``initial`` left, else the element at step 0 of its lane, unknown); else None."""
    other = ~w
    count = int(np.count_nonzero(other))
    if count > values.size * _SPARSE:
        return None
    got = values.copy()
    got_k = np.array(known, dtype=bool, copy=True)
    if not count:
        return got, got_k
    c, k, s, t, p = np.nonzero(other)
    last = np.full(count, -1, dtype=np.int64)
    pending = np.arange(count)
    for back in range(1, _BACK + 1):
        step = t[pending] - back
        inside = step >= 0
        hit = np.zeros(pending.size, dtype=bool)
        hit[inside] = w[c[pending[inside]], k[pending[inside]], s[pending[inside]], step[inside],
                        p[pending[inside]]]
        last[pending[hit]] = step[hit]
        pending = pending[inside & ~hit]
        if not pending.size:
            break
    else:
        return None  # (a longer run of unwritten steps)
    src = (c, k, s, np.maximum(last, 0), p)
    before = last < 0
    got[c, k, s, t, p] = values[src]
    got_k[c, k, s, t, p] = known[src] & ~before
    if initial is not None and before.any():
        b = np.flatnonzero(before)
        got[c[b], k[b], s[b], t[b], p[b]] = initial[0][c[b], k[b], s[b], p[b]]
        got_k[c[b], k[b], s[b], t[b], p[b]] = initial[1][c[b], k[b], s[b], p[b]]
    return got, got_k
