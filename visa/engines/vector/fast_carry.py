"""Fast path ``vector.carry-fill-sparse`` (issue 24), beside :func:`visa.engines.vector.elementwise.carry_fill`,
whose values it computes.

The register an element sees after ``WriteOperand`` (manual L8708–8721) is, per lane, the value written at the
last time step up to its own whose ExecutionId is written.  The reference gathers every element from that step
(``take_along_axis`` over the whole stream).  Where a step writes, the element sees its own value; a carried
accumulation (a cumsum: every step but the first and last adds and writes) has only a few elements that do not.
This path copies the stream and gathers those few alone: the same values and known-mask
(``tests/engines/vector/test_fast_carry.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["CARRY_FILL", "seen_sparse"]

CARRY_FILL = fastpaths.register("vector.carry-fill-sparse", "the register each element sees after WriteOperand: "
                                "the stream itself where its own step writes, a gather only of the elements "
                                "whose step does not (instead of a gather of every element)")

#: The share of elements not written at their own step above which the whole gather is made instead.
_SPARSE = 1 / 8


def seen_sparse(values: npt.NDArray[Any], known: npt.NDArray[np.bool_], last: npt.NDArray[np.int64],
                t: npt.NDArray[np.int64]) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]] | None:
    """``(take_along_axis(values, max(last, 0), 3), take_along_axis(known, max(last, 0), 3) & (last >= 0))`` for
    ``last`` (the step each element reads, −1 before any write; ``values``' shape, time on axis 3) and ``t`` (each
    step's own index, broadcast along axis 3), when few elements read another step than their own; else None."""
    other = last != t
    count = int(np.count_nonzero(other))
    if count > values.size * _SPARSE:
        return None
    got = values.copy()
    got_k = known.copy()
    if count:
        pos = np.nonzero(other)
        src = (pos[0], pos[1], pos[2], np.maximum(last[pos], 0), pos[4])
        got[pos] = values[src]
        got_k[pos] = known[src] & (last[pos] >= 0)
    return got, got_k
