"""Fast paths of the Cast and Commit Engines for streams whose slices share rows (issue 24), beside
:mod:`visa.engines.cast` and :mod:`visa.engines.commit`, whose reference ``execute`` they stand for.

A :class:`~visa.engines.shared.SharedRows` stream (an inter-slice reduce broadcast over slices, L6654–6672) holds
each distinct slice row once:

- ``cast.shared-rows`` — the Cast Engine converts the distinct rows (the conversion treats every element alike,
  L6756–6819) and the result shares them as the input did;
- ``collect.shared-rows`` — Collect pads and splits the distinct rows (every slice alike, L2122);
- ``collect.shared-load`` — a TRF/VRF load reads the distinct rows as :class:`~visa.engines.rows.CopiedRows` (one
  slice of each class, the others copies of it: the load of replicated slices, ``collect.replica-load``);
- ``commit.shared-rows`` — a commit that writes one contiguous run of whole-byte elements per slice (in any order of
  its loops), every element known, writes one slice of each class and leaves the others pending copies of it
  (:func:`visa.memory.owed.store_with_copies`, the register loads' protocol), and records the slices as replicas
  (:mod:`visa.memory.replicas`): a fetch of them later reads one slice per class.

``tests/engines/test_fast_shared.py`` runs kernels with the paths on and off and compares bytes and schedules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.deferred import PaddedLanes
from visa.engines.shared import SharedRows
from visa.memory import owed
from visa.memory.images import DenseImage
from visa.memory.known import all_true

if TYPE_CHECKING:
    from visa.engines.commit import CommitConfig

__all__ = ["CAST", "COMMIT", "COLLECT", "LOAD", "commit"]

CAST = fastpaths.register("cast.shared-rows", "the Cast Engine converts the distinct rows of a stream whose slices "
                                              "share rows (SharedRows) instead of every slice")
COMMIT = fastpaths.register("commit.shared-rows", "a commit of a stream whose slices share rows writes one slice "
                                                  "of each class and leaves the others pending copies")

COLLECT = fastpaths.register("collect.shared-rows", "Collect pads and splits the distinct rows of a stream whose "
                                                    "slices share rows, not every slice")
LOAD = fastpaths.register("collect.shared-load", "a register load of a stream whose slices share rows reads the "
                                                 "distinct rows (as rows left copies), not the whole stream")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _memory_order(loops: Sequence[tuple[int, int]]) -> tuple[int, ...] | None:
    """The order of the loops (outermost first) that visits the nest's elements at consecutive addresses from its
    base, when the nest visits each element of one contiguous run once (its strides a mixed radix of its sizes);
    else None."""
    order = sorted(range(len(loops)), key=lambda k: -loops[k][1])
    span = 1
    for k in reversed(order):
        size, stride = loops[k]
        if size > 1 and stride != span:
            return None
        span *= size
    return tuple(order)


def commit(cfg: CommitConfig, data: SharedRows, images: Sequence[DenseImage], bit_base: int, pos: IntArray,
           enabled: BoolArray) -> bool:
    """:func:`visa.engines.commit.execute` of shared rows (module docstring); False, nothing written, when the
    commit is not one this path writes (then the reference writes the whole stream)."""
    seq, n = cfg.sequencer, cfg.written.size
    loops = tuple((e.size, e.stride) for e in seq.entries)
    t = cfg.time.size
    base = bit_base + seq.base * cfg.dtype.image_bits
    order = _memory_order(loops)
    if (pos.size != seq.stream_size or math.prod(s for s, _ in loops) != t * n or order is None
            or cfg.dtype.image_bits % 8 or base % 8):
        return False
    inner = data.inner
    if isinstance(inner, PaddedLanes) and n <= inner.lanes.shape[-1]:
        compact = inner.lanes[..., :n]
    else:
        compact = inner.values[..., :n]
    used = np.unique(data.owner[enabled.reshape(-1)])  # the rows of the slices written (the others are not)
    known = np.asarray(inner.known)
    if not all_true(known[..., :n] if known.shape[2] == 1 else known[:, :, used, :, :n]):
        return False
    # the distinct rows in memory order (the stream visits the run in the nest's order)
    sizes = tuple(size for size, _ in loops)
    rows = compact.reshape(data.rows, *sizes).transpose(0, *(1 + k for k in order)).reshape(data.rows, t * n)
    per = enabled[0].size
    plans = []
    for c in range(len(images)):
        units = np.flatnonzero(enabled[c].reshape(-1))
        # a run of consecutive units at a time: the range each write covers is what lets it skip the zeros owed
        for run in np.split(units, np.flatnonzero(np.diff(units) != 1) + 1) if units.size else []:
            cls = data.owner[c * per: (c + 1) * per][run]
            _, first, inverse = np.unique(cls, return_index=True, return_inverse=True)
            plans.append((c, run, cls, first, inverse.reshape(-1)))
    if 2 * sum(p[3].size for p in plans) > int(enabled.sum()):
        return False  # (fewer than half of the slices repeat another)
    for c, units, cls, first, inverse in plans:
        img = images[c]
        reps = np.sort(units[first])  # (in unit order: the store writes the enabled units in that order)
        mask = np.zeros(img.lead_shape, dtype=bool)
        mask.reshape(-1)[reps] = True
        source = units[first][inverse]
        moved = units != source
        span = slice(int(units[0]), int(units[-1]) + 1)
        values = rows[data.owner[c * per: (c + 1) * per][reps]]
        stored = owed.store_with_copies(cfg.dtype, img, base, mask, values, units[moved], source[moved], span)
        assert stored, "a run of whole-byte elements inside the image stores as one loop nest"
        lo = base // 8
        img.record_replicas(units, cls, lo, lo + t * n * (cfg.dtype.image_bits // 8))
    return True
