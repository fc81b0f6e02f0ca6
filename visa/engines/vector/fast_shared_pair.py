"""Fast path ``vector.shared-rows`` (issue 24), beside :mod:`visa.stream.vector.pair`, whose unzip and zip it
stands for: the Vector Engine's Two-Group Mode over a stream whose slices share rows.

A stream whose ``(Chip, Cluster, Slice)`` rows repeat a few distinct ones (:class:`~visa.engines.shared.SharedRows`:
the partial sums of the reference's ``matmul_16384``, broadcast over 32 slices, fetched back as an interleaved
pair) goes through ``vector_intra_slice_unzip`` (L4748, a choice of time steps, every slice alike) and a zip (one
elementwise operator over the two groups, L5154–5249) as its distinct rows: both groups keep the sharing, and the
zip of two groups sharing the same rows computes each distinct row once.  Anything else takes the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.common import StreamData
from visa.engines.shared import SharedRows
from visa.memory.known import is_everywhere, known_everywhere

__all__ = ["SHARED", "unzip", "zip_groups"]

SHARED = fastpaths.register("vector.shared-rows", "the unzip and zip of a stream whose slices share rows (SharedRows) "
                                                  "work on the distinct rows, not on every slice")


def unzip(data: StreamData, steps: Callable[[Any, Any], Any], perm: npt.NDArray[np.int64]
          ) -> tuple[SharedRows, SharedRows] | None:
    """The two groups of an unzip (``steps(arr, perm[k])``: the time steps of group ``k``) of shared rows, each
    sharing them as the stream did; None when the stream's rows are not shared."""
    if not SHARED.on or not isinstance(data, SharedRows):
        return None
    def group(k: int) -> SharedRows:
        return data.map(lambda d: StreamData(steps(d.values, perm[k]), steps(d.known, perm[k])))

    return group(0), group(1)


def zip_groups(g0: StreamData, g1: StreamData, fn: Callable[[Any, Any], Any], args: tuple[int, ...]
               ) -> SharedRows | None:
    """``fn`` over the groups ``args`` picks (the zip's operands) when both share the same rows: computed once per
    distinct row; None otherwise."""
    if not (SHARED.on and isinstance(g0, SharedRows) and isinstance(g1, SharedRows) and g0.lead == g1.lead
            and (g0.owner is g1.owner or np.array_equal(g0.owner, g1.owner))):
        return None
    a, b = g0.inner, g1.inner
    slots, knowns = [a.values, b.values], [a.known, b.known]
    values = np.asarray(fn(slots[args[0]], slots[args[1]]), dtype=a.values.dtype)
    ka, kb = knowns[args[0]], knowns[args[1]]
    shape = a.values.shape
    known = known_everywhere(shape) if is_everywhere(ka) and is_everywhere(kb) else np.asarray(ka & kb)
    return SharedRows(StreamData(np.ascontiguousarray(np.broadcast_to(values, shape)), known), g0.owner, g0.lead)
