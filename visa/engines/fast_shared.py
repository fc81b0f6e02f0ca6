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
  (:mod:`visa.memory.replicas`): a fetch of them later reads one slice per class;
- ``commit.shared-gather`` — a commit of shared rows that the path above does not take (fewer than half of the
  enabled slices repeat another: an inter-slice reduce whose result lands in one slice of each group, L6654–6672)
  writes the enabled slices' rows, gathered from the distinct rows, by the reference's own store
  (:func:`~visa.memory.images.store_nest`; the slices of wholly known rows and those of wholly poison rows apart,
  each a call), instead of making the whole stream (a row per slice of every cluster) first.

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
from visa.memory.images import DenseImage, store_nest
from visa.memory.known import all_true, known_everywhere
from visa.memory.units import enabled_units

if TYPE_CHECKING:
    from visa.engines.commit import CommitConfig

__all__ = ["CAST", "COMMIT", "COLLECT", "LOAD", "GATHER", "commit", "commit_gather"]

CAST = fastpaths.register("cast.shared-rows", "the Cast Engine converts the distinct rows of a stream whose slices "
                                              "share rows (SharedRows) instead of every slice")
COMMIT = fastpaths.register("commit.shared-rows", "a commit of a stream whose slices share rows writes one slice "
                                                  "of each class and leaves the others pending copies")
GATHER = fastpaths.register("commit.shared-gather", "a commit of a stream whose slices share rows writes the enabled "
                                                   "slices' rows gathered from the distinct rows, not the whole "
                                                   "stream")

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
    if 2 * used.size > int(enabled.sum()):  # (each run of slices below has at least its share of these classes)
        return False  # (fewer than half of the slices repeat another: the check below, known before the runs)
    known = np.asarray(inner.known)
    if not all_true(known[..., :n] if known.shape[2] == 1 else known[:, :, used, :, :n]):
        return False
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
    # the distinct rows in memory order (the stream visits the run in the nest's order)
    sizes = tuple(size for size, _ in loops)
    rows = compact.reshape(data.rows, *sizes).transpose(0, *(1 + k for k in order)).reshape(data.rows, t * n)
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


def commit_gather(cfg: CommitConfig, data: SharedRows, images: Sequence[DenseImage], bit_base: int, pos: IntArray,
                  enabled: BoolArray) -> bool:
    """:func:`visa.engines.commit.execute` of shared rows whose rows written (their first ``commit_in_size`` lanes,
    in the enabled slices) are each wholly known or wholly poison, when every write lands on its own address (the
    reference's one-nest store): the same :func:`~visa.memory.images.store_nest`, called for the enabled slices
    of known rows with their rows gathered and for those of poison rows with poison, instead of once with the
    whole stream.  The two sets of slices are apart, so the bytes and written-masks are those of the one call.
    False (nothing written) when the stream is not such, or the nest cannot be stored as one (then the
    reference writes the whole stream)."""
    seq, n, t = cfg.sequencer, cfg.written.size, cfg.time.size
    if pos.size != seq.stream_size:
        return False
    per = enabled[0].size
    owners = data.owner.reshape(len(images), per)
    used = np.unique(owners[enabled.reshape(len(images), per)])
    known = np.asarray(data.inner.known)
    if known.shape[2] == 1:  # (one known-mask for every row)
        whole: BoolArray = np.full(data.rows, bool(all_true(known[..., :n])))
        some: BoolArray = np.full(data.rows, bool(known[..., :n].any()))
    else:
        rows_known = known[0, 0, :, :, :n].reshape(data.rows, -1)
        whole, some = np.asarray(rows_known.all(axis=1)), np.asarray(rows_known.any(axis=1))
    if not bool((whole[used] | ~some[used]).all()):
        return False  # (a row written partly known: the reference's one store)
    inner = data.inner
    lanes = inner.lanes if isinstance(inner, PaddedLanes) and n <= inner.lanes.shape[-1] else inner.values
    per_row = lanes.reshape(data.rows, t, -1)
    base = bit_base + seq.base * cfg.dtype.image_bits
    loops = tuple((e.size, e.stride) for e in seq.entries)
    first = True
    for c, img in enumerate(images):
        on = enabled[c].reshape(-1)
        owner = owners[c]
        for part in (on & whole[owner], on & ~whole[owner]):  # the slices of known rows, then of poison ones
            if not part.any():
                continue
            units = np.flatnonzero(part)
            if whole[owner[units[0]]]:
                values = per_row[owner[units]][..., :n]
                known_part = known_everywhere(values.shape)
            else:
                values = np.broadcast_to(np.zeros((), dtype=per_row.dtype), (units.size, t, n))
                known_part = np.broadcast_to(np.zeros((), dtype=bool), (units.size, t, n))
            if not store_nest(cfg.dtype, enabled_units(img, part.reshape(enabled[c].shape)), base, loops, values,
                              known_part):
                assert first, "a nest stores in one set of slices as in another (their image's bounds alike)"
                return False  # (nothing written: the reference writes the whole stream)
            first = False
    return True
